//! Office Open XML (DOCX, PPTX; XLSX's properties): a ZIP of XML parts, read with `zip` and
//! streamed through `quick-xml` (`xmltext`). Text: DOCX's body (`w:t` runs; paragraphs, tabs
//! and breaks kept), then its footnotes and endnotes; PPTX's slides in order (`a:t` runs).
//! Metadata from `docProps/core.xml` (title, creator, created, modified) and
//! `docProps/app.xml` (pages, slides).

use std::io::{BufReader, Cursor};

use super::xmltext::{self, Rules};
use super::{ExtractError, Format, Metadata, TextBuf, CREATED, CREATOR, MODIFIED, PAGES, TITLE};

pub(crate) type Zip<'a> = zip::ZipArchive<Cursor<&'a [u8]>>;

pub(crate) fn open_zip(bytes: &[u8]) -> Result<Zip<'_>, ExtractError> {
    zip::ZipArchive::new(Cursor::new(bytes))
        .map_err(|e| ExtractError::new(Format::Zip.mime(), format!("corrupt ZIP archive: {e}")))
}

/// Streams one entry through the XML-to-text rules; a missing entry is `Ok(false)`.
pub(crate) fn entry_text(
    archive: &mut Zip<'_>,
    name: &str,
    rules: &Rules<'_>,
    out: &mut TextBuf,
    format: Format,
) -> Result<bool, ExtractError> {
    let entry = match archive.by_name(name) {
        Ok(e) => e,
        Err(zip::result::ZipError::FileNotFound) => return Ok(false),
        Err(e) => {
            return Err(ExtractError::new(
                format.mime(),
                format!("cannot read {name}: {e}"),
            ))
        }
    };
    xmltext::extract(BufReader::new(entry), rules, out)
        .map_err(|e| ExtractError::new(format.mime(), format!("{name}: {e}")))?;
    Ok(true)
}

/// The fields of a small XML entry (document properties), empty when absent or unreadable.
pub(crate) fn entry_fields(archive: &mut Zip<'_>, name: &str) -> Vec<(String, String)> {
    match archive.by_name(name) {
        Ok(entry) => xmltext::fields(BufReader::new(std::io::Read::take(entry, 1 << 20))),
        Err(_) => Vec::new(),
    }
}

/// `docProps/core.xml` and `docProps/app.xml` into Tika's names.
pub(crate) fn core_properties(archive: &mut Zip<'_>, meta: &mut Metadata) {
    for (name, value) in entry_fields(archive, "docProps/core.xml") {
        match name.as_str() {
            "title" => meta.set(TITLE, value),
            "creator" => meta.set(CREATOR, value),
            "created" => meta.set(CREATED, value),
            "modified" => meta.set(MODIFIED, value),
            "subject" => meta.set("dc:subject", value),
            "keywords" => meta.set("meta:keyword", value),
            "lastModifiedBy" => meta.set("meta:last-author", value),
            _ => {}
        }
    }
    for (name, value) in entry_fields(archive, "docProps/app.xml") {
        match name.as_str() {
            "Pages" | "Slides" => meta.set(PAGES, value),
            "Application" => meta.set("extended-properties:Application", value),
            _ => {}
        }
    }
}

const DOCX: Rules<'static> = Rules {
    text_in: &["t"],
    skip: &["instrText", "delText"],
    line_end: &["p"],
    word_end: &[],
    tab: &["tab"],
    line_break: &["br", "cr"],
    spaces: &[],
    within: None,
};

const PPTX: Rules<'static> = Rules {
    text_in: &["t"],
    skip: &[],
    line_end: &["p"],
    word_end: &[],
    tab: &[],
    line_break: &["br"],
    spaces: &[],
    within: None,
};

pub(crate) fn extract(
    kind: Format,
    archive: &mut Zip<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    core_properties(archive, meta);
    match kind {
        Format::Docx => {
            entry_text(archive, "word/document.xml", &DOCX, out, kind)?;
            for part in ["word/footnotes.xml", "word/endnotes.xml"] {
                if out.full() {
                    break;
                }
                out.newline();
                entry_text(archive, part, &DOCX, out, kind)?;
            }
        }
        Format::Pptx => {
            let mut slides: Vec<(u32, String)> = archive
                .file_names()
                .filter_map(|n| {
                    let num = n
                        .strip_prefix("ppt/slides/slide")?
                        .strip_suffix(".xml")?
                        .parse()
                        .ok()?;
                    Some((num, n.to_string()))
                })
                .collect();
            slides.sort();
            if meta.get(PAGES).is_none() {
                meta.set(PAGES, slides.len().to_string());
            }
            for (_, name) in slides {
                if out.full() {
                    break;
                }
                entry_text(archive, &name, &PPTX, out, kind)?;
                out.newline();
            }
        }
        _ => {}
    }
    Ok(())
}
