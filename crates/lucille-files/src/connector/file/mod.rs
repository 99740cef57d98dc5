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

mod changes;
mod compressed;
pub(crate) mod csv;
pub mod documents;
pub(crate) mod json;
mod resume;
mod state;

pub(crate) mod xml;

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

use super::{record_connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::{PublishError, Publisher};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, Options, Spec, Strings};
use crate::document::ids::{md5_hex, with_prefix};
use crate::document::Document;
use crate::record::Record;
use crate::storage;
pub use crate::storage::FileMetadata;

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "FileConnector",
    aliases: &[],
    spec: FileConnectorOptions::spec,
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

/// Publishes each file under `paths` (local files, folders, globs; S3, GCS and Azure URLs) as a
/// document, or the records its `fileHandlers` handler reads from it (CSV rows, JSON lines, XML
/// elements, extracted documents).
#[derive(Options, Debug, Clone, PartialEq)]
#[options(base = record_connector_spec(), extend = with_cloud_blocks)]
pub(crate) struct FileConnectorOptions {
    /// Files, folders (read recursively) and globs to read, local or s3://bucket/prefix,
    /// gs://bucket/prefix, https://ACCOUNT.blob.core.windows.net/container/prefix.
    #[option(alias = "pathToStorage")]
    paths: Strings,
    /// Regexes on a file's full path (each matching the whole path): only files matching one
    /// are read.
    includes: Option<Vec<String>>,
    /// Regexes on a file's full path (each matching the whole path): files matching one are
    /// left out.
    excludes: Option<Vec<String>>,
    /// Only files modified within this duration ("2d", "6h", or milliseconds).
    #[option(alias = "modificationCutoff")]
    modified_cutoff: Option<Duration>,
    /// Lucille's nested filters: { includes, excludes, modificationCutoff (or
    /// lastModifiedCutoff), lastPublishedCutoff, publishMode, sendTombstones }; a key given
    /// here and at the top level is an error.
    filter_options: Option<Map<String, Value>>,
    /// Lucille's nested file keys: { getFileContent, contentFormat, handleArchivedFiles,
    /// handleCompressedFiles, moveToAfterProcessing, moveToErrorFolder }; a key given here and
    /// at the top level is an error.
    file_options: Option<Map<String, Value>>,
    /// The file keys, here or nested in `fileOptions { }` (a key in both is an error).
    #[option(flatten)]
    file: FileOptions,
    /// Handlers by file extension, each with its block: csv { }, json { } / jsonl { }, xml { },
    /// documents { } (text extraction, for every other file).
    file_handlers: Option<Map<String, Value>>,
    /// Threads reading files at once (each file is read by one, in order).
    #[option(default = 2, min = 1)]
    reader_threads: i64,
    /// A resumable traversal: { path } of the SQLite checkpoint file.
    checkpoint: Option<Map<String, Value>>,
    /// Files whose size, modification time and content are unchanged since the last finished
    /// run are skipped (needs the checkpoint).
    incremental: Option<bool>,
    /// A delete marker is published for each file that vanished since it was read (needs the
    /// checkpoint).
    emit_deletes: Option<bool>,
    /// The field a delete marker gets.
    #[option(default = "is_deleted")]
    deletion_marker_field: String,
    /// The value of a delete marker's field.
    #[option(default = "true")]
    deletion_marker_field_value: String,
    /// Lucille's JDBC state block, kept as the checkpoint: { connectionString, tableName,
    /// performDeletions, enabled, runsBeforeExpiration; driver, jdbcUser, jdbcPassword,
    /// pathLength (not used) }.
    state: Option<Map<String, Value>>,
}

impl FileConnectorOptions {
    /// The options of a FileConnector over `paths` with every other key at its default (as
    /// `from_config` gives them: a test compares), for Lucille's single-format connectors.
    pub(crate) fn of_paths(
        paths: Vec<String>,
        move_to_after_processing: Option<String>,
        move_to_error_folder: Option<String>,
    ) -> Self {
        FileConnectorOptions {
            paths: Strings(paths),
            includes: None,
            excludes: None,
            modified_cutoff: None,
            filter_options: None,
            file_options: None,
            file: FileOptions {
                move_to_after_processing,
                move_to_error_folder,
                ..FileOptions::default()
            },
            file_handlers: None,
            reader_threads: 2,
            checkpoint: None,
            incremental: None,
            emit_deletes: None,
            deletion_marker_field: "is_deleted".into(),
            deletion_marker_field_value: "true".into(),
            state: None,
        }
    }
}

/// Adds the cloud blocks of Lucille's keys to a spec: the storage layer
/// (`storage::cloud_config`) reads and checks them from the component's config.
pub(crate) fn with_cloud_blocks(spec: Spec) -> Spec {
    spec.optional("s3", Kind::Object)
        .doc("S3 for s3:// paths: { accessKeyId, secretAccessKey (both, or neither for the AWS environment), region, endpoint, maxNumOfPages }")
        .optional("gcp", Kind::Object)
        .doc("Google Cloud Storage for gs:// paths: { pathToServiceKey, maxNumOfPages }")
        .optional("azure", Kind::Object)
        .doc("Azure Blob Storage for https://ACCOUNT.blob.core.windows.net/ paths: { connectionString, or accountName and accountKey; maxNumOfPages }")
}

/// Lucille's `filterOptions { }`: the filters, nested, and the state's publishing keys.
#[derive(Options)]
#[options(extend = modified_cutoff_alias)]
struct FilterOptions {
    /// Regexes on a file's full path: only files matching one are read.
    includes: Option<Vec<String>>,
    /// Regexes on a file's full path: files matching one are left out.
    excludes: Option<Vec<String>>,
    /// Files published less than this long ago are skipped (needs state or checkpoint).
    last_published_cutoff: Option<Duration>,
    /// incremental: unchanged files are skipped (needs state or checkpoint); full: all are read.
    #[option(one_of = ["incremental", "full"])]
    publish_mode: Option<String>,
    /// A delete marker is published for each vanished file (needs state or checkpoint).
    send_tombstones: Option<bool>,
    /// Only files modified within this duration.
    #[option(alias = "lastModifiedCutoff")]
    modification_cutoff: Option<Duration>,
}

/// `filterOptions.modifiedCutoff`, a third name of `modificationCutoff` (aliases are
/// normalised before the block is read).
fn modified_cutoff_alias(spec: Spec) -> Spec {
    spec.alias("modifiedCutoff", "modificationCutoff")
}

/// The file keys: at the top level of the FileConnector's block, or nested in Lucille's
/// `fileOptions { }`.
#[derive(Options, Debug, Clone, Default, PartialEq)]
struct FileOptions {
    /// A file read whole gets its bytes in file_content (default true).
    get_file_content: Option<bool>,
    /// How file_content is written: auto (text when the bytes are UTF-8, else base64), text
    /// (invalid UTF-8 replaced) or base64 (default auto).
    #[option(one_of = ["auto", "text", "base64"])]
    content_format: Option<String>,
    /// Each file of a .zip archive is read as archive.zip!entry (default true).
    handle_archived_files: Option<bool>,
    /// A .gz file is decompressed and read by its inner name (default true).
    handle_compressed_files: Option<bool>,
    /// The folder a file is moved to once read (in the paths' bucket for an object store).
    move_to_after_processing: Option<String>,
    /// The folder a file that could not be read to the end is moved to.
    move_to_error_folder: Option<String>,
}

/// `checkpoint { }`: where the resumable traversal is kept.
#[derive(Options)]
struct CheckpointOptions {
    /// The SQLite checkpoint file (from the working directory).
    path: String,
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
    fn(&ComponentConfig, &str) -> Result<Arc<dyn FileHandler>, ConfigErrors>;

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
    /// `skipUnchanged`: the files of the current `execute` read to the end, whose vanished
    /// documents are looked for once every file was read.
    read_to_the_end: Option<changes::ReadToTheEnd>,
}

/// A file to read: where its records start (`skip`) and its checkpoint unit.
struct Job {
    entry: storage::Entry,
    unit: Option<resume::UnitId>,
    skip: u64,
    /// Its unit in the change store (`skipUnchanged`).
    change: Option<crate::unchanged::UnitRef>,
}

/// A nested block (`filterOptions`, `checkpoint`, `state`, a handler's) as a config of its
/// own: its errors carry the full key path (`connectors[0].filterOptions.includes`), its
/// relative paths resolve as the connector's.
pub(crate) fn block_config(
    config: &ComponentConfig,
    path: String,
    map: Map<String, Value>,
) -> ComponentConfig {
    ComponentConfig::new(map, path).with_paths(config.paths().clone())
}

/// The options of the nested block `key` (its aliases normalised), with its config for
/// messages; its problems go to `errors`.
fn block_options<T: Options>(
    config: &ComponentConfig,
    key: &str,
    map: Option<Map<String, Value>>,
    errors: &mut Vec<ConfigError>,
) -> Option<(ComponentConfig, T)> {
    let mut map = map?;
    T::spec().normalize(&mut map);
    let block = block_config(config, config.key_path(key), map);
    match T::from_config(&block) {
        Ok(o) => Some((block, o)),
        Err(e) => {
            errors.extend(e);
            None
        }
    }
}

/// A key that may be given flat or inside Lucille's nested block (`nested`: the block, its
/// key, its value), but not both: the value with the config and key it came from.
fn flat_or_nested<'a, T>(
    config: &'a ComponentConfig,
    flat_key: &'static str,
    flat: Option<T>,
    nested: Option<(&'a ComponentConfig, &'static str, Option<T>)>,
    errors: &mut Vec<ConfigError>,
) -> Option<(&'a ComponentConfig, &'static str, T)> {
    let nested = nested.and_then(|(c, k, v)| v.map(|v| (c, k, v)));
    match (flat, nested) {
        (Some(v), Some((c, k, _))) => {
            errors.push(c.error(
                k,
                format!("is also given as {flat_key:?} at the top level; give only one"),
            ));
            Some((config, flat_key, v))
        }
        (Some(v), None) => Some((config, flat_key, v)),
        (None, nested) => nested,
    }
}

/// A nested block's value of `key`, for [`flat_or_nested`].
fn within<'a, T>(
    block: &'a Option<ComponentConfig>,
    key: &'static str,
    value: Option<T>,
) -> Option<(&'a ComponentConfig, &'static str, Option<T>)> {
    block.as_ref().map(|c| (c, key, value))
}

/// `includes` / `excludes` compiled; a bad pattern is an error at the key it came from.
fn compile_all(
    config: &ComponentConfig,
    key: &str,
    patterns: &[String],
    errors: &mut Vec<ConfigError>,
) -> Vec<Regex> {
    patterns
        .iter()
        .filter_map(|p| {
            // Lucille's patterns match the whole path (Java's Matcher.matches()).
            Regex::new(&format!("^(?:{p})$"))
                .map_err(|e| errors.push(config.error(key, format!("invalid regex {p:?}: {e}"))))
                .ok()
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
    ) -> Result<FileConnector, ConfigErrors> {
        let o = FileConnectorOptions::from_config(config)?;
        FileConnector::from_options(config, common, o)
    }

    /// The connector of read options; `config` (the block they were read from) names keys in
    /// errors and resolves paths. Every problem at once.
    pub(crate) fn from_options(
        config: &ComponentConfig,
        common: &Common,
        o: FileConnectorOptions,
    ) -> Result<FileConnector, ConfigErrors> {
        let mut errors = Vec::new();
        let (filter_config, filter) =
            block_options::<FilterOptions>(config, "filterOptions", o.filter_options, &mut errors)
                .unzip();
        let (file_config, file_opts) =
            block_options::<FileOptions>(config, "fileOptions", o.file_options, &mut errors)
                .unzip();

        if o.paths.is_empty() {
            errors.push(config.error("paths", "must name at least one file, folder or glob"));
        }
        let roots = storage::roots(config, &o.paths, &mut errors);
        let mut storages: Vec<Arc<dyn storage::Storage>> = Vec::new();
        for r in &roots.roots {
            if !storages.iter().any(|s| Arc::ptr_eq(s, &r.storage)) {
                storages.push(r.storage.clone());
            }
        }
        storages.push(roots.local.clone());

        let patterns = |key: &'static str,
                        flat: Option<Vec<String>>,
                        nested: Option<Vec<String>>,
                        errors: &mut Vec<ConfigError>| {
            let nested = within(&filter_config, key, nested);
            match flat_or_nested(config, key, flat, nested, errors) {
                Some((c, k, list)) => compile_all(c, k, &list, errors),
                None => Vec::new(),
            }
        };
        let includes = patterns(
            "includes",
            o.includes,
            filter.as_ref().and_then(|f| f.includes.clone()),
            &mut errors,
        );
        let excludes = patterns(
            "excludes",
            o.excludes,
            filter.as_ref().and_then(|f| f.excludes.clone()),
            &mut errors,
        );
        let modified_cutoff = flat_or_nested(
            config,
            "modifiedCutoff",
            o.modified_cutoff,
            within(
                &filter_config,
                "modificationCutoff",
                filter.as_ref().and_then(|f| f.modification_cutoff),
            ),
            &mut errors,
        )
        .map(|(_, _, d)| d);

        let flag = |key: &'static str,
                    flat: Option<bool>,
                    nested: Option<bool>,
                    errors: &mut Vec<ConfigError>| {
            flat_or_nested(config, key, flat, within(&file_config, key, nested), errors)
                .is_none_or(|(_, _, on)| on)
        };
        let get_file_content = flag(
            "getFileContent",
            o.file.get_file_content,
            file_opts.as_ref().and_then(|f| f.get_file_content),
            &mut errors,
        );
        let handle_archives = flag(
            "handleArchivedFiles",
            o.file.handle_archived_files,
            file_opts.as_ref().and_then(|f| f.handle_archived_files),
            &mut errors,
        );
        let handle_compressed = flag(
            "handleCompressedFiles",
            o.file.handle_compressed_files,
            file_opts.as_ref().and_then(|f| f.handle_compressed_files),
            &mut errors,
        );
        let content_format = match flat_or_nested(
            config,
            "contentFormat",
            o.file.content_format,
            within(
                &file_config,
                "contentFormat",
                file_opts.as_ref().and_then(|f| f.content_format.clone()),
            ),
            &mut errors,
        ) {
            Some((_, _, f)) if f == "text" => ContentFormat::Text,
            Some((_, _, f)) if f == "base64" => ContentFormat::Base64,
            _ => ContentFormat::Auto,
        };
        let folder = |key: &'static str,
                      flat: Option<String>,
                      nested: Option<String>,
                      errors: &mut Vec<ConfigError>| {
            let nested = within(&file_config, key, nested);
            let (c, k, target) = flat_or_nested(config, key, flat, nested, errors)?;
            move_target(c, k, &target, &roots.roots)
                .map_err(|e| errors.push(e))
                .ok()
        };
        let move_after = folder(
            "moveToAfterProcessing",
            o.file.move_to_after_processing,
            file_opts
                .as_ref()
                .and_then(|f| f.move_to_after_processing.clone()),
            &mut errors,
        );
        let move_on_error = folder(
            "moveToErrorFolder",
            o.file.move_to_error_folder,
            file_opts
                .as_ref()
                .and_then(|f| f.move_to_error_folder.clone()),
            &mut errors,
        );
        // At least 1: checked by its `min`.
        let reader_threads = usize::try_from(o.reader_threads).unwrap_or(1);

        let mut documents = None;
        let handlers = match o.file_handlers {
            Some(blocks) => build_handlers(config, blocks, common, &mut errors, &mut documents),
            None => HashMap::new(),
        };

        let checkpoint_given = o.checkpoint.is_some();
        let state_given = o.state.is_some();
        let mut resume =
            block_options::<CheckpointOptions>(config, "checkpoint", o.checkpoint, &mut errors)
                .map(|(c, cp)| resume::ResumeSettings::at(c.resolve_output_path(&cp.path)));
        // Lucille's `state { }` block: the same checkpoint under Lucille's keys (state.rs).
        if let Some((block, st)) =
            block_options::<state::StateOptions>(config, "state", o.state, &mut errors)
        {
            let state = state::settings(&block, st, &common.name, &mut errors);
            if resume.is_some() && state.is_some() {
                errors.push(config.error(
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
        let mut incremental = o.incremental.unwrap_or(false);
        let mut emit_deletes = o.emit_deletes.unwrap_or(false);
        let mut published_cutoff = None;
        if let (Some(block), Some(f)) = (&filter_config, &filter) {
            published_cutoff = f.last_published_cutoff;
            incremental |= f.publish_mode.as_deref() == Some("incremental");
            emit_deletes |= f.send_tombstones == Some(true);
            for (key, given) in [
                ("lastPublishedCutoff", f.last_published_cutoff.is_some()),
                ("publishMode", f.publish_mode.is_some()),
                ("sendTombstones", f.send_tombstones.is_some()),
            ] {
                if given && resume.is_none() {
                    errors.push(block.error(
                        key,
                        "needs the connector's state { } (Lucille's) or checkpoint { path }",
                    ));
                }
            }
        }
        for (key, on) in [
            ("incremental", o.incremental),
            ("emitDeletes", o.emit_deletes),
        ] {
            if on == Some(true) && resume.is_none() {
                errors.push(config.error(key, "needs checkpoint { path: \"state.sqlite\" }"));
            }
        }
        if (checkpoint_given || state_given) && common.collapse {
            errors.push(config.error(
                if checkpoint_given {
                    "checkpoint"
                } else {
                    "state"
                },
                "cannot be combined with collapse (collapsed records share one acknowledgement)",
            ));
        }
        let resume = resume.map(|r| resume::ResumeSettings {
            incremental,
            emit_deletes,
            marker_field: o.deletion_marker_field,
            marker_value: o.deletion_marker_field_value,
            published_cutoff,
            ..r
        });

        if !errors.is_empty() {
            return Err(errors.into());
        }
        Ok(FileConnector {
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
            read_to_the_end: None,
        })
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
) -> Result<Arc<dyn FileHandler>, ConfigErrors> {
    match crate::registry::find::<FileHandlerDescriptor>(kind) {
        Some(d) => (d.build)(config, prefix),
        None => Err(ConfigError::new(
            config.path(),
            format!(
                "unknown file handler {kind:?}; known: {}, documents",
                handler_keys().join(", ")
            ),
        )
        .into()),
    }
}

/// `fileHandlers { csv {…}, json {…}, jsonl {…}, xml {…}, documents {…} }`, each block read by
/// its handler's options; `json` and `jsonl` are one JSON-lines handler, each key's block
/// serving the other extension when that one is absent.
fn build_handlers(
    config: &ComponentConfig,
    blocks: Map<String, Value>,
    common: &Common,
    errors: &mut Vec<ConfigError>,
    documents: &mut Option<Arc<documents::DocumentsHandler>>,
) -> HashMap<String, Arc<dyn FileHandler>> {
    let mut out: HashMap<String, Arc<dyn FileHandler>> = HashMap::new();
    let base = config.key_path("fileHandlers");
    for (key, value) in blocks {
        let path = format!("{base}.{key}");
        let Value::Object(map) = value else {
            errors.push(ConfigError::new(path, "must be an object"));
            continue;
        };
        let handler_config = block_config(config, path, map);
        if key == "documents" {
            match documents::DocumentsHandler::from_config(&handler_config) {
                Ok(h) => *documents = Some(Arc::new(h)),
                Err(e) => errors.extend(e.0),
            }
            continue;
        }
        let prefix = common.doc_id_prefix.clone().unwrap_or_default();
        match build_handler(&key, &handler_config, &prefix) {
            Ok(h) => {
                out.insert(key, h);
            }
            Err(e) => errors.extend(e.0),
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
    /// The file's unit in the change store (`skipUnchanged`).
    unit: Option<crate::unchanged::UnitRef>,
}

impl RecordSink for PublisherSink<'_> {
    fn publish(&mut self, doc: Document) -> Result<(), PublishError> {
        self.publisher.publish_in(doc, self.unit)
    }
    fn publish_record(&mut self, record: Record) -> Result<(), PublishError> {
        self.publisher.publish_record_in(record, self.unit)
    }
    fn fail(&mut self, id: String, reason: String) -> Result<(), PublishError> {
        tracing::warn!(id, "{reason}");
        self.publisher.publish_failed_in(&id, &reason, self.unit)
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
        let mut sink = PublisherSink {
            publisher,
            unit: job.change,
        };
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
        if let (Some(changes), Some(unit)) = (publisher.changes(), job.change) {
            let complete = matches!(outcome, Outcome::Done);
            // A file resumed mid-way did not show the records before its watermark.
            let looked_for = self.read_to_the_end.as_ref().filter(|_| job.skip == 0);
            changes::end(changes, entry.path(), unit, complete, looked_for);
        }
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
                change: None,
            })
            .collect();
        let jobs = self.plan_changes(jobs, publisher)?;
        self.read_jobs(&jobs, publisher, None)
    }

    /// Whether documents that vanished are deleted under `skipUnchanged`: not when files
    /// leave their folder by design (`moveToAfterProcessing`, `moveToErrorFolder`).
    fn deletes_vanished(&self) -> bool {
        self.settings.move_after.is_none() && self.settings.move_on_error.is_none()
    }

    /// `skipUnchanged`: the jobs whose file changed, each with its unit in the change store
    /// (the others are counted unchanged, unread).
    fn plan_changes(
        &self,
        jobs: Vec<Job>,
        publisher: &Publisher,
    ) -> Result<Vec<Job>, ConnectorError> {
        let Some(changes) = publisher.changes() else {
            return Ok(jobs);
        };
        let entries: Vec<storage::Entry> = jobs.iter().map(|j| j.entry.clone()).collect();
        let units = changes::plan(changes, publisher, &entries);
        if changes.mode() == crate::unchanged::SkipMode::Output {
            return Ok(jobs);
        }
        Ok(jobs
            .into_iter()
            .zip(units)
            .filter_map(|(job, unit)| {
                unit.map(|u| Job {
                    change: Some(u),
                    ..job
                })
            })
            .collect())
    }

    /// A `file_path` no longer listed is gone when its storage says so; one no storage of
    /// this config owns (a path since removed from `paths`) is kept, never deleted.
    fn is_gone(&self, path: &str) -> bool {
        match self.settings.storages.iter().find(|s| s.owns(path)) {
            Some(s) => match s.exists(path) {
                Ok(exists) => !exists,
                Err(e) => {
                    tracing::warn!("cannot tell whether {path} still exists: {e}");
                    false
                }
            },
            None => false,
        }
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

impl FileConnector {
    /// Reads the listed files (through the checkpoint when there is one).
    fn read_listed(
        &mut self,
        files: &[storage::Entry],
        publisher: &Arc<Publisher>,
    ) -> Result<(), ConnectorError> {
        let Some(settings) = &self.settings.resume else {
            return self.read_all(files, publisher);
        };
        let gone = |path: &str| self.is_gone(path);
        let (run, planned) =
            resume::ResumeRun::start(settings, &self.common, files, &gone, publisher)?;
        let jobs: Vec<Job> = planned
            .into_iter()
            .map(|p| Job {
                entry: p.entry,
                unit: Some(p.unit),
                skip: p.skip,
                change: None,
            })
            .collect();
        let jobs = self.plan_changes(jobs, publisher)?;
        let handle = run.handle();
        self.run = Some(run);
        self.read_jobs(&jobs, publisher, Some(&handle))
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
        let changes = publisher
            .changes()
            .filter(|c| c.mode() == crate::unchanged::SkipMode::Record);
        self.read_to_the_end = changes
            .filter(|_| self.deletes_vanished())
            .map(|_| changes::ReadToTheEnd::default());
        self.read_listed(&files, publisher)?;
        // Every file was read: what vanished from them, or with them, is deleted now.
        if let (Some(changes), Some(read)) = (changes, self.read_to_the_end.take()) {
            let gone = |path: &str| self.is_gone(path);
            changes::finish(changes, publisher, read, &files, &gone)?;
        }
        Ok(())
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
