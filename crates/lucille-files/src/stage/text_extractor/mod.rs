//! TextExtractor (Lucille's `com.kmwllc.lucille.tika.stage.TextExtractor`): extracts the text
//! and metadata of a document held in a field, as bytes (`byteArrayField`) or as a file path
//! (`filePathField`), with the Rust extractors of `stage::extract` in place of Apache Tika.
//! Formats are detected from the content: PDF, DOCX, XLSX, PPTX, ODT, ODS, ODP, RTF, HTML,
//! EPUB, EML, plain text (docs/EXTRACTION.md).
//!
//! Keys (Lucille's): exactly one of `byteArrayField` / `filePathField`; `textField` (default
//! `text`); `metadataPrefix` (default `tika`; metadata names are Tika's, cleaned as Lucille
//! does: lower case, ' ', '-', ':' to '_', e.g. `tika_dc_title`, `tika_content_type`);
//! `whitelist` / `blacklist` (cleaned metadata names to keep / drop); `fieldNamesField` (gets
//! each written metadata field's name); `textContentLimit` (at most this many characters of
//! text; `maxLength` is accepted as another name); `metadataFields` (`{ tikaKey: docField }`:
//! values copied into the metadata before extraction, e.g. `resourceName`). `ocrLang` (not
//! Lucille's, whose Tika configures OCR in tika-config.xml): Tesseract's language for images and
//! PDF pages without a text layer (see ApplyOCR).
//!
//! A `byteArrayField` holds bytes as base64 text (Lucille's JSON form of `byte[]`); a value
//! that is not base64 is taken as text (the FileConnector writes a UTF-8 file's content as
//! text by default; `contentFormat: "base64"` makes it always base64).
//!
//! Differences from Lucille: a document that cannot be extracted (encrypted, corrupt,
//! unsupported) FAILs with the reason, where Lucille logs a warning and writes empty text;
//! `tikaConfigPath` is read and accepted when it only selects parsers whose formats are
//! covered here (Lucille's examples' file does), else rejected; `fork`, `parseTimeout` and the
//! `s3` / `azure` / `gcp` blocks are rejected
//! with advice (there is no Tika, no JVM to fork; `worker.maxProcessingSecs` bounds a slow
//! document; a parser panic FAILs the document and never takes the worker down).

use std::collections::HashSet;

use serde_json::Value;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;
use lucille_extract as extract;
use lucille_extract::tesseract::{SharedOcr, Tesseract};

mod tika_config;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "TextExtractor",
    spec: TextExtractorOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Extracts the text and metadata of a document held in a field, as bytes (`byteArrayField`)
/// or as a file path (`filePathField`): PDF, Office, OpenDocument, RTF, HTML, EPUB, e-mail, text.
#[derive(Options)]
#[options(base = Spec::stage(), extend = unsupported_keys)]
struct TextExtractorOptions {
    /// Where the text and metadata go.
    #[option(flatten)]
    output: OutputOptions,
    /// The field holding the path of a local file to extract (or give byteArrayField).
    file_path_field: Option<String>,
    /// The field holding the document's bytes, as base64 (or text), e.g. "file_content" from
    /// the FileConnector (or give filePathField).
    byte_array_field: Option<String>,
    /// Tika metadata key to document field: the field's values go into the metadata before
    /// extraction (e.g. resourceName).
    metadata_fields: Option<Vec<(String, String)>>,
    /// Tesseract's language for images and PDF pages without a text layer (e.g. eng); default:
    /// no OCR.
    ocr_lang: Option<String>,
    /// Lucille's tika-config.xml: accepted when it only selects parsers whose formats are
    /// extracted here, else an error.
    tika_config_path: Option<String>,
}

/// Lucille's keys that have no equivalent here, each with what to do instead.
fn unsupported_keys(spec: Spec) -> Spec {
    spec.unsupported(
            "fork",
            "extraction runs in-process in Rust with no JVM to fork; a parser failure FAILs only its document; remove the block",
        )
        .unsupported(
            "parseTimeout",
            "use worker.maxProcessingSecs, which FAILs a document whose pipeline runs longer and replaces the worker",
        )
        .unsupported("s3", FETCH_REMOTE)
        .unsupported("azure", FETCH_REMOTE)
        .unsupported("gcp", FETCH_REMOTE)
        .unsupported("fetcherClass", FETCH_REMOTE)
}

/// `ocrLang` (not Lucille's: Tika's OCR is configured in tika-config.xml): recognise images
/// and PDF pages without a text layer with Tesseract in this language. A missing library or
/// model is a config error saying what to install.
pub(crate) fn ocr(
    config: &ComponentConfig,
    lang: Option<&str>,
) -> Result<Option<SharedOcr>, ConfigError> {
    match lang {
        None => Ok(None),
        Some(lang) => Tesseract::new(lang)
            .map(|t| Some(SharedOcr(std::sync::Arc::new(parking_lot::Mutex::new(t)))))
            .map_err(|e| config.error("ocrLang", e.to_string())),
    }
}

const FETCH_REMOTE: &str = "TextExtractor reads local paths only; read cloud storage with the FileConnector (its documents handler extracts text as it reads)";

/// What TextExtractor and the FileConnector's `documents` handler share: where the text
/// goes, how metadata is named and filtered, the limit.
#[derive(Debug, Clone)]
pub struct OutputSettings {
    pub text_field: String,
    pub metadata_prefix: String,
    pub field_names_field: Option<String>,
    pub whitelist: HashSet<String>,
    pub blacklist: HashSet<String>,
    pub limit: usize,
}

/// The keys of [`OutputSettings`], shared by TextExtractor and the `documents` handler.
#[derive(Options)]
pub struct OutputOptions {
    /// The field that gets the text.
    #[option(default = "text")]
    pub text_field: String,
    /// Put with `_` before each metadata field's name ("" for none).
    #[option(default = "tika")]
    pub metadata_prefix: String,
    /// The field that gets the name of each metadata field written.
    pub field_names_field: Option<String>,
    /// Metadata names (cleaned, without the prefix, e.g. dc_title) to keep; default: all.
    #[option(default)]
    pub whitelist: Vec<String>,
    /// Metadata names (cleaned, without the prefix) to drop.
    #[option(default)]
    pub blacklist: Vec<String>,
    /// At most this many characters of text (default: no limit).
    #[option(alias = "maxLength", min = 1)]
    pub text_content_limit: Option<usize>,
}

impl OutputOptions {
    /// The settings these keys give.
    pub fn settings(self) -> OutputSettings {
        OutputSettings {
            text_field: self.text_field,
            metadata_prefix: self.metadata_prefix,
            field_names_field: self.field_names_field,
            whitelist: self.whitelist.into_iter().collect(),
            blacklist: self.blacklist.into_iter().collect(),
            limit: self.text_content_limit.unwrap_or(usize::MAX),
        }
    }
}

impl OutputSettings {
    fn include(&self, clean: &str) -> bool {
        (self.whitelist.is_empty() || self.whitelist.contains(clean))
            && !self.blacklist.contains(clean)
    }

    /// Writes the text and the metadata as Lucille's TextExtractor does (`setOrAdd`).
    pub fn write(
        &self,
        doc: &mut Document,
        text: String,
        metadata: &extract::Metadata,
    ) -> Result<(), StageFailure> {
        doc.set_or_add(&self.text_field, Value::String(text))?;
        let mut named = HashSet::new();
        for (name, value) in metadata.entries() {
            let clean = extract::clean_name(name);
            if !self.include(&clean) {
                continue;
            }
            let field = if self.metadata_prefix.is_empty() {
                clean
            } else {
                format!("{}_{clean}", self.metadata_prefix)
            };
            if crate::document::is_reserved(&field) {
                continue;
            }
            doc.set_or_add(&field, Value::String(value.clone()))?;
            if let Some(names) = &self.field_names_field {
                if named.insert(field.clone()) {
                    doc.set_or_add(names, Value::String(field))?;
                }
            }
        }
        Ok(())
    }
}

enum Source {
    Bytes(String),
    Path(String),
}

struct TextExtractor {
    source: Source,
    output: OutputSettings,
    /// `metadataFields`: Tika metadata key -> document field.
    hints: Vec<(String, String)>,
    ocr: Option<SharedOcr>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = TextExtractorOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Some(path) = &o.tika_config_path {
        if let Err(e) = tika_config::check(config, path) {
            errors.push(e);
        }
    }
    let source = match (o.byte_array_field, o.file_path_field) {
        (Some(b), None) => Some(Source::Bytes(b)),
        (None, Some(p)) => Some(Source::Path(p)),
        (Some(_), Some(_)) => {
            errors.push(config.error(
                "filePathField",
                "give either filePathField or byteArrayField, not both",
            ));
            None
        }
        (None, None) => {
            errors.push(config.error(
                "byteArrayField",
                "is required (or filePathField): the field holding the document's bytes, e.g. \"file_content\" from the FileConnector",
            ));
            None
        }
    };
    let engine = match ocr(config, o.ocr_lang.as_deref()) {
        Ok(engine) => engine,
        Err(e) => {
            errors.push(e);
            None
        }
    };
    let Some(source) = source.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(TextExtractor {
        source,
        output: o.output.settings(),
        hints: o.metadata_fields.unwrap_or_default(),
        ocr: engine,
    }))
}

/// Bytes from a field: base64 (Lucille's form of `byte[]`), else the text's own bytes.
pub(crate) fn field_bytes(doc: &Document, field: &str) -> Result<Option<Vec<u8>>, StageFailure> {
    use base64::Engine;
    match doc.get_first(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(
            match base64::engine::general_purpose::STANDARD.decode(s) {
                Ok(b) if !s.is_empty() => b,
                _ => s.as_bytes().to_vec(),
            },
        )),
        Some(other) => Err(StageFailure::msg(format!(
            "field {field:?} of document {:?} must hold bytes (base64 text), found {other}",
            doc.id(),
        ))),
    }
}

impl Stage for TextExtractor {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let (bytes, what) = match &self.source {
            Source::Bytes(field) => match field_bytes(doc, field)? {
                Some(b) => (b, format!("field {field:?}")),
                None => return Ok(None),
            },
            Source::Path(field) => {
                let Some(path) = doc.get_string(field)? else {
                    return Ok(None);
                };
                let bytes = std::fs::read(&path).map_err(|e| {
                    StageFailure::msg(format!(
                        "cannot read {path:?} (field {field:?} of document {:?}): {e}",
                        doc.id()
                    ))
                })?;
                (bytes, format!("file {path:?}"))
            }
        };
        let options = extract::Options {
            limit: self.output.limit,
            ocr: self.ocr.as_ref().map(|o| o as &dyn extract::PageOcr),
            depth: 0,
        };
        let extracted = extract::extract(&bytes, &options).map_err(|e| {
            StageFailure::msg(format!(
                "cannot extract text from {what} of document {:?}: {e}",
                doc.id()
            ))
        })?;
        let mut metadata = extract::Metadata::default();
        for (key, field) in &self.hints {
            if key.eq_ignore_ascii_case(extract::CONTENT_TYPE) {
                continue;
            }
            for v in doc.get_string_list(field).unwrap_or_default() {
                metadata.add(key, v);
            }
        }
        for (name, value) in extracted.metadata.entries() {
            metadata.add(name, value.clone());
        }
        self.output.write(doc, extracted.text, &metadata)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::stage::testing::*;

    #[test]
    fn needs_exactly_one_source_and_rejects_tika_keys() {
        assert!(build_err(json!({ "class": "TextExtractor" })).contains("byteArrayField"));
        assert!(build_err(json!({
            "class": "TextExtractor", "byteArrayField": "a", "filePathField": "b"
        }))
        .contains("not both"));
        // Lucille's examples' tika-config.xml (only Tika's default and RFC 822 parsers) is
        // accepted; one that configures what has no equivalent here is not, nor a missing file.
        let dir = std::env::temp_dir().join(format!("lucille-tika-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let plain = dir.join("tika-config.xml");
        let _ = std::fs::write(
            &plain,
            r#"<?xml version="1.0" encoding="UTF-8"?>
<properties><parsers>
  <parser class="org.apache.tika.parser.DefaultParser"/>
  <parser class="org.apache.tika.parser.mail.RFC822Parser"/>
</parsers></properties>"#,
        );
        let fancy = dir.join("fancy.xml");
        let _ = std::fs::write(
            &fancy,
            r#"<properties><parsers><parser class="org.apache.tika.parser.DefaultParser">
  <mime-exclude>application/pdf</mime-exclude></parser></parsers></properties>"#,
        );
        let config = |p: &std::path::Path| json!({ "class": "TextExtractor", "byteArrayField": "a", "tikaConfigPath": p.to_string_lossy() });
        let _accepted = crate::stage::testing::build_stage(config(&plain));
        let e = build_err(config(&fancy));
        assert!(
            e.contains("tikaConfigPath") && e.contains("configures the parser"),
            "{e}"
        );
        let e = build_err(config(&dir.join("missing.xml")));
        assert!(e.contains("cannot read"), "{e}");
    }

    #[test]
    fn extracts_html_bytes_with_prefixed_filtered_metadata() {
        use base64::Engine;
        let html = "<html><head><title>Report</title><meta name=author content=Ada></head>\
                    <body><p>First paragraph.</p><script>var x;</script><p>Second</p></body></html>";
        let b64 = base64::engine::general_purpose::STANDARD.encode(html);
        let mut stage = build_stage(json!({
            "class": "com.kmwllc.lucille.tika.stage.TextExtractor",
            "byteArrayField": "file_content",
            "blacklist": ["dc_creator"],
            "fieldNamesField": "names"
        }));
        let doc = process(&mut stage, json!({ "id": "d", "file_content": b64 }));
        assert_eq!(
            doc.get_string("text").ok().flatten().as_deref(),
            Some("First paragraph.\nSecond\n")
        );
        assert_eq!(
            doc.get_string("tika_dc_title").ok().flatten().as_deref(),
            Some("Report")
        );
        assert!(!doc.has("tika_dc_creator"));
        assert!(doc
            .get_string("tika_content_type")
            .ok()
            .flatten()
            .unwrap_or_default()
            .starts_with("text/html"));
        let names = doc.get_string_list("names").unwrap_or_default();
        assert!(names.contains(&"tika_dc_title".to_string()), "{names:?}");
    }

    #[test]
    fn limit_bounds_the_text_and_a_corrupt_zip_fails_with_the_reason() {
        let mut stage = build_stage(json!({
            "class": "TextExtractor", "byteArrayField": "b", "maxLength": 5
        }));
        let doc = process(
            &mut stage,
            json!({ "id": "d", "b": "hello world, plain text" }),
        );
        assert_eq!(
            doc.get_string("text").ok().flatten().as_deref(),
            Some("hello")
        );
        use base64::Engine;
        let zip = base64::engine::general_purpose::STANDARD
            .encode(b"PK\x03\x04garbage that is not a zip");
        let e = process_err(&mut stage, json!({ "id": "z", "b": zip }));
        assert!(e.contains("corrupt ZIP"), "{e}");
    }
}
