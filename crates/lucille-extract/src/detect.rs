//! Content detection from the bytes (magic numbers and a look at the first kilobytes), as
//! Tika's MIME magic does; a ZIP container is classified by its entries.

use std::io::{Read, Seek};

/// A detected format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Pdf,
    /// A ZIP container not classified yet (see [`classify_zip`]).
    Zip,
    Docx,
    Xlsx,
    Pptx,
    Odt,
    Ods,
    Odp,
    Epub,
    /// An OLE2 compound file (legacy .doc / .xls / .ppt).
    Ole,
    Xls,
    Rtf,
    Html,
    Eml,
    Text,
    /// An image, by its MIME type.
    Image(&'static str),
    Unknown,
}

impl Format {
    pub fn mime(&self) -> &'static str {
        match self {
            Format::Pdf => "application/pdf",
            Format::Zip => "application/zip",
            Format::Docx => {
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
            }
            Format::Xlsx => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
            Format::Pptx => {
                "application/vnd.openxmlformats-officedocument.presentationml.presentation"
            }
            Format::Odt => "application/vnd.oasis.opendocument.text",
            Format::Ods => "application/vnd.oasis.opendocument.spreadsheet",
            Format::Odp => "application/vnd.oasis.opendocument.presentation",
            Format::Epub => "application/epub+zip",
            Format::Ole => "application/x-tika-msoffice",
            Format::Xls => "application/vnd.ms-excel",
            Format::Rtf => "application/rtf",
            Format::Html => "text/html",
            Format::Eml => "message/rfc822",
            Format::Text => "text/plain",
            Format::Image(m) => m,
            Format::Unknown => "application/octet-stream",
        }
    }
}

/// The format of `bytes`, from their content only.
pub fn detect(bytes: &[u8]) -> Format {
    let head = &bytes[..bytes.len().min(8192)];
    if head.starts_with(b"PK\x03\x04") || head.starts_with(b"PK\x05\x06") {
        return Format::Zip;
    }
    if head.starts_with(&[0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1]) {
        return Format::Ole;
    }
    // A PDF header may follow some junk; readers accept it within the first kilobyte.
    if memchr::memmem::find(&head[..head.len().min(1024)], b"%PDF-").is_some() {
        return Format::Pdf;
    }
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Format::Image("image/png");
    }
    if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        return Format::Image("image/jpeg");
    }
    if head.starts_with(b"II*\0") || head.starts_with(b"MM\0*") {
        return Format::Image("image/tiff");
    }
    if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        return Format::Image("image/gif");
    }
    if head.starts_with(b"BM") && head.len() > 14 && head[6..10] == [0, 0, 0, 0] {
        return Format::Image("image/bmp");
    }
    let text = skip_bom_and_space(head);
    if text.starts_with(b"{\\rtf") {
        return Format::Rtf;
    }
    if looks_like_html(text) {
        return Format::Html;
    }
    if looks_like_mail(text) {
        return Format::Eml;
    }
    if looks_like_text(head) {
        return Format::Text;
    }
    Format::Unknown
}

fn skip_bom_and_space(b: &[u8]) -> &[u8] {
    let b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    &b[start..]
}

fn starts_with_ignore_case(b: &[u8], prefix: &[u8]) -> bool {
    b.len() >= prefix.len() && b[..prefix.len()].eq_ignore_ascii_case(prefix)
}

fn looks_like_html(b: &[u8]) -> bool {
    if starts_with_ignore_case(b, b"<!doctype html") || starts_with_ignore_case(b, b"<html") {
        return true;
    }
    // XHTML, or a fragment opening with a comment / <head> / <body>.
    if b.first() == Some(&b'<') {
        let probe = &b[..b.len().min(1024)];
        let lower = probe.to_ascii_lowercase();
        return ["<html", "<head", "<body"]
            .iter()
            .any(|t| memchr::memmem::find(&lower, t.as_bytes()).is_some());
    }
    false
}

/// RFC 822 headers: the first line is a header, and at least two of the usual mail headers
/// appear before the first blank line.
fn looks_like_mail(b: &[u8]) -> bool {
    const HEADERS: &[&str] = &[
        "from",
        "to",
        "subject",
        "date",
        "message-id",
        "mime-version",
        "received",
        "return-path",
        "delivered-to",
        "cc",
        "reply-to",
        "content-type",
    ];
    let Ok(text) = std::str::from_utf8(&b[..b.len().min(4096)])
        .or_else(|e| std::str::from_utf8(&b[..e.valid_up_to()]))
    else {
        return false;
    };
    let mut known = 0;
    for (i, line) in text.lines().enumerate() {
        if line.is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            continue; // folded header
        }
        let Some((name, _)) = line.split_once(':') else {
            return false;
        };
        if name.is_empty() || !name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-') {
            return false;
        }
        if HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
            known += 1;
        }
        if i == 0 && known == 0 && !name.starts_with("X-") {
            // The first header of a mail is nearly always a known one (or an X- header).
            if !matches!(
                name.to_ascii_lowercase().as_str(),
                "received" | "return-path"
            ) {
                return false;
            }
        }
    }
    known >= 2
}

/// Text: UTF-16 with a BOM, or no NUL and few control bytes in the first kilobytes.
fn looks_like_text(head: &[u8]) -> bool {
    if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
        return true;
    }
    if head.is_empty() {
        return true;
    }
    let control = head
        .iter()
        .filter(|&&c| c < 0x20 && !matches!(c, b'\n' | b'\r' | b'\t' | 0x0C | 0x1B))
        .count();
    !head.contains(&0) && control * 100 <= head.len()
}

/// Classifies an opened ZIP by its entries: ODF and EPUB by their `mimetype` entry, OOXML by
/// its main part.
pub fn classify_zip<R: Read + Seek>(archive: &mut zip::ZipArchive<R>) -> Format {
    if let Ok(mut entry) = archive.by_name("mimetype") {
        let mut m = String::new();
        if (&mut entry).take(256).read_to_string(&mut m).is_ok() {
            match m.trim() {
                "application/vnd.oasis.opendocument.text" => return Format::Odt,
                "application/vnd.oasis.opendocument.spreadsheet" => return Format::Ods,
                "application/vnd.oasis.opendocument.presentation" => return Format::Odp,
                "application/epub+zip" => return Format::Epub,
                _ => {}
            }
        }
    }
    let has = |a: &zip::ZipArchive<R>, name: &str| a.index_for_name(name).is_some();
    if has(archive, "word/document.xml") {
        Format::Docx
    } else if has(archive, "xl/workbook.xml") {
        Format::Xlsx
    } else if has(archive, "ppt/presentation.xml") {
        Format::Pptx
    } else if has(archive, "META-INF/container.xml") {
        Format::Epub
    } else {
        Format::Zip
    }
}
