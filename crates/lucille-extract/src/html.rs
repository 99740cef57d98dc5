//! HTML and XHTML with `scraper` (html5ever, the browsers' parsing algorithm, so broken markup
//! parses as a browser would): the text of `<body>` with block elements on their own lines,
//! scripts and styles left out; metadata from `<title>` and `<meta name=...>`. The charset is
//! the byte-order mark's, else a `<meta charset>` in the first kilobyte, else UTF-8 (bad
//! bytes become U+FFFD, never an error).

use scraper::{ElementRef, Html, Node, Selector};

use super::{ExtractError, Metadata, TextBuf, CONTENT_TYPE, CREATOR, TITLE};

/// The HTML elements that start a new line of extracted text (the common block elements).
/// ApplyJSoup treats these and a few more as word boundaries, as jsoup's `text()` does.
pub const BLOCK_ELEMENTS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "div",
    "dl",
    "dt",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tr",
    "ul",
];

/// The charset named by a `<meta charset=...>` or `content="...; charset=..."` near the start.
pub fn sniff_meta_charset(bytes: &[u8]) -> Option<&'static encoding_rs::Encoding> {
    let head = &bytes[..bytes.len().min(1024)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let at = lower.windows(8).position(|w| w == b"charset=")?;
    let rest = &lower[at + 8..];
    let rest = rest
        .strip_prefix(b"\"")
        .or_else(|| rest.strip_prefix(b"'"))
        .unwrap_or(rest);
    let end = rest
        .iter()
        .position(|c| !(c.is_ascii_alphanumeric() || b"-_:.".contains(c)))
        .unwrap_or(rest.len());
    encoding_rs::Encoding::for_label(&rest[..end])
}

pub(crate) fn decode(bytes: &[u8]) -> (String, &'static str) {
    if let Some((enc, bom)) = encoding_rs::Encoding::for_bom(bytes) {
        return (
            enc.decode_without_bom_handling(&bytes[bom..])
                .0
                .into_owned(),
            enc.name(),
        );
    }
    let enc = sniff_meta_charset(bytes).unwrap_or(encoding_rs::UTF_8);
    (
        enc.decode_without_bom_handling(bytes).0.into_owned(),
        enc.name(),
    )
}

pub(crate) fn extract_bytes(
    bytes: &[u8],
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let (text, charset) = decode(bytes);
    meta.set(CONTENT_TYPE, format!("text/html; charset={charset}"));
    extract_str(&text, out, meta);
    Ok(())
}

fn selector(s: &str) -> Option<Selector> {
    Selector::parse(s).ok()
}

/// Writes the text of an HTML page (also the chapters of an EPUB).
pub(crate) fn extract_str(html: &str, out: &mut TextBuf, meta: &mut Metadata) {
    let page = Html::parse_document(html);
    if let Some(sel) = selector("title") {
        if let Some(t) = page.select(&sel).next() {
            meta.set(TITLE, t.text().collect::<String>());
        }
    }
    if let Some(sel) = selector("meta[name][content]") {
        for m in page.select(&sel) {
            let (Some(name), Some(content)) = (m.value().attr("name"), m.value().attr("content"))
            else {
                continue;
            };
            match name.to_ascii_lowercase().as_str() {
                "author" => meta.set(CREATOR, content),
                "description" => meta.set("dc:description", content),
                "keywords" => meta.set("meta:keyword", content),
                _ => {}
            }
        }
    }
    let body = selector("body").and_then(|s| page.select(&s).next());
    match body {
        Some(b) => walk(b, false, out),
        None => walk(page.root_element(), false, out),
    }
    out.newline();
}

fn walk(el: ElementRef<'_>, pre: bool, out: &mut TextBuf) {
    for child in el.children() {
        if out.full() {
            return;
        }
        match child.value() {
            Node::Text(t) => {
                if pre {
                    out.push(t);
                } else {
                    let mut words = t.split_whitespace().peekable();
                    if t.starts_with(char::is_whitespace) && words.peek().is_some() {
                        out.space();
                    }
                    while let Some(w) = words.next() {
                        out.push(w);
                        if words.peek().is_some() {
                            out.push(" ");
                        }
                    }
                    if t.ends_with(char::is_whitespace) {
                        out.space();
                    }
                }
            }
            Node::Element(e) => {
                let name = e.name();
                if matches!(
                    name,
                    "script" | "style" | "template" | "noscript" | "head" | "title"
                ) {
                    continue;
                }
                let block = BLOCK_ELEMENTS.contains(&name);
                if block {
                    out.newline();
                } else if matches!(name, "td" | "th") {
                    out.space();
                }
                if let Some(ce) = ElementRef::wrap(child) {
                    walk(ce, pre || name == "pre" || name == "textarea", out);
                }
                if block {
                    out.newline();
                }
            }
            _ => {}
        }
    }
}
