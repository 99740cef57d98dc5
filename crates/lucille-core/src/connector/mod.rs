//! Connectors: read a source and publish documents. The runner drives the lifecycle:
//! `pre_execute(run_id)`, `execute(publisher)`, `post_execute(run_id)` only after `execute`
//! succeeded, and `close()` always.
//!
//! Common keys: `name`, `class`, `pipeline`, `docIdPrefix`, `collapse`. Each built-in
//! connector lives in its own file and exposes a `DESCRIPTOR`.

pub mod dead_letter;
pub mod sequence;
pub mod sleep;

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::accounting::{PublishError, Publisher};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Options, Spec};
use crate::registry;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConnectorError(pub String);

impl ConnectorError {
    pub fn new(message: impl Into<String>) -> Self {
        ConnectorError(message.into())
    }
}

impl From<PublishError> for ConnectorError {
    fn from(e: PublishError) -> Self {
        ConnectorError(e.to_string())
    }
}

pub trait Connector: Send {
    fn pre_execute(&mut self, _run_id: &str) -> Result<(), ConnectorError> {
        Ok(())
    }

    /// Reads the source and publishes every document.
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError>;

    fn post_execute(&mut self, _run_id: &str) -> Result<(), ConnectorError> {
        Ok(())
    }

    fn close(&mut self) -> Result<(), ConnectorError> {
        Ok(())
    }
}

/// The keys every connector accepts.
pub fn connector_spec() -> Spec {
    Spec::new()
        .required("name", Kind::String)
        .doc("the connector's name in logs and the run summary")
        .required("class", Kind::String)
        .doc("the connector: a built-in name, Lucille's class name, or a Python class as module:Class")
        .optional("pipeline", Kind::String)
        .doc("the pipeline its documents go through (none: straight to the indexer)")
        .optional("docIdPrefix", Kind::String)
        .doc("put before every document id it publishes")
        .optional("collapse", Kind::Bool)
        .doc("merge consecutive documents with the same id into one (Lucille's collapse)")
        .optional("skipUnchanged", Kind::Any)
        .doc("true: a record unchanged since the last run that indexed it (with the same pipeline and indexer config) is not processed; \"output\": every record is processed and the backend is sent only what changed")
        .optional("skipUnchangedPath", Kind::String)
        .doc("the skipUnchanged store (default: beside the index or output file)")
}

pub type BuildConnector = fn(&ComponentConfig, &Common) -> Result<Box<dyn Connector>, ConfigErrors>;

/// A connector: its Lucille class name, its other names, spec and constructor. Each
/// connector's file submits its descriptor to the [registry](crate::registry).
pub struct ConnectorDescriptor {
    pub name: &'static str,
    /// Lucille's class names outside `com.kmwllc.lucille.connector.` (a subpackage, a plugin).
    pub aliases: &'static [&'static str],
    pub spec: fn() -> Spec,
    pub build: BuildConnector,
}

inventory::collect!(ConnectorDescriptor);

impl crate::registry::Descriptor for ConnectorDescriptor {
    const PACKAGES: &'static [&'static str] = &[LUCILLE_CONNECTOR_PACKAGE];

    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }
}

/// The keys every connector has, as the runner reads them (validation of the block as a whole
/// is the connector's own options type's, whose base is [`connector_spec`]).
#[derive(Options)]
#[options(base = connector_spec())]
struct CommonOptions {
    /// The connector's name in logs and the run summary.
    name: Option<String>,
    /// The pipeline its documents go through (none: straight to the indexer).
    pipeline: Option<String>,
    /// Put before every document id it publishes.
    doc_id_prefix: Option<String>,
    /// Merge consecutive documents with the same id into one (Lucille's collapse).
    #[option(default)]
    collapse: bool,
    /// A record larger than this many bytes FAILs with its position instead of being read
    /// whole.
    #[option(min = 1)]
    max_document_bytes: Option<usize>,
    /// true: a record unchanged since the last run that indexed it is not processed;
    /// "output": the backend is sent only what changed.
    skip_unchanged: Option<crate::unchanged::SkipMode>,
    /// The skipUnchanged store (default: beside the index or output file).
    skip_unchanged_path: Option<String>,
}

/// The common keys, read.
#[derive(Debug, Clone, Default)]
pub struct Common {
    pub name: String,
    pub pipeline: Option<String>,
    pub doc_id_prefix: Option<String>,
    pub collapse: bool,
    /// `maxDocumentBytes`: a record larger than this FAILs with its position instead of being
    /// read whole (the connectors that read records enforce it).
    pub max_document_bytes: Option<u64>,
    /// `skipUnchanged` (`None`: off).
    pub skip_unchanged: Option<crate::unchanged::SkipMode>,
    /// `skipUnchangedPath`, resolved.
    pub skip_unchanged_path: Option<std::path::PathBuf>,
}

impl Common {
    pub fn doc_id(&self, id: &str) -> String {
        crate::document::ids::with_prefix(self.doc_id_prefix.as_deref(), id)
    }

    /// For a connector whose driver hands it whole records (database rows, feed items): the
    /// size of `doc` as JSON when it is over `maxDocumentBytes`, else `None`.
    pub fn oversize(&self, doc: &crate::document::Document) -> Option<u64> {
        let max = self.max_document_bytes?;
        let n = doc.byte_size();
        (n > max).then_some(n)
    }
}

/// The end of the pipeline name a connector without a pipeline runs under (its documents go
/// straight to the indexer): in logs, metrics and the dead-letter file.
pub const NO_PIPELINE_SUFFIX: &str = "_no_pipeline";

/// The pipeline name of `connector` when it has none: `{connector}_no_pipeline`.
pub fn no_pipeline_name(connector: &str) -> String {
    format!("{connector}{NO_PIPELINE_SUFFIX}")
}

pub const LUCILLE_CONNECTOR_PACKAGE: &str = "com.kmwllc.lucille.connector.";

/// `class: "PythonConnector"`: a Python connector class defined by inline code (`script`) or
/// a file (`scriptPath`), chosen by `className` when the code defines several.
pub const PYTHON_SCRIPT_CONNECTOR: &str = "PythonConnector";

/// Builds Python connectors (`module:Class`, or `PythonConnector` with its script); installed
/// by the Python bindings.
pub trait PythonConnectorFactory: Send + Sync {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError>;
    fn build(
        &self,
        class: &str,
        config: &ComponentConfig,
        common: &Common,
    ) -> Result<Box<dyn Connector>, ConfigError>;
}

/// Python connector classes, installed by the Python bindings.
pub static PYTHON: registry::PythonHook<dyn PythonConnectorFactory> =
    registry::PythonHook::new("Python connectors");

#[derive(Clone)]
enum Class {
    Builtin(&'static ConnectorDescriptor),
    Python(String),
}

/// A validated connector config; `instantiate` makes the connector for a run.
#[derive(Clone)]
pub struct ConnectorPlan {
    pub common: Common,
    /// `skipUnchanged`, resolved by the run's plan (its store and config hash).
    pub skip: Option<crate::unchanged::SkipSettings>,
    class: Class,
    config: ComponentConfig,
}

impl ConnectorPlan {
    pub fn from_config(
        mut map: Map<String, Value>,
        path: &str,
        paths: &std::sync::Arc<crate::config::PathContext>,
    ) -> Result<Self, Vec<ConfigError>> {
        let base = ComponentConfig::new(map.clone(), path).with_paths(paths.clone());
        let class_name = base.require_string("class").map_err(|e| vec![e])?;
        let mut errors = Vec::new();
        let class = if registry::is_python_reference(&class_name)
            || class_name == PYTHON_SCRIPT_CONNECTOR
        {
            if let Err(e) = PYTHON.get(&base).and_then(|f| f.check(&class_name, &base)) {
                errors.push(e);
            }
            Class::Python(class_name)
        } else {
            match registry::find::<ConnectorDescriptor>(&class_name) {
                Some(d) => {
                    // Older key names become current ones; the keys themselves are checked by
                    // the connector's options type when it is built below.
                    (d.spec)().normalize(&mut map);
                    Class::Builtin(d)
                }
                None => {
                    let known = registry::names::<ConnectorDescriptor>().join(", ");
                    let hint = registry::suggest::<ConnectorDescriptor>(&class_name)
                        .map(|n| format!(" (did you mean {n:?}?)"))
                        .unwrap_or_default();
                    return Err(vec![base.error(
                        "class",
                        format!("unknown connector class {class_name:?}{hint}; built-in connectors: {known}, or a Python class as \"module:Class\" or PythonConnector with a script"),
                    )]);
                }
            }
        };
        let config = ComponentConfig::new(map, path).with_paths(paths.clone());
        // The keys every connector has, which the runner uses (a built-in connector's options
        // declare them through `connector_spec`, for its key check and `lucille doc`).
        let mut common_errors = Vec::new();
        let common = CommonOptions::read(&config, &mut common_errors)
            .map(|o| Common {
                name: o.name.unwrap_or_default(),
                pipeline: o.pipeline,
                doc_id_prefix: o.doc_id_prefix,
                collapse: o.collapse,
                max_document_bytes: o.max_document_bytes.map(|n| n as u64),
                skip_unchanged: o.skip_unchanged,
                skip_unchanged_path: o
                    .skip_unchanged_path
                    .map(|p| config.resolve_output_path(&p)),
            })
            .unwrap_or_default();
        let plan = ConnectorPlan {
            common,
            skip: None,
            class,
            config,
        };
        if let Class::Builtin(_) = plan.class {
            if let Err(e) = plan.instantiate() {
                errors.extend(e.0);
            }
        }
        // A built-in's options type checks the kinds of these keys too: a key it already
        // reported is not reported again.
        for e in common_errors {
            if !errors.iter().any(|x| x.path == e.path) {
                errors.push(e);
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(plan)
    }

    pub fn instantiate(&self) -> Result<Box<dyn Connector>, ConfigErrors> {
        match &self.class {
            Class::Builtin(d) => (d.build)(&self.config, &self.common),
            Class::Python(class) => PYTHON
                .get(&self.config)?
                .build(class, &self.config, &self.common)
                .map_err(ConfigErrors::from),
        }
    }
}
