//! Text and metadata extraction from documents (the engine behind `TextExtractor` and the
//! FileConnector's `documents` handler). The format is detected from the bytes (`detect`),
//! never only from a file name; each format family has its own file. Which library reads what,
//! and why, is in docs/EXTRACTION.md.
//!
//! Metadata uses Tika's names (`dc:title`, `dc:creator`, `dcterms:created`, `dcterms:modified`,
//! `xmpTPg:NPages`, `Content-Type`), so Lucille configs that filter on Tika's cleaned names
//! (`dc_title`, `content_type`, ...) keep working. The text is bounded: extraction stops once
//! `limit` characters are written (Tika's write limit), so a huge document never becomes a
//! huge string.

pub mod detect;
mod eml;
mod epub;
mod html;
mod odf;
mod ooxml;
pub mod pdf;
mod rtf;
mod spreadsheet;
pub mod tesseract;
mod text;
mod xmltext;

pub use detect::{detect, Format};
pub use html::{sniff_meta_charset, BLOCK_ELEMENTS};

pub const TITLE: &str = "dc:title";
pub const CREATOR: &str = "dc:creator";
pub const CREATED: &str = "dcterms:created";
pub const MODIFIED: &str = "dcterms:modified";
pub const PAGES: &str = "xmpTPg:NPages";
pub const CONTENT_TYPE: &str = "Content-Type";

/// Why a document could not be extracted; the message names the format and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{format}: {reason}")]
pub struct ExtractError {
    /// The detected content type (or "unknown").
    pub format: &'static str,
    pub reason: String,
}

impl ExtractError {
    pub fn new(format: &'static str, reason: impl Into<String>) -> Self {
        ExtractError {
            format,
            reason: reason.into(),
        }
    }
}

/// Extracted text with a character limit: past it, writes are dropped and `full` is true so
/// the extractors stop reading.
#[derive(Debug)]
pub struct TextBuf {
    text: String,
    /// Characters still allowed.
    left: usize,
    truncated: bool,
}

impl TextBuf {
    pub fn new(limit: usize) -> Self {
        TextBuf {
            text: String::new(),
            left: limit,
            truncated: false,
        }
    }

    /// True once the limit is reached (the extractor may stop).
    pub fn full(&self) -> bool {
        self.truncated || self.left == 0
    }

    /// Characters still allowed.
    pub fn remaining(&self) -> usize {
        self.left
    }

    pub fn truncated(&self) -> bool {
        self.truncated
    }

    pub fn push(&mut self, s: &str) {
        if s.is_empty() {
            return;
        }
        if self.left == 0 {
            self.truncated = true;
            return;
        }
        // Fast path: byte length bounds the character count.
        if s.len() <= self.left {
            self.text.push_str(s);
            self.left -= s.chars().count();
            return;
        }
        let mut taken = 0;
        for (i, _) in s.char_indices() {
            if taken == self.left {
                self.text.push_str(&s[..i]);
                self.left = 0;
                self.truncated = true;
                return;
            }
            taken += 1;
        }
        self.text.push_str(s);
        self.left -= taken;
    }

    pub fn push_char(&mut self, c: char) {
        let mut b = [0u8; 4];
        self.push(c.encode_utf8(&mut b));
    }

    /// Ends a line (paragraph, row): a newline unless the text is empty or already ends one.
    pub fn newline(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.push("\n");
        }
    }

    /// Separates words: a space unless the text is empty or ends in whitespace.
    pub fn space(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with(char::is_whitespace) {
            self.push(" ");
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn into_string(self) -> String {
        self.text
    }
}

/// Metadata in the order found, Tika's names; a name set twice keeps its first value.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Metadata {
    entries: Vec<(String, String)>,
}

impl Metadata {
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        let value = value.trim();
        if value.is_empty() || self.get(name).is_some() {
            return;
        }
        self.entries.push((name.to_string(), value.to_string()));
    }

    /// Adds another value of `name` (multi-valued metadata such as e-mail recipients).
    pub fn add(&mut self, name: &str, value: impl Into<String>) {
        let value = value.into();
        if !value.trim().is_empty() {
            self.entries
                .push((name.to_string(), value.trim().to_string()));
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn entries(&self) -> &[(String, String)] {
        &self.entries
    }
}

/// What extraction produced.
#[derive(Debug)]
pub struct Extracted {
    pub text: String,
    pub metadata: Metadata,
    pub format: Format,
    /// The text stopped at the limit.
    pub truncated: bool,
}

/// An image to recognise: a file's bytes (PNG, JPEG, TIFF, ...) or decoded 8-bit pixels (a
/// PDF's Flate-compressed page image), row by row, `channels` bytes a pixel.
pub enum PageImage<'a> {
    Encoded(&'a [u8]),
    Raw {
        width: u32,
        height: u32,
        channels: u8,
        data: Vec<u8>,
    },
}

/// Turns the image of a scanned page into text; given to extraction when OCR is configured.
pub trait PageOcr {
    /// Recognises the text of one image; `Err` carries the reason.
    fn ocr(&self, image: PageImage<'_>) -> Result<String, OcrError>;
}

/// Why OCR gave no text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OcrError {
    /// The engine cannot run here: libtesseract or the language's model is missing (the
    /// message says what to install).
    #[error("{0}")]
    Unavailable(String),
    /// The image cannot be read: undecodable, too large, or its pixel data short.
    #[error("{0}")]
    Image(String),
    /// The engine ran and returned no text.
    #[error("{0}")]
    Recognize(String),
}

/// How to extract.
#[derive(Default)]
pub struct Options<'a> {
    /// At most this many characters of text (`usize::MAX`: no limit).
    pub limit: usize,
    /// OCR for images and PDF pages without a text layer.
    pub ocr: Option<&'a dyn PageOcr>,
    /// How deep attachments are followed (e-mail attachments are extracted too).
    pub depth: u8,
}

impl Options<'_> {
    pub fn unlimited() -> Self {
        Options {
            limit: usize::MAX,
            ocr: None,
            depth: 0,
        }
    }
}

/// Extracts text and metadata from a document's bytes, the format detected from them. A
/// parser panic (the PDF crates are not hardened against every malformed file) is caught and
/// reported as an error, never taken down the worker.
pub fn extract(bytes: &[u8], options: &Options<'_>) -> Result<Extracted, ExtractError> {
    let format = detect(bytes);
    let mut out = TextBuf::new(options.limit);
    let mut metadata = Metadata::default();
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        extract_as(format, bytes, options, &mut out, &mut metadata)
    }));
    let format = match run {
        Ok(Ok(f)) => f,
        Ok(Err(e)) => return Err(e),
        Err(payload) => {
            return Err(ExtractError::new(
                format.mime(),
                format!(
                    "the parser failed on malformed input ({})",
                    lucille_panic::message(payload.as_ref())
                ),
            ))
        }
    };
    if metadata.get(CONTENT_TYPE).is_none() {
        metadata.set(CONTENT_TYPE, format.mime());
    }
    let truncated = out.truncated();
    Ok(Extracted {
        text: out.into_string(),
        metadata,
        format,
        truncated,
    })
}

/// Dispatches to the format's extractor; returns the refined format (a ZIP turns out to be a
/// DOCX, ...).
fn extract_as(
    format: Format,
    bytes: &[u8],
    options: &Options<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<Format, ExtractError> {
    match format {
        Format::Pdf => pdf::extract(bytes, options, out, meta).map(|()| format),
        Format::Zip => {
            let mut archive = ooxml::open_zip(bytes)?;
            let kind = detect::classify_zip(&mut archive);
            match kind {
                Format::Docx | Format::Pptx => ooxml::extract(kind, &mut archive, out, meta)?,
                Format::Xlsx => {
                    ooxml::core_properties(&mut archive, meta);
                    spreadsheet::extract(kind, bytes, out)?
                }
                Format::Odt | Format::Ods | Format::Odp => {
                    odf::extract(kind, &mut archive, out, meta)?
                }
                Format::Epub => epub::extract(&mut archive, out, meta)?,
                _ => {
                    return Err(ExtractError::new(
                        Format::Zip.mime(),
                        "a ZIP archive that is not a known document format (DOCX, XLSX, PPTX, \
                         ODT, ODS, ODP, EPUB); list the archive's folder in a FileConnector to \
                         read its entries",
                    ))
                }
            }
            Ok(kind)
        }
        Format::Ole => {
            // Legacy binary Office: only spreadsheets (XLS) are read.
            spreadsheet::extract(Format::Xls, bytes, out)
                .map_err(|_| {
                    ExtractError::new(
                        format.mime(),
                        "a legacy binary Office document (.doc / .ppt) is not supported; \
                         convert it to DOCX / PPTX / PDF",
                    )
                })
                .map(|()| Format::Xls)
        }
        Format::Rtf => rtf::extract(bytes, out, meta).map(|()| format),
        Format::Html => html::extract_bytes(bytes, out, meta).map(|()| format),
        Format::Eml => eml::extract(bytes, options, out, meta).map(|()| format),
        Format::Text => text::extract(bytes, out, meta).map(|()| format),
        Format::Image(_) => match options.ocr {
            Some(ocr) => {
                let text = ocr
                    .ocr(PageImage::Encoded(bytes))
                    .map_err(|e| ExtractError::new(format.mime(), format!("OCR failed: {e}")))?;
                out.push(&text);
                Ok(format)
            }
            None => Err(ExtractError::new(
                format.mime(),
                "an image has no text layer; configure ocr to recognise its text (see ApplyOCR)",
            )),
        },
        Format::Docx
        | Format::Xlsx
        | Format::Pptx
        | Format::Odt
        | Format::Ods
        | Format::Odp
        | Format::Epub
        | Format::Xls => Err(ExtractError::new(
            format.mime(),
            "internal: detected without its container",
        )),
        Format::Unknown => Err(ExtractError::new(
            format.mime(),
            format!(
                "not a known document format (binary content starting {})",
                hex_prefix(bytes)
            ),
        )),
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tika's field-name cleaning (as Lucille's TextExtractor): lower case, and ' ', '-', ':'
/// become '_'.
pub fn clean_name(name: &str) -> String {
    name.trim()
        .to_lowercase()
        .chars()
        .map(|c| if matches!(c, ' ' | '-' | ':') { '_' } else { c })
        .collect()
}

#[cfg(test)]
mod tests;
