//! Extraction of formats that can be written by hand here; the office formats are tested on
//! LibreOffice-generated files in tests/python/test_text_extraction.py.

use super::*;

fn run(bytes: &[u8]) -> Extracted {
    match extract(bytes, &Options::unlimited()) {
        Ok(x) => x,
        Err(e) => panic!("extraction failed: {e}"),
    }
}

#[test]
fn detects_by_content_not_name() {
    assert_eq!(detect(b"%PDF-1.7\n..."), Format::Pdf);
    assert_eq!(detect(b"{\\rtf1\\ansi hello}"), Format::Rtf);
    assert_eq!(detect(b"  <!DOCTYPE html><p>x"), Format::Html);
    assert_eq!(
        detect(b"<?xml version='1.0'?><html xmlns='x'>"),
        Format::Html
    );
    assert_eq!(
        detect(b"From: a@b.c\r\nTo: d@e.f\r\nSubject: hi\r\n\r\nbody"),
        Format::Eml
    );
    assert_eq!(detect(b"Just a note: nothing more.\n"), Format::Text);
    assert_eq!(detect(b"\x89PNG\r\n\x1a\n...."), Format::Image("image/png"));
    assert_eq!(detect(&[0u8, 1, 2, 3, 0, 0, 7, 8]), Format::Unknown);
}

#[test]
fn text_limit_cuts_at_a_character_boundary() {
    let mut t = TextBuf::new(3);
    t.push("héllo");
    assert!(t.full() && t.truncated());
    assert_eq!(t.as_str(), "hél");
}

#[test]
fn rtf_text_unicode_and_info() {
    let rtf = br"{\rtf1\ansi\ansicpg1252{\fonttbl{\f0 Times;}}{\info{\title My Title}{\author Ada Lovelace}{\creatim\yr2024\mo3\dy9\hr10\min5}}
{\*\generator Writer}\pard Caf\'e9 au lait\par Second \u8364?line\tab end\par}";
    let x = run(rtf);
    assert_eq!(x.text, "Café au lait\nSecond €line\tend\n");
    assert_eq!(x.metadata.get(TITLE), Some("My Title"));
    assert_eq!(x.metadata.get(CREATOR), Some("Ada Lovelace"));
    assert_eq!(x.metadata.get(CREATED), Some("2024-03-09T10:05:00"));
    assert_eq!(x.metadata.get(CONTENT_TYPE), Some("application/rtf"));
}

#[test]
fn eml_subject_body_headers() {
    let mail = b"From: Ada <ada@example.org>\r\nTo: bob@example.org\r\nSubject: =?UTF-8?Q?Caf=C3=A9?= plans\r\nDate: Tue, 1 Apr 2025 10:00:00 +0000\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nMeet at noon.\r\n";
    let x = run(mail);
    assert!(x.text.contains("Café plans"), "{}", x.text);
    assert!(x.text.contains("Meet at noon."), "{}", x.text);
    assert_eq!(
        x.metadata.get("Message:From-Email"),
        Some("ada@example.org")
    );
    assert_eq!(x.metadata.get("Message-To"), Some("bob@example.org"));
    assert_eq!(x.metadata.get(CREATED), Some("2025-04-01T10:00:00Z"));
}

#[test]
fn text_in_latin1_and_utf16() {
    let x = run(b"caf\xe9 cr\xe8me");
    assert_eq!(x.text, "café crème");
    let mut utf16 = vec![0xFF, 0xFE];
    for u in "hé".encode_utf16() {
        utf16.extend_from_slice(&u.to_le_bytes());
    }
    assert_eq!(run(&utf16).text, "hé");
}

#[test]
fn unknown_binary_and_images_without_ocr_fail_with_reason() {
    let e = extract(&[0u8, 159, 146, 150, 0, 1], &Options::unlimited()).unwrap_err();
    assert!(e.reason.contains("not a known document format"), "{e}");
    let e = extract(b"\x89PNG\r\n\x1a\n0000", &Options::unlimited()).unwrap_err();
    assert!(e.reason.contains("ocr"), "{e}");
}

#[test]
fn garbage_pdf_fails_without_panicking() {
    let e = extract(
        b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer <<>>\n%%EOF",
        &Options::unlimited(),
    )
    .unwrap_err();
    assert_eq!(e.format, "application/pdf");
}

#[test]
fn docx_written_by_hand() {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        let parts = [
            ("[Content_Types].xml", "<Types/>"),
            ("word/document.xml", "<w:document xmlns:w='w'><w:body><w:p><w:r><w:t>Hello</w:t></w:r><w:r><w:tab/><w:t xml:space='preserve'> big &amp; bold</w:t></w:r></w:p><w:p><w:r><w:t>Two</w:t></w:r></w:p></w:body></w:document>"),
            ("docProps/core.xml", "<cp:coreProperties xmlns:cp='c' xmlns:dc='d' xmlns:dcterms='t'><dc:title>T1</dc:title><dc:creator>Ann</dc:creator><dcterms:created>2025-01-01T00:00:00Z</dcterms:created></cp:coreProperties>"),
        ];
        for (name, body) in parts {
            z.start_file(name, opts).unwrap();
            z.write_all(body.as_bytes()).unwrap();
        }
        z.finish().unwrap();
    }
    let x = run(buf.get_ref());
    assert_eq!(x.format, Format::Docx);
    assert_eq!(x.text.trim_end(), "Hello\t big & bold\nTwo");
    assert_eq!(x.metadata.get(TITLE), Some("T1"));
    assert_eq!(x.metadata.get(CREATOR), Some("Ann"));
}

#[test]
fn odp_page_count_is_its_slides() {
    use std::io::Write;
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default();
        let slide = |t: &str| {
            format!("<draw:page draw:name='{t}'><draw:frame><draw:text-box><text:p>{t}</text:p></draw:text-box></draw:frame></draw:page>")
        };
        let content = format!(
            "<office:document-content xmlns:office='o' xmlns:draw='d' xmlns:text='t'><office:body><office:presentation>{}{}{}<draw:page draw:name='empty'/></office:presentation></office:body></office:document-content>",
            slide("One"),
            slide("Two"),
            slide("Three")
        );
        for (name, body) in [
            ("mimetype", "application/vnd.oasis.opendocument.presentation"),
            ("meta.xml", "<office:document-meta xmlns:office='o' xmlns:meta='m' xmlns:dc='dc'><office:meta><dc:title>Deck</dc:title><meta:document-statistic meta:object-count='6'/></office:meta></office:document-meta>"),
            ("content.xml", content.as_str()),
        ] {
            z.start_file(name, opts).unwrap();
            z.write_all(body.as_bytes()).unwrap();
        }
        z.finish().unwrap();
    }
    let x = run(buf.get_ref());
    assert_eq!(x.format, Format::Odp);
    assert_eq!(x.metadata.get(PAGES), Some("4"));
    assert_eq!(x.metadata.get(TITLE), Some("Deck"));
    assert!(
        x.text.contains("One") && x.text.contains("Three"),
        "{}",
        x.text
    );
}

#[test]
fn xml_text_error_messages_are_exact() {
    let mut out = TextBuf::new(usize::MAX);
    let rules = xmltext::Rules::default();
    let err = match xmltext::extract(&b"<a><b></a>"[..], &rules, &mut out) {
        Ok(()) => panic!("malformed XML was read"),
        Err(e) => e,
    };
    let xmltext::XmlTextError::Malformed { position, source } = &err else {
        panic!("not a malformed-XML error: {err:?}");
    };
    assert_eq!(
        err.to_string(),
        format!("malformed XML at byte {position}: {source}")
    );
    assert!(
        err.to_string().starts_with("malformed XML at byte "),
        "{err}"
    );
}
