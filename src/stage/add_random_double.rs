//! AddRandomDouble: test data; sets a field to a random number in `[rangeStart, rangeEnd)`.
//!
//! Keys: `fieldName` (default `data`), `rangeStart` (default 0.0), `rangeEnd` (default
//! 1,000,000.0, exclusive). Equal bounds always give `rangeStart` (Lucille fails on them).

use rand::distr::Uniform;
use rand::RngExt;

use super::add_random_boolean::{field_name, uniform_range};
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::{f64_to_value, Document};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomDouble",
    spec,
    build,
};

fn spec() -> Spec {
    Spec::stage()
        .optional("fieldName", Kind::String)
        .optional("rangeStart", Kind::Number)
        .optional("rangeEnd", Kind::Number)
}

struct AddRandomDouble {
    field: String,
    start: f64,
    range: Option<Uniform<f64>>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigError> {
    let start = config.f64("rangeStart")?.unwrap_or(0.0);
    let end = config.f64("rangeEnd")?.unwrap_or(1_000_000.0);
    let range = uniform_range(config, start, end)?;
    Ok(Box::new(AddRandomDouble {
        field: field_name(config)?,
        start,
        range,
    }))
}

impl Stage for AddRandomDouble {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let value = match &self.range {
            Some(r) => rand::rng().sample(r),
            None => self.start,
        };
        let value = f64_to_value(value)
            .ok_or_else(|| StageFailure::msg(format!("generated {value}, not a finite number")))?;
        doc.set_field(&self.field, value)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn values_stay_in_range() {
        let mut s = build_stage(json!({"class": "AddRandomDouble", "fieldName": "x",
            "rangeStart": -1.5, "rangeEnd": 2.5}));
        let mut values = Vec::new();
        for _ in 0..500 {
            let v = process(&mut s, json!({"id": "d"}))
                .get_f64("x")
                .unwrap()
                .unwrap();
            assert!((-1.5..2.5).contains(&v), "{v}");
            values.push(v);
        }
        assert!(values.iter().any(|v| *v < 0.0) && values.iter().any(|v| *v > 1.5));
        let mut s = build_stage(json!({"class": "AddRandomDouble"}));
        let v = process(&mut s, json!({"id": "d"}))
            .get_f64("data")
            .unwrap()
            .unwrap();
        assert!((0.0..1_000_000.0).contains(&v));
        let mut s = build_stage(json!({"class": "AddRandomDouble", "rangeStart": 2,
            "rangeEnd": 2}));
        assert_eq!(
            process(&mut s, json!({"id": "d"})).get_f64("data").unwrap(),
            Some(2.0)
        );
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "AddRandomDouble", "rangeStart": 5, "rangeEnd": 1}))
                .contains("rangeStart")
        );
        assert!(
            build_err(json!({"class": "AddRandomDouble", "rangeStart": -1e308,
            "rangeEnd": 1e308}))
            .contains("rangeEnd")
        );
        assert!(
            build_err(json!({"class": "AddRandomDouble", "rangeEnd": "big"})).contains("rangeEnd")
        );
    }
}
