//! OpenDocument (ODT, ODS, ODP): `content.xml` streamed through `quick-xml` (`xmltext`),
//! text under `office:body` with paragraphs, headings, tabs, line breaks and `text:s` spaces
//! kept, cells separated. Metadata from `meta.xml`; an ODP's page count (its slides: LibreOffice
//! writes no `page-count` for presentations) from the `draw:page` elements of
//! `office:presentation`.

use std::io::BufReader;

use quick_xml::events::Event;

use super::ooxml::{entry_fields, entry_text, Zip};
use super::xmltext::Rules;
use super::{ExtractError, Format, Metadata, TextBuf, CREATED, CREATOR, MODIFIED, PAGES, TITLE};

const BODY: Rules<'static> = Rules {
    text_in: &[],
    // Annotations' author/date lines, and change-tracking deletions.
    skip: &["creator", "date", "tracked-changes", "note-citation"],
    line_end: &["p", "h", "table-row", "page"],
    word_end: &["table-cell"],
    tab: &["tab"],
    line_break: &["line-break"],
    spaces: &["s"],
    within: Some("body"),
};

pub(crate) fn extract(
    kind: Format,
    archive: &mut Zip<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let mut pages = None;
    for (name, value) in entry_fields(archive, "meta.xml") {
        match name.as_str() {
            "title" => meta.set(TITLE, value),
            "initial-creator" => meta.set(CREATOR, value),
            "creator" => meta.set("meta:last-author", value),
            "creation-date" => meta.set(CREATED, value),
            "date" => meta.set(MODIFIED, value),
            "subject" => meta.set("dc:subject", value),
            "keyword" => meta.add("meta:keyword", value),
            "document-statistic@page-count" => pages = Some(value),
            _ => {}
        }
    }
    // ODF writes dc:creator for the last author; with no initial creator it is the author.
    if meta.get(CREATOR).is_none() {
        if let Some(last) = meta.get("meta:last-author").map(str::to_string) {
            meta.set(CREATOR, last);
        }
    }
    if pages.is_none() && kind == Format::Odp {
        pages = odp_slides(archive).map(|n| n.to_string());
    }
    if let Some(p) = pages {
        meta.set(PAGES, p);
    }
    if !entry_text(archive, "content.xml", &BODY, out, kind)? {
        return Err(ExtractError::new(kind.mime(), "content.xml is missing"));
    }
    Ok(())
}

/// The number of slides of an ODP: `draw:page` children of `office:presentation` in
/// `content.xml`, streamed; `None` when the part is missing or unreadable.
fn odp_slides(archive: &mut Zip<'_>) -> Option<usize> {
    let entry = archive.by_name("content.xml").ok()?;
    let mut reader = quick_xml::Reader::from_reader(BufReader::new(entry));
    let mut buf = Vec::new();
    let (mut depth, mut slides_at, mut count) = (0usize, None, 0usize);
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Start(e)) => {
                let local = e.local_name();
                if slides_at == Some(depth) && local.as_ref() == b"page" {
                    count += 1;
                }
                if slides_at.is_none() && local.as_ref() == b"presentation" {
                    slides_at = Some(depth + 1);
                }
                depth += 1;
            }
            Ok(Event::Empty(e)) => {
                if slides_at == Some(depth) && e.local_name().as_ref() == b"page" {
                    count += 1;
                }
            }
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Eof) => break,
            Err(_) => return None,
            Ok(_) => {}
        }
        buf.clear();
    }
    slides_at.map(|_| count)
}
