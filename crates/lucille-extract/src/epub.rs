//! EPUB: a ZIP whose `META-INF/container.xml` names the package (OPF) file; the package's
//! Dublin Core metadata gives title, creator and date, its spine the chapters in reading
//! order, each an XHTML file whose text is extracted as HTML (`html`). Read with `zip`,
//! `quick-xml` and `scraper`.

use std::collections::HashMap;
use std::io::{BufReader, Read};

use quick_xml::events::Event;
use quick_xml::Reader;

use super::ooxml::{entry_fields, Zip};
use super::{ExtractError, Format, Metadata, TextBuf, CREATED, CREATOR, TITLE};

/// Chapters are read whole into memory (they are parsed as HTML); larger ones are refused.
const MAX_CHAPTER_BYTES: u64 = 64 << 20;

struct Package {
    manifest: HashMap<String, String>,
    spine: Vec<String>,
}

fn read_package(xml: &[u8], meta: &mut Metadata) -> Package {
    let mut reader = Reader::from_reader(xml);
    let mut buf = Vec::new();
    let mut manifest = HashMap::new();
    let mut spine = Vec::new();
    let mut current: Option<String> = None;
    let mut text = String::new();
    while let Ok(event) = reader.read_event_into(&mut buf) {
        match event {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let name = e.local_name();
                let attr = |key: &[u8]| {
                    e.attributes()
                        .flatten()
                        .find(|a| a.key.local_name().as_ref() == key)
                        .and_then(|a| {
                            a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                                .ok()
                                .map(|v| v.into_owned())
                        })
                };
                match name.as_ref() {
                    b"item" => {
                        if let (Some(id), Some(href)) = (attr(b"id"), attr(b"href")) {
                            manifest.insert(id, href);
                        }
                    }
                    b"itemref" => {
                        if let Some(id) = attr(b"idref") {
                            spine.push(id);
                        }
                    }
                    b"title" | b"creator" | b"date" | b"language" | b"publisher" => {
                        if matches!(event, Event::Start(_)) {
                            current = Some(String::from_utf8_lossy(name.as_ref()).into_owned());
                            text.clear();
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(ref t) if current.is_some() => {
                if let Ok(s) = t.xml10_content() {
                    text.push_str(&s);
                }
            }
            Event::End(_) => {
                if let Some(name) = current.take() {
                    match name.as_str() {
                        "title" => meta.set(TITLE, text.clone()),
                        "creator" => meta.set(CREATOR, text.clone()),
                        "date" => meta.set(CREATED, text.clone()),
                        "language" => meta.set("dc:language", text.clone()),
                        "publisher" => meta.set("dc:publisher", text.clone()),
                        _ => {}
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Package { manifest, spine }
}

/// `dir/of/package.opf` + `chapter.xhtml` -> `dir/of/chapter.xhtml` (with `..` resolved).
fn join(base: &str, href: &str) -> String {
    let href = href.split('#').next().unwrap_or(href);
    let mut parts: Vec<&str> = match base.rfind('/') {
        Some(i) => base[..i].split('/').collect(),
        None => Vec::new(),
    };
    for p in href.split('/') {
        match p {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    percent_decode(&joined)
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

pub(crate) fn extract(
    archive: &mut Zip<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let fail = |r: String| ExtractError::new(Format::Epub.mime(), r);
    let opf_path = entry_fields(archive, "META-INF/container.xml")
        .into_iter()
        .find(|(n, _)| n == "rootfile@full-path")
        .map(|(_, v)| v)
        .ok_or_else(|| fail("META-INF/container.xml names no package (rootfile)".into()))?;
    let mut opf = Vec::new();
    archive
        .by_name(&opf_path)
        .map_err(|e| fail(format!("cannot read the package {opf_path}: {e}")))?
        .take(MAX_CHAPTER_BYTES)
        .read_to_end(&mut opf)
        .map_err(|e| fail(format!("cannot read the package {opf_path}: {e}")))?;
    let package = read_package(&opf, meta);
    let mut chapter_meta = Metadata::default();
    for id in &package.spine {
        if out.full() {
            break;
        }
        let Some(href) = package.manifest.get(id) else {
            continue;
        };
        let path = join(&opf_path, href);
        let entry = match archive.by_name(&path) {
            Ok(e) => e,
            Err(_) => continue,
        };
        let mut bytes = Vec::new();
        BufReader::new(entry)
            .take(MAX_CHAPTER_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| fail(format!("cannot read {path}: {e}")))?;
        let (html, _) = super::html::decode(&bytes);
        super::html::extract_str(&html, out, &mut chapter_meta);
    }
    Ok(())
}
