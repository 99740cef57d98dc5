//! Compressed and archived input: a `.gz` file is read through a streaming decoder and handled
//! by its inner name (`rows.csv.gz` by the CSV handler); each file entry of a `.zip` is read in
//! turn as `archive.zip!entry/name` (Lucille's separator), by its own extension. Archives inside
//! archives are not opened (as Lucille).

use std::io::{BufRead, BufReader, Read, Seek};

use flate2::read::MultiGzDecoder;

use super::{FileConnector, FileMetadata, FileSource, Outcome, RecordSink, ARCHIVE_SEPARATOR};
use crate::connector::ConnectorError;
use crate::document::ids::md5_hex;

/// A buffered reader over the decompressed bytes of a gzip file.
pub(super) fn gunzip(file: impl Read) -> impl BufRead {
    BufReader::with_capacity(256 * 1024, MultiGzDecoder::new(BufReader::new(file)))
}

/// Reads every file entry of a zip archive. A corrupt archive or entry is a FAIL naming it; the
/// entries before it stay published.
pub(super) fn read_zip(
    connector: &FileConnector,
    file: impl Read + Seek,
    path: &str,
    metadata: &FileMetadata,
    sink: &mut dyn RecordSink,
) -> Result<Outcome, ConnectorError> {
    let fail = |sink: &mut dyn RecordSink, id_path: &str, reason: String| {
        let id = connector.common.doc_id(&md5_hex(id_path));
        sink.fail(id, reason)
            .map(|()| Outcome::Failed)
            .map_err(ConnectorError::from)
    };
    let mut archive = match zip::ZipArchive::new(BufReader::new(file)) {
        Ok(a) => a,
        Err(e) => return fail(sink, path, format!("{path}: cannot open zip archive: {e}")),
    };
    let mut outcome = Outcome::Done;
    for index in 0..archive.len() {
        let entry = match archive.by_index(index) {
            Ok(e) => e,
            Err(e) => {
                let entry_path = format!("{path}{ARCHIVE_SEPARATOR}#{index}");
                fail(
                    sink,
                    &entry_path,
                    format!("{path}: cannot read zip entry {index}: {e}"),
                )?;
                outcome = Outcome::Failed;
                continue;
            }
        };
        if !entry.is_file() {
            continue;
        }
        let entry_name = entry.name().to_string();
        let name = entry_name
            .rsplit('/')
            .next()
            .unwrap_or(&entry_name)
            .to_string();
        let source = FileSource {
            path: format!("{path}{ARCHIVE_SEPARATOR}{entry_name}"),
            name,
            max_bytes: connector.common.max_document_bytes,
        };
        let entry_metadata = FileMetadata {
            size: entry.size(),
            ..metadata.clone()
        };
        let mut input = BufReader::with_capacity(256 * 1024, entry);
        if let Outcome::Failed =
            connector.read_stream(&mut input, &source, &entry_metadata, sink)?
        {
            outcome = Outcome::Failed;
        }
    }
    Ok(outcome)
}
