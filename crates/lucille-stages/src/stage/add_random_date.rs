//! AddRandomDate: test data; sets a field to a random instant, written as Lucille writes dates:
//! an ISO-8601 UTC instant such as `2024-11-23T08:15:02.125Z` (milliseconds shown when not zero).
//!
//! Keys: `fieldName` (default `data`), `rangeStartDate` (`YYYY-MM-DD`, default 1970-01-01),
//! `rangeEndDate` (`YYYY-MM-DD`, default now). The instant is at or after the start of
//! `rangeStartDate` (UTC) and before the start of `rangeEndDate`, as in Lucille. Equal dates
//! give an instant within that day (Lucille fails on them); bad dates are config errors when
//! the pipeline is built (Lucille reports them when it starts).

use rand::RngExt;

use super::random_value::check_field_name;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options, Spec};
use crate::document::Document;
use lucille_calendar::{civil_from_days, days_from_civil, is_leap};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "AddRandomDate",
    spec: AddRandomDateOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Test data: sets a field to a random instant between two dates, as ISO-8601 UTC text.
#[derive(Options)]
#[options(base = Spec::stage())]
struct AddRandomDateOptions {
    /// The field written (an existing value is replaced).
    #[option(default = "data")]
    field_name: String,
    /// The first day of the range, as YYYY-MM-DD (UTC; default 1970-01-01).
    range_start_date: Option<Day>,
    /// The day the range ends before, as YYYY-MM-DD (UTC; default now); equal dates give an
    /// instant within that day.
    range_end_date: Option<Day>,
}

/// A `YYYY-MM-DD` date, as milliseconds since the epoch at the start of that day (UTC).
struct Day(i64);

impl OptionValue for Day {
    fn kind() -> Kind {
        Kind::String
    }
    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Day>, ConfigError> {
        match config.string(key)? {
            None => Ok(None),
            Some(text) => parse_date(text.trim())
                .map(|ms| Some(Day(ms)))
                .ok_or_else(|| {
                    config.error(key, format!("must be a date as YYYY-MM-DD, found {text:?}"))
                }),
        }
    }
}

const DAY_MS: i64 = 86_400_000;

struct AddRandomDate {
    field: String,
    /// Milliseconds since the epoch, `start < end`.
    start: i64,
    end: i64,
}

/// Parses `YYYY-MM-DD` to milliseconds since the epoch at the start of that day (UTC).
fn parse_date(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return None;
    }
    let digits = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = text.get(r)?;
        if part.bytes().all(|b| b.is_ascii_digit()) {
            part.parse().ok()
        } else {
            None
        }
    };
    let (year, month, day) = (i64::from(digits(0..4)?), digits(5..7)?, digits(8..10)?);
    let month_days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(year) => 29,
        2 => 28,
        _ => return None,
    };
    if day == 0 || day > month_days {
        return None;
    }
    Some(days_from_civil(year, i64::from(month), i64::from(day)) * DAY_MS)
}

/// Milliseconds since the epoch as Lucille's ISO instant text.
pub(crate) fn format_instant(ms: i64) -> String {
    let days = ms.div_euclid(DAY_MS);
    let in_day = ms.rem_euclid(DAY_MS);
    let (y, mo, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        in_day / 3_600_000,
        in_day / 60_000 % 60,
        in_day / 1000 % 60,
        in_day % 1000,
    );
    let fraction = if milli == 0 {
        String::new()
    } else {
        format!(".{milli:03}")
    };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{fraction}Z")
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = AddRandomDateOptions::from_config(config)?;
    let start = o.range_start_date.map_or(0, |d| d.0);
    let end = match o.range_end_date {
        Some(end) => end.0,
        None => std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
    };
    let mut errors = Vec::new();
    if let Err(e) = check_field_name(config, &o.field_name) {
        errors.push(e);
    }
    if start > end {
        errors.push(config.error(
            "rangeStartDate",
            format!(
                "is after rangeEndDate ({} > {})",
                format_instant(start),
                format_instant(end)
            ),
        ));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let end = if start == end { start + DAY_MS } else { end };
    Ok(Box::new(AddRandomDate {
        field: o.field_name,
        start,
        end,
    }))
}

impl Stage for AddRandomDate {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let ms = rand::rng().random_range(self.start..self.end);
        doc.set_field(&self.field, format_instant(ms))?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::{format_instant, parse_date, DAY_MS};
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;

    #[test]
    fn dates_and_instants() {
        assert_eq!(parse_date("1970-01-01"), Some(0));
        assert_eq!(parse_date("2024-02-29"), Some(1_709_164_800_000));
        assert_eq!(parse_date("1969-12-31"), Some(-DAY_MS));
        for bad in [
            "2023-02-29",
            "2024-13-01",
            "2024-1-01",
            "24-01-01x",
            "2024-00-10",
            "２０２４-01-01",
        ] {
            assert_eq!(parse_date(bad), None, "{bad}");
        }
        assert_eq!(format_instant(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            format_instant(1_709_164_800_123),
            "2024-02-29T00:00:00.123Z"
        );
        assert_eq!(
            format_instant(1_732_349_702_120),
            "2024-11-23T08:15:02.120Z"
        );
        assert_eq!(format_instant(-1), "1969-12-31T23:59:59.999Z");
        for day in [-719_162, -1, 0, 1, 19_000, 2_932_896] {
            let text = format_instant(day * DAY_MS);
            assert_eq!(parse_date(&text[..10]), Some(day * DAY_MS), "{text}");
        }
    }

    #[test]
    fn values_stay_in_range() {
        let mut s = build_stage(json!({"class": "AddRandomDate", "fieldName": "when",
            "rangeStartDate": "2024-11-20", "rangeEndDate": "2024-11-30"}));
        for _ in 0..200 {
            let out = process(&mut s, json!({"id": "d"}));
            let text = out.get_str("when").unwrap().to_string();
            assert!(text.ends_with('Z'), "{text}");
            let day = &text[..10];
            assert!(("2024-11-20".."2024-11-30").contains(&day), "{text}");
        }
        let mut s = build_stage(json!({"class": "AddRandomDate",
            "rangeStartDate": "2000-01-01", "rangeEndDate": "2000-01-01"}));
        let out = process(&mut s, json!({"id": "d"}));
        assert!(out.get_str("data").unwrap().starts_with("2000-01-01T"));
        let mut s = build_stage(json!({"class": "AddRandomDate"}));
        let out = process(&mut s, json!({"id": "d"}));
        assert!(out.get_str("data").unwrap().as_bytes()[0].is_ascii_digit());
    }

    #[test]
    fn bad_configs() {
        assert!(build_err(
            json!({"class": "AddRandomDate", "rangeStartDate": "2024-11-30",
            "rangeEndDate": "1990-11-30"})
        )
        .contains("rangeStartDate"));
        assert!(
            build_err(json!({"class": "AddRandomDate", "rangeEndDate": "30/11/2024"}))
                .contains("rangeEndDate")
        );
        assert!(
            build_err(json!({"class": "AddRandomDate", "rangeStartDate": "3000-01-01"}))
                .contains("after")
        );
    }
}
