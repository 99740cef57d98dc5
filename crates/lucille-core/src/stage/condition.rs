//! Per-stage conditions (`conditions: [{fields, values | valuesPath, operator}]` with
//! `conditionPolicy: all | any`). A stage whose conditions do not hold passes the document
//! through untouched.
//!
//! As in Lucille: with `values`, a condition holds for `must` when any value of any listed field
//! (read as text, so `10` matches `"10"`) is in the set, and for `must_not` when none is; without
//! `values`, `must` requires every field to be present and `must_not` every field to be absent.
//! A condition with no fields always holds.

use std::collections::HashSet;

use serde_json::Value;

use crate::config::{as_string, ComponentConfig, ConfigError, Kind, Spec};
use crate::document::Document;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Must,
    MustNot,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    fields: Vec<String>,
    /// `None` = presence check; `Some` = value check. `None` inside the set matches null.
    values: Option<HashSet<Option<String>>>,
    operator: Operator,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    #[default]
    All,
    Any,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conditions {
    conditions: Vec<Condition>,
    policy: Policy,
}

fn condition_spec() -> Spec {
    Spec::new()
        .required("fields", Kind::StringList)
        .optional("values", Kind::List)
        .optional("valuesPath", Kind::String)
        .optional("operator", Kind::OneOf(&["must", "must_not"]))
}

impl Condition {
    pub fn new(
        fields: Vec<String>,
        values: Option<Vec<Option<String>>>,
        operator: Operator,
    ) -> Self {
        Condition {
            fields,
            values: values.map(|v| v.into_iter().collect()),
            operator,
        }
    }

    /// Parses one condition object; `path` names it in errors (`...conditions[0]`).
    pub fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut errors = condition_spec().validate(config.map(), config.path());
        if config.has("values") && config.has("valuesPath") {
            errors.push(config.error(
                "values",
                "give either \"values\" or \"valuesPath\", not both",
            ));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let fields = config.require_string_list("fields").map_err(|e| vec![e])?;
        let operator = match config
            .string("operator")
            .map_err(|e| vec![e])?
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            None | Some("must") => Operator::Must,
            _ => Operator::MustNot,
        };
        let values = if let Some(Value::Array(items)) = config.get("values") {
            Some(
                items
                    .iter()
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        other => as_string(other).map(Some).ok_or_else(|| {
                            config.error(
                                "values",
                                "values must be strings, numbers, booleans or null",
                            )
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| vec![e])?,
            )
        } else if let Some(path) = config.string("valuesPath").map_err(|e| vec![e])? {
            let file = config.resolve_path(&path);
            let text = std::fs::read_to_string(&file).map_err(|e| {
                vec![config.error("valuesPath", format!("cannot read {}: {e}", file.display()))]
            })?;
            Some(
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(|l| Some(l.to_string()))
                    .collect(),
            )
        } else {
            None
        };
        Ok(Condition::new(fields, values, operator))
    }

    pub fn holds(&self, doc: &Document) -> bool {
        if self.fields.is_empty() {
            return true;
        }
        let must = self.operator == Operator::Must;
        match &self.values {
            None => {
                if must {
                    self.fields.iter().all(|f| doc.has(f))
                } else {
                    self.fields.iter().all(|f| !doc.has(f))
                }
            }
            Some(values) => {
                for field in &self.fields {
                    for v in doc.values(field) {
                        let text = match v {
                            Value::Null => None,
                            other => as_string(other).or_else(|| Some(other.to_string())),
                        };
                        if values.contains(&text) {
                            return must;
                        }
                    }
                }
                !must
            }
        }
    }
}

impl Conditions {
    pub fn new(conditions: Vec<Condition>, policy: Policy) -> Self {
        Conditions { conditions, policy }
    }

    /// Reads `conditions` and `conditionPolicy` from a stage's config block.
    pub fn from_stage_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut errors = Vec::new();
        let policy = match config.string("conditionPolicy") {
            Ok(None) => Policy::All,
            Ok(Some(p)) if p.eq_ignore_ascii_case("all") => Policy::All,
            Ok(Some(p)) if p.eq_ignore_ascii_case("any") => Policy::Any,
            Ok(Some(p)) => {
                errors.push(config.error(
                    "conditionPolicy",
                    format!("must be \"all\" or \"any\", found {p:?}"),
                ));
                Policy::All
            }
            Err(e) => {
                errors.push(e);
                Policy::All
            }
        };
        let mut conditions = Vec::new();
        match config.get("conditions") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{}[{i}]", config.key_path("conditions"));
                    match item {
                        Value::Object(m) => {
                            let c = ComponentConfig::new(m.clone(), path)
                                .with_paths(config.paths().clone());
                            match Condition::from_config(&c) {
                                Ok(c) => conditions.push(c),
                                Err(mut e) => errors.append(&mut e),
                            }
                        }
                        _ => errors.push(ConfigError::new(path, "a condition must be an object")),
                    }
                }
            }
            Some(_) => {
                errors.push(config.error("conditions", "must be a list of condition objects"))
            }
        }
        if errors.is_empty() {
            Ok(Conditions { conditions, policy })
        } else {
            Err(errors)
        }
    }

    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    pub fn hold(&self, doc: &Document) -> bool {
        if self.conditions.is_empty() {
            return true;
        }
        match self.policy {
            Policy::All => self.conditions.iter().all(|c| c.holds(doc)),
            Policy::Any => self.conditions.iter().any(|c| c.holds(doc)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg(v: Value) -> ComponentConfig {
        match v {
            Value::Object(m) => ComponentConfig::new(m, "stage"),
            _ => panic!(),
        }
    }

    fn doc(v: Value) -> Document {
        Document::from_value(v).unwrap()
    }

    #[test]
    fn value_conditions_match_as_text() {
        let c = Conditions::from_stage_config(&cfg(
            json!({"conditions": [{"fields": ["n", "s"], "values": [10, "x", null]}]}),
        ))
        .unwrap();
        assert!(c.hold(&doc(json!({"id": "a", "n": "10"}))));
        assert!(c.hold(&doc(json!({"id": "a", "n": 10}))));
        assert!(c.hold(&doc(json!({"id": "a", "s": ["q", "x"]}))));
        assert!(c.hold(&doc(json!({"id": "a", "s": null}))));
        assert!(!c.hold(&doc(json!({"id": "a", "s": "y"}))));
        assert!(!c.hold(&doc(json!({"id": "a"}))));
        let not = Conditions::from_stage_config(&cfg(
            json!({"conditions": [{"fields": ["s"], "values": ["x"], "operator": "must_not"}]}),
        ))
        .unwrap();
        assert!(!not.hold(&doc(json!({"id": "a", "s": "x"}))));
        assert!(not.hold(&doc(json!({"id": "a", "s": "y"}))));
        assert!(not.hold(&doc(json!({"id": "a"}))));
    }

    #[test]
    fn presence_conditions() {
        let must = Condition::new(vec!["a".into(), "b".into()], None, Operator::Must);
        let must_not = Condition::new(vec!["a".into(), "b".into()], None, Operator::MustNot);
        let both = doc(json!({"id": "d", "a": 1, "b": null}));
        let one = doc(json!({"id": "d", "a": 1}));
        let none = doc(json!({"id": "d"}));
        assert!(must.holds(&both) && !must.holds(&one));
        assert!(must_not.holds(&none) && !must_not.holds(&one));
        assert!(Condition::new(vec![], None, Operator::MustNot).holds(&none));
    }

    #[test]
    fn policies_all_and_any() {
        let c = json!([{"fields": ["a"]}, {"fields": ["b"]}]);
        let all = Conditions::from_stage_config(&cfg(json!({"conditions": c.clone()}))).unwrap();
        let any =
            Conditions::from_stage_config(&cfg(json!({"conditions": c, "conditionPolicy": "any"})))
                .unwrap();
        let only_a = doc(json!({"id": "d", "a": 1}));
        assert!(!all.hold(&only_a));
        assert!(any.hold(&only_a));
        assert!(!any.hold(&doc(json!({"id": "d"}))));
        assert!(Conditions::default().hold(&only_a));
    }

    #[test]
    fn values_path_reads_one_value_per_line() {
        let dir = std::env::temp_dir().join(format!("lucille-cond-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vals.txt"), "alpha\n\n  beta  \n").unwrap();
        let c = cfg(json!({"conditions": [{"fields": ["f"], "valuesPath": "vals.txt"}]}))
            .with_base_dir(Some(dir.clone()));
        let c = Conditions::from_stage_config(&c).unwrap();
        assert!(c.hold(&doc(json!({"id": "d", "f": "beta"}))));
        assert!(!c.hold(&doc(json!({"id": "d", "f": "gamma"}))));
        let missing = cfg(json!({"conditions": [{"fields": ["f"], "valuesPath": "nope.txt"}]}))
            .with_base_dir(Some(dir));
        let errs = Conditions::from_stage_config(&missing).unwrap_err();
        assert!(
            errs[0]
                .to_string()
                .contains("stage.conditions[0].valuesPath: cannot read"),
            "{errs:?}"
        );
    }

    #[test]
    fn bad_conditions_report_every_error() {
        let errs = Conditions::from_stage_config(&cfg(json!({
            "conditionPolicy": "most",
            "conditions": [{"values": ["x"], "operator": "maybe"}, 5, {"fields": ["a"], "values": [1], "valuesPath": "p"}]
        })))
        .unwrap_err();
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(
            text.iter().any(|t| t.contains("conditionPolicy")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("conditions[0].fields: missing required key")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.contains("conditions[0].operator")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("conditions[1]: a condition must be an object")),
            "{text:?}"
        );
        assert!(text.iter().any(|t| t.contains("not both")), "{text:?}");
    }
}
