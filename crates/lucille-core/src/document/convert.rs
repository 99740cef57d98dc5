//! Lucille's typed reads: a field's first value converted to a Rust type following JSON text
//! (a number read as a string is its JSON text, a numeric string read as a number is parsed).
//!
//! A conversion either fails because the value has the wrong shape (an object read as an int:
//! [`Mismatch::Type`]) or because its content does not convert (`"abc"` read as an int:
//! [`Mismatch::Content`]). Lucille returns a default in both cases; we report them.

use serde_json::{Number, Value};

pub enum Mismatch {
    Type { expected: &'static str },
    Content { expected: &'static str },
}

/// A type a field value can be read as.
pub trait FromField: Sized {
    const NAME: &'static str;
    /// Converts one non-null JSON value.
    fn from_field(value: &Value) -> Result<Self, Mismatch>;
}

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_f64() => "a float",
        Value::Number(_) => "an integer",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl FromField for String {
    const NAME: &'static str = "a string";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        match value {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            _ => Err(Mismatch::Type {
                expected: Self::NAME,
            }),
        }
    }
}

fn float_to_int(f: f64) -> Option<i128> {
    // Truncates toward zero as Lucille's numeric reads do; refuses what no integer can hold.
    if f.is_finite() && f.abs() < 1.7e38 {
        Some(f.trunc() as i128)
    } else {
        None
    }
}

fn number_to_i128(n: &Number) -> Option<i128> {
    if let Some(i) = n.as_i64() {
        Some(i128::from(i))
    } else if let Some(u) = n.as_u64() {
        Some(i128::from(u))
    } else {
        n.as_f64().and_then(float_to_int)
    }
}

fn int_from_value(value: &Value, expected: &'static str) -> Result<i128, Mismatch> {
    match value {
        Value::Number(n) => number_to_i128(n).ok_or(Mismatch::Content { expected }),
        Value::Bool(b) => Ok(i128::from(*b)),
        Value::String(s) => {
            let t = s.trim();
            if let Ok(i) = t.parse::<i128>() {
                return Ok(i);
            }
            t.parse::<f64>()
                .ok()
                .and_then(float_to_int)
                .ok_or(Mismatch::Content { expected })
        }
        _ => Err(Mismatch::Type { expected }),
    }
}

impl FromField for i128 {
    const NAME: &'static str = "an integer";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        int_from_value(value, Self::NAME)
    }
}

impl FromField for i64 {
    const NAME: &'static str = "a 64-bit integer";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        let i = int_from_value(value, Self::NAME)?;
        i64::try_from(i).map_err(|_| Mismatch::Content {
            expected: Self::NAME,
        })
    }
}

impl FromField for i32 {
    const NAME: &'static str = "a 32-bit integer";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        let i = int_from_value(value, Self::NAME)?;
        i32::try_from(i).map_err(|_| Mismatch::Content {
            expected: Self::NAME,
        })
    }
}

impl FromField for f64 {
    const NAME: &'static str = "a float";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        match value {
            Value::Number(n) => n.as_f64().ok_or(Mismatch::Content {
                expected: Self::NAME,
            }),
            Value::Bool(b) => Ok(if *b { 1.0 } else { 0.0 }),
            Value::String(s) => s
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .ok_or(Mismatch::Content {
                    expected: Self::NAME,
                }),
            _ => Err(Mismatch::Type {
                expected: Self::NAME,
            }),
        }
    }
}

impl FromField for f32 {
    const NAME: &'static str = "a float";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        f64::from_field(value).map(|f| f as f32)
    }
}

impl FromField for bool {
    const NAME: &'static str = "a boolean";
    fn from_field(value: &Value) -> Result<Self, Mismatch> {
        match value {
            Value::Bool(b) => Ok(*b),
            Value::Number(n) => Ok(n.as_f64().is_some_and(|f| f != 0.0)),
            Value::String(s) => {
                let t = s.trim();
                if t.eq_ignore_ascii_case("true") {
                    Ok(true)
                } else if t.eq_ignore_ascii_case("false") {
                    Ok(false)
                } else {
                    Err(Mismatch::Content {
                        expected: Self::NAME,
                    })
                }
            }
            _ => Err(Mismatch::Type {
                expected: Self::NAME,
            }),
        }
    }
}

/// JSON number for an f32, written with the f32's shortest decimal form so a vector stored as
/// JSON reads `0.1`, not `0.10000000149011612`, and reads back as the same f32.
pub fn f32_to_value(f: f32) -> Option<Value> {
    if !f.is_finite() {
        return None;
    }
    let shortest: f64 = f.to_string().parse().ok()?;
    Number::from_f64(shortest).map(Value::Number)
}

/// JSON number for an f64; `None` for NaN and infinities, which JSON cannot carry.
pub fn f64_to_value(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn ok<T: FromField>(v: Value) -> T {
        match T::from_field(&v) {
            Ok(t) => t,
            Err(_) => panic!("conversion of {v} failed"),
        }
    }

    fn is_type_err<T: FromField>(v: Value) -> bool {
        matches!(T::from_field(&v), Err(Mismatch::Type { .. }))
    }

    fn is_content_err<T: FromField>(v: Value) -> bool {
        matches!(T::from_field(&v), Err(Mismatch::Content { .. }))
    }

    #[test]
    fn strings_follow_json_text() {
        assert_eq!(ok::<String>(json!(true)), "true");
        assert_eq!(ok::<String>(json!(1.5)), "1.5");
        assert_eq!(ok::<String>(json!(1.0)), "1.0");
        assert_eq!(ok::<String>(json!(42)), "42");
        assert_eq!(ok::<String>(json!(u64::MAX)), "18446744073709551615");
        assert!(is_type_err::<String>(json!({"a": 1})));
        assert!(is_type_err::<String>(json!([1])));
    }

    #[test]
    fn integers_parse_strings_and_truncate_floats() {
        assert_eq!(ok::<i64>(json!("12")), 12);
        assert_eq!(ok::<i64>(json!(" -7 ")), -7);
        assert_eq!(ok::<i64>(json!("2.9")), 2);
        assert_eq!(ok::<i64>(json!(2.9)), 2);
        assert_eq!(ok::<i64>(json!(-2.9)), -2);
        assert_eq!(ok::<i64>(json!(true)), 1);
        assert_eq!(ok::<i128>(json!(u64::MAX)), i128::from(u64::MAX));
        assert!(is_content_err::<i64>(json!(u64::MAX)));
        assert!(is_content_err::<i32>(json!(1u64 << 40)));
        assert!(is_content_err::<i64>(json!("abc")));
        assert!(is_content_err::<i64>(json!("1e400")));
        assert!(is_type_err::<i64>(json!({"a": 1})));
    }

    #[test]
    fn floats_and_bools() {
        assert_eq!(ok::<f64>(json!("1.25")), 1.25);
        assert_eq!(ok::<f64>(json!(3)), 3.0);
        assert_eq!(ok::<f64>(json!(false)), 0.0);
        assert!(is_content_err::<f64>(json!("nan")));
        assert!(is_content_err::<f64>(json!("x")));
        assert!(is_type_err::<f64>(json!([])));
        assert!(ok::<bool>(json!("TRUE")));
        assert!(!ok::<bool>(json!("false")));
        assert!(ok::<bool>(json!(2)));
        assert!(!ok::<bool>(json!(0.0)));
        assert!(is_content_err::<bool>(json!("yes please")));
        assert!(is_type_err::<bool>(json!({})));
    }

    #[test]
    fn f32_values_are_short_and_exact() {
        assert_eq!(f32_to_value(0.1).unwrap().to_string(), "0.1");
        assert!(f32_to_value(f32::NAN).is_none());
        assert!(f64_to_value(f64::INFINITY).is_none());
    }

    proptest! {
        #[test]
        fn f32_round_trips_through_json(bits in any::<u32>()) {
            let f = f32::from_bits(bits);
            if let Some(v) = f32_to_value(f) {
                let back = f32::from_field(&v).ok().unwrap();
                prop_assert_eq!(back.to_bits(), f.to_bits());
                // And through JSON text.
                let text = v.to_string();
                let reparsed: Value = serde_json::from_str(&text).unwrap();
                prop_assert_eq!(f32::from_field(&reparsed).ok().unwrap().to_bits(), f.to_bits());
            } else {
                prop_assert!(!f.is_finite());
            }
        }
    }
}
