//! An output file written one batch at a time, for the jsonl and csv indexers: a batch lands
//! whole or not at all. A batch is encoded in memory and written with one `write_all`; when
//! that fails (a full disk: ENOSPC, a file-size limit: EFBIG, an I/O error) the file is cut
//! back to its length before the batch, so no partial line stays behind, and the caller FAILs
//! every document of the batch. A FINISH therefore always means "the whole line is in the
//! file", and a FAIL means "no part of it is".

use std::fs::File;
use std::io::{IoSlice, Seek, SeekFrom, Write};
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
        self.write_parts(&[bytes])
    }

    /// Writes one batch given in parts (a line each, as the workers encoded them) whole, or
    /// removes what part of them reached the file: the kernel gathers the parts (`writev`),
    /// so they are not first copied into one buffer.
    pub fn write_parts(&mut self, parts: &[&[u8]]) -> Result<(), BackendError> {
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        match write_all_parts(&mut self.file, parts) {
            Ok(()) => {
                self.committed += total;
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

/// `write_all` for parts (std's `write_all_vectored` is not stable): writes until every part is
/// written, resuming a short write where it stopped.
fn write_all_parts(out: &mut impl Write, parts: &[&[u8]]) -> std::io::Result<()> {
    let mut slices: Vec<IoSlice<'_>> = parts.iter().map(|p| IoSlice::new(p)).collect();
    let mut rest = &mut slices[..];
    IoSlice::advance_slices(&mut rest, 0);
    while !rest.is_empty() {
        match out.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::write_all_parts;

    /// Takes at most 5 bytes a call, from the first part only (as a short `writev` may).
    struct Short(Vec<u8>);

    impl std::io::Write for Short {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let n = buf.len().min(5);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn parts_are_written_whole_and_in_order_across_short_writes() {
        let mut out = Short(Vec::new());
        let parts: [&[u8]; 4] = [b"first line\n", b"", b"2\n", b"the third one\n"];
        write_all_parts(&mut out, &parts).unwrap();
        assert_eq!(out.0, b"first line\n2\nthe third one\n");
    }
}
