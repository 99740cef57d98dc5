//! Plain text: UTF-8 or UTF-16 by byte-order mark, else UTF-8 when valid, else Windows-1252
//! (Tika's fallback for Latin text). Written through the bound without a second copy.

use super::{ExtractError, Metadata, TextBuf, CONTENT_TYPE};

pub(crate) fn extract(
    bytes: &[u8],
    out: &mut TextBuf,
    meta: &mut Metadata,
) -> Result<(), ExtractError> {
    let (enc, body) = match encoding_rs::Encoding::for_bom(bytes) {
        Some((enc, bom)) => (enc, &bytes[bom..]),
        None => match std::str::from_utf8(bytes) {
            Ok(_) => (encoding_rs::UTF_8, bytes),
            Err(_) => (encoding_rs::WINDOWS_1252, bytes),
        },
    };
    meta.set(CONTENT_TYPE, format!("text/plain; charset={}", enc.name()));
    if enc == encoding_rs::UTF_8 {
        match std::str::from_utf8(body) {
            Ok(s) => out.push(s),
            Err(_) => out.push(&String::from_utf8_lossy(body)),
        }
    } else {
        out.push(&enc.decode_without_bom_handling(body).0);
    }
    Ok(())
}
