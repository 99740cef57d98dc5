//! A config as a client gives it (HOCON text, or a path the server reads), loaded and
//! validated as `lucille validate` does it, with every error's key path and suggestion.

use std::path::{Path, PathBuf};

use lucille_core::config::{ConfigError, ConfigErrors};
use lucille_core::runner;
use serde_json::{json, Value};

/// Where a config comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// HOCON text; includes and relative paths resolve against the service's working folder.
    Text(String),
    /// A file the service reads (each time a schedule fires, so edits apply).
    Path(PathBuf),
}

impl Source {
    /// As the store keeps it: a kind and a text.
    pub fn to_stored(&self) -> (&'static str, String) {
        match self {
            Source::Text(t) => ("text", t.clone()),
            Source::Path(p) => ("path", p.to_string_lossy().into_owned()),
        }
    }

    pub fn from_stored(kind: &str, source: String) -> Source {
        match kind {
            "path" => Source::Path(PathBuf::from(source)),
            _ => Source::Text(source),
        }
    }

    /// A name for a run of it when none is given: the file's name, else "run".
    pub fn default_name(&self) -> String {
        match self {
            Source::Path(p) => p
                .file_stem()
                .map_or_else(|| "run".into(), |s| s.to_string_lossy().into_owned()),
            Source::Text(_) => "run".into(),
        }
    }
}

/// A config error as the API returns it.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    pub path: String,
    pub message: String,
    pub suggestion: Option<String>,
}

impl Problem {
    pub fn new(path: &str, message: impl Into<String>) -> Problem {
        Problem {
            path: path.into(),
            message: message.into(),
            suggestion: None,
        }
    }

    /// A config error, its did-you-mean split off as the suggestion.
    fn from_error(e: &ConfigError) -> Problem {
        const MARK: &str = " (did you mean ";
        let (message, suggestion) = match e.message.rfind(MARK) {
            Some(i) if e.message.ends_with("?)") => (
                e.message[..i].to_string(),
                Some(format!(
                    "did you mean {}?",
                    &e.message[i + MARK.len()..e.message.len() - 2]
                )),
            ),
            _ => (e.message.clone(), None),
        };
        Problem {
            path: e.path.clone(),
            message,
            suggestion,
        }
    }

    /// With the config's secrets hidden.
    pub fn to_json(&self, secrets: &[String]) -> Value {
        let hide = |s: &str| lucille_core::config::scrub(s, secrets);
        json!({
            "path": self.path,
            "message": hide(&self.message),
            "suggestion": self.suggestion.as_deref().map(hide),
        })
    }
}

pub fn problems(errors: &ConfigErrors) -> Vec<Problem> {
    errors.0.iter().map(Problem::from_error).collect()
}

/// A loaded config and the folder its relative inputs resolve against.
pub struct Loaded {
    pub config: Value,
    pub base_dir: Option<PathBuf>,
    /// Its secret values, kept out of every response.
    pub secrets: Vec<String>,
}

/// Reads a config (overrides from `CONFIG_FORCE_*` as `lucille run` applies them).
pub fn load(source: &Source) -> Result<Loaded, Vec<Problem>> {
    let overrides = runner::env_overrides(std::env::vars_os());
    let (config, base_dir) = match source {
        Source::Text(text) => runner::parse_config_text(text, None, &overrides)
            .map(|v| (v, None))
            .map_err(|e| problems(&e))?,
        Source::Path(path) => {
            if !path.is_file() {
                return Err(vec![Problem::new(
                    "configPath",
                    format!(
                        "no config file at {} (as the service sees it)",
                        path.display()
                    ),
                )]);
            }
            runner::load_config(path, &overrides).map_err(|e| problems(&e))?
        }
    };
    let secrets = lucille_core::config::secrets(&config);
    Ok(Loaded {
        config,
        base_dir,
        secrets,
    })
}

/// Every problem of a loaded config, as `lucille validate` lists them (nothing is started).
pub fn validate(loaded: &Loaded) -> Result<runner::RunPlan, Vec<Problem>> {
    let plan =
        runner::plan(&loaded.config, loaded.base_dir.as_deref()).map_err(|e| problems(&e))?;
    if plan.transport.is_some() {
        // The service runs `local` and `test` runs; the Kafka block would be ignored.
        return Err(vec![Problem::new(
            "kafka",
            "the service runs configs in local or test mode; a kafka block is for \
             `lucille run --mode distributed` and the worker / indexer processes",
        )]);
    }
    Ok(plan)
}

/// A path given by a client, made absolute against the service's working folder.
pub fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_did_you_mean_becomes_the_suggestion() {
        let e = ConfigError::new(
            "pipelines[0].stages[1].fieldMaping",
            "unknown key \"fieldMaping\" (did you mean \"fieldMapping\"?)",
        );
        let p = Problem::from_error(&e);
        assert_eq!(p.message, "unknown key \"fieldMaping\"");
        assert_eq!(
            p.suggestion.as_deref(),
            Some("did you mean \"fieldMapping\"?")
        );
        let plain = Problem::from_error(&ConfigError::new("a", "must be a number"));
        assert_eq!(
            (plain.message.as_str(), plain.suggestion),
            ("must be a number", None)
        );
    }
}
