//! Skipping unchanged documents (`skipUnchanged` on a connector).
//!
//! A small store beside the index or output (`skipUnchangedPath` to place it) keeps, per
//! connector and document id, a hash of what the last run that indexed the document saw:
//!
//! - `skipUnchanged: true`: the record as read (a record's text, or a published document's
//!   fields) together with a hash of the run's config for this connector (its own block, its
//!   pipeline's and the indexer's). A record whose hash matches is not sent for processing at
//!   all: it ends with a DROP whose message is [`UNCHANGED`], counted on its own ("unchanged").
//! - `skipUnchanged: "output"`: the operation sent to the backend. Every document runs through
//!   the stages (for pipelines that read outside data); the indexer skips the ones whose
//!   operation is what the backend already has.
//!
//! Entries are written only when a document's whole tree (it and the children its pipeline
//! made) reached FINISH or DROP, after the backend acknowledged it (for Tantivy: committed),
//! so a kill -9 can only lose writes, and a lost write only makes the next run send the
//! document again. A FAIL anywhere in the tree removes the entry: the next run processes it.
//!
//! A connector that reads units (the FileConnector's files) also keeps a token per unit (size
//! and modification time, with the config): a unit whose every document ended well and whose
//! token is unchanged is not read at all, its documents counted unchanged from the store. It
//! tells which documents vanished: those of a unit that is gone, and those of a unit read to
//! the end that it no longer holds; they are deleted through the indexer's deletion marker.
//! The DatabaseConnector's rows are one unit (read whole each run, so it tells vanished rows
//! too), and with a change-token column it hashes a row's token before building its document
//! ([`crate::accounting::Publisher::publish_if_unchanged`]).
//!
//! The store itself is a service above the core (`lucille-changes`, SQLite), found through
//! the registry as [`ChangeStoreDescriptor`].

mod tracker;

use std::path::Path;

use rustc_hash::FxHashMap;
use serde_json::Value;

use crate::config::{ComponentConfig, ConfigError, Kind, OptionValue};

pub use tracker::{ChangeTracker, UnitRef};

/// The message of the DROP that ends an unchanged document (how the ledger tells it apart
/// from a document a stage dropped, on every transport).
pub const UNCHANGED: &str = "unchanged since the last run that indexed it (skipUnchanged)";

/// A 128-bit hash of content (xxh3: stable across versions and platforms, as a stored hash
/// must be).
pub type Hash = u128;

/// What `skipUnchanged` compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipMode {
    /// `true`: the record as read, with the run's pipeline and indexer config.
    Record,
    /// `"output"`: the operation sent to the backend.
    Output,
}

impl OptionValue for SkipMode {
    fn kind() -> Kind {
        Kind::Any
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let bad = || {
            config.error(
                key,
                "must be true (compare each record as read), \"output\" (compare what is sent to the backend) or false",
            )
        };
        match config.get(key) {
            None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(None),
            Some(Value::Bool(true)) => Ok(Some(SkipMode::Record)),
            Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                "true" => Ok(Some(SkipMode::Record)),
                "false" => Ok(None),
                "output" => Ok(Some(SkipMode::Output)),
                _ => Err(bad()),
            },
            Some(_) => Err(bad()),
        }
    }
}

/// A connector's `skipUnchanged`, resolved by the runner's plan.
#[derive(Debug, Clone)]
pub struct SkipSettings {
    pub mode: SkipMode,
    /// The store file.
    pub path: std::path::PathBuf,
    /// The hash of the config the run's documents are processed with (see the module
    /// comment).
    pub config: Hash,
}

/// The hash of a record as read: its id and its text.
pub fn record_hash(id: &str, text: &str) -> Hash {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&(id.len() as u64).to_le_bytes());
    h.update(id.as_bytes());
    h.update(text.as_bytes());
    h.digest128()
}

/// A writer that hashes what is written to it (serialising straight into the hash, no text
/// built).
struct HashWriter(xxhash_rust::xxh3::Xxh3);

impl std::io::Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The hash of a value as compact JSON.
pub fn json_hash<T: serde::Serialize + ?Sized>(value: &T) -> Hash {
    let mut w = HashWriter(xxhash_rust::xxh3::Xxh3::new());
    // Serialising JSON values into a hash cannot fail.
    let _ = serde_json::to_writer(&mut w, value);
    w.0.digest128()
}

/// The hash of a published document: its id and fields as JSON.
pub fn document_hash(doc: &crate::document::Document) -> Hash {
    json_hash(doc.as_map())
}

/// Two hashes as one (a content hash with the config's, a record's with its unit's).
pub fn combine(hash: Hash, other: Hash) -> Hash {
    let mut bytes = [0u8; 32];
    bytes[..16].copy_from_slice(&hash.to_le_bytes());
    bytes[16..].copy_from_slice(&other.to_le_bytes());
    xxhash_rust::xxh3::xxh3_128(&bytes)
}

/// The key of an id in memory (the store keeps the id itself too).
pub fn id_key(id: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(id.as_bytes())
}

/// One write to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `id` ended well from content whose hash (with the config) is `hash`; `unit` is where
    /// it was read from, when the connector reads units.
    Put {
        id: String,
        hash: Hash,
        unit: Option<std::sync::Arc<str>>,
    },
    /// `id` is to be processed next time (it failed, or it was deleted).
    Remove { id: String },
    /// Every document of `unit` ended well: its token (with the config) and how many
    /// documents it held.
    Unit {
        unit: std::sync::Arc<str>,
        token: Hash,
        docs: u64,
    },
    /// `unit` is to be read next time (or is gone).
    RemoveUnit { unit: std::sync::Arc<str> },
}

#[derive(Debug, Clone, thiserror::Error)]
#[error("change store {path}: {message}")]
pub struct StoreError {
    pub path: String,
    pub message: String,
}

/// The store of one file, opened by the registered implementation. Every call is for one
/// `scope` (the connector's name).
pub trait ChangeStore: Send {
    /// Every entry of `scope`: [`id_key`] of the id → stored hash.
    fn entries(&mut self, scope: &str) -> Result<FxHashMap<u64, Hash>, StoreError>;
    /// A unit's stored token and document count.
    fn unit(&mut self, scope: &str, unit: &str) -> Result<Option<(Hash, u64)>, StoreError>;
    /// Every unit the store knows for `scope`.
    fn units(&mut self, scope: &str) -> Result<Vec<String>, StoreError>;
    /// The ids stored for `unit`.
    fn ids_of_unit(&mut self, scope: &str, unit: &str) -> Result<Vec<String>, StoreError>;
    /// Applies `changes` in order, all or nothing.
    fn apply(&mut self, scope: &str, changes: &[Change]) -> Result<(), StoreError>;
}

/// The change store implementation a build links (`lucille-changes`).
pub struct ChangeStoreDescriptor {
    pub open: fn(&Path) -> Result<Box<dyn ChangeStore>, StoreError>,
}

inventory::collect!(ChangeStoreDescriptor);

/// Whether a change store is linked into this build.
pub fn store_available() -> bool {
    inventory::iter::<ChangeStoreDescriptor>
        .into_iter()
        .next()
        .is_some()
}

/// Opens (creating) the store at `path`.
pub fn open_store(path: &Path) -> Result<Box<dyn ChangeStore>, StoreError> {
    match inventory::iter::<ChangeStoreDescriptor>.into_iter().next() {
        Some(d) => (d.open)(path),
        None => Err(StoreError {
            path: path.display().to_string(),
            message: "no change store is linked into this build (the lucille-changes crate)".into(),
        }),
    }
}

/// The default store file beside an index folder or output file: `index` →
/// `index.unchanged.sqlite`.
pub fn beside(output: &Path) -> std::path::PathBuf {
    let mut name = output
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| "lucille".into());
    name.push(".unchanged.sqlite");
    output.with_file_name(name)
}

#[cfg(test)]
mod tests;
