//! Column values as JSON and statement parameters, shared by the drivers.

use base64::Engine;
use chrono::NaiveDate;
use serde_json::{Number, Value};

/// A statement parameter, typed as Lucille's `inputTypes` name it.
#[derive(Debug, Clone, PartialEq)]
pub enum Param {
    Str(String),
    Int(i32),
    Long(i64),
    Double(f64),
    Bool(bool),
    Date(NaiveDate),
}

/// The rows a lookup found: lower-cased column labels, then each row's values (SQL NULL as
/// `Value::Null`, unsupported column types as `Value::Null` with a warning when prepared).
pub struct Found {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
}

/// Bytes (BLOB, BYTEA) as standard base64 text.
pub fn bytes(raw: &[u8]) -> Value {
    Value::String(base64::engine::general_purpose::STANDARD.encode(raw))
}

pub fn float(f: f64) -> Value {
    // NaN and infinities have no JSON number; their text keeps the value visible.
    Number::from_f64(f).map_or_else(|| Value::String(f.to_string()), Value::Number)
}

/// A REAL / float4 as the f64 with the same shortest decimal form (0.1f32 -> 0.1, not
/// 0.10000000149011612).
pub fn float32(f: f32) -> Value {
    match f.to_string().parse::<f64>() {
        Ok(d) => float(d),
        Err(_) => float(f64::from(f)),
    }
}

/// A NUMERIC / DECIMAL given as decimal text: a JSON number when it has at most 15
/// significant digits (an f64 then reproduces the same decimal exactly), else the exact text
/// (e.g. 12345678901234567890.12 or NaN), so no digit is silently lost.
pub fn decimal(text: &str) -> Value {
    let digits = text.trim_start_matches(['-', '+']);
    let (int_part, frac_part) = digits.split_once('.').unwrap_or((digits, ""));
    let all: String = format!("{int_part}{frac_part}");
    let significant = all.trim_start_matches('0');
    // Trailing zeros after the point carry no value; trailing zeros of the integer part do
    // not need precision either (1e20 is exact in f64 up to 15 leading digits).
    let significant = significant.trim_end_matches('0');
    let plain = !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if plain && significant.len() <= 15 {
        if let Ok(f) = text.parse::<f64>() {
            if f.is_finite() {
                return float(f);
            }
        }
    }
    Value::String(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decimals_keep_every_digit() {
        assert_eq!(decimal("12.50"), json!(12.5));
        assert_eq!(decimal("-0.001"), json!(-0.001));
        assert_eq!(decimal("123456789012345"), json!(123456789012345.0));
        assert_eq!(decimal("100000000000000000000"), json!(1e20));
        assert_eq!(
            decimal("12345678901234567890.12"),
            json!("12345678901234567890.12")
        );
        assert_eq!(decimal("0.1234567890123456"), json!("0.1234567890123456"));
        assert_eq!(decimal("NaN"), json!("NaN"));
    }

    #[test]
    fn floats_and_bytes() {
        assert_eq!(float32(0.1), json!(0.1));
        assert_eq!(float(f64::NAN), json!("NaN"));
        assert_eq!(bytes(b"\x00\xffab"), json!("AP9hYg=="));
    }
}
