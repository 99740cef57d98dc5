//! PDF with `lopdf` (parsing, decryption, the Info dictionary, page images) and `pdf-extract`
//! (text layout from the page content streams, fonts' encodings and ToUnicode maps). Pages
//! are extracted one at a time so the text limit stops the work early on a long document.
//! A PDF encrypted with a user password FAILs (no password is configured here); one with only
//! an owner password (the empty user password opens it) is read. With OCR configured, a page
//! with no text layer has its images recognised instead.

use lopdf::{Document, Object};

use super::{
    ExtractError, Format, Metadata, OcrError, Options, PageImage, TextBuf, CREATED, CREATOR,
    MODIFIED, PAGES, TITLE,
};

/// Why a page's images cannot be handed to OCR.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PageImageError {
    /// lopdf cannot list the page's images or read or decompress one.
    #[error(transparent)]
    Pdf(#[from] lopdf::Error),
    /// An image compressed with a filter that is not decoded here (JPX, JBIG2, CCITT fax).
    #[error("page image {id:?} is {}-compressed, which is not decoded here", .filters.join("+"))]
    Compression {
        id: lopdf::ObjectId,
        filters: Vec<String>,
    },
    /// An image whose width or height is negative.
    #[error("page image with a negative size")]
    NegativeSize,
    /// An image of a bit depth and channel count that is not decoded here.
    #[error(
        "page image with {bits} bits per component in {channels} channel(s) is not decoded here"
    )]
    Depth { bits: i64, channels: u8 },
    /// An image with fewer bytes than its size needs.
    #[error("page image data is short ({len} of {expected} bytes)")]
    Short { len: usize, expected: usize },
}

fn fail(reason: impl Into<String>) -> ExtractError {
    ExtractError::new(Format::Pdf.mime(), reason)
}

/// Loads and, for an owner-password-only file, decrypts a PDF.
pub fn load(bytes: &[u8]) -> Result<Document, ExtractError> {
    let mut doc = Document::load_mem(bytes).map_err(|e| {
        let msg = e.to_string();
        if msg.to_ascii_lowercase().contains("decrypt") || msg.contains("password") {
            fail(format!("encrypted PDF: it needs a password ({msg})"))
        } else {
            fail(format!("corrupt or unreadable PDF: {msg}"))
        }
    })?;
    if doc.is_encrypted() {
        doc.decrypt("").map_err(|e| {
            fail(format!(
                "encrypted PDF: it needs a password, which is not configured here ({e})"
            ))
        })?;
    }
    Ok(doc)
}

pub(crate) fn extract(
    bytes: &[u8],
    options: &Options<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let doc = load(bytes)?;
    info(&doc, meta);
    let pages = doc.get_pages();
    meta.set(PAGES, pages.len().to_string());
    let mut ocr_pages = 0usize;
    for (&number, &page_id) in &pages {
        if out.full() {
            break;
        }
        let mut text = String::new();
        {
            let mut sink = pdf_extract::PlainTextOutput::new(&mut text);
            pdf_extract::output_doc_page(&doc, &mut sink, number)
                .map_err(|e| fail(format!("page {number}: {e}")))?;
        }
        if text.trim().is_empty() {
            if let Some(ocr) = options.ocr {
                let recognised = ocr_page(&doc, page_id, ocr)
                    .map_err(|e| fail(format!("page {number}: OCR failed: {e}")))?;
                if !recognised.trim().is_empty() {
                    ocr_pages += 1;
                }
                text = recognised;
            }
        }
        push_page(out, &text);
    }
    if ocr_pages > 0 {
        meta.set("X-OCR-Pages", ocr_pages.to_string());
    }
    Ok(())
}

/// A page's text with trailing spaces and runs of blank lines removed (pdf-extract writes a
/// line of spaces for each positioned but empty text run), then a blank line.
fn push_page(out: &mut TextBuf, text: &str) {
    if text.trim().is_empty() {
        return;
    }
    let mut blank = true;
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            if !blank {
                out.push("\n");
            }
            blank = true;
            continue;
        }
        out.push(line);
        out.push("\n");
        blank = false;
    }
    out.newline();
    out.push("\n");
}

/// The images of a page, recognised one after the other.
pub(crate) fn ocr_page(
    doc: &Document,
    page_id: lopdf::ObjectId,
    ocr: &dyn super::PageOcr,
) -> Result<String, OcrError> {
    let mut text = String::new();
    for image in page_images(doc, page_id)? {
        let t = ocr.ocr(image)?;
        text.push_str(t.trim());
        text.push('\n');
    }
    Ok(text)
}

/// A page's images as OCR input: JPEG streams as they are, Flate / uncompressed gray, RGB,
/// CMYK and 1-bit images decoded to 8-bit pixels.
pub fn page_images(
    doc: &Document,
    page_id: lopdf::ObjectId,
) -> Result<Vec<PageImage<'_>>, OcrError> {
    read_page_images(doc, page_id).map_err(|e| OcrError::Image(e.to_string()))
}

fn read_page_images(
    doc: &Document,
    page_id: lopdf::ObjectId,
) -> Result<Vec<PageImage<'_>>, PageImageError> {
    let images = doc.get_page_images(page_id)?;
    let mut out = Vec::new();
    for image in images {
        let filters = image.filters.clone().unwrap_or_default();
        let page_image = if filters.iter().any(|f| f == "DCTDecode") {
            PageImage::Encoded(image.content)
        } else if filters
            .iter()
            .any(|f| f == "JPXDecode" || f == "JBIG2Decode" || f == "CCITTFaxDecode")
        {
            return Err(PageImageError::Compression {
                id: image.id,
                filters,
            });
        } else {
            let stream = doc.get_object(image.id).and_then(Object::as_stream)?;
            let data = if filters.is_empty() {
                stream.content.clone()
            } else {
                stream.decompressed_content()?
            };
            let channels: u8 = match image.color_space.as_deref() {
                Some("DeviceRGB") | Some("CalRGB") => 3,
                Some("DeviceCMYK") => 4,
                _ => 1,
            };
            let (Ok(width), Ok(height)) = (u32::try_from(image.width), u32::try_from(image.height))
            else {
                return Err(PageImageError::NegativeSize);
            };
            let bpc = image.bits_per_component.unwrap_or(8);
            let data = match (bpc, channels) {
                (8, 1) | (8, 3) => data,
                (8, 4) => cmyk_to_rgb(&data),
                (1, 1) => unpack_bits(&data, width, height),
                _ => {
                    return Err(PageImageError::Depth {
                        bits: bpc,
                        channels,
                    })
                }
            };
            let channels = if channels == 4 { 3 } else { channels };
            let expected = width as usize * height as usize * channels as usize;
            if data.len() < expected {
                return Err(PageImageError::Short {
                    len: data.len(),
                    expected,
                });
            }
            PageImage::Raw {
                width,
                height,
                channels,
                data,
            }
        };
        out.push(page_image);
    }
    Ok(out)
}

fn cmyk_to_rgb(data: &[u8]) -> Vec<u8> {
    data.chunks_exact(4)
        .flat_map(|p| {
            let k = 255 - u16::from(p[3]);
            let f = |c: u8| ((255 - u16::from(c)) * k / 255) as u8;
            [f(p[0]), f(p[1]), f(p[2])]
        })
        .collect()
}

/// 1-bit rows (each padded to a byte) to 8-bit gray; PDF's default decode: 0 is black.
fn unpack_bits(data: &[u8], width: u32, height: u32) -> Vec<u8> {
    let row = (width as usize).div_ceil(8);
    let mut out = Vec::with_capacity(width as usize * height as usize);
    for r in 0..height as usize {
        let Some(bits) = data.get(r * row..(r + 1) * row) else {
            break;
        };
        for x in 0..width as usize {
            let on = bits[x / 8] & (0x80 >> (x % 8)) != 0;
            out.push(if on { 255 } else { 0 });
        }
    }
    out
}

/// The Info dictionary's title, author and dates.
fn info(doc: &Document, meta: &mut Metadata) {
    let Some(dict) = doc.trailer.get(b"Info").ok().and_then(|o| match o {
        Object::Reference(id) => doc.get_dictionary(*id).ok(),
        Object::Dictionary(d) => Some(d),
        _ => None,
    }) else {
        return;
    };
    let text = |key: &[u8]| -> Option<String> {
        let obj = dict.get(key).ok()?;
        let obj = match obj {
            Object::Reference(id) => doc.get_object(*id).ok()?,
            o => o,
        };
        match obj {
            Object::String(bytes, _) => Some(text_string(bytes)),
            _ => None,
        }
    };
    if let Some(t) = text(b"Title") {
        meta.set(TITLE, t);
    }
    if let Some(a) = text(b"Author") {
        meta.set(CREATOR, a);
    }
    if let Some(d) = text(b"CreationDate") {
        meta.set(CREATED, pdf_date(&d).unwrap_or(d));
    }
    if let Some(d) = text(b"ModDate") {
        meta.set(MODIFIED, pdf_date(&d).unwrap_or(d));
    }
    if let Some(p) = text(b"Producer") {
        meta.set("pdf:producer", p);
    }
    if let Some(s) = text(b"Subject") {
        meta.set("dc:subject", s);
    }
}

/// A PDF text string: UTF-16BE with a byte-order mark, UTF-8 with one, else PDFDocEncoding
/// (Latin-1 for the printable range).
fn text_string(bytes: &[u8]) -> String {
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        let units: Vec<u16> = rest
            .chunks_exact(2)
            .map(|c| u16::from_be_bytes([c[0], c[1]]))
            .collect();
        return String::from_utf16_lossy(&units);
    }
    if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF") {
        return String::from_utf8_lossy(rest).into_owned();
    }
    bytes.iter().map(|&b| char::from(b)).collect()
}

/// `D:YYYYMMDDHHmmSSOHH'mm'` to ISO-8601 (`2024-01-02T03:04:05Z` / `+01:00`).
fn pdf_date(s: &str) -> Option<String> {
    let s = s.strip_prefix("D:").unwrap_or(s);
    let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
    if digits.len() < 4 {
        return None;
    }
    let part = |from: usize, len: usize, default: &str| -> String {
        digits
            .get(from..from + len)
            .map(str::to_string)
            .unwrap_or_else(|| default.to_string())
    };
    let rest = &s[digits.len()..];
    let zone = match rest.chars().next() {
        Some('Z') | None => "Z".to_string(),
        Some(sign @ ('+' | '-')) => {
            let z: String = rest[1..].chars().filter(char::is_ascii_digit).collect();
            let hh = z.get(0..2).unwrap_or("00");
            let mm = z.get(2..4).unwrap_or("00");
            format!("{sign}{hh}:{mm}")
        }
        Some(_) => "Z".to_string(),
    };
    Some(format!(
        "{}-{}-{}T{}:{}:{}{zone}",
        part(0, 4, "0000"),
        part(4, 2, "01"),
        part(6, 2, "01"),
        part(8, 2, "00"),
        part(10, 2, "00"),
        part(12, 2, "00"),
    ))
}

#[cfg(test)]
mod tests {
    use super::PageImageError;

    #[test]
    fn page_image_error_messages_are_exact() {
        let e = PageImageError::Compression {
            id: (5, 0),
            filters: vec!["JBIG2Decode".into(), "FlateDecode".into()],
        };
        assert_eq!(
            e.to_string(),
            "page image (5, 0) is JBIG2Decode+FlateDecode-compressed, which is not decoded here"
        );
        assert_eq!(
            PageImageError::NegativeSize.to_string(),
            "page image with a negative size"
        );
        assert_eq!(
            PageImageError::Depth {
                bits: 4,
                channels: 3
            }
            .to_string(),
            "page image with 4 bits per component in 3 channel(s) is not decoded here"
        );
        assert_eq!(
            PageImageError::Short {
                len: 10,
                expected: 12
            }
            .to_string(),
            "page image data is short (10 of 12 bytes)"
        );
        let lopdf = lopdf::Error::ObjectNotFound((7, 0));
        let want = lopdf.to_string();
        assert_eq!(PageImageError::from(lopdf).to_string(), want);
    }

    #[test]
    fn pdf_dates_become_iso() {
        assert_eq!(
            super::pdf_date("D:20240102030405+01'30'").as_deref(),
            Some("2024-01-02T03:04:05+01:30")
        );
        assert_eq!(
            super::pdf_date("D:20240102").as_deref(),
            Some("2024-01-02T00:00:00Z")
        );
        assert_eq!(super::pdf_date("garbage"), None);
    }
}
