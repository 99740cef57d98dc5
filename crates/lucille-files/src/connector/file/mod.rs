//! FileConnector: walks `paths` (files, folders recursively, globs), filters them by
//! `includes` / `excludes` regexes on the full path and by `modifiedCutoff`, and publishes
//! either one document per file (`file_path`, `file_name`, `file_size_bytes`,
//! `file_modification_date`, `file_creation_date`, `file_content`; id = md5 hex of the full
//! path) or, for extensions with a configured `fileHandlers` entry, the records the handler
//! streams out of the file (CSV rows, JSON lines, XML elements).
//!
//! `readerThreads` threads take files from the sorted list, so one huge file does not hold up
//! the others; each file is read by one thread, so its records keep their order. A record that
//! cannot become a document (a short CSV row, a bad JSON line, malformed XML) is published as
//! a FAIL with file and position (`Publisher::publish_failed`) and the rest goes on.
//!
//! `checkpoint { path }` makes the traversal resumable and `incremental` / `emitDeletes` detect
//! changes (see `resume`). Lucille's `state { }` block, `filterOptions.lastPublishedCutoff`,
//! `publishMode` and `sendTombstones` are the same checkpoint under Lucille's keys (`state`).
//!
//! Files live on local disk or in object stores (`s3://bucket/prefix`, `gs://bucket/prefix`,
//! `https://ACCOUNT.blob.core.windows.net/container/prefix` in `paths`, configured by Lucille's
//! `s3 { }`, `gcp { }` and `azure { }` blocks): traversal, filters, handlers, checkpoints and
//! moves are written once here against `storage::Storage`.
//!
//! Lucille's nested forms are accepted as aliases: `pathToStorage`,
//! `filterOptions { includes, excludes, modificationCutoff }` and `fileOptions { getFileContent,
//! handleArchivedFiles, handleCompressedFiles, moveToAfterProcessing, moveToErrorFolder }`.
//! Differences from Lucille: `.gz` / `.zip` are read by default (Lucille needs
//! `handleCompressedFiles` / `handleArchivedFiles`), and regexes must match the whole path as
//! Lucille's do.

mod compressed;
mod csv;
pub mod documents;
mod json;
mod resume;
mod state;

mod xml;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base64::Engine;
use parking_lot::Mutex;
use regex::Regex;
use serde_json::{Map, Value};

use super::{connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::{PublishError, Publisher};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Spec};
use crate::document::ids::{md5_hex, with_prefix};
use crate::document::Document;
use crate::record::Record;
use crate::storage;
pub use crate::storage::FileMetadata;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "FileConnector",
    aliases: &[],
    spec,
    build,
};
inventory::submit!(DESCRIPTOR);

pub const FILE_PATH: &str = "file_path";
pub const FILE_NAME: &str = "file_name";
pub const SIZE: &str = "file_size_bytes";
pub const MODIFIED: &str = "file_modification_date";
pub const CREATED: &str = "file_creation_date";
pub const CONTENT: &str = "file_content";

/// Separates an archive's path from an entry's name in `file_path`, as Lucille does.
pub const ARCHIVE_SEPARATOR: &str = "!";

const DEFAULT_READER_THREADS: usize = 2;

fn spec() -> Spec {
    connector_spec()
        .optional("maxDocumentBytes", Kind::Integer)
        .required("paths", Kind::StringOrList)
        .alias("pathToStorage", "paths")
        .optional("includes", Kind::StringList)
        .optional("excludes", Kind::StringList)
        .optional("modifiedCutoff", Kind::Any)
        .alias("modificationCutoff", "modifiedCutoff")
        .optional("filterOptions", Kind::Object)
        .optional("fileOptions", Kind::Object)
        .optional("getFileContent", Kind::Bool)
        .optional("contentFormat", Kind::OneOf(&["auto", "text", "base64"]))
        .optional("handleArchivedFiles", Kind::Bool)
        .optional("handleCompressedFiles", Kind::Bool)
        .optional("moveToAfterProcessing", Kind::String)
        .optional("moveToErrorFolder", Kind::String)
        .optional("fileHandlers", Kind::Object)
        .optional("readerThreads", Kind::Integer)
        .optional("checkpoint", Kind::Object)
        .optional("incremental", Kind::Bool)
        .optional("emitDeletes", Kind::Bool)
        .optional("deletionMarkerField", Kind::String)
        .optional("deletionMarkerFieldValue", Kind::String)
        .optional("s3", Kind::Object)
        .optional("gcp", Kind::Object)
        .optional("azure", Kind::Object)
        .optional("state", Kind::Object)
}

fn filter_options_spec() -> Spec {
    Spec::new()
        .optional("includes", Kind::StringList)
        .optional("excludes", Kind::StringList)
        .optional("lastPublishedCutoff", Kind::Any)
        .optional("publishMode", Kind::String)
        .optional("sendTombstones", Kind::Bool)
        .optional("modificationCutoff", Kind::Any)
        .alias("lastModifiedCutoff", "modificationCutoff")
        .alias("modifiedCutoff", "modificationCutoff")
}

fn file_options_spec() -> Spec {
    Spec::new()
        .optional("getFileContent", Kind::Bool)
        .optional("contentFormat", Kind::OneOf(&["auto", "text", "base64"]))
        .optional("handleArchivedFiles", Kind::Bool)
        .optional("handleCompressedFiles", Kind::Bool)
        .optional("moveToAfterProcessing", Kind::String)
        .optional("moveToErrorFolder", Kind::String)
}

/// How `file_content` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentFormat {
    /// Text when the bytes are UTF-8, else base64.
    Auto,
    /// Always text; invalid UTF-8 is replaced (U+FFFD).
    Text,
    Base64,
}

/// The file (or archive entry) a handler reads.
#[derive(Debug, Clone)]
pub struct FileSource {
    /// Full path, `archive.zip!entry` for an archive entry; `file_path` and ids derive from it.
    pub path: String,
    /// The file name the handler and extension were chosen by (the inner name for `.gz`).
    pub name: String,
    /// The connector's `maxDocumentBytes`: a larger record FAILs at its position.
    pub max_bytes: Option<u64>,
}

impl FileSource {
    /// The id of a record that could not become a document: path and position, so it is unique
    /// and says where to look.
    pub fn failure_id(&self, prefix: &str, position: &str) -> String {
        format!("{prefix}{}:{position}", self.path)
    }
}

/// Where a handler sends what it read.
pub trait RecordSink {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError>;
    /// A record a worker builds into its document (see `record`); by default it is
    /// built here and published, or failed with its reason.
    fn publish_record(&mut self, record: Record) -> Result<(), PublishError> {
        match record.build() {
            Ok(doc) => self.publish(doc),
            Err(e) => self.fail(e.id, e.reason),
        }
    }
    /// A record that could not become a document; `reason` names the file and position.
    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError>;
}

#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// The run is stopping: the connector ends.
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// The rest of the file cannot be read (malformed XML, an I/O error): reported as a FAIL
    /// with this id and reason; what was published before it stays published.
    #[error("{reason}")]
    File { id: String, reason: String },
}

/// A file handler: its `fileHandlers` key (the extension it reads) and how to build it from
/// its block; `prefix` is the connector's `docIdPrefix`. Each handler's file submits its
/// descriptor to the [registry](crate::registry). (`documents`, the handler for every other
/// extension, is the FileConnector's own.)
pub struct FileHandlerDescriptor {
    pub name: &'static str,
    /// Other keys it serves (`jsonl` for `json`), and Lucille's handler class
    /// (`com.kmwllc.lucille.core.fileHandler.CSVFileHandler`), which the ApplyFileHandlers
    /// stage's blocks may name.
    pub aliases: &'static [&'static str],
    pub build: BuildFileHandler,
}

pub type BuildFileHandler =
    fn(&ComponentConfig, &str) -> Result<Arc<dyn FileHandler>, Vec<ConfigError>>;

inventory::collect!(FileHandlerDescriptor);

impl crate::registry::Descriptor for FileHandlerDescriptor {
    const PACKAGES: &'static [&'static str] = &[];

    fn name(&self) -> &'static str {
        self.name
    }

    fn aliases(&self) -> &'static [&'static str] {
        self.aliases
    }
}

/// Turns a stream into documents, one record at a time (never the whole file in memory).
pub trait FileHandler: Send + Sync {
    fn process(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError>;
}

/// Reads one line (up to and including `\n`) into `buf`, without the line ending; false at EOF.
pub(crate) fn read_line(input: &mut dyn BufRead, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    if input.read_until(b'\n', buf)? == 0 {
        return Ok(false);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    }
    Ok(true)
}

/// What [`read_line_max`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Line {
    Eof,
    Read,
    /// The line was longer than the limit: it was skipped to its end, never held whole.
    TooLong,
}

/// [`read_line`] with a limit on the line's length (without its line ending): a longer line
/// is not buffered past the limit but skipped to the next newline.
pub(crate) fn read_line_max(
    input: &mut dyn BufRead,
    buf: &mut Vec<u8>,
    max: Option<u64>,
) -> std::io::Result<Line> {
    let Some(max) = max else {
        return Ok(if read_line(input, buf)? {
            Line::Read
        } else {
            Line::Eof
        });
    };
    // One byte of slack for a `\r` before the `\n`.
    let cap = usize::try_from(max).unwrap_or(usize::MAX).saturating_add(1);
    buf.clear();
    let mut any = false;
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            if !any {
                return Ok(Line::Eof);
            }
            break;
        }
        any = true;
        let (part, newline) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        if buf.len() + part.len() > cap {
            let used = part.len() + usize::from(newline);
            input.consume(used);
            if !newline {
                skip_line(input)?;
            }
            buf.clear();
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(part);
        let used = part.len() + usize::from(newline);
        input.consume(used);
        if newline {
            break;
        }
    }
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    if buf.len() as u64 > max {
        buf.clear();
        return Ok(Line::TooLong);
    }
    Ok(Line::Read)
}

/// Consumes input up to and including the next newline (or to the end).
fn skip_line(input: &mut dyn BufRead) -> std::io::Result<()> {
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => {
                input.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                input.consume(n);
            }
        }
    }
}

/// ISO-8601 in UTC, as Lucille's `Instant.toString()`.
pub(crate) fn iso_time(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

struct Settings {
    roots: Vec<storage::Root>,
    /// Every storage of the roots, local disk last: who owns a checkpointed `file_path`.
    storages: Vec<Arc<dyn storage::Storage>>,
    includes: Vec<Regex>,
    excludes: Vec<Regex>,
    modified_cutoff: Option<Duration>,
    get_file_content: bool,
    content_format: ContentFormat,
    handle_archives: bool,
    handle_compressed: bool,
    /// A local folder or an object-store URL (of the roots' one bucket / container).
    move_after: Option<String>,
    move_on_error: Option<String>,
    reader_threads: usize,
    resume: Option<resume::ResumeSettings>,
}

pub struct FileConnector {
    common: Common,
    settings: Settings,
    /// Handlers by lower-case extension.
    handlers: HashMap<String, Arc<dyn FileHandler>>,
    /// One handler for every file whatever its extension (Lucille's CSVConnector,
    /// JSONConnector, XMLConnector: `connector::legacy`).
    every_file: Option<Arc<dyn FileHandler>>,
    /// `fileHandlers { documents {…} }`: text extraction for files no other handler takes.
    documents: Option<Arc<documents::DocumentsHandler>>,
    /// The checkpoint of the current `execute`, finished in `post_execute`.
    run: Option<resume::ResumeRun>,
}

/// A file to read: where its records start (`skip`) and its checkpoint unit.
struct Job {
    entry: storage::Entry,
    unit: Option<resume::UnitId>,
    skip: u64,
}

/// The value of a config read, or `None` with its error collected.
pub(crate) fn take<T>(
    errors: &mut Vec<ConfigError>,
    r: Result<Option<T>, ConfigError>,
) -> Option<T> {
    match r {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            None
        }
    }
}

/// Collects errors so one bad key does not hide the next.
struct Errors(Vec<ConfigError>);

impl Errors {
    fn take<T>(&mut self, r: Result<T, ConfigError>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.push(e);
                None
            }
        }
    }
}

/// A key that may be given flat or inside Lucille's nested block, but not both.
fn flat_or_nested<'a>(
    config: &'a ComponentConfig,
    nested: Option<&'a ComponentConfig>,
    flat_key: &str,
    nested_key: &str,
    errors: &mut Errors,
) -> Option<&'a ComponentConfig> {
    let in_nested = nested.filter(|n| n.has(nested_key));
    match (config.has(flat_key), in_nested) {
        (true, Some(n)) => {
            errors.0.push(n.error(
                nested_key,
                format!("is also given as {flat_key:?} at the top level; give only one"),
            ));
            Some(config)
        }
        (true, None) => Some(config),
        (false, Some(n)) => Some(n),
        (false, None) => None,
    }
}

fn compile_all(config: &ComponentConfig, key: &str, errors: &mut Errors) -> Vec<Regex> {
    let patterns = errors
        .take(config.string_list(key))
        .flatten()
        .unwrap_or_default();
    patterns
        .iter()
        .filter_map(|p| {
            // Lucille's patterns match the whole path (Java's Matcher.matches()).
            let anchored = format!("^(?:{p})$");
            errors.take(
                Regex::new(&anchored)
                    .map_err(|e| config.error(key, format!("invalid regex {p:?}: {e}"))),
            )
        })
        .collect()
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    Ok(Box::new(FileConnector::from_config(config, common)?))
}

impl FileConnector {
    pub fn from_config(
        config: &ComponentConfig,
        common: &Common,
    ) -> Result<FileConnector, ConfigError> {
        let mut errors = Errors(Vec::new());
        let sub = |key: &str, errors: &mut Errors| -> Option<ComponentConfig> {
            let map = errors.take(config.object(key)).flatten()?.clone();
            Some(ComponentConfig::new(map, config.key_path(key)).with_paths(config.paths().clone()))
        };
        let filter = sub("filterOptions", &mut errors);
        let file_opts = sub("fileOptions", &mut errors);
        if let Some(f) = &filter {
            let mut map = f.map().clone();
            filter_options_spec().normalize(&mut map);
            errors
                .0
                .extend(filter_options_spec().validate(f.map(), f.path()));
        }
        if let Some(f) = &file_opts {
            errors
                .0
                .extend(file_options_spec().validate(f.map(), f.path()));
        }
        // Normalised filterOptions (its aliases renamed).
        let filter = filter.map(|f| {
            let mut map = f.map().clone();
            filter_options_spec().normalize(&mut map);
            ComponentConfig::new(map, f.path().to_string())
        });

        let paths = errors
            .take(config.strings("paths"))
            .flatten()
            .unwrap_or_default();
        if paths.is_empty() {
            errors
                .0
                .push(config.error("paths", "must name at least one file, folder or glob"));
        }
        let roots = storage::roots(config, &paths, &mut errors.0);
        let mut storages: Vec<Arc<dyn storage::Storage>> = Vec::new();
        for r in &roots.roots {
            if !storages.iter().any(|s| Arc::ptr_eq(s, &r.storage)) {
                storages.push(r.storage.clone());
            }
        }
        storages.push(roots.local.clone());

        let from = |flat: &str, nested: &str, errors: &mut Errors| {
            flat_or_nested(config, filter.as_ref(), flat, nested, errors)
                .map(|c| {
                    (
                        c,
                        if std::ptr::eq(c, config) {
                            flat
                        } else {
                            nested
                        },
                    )
                })
                .map(|(c, k)| (c.clone(), k.to_string()))
        };
        let includes = match from("includes", "includes", &mut errors) {
            Some((c, k)) => compile_all(&c, &k, &mut errors),
            None => Vec::new(),
        };
        let excludes = match from("excludes", "excludes", &mut errors) {
            Some((c, k)) => compile_all(&c, &k, &mut errors),
            None => Vec::new(),
        };
        let modified_cutoff = match from("modifiedCutoff", "modificationCutoff", &mut errors) {
            Some((c, k)) => errors.take(c.duration(&k)).flatten(),
            None => None,
        };

        let option = |key: &str, errors: &mut Errors| -> Option<ComponentConfig> {
            flat_or_nested(config, file_opts.as_ref(), key, key, errors).cloned()
        };
        let get_file_content = option("getFileContent", &mut errors)
            .and_then(|c| errors.take(c.bool_or("getFileContent", true)))
            .unwrap_or(true);
        let content_format = match option("contentFormat", &mut errors)
            .and_then(|c| errors.take(c.string("contentFormat")).flatten())
            .as_deref()
        {
            Some("text") => ContentFormat::Text,
            Some("base64") => ContentFormat::Base64,
            _ => ContentFormat::Auto,
        };
        let handle_archives = option("handleArchivedFiles", &mut errors)
            .and_then(|c| errors.take(c.bool_or("handleArchivedFiles", true)))
            .unwrap_or(true);
        let handle_compressed = option("handleCompressedFiles", &mut errors)
            .and_then(|c| errors.take(c.bool_or("handleCompressedFiles", true)))
            .unwrap_or(true);
        let folder = |key: &str, errors: &mut Errors| {
            option(key, errors).and_then(|c| {
                let p = errors.take(c.string(key)).flatten()?;
                match move_target(&c, key, &p, &roots.roots) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        errors.0.push(e);
                        None
                    }
                }
            })
        };
        let move_after = folder("moveToAfterProcessing", &mut errors);
        let move_on_error = folder("moveToErrorFolder", &mut errors);
        let reader_threads = errors
            .take(config.usize("readerThreads"))
            .flatten()
            .unwrap_or(DEFAULT_READER_THREADS);
        if reader_threads == 0 {
            errors
                .0
                .push(config.error("readerThreads", "must be at least 1"));
        }

        let mut documents = None;
        let handlers = match sub("fileHandlers", &mut errors) {
            Some(h) => build_handlers(&h, common, &mut errors, &mut documents),
            None => HashMap::new(),
        };

        let mut resume = sub("checkpoint", &mut errors).and_then(|c| {
            let path = errors.take(c.require_string("path"))?;
            Some(resume::ResumeSettings::at(c.resolve_output_path(&path)))
        });
        // Lucille's `state { }` block: the same checkpoint under Lucille's keys (state.rs).
        if let Some(block) = sub("state", &mut errors) {
            let state = state::read(&block, &common.name, &mut errors.0);
            if resume.is_some() && state.is_some() {
                errors.0.push(config.error(
                    "state",
                    "give checkpoint { path } or Lucille's state { }, not both (they are the same store)",
                ));
            } else if let Some(st) = state {
                resume = Some(resume::ResumeSettings {
                    keep_vanished: st.keep_vanished,
                    namespace: Some(st.namespace),
                    ..resume::ResumeSettings::at(st.path)
                });
            }
        }
        let mut incremental = errors.take(config.bool_or("incremental", false));
        let mut emit_deletes = errors.take(config.bool_or("emitDeletes", false));
        let mut published_cutoff = None;
        if let Some(f) = &filter {
            published_cutoff = errors.take(f.duration("lastPublishedCutoff")).flatten();
            if let Some(on) = state::incremental_mode(f, &mut errors.0) {
                incremental = Some(incremental.unwrap_or(false) || on);
            }
            if let Some(true) = errors.take(f.bool_or("sendTombstones", false)) {
                emit_deletes = Some(true);
            }
            for key in ["lastPublishedCutoff", "publishMode", "sendTombstones"] {
                if f.has(key) && resume.is_none() {
                    errors.0.push(f.error(
                        key,
                        "needs the connector's state { } (Lucille's) or checkpoint { path }",
                    ));
                }
            }
        }
        let marker_field = errors.take(config.string("deletionMarkerField")).flatten();
        let marker_value = errors
            .take(config.string("deletionMarkerFieldValue"))
            .flatten();
        for (key, on) in [("incremental", incremental), ("emitDeletes", emit_deletes)] {
            if on == Some(true) && resume.is_none() && config.has(key) {
                errors
                    .0
                    .push(config.error(key, "needs checkpoint { path: \"state.sqlite\" }"));
            }
        }
        if (config.map().contains_key("checkpoint") || config.map().contains_key("state"))
            && common.collapse
        {
            errors.0.push(config.error(
                if config.map().contains_key("checkpoint") {
                    "checkpoint"
                } else {
                    "state"
                },
                "cannot be combined with collapse (collapsed records share one acknowledgement)",
            ));
        }
        let resume = resume.map(|r| resume::ResumeSettings {
            incremental: incremental.unwrap_or(false),
            emit_deletes: emit_deletes.unwrap_or(false),
            marker_field: marker_field.unwrap_or(r.marker_field.clone()),
            marker_value: marker_value.unwrap_or(r.marker_value.clone()),
            published_cutoff,
            ..r
        });

        match errors.0.len() {
            0 => Ok(FileConnector {
                common: common.clone(),
                settings: Settings {
                    roots: roots.roots,
                    storages,
                    includes,
                    excludes,
                    modified_cutoff,
                    get_file_content,
                    content_format,
                    handle_archives,
                    handle_compressed,
                    move_after,
                    move_on_error,
                    reader_threads,
                    resume,
                },
                handlers,
                every_file: None,
                documents,
                run: None,
            }),
            _ => Err(ConfigError::joined(config.path(), errors.0)),
        }
    }
}

impl FileConnector {
    /// Reads every file with `handler`, whatever its extension.
    pub fn with_handler_for_every_file(mut self, handler: Arc<dyn FileHandler>) -> Self {
        self.every_file = Some(handler);
        self
    }
}

/// The keys a handler block may have in `fileHandlers` (`csv`, `json`, `jsonl`, `xml`): the
/// registered handlers' names and their aliases that are not Lucille class names.
pub fn handler_keys() -> Vec<&'static str> {
    crate::registry::all::<FileHandlerDescriptor>()
        .into_iter()
        .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
        .filter(|key| !key.contains('.'))
        .collect()
}

/// The file handler `kind` (`csv`, `json` / `jsonl`, `xml`) from its config block.
pub fn build_handler(
    kind: &str,
    config: &ComponentConfig,
    prefix: &str,
) -> Result<Arc<dyn FileHandler>, Vec<ConfigError>> {
    match crate::registry::find::<FileHandlerDescriptor>(kind) {
        Some(d) => (d.build)(config, prefix),
        None => Err(vec![ConfigError::new(
            config.path(),
            format!(
                "unknown file handler {kind:?}; known: {}, documents",
                handler_keys().join(", ")
            ),
        )]),
    }
}

/// `fileHandlers { csv {…}, json {…}, jsonl {…}, xml {…} }`; `json` and `jsonl` are one
/// JSON-lines handler, each key's block serving the other extension when that one is absent.
fn build_handlers(
    config: &ComponentConfig,
    common: &Common,
    errors: &mut Errors,
    documents: &mut Option<Arc<documents::DocumentsHandler>>,
) -> HashMap<String, Arc<dyn FileHandler>> {
    let mut out: HashMap<String, Arc<dyn FileHandler>> = HashMap::new();
    for (key, value) in config.map() {
        let path = config.key_path(key);
        let Value::Object(map) = value else {
            errors.0.push(ConfigError::new(path, "must be an object"));
            continue;
        };
        let handler_config =
            ComponentConfig::new(map.clone(), path.clone()).with_paths(config.paths().clone());
        if key == "documents" {
            match documents::DocumentsHandler::from_config(&handler_config) {
                Ok(h) => *documents = Some(Arc::new(h)),
                Err(e) => errors.0.extend(e),
            }
            continue;
        }
        let prefix = common.doc_id_prefix.clone().unwrap_or_default();
        match build_handler(key, &handler_config, &prefix) {
            Ok(h) => {
                out.insert(key.clone(), h);
            }
            Err(e) => errors.0.extend(e),
        }
    }
    for (missing, other) in [("json", "jsonl"), ("jsonl", "json")] {
        if !out.contains_key(missing) {
            if let Some(h) = out.get(other).cloned() {
                out.insert(missing.to_string(), h);
            }
        }
    }
    out
}

/// The lower-case extension of a file name.
pub(crate) fn extension(name: &str) -> Option<String> {
    Path::new(name)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
}

/// Sends records to the Publisher and counts failures.
struct PublisherSink<'a> {
    publisher: &'a Publisher,
}

impl RecordSink for PublisherSink<'_> {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        self.publisher.publish(doc)
    }
    fn publish_record(&mut self, record: Record) -> Result<(), PublishError> {
        self.publisher.publish_record(record)
    }
    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        tracing::warn!(id, "{reason}");
        self.publisher.publish_failed(&id, &reason)
    }
}

/// How one file ended.
enum Outcome {
    Done,
    /// The file could not be read to the end (reported as a FAIL already).
    Failed,
}

impl FileConnector {
    /// Every file under `paths`, filtered, sorted and without duplicates.
    pub fn list_files(&self) -> Result<Vec<storage::Entry>, ConnectorError> {
        let mut files = Vec::new();
        for root in &self.settings.roots {
            let listed = root.storage.list(&root.location)?;
            tracing::debug!("{}: {} file(s)", root.shown, listed.len());
            files.extend(listed.into_iter().map(|file| storage::Entry {
                file,
                storage: root.storage.clone(),
            }));
        }
        files.sort_by(|a, b| a.file.path.cmp(&b.file.path));
        files.dedup_by(|a, b| a.file.path == b.file.path);
        let cutoff = self
            .settings
            .modified_cutoff
            .and_then(|d| SystemTime::now().checked_sub(d));
        Ok(files
            .into_iter()
            .filter(|f| self.included(f, cutoff))
            .collect())
    }

    fn included(&self, file: &storage::Entry, cutoff: Option<SystemTime>) -> bool {
        let text = file.path();
        let s = &self.settings;
        // The checkpoint's own files (state.sqlite, -wal, -shm) are never documents.
        if let Some(r) = &s.resume {
            if text.starts_with(storage::local::absolute(&r.path).to_string_lossy().as_ref()) {
                return false;
            }
        }
        if s.excludes.iter().any(|r| r.is_match(text)) {
            return false;
        }
        if !s.includes.is_empty() && !s.includes.iter().any(|r| r.is_match(text)) {
            return false;
        }
        match cutoff {
            None => true,
            Some(limit) => file
                .metadata()
                .ok()
                .and_then(|m| m.modified)
                .is_some_and(|m| m >= limit),
        }
    }

    fn handler_for(&self, name: &str) -> Option<&Arc<dyn FileHandler>> {
        self.every_file
            .as_ref()
            .or_else(|| extension(name).and_then(|e| self.handlers.get(&e)))
    }

    /// The document for a whole file (or archive entry) with no handler.
    fn file_document(
        &self,
        source: &FileSource,
        metadata: &FileMetadata,
        content: Option<&[u8]>,
    ) -> Result<Document, ConnectorError> {
        let id = self.common.doc_id(&md5_hex(&source.path));
        let mut doc = Document::new(id).map_err(|e| ConnectorError::new(e.to_string()))?;
        let set = |doc: &mut Document, name: &str, value: Value| {
            doc.set_field(name, value)
                .map_err(|e| ConnectorError::new(e.to_string()))
        };
        set(&mut doc, FILE_PATH, Value::from(source.path.clone()))?;
        set(&mut doc, FILE_NAME, Value::from(source.name.clone()))?;
        let size = content.map(|c| c.len() as u64).unwrap_or(metadata.size);
        set(&mut doc, SIZE, Value::from(size))?;
        if let Some(m) = metadata.modified {
            set(&mut doc, MODIFIED, Value::from(iso_time(m)))?;
        }
        if let Some(c) = metadata.created {
            set(&mut doc, CREATED, Value::from(iso_time(c)))?;
        }
        if let Some(bytes) = content {
            set(&mut doc, CONTENT, Value::from(self.encode_content(bytes)))?;
        }
        Ok(doc)
    }

    fn encode_content(&self, bytes: &[u8]) -> String {
        let b64 = || base64::engine::general_purpose::STANDARD.encode(bytes);
        match self.settings.content_format {
            ContentFormat::Base64 => b64(),
            ContentFormat::Text => String::from_utf8_lossy(bytes).into_owned(),
            ContentFormat::Auto => match std::str::from_utf8(bytes) {
                Ok(text) => text.to_string(),
                Err(_) => b64(),
            },
        }
    }

    /// Reads a stream with its handler, or as one whole-file document.
    fn read_stream(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        metadata: &FileMetadata,
        sink: &mut dyn RecordSink,
    ) -> Result<Outcome, ConnectorError> {
        if let Some(handler) = self.handler_for(&source.name) {
            return match handler.process(input, source, sink) {
                Ok(()) => Ok(Outcome::Done),
                Err(HandlerError::Publish(e)) => Err(e.into()),
                Err(HandlerError::File { id, reason }) => {
                    sink.fail(id, reason)?;
                    Ok(Outcome::Failed)
                }
            };
        }
        if let Some(documents) = self
            .documents
            .as_ref()
            .filter(|d| d.takes(extension(&source.name).as_deref()))
        {
            let mut doc = self.file_document(source, metadata, None)?;
            return match documents.fill(input, source.max_bytes, &mut doc) {
                Ok(()) => {
                    sink.publish(doc)?;
                    Ok(Outcome::Done)
                }
                Err(reason) => {
                    let id = doc.id().to_string();
                    sink.fail(id, format!("{}: {reason}", source.path))?;
                    Ok(Outcome::Failed)
                }
            };
        }
        let content = if self.settings.get_file_content {
            let mut bytes = Vec::new();
            let limit = source.max_bytes.unwrap_or(u64::MAX);
            if let Err(e) = std::io::Read::read_to_end(
                &mut std::io::Read::take(&mut *input, limit.saturating_add(1)),
                &mut bytes,
            ) {
                let id = self.common.doc_id(&md5_hex(&source.path));
                sink.fail(id, format!("{}: cannot read: {e}", source.path))?;
                return Ok(Outcome::Failed);
            }
            if bytes.len() as u64 > limit {
                let id = self.common.doc_id(&md5_hex(&source.path));
                sink.fail(
                    id,
                    format!(
                        "{}: the file is larger than maxDocumentBytes ({limit}); not read",
                        source.path
                    ),
                )?;
                return Ok(Outcome::Failed);
            }
            Some(bytes)
        } else {
            None
        };
        let doc = self.file_document(source, metadata, content.as_deref())?;
        sink.publish(doc)?;
        Ok(Outcome::Done)
    }

    /// Reads one file from its storage (decompressing / unpacking as configured).
    fn read_file(
        &self,
        entry: &storage::Entry,
        sink: &mut dyn RecordSink,
    ) -> Result<Outcome, ConnectorError> {
        let display = entry.path().to_string();
        let name = entry.name();
        let file_failure = |sink: &mut dyn RecordSink, e: std::io::Error| {
            let id = self.common.doc_id(&md5_hex(&display));
            sink.fail(id, format!("{display}: cannot read: {e}"))
                .map(|()| Outcome::Failed)
                .map_err(ConnectorError::from)
        };
        let metadata = match entry.metadata() {
            Ok(m) => m,
            Err(e) => return file_failure(sink, e),
        };
        let ext = extension(&name);
        if self.settings.handle_archives && ext.as_deref() == Some("zip") {
            let file = match entry.storage.open_seekable(&entry.file) {
                Ok(f) => f,
                Err(e) => return file_failure(sink, e),
            };
            return compressed::read_zip(self, file, &display, &metadata, sink);
        }
        let input: Box<dyn std::io::Read + Send> = match entry.storage.open(&entry.file) {
            Ok(storage::Opened::File(f)) => Box::new(f),
            Ok(storage::Opened::Stream(s)) => s,
            Err(e) => return file_failure(sink, e),
        };
        if self.settings.handle_compressed && ext.as_deref() == Some("gz") {
            let inner = name[..name.len() - 3].to_string();
            let source = FileSource {
                path: display,
                name: inner,
                max_bytes: self.common.max_document_bytes,
            };
            let mut input = compressed::gunzip(input);
            return self.read_stream(&mut input, &source, &metadata, sink);
        }
        let source = FileSource {
            path: display,
            name,
            max_bytes: self.common.max_document_bytes,
        };
        let mut input = std::io::BufReader::with_capacity(256 * 1024, input);
        self.read_stream(&mut input, &source, &metadata, sink)
    }

    fn process_file(
        &self,
        job: &Job,
        publisher: &Publisher,
        tracker: Option<&resume::TrackerHandle>,
    ) -> Result<(), ConnectorError> {
        let entry = &job.entry;
        let mut sink = PublisherSink { publisher };
        let outcome = match (tracker, job.unit) {
            (Some(tracker), Some(unit)) => {
                let mut counted = resume::CheckpointSink {
                    inner: &mut sink,
                    tracker,
                    unit,
                    skip: job.skip,
                    next: 0,
                };
                let outcome = self.read_file(entry, &mut counted)?;
                match outcome {
                    Outcome::Done => tracker.read(unit, counted.next),
                    Outcome::Failed => {
                        tracker.failed(unit, "the file could not be read to the end")
                    }
                }
                outcome
            }
            _ => self.read_file(entry, &mut sink)?,
        };
        let target = match outcome {
            Outcome::Done => &self.settings.move_after,
            Outcome::Failed => &self.settings.move_on_error,
        };
        if let Some(folder) = target {
            if let Err(e) = entry.storage.move_into(&entry.file, folder) {
                tracing::error!("cannot move {} to {folder}: {e}", entry.path());
            }
        }
        Ok(())
    }

    /// Reads every file from its start, without a checkpoint.
    fn read_all(
        &self,
        files: &[storage::Entry],
        publisher: &Publisher,
    ) -> Result<(), ConnectorError> {
        let jobs: Vec<Job> = files
            .iter()
            .map(|entry| Job {
                entry: entry.clone(),
                unit: None,
                skip: 0,
            })
            .collect();
        self.read_jobs(&jobs, publisher, None)
    }

    /// Reads `files` on `readerThreads` threads; the first connector error stops them all.
    fn read_jobs(
        &self,
        files: &[Job],
        publisher: &Publisher,
        tracker: Option<&resume::TrackerHandle>,
    ) -> Result<(), ConnectorError> {
        let next = AtomicUsize::new(0);
        let first_error: Mutex<Option<ConnectorError>> = Mutex::new(None);
        let threads = self.settings.reader_threads.min(files.len()).max(1);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| loop {
                    if first_error.lock().is_some() {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    if let Err(e) = self.process_file(path, publisher, tracker) {
                        first_error.lock().get_or_insert(e);
                        break;
                    }
                });
            }
        });
        match first_error.into_inner() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `moveToAfterProcessing` / `moveToErrorFolder`: a local folder when every root is local, a
/// URL in the roots' one bucket / container when they are in an object store (as Lucille, which
/// allows a move only with a single path).
fn move_target(
    c: &ComponentConfig,
    key: &str,
    target: &str,
    roots: &[storage::Root],
) -> Result<String, ConfigError> {
    let url = storage::cloud_config::parse_url(target).map_err(|m| c.error(key, m.to_string()))?;
    match url {
        None => match roots.iter().find(|r| r.url.is_some()) {
            Some(r) => Err(c.error(
                key,
                format!("{target:?} is a local folder but {} is in an object store; move within its bucket (a {} URL)", r.shown, r.url.as_ref().map(|u| u.base()).unwrap_or_default()),
            )),
            None => Ok(c.resolve_output_path(target).to_string_lossy().into_owned()),
        },
        Some(u) => {
            let base = u.base();
            match roots.iter().find(|r| r.url.as_ref().map(|x| x.base()) != Some(base.clone())) {
                Some(r) => Err(c.error(
                    key,
                    format!("{target:?} can only receive files of {base}, but paths has {}", r.shown),
                )),
                None => Ok(target.to_string()),
            }
        }
    }
}

/// The id prefix handlers use: their own `docIdPrefix`, else the connector's.
pub(crate) fn handler_prefix(
    config: &ComponentConfig,
    connector_prefix: &str,
) -> Result<String, ConfigError> {
    Ok(config
        .string("docIdPrefix")?
        .unwrap_or_else(|| connector_prefix.to_string()))
}

/// `docIdFormat` (Java's `String.format` with `%s` placeholders) or the parts joined by `_`.
pub(crate) fn format_id(format: Option<&str>, parts: &[String]) -> String {
    match format {
        None => parts.join("_"),
        Some(f) => {
            let mut out = String::with_capacity(f.len() + 16);
            let mut values = parts.iter();
            let mut rest = f;
            while let Some(at) = rest.find("%s") {
                out.push_str(&rest[..at]);
                out.push_str(values.next().map(String::as_str).unwrap_or(""));
                rest = &rest[at + 2..];
            }
            out.push_str(rest);
            out
        }
    }
}

pub(crate) fn prefixed(prefix: &str, id: &str) -> String {
    with_prefix(Some(prefix), id)
}

/// Sets a field on a map-backed record, skipping reserved names.
pub(crate) fn insert_field(map: &mut Map<String, Value>, name: &str, value: Value) {
    if !crate::document::is_reserved(name) && !name.is_empty() {
        map.insert(name.to_string(), value);
    }
}

impl Connector for FileConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let files = self.list_files()?;
        tracing::info!(
            connector = self.common.name.as_str(),
            "{} file(s) to read with {} reader thread(s)",
            files.len(),
            self.settings.reader_threads
        );
        let Some(settings) = &self.settings.resume else {
            return self.read_all(&files, publisher);
        };
        // A file_path no longer listed is gone when its storage says so; one no storage of
        // this config owns (a path since removed from `paths`) is kept, never deleted.
        let storages = &self.settings.storages;
        let gone = |path: &str| match storages.iter().find(|s| s.owns(path)) {
            Some(s) => match s.exists(path) {
                Ok(exists) => !exists,
                Err(e) => {
                    tracing::warn!("cannot tell whether {path} still exists: {e}");
                    false
                }
            },
            None => false,
        };
        let (run, planned) =
            resume::ResumeRun::start(settings, &self.common, &files, &gone, publisher)?;
        let jobs: Vec<Job> = planned
            .into_iter()
            .map(|p| Job {
                entry: p.entry,
                unit: Some(p.unit),
                skip: p.skip,
            })
            .collect();
        let handle = run.handle();
        self.run = Some(run);
        self.read_jobs(&jobs, publisher, Some(&handle))
    }

    /// Every document reached its terminal event: the checkpoint's watermarks are final.
    fn post_execute(&mut self, _run_id: &str) -> Result<(), ConnectorError> {
        match self.run.take() {
            Some(run) => run.finish(&self.common.name),
            None => Ok(()),
        }
    }

    /// A run that did not complete leaves the traversal open (committed so far) to resume.
    fn close(&mut self) -> Result<(), ConnectorError> {
        drop(self.run.take());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
