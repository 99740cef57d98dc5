//! An output file written one batch at a time, for the jsonl and csv indexers: a batch lands
//! whole or not at all. A batch is encoded in memory and written with one `write_all`; when
//! that fails (a full disk: ENOSPC, a file-size limit: EFBIG, an I/O error) the file is cut
//! back to its length before the batch, so no partial line stays behind, and the caller FAILs
//! every document of the batch. A FINISH therefore always means "the whole line is in the
//! file", and a FAIL means "no part of it is".

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::BackendError;

pub struct BatchFile {
    path: PathBuf,
    file: File,
    /// The file's length after the last batch that was written whole.
    committed: u64,
}

impl BatchFile {
    /// Takes an opened file (truncated or in append mode); writing continues at its end.
    pub fn new(path: PathBuf, mut file: File) -> std::io::Result<Self> {
        let committed = file.seek(SeekFrom::End(0))?;
        Ok(BatchFile {
            path,
            file,
            committed,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one batch's bytes whole, or removes what part of them reached the file.
    pub fn write_batch(&mut self, bytes: &[u8]) -> Result<(), BackendError> {
        match self.file.write_all(bytes) {
            Ok(()) => {
                self.committed += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                let undo = self
                    .file
                    .set_len(self.committed)
                    .and_then(|_| self.file.seek(SeekFrom::Start(self.committed)));
                let what = match undo {
                    Ok(_) => "nothing of this batch was kept".to_string(),
                    Err(u) => format!(
                        "cutting the file back to its last whole batch ({} bytes) failed too: {u}",
                        self.committed
                    ),
                };
                Err(BackendError::new(format!(
                    "writing {} failed: {e} ({what})",
                    self.path.display()
                )))
            }
        }
    }

    /// Flushes the file's data to the disk (at the end of the run).
    pub fn sync(&mut self) -> Result<(), BackendError> {
        self.file
            .sync_all()
            .map_err(|e| BackendError::new(format!("closing {} failed: {e}", self.path.display())))
    }
}
