//! AddRandomDouble: test data; sets a field to a random number in `[rangeStart, rangeEnd)`.
//!
//! Keys: `fieldName` (default `data`), `rangeStart` (default 0.0), `rangeEnd` (default
//! 1,000,000.0, exclusive). Equal bounds always give `rangeStart` (Lucille fails on them).

use super::{random_value, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomDouble",
    spec: random_value::spec::<f64>,
    build: random_value::build::<f64>,
};
inventory::submit!(DESCRIPTOR);

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
