//! The `indexer { ... }` block and the backend it names: the generic keys (batching, id and
//! index overrides, field filters, deletion markers, retries and timeouts) read once into
//! [`IndexerSettings`]; the [`IndexerDescriptor`] each backend's file registers; and the
//! lookups by `indexer.type` / `indexer.class` (Python indexers included) that check and
//! build the configured backend.

use super::backend::Backend;
use super::{version_type, watchdog, DEFAULT_BATCH_SIZE, DEFAULT_BATCH_TIMEOUT_MS};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::{is_reserved, Document};
use crate::op::IndexOp;
use crate::registry;
use crate::retry::RetryPolicy;
use serde_json::Value;
use std::time::Duration;

/// The generic `indexer { ... }` keys.
#[derive(Debug, Clone, Default)]
pub struct IndexerSettings {
    /// `indexer.type`, lowercased; `"python"` when `indexer.class` names a Python indexer.
    pub kind: String,
    /// `indexer.class`: a Python indexer as `module:Class` (its config is the indexer block).
    pub class: Option<String>,
    pub batch_size: usize,
    /// `batchByteSize`: a batch is also sent before the JSON size of its documents would pass
    /// this many bytes (Lucille's SingleBatch); with it and no `batchSize`, only bytes count.
    pub batch_byte_size: Option<u64>,
    /// `logRate`: log the documents indexed so far and the rate every this many documents.
    pub log_rate: Option<u64>,
    pub batch_timeout: Duration,
    pub id_override_field: Option<String>,
    pub index_override_field: Option<String>,
    pub whitelist: Option<Vec<String>>,
    pub blacklist: Option<Vec<String>>,
    pub deletion_marker_field: Option<String>,
    pub deletion_marker_field_value: Option<String>,
    pub delete_by_field_field: Option<String>,
    pub delete_by_field_value: Option<String>,
    /// `sendEnabled: false` skips the backend (documents still FINISH), as Lucille.
    pub send_enabled: bool,
    /// `inactivityTimeout` (ms): how long the indexer may make no progress while work waits
    /// before the run calls it wedged (see `watchdog`); `None` disables.
    pub inactivity_timeout: Option<Duration>,
    /// `routingField`: the document field holding the backend's routing key.
    pub routing_field: Option<String>,
    /// `versionType` (external versioning) and `versionField` (where the version is).
    pub version_type: Option<version_type::VersionType>,
    pub version_field: Option<String>,
    /// `maxRetries`, `retryWaitDurationMs`, ...: how HTTP backends retry a failed request.
    pub retry: RetryPolicy,
    /// `indexerConnectionTimeout` (ms): HTTP backends' connect timeout.
    pub connection_timeout: Option<Duration>,
    /// `indexerRequestTimeout` (ms, a Lucille-rs key): HTTP backends' limit on one attempt
    /// (a server that never answers); default: the HTTP client's.
    pub request_timeout: Option<Duration>,
}

pub fn indexer_spec() -> Spec {
    Spec::new()
        .optional("type", Kind::String)
        .optional("class", Kind::String)
        .optional("batchSize", Kind::Integer)
        .optional("batchByteSize", Kind::Integer)
        .optional("logRate", Kind::Integer)
        .optional("batchTimeout", Kind::Integer)
        .optional("idOverrideField", Kind::String)
        .optional("indexOverrideField", Kind::String)
        .optional("routingField", Kind::String)
        .optional("versionType", Kind::String)
        .optional("versionField", Kind::String)
        .optional("whitelist", Kind::StringList)
        .optional("blacklist", Kind::StringList)
        .optional("ignoreFields", Kind::StringList)
        .optional("deletionMarkerField", Kind::String)
        .optional("deletionMarkerFieldValue", Kind::String)
        .optional("deleteByFieldField", Kind::String)
        .optional("deleteByFieldValue", Kind::String)
        .optional("maxRetries", Kind::Integer)
        .optional("retryWaitDurationMs", Kind::Integer)
        .optional("retryMaxWaitDurationMs", Kind::Integer)
        .optional("retryRandomizationFactor", Kind::Number)
        .optional("retryableStatusCodes", Kind::List)
        .optional("sendEnabled", Kind::Bool)
        .optional("indexerConnectionTimeout", Kind::Integer)
        .optional("indexerRequestTimeout", Kind::Integer)
        .optional("inactivityTimeout", Kind::Integer)
        .alias("ignoreFields", "blacklist")
}

impl IndexerSettings {
    /// Reads and checks the `indexer` block (`path` is `indexer`). Every error at once.
    pub fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let mut map = config.map().clone();
        // A Python indexer takes its own keys from the indexer block.
        let python_class = map
            .get("class")
            .and_then(crate::config::as_string)
            .is_some_and(|c| registry::is_python_reference(&c) || c == PYTHON_SCRIPT_INDEXER);
        let spec = if python_class {
            indexer_spec().open()
        } else {
            indexer_spec()
        };
        spec.normalize(&mut map);
        let mut errors = spec.validate(&map, config.path());
        let c = ComponentConfig::new(map, config.path());
        let mut take = |r: Result<Option<String>, ConfigError>| match r {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let class = take(c.string("class"));
        let type_ = take(c.string("type"));
        let id_override_field = take(c.string("idOverrideField"));
        let index_override_field = take(c.string("indexOverrideField"));
        let deletion_marker_field = take(c.string("deletionMarkerField"));
        let deletion_marker_field_value = take(c.string("deletionMarkerFieldValue"));
        let delete_by_field_field = take(c.string("deleteByFieldField"));
        let delete_by_field_value = take(c.string("deleteByFieldValue"));
        let routing_field = take(c.string("routingField"));
        let version_field = take(c.string("versionField"));
        // As in Lucille, indexer.class wins over indexer.type when both are given.
        let (kind, class) = match (type_, class) {
            (type_, Some(class)) => {
                if let Some(t) = type_.filter(|t| !t.eq_ignore_ascii_case(&class)) {
                    tracing::debug!("indexer.type {t:?} is not used: indexer.class {class:?} wins, as in Lucille");
                }
                if let Some(kind) = lucille_indexer_type(&class) {
                    (kind.to_string(), None)
                } else if registry::is_python_reference(&class) || class == PYTHON_SCRIPT_INDEXER {
                    ("python".to_string(), Some(class))
                } else {
                    let known = registry::all::<IndexerDescriptor>()
                        .into_iter()
                        .flat_map(|d| d.aliases.iter().filter(|a| a.contains('.')))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ");
                    let message = format!("unknown indexer class {class:?}; use one of Lucille's ({known}), indexer.type, or a Python indexer as \"module:Class\" or \"file.py:Class\"");
                    errors.push(c.error("class", message));
                    ("nop".to_string(), None)
                }
            }
            // A type is kept as given when unknown: validation reports it.
            (Some(t), None) => (lucille_indexer_type(&t).map_or(t, str::to_string), None),
            (None, None) => ("nop".into(), None),
        };
        let pairs = [
            (
                "deletionMarkerField",
                &deletion_marker_field,
                "deletionMarkerFieldValue",
                &deletion_marker_field_value,
            ),
            (
                "deleteByFieldField",
                &delete_by_field_field,
                "deleteByFieldValue",
                &delete_by_field_value,
            ),
        ];
        for (a, va, b, vb) in pairs {
            if va.is_some() != vb.is_some() {
                errors.push(c.error(a, format!("{a:?} and {b:?} must be set together")));
            }
        }
        if delete_by_field_field.is_some() && deletion_marker_field.is_none() {
            errors.push(c.error("deleteByFieldField", "delete by field needs deletionMarkerField / deletionMarkerFieldValue to mark deletions"));
        }
        let mut positive = |key: &str| match c.usize(key) {
            Ok(Some(0)) => {
                errors.push(c.error(key, "must be at least 1"));
                None
            }
            Ok(v) => v.map(|n| n as u64),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let batch_byte_size = positive("batchByteSize");
        let log_rate = positive("logRate");
        let batch_size = match c.usize("batchSize") {
            Ok(Some(0)) => {
                errors.push(c.error("batchSize", "must be at least 1"));
                DEFAULT_BATCH_SIZE
            }
            // As Lucille: a byte limit alone leaves the count unlimited.
            Ok(None) if batch_byte_size.is_some() => usize::MAX,
            Ok(v) => v.unwrap_or(DEFAULT_BATCH_SIZE),
            Err(e) => {
                errors.push(e);
                DEFAULT_BATCH_SIZE
            }
        };
        let batch_timeout = match c.usize("batchTimeout") {
            Ok(v) => Duration::from_millis(v.map_or(DEFAULT_BATCH_TIMEOUT_MS, |v| v as u64)),
            Err(e) => {
                errors.push(e);
                Duration::from_millis(DEFAULT_BATCH_TIMEOUT_MS)
            }
        };
        let mut list = |key: &str| match c.string_list(key) {
            Ok(v) => v,
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let whitelist = list("whitelist");
        let blacklist = list("blacklist");
        let send_enabled = match c.bool_or("sendEnabled", true) {
            Ok(b) => b,
            Err(e) => {
                errors.push(e);
                true
            }
        };
        let inactivity_timeout = match c.i64("inactivityTimeout") {
            Ok(None) => Some(watchdog::DEFAULT_INACTIVITY_TIMEOUT),
            Ok(Some(ms)) if ms <= 0 => None,
            Ok(Some(ms)) => Some(Duration::from_millis(ms as u64)),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let version_type = version_type::VersionType::from_config(&c, &mut errors);
        if version_field.is_some() != version_type.is_some() {
            errors.push(c.error(
                "versionField",
                "indexer.versionType and indexer.versionField must be set together",
            ));
        }
        let retry = RetryPolicy::from_config(&c, &mut errors);
        let mut millis = |key: &str| match c.i64(key) {
            Ok(Some(ms)) if ms <= 0 => {
                errors.push(c.error(key, "must be a positive number of milliseconds"));
                None
            }
            Ok(v) => v.map(|ms| Duration::from_millis(ms as u64)),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let connection_timeout = millis("indexerConnectionTimeout");
        let request_timeout = millis("indexerRequestTimeout");
        if !errors.is_empty() {
            // A key the spec found of the wrong type is reported again by its typed read: once.
            let mut seen = std::collections::HashSet::new();
            errors.retain(|e| seen.insert(e.path.clone()));
            return Err(errors);
        }
        Ok(IndexerSettings {
            routing_field,
            version_type,
            version_field,
            retry,
            connection_timeout,
            request_timeout,
            inactivity_timeout,
            kind: kind.to_ascii_lowercase(),
            class,
            batch_size,
            batch_byte_size,
            log_rate,
            batch_timeout,
            id_override_field,
            index_override_field,
            whitelist,
            blacklist,
            deletion_marker_field,
            deletion_marker_field_value,
            delete_by_field_field,
            delete_by_field_value,
            send_enabled,
        })
    }

    fn is_deletion(&self, doc: &Document) -> bool {
        match (
            &self.deletion_marker_field,
            &self.deletion_marker_field_value,
        ) {
            (Some(f), Some(v)) => {
                doc.has_non_null(f)
                    && doc.get_string(f).ok().flatten().as_deref() == Some(v.as_str())
            }
            _ => false,
        }
    }

    fn override_value(&self, doc: &Document, field: &Option<String>) -> Option<String> {
        field
            .as_deref()
            .and_then(|f| doc.get_string(f).ok().flatten())
            .filter(|s| !s.is_empty())
    }

    /// The operation for one processed document (its fields copied; see [`Self::op_into`]).
    pub fn op_for(&self, doc: &Document) -> IndexOp {
        self.op_into(doc.clone())
    }

    /// The operation for one processed document, its fields moved out of it: reserved fields
    /// and those the whitelist / blacklist exclude are removed in place, so nothing is copied.
    pub fn op_into(&self, doc: Document) -> IndexOp {
        let index = self.override_value(&doc, &self.index_override_field);
        let routing = self.override_value(&doc, &self.routing_field);
        let version = self.override_value(&doc, &self.version_field);
        let id_override = self.override_value(&doc, &self.id_override_field);
        if self.is_deletion(&doc) {
            if let (Some(ff), Some(fv)) = (&self.delete_by_field_field, &self.delete_by_field_value)
            {
                if let (Some(field), Some(value)) = (
                    doc.get_string(ff).ok().flatten(),
                    doc.get_string(fv).ok().flatten(),
                ) {
                    return IndexOp::DeleteByField {
                        field,
                        value,
                        index,
                    };
                }
            }
            return IndexOp::DeleteById {
                id: id_override.unwrap_or_else(|| doc.id().to_string()),
                index,
                routing,
                version,
            };
        }
        let mut fields = doc.into_map();
        // One pass: the id is taken out of its entry, then `retain` drops it with the other
        // reserved and filtered fields (removing it by key would shift every later entry).
        let id = match (id_override, fields.get_mut(crate::document::ID_FIELD)) {
            (Some(id), _) => id,
            (None, Some(Value::String(id))) => std::mem::take(id),
            // Every document has a string id.
            (None, _) => String::new(),
        };
        fields.retain(|k, _| !is_reserved(k) && self.keeps_field(k));
        IndexOp::Upsert {
            id,
            index,
            fields,
            routing,
            version,
        }
    }

    /// Whether the whitelist / blacklist let `field` through (backends that copy the index id
    /// into the stored document ask this for `id`, as Lucille does).
    pub fn keeps_field(&self, field: &str) -> bool {
        self.whitelist
            .as_ref()
            .is_none_or(|w| w.iter().any(|x| x == field))
            && !self
                .blacklist
                .as_ref()
                .is_some_and(|b| b.iter().any(|x| x == field))
    }
}

/// An indexer backend: its `indexer.type`, Lucille's class names for it, how to check its
/// block without opening anything, and how to build it. Each backend's file submits its
/// descriptor to the [registry](crate::registry).
pub struct IndexerDescriptor {
    /// The `indexer.type`.
    pub name: &'static str,
    /// Lucille's full class names for it (`indexer.class`); the last segment alone resolves
    /// too. Other spellings of the type (`none`).
    pub aliases: &'static [&'static str],
    pub validate: fn(&IndexerSettings, &ComponentConfig) -> Vec<ConfigError>,
    /// `continuing` is set for the second and later connectors of a run (file backends
    /// append to what the first wrote).
    pub build: BuildBackend,
    /// A warning about the block to log once per run (a TLS check turned off), if any.
    pub warning: Option<fn(&IndexerSettings, &ComponentConfig) -> Option<String>>,
}

pub type BuildBackend =
    fn(&IndexerSettings, &ComponentConfig, bool) -> Result<Box<dyn Backend>, Vec<ConfigError>>;

inventory::collect!(IndexerDescriptor);

impl registry::Descriptor for IndexerDescriptor {
    const PACKAGES: &'static [&'static str] = &[];

    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }
}

/// Boxes a backend built by its `from_config`, for an [`IndexerDescriptor`]'s `build`.
pub fn boxed<B: Backend + 'static>(
    built: Result<B, Vec<ConfigError>>,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    built.map(|b| Box::new(b) as Box<dyn Backend>)
}

/// The `indexer.type` a Lucille indexer class (or a type) stands for.
pub fn lucille_indexer_type(class: &str) -> Option<&'static str> {
    registry::find::<IndexerDescriptor>(class).map(|d| d.name)
}

/// The backends of this build, for messages: `nop, jsonl, ...; or indexer.class for a
/// Python indexer`.
fn available() -> String {
    format!(
        "{}; or indexer.class for a Python indexer",
        registry::names::<IndexerDescriptor>().join(", ")
    )
}

/// `indexer.class: "PythonIndexer"`: a Python indexer class defined by inline code (`script`)
/// or a file (`scriptPath`), chosen by `className` when the code defines several.
pub const PYTHON_SCRIPT_INDEXER: &str = "PythonIndexer";

/// Builds Python indexers (`indexer.class: "module:Class"`, or `PythonIndexer` with its
/// script); installed by the Python bindings.
pub trait PythonIndexerFactory: Send + Sync {
    fn check(&self, class: &str, config: &ComponentConfig) -> Result<(), ConfigError>;
    fn build(&self, class: &str, config: &ComponentConfig)
        -> Result<Box<dyn Backend>, ConfigError>;
}

/// Python indexer classes, installed by the Python bindings.
pub static PYTHON: registry::PythonHook<dyn PythonIndexerFactory> =
    registry::PythonHook::new("Python indexers");

fn python_factory(
    settings: &IndexerSettings,
    config: &ComponentConfig,
) -> Result<(&'static dyn PythonIndexerFactory, String), ConfigError> {
    let factory = PYTHON.get(config)?;
    Ok((factory, settings.class.clone().unwrap_or_default()))
}

/// Checks the backend block (`jsonl { }`) without opening anything.
pub fn validate_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
) -> Result<(), Vec<ConfigError>> {
    let errors = if settings.kind == "python" {
        match python_factory(settings, backend_config)
            .and_then(|(f, class)| f.check(&class, backend_config))
        {
            Ok(()) => Vec::new(),
            Err(e) => vec![e],
        }
    } else {
        match backend_descriptor(&settings.kind) {
            Ok(d) => (d.validate)(settings, backend_config),
            Err(e) => vec![e],
        }
    };
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// Builds the backend named by `indexer.type`; `backend_config` is its own block (`jsonl { }`;
/// for a Python indexer, the `indexer` block itself).
/// `continuing` is set for the second and later connectors of a run, so file backends append
/// to what the first connector wrote instead of truncating it.
pub fn build_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
    continuing: bool,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    validate_backend(settings, backend_config)?;
    if settings.kind == "python" {
        return python_factory(settings, backend_config)
            .and_then(|(f, class)| f.build(&class, backend_config))
            .map_err(|e| vec![e]);
    }
    let d = backend_descriptor(&settings.kind).map_err(|e| vec![e])?;
    (d.build)(settings, backend_config, continuing)
}

/// The registered backend of an `indexer.type`.
/// The warning the configured backend logs once per run about its block, if any.
pub fn backend_warning(settings: &IndexerSettings, backend: &ComponentConfig) -> Option<String> {
    let warn = backend_descriptor(&settings.kind).ok()?.warning?;
    warn(settings, backend)
}

fn backend_descriptor(kind: &str) -> Result<&'static IndexerDescriptor, ConfigError> {
    registry::find::<IndexerDescriptor>(kind).ok_or_else(|| {
        let hint = registry::suggest::<IndexerDescriptor>(kind)
            .map(|n| format!(" (did you mean {n:?}?)"))
            .unwrap_or_default();
        ConfigError::new(
            "indexer.type",
            format!(
                "unknown indexer type {kind:?}{hint}; available here: {}",
                available()
            ),
        )
    })
}
