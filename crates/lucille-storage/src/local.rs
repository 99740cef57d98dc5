//! Local disk: a root is a file, a folder (walked recursively, following links, in name order)
//! or a glob; `file_path` is the absolute path.

use std::io;
use std::path::{Path, PathBuf};

use super::FileMetadata;
use super::StorageError;
use super::{Listed, Opened, Storage};

#[derive(Debug, Default)]
pub struct LocalStorage;

pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

fn listed(path: &Path) -> Listed {
    let text = absolute(path).to_string_lossy().into_owned();
    Listed {
        path: text.clone(),
        locator: text,
        listed: None,
        version: None,
    }
}

fn collect(path: &Path, out: &mut Vec<Listed>) -> Result<(), StorageError> {
    if path.is_dir() {
        for entry in walkdir::WalkDir::new(path)
            .follow_links(true)
            .sort_by_file_name()
        {
            let entry = entry
                .map_err(|e| StorageError::new(format!("cannot walk {}: {e}", path.display())))?;
            if entry.file_type().is_file() {
                out.push(listed(entry.path()));
            }
        }
    } else if path.is_file() {
        out.push(listed(path));
    }
    Ok(())
}

impl Storage for LocalStorage {
    fn list(&self, location: &str) -> Result<Vec<Listed>, StorageError> {
        let mut out = Vec::new();
        let p = Path::new(location);
        if location.contains(['*', '?', '[']) {
            let entries = glob::glob(location)
                .map_err(|e| StorageError::new(format!("invalid glob {location:?}: {e}")))?;
            for entry in entries {
                let path = entry.map_err(|e| StorageError::new(format!("cannot read {e}")))?;
                collect(&path, &mut out)?;
            }
        } else if p.exists() {
            collect(p, &mut out)?;
        } else {
            return Err(StorageError::new(format!(
                "path {} does not exist",
                p.display()
            )));
        }
        Ok(out)
    }

    fn metadata(&self, file: &Listed) -> io::Result<FileMetadata> {
        std::fs::metadata(&file.locator).map(|m| FileMetadata::from(&m))
    }

    fn open(&self, file: &Listed) -> io::Result<Opened> {
        std::fs::File::open(&file.locator).map(Opened::File)
    }

    fn open_seekable(&self, file: &Listed) -> io::Result<std::fs::File> {
        std::fs::File::open(&file.locator)
    }

    fn exists(&self, path: &str) -> io::Result<bool> {
        Ok(Path::new(path).exists())
    }

    fn owns(&self, path: &str) -> bool {
        !path.contains("://")
    }

    /// Moves the file into a folder (created if needed); copies and removes across file
    /// systems.
    fn move_into(&self, file: &Listed, folder: &str) -> io::Result<()> {
        let path = Path::new(&file.locator);
        let folder = Path::new(folder);
        std::fs::create_dir_all(folder)?;
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
        let target = folder.join(name);
        if std::fs::rename(path, &target).is_err() {
            std::fs::copy(path, &target)?;
            std::fs::remove_file(path)?;
        }
        Ok(())
    }
}
