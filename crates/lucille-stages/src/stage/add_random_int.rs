//! AddRandomInt: test data; sets a field to a random integer in `[rangeStart, rangeEnd)`.
//!
//! Keys: `fieldName` (default `data`), `rangeStart` (default 0), `rangeEnd` (default
//! 1,000,000, exclusive). Equal bounds always give `rangeStart` (Lucille fails on them);
//! 64-bit integers are accepted (Lucille's are 32-bit).

use super::{random_value, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomInt",
    spec: random_value::spec::<i64>,
    build: random_value::build::<i64>,
};
inventory::submit!(DESCRIPTOR);

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn values_stay_in_range() {
        let mut s = build_stage(json!({"class": "AddRandomInt", "fieldName": "n",
            "rangeStart": -3, "rangeEnd": 3}));
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..500 {
            let v = process(&mut s, json!({"id": "d"}))
                .get_i64("n")
                .unwrap()
                .unwrap();
            assert!((-3..3).contains(&v), "{v}");
            seen.insert(v);
        }
        assert_eq!(seen.len(), 6, "every value in range appears: {seen:?}");
        let mut s = build_stage(json!({"class": "AddRandomInt"}));
        let v = process(&mut s, json!({"id": "d"}))
            .get_i64("data")
            .unwrap()
            .unwrap();
        assert!((0..1_000_000).contains(&v));
        let mut s = build_stage(json!({"class": "AddRandomInt", "rangeStart": 7, "rangeEnd": "7"}));
        assert_eq!(
            process(&mut s, json!({"id": "d"})).get("data"),
            Some(&json!(7))
        );
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "AddRandomInt", "rangeStart": 5, "rangeEnd": 1}))
                .contains("rangeStart")
        );
        assert!(build_err(json!({"class": "AddRandomInt", "rangeEnd": 1.5})).contains("rangeEnd"));
        assert!(build_err(json!({"class": "AddRandomInt", "fieldName": ""})).contains("fieldName"));
    }
}
