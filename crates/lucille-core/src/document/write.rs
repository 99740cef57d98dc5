//! Writing a document's JSON.
//!
//! serde_json escapes strings one byte at a time through a lookup table; strings are most of a
//! document's bytes, and that loop was the largest single item (~8% of a whole run's CPU) of
//! the JSONL sink's encoding under perf. [`write_value`] writes the same bytes as
//! `serde_json::to_writer` (a test checks it on generated values), scanning strings sixteen
//! bytes at a time (SSE2 on x86_64, eight with SWAR elsewhere) for the three kinds of byte
//! that need escaping and copying the runs between them whole; numbers are written by
//! serde_json itself.

use serde_json::Value;

#[cfg(any(test, not(target_arch = "x86_64")))]
const LO: u64 = 0x0101_0101_0101_0101;
#[cfg(any(test, not(target_arch = "x86_64")))]
const HI: u64 = 0x8080_8080_8080_8080;

/// Whether any byte of `x` may be a control character (< 0x20), a quote or a backslash. Never
/// misses one; may flag a clean word (then it is checked byte by byte).
#[cfg(any(test, not(target_arch = "x86_64")))]
#[inline]
fn may_need_escape(x: u64) -> bool {
    let control = x.wrapping_sub(LO * 0x20) & !x;
    let q = x ^ (LO * u64::from(b'"'));
    let quote = q.wrapping_sub(LO) & !q;
    let b = x ^ (LO * u64::from(b'\\'));
    let backslash = b.wrapping_sub(LO) & !b;
    (control | quote | backslash) & HI != 0
}

/// The escape of a byte that needs one, as serde_json writes it.
#[inline]
fn escape(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        b => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[inline]
fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// The index of the first byte at or after `from` that needs escaping, or `bytes.len()`.
#[inline]
fn next_escape(bytes: &[u8], from: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        // Sixteen bytes at a time with SSE2 (part of every x86_64 CPU); the last partial block
        // as the string's last sixteen bytes, overlapping what was checked (a padded copy on
        // the stack stalled every load on store forwarding: over half this function's time
        // under perf). Strings are most of a document's bytes; the eight-byte SWAR loop cost
        // ~5 instructions a byte (callgrind). Short strings (most keys) go byte by byte.
        let len = bytes.len();
        let mut i = from;
        while i + 16 <= len {
            let mask = sse2::escape_mask(&bytes[i..i + 16]);
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += 16;
        }
        if i >= len {
            return len;
        }
        if len >= 16 {
            // Bytes before i (the block's first i - (len - 16)) were checked already.
            let mask = sse2::escape_mask(&bytes[len - 16..]) >> (i - (len - 16));
            return if mask != 0 {
                i + mask.trailing_zeros() as usize
            } else {
                len
            };
        }
        bytes[i..]
            .iter()
            .position(|&b| needs_escape(b))
            .map_or(len, |k| i + k)
    }
    #[cfg(not(target_arch = "x86_64"))]
    next_escape_swar(bytes, from)
}

/// [`next_escape`] eight bytes at a time in a `u64` (other architectures; tests compare the
/// two).
#[cfg(any(test, not(target_arch = "x86_64")))]
fn next_escape_swar(bytes: &[u8], from: usize) -> usize {
    let mut i = from;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        if may_need_escape(u64::from_le_bytes(word)) {
            break;
        }
        i += 8;
    }
    bytes[i..]
        .iter()
        .position(|&b| needs_escape(b))
        .map_or(bytes.len(), |k| i + k)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };

    /// Bit k set when `block[k]` is a quote, a backslash or a byte <= 0x1F.
    #[inline]
    pub fn escape_mask(block: &[u8]) -> u32 {
        assert!(block.len() >= 16);
        // SAFETY: SSE2 is in the x86_64 baseline; the load reads block[..16], in bounds by the
        // assert, and `loadu` has no alignment requirement.
        let mask = unsafe {
            let v = _mm_loadu_si128(block.as_ptr().cast::<__m128i>());
            let control = _mm_set1_epi8(0x1f);
            let hits = _mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
                _mm_cmpeq_epi8(_mm_max_epu8(v, control), control),
            );
            _mm_movemask_epi8(hits)
        };
        mask as u32
    }
}

/// A JSON string literal for `s`.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    loop {
        let at = next_escape(bytes, start);
        out.extend_from_slice(&bytes[start..at]);
        match bytes.get(at) {
            Some(&b) => {
                escape(out, b);
                start = at + 1;
            }
            None => break,
        }
    }
    out.push(b'"');
}

/// An object's entries (a JSON object's, or a document's fields) as compact JSON, as
/// [`write_value`] writes an object.
pub fn write_object<'a>(out: &mut Vec<u8>, entries: impl Iterator<Item = (&'a String, &'a Value)>) {
    out.push(b'{');
    for (i, (k, v)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_value(out, v);
    }
    out.push(b'}');
}

/// `value` as compact JSON, byte for byte as `serde_json::to_writer` writes it.
pub fn write_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => {
            // Writing into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, n);
        }
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(out, v);
            }
            out.push(b']');
        }
        Value::Object(map) => write_object(out, map.iter()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn ours(v: &Value) -> String {
        let mut out = Vec::new();
        write_value(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_as_serde_json_does() {
        let v = json!({
            "plain": "hello world, a longer run of text",
            "escapes": "q\"b\\n\nr\rt\tb\u{8}f\u{c}nul\u{0}us\u{1f}del\u{7f}",
            "unicode": "é — 日本語 😀 \u{2028}",
            "edges": ["", "\"", "\\\\\\\\\\\\\\\\\"", "12345678\n", "1234567\n8"],
            "nums": [0, -1, 1.5, 1e300, 123456789012345678u64, -0.0],
            "nested": {"a": [null, true, false, {"b": []}], "": {}}
        });
        assert_eq!(ours(&v), serde_json::to_string(&v).unwrap());
    }

    #[test]
    fn every_escape_is_found_wherever_it_falls_in_a_sixteen_byte_block() {
        for special in [
            "\"", "\\", "\u{0}", "\n", "\u{1f}", "\u{7f}", "é", "\u{2028}", " ",
        ] {
            for at in 0..40usize {
                for len in [at, at + 1, 33, 48] {
                    let s: String = (0..len.max(at))
                        .map(|i| if i == at { special } else { "a" })
                        .collect::<String>()
                        + &"b".repeat(len.saturating_sub(at));
                    for from in [0, at / 2, at] {
                        assert_eq!(
                            next_escape(s.as_bytes(), from),
                            next_escape_swar(s.as_bytes(), from)
                        );
                    }
                    let v = Value::String(s);
                    assert_eq!(ours(&v), serde_json::to_string(&v).unwrap(), "{v}");
                }
            }
        }
    }

    fn arb_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            "[\\x00-\\x7f]{0,40}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((any::<String>(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn matches_serde_json_byte_for_byte(v in arb_json()) {
            prop_assert_eq!(ours(&v), serde_json::to_string(&v).unwrap());
        }
    }
}
