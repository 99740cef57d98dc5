//! RandomVector: test data; writes a random float vector (each component in `[-1, 1)`) to each
//! of the given fields, e.g. to exercise vector indexing without an embedding model.
//!
//! Keys: `fields` (a field or a list), `dimensions` (the vector length, at least 1),
//! `updateMode` (overwrite, append, skip; default overwrite). Overwrite stores the vector as a
//! list of numbers even when it has one component; append adds the components to the field.

use rand::RngExt;

use super::field_util::check_fields;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{f32_to_value, Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "RandomVector",
    spec: RandomVectorOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Test data: writes a random float vector (each component in `[-1, 1)`) to each of the given
/// fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct RandomVectorOptions {
    /// The fields written.
    fields: Strings,
    /// The vector's length.
    #[option(min = 1)]
    dimensions: usize,
    /// How a field that already has values is written (overwrite stores the vector as a list
    /// even of one component; append adds the components).
    #[option(default)]
    update_mode: UpdateMode,
}

struct RandomVector {
    fields: Vec<String>,
    dimensions: usize,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = RandomVectorOptions::from_config(config)?;
    check_fields(config, "fields", &o.fields, true)?;
    Ok(Box::new(RandomVector {
        fields: o.fields.into(),
        dimensions: o.dimensions,
        mode: o.update_mode,
    }))
}

impl Stage for RandomVector {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut rng = rand::rng();
        for field in &self.fields {
            if self.mode == UpdateMode::Skip && doc.has(field) {
                continue;
            }
            let vector: Vec<f32> = (0..self.dimensions)
                .map(|_| 2.0 * rng.random::<f32>() - 1.0)
                .collect();
            if self.mode == UpdateMode::Append {
                doc.update(
                    field,
                    UpdateMode::Append,
                    vector.iter().filter_map(|f| f32_to_value(*f)),
                )?;
            } else {
                doc.set_vector(field, &vector)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn writes_vectors_in_range() {
        let mut s = build_stage(json!({"class": "RandomVector", "fields": ["v1", "v2"],
            "dimensions": 8}));
        let out = process(&mut s, json!({"id": "d", "v1": "old"}));
        for f in ["v1", "v2"] {
            let v = out.get_vector(f).unwrap().unwrap();
            assert_eq!(v.len(), 8);
            assert!(v.iter().all(|x| (-1.0..1.0).contains(x)), "{v:?}");
        }
        assert_ne!(out.get("v1"), out.get("v2"));
        let mut s = build_stage(json!({"class": "RandomVector", "fields": "v", "dimensions": 1}));
        assert!(process(&mut s, json!({"id": "d"})).is_multivalued("v"));
    }

    #[test]
    fn append_and_skip() {
        let mut s = build_stage(
            json!({"class": "RandomVector", "fields": "v", "dimensions": 3,
            "updateMode": "append"}),
        );
        let out = process(&mut s, json!({"id": "d", "v": [0.5]}));
        assert_eq!(out.len_of("v"), 4);
        let mut s = build_stage(json!({"class": "RandomVector", "fields": ["v", "w"],
            "dimensions": 3, "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "v": "keep"}));
        assert_eq!(out.get("v"), Some(&json!("keep")));
        assert_eq!(out.len_of("w"), 3);
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(json!({"class": "RandomVector", "fields": "v"})).contains("dimensions"));
        assert!(
            build_err(json!({"class": "RandomVector", "fields": "v", "dimensions": 0}))
                .contains("dimensions")
        );
        assert!(build_err(json!({"class": "RandomVector", "dimensions": 2})).contains("fields"));
        assert!(
            build_err(json!({"class": "RandomVector", "fields": ["id"], "dimensions": 2}))
                .contains("reserved")
        );
        assert!(build_err(
            json!({"class": "RandomVector", "fields": "v", "dimensions": 2,
            "updateMode": "merge"})
        )
        .contains("updateMode"));
    }
}
