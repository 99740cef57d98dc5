//! AddRandomBoolean: test data; sets a field to a random boolean.
//!
//! Keys: `fieldName` (default `data`), `percentTrue` (0–100, default 50: the chance of true).

use rand::RngExt;

use super::random_value::check_field_name;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomBoolean",
    spec: AddRandomBooleanOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Test data: sets a field to a random boolean.
#[derive(Options)]
#[options(base = Spec::stage())]
struct AddRandomBooleanOptions {
    /// The field written (an existing value is replaced).
    #[option(default = "data")]
    field_name: String,
    /// The chance of true, in percent.
    #[option(default = 50, min = 0, max = 100)]
    percent_true: i64,
}

struct AddRandomBoolean {
    field: String,
    percent_true: u32,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = AddRandomBooleanOptions::from_config(config)?;
    check_field_name(config, &o.field_name)?;
    let percent_true = u32::try_from(o.percent_true)
        .map_err(|_| config.error("percentTrue", "must be between 0 and 100"))?;
    Ok(Box::new(AddRandomBoolean {
        field: o.field_name,
        percent_true,
    }))
}

impl Stage for AddRandomBoolean {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let value = rand::rng().random_range(0..100u32) < self.percent_true;
        doc.set_field(&self.field, value)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    fn trues(config: serde_json::Value, field: &str) -> usize {
        let mut s = build_stage(config);
        (0..1000)
            .filter(|_| {
                let out = process(&mut s, json!({"id": "d", field: "old"}));
                out.get(field).and_then(|v| v.as_bool()).expect("a boolean")
            })
            .count()
    }

    #[test]
    fn rates_and_field_name() {
        assert_eq!(
            trues(
                json!({"class": "AddRandomBoolean", "percentTrue": 0}),
                "data"
            ),
            0
        );
        assert_eq!(
            trues(
                json!({"class": "AddRandomBoolean", "percentTrue": 100, "fieldName": "b"}),
                "b"
            ),
            1000
        );
        let half = trues(json!({"class": "AddRandomBoolean"}), "data");
        assert!((350..650).contains(&half), "{half}");
    }

    #[test]
    fn bad_configs() {
        for p in [101, -1] {
            let err = build_err(json!({"class": "AddRandomBoolean", "percentTrue": p}));
            assert!(err.contains("percentTrue"), "{err}");
        }
        assert!(
            build_err(json!({"class": "AddRandomBoolean", "fieldName": "id"}))
                .contains("fieldName")
        );
    }
}
