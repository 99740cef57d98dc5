//! Component config specs (Lucille's Spec system): every connector, stage and indexer declares
//! the keys it accepts, so a whole config is checked before any work starts and every problem
//! is reported at once with its path.
//!
//! Values are read with Typesafe Config's coercions, because HOCON values arriving through
//! `${?ENV}` or `--set` are often strings: a numeric string reads as a number, `"true"` /
//! `"yes"` / `"on"` read as booleans, and a number or boolean reads as a string.

use std::fmt;

use serde_json::{Map, Value};

/// One problem in a config, with the path of the offending key (`pipelines[0].stages[2].fieldMapping`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub path: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

impl ConfigError {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.into(),
            message: message.into(),
        }
    }

    /// One error standing for several found under `path` (a component whose constructor
    /// reports a single error): the only one as it is, else their texts joined by "; ".
    pub fn joined(path: &str, mut errors: Vec<ConfigError>) -> ConfigError {
        if errors.len() == 1 {
            return errors.remove(0);
        }
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        ConfigError::new(path, text.join("; "))
    }
}

/// Every error found in a config, reported together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        ConfigErrors(vec![e])
    }
}

impl From<Vec<ConfigError>> for ConfigErrors {
    fn from(errors: Vec<ConfigError>) -> Self {
        ConfigErrors(errors)
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        writeln!(f, "{n} config error{}:", if n == 1 { "" } else { "s" })?;
        for e in &self.0 {
            writeln!(f, "  - {e}")?;
        }
        Ok(())
    }
}

/// The type a key must have.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    String,
    Integer,
    Number,
    Bool,
    /// A list of strings (numbers and booleans inside are read as their text).
    StringList,
    /// A list of anything.
    List,
    /// An object with string values (e.g. CopyFields' `fieldMapping`).
    StringMap,
    /// An object of anything.
    Object,
    /// A list of objects (e.g. `conditions`).
    ObjectList,
    /// A string or a list of strings.
    StringOrList,
    /// One of these strings, case-insensitive.
    OneOf(&'static [&'static str]),
    Any,
}

impl Kind {
    /// What a value of this kind is, in words ("an object of strings").
    pub fn describe(&self) -> String {
        match self {
            Kind::String => "a string".into(),
            Kind::Integer => "an integer".into(),
            Kind::Number => "a number".into(),
            Kind::Bool => "a boolean".into(),
            Kind::StringList => "a list of strings".into(),
            Kind::List => "a list".into(),
            Kind::StringMap => "an object of strings".into(),
            Kind::Object => "an object".into(),
            Kind::ObjectList => "a list of objects".into(),
            Kind::StringOrList => "a string or a list of strings".into(),
            Kind::OneOf(options) => format!("one of {}", options.join(", ")),
            Kind::Any => "any value".into(),
        }
    }

    fn accepts(&self, v: &Value) -> bool {
        match self {
            Kind::Any => true,
            Kind::String => as_string(v).is_some(),
            Kind::Integer => as_i64(v).is_some(),
            Kind::Number => as_f64(v).is_some(),
            Kind::Bool => as_bool(v).is_some(),
            Kind::StringList => {
                matches!(v, Value::Array(items) if items.iter().all(|i| as_string(i).is_some()))
            }
            Kind::List => v.is_array(),
            Kind::StringMap => {
                matches!(v, Value::Object(m) if m.values().all(|i| as_string(i).is_some()))
            }
            Kind::Object => v.is_object(),
            Kind::ObjectList => {
                matches!(v, Value::Array(items) if items.iter().all(Value::is_object))
            }
            // A single value must be a string: a bare number or boolean where field names are
            // expected is a mistake (Lucille's getStringList would not take it either).
            Kind::StringOrList => v.is_string() || Kind::StringList.accepts(v),
            Kind::OneOf(options) => {
                as_string(v).is_some_and(|s| options.iter().any(|o| o.eq_ignore_ascii_case(&s)))
            }
        }
    }
}

#[derive(Debug, Clone)]
pub struct Property {
    pub name: &'static str,
    pub kind: Kind,
    pub required: bool,
    /// What the key does (`lucille doc`); empty for keys declared without one.
    pub description: &'static str,
    /// The default, as written in the options type; empty when there is none.
    pub default: &'static str,
    /// Inclusive bounds of a number.
    pub range: Option<(Option<f64>, Option<f64>)>,
}

/// The keys a component accepts. `aliases` map keys of older Lucille versions to current ones
/// (CopyFields `source` → old form), accepted and normalised before validation.
#[derive(Debug, Clone, Default)]
pub struct Spec {
    properties: Vec<Property>,
    aliases: Vec<(&'static str, &'static str)>,
    /// Lucille keys this project does not do, each with what to use instead: rejected with
    /// that message rather than as unknown.
    unsupported: Vec<(&'static str, &'static str)>,
    /// Objects whose inner keys are free-form (`fieldMapping { a: b }`), so the unknown-key
    /// check stops at them.
    open: bool,
    /// What the component does, in a sentence (`lucille doc`).
    summary: &'static str,
}

impl Spec {
    pub fn new() -> Self {
        Spec::default()
    }

    /// The keys every stage accepts.
    pub fn stage() -> Self {
        Spec::new()
            .optional("name", Kind::String)
            .doc("the stage's name in logs, metrics and errors (default: stage_N by position)")
            .required("class", Kind::String)
            .doc("the stage: a built-in name, Lucille's class name, or a Python class as module:Class")
            .optional("enabled", Kind::Bool)
            .doc("false leaves the stage out of the pipeline (its config is still checked)")
            .optional("conditions", Kind::ObjectList)
            .doc("run the stage only on the documents these match ({ fields, values, operator })")
            .optional("conditionPolicy", Kind::OneOf(&["all", "any"]))
            .doc("all: every condition must match (the default); any: one is enough")
    }

    pub fn required(self, name: &'static str, kind: Kind) -> Self {
        self.property(Property {
            name,
            kind,
            required: true,
            description: "",
            default: "",
            range: None,
        })
    }

    pub fn optional(self, name: &'static str, kind: Kind) -> Self {
        self.property(Property {
            name,
            kind,
            required: false,
            description: "",
            default: "",
            range: None,
        })
    }

    /// Adds a key; one given again replaces the earlier one (an options type that declares a
    /// key of its base spec, such as a stage's `name`, with its own description).
    pub fn property(mut self, property: Property) -> Self {
        match self.properties.iter_mut().find(|p| p.name == property.name) {
            Some(p) => *p = property,
            None => self.properties.push(property),
        }
        self
    }

    /// Describes the key added last (`lucille doc`).
    pub fn doc(mut self, description: &'static str) -> Self {
        if let Some(p) = self.properties.last_mut() {
            p.description = description;
        }
        self
    }

    /// What the component does, in a sentence.
    pub fn summary(mut self, summary: &'static str) -> Self {
        self.summary = summary;
        self
    }

    pub fn summary_text(&self) -> &'static str {
        self.summary
    }

    /// Adds the keys, aliases and unsupported keys of `other` (the options type of a group of
    /// keys several components share, `#[option(flatten)]`).
    pub fn with(mut self, other: Spec) -> Self {
        for p in other.properties {
            self = self.property(p);
        }
        self.aliases.extend(other.aliases);
        self.unsupported.extend(other.unsupported);
        self.open |= other.open;
        self
    }

    /// Accepts `old` as another spelling of `new`.
    pub fn alias(mut self, old: &'static str, new: &'static str) -> Self {
        self.aliases.push((old, new));
        self
    }

    /// Rejects Lucille's key `name`, which names something not done here, with `message`
    /// (what to use instead).
    pub fn unsupported(mut self, name: &'static str, message: &'static str) -> Self {
        self.unsupported.push((name, message));
        self
    }

    /// Accepts any extra key (for components whose config is free-form, such as a Python stage).
    pub fn open(mut self) -> Self {
        self.open = true;
        self
    }

    pub fn properties(&self) -> &[Property] {
        &self.properties
    }

    /// Rewrites aliased keys to their current names (the current name wins if both are given,
    /// and that is reported by `validate`).
    pub fn normalize(&self, config: &mut Map<String, Value>) {
        for (old, new) in &self.aliases {
            if config.contains_key(*new) {
                continue;
            }
            if let Some(v) = config.shift_remove(*old) {
                config.insert((*new).to_string(), v);
            }
        }
    }

    /// Every problem with `config`, each with `path` prefixed.
    pub fn validate(&self, config: &Map<String, Value>, path: &str) -> Vec<ConfigError> {
        let mut errors = Vec::new();
        let at = |key: &str| {
            if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            }
        };
        for (old, new) in &self.aliases {
            if config.contains_key(*old) && config.contains_key(*new) {
                errors.push(ConfigError::new(
                    at(old),
                    format!("{old:?} is an older name for {new:?}; give only one of them"),
                ));
            }
        }
        if !self.open {
            for key in config.keys() {
                let known = self.properties.iter().any(|p| p.name == key)
                    || self.aliases.iter().any(|(old, _)| old == key);
                if let Some((_, why)) = self.unsupported.iter().find(|(k, _)| k == key) {
                    errors.push(ConfigError::new(at(key), *why));
                } else if !known {
                    let mut message = format!("unknown key {key:?}");
                    if let Some(close) = self.closest(key) {
                        message.push_str(&format!(" (did you mean {close:?}?)"));
                    }
                    errors.push(ConfigError::new(at(key), message));
                }
            }
        }
        for p in &self.properties {
            match config.get(p.name) {
                None if p.required => errors.push(ConfigError::new(
                    at(p.name),
                    format!("missing required key {:?} ({})", p.name, p.kind.describe()),
                )),
                Some(v) if !p.kind.accepts(v) => errors.push(ConfigError::new(
                    at(p.name),
                    format!(
                        "must be {}, found {}",
                        p.kind.describe(),
                        describe_value(p.name, v)
                    ),
                )),
                _ => {}
            }
        }
        errors
    }

    fn closest(&self, key: &str) -> Option<&'static str> {
        let lower = key.to_ascii_lowercase();
        self.properties.iter().map(|p| p.name).find(|name| {
            name.to_ascii_lowercase() == lower
                || strsim::levenshtein(&lower, &name.to_ascii_lowercase()) <= 2
        })
    }
}

/// The type and value of `v` for an error about `key`; a secret key's value is not quoted.
fn describe_value(key: &str, v: &Value) -> String {
    let text = v.to_string();
    let short = if text.chars().count() > 40 {
        format!("{}...", text.chars().take(37).collect::<String>())
    } else {
        text
    };
    let kind = match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    };
    if super::is_secret_key(key) {
        return format!("{kind} (value hidden: the key holds a secret)");
    }
    format!("{kind} ({short})")
}

// ----- Typesafe-style coercions -----

pub fn as_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Number(n) => n.as_i64().or_else(|| {
            n.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                .map(|f| f as i64)
        }),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok().filter(|f: &f64| f.is_finite()),
        _ => None,
    }
}

pub fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" => Some(true),
            "false" | "no" | "off" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Typed reads of one component's config block, each error naming the key's full path.
/// Used by constructors after `Spec::validate`, so a failure here is a real config problem
/// the spec cannot express (a bad regex, a negative size), reported the same way.
#[derive(Debug, Clone)]
pub struct ComponentConfig {
    map: Map<String, Value>,
    path: String,
    /// Where relative paths point (the working directory, the config file's folder, the
    /// `classpath:` roots): `config::paths`.
    paths: std::sync::Arc<super::paths::PathContext>,
}

impl ComponentConfig {
    pub fn new(map: Map<String, Value>, path: impl Into<String>) -> Self {
        ComponentConfig {
            map,
            path: path.into(),
            paths: std::sync::Arc::new(super::paths::PathContext::new(None)),
        }
    }

    /// A config whose file sits in `dir`, run from the current working directory with the
    /// default resource roots.
    pub fn with_base_dir(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.paths = std::sync::Arc::new(super::paths::PathContext::new(dir));
        self
    }

    /// The same path context as another config (a sub-block, a handler).
    pub fn with_paths(mut self, paths: std::sync::Arc<super::paths::PathContext>) -> Self {
        self.paths = paths;
        self
    }

    pub fn paths(&self) -> &std::sync::Arc<super::paths::PathContext> {
        &self.paths
    }

    /// The folder of the config file.
    pub fn base_dir(&self) -> Option<&std::path::Path> {
        self.paths.config_dir()
    }

    /// A path the run reads (`config::paths`): from the working directory, else beside the
    /// config file; `classpath:X` from the resource roots.
    pub fn resolve_path(&self, p: &str) -> std::path::PathBuf {
        self.paths.resolve_input(p)
    }

    /// A path the run writes: from the working directory.
    pub fn resolve_output_path(&self, p: &str) -> std::path::PathBuf {
        self.paths.resolve_output(p)
    }

    pub fn map(&self) -> &Map<String, Value> {
        &self.map
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{key}", self.path)
        }
    }

    pub fn error(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::new(self.key_path(key), message)
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(key)
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    fn typed<T>(
        &self,
        key: &str,
        kind: &str,
        f: impl Fn(&Value) -> Option<T>,
    ) -> Result<Option<T>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => f(v).map(Some).ok_or_else(|| {
                self.error(
                    key,
                    format!("must be {kind}, found {}", describe_value(key, v)),
                )
            }),
        }
    }

    fn require<T>(&self, key: &str, v: Result<Option<T>, ConfigError>) -> Result<T, ConfigError> {
        v?.ok_or_else(|| self.error(key, format!("missing required key {key:?}")))
    }

    pub fn string(&self, key: &str) -> Result<Option<String>, ConfigError> {
        self.typed(key, "a string", as_string)
    }
    pub fn require_string(&self, key: &str) -> Result<String, ConfigError> {
        self.require(key, self.string(key))
    }
    pub fn i64(&self, key: &str) -> Result<Option<i64>, ConfigError> {
        self.typed(key, "an integer", as_i64)
    }
    /// A HOCON duration (`"6h"`, `"3 days"`, milliseconds), read by [`super::parse_duration`].
    pub fn duration(&self, key: &str) -> Result<Option<std::time::Duration>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => super::parse_duration(v)
                .map(Some)
                .map_err(|e| self.error(key, e.to_string())),
        }
    }
    pub fn require_i64(&self, key: &str) -> Result<i64, ConfigError> {
        self.require(key, self.i64(key))
    }
    /// A non-negative integer that fits in usize.
    pub fn usize(&self, key: &str) -> Result<Option<usize>, ConfigError> {
        self.typed(key, "a non-negative integer", |v| {
            as_i64(v).and_then(|i| usize::try_from(i).ok())
        })
    }
    pub fn f64(&self, key: &str) -> Result<Option<f64>, ConfigError> {
        self.typed(key, "a number", as_f64)
    }
    pub fn bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        self.typed(key, "a boolean", as_bool)
    }
    pub fn bool_or(&self, key: &str, default: bool) -> Result<bool, ConfigError> {
        Ok(self.bool(key)?.unwrap_or(default))
    }
    pub fn string_list(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        self.typed(key, "a list of strings", |v| match v {
            Value::Array(items) => items.iter().map(as_string).collect(),
            _ => None,
        })
    }
    pub fn require_string_list(&self, key: &str) -> Result<Vec<String>, ConfigError> {
        self.require(key, self.string_list(key))
    }
    /// A string or a list of strings, as a list.
    pub fn strings(&self, key: &str) -> Result<Option<Vec<String>>, ConfigError> {
        self.typed(key, "a string or a list of strings", |v| match v {
            Value::Array(items) => items.iter().map(as_string).collect(),
            other => as_string(other).map(|s| vec![s]),
        })
    }
    /// An object of strings, keeping its key order.
    pub fn string_map(&self, key: &str) -> Result<Option<Vec<(String, String)>>, ConfigError> {
        self.typed(key, "an object of strings", |v| match v {
            Value::Object(m) => m
                .iter()
                .map(|(k, v)| as_string(v).map(|s| (k.clone(), s)))
                .collect(),
            _ => None,
        })
    }
    pub fn object(&self, key: &str) -> Result<Option<&Map<String, Value>>, ConfigError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(v) => Err(self.error(
                key,
                format!("must be an object, found {}", describe_value(key, v)),
            )),
        }
    }
    pub fn update_mode(&self, key: &str) -> Result<crate::document::UpdateMode, ConfigError> {
        match self.string(key)? {
            None => Ok(crate::document::UpdateMode::Overwrite),
            Some(s) => crate::document::UpdateMode::parse(&s).ok_or_else(|| {
                self.error(
                    key,
                    format!("must be overwrite, append or skip, found {s:?}"),
                )
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_wrong_typed_secret_is_not_quoted() {
        let spec = Spec::new()
            .required("apiKey", Kind::String)
            .optional("maxTokens", Kind::Integer);
        let config = serde_json::json!({"apiKey": ["s3cr3t"], "maxTokens": "many"});
        let errors = spec.validate(config.as_object().unwrap(), "x");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "x.apiKey: must be a string, found a list (value hidden: the key holds a secret)",
                "x.maxTokens: must be an integer, found a string (\"many\")"
            ]
        );
        let cc = ComponentConfig::new(config.as_object().unwrap().clone(), "x");
        let e = cc.string("apiKey").unwrap_err().to_string();
        assert!(!e.contains("s3cr3t") && e.contains("value hidden"), "{e}");
    }

    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn validate_lists_every_problem_with_paths() {
        let spec = Spec::stage()
            .required("fieldMapping", Kind::StringMap)
            .optional("updateMode", Kind::OneOf(&["overwrite", "append", "skip"]))
            .optional("limit", Kind::Integer);
        let cfg = map(
            json!({"class": "CopyFields", "fieldMaping": {}, "updateMode": "sideways", "limit": "x"}),
        );
        let errors = spec.validate(&cfg, "pipelines[0].stages[1]");
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(errors.len(), 4, "{text:?}");
        assert!(text.iter().any(|t| t.contains("pipelines[0].stages[1].fieldMaping: unknown key \"fieldMaping\" (did you mean \"fieldMapping\"?)")), "{text:?}");
        assert!(text
            .iter()
            .any(|t| t.contains("fieldMapping: missing required key")));
        assert!(text
            .iter()
            .any(|t| t.contains("updateMode: must be one of overwrite, append, skip")));
        assert!(text
            .iter()
            .any(|t| t.contains("limit: must be an integer, found a string (\"x\")")));
    }

    #[test]
    fn coercions_follow_typesafe() {
        let spec = Spec::new()
            .optional("n", Kind::Integer)
            .optional("b", Kind::Bool)
            .optional("s", Kind::String)
            .optional("f", Kind::Number);
        let cfg = map(json!({"n": "42", "b": "yes", "s": 7, "f": "1.5"}));
        assert!(spec.validate(&cfg, "").is_empty());
        let c = ComponentConfig::new(cfg, "x");
        assert_eq!(c.i64("n").unwrap(), Some(42));
        assert_eq!(c.bool("b").unwrap(), Some(true));
        assert_eq!(c.string("s").unwrap().as_deref(), Some("7"));
        assert_eq!(c.f64("f").unwrap(), Some(1.5));
        assert!(c.i64("s").is_ok());
        let err = c.require_string("missing").unwrap_err();
        assert_eq!(err.path, "x.missing");
    }

    #[test]
    fn aliases_normalise_and_conflicts_are_reported() {
        let spec = Spec::new()
            .optional("fieldMapping", Kind::StringMap)
            .alias("mapping", "fieldMapping");
        let mut cfg = map(json!({"mapping": {"a": "b"}}));
        assert!(spec.validate(&cfg, "").is_empty());
        spec.normalize(&mut cfg);
        assert_eq!(cfg.get("fieldMapping"), Some(&json!({"a": "b"})));
        let both = map(json!({"mapping": {}, "fieldMapping": {}}));
        assert_eq!(spec.validate(&both, "").len(), 1);
    }

    #[test]
    fn typed_reads() {
        let c = ComponentConfig::new(
            map(
                json!({"l": ["a", 1, true], "one": "x", "m": {"b": "c", "a": 2}, "bad": [{}], "mode": "APPEND"}),
            ),
            "s",
        );
        assert_eq!(c.string_list("l").unwrap().unwrap(), vec!["a", "1", "true"]);
        assert_eq!(c.strings("one").unwrap().unwrap(), vec!["x"]);
        assert_eq!(
            c.string_map("m").unwrap().unwrap(),
            vec![
                ("b".to_string(), "c".to_string()),
                ("a".to_string(), "2".to_string())
            ]
        );
        assert!(c.string_list("bad").is_err());
        assert_eq!(
            c.update_mode("mode").unwrap(),
            crate::document::UpdateMode::Append
        );
        assert_eq!(
            c.update_mode("absent").unwrap(),
            crate::document::UpdateMode::Overwrite
        );
        assert!(c.usize("absent").unwrap().is_none());
    }

    #[test]
    fn errors_display_together() {
        let e = ConfigErrors(vec![ConfigError::new("a", "x"), ConfigError::new("", "y")]);
        assert_eq!(e.to_string(), "2 config errors:\n  - a: x\n  - y\n");
    }
}
