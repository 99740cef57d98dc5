//! What OpenNLP's behaviour inherits from Java: `DataInputStream` reading (big-endian numbers,
//! modified UTF-8 strings), strings as UTF-16 code units, and `Character`'s classification of a
//! `char` (one UTF-16 unit). Written by hand because the features a model was trained on are
//! built from these exact rules: a different notion of "letter" or "index" gives features the
//! model never saw.

use unicode_general_category::{get_general_category, GeneralCategory};

use crate::error::{corrupt, Result};

/// A `java.io.DataInputStream` over a model entry's bytes. Every read checks the bounds.
pub(crate) struct DataInput<'a> {
    bytes: &'a [u8],
    pos: usize,
    entry: &'a str,
}

impl<'a> DataInput<'a> {
    pub(crate) fn new(bytes: &'a [u8], entry: &'a str) -> Self {
        DataInput {
            bytes,
            pos: 0,
            entry,
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        match end {
            Some(end) => {
                let slice = &self.bytes[self.pos..end];
                self.pos = end;
                Ok(slice)
            }
            None => Err(corrupt(
                self.entry,
                format!("ends early (at byte {})", self.pos),
            )),
        }
    }

    /// The bytes not read yet: an upper bound for any count the data declares.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    pub(crate) fn read_int(&mut self) -> Result<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count (`readInt`) that must be non-negative; each counted item takes at least
    /// `min_item_bytes`, so a count larger than the rest of the data is corrupt (and never
    /// allocated).
    pub(crate) fn read_count(&mut self, what: &str, min_item_bytes: usize) -> Result<usize> {
        let n = self.read_int()?;
        let n = usize::try_from(n)
            .map_err(|_| corrupt(self.entry, format!("negative {what} count {n}")))?;
        if n.saturating_mul(min_item_bytes) > self.remaining() {
            return Err(corrupt(
                self.entry,
                format!("{what} count {n} exceeds the data"),
            ));
        }
        Ok(n)
    }

    pub(crate) fn read_double(&mut self) -> Result<f64> {
        let b = self.take(8)?;
        Ok(f64::from_be_bytes([
            b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
        ]))
    }

    /// `readUTF`: a two-byte length, then modified UTF-8 (NUL as two bytes, supplementary
    /// characters as two encoded surrogates), decoded to UTF-16 units.
    pub(crate) fn read_utf16(&mut self) -> Result<Vec<u16>> {
        let len = self.take(2)?;
        let len = usize::from(u16::from_be_bytes([len[0], len[1]]));
        let data = self.take(len)?;
        let mut out = Vec::with_capacity(len);
        let mut i = 0;
        let bad = |i: usize| {
            corrupt(
                self.entry,
                format!("malformed modified UTF-8 at byte {i} of a string"),
            )
        };
        while i < data.len() {
            let a = u16::from(data[i]);
            if a & 0x80 == 0 {
                out.push(a);
                i += 1;
            } else if a & 0xE0 == 0xC0 {
                let b = u16::from(*data.get(i + 1).ok_or_else(|| bad(i))?);
                if b & 0xC0 != 0x80 {
                    return Err(bad(i));
                }
                out.push(((a & 0x1F) << 6) | (b & 0x3F));
                i += 2;
            } else if a & 0xF0 == 0xE0 {
                let b = u16::from(*data.get(i + 1).ok_or_else(|| bad(i))?);
                let c = u16::from(*data.get(i + 2).ok_or_else(|| bad(i))?);
                if b & 0xC0 != 0x80 || c & 0xC0 != 0x80 {
                    return Err(bad(i));
                }
                out.push(((a & 0x0F) << 12) | ((b & 0x3F) << 6) | (c & 0x3F));
                i += 3;
            } else {
                return Err(bad(i));
            }
        }
        Ok(out)
    }

    /// `readUTF` as a Rust string (an unpaired surrogate becomes U+FFFD, as it does for every
    /// feature string we build, so lookups agree).
    pub(crate) fn read_utf(&mut self) -> Result<String> {
        Ok(String::from_utf16_lossy(&self.read_utf16()?))
    }
}

/// A Java string's UTF-16 units.
pub(crate) fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// `Character.getType(char)`: a lone surrogate unit is `Surrogate`.
pub(crate) fn category(unit: u16) -> GeneralCategory {
    match char::from_u32(u32::from(unit)) {
        Some(c) => get_general_category(c),
        None => GeneralCategory::Surrogate,
    }
}

/// `Character.isLetter(char)`.
pub(crate) fn is_letter(unit: u16) -> bool {
    matches!(
        category(unit),
        GeneralCategory::UppercaseLetter
            | GeneralCategory::LowercaseLetter
            | GeneralCategory::TitlecaseLetter
            | GeneralCategory::ModifierLetter
            | GeneralCategory::OtherLetter
    )
}

/// `Character.isUpperCase(char)`: Lu or Other_Uppercase, which is Rust's `is_uppercase`.
pub(crate) fn is_upper_case(unit: u16) -> bool {
    char::from_u32(u32::from(unit)).is_some_and(char::is_uppercase)
}

/// `Character.isDigit(char)`.
pub(crate) fn is_digit(unit: u16) -> bool {
    category(unit) == GeneralCategory::DecimalNumber
}

/// OpenNLP's `StringUtil.isWhitespace(char)`: `Character.isWhitespace` (a space, line or
/// paragraph separator other than the no-break spaces, or one of the ASCII controls
/// \t \n \u000B \f \r \u001C-\u001F) or any space separator (the no-break spaces included).
pub(crate) fn is_whitespace(unit: u16) -> bool {
    matches!(unit, 0x09..=0x0D | 0x1C..=0x1F)
        || matches!(
            category(unit),
            GeneralCategory::SpaceSeparator
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
}

/// OpenNLP's `StringUtil.toLowerCase`: `Character.toLowerCase` per code point, the simple
/// mapping (Rust's `to_lowercase` is the full one, which differs only for U+0130).
pub(crate) fn to_lower_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\u{130}' {
            out.push('i');
            continue;
        }
        let mut lower = c.to_lowercase();
        match (lower.next(), lower.next()) {
            (Some(l), None) => out.push(l),
            _ => out.push(c),
        }
    }
    out
}

/// `Boolean.parseBoolean`.
pub(crate) fn parse_boolean(s: &str) -> bool {
    s.eq_ignore_ascii_case("true")
}

/// `Integer.parseInt`: an optional sign and ASCII digits, nothing else.
pub(crate) fn parse_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `Double.compare(a, b)`: -0.0 below 0.0, NaN above everything and equal to itself.
pub(crate) fn double_compare(a: f64, b: f64) -> std::cmp::Ordering {
    let key = |x: f64| if x.is_nan() { f64::NAN } else { x };
    key(a).total_cmp(&key(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8_strings_decode_like_java() {
        // "aé€" plus NUL as C0 80 and U+1F600 as two 3-byte surrogates.
        let mut bytes = vec![0, 13, b'a', 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xC0, 0x80];
        bytes.extend([0xED, 0xA0, 0xBD]);
        let mut input = DataInput::new(&bytes, "t");
        assert!(input.read_utf().is_err(), "13 bytes declared, 11 present");
        bytes.extend([0xED, 0xB8, 0x80]);
        bytes[1] = 14;
        let mut input = DataInput::new(&bytes, "t");
        assert_eq!(input.read_utf().unwrap(), "aé€\0\u{1F600}");
    }

    #[test]
    fn counts_beyond_the_data_are_corrupt() {
        let bytes = [0x7F, 0xFF, 0xFF, 0xFF];
        assert!(DataInput::new(&bytes, "t")
            .read_count("outcome", 2)
            .is_err());
        let bytes = [0xFF, 0xFF, 0xFF, 0xFF];
        assert!(DataInput::new(&bytes, "t")
            .read_count("outcome", 2)
            .is_err());
    }

    #[test]
    fn character_classes() {
        assert!(is_letter(u16::from(b'a')) && !is_letter(u16::from(b'1')) && !is_letter(0xD800));
        assert!(
            is_whitespace(0xA0)
                && is_whitespace(0x2028)
                && is_whitespace(0x1F)
                && !is_whitespace(0x85)
        );
        assert_eq!(to_lower_case("İSTANBUL"), "istanbul");
        assert_eq!(double_compare(-0.0, 0.0), std::cmp::Ordering::Less);
        assert_eq!(parse_int("+3"), Some(3));
        assert_eq!(parse_int(" 3"), None);
    }
}
