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

use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::Document;
use crate::stage::text_extractor::{ocr_from_config, OutputSettings};
use lucille_extract::tesseract::SharedOcr;
use lucille_extract::{self as extract, Options};

fn spec() -> Spec {
    Spec::new()
        .optional("textField", Kind::String)
        .optional("metadataPrefix", Kind::String)
        .optional("fieldNamesField", Kind::String)
        .optional("whitelist", Kind::StringList)
        .optional("blacklist", Kind::StringList)
        .optional("textContentLimit", Kind::Integer)
        .alias("maxLength", "textContentLimit")
        .optional("extensions", Kind::StringList)
        .optional("ocrLang", Kind::String)
}

pub struct DocumentsHandler {
    output: OutputSettings,
    /// Lower-case extensions without the dot; `None`: every file no other handler takes.
    extensions: Option<HashSet<String>>,
    ocr: Option<SharedOcr>,
}

impl DocumentsHandler {
    pub fn from_config(config: &ComponentConfig) -> Result<Self, Vec<ConfigError>> {
        let spec = spec();
        let mut map = config.map().clone();
        spec.normalize(&mut map);
        let errors = spec.validate(&map, config.path());
        if !errors.is_empty() {
            return Err(errors);
        }
        let config = ComponentConfig::new(map, config.path().to_string());
        let output = OutputSettings::from_config(&config).map_err(|e| vec![e])?;
        let extensions = config
            .string_list("extensions")
            .map_err(|e| vec![e])?
            .map(|list| {
                list.iter()
                    .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
                    .collect()
            });
        let ocr = ocr_from_config(&config).map_err(|e| vec![e])?;
        Ok(DocumentsHandler {
            output,
            extensions,
            ocr,
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
    ) -> Result<(), String> {
        let limit = max_bytes.unwrap_or(u64::MAX);
        let mut bytes = Vec::new();
        input
            .take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read: {e}"))?;
        if bytes.len() as u64 > limit {
            return Err(format!(
                "the file is larger than maxDocumentBytes ({limit}); not read"
            ));
        }
        let options = Options {
            limit: self.output.limit,
            ocr: self.ocr.as_ref().map(|o| o as &dyn extract::PageOcr),
            depth: 0,
        };
        let extracted =
            extract::extract(&bytes, &options).map_err(|e| format!("cannot extract text: {e}"))?;
        self.output
            .write(doc, extracted.text, &extracted.metadata)
            .map_err(|e| e.to_string())
    }
}
