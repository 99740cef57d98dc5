//! E-mail (RFC 822 / MIME, `.eml`) with `mail-parser` (MIME structure, encoded words,
//! charsets, quoted-printable / base64): the subject, then the text body (an HTML-only body
//! converted to text), then each attachment's text (extracted as a document of its own, one
//! level deep; an attachment that cannot be extracted is skipped with a note). Metadata as
//! Tika's: `dc:title` (subject), `dc:creator` and `Message-From` (sender), `Message-To`,
//! `Message-Cc`, `dcterms:created` (Date header), `Message:From-Email`, `Message:From-Name`.

use mail_parser::{Address, MessageParser, MimeHeaders};

use super::{ExtractError, Format, Metadata, Options, TextBuf, CREATED, CREATOR, TITLE};

fn addresses(a: Option<&Address<'_>>) -> Vec<String> {
    a.map(|a| {
        a.iter()
            .map(|addr| match (addr.name(), addr.address()) {
                (Some(n), Some(e)) => format!("{n} <{e}>"),
                (None, Some(e)) => e.to_string(),
                (Some(n), None) => n.to_string(),
                (None, None) => String::new(),
            })
            .filter(|s| !s.is_empty())
            .collect()
    })
    .unwrap_or_default()
}

pub(crate) fn extract(
    bytes: &[u8],
    options: &Options<'_>,
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let message = MessageParser::default()
        .parse(bytes)
        .ok_or_else(|| ExtractError::new(Format::Eml.mime(), "not a parsable e-mail message"))?;
    if let Some(subject) = message.subject() {
        meta.set(TITLE, subject);
        out.push(subject);
        out.push("\n\n");
    }
    let from = addresses(message.from());
    if let Some(first) = from.first() {
        meta.set(CREATOR, first.clone());
    }
    for f in &from {
        meta.add("Message-From", f.clone());
    }
    if let Some(addr) = message.from().and_then(|a| a.first()) {
        if let Some(e) = addr.address() {
            meta.set("Message:From-Email", e);
        }
        if let Some(n) = addr.name() {
            meta.set("Message:From-Name", n);
        }
    }
    for t in addresses(message.to()) {
        meta.add("Message-To", t);
    }
    for c in addresses(message.cc()) {
        meta.add("Message-Cc", c);
    }
    if let Some(d) = message.date() {
        meta.set(CREATED, d.to_rfc3339());
    }
    for i in 0..message.text_body_count().max(1) {
        if let Some(body) = message.body_text(i) {
            out.push(&body);
            out.newline();
        }
    }
    if options.depth >= 2 {
        return Ok(());
    }
    for part in message.attachments() {
        if out.full() {
            break;
        }
        let name = part.attachment_name().unwrap_or("attachment").to_string();
        let inner = Options {
            limit: out.remaining(),
            ocr: options.ocr,
            depth: options.depth + 1,
        };
        out.newline();
        match super::extract(part.contents(), &inner) {
            Ok(x) => {
                out.push(&x.text);
                meta.add("X-Attachment-Name", name);
            }
            Err(e) => {
                tracing::debug!("attachment {name:?} not extracted: {e}");
                meta.add("X-Attachment-Skipped", format!("{name}: {e}"));
            }
        }
    }
    Ok(())
}
