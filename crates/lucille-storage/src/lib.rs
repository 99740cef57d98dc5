//! Object storage, a service under the components that read files: the FileConnector (its
//! traversal, filters, handlers, checkpoints and moves are written once against the
//! [`Storage`] trait), the Parquet connector and the fetch stages. A storage only lists, opens,
//! hashes, checks and moves:
//!
//! - [`local::LocalStorage`]: files, folders (recursively) and globs on local disk;
//! - [`object::ObjectStorage`]: one S3 bucket, GCS bucket or Azure container (Lucille's
//!   `s3 { }`, `gcp { }`, `azure { }` blocks), through the `object_store` crate on a small tokio
//!   runtime its user owns ([`object::CloudRuntime`]).
//!
//! [`roots`] turns `paths` into (storage, location) pairs: `s3://bucket/prefix`,
//! `gs://bucket/prefix` and `https://ACCOUNT.blob.core.windows.net/container/prefix` are object
//! stores (one storage per bucket / container), anything else is a local path.

pub mod cloud_config;
pub mod local;
pub mod object;

use std::io::{self, Read};
use std::sync::Arc;
use std::time::SystemTime;

use lucille_core::config::{ComponentConfig, ConfigError};

/// A listing that failed: a folder that cannot be walked, a bad glob, a bucket that cannot be
/// listed. The message names the location.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StorageError(pub String);

impl StorageError {
    pub fn new(message: impl Into<String>) -> Self {
        StorageError(message.into())
    }
}

impl From<StorageError> for lucille_core::connector::ConnectorError {
    fn from(e: StorageError) -> Self {
        lucille_core::connector::ConnectorError(e.0)
    }
}

/// What the whole-file document reports about a file or archive entry.
#[derive(Debug, Clone, Default)]
pub struct FileMetadata {
    pub size: u64,
    pub modified: Option<SystemTime>,
    pub created: Option<SystemTime>,
}

impl From<&std::fs::Metadata> for FileMetadata {
    fn from(m: &std::fs::Metadata) -> Self {
        FileMetadata {
            size: m.len(),
            modified: m.modified().ok(),
            created: m.created().ok(),
        }
    }
}

/// A file found by a storage's listing.
#[derive(Debug, Clone)]
pub struct Listed {
    /// The full path shown in `file_path` and matched by `includes` / `excludes`: the absolute
    /// local path, or the object's URL (`s3://bucket/key`).
    pub path: String,
    /// The storage's own name for it: the local path, or the object key.
    pub locator: String,
    /// Size and times known from the listing (object stores); `None` for local files, whose
    /// metadata is read when needed.
    pub listed: Option<FileMetadata>,
    /// A cheap content version from the listing (an object's ETag), used as the incremental
    /// content hash instead of reading the bytes.
    pub version: Option<String>,
}

/// A file to read, with the storage that holds it.
#[derive(Clone)]
pub struct Entry {
    pub file: Listed,
    pub storage: Arc<dyn Storage>,
}

impl Entry {
    pub fn path(&self) -> &str {
        &self.file.path
    }

    /// The file name: the last path segment.
    pub fn name(&self) -> String {
        let p = self.file.locator.trim_end_matches(['/', '\\']);
        p.rsplit(['/', std::path::MAIN_SEPARATOR])
            .next()
            .unwrap_or(p)
            .to_string()
    }

    pub fn metadata(&self) -> io::Result<FileMetadata> {
        match &self.file.listed {
            Some(m) => Ok(m.clone()),
            None => self.storage.metadata(&self.file),
        }
    }
}

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry").field("file", &self.file).finish()
    }
}

/// A readable stream that may also be a local file (zip archives need to seek).
pub enum Opened {
    File(std::fs::File),
    Stream(Box<dyn Read + Send>),
}

pub trait Storage: Send + Sync {
    /// Every file at `location` (a root from `paths`), in any order.
    fn list(&self, location: &str) -> Result<Vec<Listed>, StorageError>;

    /// Metadata of a listed file that carries none.
    fn metadata(&self, file: &Listed) -> io::Result<FileMetadata>;

    /// The file's bytes as a stream.
    fn open(&self, file: &Listed) -> io::Result<Opened>;

    /// A seekable copy: the file itself on disk, or the object spooled to an unlinked temporary
    /// file.
    fn open_seekable(&self, file: &Listed) -> io::Result<std::fs::File>;

    /// The incremental content hash: the listing's version (ETag) when there is one, else the
    /// MD5 of the bytes.
    fn content_hash(&self, file: &Listed) -> io::Result<String> {
        if let Some(v) = &file.version {
            return Ok(v.clone());
        }
        let mut input: Box<dyn Read> = match self.open(file)? {
            Opened::File(f) => Box::new(f),
            Opened::Stream(s) => s,
        };
        md5_of(&mut input)
    }

    /// Whether `path` (a `file_path` this storage owns) still exists.
    fn exists(&self, path: &str) -> io::Result<bool>;

    /// Whether `path` (a `file_path`) belongs to this storage.
    fn owns(&self, path: &str) -> bool;

    /// Moves the file into `folder` (`moveToAfterProcessing` / `moveToErrorFolder`, checked
    /// against this storage at config time).
    fn move_into(&self, file: &Listed, folder: &str) -> io::Result<()>;
}

/// Lower-case hex MD5 of a stream.
pub fn md5_of(input: &mut dyn Read) -> io::Result<String> {
    use md5::{Digest, Md5};
    let mut hasher = Md5::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = input.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(lucille_core::document::ids::hex(&hasher.finalize()))
}

/// The object stores made so far, one per bucket / container, and the runtime they share
/// (made with the first): the FileConnector's `paths` and the fetch stages' documents alike.
#[derive(Default)]
pub struct Stores {
    runtime: Option<Arc<object::CloudRuntime>>,
    stores: Vec<(String, Arc<object::ObjectStorage>)>,
}

impl Stores {
    /// The store of `url`'s bucket / container, made on first use with `cloud`'s block.
    pub fn get(
        &mut self,
        cloud: &cloud_config::CloudConfig,
        config: &ComponentConfig,
        url: &cloud_config::ObjectUrl,
    ) -> Result<Arc<object::ObjectStorage>, ConfigError> {
        let base = url.base();
        if let Some((_, s)) = self.stores.iter().find(|(b, _)| *b == base) {
            return Ok(s.clone());
        }
        let runtime = self
            .runtime
            .get_or_insert_with(|| Arc::new(object::CloudRuntime::default()))
            .clone();
        let store = Arc::new(cloud.store_for(config, url, runtime)?);
        self.stores.push((base, store.clone()));
        Ok(store)
    }
}

/// A `paths` entry: its storage and where to list.
#[derive(Clone)]
pub struct Root {
    pub storage: Arc<dyn Storage>,
    pub location: String,
    /// As written in the config, for messages.
    pub shown: String,
    /// The parsed URL of an object-store root; `None` for a local one.
    pub url: Option<cloud_config::ObjectUrl>,
}

/// The storages and roots of a FileConnector's `paths`, with the cloud blocks that configure
/// them. Errors are collected (key path + what to do).
pub struct Roots {
    pub roots: Vec<Root>,
    /// The local storage (also the owner of any `file_path` no object store owns).
    pub local: Arc<local::LocalStorage>,
}

/// Builds the roots of `paths`: URLs go to the object store of their bucket / container
/// (configured by the connector's `s3`, `gcp` or `azure` block), the rest to local disk.
pub fn roots(config: &ComponentConfig, paths: &[String], errors: &mut Vec<ConfigError>) -> Roots {
    let local = Arc::new(local::LocalStorage);
    let cloud = cloud_config::CloudConfig::from_config(config, errors);
    let mut stores = Stores::default();
    let mut roots = Vec::new();
    let mut used = [false; 3];
    for p in paths {
        match cloud_config::parse_url(p) {
            Ok(None) => {
                let resolved = config.resolve_path(p);
                roots.push(Root {
                    storage: local.clone(),
                    location: resolved.to_string_lossy().into_owned(),
                    shown: p.clone(),
                    url: None,
                });
            }
            Err(e) => errors.push(config.error("paths", e.to_string())),
            Ok(Some(url)) => {
                used[url.kind as usize] = true;
                let storage = stores
                    .get(&cloud, config, &url)
                    .map_err(|e| errors.push(e))
                    .ok();
                if let Some(storage) = storage {
                    roots.push(Root {
                        storage,
                        location: url.prefix.clone(),
                        shown: p.clone(),
                        url: Some(url.clone()),
                    });
                }
            }
        }
    }
    cloud.warn_unused(config, used);
    Roots { roots, local }
}
