//! HOCON durations (`"500ms"`, `"30s"`, `"7 days"` or a number of milliseconds), as Typesafe
//! Config reads them; one parser for every component key that takes a duration.

use std::time::Duration;

use serde_json::Value;

/// A value that is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("must be a non-negative duration, found {0}")]
    Negative(serde_json::Number),
    #[error("must be a duration such as \"30s\", found {0}")]
    NotADuration(Value),
    #[error("must be a duration such as \"500ms\", \"30s\", \"5m\", \"1h\", \"2d\", found {0:?}")]
    Unreadable(String),
}

/// A HOCON duration: a number of milliseconds, or a number with a unit (`ms`, `s`, `m`, `h`,
/// `d` and their long forms).
pub fn parse_duration(v: &Value) -> Result<Duration, DurationError> {
    let text = match v {
        Value::Number(n) => {
            return n
                .as_u64()
                .map(Duration::from_millis)
                .ok_or_else(|| DurationError::Negative(n.clone()))
        }
        Value::String(s) => s.trim(),
        other => return Err(DurationError::NotADuration(other.clone())),
    };
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let bad = || DurationError::Unreadable(text.to_string());
    let number: f64 = number.parse().map_err(|_| bad())?;
    let unit_secs = match unit.trim() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1e-3,
        "us" | "micro" | "micros" | "microsecond" | "microseconds" => 1e-6,
        "ns" | "nano" | "nanos" | "nanosecond" | "nanoseconds" => 1e-9,
        "s" | "second" | "seconds" => 1.0,
        "m" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        "d" | "day" | "days" => 86400.0,
        "w" | "week" | "weeks" => 7.0 * 86400.0,
        _ => return Err(bad()),
    };
    Duration::try_from_secs_f64(number * unit_secs).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn durations_use_hocon_units() {
        assert_eq!(
            parse_duration(&json!("500ms")),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(parse_duration(&json!("1h")), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration(&json!("2 h")), Ok(Duration::from_secs(7200)));
        assert_eq!(
            parse_duration(&json!(1500)),
            Ok(Duration::from_millis(1500))
        );
        assert_eq!(parse_duration(&json!("1d")), Ok(Duration::from_secs(86400)));
        assert_eq!(
            parse_duration(&json!("7 days")),
            Ok(Duration::from_secs(7 * 86400))
        );
        assert_eq!(
            parse_duration(&json!("2w")),
            Ok(Duration::from_secs(14 * 86400))
        );
        assert_eq!(parse_duration(&json!(250)), Ok(Duration::from_millis(250)));
        assert_eq!(
            parse_duration(&json!("1.5s")),
            Ok(Duration::from_millis(1500))
        );
        assert!(parse_duration(&json!("soon")).is_err());
        assert!(parse_duration(&json!("5 parsecs")).is_err());
        assert!(parse_duration(&json!(-1)).is_err());
    }
}
