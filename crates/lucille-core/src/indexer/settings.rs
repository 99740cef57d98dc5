//! The `indexer { ... }` block and the backend it names: the generic keys (batching, id and
//! index overrides, field filters, deletion markers, retries and timeouts), declared once in
//! `IndexerOptions` and read into [`IndexerSettings`]; the [`IndexerDescriptor`] each
//! backend's file registers (its block's options, a pure check and a build that read the block
//! the same way); and the lookups by `indexer.type` / `indexer.class` that check and build the
//! configured backend. A Python indexer is one more registered backend, `python`, checked and
//! built through the [`PYTHON`] hook.

use std::time::Duration;

use serde_json::Value;

use super::backend::Backend;
use super::version_type::VersionType;
use super::{watchdog, DEFAULT_BATCH_SIZE, DEFAULT_BATCH_TIMEOUT_MS};
use crate::config::{
    as_string, ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options, Spec,
};
use crate::document::{
    fields_with_capacity, is_reserved, Document, Fields, CHILDREN_FIELD, ID_FIELD,
};
use crate::op::IndexOp;
use crate::registry;
use crate::retry::{RetryOptions, RetryPolicy};

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
    pub version_type: Option<VersionType>,
    pub version_field: Option<String>,
    /// `maxRetries`, `retryWaitDurationMs`, ...: how HTTP backends retry a failed request.
    pub retry: RetryPolicy,
    /// `indexerConnectionTimeout` (ms): HTTP backends' connect timeout.
    pub connection_timeout: Option<Duration>,
    /// `indexerRequestTimeout` (ms, a Lucille-rs key): HTTP backends' limit on one attempt
    /// (a server that never answers); default: the HTTP client's.
    pub request_timeout: Option<Duration>,
}

/// How processed documents reach the backend: which backend, batching, id and index
/// overrides, field filters, deletion markers, retries and timeouts. The backend's own keys sit
/// in its block (`opensearch { }`, `jsonl { }`...); a Python indexer's sit in this one.
#[derive(Options)]
struct IndexerOptions {
    /// The backend by its name (nop, the default; jsonl, csv, tantivy, opensearch, solr...);
    /// its keys go in the block of that name (`lucille doc NAME` lists them).
    #[option(key = "type")]
    kind: Option<String>,
    /// Lucille's indexer class (com.kmwllc.lucille.indexer.SolrIndexer...), or a Python
    /// indexer as "module:Class", "file.py:Class" or PythonIndexer; wins over type.
    class: Option<String>,
    /// The most documents in a batch (default 100; with batchByteSize alone, no limit).
    #[option(min = 1)]
    batch_size: Option<usize>,
    /// A batch is also sent before the JSON size of its documents would pass this many bytes.
    #[option(min = 1)]
    batch_byte_size: Option<usize>,
    /// Log the documents indexed so far and the rate every this many documents.
    #[option(min = 1)]
    log_rate: Option<usize>,
    /// Milliseconds a partial batch waits for more documents before it is sent.
    #[option(default = 100, min = 0)]
    batch_timeout: i64,
    /// The document field whose value is the index id (instead of the document's id).
    id_override_field: Option<String>,
    /// The document field naming the index (collection, class) the document goes to.
    index_override_field: Option<String>,
    /// The document field holding the backend's routing key.
    routing_field: Option<String>,
    /// External versioning: external or external_gte (the version is in versionField).
    version_type: Option<VersionTypeValue>,
    /// The document field holding its external version (with versionType).
    version_field: Option<String>,
    /// Only these fields are sent.
    whitelist: Option<Vec<String>>,
    /// These fields are not sent.
    #[option(alias = "ignoreFields")]
    blacklist: Option<Vec<String>>,
    /// The field that marks a document for deletion (with deletionMarkerFieldValue).
    deletion_marker_field: Option<String>,
    /// The value of deletionMarkerField that marks a deletion.
    deletion_marker_field_value: Option<String>,
    /// The document field holding the name of the field a marked document deletes by (a
    /// delete by field, not by id; with deleteByFieldValue).
    delete_by_field_field: Option<String>,
    /// The document field holding the value a marked document deletes by.
    delete_by_field_value: Option<String>,
    /// Lucille's retry keys, for the HTTP backends.
    #[option(flatten)]
    retry: RetryOptions,
    /// false: documents are not sent to the backend (they still finish), as in Lucille.
    #[option(default = true)]
    send_enabled: bool,
    /// HTTP backends' connect timeout, in milliseconds (default 10000).
    indexer_connection_timeout: Option<PositiveMillis>,
    /// HTTP backends' limit on one attempt, in milliseconds (default 120000).
    indexer_request_timeout: Option<PositiveMillis>,
    /// Milliseconds the indexer may make no progress while work waits before the run calls it
    /// wedged (default 600000; 0 or less: never).
    inactivity_timeout: Option<i64>,
}

// `batchTimeout`'s default as documented is the indexer's.
const _: () = assert!(DEFAULT_BATCH_TIMEOUT_MS == 100);

/// A positive number of milliseconds (a timeout): any other number is an error naming its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PositiveMillis(pub Duration);

impl OptionValue for PositiveMillis {
    fn kind() -> Kind {
        Kind::Integer
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        match config.i64(key)? {
            None => Ok(None),
            Some(ms) if ms > 0 => Ok(Some(PositiveMillis(Duration::from_millis(ms as u64)))),
            Some(_) => Err(config.error(key, "must be a positive number of milliseconds")),
        }
    }
}

/// `versionType`: `external` / `external_gte`, or the Java client's `External` / `ExternalGte`.
struct VersionTypeValue(VersionType);

impl OptionValue for VersionTypeValue {
    fn kind() -> Kind {
        Kind::String
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(s) = config.string(key)? else {
            return Ok(None);
        };
        match s.to_ascii_lowercase().replace('_', "").as_str() {
            "external" => Ok(Some(VersionTypeValue(VersionType::External))),
            "externalgte" => Ok(Some(VersionTypeValue(VersionType::ExternalGte))),
            _ => Err(config.error(
                key,
                format!("must be external or external_gte, found {s:?}"),
            )),
        }
    }
}

/// The generic `indexer` block's keys (`lucille doc indexer`).
pub fn indexer_spec() -> Spec {
    IndexerOptions::spec()
}

/// `indexer.class` names a Python indexer: `module:Class`, `file.py:Class` or `PythonIndexer`.
fn is_python_class(class: &str) -> bool {
    registry::is_python_reference(class) || class == PYTHON_SCRIPT_INDEXER
}

impl IndexerSettings {
    /// Reads and checks the `indexer` block (`path` is `indexer`). Every error at once.
    pub fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        // Which keys are this block's depends on the class it names: a Python indexer's own
        // keys sit beside the generic ones.
        let python = config
            .get("class")
            .and_then(as_string)
            .is_some_and(|c| is_python_class(&c));
        let spec = if python {
            IndexerOptions::spec().open()
        } else {
            IndexerOptions::spec()
        };
        let mut errors = spec.validate(config.map(), config.path());
        let o = match IndexerOptions::read(config, &mut errors) {
            Some(o) if errors.is_empty() => o,
            _ => return Err(errors),
        };
        // As in Lucille, indexer.class wins over indexer.type when both are given.
        let (kind, class) = match (o.kind, o.class) {
            (kind, Some(class)) => {
                if let Some(t) = kind.filter(|t| !t.eq_ignore_ascii_case(&class)) {
                    tracing::debug!("indexer.type {t:?} is not used: indexer.class {class:?} wins, as in Lucille");
                }
                if is_python_class(&class) {
                    (PYTHON_KIND.to_string(), Some(class))
                } else if let Some(kind) = lucille_indexer_type(&class) {
                    (kind.to_string(), None)
                } else {
                    let known = registry::all::<IndexerDescriptor>()
                        .into_iter()
                        .flat_map(|d| d.aliases.iter().filter(|a| a.contains('.')))
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ");
                    let message = format!("unknown indexer class {class:?}; use one of Lucille's ({known}), indexer.type, or a Python indexer as \"module:Class\" or \"file.py:Class\"");
                    errors.push(config.error("class", message));
                    ("nop".to_string(), None)
                }
            }
            // A type is kept as given when unknown: checking the backend reports it.
            (Some(t), None) => (lucille_indexer_type(&t).map_or(t, str::to_string), None),
            (None, None) => ("nop".into(), None),
        };
        let pairs = [
            (
                "deletionMarkerField",
                &o.deletion_marker_field,
                "deletionMarkerFieldValue",
                &o.deletion_marker_field_value,
            ),
            (
                "deleteByFieldField",
                &o.delete_by_field_field,
                "deleteByFieldValue",
                &o.delete_by_field_value,
            ),
        ];
        for (a, va, b, vb) in pairs {
            if va.is_some() != vb.is_some() {
                errors.push(config.error(a, format!("{a:?} and {b:?} must be set together")));
            }
        }
        if o.delete_by_field_field.is_some() && o.deletion_marker_field.is_none() {
            errors.push(config.error("deleteByFieldField", "delete by field needs deletionMarkerField / deletionMarkerFieldValue to mark deletions"));
        }
        if o.version_field.is_some() != o.version_type.is_some() {
            errors.push(config.error(
                "versionField",
                "indexer.versionType and indexer.versionField must be set together",
            ));
        }
        let mut retry = o.retry.policy(config, "indexer.maxRetries", 0, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        let batch_byte_size = o.batch_byte_size.map(|n| n as u64);
        let batch_size = match o.batch_size {
            Some(n) => n,
            // As Lucille: a byte limit alone leaves the count unlimited.
            None if batch_byte_size.is_some() => usize::MAX,
            None => DEFAULT_BATCH_SIZE,
        };
        let kind = kind.to_ascii_lowercase();
        retry.counter = Some(crate::metrics::RetryCounter(
            crate::metrics::global().indexer_retries(&kind),
        ));
        let inactivity_timeout = match o.inactivity_timeout {
            None => Some(watchdog::DEFAULT_INACTIVITY_TIMEOUT),
            Some(ms) if ms <= 0 => None,
            Some(ms) => Some(Duration::from_millis(ms.unsigned_abs())),
        };
        Ok(IndexerSettings {
            kind,
            class,
            batch_size,
            batch_byte_size,
            log_rate: o.log_rate.map(|n| n as u64),
            batch_timeout: Duration::from_millis(o.batch_timeout.unsigned_abs()),
            id_override_field: o.id_override_field,
            index_override_field: o.index_override_field,
            whitelist: o.whitelist,
            blacklist: o.blacklist,
            deletion_marker_field: o.deletion_marker_field,
            deletion_marker_field_value: o.deletion_marker_field_value,
            delete_by_field_field: o.delete_by_field_field,
            delete_by_field_value: o.delete_by_field_value,
            send_enabled: o.send_enabled,
            inactivity_timeout,
            routing_field: o.routing_field,
            version_type: o.version_type.map(|v| v.0),
            version_field: o.version_field,
            retry,
            connection_timeout: o.indexer_connection_timeout.map(|t| t.0),
            request_timeout: o.indexer_request_timeout.map(|t| t.0),
        })
    }

    fn is_deletion(&self, doc: &Document) -> bool {
        match (
            &self.deletion_marker_field,
            &self.deletion_marker_field_value,
        ) {
            (Some(f), Some(v)) => doc.is_marked(f, v),
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
        let children = match fields.get_mut(CHILDREN_FIELD) {
            Some(Value::Array(items)) => self.children_of(std::mem::take(items)).into(),
            _ => crate::op::Children::default(),
        };
        fields.retain(|k, _| !is_reserved(k) && self.keeps_field(k));
        IndexOp::Upsert {
            id,
            index,
            fields,
            children,
            routing,
            version,
        }
    }

    /// Attached children (a `___children` list) as backends get them: each child's `id`
    /// first (always, as an op always has its id: a backend that stores ids in documents drops
    /// it when [`Self::keeps_field`]`("id")` says no, as it does the document's), its other
    /// fields through the whitelist / blacklist as Lucille filters a child, then its own
    /// children, the same way, as `___children`. Other reserved fields
    /// (`run_id`, flags) are left out, as they are of the document. `idOverrideField` and
    /// `indexOverrideField` are not applied to children (Lucille's indexers do not either).
    fn children_of(&self, items: Vec<Value>) -> Vec<Fields> {
        items
            .into_iter()
            .filter_map(|child| match child {
                Value::Object(map) => Some(self.child_fields(map)),
                _ => None,
            })
            .collect()
    }

    fn child_fields(&self, map: serde_json::Map<String, Value>) -> Fields {
        let mut out = fields_with_capacity(map.len());
        let mut grandchildren = Vec::new();
        for (k, v) in map {
            if k == CHILDREN_FIELD {
                if let Value::Array(items) = v {
                    grandchildren = self.children_of(items);
                }
            } else if k == ID_FIELD || (!is_reserved(&k) && self.keeps_field(&k)) {
                out.insert(k, v);
            }
        }
        if let Some(at) = out.get_index_of(ID_FIELD) {
            out.move_index(at, 0);
        }
        if !grandchildren.is_empty() {
            let list = grandchildren
                .into_iter()
                .map(|g| Value::Object(g.into_iter().collect()))
                .collect();
            out.insert(CHILDREN_FIELD.to_string(), Value::Array(list));
        }
        out
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

/// An indexer backend: its `indexer.type`, Lucille's class names for it, its block's options,
/// and how to check and build it. Each backend's file submits its descriptor to the
/// [registry](crate::registry).
pub struct IndexerDescriptor {
    /// The `indexer.type`.
    pub name: &'static str,
    /// Lucille's full class names for it (`indexer.class`); the last segment alone resolves
    /// too. Other spellings of the type (`none`).
    pub aliases: &'static [&'static str],
    /// The keys of its block, as its options type declares them (`lucille doc`).
    pub spec: fn() -> Spec,
    /// Reads and checks its block with the generic settings, opening nothing (no connection,
    /// no file, no lock).
    pub check: CheckBackend,
    /// Reads its block the same way and builds the backend.
    pub build: BuildBackend,
}

/// What checking a backend's block gives besides its errors.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BackendCheck {
    /// A warning about the block, logged once per run (a TLS check turned off).
    pub warning: Option<String>,
    /// What the backend writes on this machine (an index folder, a file), if anything: the
    /// change store of `skipUnchanged` is kept beside it.
    pub output: Option<BackendOutput>,
}

/// A backend's local output (see [`BackendCheck::output`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendOutput {
    pub path: std::path::PathBuf,
    /// True when a run replaces it (a file without `append`): documents a run skips would be
    /// missing from it.
    pub replaced: bool,
}

pub type CheckBackend =
    fn(&IndexerSettings, &ComponentConfig) -> Result<BackendCheck, ConfigErrors>;

/// Builds a backend; [`Opening`] says whether a file backend starts its output afresh.
pub type BuildBackend =
    fn(&IndexerSettings, &ComponentConfig, Opening) -> Result<Box<dyn Backend>, ConfigErrors>;

/// How a backend that writes a file (jsonl, csv) opens it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opening {
    /// The run's first connector: the file is replaced unless the block says `append: true`.
    Fresh,
    /// A later connector of the same run: it appends to what the first wrote.
    Continuing,
    /// A long-running indexer process: every run it serves, and every restart of it, appends
    /// (a replacement for a killed indexer keeps what that one wrote) unless `append: false`.
    Serving,
}

impl Opening {
    /// Whether the file is appended to, given the block's `append` key.
    pub fn appends(self, append: Option<bool>) -> bool {
        match self {
            Opening::Fresh => append.unwrap_or(false),
            Opening::Continuing => true,
            Opening::Serving => append.unwrap_or(true),
        }
    }
}

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

/// The `indexer.type` a Lucille indexer class (or a type) stands for.
pub fn lucille_indexer_type(class: &str) -> Option<&'static str> {
    registry::find::<IndexerDescriptor>(class).map(|d| d.name)
}

/// The backends of this build, for messages: `nop, jsonl, ...; or indexer.class for a
/// Python indexer`.
fn available() -> String {
    let names: Vec<&str> = registry::names::<IndexerDescriptor>()
        .into_iter()
        .filter(|n| *n != PYTHON_KIND)
        .collect();
    format!(
        "{}; or indexer.class for a Python indexer",
        names.join(", ")
    )
}

/// The `indexer.type` of a Python indexer (`indexer.class` names its class).
pub const PYTHON_KIND: &str = "python";

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

inventory::submit!(IndexerDescriptor {
    name: PYTHON_KIND,
    aliases: &[],
    spec: python_spec,
    check: |settings, config| {
        let (factory, class) = python_factory(settings, config)?;
        factory.check(class, config)?;
        Ok(BackendCheck::default())
    },
    build: |settings, config, _| {
        let (factory, class) = python_factory(settings, config)?;
        Ok(factory.build(class, config)?)
    },
});

/// A Python indexer's block is the `indexer` block: the generic keys, and its own.
fn python_spec() -> Spec {
    Spec::new()
        .summary("A Python indexer (a lucille.Indexer subclass), named by indexer.class as \"module:Class\" or \"file.py:Class\", or PythonIndexer with script / scriptPath / className; it takes its own keys from the indexer block.")
        .open()
}

/// The Python indexer factory and the class `indexer.class` names (`config` is the `indexer`
/// block).
fn python_factory<'a>(
    settings: &'a IndexerSettings,
    config: &ComponentConfig,
) -> Result<(&'static dyn PythonIndexerFactory, &'a str), ConfigError> {
    let class = settings.class.as_deref().ok_or_else(|| {
        ConfigError::new(
            "indexer.class",
            "a Python indexer is named by indexer.class (\"module:Class\", \"file.py:Class\" or PythonIndexer), not by indexer.type",
        )
    })?;
    Ok((PYTHON.get(config)?, class))
}

/// Checks the backend block (`jsonl { }`; for a Python indexer, the `indexer` block itself)
/// without opening anything.
pub fn validate_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
) -> Result<BackendCheck, Vec<ConfigError>> {
    let d = backend_descriptor(&settings.kind).map_err(|e| vec![e])?;
    (d.check)(settings, backend_config).map_err(|e| e.0)
}

/// Builds the backend named by `indexer.type`; `backend_config` is its own block (`jsonl { }`;
/// for a Python indexer, the `indexer` block itself).
/// `opening` says whether a file backend replaces or appends to its output.
pub fn build_backend(
    settings: &IndexerSettings,
    backend_config: &ComponentConfig,
    opening: Opening,
) -> Result<Box<dyn Backend>, Vec<ConfigError>> {
    let d = backend_descriptor(&settings.kind).map_err(|e| vec![e])?;
    (d.build)(settings, backend_config, opening).map_err(|e| e.0)
}

/// The warning the configured backend logs once per run about its block, if any: what its
/// check read.
pub fn backend_warning(settings: &IndexerSettings, backend: &ComponentConfig) -> Option<String> {
    let d = backend_descriptor(&settings.kind).ok()?;
    (d.check)(settings, backend).ok()?.warning
}

/// The registered backend of an `indexer.type`.
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
