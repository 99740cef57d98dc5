//! A component's options as one Rust type. `#[derive(Options)]` (from `lucille-options-derive`,
//! re-exported here) writes, from a struct whose fields are the keys, both the [`Spec`] that
//! validation and `lucille doc` read and [`Options::from_config`], the typed values: the keys
//! are declared once, so what is validated, what is documented and what the component gets
//! cannot drift apart.

use serde_json::{Map, Value};

use super::spec::{ComponentConfig, ConfigError, Kind, Spec};

/// A component's options, declared once (derive it).
pub trait Options: Sized {
    /// The keys: names, kinds, required, defaults, ranges, descriptions.
    fn spec() -> Spec;

    /// Reads each key of a block already checked against a spec that includes this one,
    /// checking choices and ranges; problems go to `errors` (a key that has one there already
    /// is not read again). `None` when a key could not be read.
    fn read(config: &ComponentConfig, errors: &mut Vec<ConfigError>) -> Option<Self>;

    /// The typed options of a component's block: the block validated against [`Self::spec`]
    /// (unknown keys with did-you-mean, kinds, required keys, aliases), then each key read, its
    /// choices and range checked; every problem at once, each with its key path.
    fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut errors = Self::spec().validate(config.map(), config.path());
        let read = Self::read(config, &mut errors);
        match read {
            Some(options) if errors.is_empty() => Ok(options),
            _ if !errors.is_empty() => Err(errors),
            // Every failed read pushes its problem, so this is not reached.
            _ => Err(vec![ConfigError::new(
                config.path(),
                "the options could not be read",
            )]),
        }
    }
}

/// A type an option can have: its [`Kind`] (for validation and docs) and how it is read.
pub trait OptionValue: Sized {
    fn kind() -> Kind;
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError>;
}

macro_rules! option_value {
    ($t:ty, $kind:expr, $read:expr) => {
        impl OptionValue for $t {
            fn kind() -> Kind {
                $kind
            }
            fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
                $read(config, key)
            }
        }
    };
}

option_value!(String, Kind::String, ComponentConfig::string);
option_value!(bool, Kind::Bool, ComponentConfig::bool);
option_value!(i64, Kind::Integer, ComponentConfig::i64);
option_value!(usize, Kind::Integer, ComponentConfig::usize);
option_value!(f64, Kind::Number, ComponentConfig::f64);
option_value!(Vec<String>, Kind::StringList, ComponentConfig::string_list);
option_value!(
    Vec<(String, String)>,
    Kind::StringMap,
    ComponentConfig::string_map
);
option_value!(
    Map<String, Value>,
    Kind::Object,
    |c: &ComponentConfig, k: &str| c.object(k).map(|m| m.cloned())
);
option_value!(Value, Kind::Any, |c: &ComponentConfig, k: &str| Ok(c
    .get(k)
    .cloned()));
option_value!(
    Vec<Map<String, Value>>,
    Kind::ObjectList,
    |c: &ComponentConfig, k: &str| match c.get(k) {
        None => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                Value::Object(m) => Ok(m.clone()),
                _ => Err(c.error(k, "must be a list of objects")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(c.error(k, "must be a list of objects")),
    }
);
option_value!(std::time::Duration, Kind::Any, ComponentConfig::duration);
option_value!(
    Strings,
    Kind::StringOrList,
    |c: &ComponentConfig, k: &str| c.strings(k).map(|v| v.map(Strings))
);

impl OptionValue for crate::document::UpdateMode {
    fn kind() -> Kind {
        Kind::OneOf(&["overwrite", "append", "skip"])
    }
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.string(key)? {
            None => Ok(None),
            Some(text) => crate::document::UpdateMode::parse(&text)
                .map(Some)
                .ok_or_else(|| {
                    config.error(
                        key,
                        format!("must be one of overwrite, append, skip, found {text:?}"),
                    )
                }),
        }
    }
}

/// A value whose problem is kept with it instead of failing the block's read, so a component
/// reports it together with its checks across keys (which need to know the key was given):
/// every problem of a block at once.
#[derive(Debug, Clone)]
pub struct Checked<T>(pub Result<T, ConfigError>);

impl<T: OptionValue> OptionValue for Checked<T> {
    fn kind() -> Kind {
        T::kind()
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        Ok(match T::read(config, key) {
            Ok(v) => v.map(|v| Checked(Ok(v))),
            Err(e) => Some(Checked(Err(e))),
        })
    }
}

impl<T> Checked<T> {
    /// Its problem, if it has one.
    pub fn problem(&self) -> Option<&ConfigError> {
        self.0.as_ref().err()
    }

    /// The value, or `None` with its problem pushed onto `errors`.
    pub fn value(self, errors: &mut Vec<ConfigError>) -> Option<T> {
        self.0.map_err(|e| errors.push(e)).ok()
    }
}

/// A key that takes a string or a list of strings (Lucille accepts either for field lists):
/// the values as a list. Derefs to `Vec<String>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Strings(pub Vec<String>);

impl std::ops::Deref for Strings {
    type Target = Vec<String>;
    fn deref(&self) -> &Vec<String> {
        &self.0
    }
}

impl From<Strings> for Vec<String> {
    fn from(s: Strings) -> Vec<String> {
        s.0
    }
}

/// Reads `key` (or its older name `alias`), pushing a problem onto `errors`; a key that already
/// has a problem there (from the spec's check) is not read again.
pub fn read<T: OptionValue>(
    config: &ComponentConfig,
    key: &str,
    alias: Option<&str>,
    errors: &mut Vec<ConfigError>,
) -> Option<T> {
    let key = match alias {
        Some(old) if !config.has(key) && config.has(old) => old,
        _ => key,
    };
    let path = config.key_path(key);
    if errors.iter().any(|e| e.path == path) {
        return None;
    }
    T::read(config, key).unwrap_or_else(|e| {
        errors.push(e);
        None
    })
}

/// Keeps a choice in its listed spelling (choices are case-insensitive); a value that is none
/// of them is a problem.
pub fn one_of(
    config: &ComponentConfig,
    key: &str,
    value: &mut String,
    choices: &[&str],
    errors: &mut Vec<ConfigError>,
) {
    match choices.iter().find(|c| c.eq_ignore_ascii_case(value)) {
        Some(c) => *value = (*c).to_string(),
        None => errors.push(config.error(
            key,
            format!("must be one of {}, found {value:?}", choices.join(", ")),
        )),
    }
}

/// A number an option's range applies to.
pub trait Bounded {
    fn as_f64(&self) -> f64;
}

impl Bounded for i64 {
    fn as_f64(&self) -> f64 {
        *self as f64
    }
}

impl Bounded for usize {
    fn as_f64(&self) -> f64 {
        *self as f64
    }
}

impl Bounded for f64 {
    fn as_f64(&self) -> f64 {
        *self
    }
}

/// Checks `value` against an option's `min` / `max`.
pub fn in_range<T: Bounded>(
    config: &ComponentConfig,
    key: &str,
    value: &T,
    range: Option<(Option<f64>, Option<f64>)>,
    errors: &mut Vec<ConfigError>,
) {
    let Some((min, max)) = range else { return };
    let v = value.as_f64();
    let bound = |b: f64| {
        if b.fract() == 0.0 {
            format!("{}", b as i64)
        } else {
            b.to_string()
        }
    };
    match (min, max) {
        (Some(lo), Some(hi)) if v < lo || v > hi => errors.push(config.error(
            key,
            format!("must be between {} and {}", bound(lo), bound(hi)),
        )),
        (Some(lo), _) if v < lo && lo == 0.0 => {
            errors.push(config.error(key, "must not be negative"))
        }
        (Some(lo), _) if v < lo => {
            errors.push(config.error(key, format!("must be at least {}", bound(lo))))
        }
        (_, Some(hi)) if v > hi => {
            errors.push(config.error(key, format!("must be at most {}", bound(hi))))
        }
        _ => {}
    }
}

/// A component's documentation as `lucille doc` prints it: its summary, then one line per key
/// (name, kind, required or its default, range, description).
pub fn describe(name: &str, spec: &Spec) -> String {
    let mut out = format!("{name}\n");
    if !spec.summary_text().is_empty() {
        out.push_str(&format!("  {}\n", spec.summary_text()));
    }
    out.push('\n');
    for p in spec.properties() {
        let mut line = format!("  {} ({})", p.name, p.kind.describe());
        if p.required {
            line.push_str(", required");
        } else if !p.default.is_empty() {
            line.push_str(&format!(", default {}", p.default));
        }
        if let Some((lo, hi)) = p.range {
            match (lo, hi) {
                (Some(lo), Some(hi)) => line.push_str(&format!(", {lo} to {hi}")),
                (Some(lo), None) => line.push_str(&format!(", at least {lo}")),
                (None, Some(hi)) => line.push_str(&format!(", at most {hi}")),
                (None, None) => {}
            }
        }
        if !p.description.is_empty() {
            line.push_str(&format!(": {}", p.description));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::config::{ComponentConfig, Kind, Options, Spec};

    /// A test component: every kind of option.
    #[derive(Options, Debug)]
    #[options(base = Spec::stage())]
    struct Sample {
        /// The field read.
        source: String,
        /// How a written field is updated.
        #[option(default = "overwrite", one_of = ["overwrite", "append", "skip"])]
        update_mode: String,
        /// Documents per batch.
        #[option(default = 100, min = 1, max = 1000)]
        batch_size: i64,
        /// Fields left alone.
        #[option(alias = "ignore")]
        ignore_fields: Option<Vec<String>>,
        /// Whether to shout.
        #[option(default)]
        loud: bool,
        /// A key with Lucille's own spelling.
        #[option(key = "URL")]
        url: Option<String>,
    }

    fn config(v: serde_json::Value) -> ComponentConfig {
        let serde_json::Value::Object(m) = v else {
            panic!("not an object")
        };
        ComponentConfig::new(m, "pipelines[0].stages[0]")
    }

    #[test]
    fn typed_values_defaults_choices_and_aliases() {
        let o = Sample::from_config(&config(json!({"class": "Sample", "source": "a",
            "updateMode": "APPEND", "ignore": ["x"], "URL": "http://h"})))
        .unwrap();
        assert_eq!(o.source, "a");
        assert_eq!(o.update_mode, "append", "kept in the listed spelling");
        assert_eq!(o.batch_size, 100);
        assert_eq!(o.ignore_fields, Some(vec!["x".to_string()]));
        assert!(!o.loud);
        assert_eq!(o.url.as_deref(), Some("http://h"));
    }

    #[test]
    fn every_problem_at_once_with_key_paths_and_suggestions() {
        let errors = Sample::from_config(&config(json!({"class": "Sample", "updateMod": "x",
            "loud": "very"})))
        .unwrap_err();
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let all = text.join("\n");
        for part in [
            "pipelines[0].stages[0].updateMod: unknown key \"updateMod\" (did you mean \"updateMode\"?)",
            "pipelines[0].stages[0].source: missing required key \"source\"",
            "pipelines[0].stages[0].loud: must be a boolean",
        ] {
            assert!(all.contains(part), "{part} missing in:\n{all}");
        }
        assert_eq!(text.len(), 3, "{all}");
        let errors = Sample::from_config(&config(
            json!({"class": "Sample", "source": "a", "batchSize": 0, "updateMode": "sideways"}),
        ))
        .unwrap_err();
        let all: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            all,
            vec![
                "pipelines[0].stages[0].updateMode: must be one of overwrite, append, skip, found a string (\"sideways\")",
                "pipelines[0].stages[0].batchSize: must be between 1 and 1000",
            ]
        );
    }

    #[test]
    fn the_spec_and_its_documentation_come_from_the_type() {
        let spec = Sample::spec();
        let names: Vec<&str> = spec.properties().iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "name",
                "class",
                "enabled",
                "conditions",
                "conditionPolicy",
                "source",
                "updateMode",
                "batchSize",
                "ignoreFields",
                "loud",
                "URL"
            ]
        );
        let mode = &spec.properties()[6];
        assert_eq!(mode.kind, Kind::OneOf(&["overwrite", "append", "skip"]));
        assert!(!mode.required);
        let doc = super::describe("Sample", &spec);
        assert!(
            doc.starts_with("Sample\n  A test component: every kind of option.\n"),
            "{doc}"
        );
        assert!(
            doc.contains("  source (a string), required: The field read.\n"),
            "{doc}"
        );
        assert!(
            doc.contains(
                "  batchSize (an integer), default 100, 1 to 1000: Documents per batch.\n"
            ),
            "{doc}"
        );
    }
}
