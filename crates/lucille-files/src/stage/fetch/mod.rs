//! Stages that fetch content into a document: `FetchUri` (an HTTP GET of a URL field),
//! `FetchFileContent` (a file's bytes) and `ApplyFileHandlers` (the FileConnector's CSV / JSON
//! / XML handlers run on a file named by the document, the records becoming its children).
//!
//! Fetched bytes are stored as Lucille stores `byte[]`: standard, padded base64 text, read back
//! with `Document::get_bytes` (Python: `base64.b64decode(doc.get("field"))`).

pub mod apply_file_handlers;
pub mod fetch_file_content;
pub mod fetch_uri;
pub(crate) mod files;

use std::path::PathBuf;

use super::StageFailure;

/// The local file a document's path value names: a plain path or a `file://` URI. Other
/// schemes are refused with a message saying so (object-store URLs go to `files::Files`
/// first).
pub(crate) fn local_path(value: &str) -> Result<PathBuf, StageFailure> {
    if let Some(rest) = value.strip_prefix("file://") {
        return Ok(PathBuf::from(rest));
    }
    if let Some((scheme, _)) = value.split_once("://") {
        if !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        {
            return Err(StageFailure::msg(format!(
                "{value:?} is a {scheme}:// location; the files read are local ones and \
                 s3://, gs:// and Azure blob URLs"
            )));
        }
    }
    Ok(PathBuf::from(value))
}
