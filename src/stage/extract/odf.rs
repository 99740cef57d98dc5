//! OpenDocument (ODT, ODS, ODP): `content.xml` streamed through `quick-xml` (`xmltext`),
//! text under `office:body` with paragraphs, headings, tabs, line breaks and `text:s` spaces
//! kept, cells separated. Metadata from `meta.xml`.

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
    if let Some(p) = pages {
        meta.set(PAGES, p);
    }
    if !entry_text(archive, "content.xml", &BODY, out, kind)? {
        return Err(ExtractError::new(kind.mime(), "content.xml is missing"));
    }
    Ok(())
}
