//! Streaming XML-to-text for the XML inside office documents (DOCX, PPTX, ODF): events are
//! read one at a time (never a DOM), text is written to a bounded [`TextBuf`] and reading stops
//! once it is full, so a zip bomb's huge part costs no memory.

use std::io::BufRead;

use quick_xml::encoding::EncodingError;
use quick_xml::events::{BytesRef, Event};
use quick_xml::Reader;

use super::TextBuf;

/// Why the text of an XML part cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XmlTextError {
    /// The XML is not well-formed; `position` is the byte offset of the error.
    #[error("malformed XML at byte {position}: {source}")]
    Malformed {
        position: u64,
        #[source]
        source: quick_xml::Error,
    },
    /// A text node is not in the part's encoding.
    #[error("text is not valid UTF-8: {0}")]
    Text(#[source] EncodingError),
    /// A CDATA section is not in the part's encoding.
    #[error("CDATA is not valid UTF-8: {0}")]
    CData(#[source] EncodingError),
}

/// Which elements carry text and which break lines; names are local (no namespace prefix).
#[derive(Default)]
pub(crate) struct Rules<'a> {
    /// Only text inside one of these is kept (`t` in DOCX / PPTX); empty: any text.
    pub text_in: &'a [&'a str],
    /// Text inside these is dropped.
    pub skip: &'a [&'a str],
    /// The end of one of these ends a line (paragraphs, rows, headings).
    pub line_end: &'a [&'a str],
    /// Cells: a tab separates one from the one before it on its line; paragraphs inside a
    /// cell are separated by spaces, not lines.
    pub word_end: &'a [&'a str],
    pub tab: &'a [&'a str],
    pub line_break: &'a [&'a str],
    /// ODF's `<text:s text:c="N"/>`: N spaces.
    pub spaces: &'a [&'a str],
    /// Only text inside this element counts (ODF's `office:body`).
    pub within: Option<&'a str>,
}

fn is(list: &[&str], name: &[u8]) -> bool {
    list.iter().any(|n| n.as_bytes() == name)
}

pub(crate) fn entity(r: &BytesRef<'_>) -> Option<String> {
    if let Ok(Some(c)) = r.resolve_char_ref() {
        return Some(c.to_string());
    }
    let name = r.decode().ok()?;
    quick_xml::escape::resolve_xml_entity(&name).map(str::to_string)
}

/// Writes the text of the XML in `input` to `out` following `rules`.
pub(crate) fn extract<R: BufRead>(
    input: R,
    rules: &Rules<'_>,
    out: &mut TextBuf,
) -> Result<(), XmlTextError> {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    let mut text_depth = 0usize;
    let mut skip_depth = 0usize;
    let mut within_depth = usize::from(rules.within.is_none());
    let mut cell_depth = 0usize;
    // A paragraph ended inside a cell: a space before the cell's next text.
    let mut cell_space = false;
    let keep = |text_depth: usize, skip_depth: usize, within_depth: usize| {
        within_depth > 0 && skip_depth == 0 && (rules.text_in.is_empty() || text_depth > 0)
    };
    while !out.full() {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|source| XmlTextError::Malformed {
                position: reader.error_position(),
                source,
            })?;
        match event {
            Event::Start(ref e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if rules.within.is_some_and(|w| w.as_bytes() == name) {
                    within_depth += 1;
                }
                if is(rules.skip, name) {
                    skip_depth += 1;
                }
                if is(rules.text_in, name) {
                    text_depth += 1;
                }
                if is(rules.word_end, name) {
                    if cell_depth == 0
                        && within_depth > 0
                        && !out.as_str().is_empty()
                        && !out.as_str().ends_with('\n')
                    {
                        out.push("\t");
                    }
                    cell_depth += 1;
                    cell_space = false;
                }
            }
            Event::Empty(ref e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if within_depth == 0 || skip_depth > 0 {
                } else if is(rules.tab, name) {
                    out.push("\t");
                } else if is(rules.line_break, name) {
                    out.push("\n");
                } else if is(rules.spaces, name) {
                    let n = e
                        .attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == b"c")
                        .and_then(|a| std::str::from_utf8(&a.value).ok()?.parse::<usize>().ok())
                        .unwrap_or(1);
                    for _ in 0..n.min(1024) {
                        out.push(" ");
                    }
                } else if is(rules.line_end, name) && cell_depth == 0 {
                    out.newline();
                } else if is(rules.word_end, name) && !out.as_str().ends_with('\n') {
                    out.push("\t");
                }
            }
            Event::End(ref e) => {
                let name = e.local_name();
                let name = name.as_ref();
                if is(rules.text_in, name) {
                    text_depth = text_depth.saturating_sub(1);
                }
                if is(rules.skip, name) {
                    skip_depth = skip_depth.saturating_sub(1);
                }
                if is(rules.word_end, name) {
                    cell_depth = cell_depth.saturating_sub(1);
                    cell_space = false;
                }
                if within_depth > 0 && skip_depth == 0 && is(rules.line_end, name) {
                    if cell_depth > 0 {
                        cell_space = true;
                    } else {
                        out.newline();
                    }
                }
                if rules.within.is_some_and(|w| w.as_bytes() == name) {
                    within_depth = within_depth.saturating_sub(1);
                }
            }
            Event::Text(ref t) if keep(text_depth, skip_depth, within_depth) => {
                let text = t.xml10_content().map_err(XmlTextError::Text)?;
                if cell_space && !text.trim().is_empty() {
                    out.space();
                    cell_space = false;
                }
                out.push(&text);
            }
            Event::CData(ref c) if keep(text_depth, skip_depth, within_depth) => {
                let text = c.decode().map_err(XmlTextError::CData)?;
                out.push(&text);
            }
            Event::GeneralRef(ref g) if keep(text_depth, skip_depth, within_depth) => {
                if let Some(text) = entity(g) {
                    out.push(&text);
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(())
}

/// The elements of a small XML part (document properties): each element's local name with its
/// own text, and each attribute as `element@attribute`, in document order.
pub(crate) fn fields<R: BufRead>(input: R) -> Vec<(String, String)> {
    let mut reader = Reader::from_reader(input);
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut stack: Vec<(String, String)> = Vec::new();
    while let Ok(event) = reader.read_event_into(&mut buf) {
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                for a in e.attributes().flatten() {
                    let key = String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned();
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map(|v| v.into_owned())
                        .unwrap_or_default();
                    out.push((format!("{name}@{key}"), value));
                }
                if matches!(event, Event::Start(_)) {
                    stack.push((name, String::new()));
                }
            }
            Event::Text(ref t) => {
                if let (Some(top), Ok(text)) = (stack.last_mut(), t.xml10_content()) {
                    top.1.push_str(&text);
                }
            }
            Event::GeneralRef(ref g) => {
                if let (Some(top), Some(text)) = (stack.last_mut(), entity(g)) {
                    top.1.push_str(&text);
                }
            }
            Event::End(_) => {
                if let Some((name, text)) = stack.pop() {
                    if !text.trim().is_empty() {
                        out.push((name, text));
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
        if out.len() > 10_000 {
            break;
        }
    }
    out
}
