//! The `documents` file handler: text and metadata extraction as the FileConnector reads, so a
//! folder of mixed documents (PDF, Office, OpenDocument, RTF, HTML, EPUB, e-mail, text)
//! indexes with one config and no pipeline stage:
//!
//! ```hocon
//! fileHandlers { documents { metadataPrefix: "", textContentLimit: 1000000 } }
//! ```
//!
//! Each file becomes one document, as without a handler (`file_path`, `file_name`,
//! `file_size_bytes`, `file_modification_date`, `file_creation_date`; id = md5 of the path),
//! with the extracted text and metadata in place of `file_content`, written exactly as
//! TextExtractor writes them (its keys: `textField`, `metadataPrefix`, `whitelist`,
//! `blacklist`, `fieldNamesField`, `textContentLimit` / `maxLength`, `ocrLang`). `extensions` (optional)
//! limits the handler to those file extensions; by default it takes every file that no other
//! handler claims. The format is detected from the content, not the extension. A file that
//! cannot be extracted is a FAIL with its path and the reason; the rest goes on. Lucille has
//! no such handler (it runs Tika as a stage); this is the one-config form of FileConnector +
//! TextExtractor.

use std::collections::HashSet;
use std::io::Read;

use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::document::Document;
use crate::stage::text_extractor::{ocr, OutputOptions, OutputSettings};
use crate::stage::StageFailure;
use lucille_extract as extract;
use lucille_extract::tesseract::SharedOcr;

/// Extracts the text and metadata of each file as the FileConnector reads it (TextExtractor's
/// keys): one document per file.
#[derive(Options)]
struct DocumentsOptions {
    /// Where the text and metadata go.
    #[option(flatten)]
    output: OutputOptions,
    /// The file extensions (without the dot) it extracts; default: every file no other handler
    /// takes.
    extensions: Option<Vec<String>>,
    /// Tesseract's language for images and PDF pages without a text layer (e.g. eng); default:
    /// no OCR.
    ocr_lang: Option<String>,
}

/// Why a file gives no document ([`DocumentsHandler::fill`]): the reason it FAILs.
#[derive(Debug, thiserror::Error)]
pub enum FillError {
    #[error("cannot read: {0}")]
    Read(#[source] std::io::Error),
    /// The file has more than `limit` bytes (maxDocumentBytes).
    #[error("the file is larger than maxDocumentBytes ({limit}); not read")]
    TooLarge { limit: u64 },
    #[error("cannot extract text: {0}")]
    Extract(#[source] extract::ExtractError),
    /// The text or metadata cannot be written to the document.
    #[error(transparent)]
    Write(#[from] StageFailure),
}

pub struct DocumentsHandler {
    output: OutputSettings,
    /// Lower-case extensions without the dot; `None`: every file no other handler takes.
    extensions: Option<HashSet<String>>,
    ocr: Option<SharedOcr>,
}

impl DocumentsHandler {
    /// The handler of its block (`fileHandlers.documents`, aliases normalised).
    pub fn from_config(config: &ComponentConfig) -> Result<Self, ConfigErrors> {
        let o = DocumentsOptions::from_config(config)?;
        Ok(DocumentsHandler {
            output: o.output.settings(),
            extensions: o.extensions.map(|list| {
                list.iter()
                    .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                    .collect()
            }),
            ocr: ocr(config, o.ocr_lang.as_deref())?,
        })
    }

    /// Whether a file with this extension is extracted (given no other handler took it).
    pub fn takes(&self, extension: Option<&str>) -> bool {
        match (&self.extensions, extension) {
            (None, _) => true,
            (Some(set), Some(e)) => set.contains(e),
            (Some(_), None) => false,
        }
    }

    /// Reads the file (at most `max_bytes`) and adds its text and metadata to `doc`, the
    /// whole-file document; `Err` is the reason it FAILs.
    pub fn fill(
        &self,
        input: &mut dyn Read,
        max_bytes: Option<u64>,
        doc: &mut Document,
    ) -> Result<(), FillError> {
        let limit = max_bytes.unwrap_or(u64::MAX);
        let mut bytes = Vec::new();
        input
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(FillError::Read)?;
        if bytes.len() as u64 > limit {
            return Err(FillError::TooLarge { limit });
        }
        let options = extract::Options {
            limit: self.output.limit,
            ocr: self.ocr.as_ref().map(|o| o as &dyn extract::PageOcr),
            depth: 0,
        };
        let extracted = extract::extract(&bytes, &options).map_err(FillError::Extract)?;
        self.output
            .write(doc, extracted.text, &extracted.metadata)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::FillError;

    #[test]
    fn fill_errors_read_as_fail_reasons() {
        assert_eq!(
            FillError::TooLarge { limit: 10 }.to_string(),
            "the file is larger than maxDocumentBytes (10); not read"
        );
        let read = FillError::Read(std::io::Error::other("disk gone"));
        assert_eq!(read.to_string(), "cannot read: disk gone");
        assert!(std::error::Error::source(&read).is_some());
        assert_eq!(
            FillError::Extract(lucille_extract::ExtractError::new(
                "application/pdf",
                "no xref"
            ))
            .to_string(),
            "cannot extract text: application/pdf: no xref"
        );
    }
}
