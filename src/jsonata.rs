//! Temporary JSONata evaluator (replaced by the recycling evaluator module).
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum JsonataError {
    #[error("invalid JSONata expression {expr:?}: {message}")]
    Compile { expr: String, message: String },
    #[error("JSONata expression {expr:?} failed: {message}")]
    Evaluate { expr: String, message: String },
}

pub struct Expression {
    source: String,
}

impl Expression {
    pub fn compile(expr: &str) -> Result<Self, JsonataError> {
        let arena = bumpalo::Bump::new();
        jsonata_rs::JsonAta::new(expr, &arena).map_err(|e| JsonataError::Compile {
            expr: expr.to_string(),
            message: e.to_string(),
        })?;
        Ok(Expression {
            source: expr.to_string(),
        })
    }
    pub fn evaluate(&mut self, input: &Value) -> Result<Option<Value>, JsonataError> {
        let err = |m: String| JsonataError::Evaluate {
            expr: self.source.clone(),
            message: m,
        };
        let arena = bumpalo::Bump::new();
        let j = jsonata_rs::JsonAta::new(&self.source, &arena).map_err(|e| err(e.to_string()))?;
        let text = input.to_string();
        let out = j
            .evaluate(Some(&text), None)
            .map_err(|e| err(e.to_string()))?;
        if out.is_undefined() {
            return Ok(None);
        }
        let s = out.serialize(false);
        serde_json::from_str(&s)
            .map(Some)
            .map_err(|e| err(e.to_string()))
    }
    pub fn source(&self) -> &str {
        &self.source
    }
}
