//! AddRandomString: test data; adds random terms to a field.
//!
//! Keys: `fieldName` (default `data`), `inputDataPath` (a text file, one term per line,
//! resolved against the config file's folder; without it terms are the numbers `0` to
//! `rangeSize - 1` as text), `rangeSize` (required without `inputDataPath`; with it, use only a
//! random subset of that many lines, chosen once per stage instance), `minNumOfTerms` and
//! `maxNumOfTerms` (give both or neither; default 1 and 1: each document gets a random number of
//! terms in that inclusive range), `concatenate` (join the terms with spaces into one value),
//! `isNested` (write a list of objects `{"data": term}`, replacing the field). Terms may repeat.
//!
//! Without `isNested` the terms are added to the field (set if absent, else appended), as in
//! Lucille. Problems Lucille reports when the stage starts (unreadable or empty file, a
//! `rangeSize` larger than the file) are config errors here.

use rand::seq::SliceRandom;
use rand::RngExt;
use serde_json::{json, Value};

use super::random_value::check_field_name;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomString",
    spec: AddRandomStringOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Test data: adds random terms (numbers, or lines of a file) to a field.
#[derive(Options)]
#[options(base = Spec::stage())]
struct AddRandomStringOptions {
    /// The field the terms are added to.
    #[option(default = "data")]
    field_name: String,
    /// A text file of terms, one a line (without it, the terms are the numbers 0 to
    /// rangeSize - 1).
    input_data_path: Option<String>,
    /// How many numbers to draw from (required without inputDataPath); with it, use only a
    /// random subset of that many lines, chosen once per stage instance.
    #[option(min = 1)]
    range_size: Option<usize>,
    /// The fewest terms a document gets (give with maxNumOfTerms; default 1).
    min_num_of_terms: Option<usize>,
    /// The most terms a document gets (give with minNumOfTerms; default 1).
    max_num_of_terms: Option<usize>,
    /// Join a document's terms with spaces into one value.
    #[option(default)]
    concatenate: bool,
    /// Write a list of objects `{"data": term}`, replacing the field.
    #[option(default)]
    is_nested: bool,
}

enum Pool {
    Numbers(usize),
    Lines(Vec<String>),
}

struct AddRandomString {
    field: String,
    pool: Pool,
    min: usize,
    max: usize,
    concatenate: bool,
    nested: bool,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = AddRandomStringOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_field_name(config, &o.field_name) {
        errors.push(e);
    }
    let (min, max) = match (o.min_num_of_terms, o.max_num_of_terms) {
        (Some(min), Some(max)) => (min, max),
        (None, None) => (1, 1),
        (Some(_), None) => {
            errors.push(config.error("maxNumOfTerms", "must be given with minNumOfTerms"));
            (1, 1)
        }
        (None, Some(_)) => {
            errors.push(config.error("minNumOfTerms", "must be given with maxNumOfTerms"));
            (1, 1)
        }
    };
    if min > max {
        errors.push(config.error(
            "minNumOfTerms",
            format!("must not be greater than maxNumOfTerms ({min} > {max})"),
        ));
    }
    let (concatenate, nested) = (o.concatenate, o.is_nested);
    if concatenate && nested {
        errors.push(config.error("concatenate", "cannot be used together with isNested"));
    }
    let pool = match (o.input_data_path, o.range_size) {
        (None, Some(n)) => Some(Pool::Numbers(n)),
        (None, None) => {
            errors.push(config.error("rangeSize", "is required when there is no inputDataPath"));
            None
        }
        (Some(path), n) => match read_lines(config, &path, n) {
            Ok(lines) => Some(Pool::Lines(lines)),
            Err(e) => {
                errors.push(e);
                None
            }
        },
    };
    let (Some(pool), true) = (pool, errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(AddRandomString {
        field: o.field_name,
        pool,
        min,
        max,
        concatenate,
        nested,
    }))
}

/// The lines of `inputDataPath`; with `rangeSize`, a random subset of that many.
fn read_lines(
    config: &ComponentConfig,
    path: &str,
    range_size: Option<usize>,
) -> Result<Vec<String>, ConfigError> {
    let resolved = config.resolve_path(path);
    let text = std::fs::read_to_string(&resolved).map_err(|e| {
        config.error(
            "inputDataPath",
            format!("cannot read {:?}: {e}", resolved.display()),
        )
    })?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        return Err(config.error(
            "inputDataPath",
            format!("{:?} has no lines", resolved.display()),
        ));
    }
    if let Some(n) = range_size {
        if n > lines.len() {
            return Err(config.error(
                "rangeSize",
                format!(
                    "is larger than the {} lines of {:?}",
                    lines.len(),
                    resolved.display()
                ),
            ));
        }
        if n < lines.len() {
            lines.shuffle(&mut rand::rng());
            lines.truncate(n);
        }
    }
    Ok(lines)
}

impl Stage for AddRandomString {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut rng = rand::rng();
        let count = rng.random_range(self.min..=self.max);
        let terms: Vec<String> = (0..count)
            .map(|_| match &self.pool {
                Pool::Numbers(n) => rng.random_range(0..*n).to_string(),
                Pool::Lines(lines) => lines[rng.random_range(0..lines.len())].clone(),
            })
            .collect();
        if self.nested {
            let items: Vec<Value> = terms.into_iter().map(|t| json!({ "data": t })).collect();
            doc.set_field(&self.field, Value::Array(items))?;
        } else if self.concatenate {
            doc.set_or_add(&self.field, terms.join(" "))?;
        } else {
            for t in terms {
                doc.set_or_add(&self.field, t)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::temp_file;
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::{json, Value};

    const FOODS: &[u8] = b"apple\nbread\ncheese\ndates\n";

    #[test]
    fn numbers_in_range_with_term_counts() {
        let mut s = build_stage(json!({"class": "AddRandomString", "rangeSize": 5,
            "minNumOfTerms": 2, "maxNumOfTerms": 4, "fieldName": "f"}));
        for _ in 0..100 {
            let out = process(&mut s, json!({"id": "d"}));
            let values = out.get_string_list("f").unwrap();
            assert!((2..=4).contains(&values.len()), "{values:?}");
            assert!(values.iter().all(|v| v.parse::<u32>().unwrap() < 5));
        }
        let mut s = build_stage(json!({"class": "AddRandomString", "rangeSize": 3}));
        let out = process(&mut s, json!({"id": "d", "data": "old"}));
        assert_eq!(out.len_of("data"), 2, "appends to an existing field");
    }

    #[test]
    fn terms_from_a_file_subset_concatenated_or_nested() {
        let path = temp_file("foods.txt", FOODS);
        let p = path.to_str().unwrap();
        let mut s = build_stage(json!({"class": "AddRandomString", "inputDataPath": p,
            "minNumOfTerms": 10, "maxNumOfTerms": 10, "rangeSize": 1}));
        let out = process(&mut s, json!({"id": "d"}));
        let values = out.get_string_list("data").unwrap();
        assert_eq!(values.len(), 10);
        assert!(
            values.iter().all(|v| v == &values[0]),
            "one line in the subset"
        );
        assert!(["apple", "bread", "cheese", "dates"].contains(&values[0].as_str()));

        let mut s = build_stage(json!({"class": "AddRandomString", "inputDataPath": p,
            "minNumOfTerms": 3, "maxNumOfTerms": 3, "concatenate": true}));
        let out = process(&mut s, json!({"id": "d"}));
        assert_eq!(out.get_str("data").unwrap().split(' ').count(), 3);

        let mut s = build_stage(json!({"class": "AddRandomString", "inputDataPath": p,
            "minNumOfTerms": 0, "maxNumOfTerms": 2, "isNested": true}));
        for _ in 0..20 {
            let out = process(&mut s, json!({"id": "d", "data": "replaced"}));
            let Some(Value::Array(items)) = out.get("data") else {
                panic!("{out}")
            };
            assert!(items.len() <= 2);
            assert!(items.iter().all(|i| i["data"].is_string()));
        }
    }

    #[test]
    fn bad_configs() {
        let path = temp_file("foods.txt", FOODS);
        let p = path.to_str().unwrap();
        let empty = temp_file("empty.txt", b"");
        for (config, key) in [
            (json!({"class": "AddRandomString"}), "rangeSize"),
            (
                json!({"class": "AddRandomString", "rangeSize": 0}),
                "rangeSize",
            ),
            (
                json!({"class": "AddRandomString", "rangeSize": 2, "minNumOfTerms": 1}),
                "maxNumOfTerms",
            ),
            (
                json!({"class": "AddRandomString", "rangeSize": 2, "maxNumOfTerms": 1}),
                "minNumOfTerms",
            ),
            (
                json!({"class": "AddRandomString", "rangeSize": 2, "minNumOfTerms": 3,
                "maxNumOfTerms": 1}),
                "minNumOfTerms",
            ),
            (
                json!({"class": "AddRandomString", "rangeSize": 2, "concatenate": true,
                "isNested": true}),
                "concatenate",
            ),
            (
                json!({"class": "AddRandomString", "inputDataPath": p, "rangeSize": 5}),
                "rangeSize",
            ),
            (
                json!({"class": "AddRandomString", "inputDataPath": "no/such/file.txt"}),
                "inputDataPath",
            ),
            (
                json!({"class": "AddRandomString", "inputDataPath": empty.to_str().unwrap()}),
                "inputDataPath",
            ),
            (
                json!({"class": "AddRandomString", "rangeSize": -2}),
                "rangeSize",
            ),
        ] {
            let err = build_err(config.clone());
            assert!(err.contains(key), "{config}: {err}");
        }
    }
}
