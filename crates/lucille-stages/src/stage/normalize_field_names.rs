//! NormalizeFieldNames: rewrites every field name to letters, digits, `_` and `.`.
//!
//! Keys: `delimiter` (replaces each space; default `_`), `nonAlphanumReplacement` (replaces
//! every other character that is not an ASCII letter, digit, `_` or `.`; default empty, so
//! such characters are removed). The misspelt `delimeter` and `nonAlphaNumReplacement`, which
//! Lucille's code reads, are accepted as older names.
//!
//! `"input 3 (test123)"` becomes `"input_3_test123"`. The delimiter and replacement are
//! inserted as given (Lucille applies the character filter after inserting the delimiter, so
//! a delimiter such as `-` is removed again; its code also never reads the keys its spec
//! declares, so they have no effect there). A renamed field that lands on an existing name
//! overwrites it, as in Lucille. A name that would become empty or reserved (`"run id"` →
//! `run_id`) is left unchanged. Reserved fields are never renamed.

use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::{is_reserved, Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "NormalizeFieldNames",
    spec: NormalizeFieldNamesOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Rewrites every field name to letters, digits, `_` and `.`.
#[derive(Options)]
#[options(base = Spec::stage())]
struct NormalizeFieldNamesOptions {
    /// What replaces each space.
    #[option(default = "_", alias = "delimeter")]
    delimiter: String,
    /// What replaces every other character that is not an ASCII letter, digit, `_` or `.`
    /// (default: nothing, so they are removed).
    #[option(default, alias = "nonAlphaNumReplacement")]
    non_alphanum_replacement: String,
}

struct NormalizeFieldNames {
    delimiter: String,
    replacement: String,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = NormalizeFieldNamesOptions::from_config(config)?;
    Ok(Box::new(NormalizeFieldNames {
        delimiter: o.delimiter,
        replacement: o.non_alphanum_replacement,
    }))
}

impl NormalizeFieldNames {
    fn normalize(&self, name: &str) -> String {
        let mut out = String::with_capacity(name.len());
        for c in name.chars() {
            if c == ' ' {
                out.push_str(&self.delimiter);
            } else if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                out.push(c);
            } else {
                out.push_str(&self.replacement);
            }
        }
        out
    }
}

impl Stage for NormalizeFieldNames {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let renames: Vec<(String, String)> = doc
            .field_names()
            .filter_map(|name| {
                let new = self.normalize(name);
                (new != name && !new.is_empty() && !is_reserved(&new))
                    .then(|| (name.to_string(), new))
            })
            .collect();
        for (old, new) in renames {
            doc.rename_field(&old, &new, UpdateMode::Overwrite)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn normalizes_with_defaults() {
        let mut s = build_stage(json!({"class": "NormalizeFieldNames"}));
        let out = process(
            &mut s,
            json!({"id": "d", "input1": "t1", "input 2": "t2", "input 3 (test123)": "t3", ".sonarcontent": "c", "héllo-wörld": 1}),
        );
        assert_eq!(
            out.to_json(),
            r#"{"id":"d","input1":"t1",".sonarcontent":"c","input_2":"t2","input_3_test123":"t3","hllowrld":1}"#
        );
    }

    #[test]
    fn custom_delimiter_and_replacement_including_old_spellings() {
        let mut s = build_stage(
            json!({"class": "NormalizeFieldNames", "delimiter": "-", "nonAlphanumReplacement": "X"}),
        );
        let out = process(&mut s, json!({"id": "d", "a b(c)": 1}));
        assert_eq!(out.to_json(), r#"{"id":"d","a-bXcX":1}"#);
        let mut s = build_stage(
            json!({"class": "NormalizeFieldNames", "delimeter": "+", "nonAlphaNumReplacement": "?"}),
        );
        let out = process(&mut s, json!({"id": "d", "a b!": 1}));
        assert_eq!(out.to_json(), r#"{"id":"d","a+b?":1}"#);
    }

    #[test]
    fn collisions_empty_and_reserved_results() {
        let mut s = build_stage(json!({"class": "NormalizeFieldNames"}));
        let out = process(
            &mut s,
            json!({"id": "d", "a_b": "old", "a b": "new", "()": 1, "run id": 2}),
        );
        assert_eq!(out.get("a_b"), Some(&json!("new")));
        assert!(!out.has("a b"));
        assert_eq!(out.get("()"), Some(&json!(1)));
        assert_eq!(out.get("run id"), Some(&json!(2)));
        assert!(out.run_id().is_none());
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "NormalizeFieldNames", "delimiter": ["x"]}))
                .contains("delimiter")
        );
        assert!(build_err(
            json!({"class": "NormalizeFieldNames", "delimiter": "-", "delimeter": "+"})
        )
        .contains("delimeter"));
    }
}
