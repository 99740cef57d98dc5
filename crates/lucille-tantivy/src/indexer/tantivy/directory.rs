//! The index writer's folder: Tantivy's `MmapDirectory`, except that what the writer reads of
//! its segments (a merge reads every page of the segments it merges) stops counting in the
//! process's resident memory once it is done with.
//!
//! Tantivy reads segments through whole-file mappings, and every page a merge touches stays
//! resident in the process (file-backed: page cache the kernel may drop, but RSS) until the
//! merge ends and its segments are unmapped. A merge of nine 50,000-document segments of the
//! standard benchmark touched 421 MB of them (the doc stores 247 MB, positions 86 MB, postings
//! 61 MB), with 284 MB of anonymous memory besides: row 4's 706 MB peak at 1M records. Here a
//! file read through the writer is mapped afresh on its first read after every [`REMAP_EVERY`]
//! bytes read through the writer as a whole, and a read of [`OWN_MAPPING`] bytes or more (a
//! merge copying a segment's doc store whole) gets a mapping of its own: a mapping nobody holds
//! any more is unmapped, its pages with it. What merges keep resident is then about
//! `REMAP_EVERY`, plus the doc store being copied, plus what long-lived readers (term
//! dictionary indexes, skip indexes) keep of the mapping they were read from. The pages are the
//! same page cache either way: a new mapping costs an `mmap` call and page faults, not disk
//! reads. Searches (`search`, `search_vector`) open the index with Tantivy's own directory.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{
    DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError,
};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, OwnedBytes, WatchCallback,
    WatchHandle, WritePtr,
};
use tantivy::HasLen;

/// Bytes read through the writer (all files together) after which each file is mapped afresh
/// on its next read. With 16 MB, row 4 at 1M records kept at most 35 MB of index files
/// resident (421 MB before), at the same speed: a merge of nine 50,000-document segments reads
/// ~150 MB of postings and positions in small pieces, so each of its files is mapped ~10 times
/// instead of once.
pub(super) const REMAP_EVERY: usize = 16 << 20;
/// Reads of at least this many bytes get a mapping of their own: whole doc stores copied by a
/// merge (28 MB for a 50,000-document segment of the standard benchmark), term dictionaries
/// streamed whole; the reads of single terms' postings are bytes to kilobytes.
pub(super) const OWN_MAPPING: usize = 1 << 20;

/// The writer's view of an index folder (see the module's comment).
#[derive(Clone)]
pub(super) struct WriterDirectory {
    /// Everything but reads is Tantivy's own: writes, deletes, `meta.json`, the lock.
    inner: MmapDirectory,
    /// The folder, canonical: reads map its files through a fresh `MmapDirectory` each time,
    /// because one instance hands out the mapping it already has while anybody holds it.
    root: PathBuf,
    /// Bytes read so far through the small reads of every file: the mapping generation is this
    /// divided by `limits.remap_every`.
    read: Arc<AtomicUsize>,
    limits: Limits,
}

/// [`REMAP_EVERY`] and [`OWN_MAPPING`] (smaller in tests).
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub remap_every: usize,
    pub own_mapping: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            remap_every: REMAP_EVERY,
            own_mapping: OWN_MAPPING,
        }
    }
}

impl fmt::Debug for WriterDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterDirectory")
            .field("root", &self.root)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl WriterDirectory {
    pub(super) fn open(path: &Path) -> Result<Self, OpenDirectoryError> {
        Self::with_limits(path, Limits::default())
    }

    pub(super) fn with_limits(path: &Path, limits: Limits) -> Result<Self, OpenDirectoryError> {
        let inner = MmapDirectory::open(path)?;
        let root = path
            .canonicalize()
            .map_err(|e| OpenDirectoryError::wrap_io_error(e, path.to_path_buf()))?;
        Ok(WriterDirectory {
            inner,
            root,
            read: Arc::new(AtomicUsize::new(0)),
            limits: Limits {
                remap_every: limits.remap_every.max(1),
                ..limits
            },
        })
    }
}

/// A new mapping of the file at `path` in `root` (none for an empty file), shared with nobody.
fn map(root: &Path, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
    MmapDirectory::open(root)
        .map_err(|e| OpenReadError::wrap_io_error(io::Error::other(e), path.to_path_buf()))?
        .get_file_handle(path)
}

/// One file read through the writer.
struct WriterFile {
    root: PathBuf,
    path: PathBuf,
    len: usize,
    read: Arc<AtomicUsize>,
    limits: Limits,
    /// The mapping small reads use, and the generation it was made in.
    current: Mutex<(usize, Arc<dyn FileHandle>)>,
}

impl fmt::Debug for WriterFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriterFile")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

impl HasLen for WriterFile {
    fn len(&self) -> usize {
        self.len
    }
}

impl FileHandle for WriterFile {
    fn read_bytes(&self, range: Range<usize>) -> io::Result<OwnedBytes> {
        if range.len() >= self.limits.own_mapping {
            return map(&self.root, &self.path)
                .map_err(io::Error::other)?
                .read_bytes(range);
        }
        let generation =
            self.read.fetch_add(range.len(), Ordering::Relaxed) / self.limits.remap_every;
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if current.0 != generation {
            // Ours goes first, so a mapping only we held is unmapped before the next is made.
            current.1 = Arc::new(OwnedBytes::empty());
            current.1 = map(&self.root, &self.path).map_err(io::Error::other)?;
            current.0 = generation;
        }
        current.1.read_bytes(range)
    }
}

impl Directory for WriterDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        let handle = map(&self.root, path)?;
        let generation = self.read.load(Ordering::Relaxed) / self.limits.remap_every;
        Ok(Arc::new(WriterFile {
            root: self.root.clone(),
            path: path.to_path_buf(),
            len: handle.len(),
            read: self.read.clone(),
            limits: self.limits,
            current: Mutex::new((generation, handle)),
        }))
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.inner.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory()
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
