//! ParseDate: parses dates in source fields into ISO-8601 UTC instants
//! (`2021-02-02T00:00:00Z`), the form Solr and OpenSearch expect.
//!
//! Keys: `source` and `dest` (one destination, or one per source), `formatStrs` (Java
//! `DateTimeFormatter` patterns, tried in order; duplicates ignored), `formatters` (Lucille's
//! built-in formatter classes, tried after `formatStrs`), `timeZoneId` (the zone of dates that
//! carry none: an IANA id such as `Europe/Rome`, `UTC`, `Z`, or an offset such as `+05:30`;
//! default UTC), `updateMode` (default overwrite). At least one of `formatStrs` and
//! `formatters` is required.
//!
//! Each value of a source is tried against every format in turn and the first that parses
//! wins. As in Lucille (which parses from position 0), a format only has to match the start of
//! the value: trailing text is ignored. Values no format parses are left out; when none of a
//! source's values parses and `dest` is the source itself, the source field is removed, as in
//! Lucille. A missing source is skipped; a value that is not text or a number fails the
//! document.
//!
//! Supported pattern letters (translated to `chrono` at validation; any other letter is a
//! config error naming `formatStrs`):
//! - `y`, `u` year (`yy`: two digits, 2000-2099 as in Java; otherwise the full year);
//! - `M`, `L` month (`M`/`MM` number, `MMM` short name `Jan`, `MMMM` full name `January`;
//!   names are English and case-insensitive);
//! - `d` day of month, `D` day of year, `E` day-of-week name (`EEE` `Mon`, `EEEE` `Monday`;
//!   checked against the date);
//! - `H` hour 0-23, `h` hour 1-12 with `a` AM/PM (an `h` without `a` is AM), `m` minute,
//!   `s` second, `SSS` / `SSSSSS` / `SSSSSSSSS` fraction of a second (exactly 3, 6 or 9 digits);
//! - `X`, `x`, `Z` (1 to 5 letters) an offset: `Z`, `+01`, `+0100`, `+01:00`, `+01:00:00`;
//! - `z`, `VV`, `O`, `ZZZZ` a zone: an IANA id (`Europe/Paris`), `GMT`/`UTC` with an optional
//!   offset (`GMT+2`, `UTC-05:30`), `Z`, or a common abbreviation taken as its fixed offset
//!   (`EST` -5, `EDT` -4, `CST`, `CDT`, `MST`, `MDT`, `PST`, `PDT`, `AKST`, `AKDT`, `HST`, `BST`,
//!   `CET`, `CEST`, `EET`, `EEST`, `WET`, `WEST`, `MSK`, `IST` +5:30, `JST`, `KST`, `AEST`,
//!   `AEDT`, `ACST`, `AWST`, `NZST`, `NZDT`);
//! - `'text'` quoted text (`''` is a quote), `[...]` optional sections, and any other
//!   non-letter character as itself (whitespace in a pattern matches any run of whitespace).
//!
//! Missing parts default as a user would expect: hour, minute and second to 0 (Lucille sets the
//! hour too), and, when the year is known, month and day to 1 (`yyyy` alone parses `2021` as
//! 2021-01-01; in Lucille such a pattern fails). A pattern without a year never parses. A
//! parsed offset takes precedence over a parsed zone, which takes precedence over
//! `timeZoneId`. A local time that a daylight-saving change repeats resolves to the earlier
//! instant, and one that it skips is read with the offset in force before the change, as in
//! Java.
//!
//! `formatters` are objects `{class: ...}` naming Lucille's built-in formatters (with or
//! without the `com.kmwllc.lucille.stage.dateformatters.` package):
//! - `DatePipeFormatter`: finds `yyyy|M|d`;
//! - `DateMonthStrFormatter`: finds `January 2, 2021` (full or three-letter month name);
//! - `DateTwoYearsFormatter`: finds a range such as `2020-2050` and takes January 1 of the
//!   first year;
//! - `DateYearOnlyFormatter`: a value that is only a year (2 to 4 digits, taken literally);
//! - `UnixTimestampFormatter`: a value that is only an integer number of milliseconds since
//!   1970 (always UTC).
//!
//! Differences from Lucille: the default zone is UTC, not the machine's zone, so results do not
//! depend on where the pipeline runs; custom Java formatter classes cannot be loaded (an
//! unknown class is a config error); Lucille's built-in formatters throw on some inputs
//! (`UnixTimestampFormatter` on any non-number, the pipe and range formatters on years of fewer
//! than four digits), which fails the document there, while here they simply do not match;
//! only English month and day names are read; the letters not listed above (`G`, `Q`, `w`,
//! `W`, `Y`, `e`, `c`, `F`, `k`, `K`, `n`, `N`, `A`, `B`) are not supported.

use std::str::FromStr;

use chrono::format::{parse_and_remainder, Item, Parsed, StrftimeItems};
use chrono::{
    DateTime, FixedOffset, LocalResult, NaiveDateTime, Offset, SecondsFormat, TimeDelta, TimeZone,
    Utc,
};
use chrono_tz::Tz;
use regex::Regex;
use serde_json::{Map, Value};

use super::apply_regex::source_dest_pairs;
use super::{Stage, StageDescriptor, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ParseDate",
    spec: ParseDateOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Parses dates in source fields into ISO-8601 UTC instants (`2021-02-02T00:00:00Z`).
#[derive(Options)]
#[options(base = Spec::stage())]
struct ParseDateOptions {
    /// The fields read.
    source: Strings,
    /// The fields the instants go to: one per source, or one for every source.
    dest: Strings,
    /// Java `DateTimeFormatter` patterns, tried in order (at least one of `formatStrs` and
    /// `formatters` is required).
    format_strs: Option<Strings>,
    /// Lucille's built-in formatters (`{class: DatePipeFormatter}`...), tried after
    /// `formatStrs`.
    formatters: Option<Vec<Map<String, Value>>>,
    /// The zone of dates that carry none: an IANA id (`Europe/Rome`), `UTC`, `Z` or an offset
    /// (`+05:30`); default UTC.
    time_zone_id: Option<String>,
    /// How a destination that already has values is written.
    #[option(default)]
    update_mode: UpdateMode,
}

// ---------- zones ----------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Zone {
    Fixed(FixedOffset),
    Named(Tz),
}

impl Zone {
    /// The instant of a local date-time in this zone.
    fn resolve(&self, local: NaiveDateTime) -> Option<DateTime<Utc>> {
        match self {
            Zone::Fixed(off) => local
                .checked_sub_offset(*off)
                .map(|utc| DateTime::from_naive_utc_and_offset(utc, Utc)),
            Zone::Named(tz) => match tz.from_local_datetime(&local) {
                LocalResult::Single(dt) => Some(dt.with_timezone(&Utc)),
                LocalResult::Ambiguous(earlier, _) => Some(earlier.with_timezone(&Utc)),
                LocalResult::None => {
                    // In a gap: read the time with the offset in force before the change.
                    let before = local.checked_sub_signed(TimeDelta::days(1))?;
                    let offset = tz.offset_from_utc_datetime(&before).fix();
                    local
                        .checked_sub_offset(offset)
                        .map(|utc| DateTime::from_naive_utc_and_offset(utc, Utc))
                }
            },
        }
    }
}

const ABBREVIATIONS: &[(&str, i32)] = &[
    ("EST", -5 * 60),
    ("EDT", -4 * 60),
    ("CST", -6 * 60),
    ("CDT", -5 * 60),
    ("MST", -7 * 60),
    ("MDT", -6 * 60),
    ("PST", -8 * 60),
    ("PDT", -7 * 60),
    ("AKST", -9 * 60),
    ("AKDT", -8 * 60),
    ("HST", -10 * 60),
    ("BST", 60),
    ("CET", 60),
    ("CEST", 2 * 60),
    ("EET", 2 * 60),
    ("EEST", 3 * 60),
    ("WET", 0),
    ("WEST", 60),
    ("MSK", 3 * 60),
    ("IST", 5 * 60 + 30),
    ("JST", 9 * 60),
    ("KST", 9 * 60),
    ("AEST", 10 * 60),
    ("AEDT", 11 * 60),
    ("ACST", 9 * 60 + 30),
    ("AWST", 8 * 60),
    ("NZST", 12 * 60),
    ("NZDT", 13 * 60),
];

/// Parses `Z`, `+01`, `+0100`, `+01:00`, `+010000`, `+01:00:00` at the start of `s`.
fn parse_offset(s: &str) -> Option<(i32, &str)> {
    if let Some(rest) = s.strip_prefix(['Z', 'z']) {
        return Some((0, rest));
    }
    let sign = match s.as_bytes().first()? {
        b'+' => 1,
        b'-' => -1,
        _ => return None,
    };
    let b = s.as_bytes();
    let digits = |at: usize| -> Option<i32> {
        let d = b.get(at..at + 2)?;
        if d.iter().all(u8::is_ascii_digit) {
            Some(i32::from(d[0] - b'0') * 10 + i32::from(d[1] - b'0'))
        } else {
            None
        }
    };
    let mut at = 1;
    let (hours, mut pos) = match digits(at) {
        Some(h) => (h, at + 2),
        // A one-digit hour (GMT+2).
        None if b.get(1).is_some_and(u8::is_ascii_digit) => (i32::from(b[1] - b'0'), 2),
        None => return None,
    };
    let mut total = hours * 3600;
    for unit in [60, 1] {
        at = pos;
        let colon = b.get(at) == Some(&b':');
        let start = if colon { at + 1 } else { at };
        match digits(start) {
            Some(v) if v < 60 => {
                total += v * unit;
                pos = start + 2;
            }
            _ => break,
        }
    }
    if hours > 18 {
        return None;
    }
    Some((sign * total, &s[pos..]))
}

/// Parses a zone (IANA id, GMT/UTC offset, Z, or abbreviation) at the start of `s`.
fn parse_zone(s: &str) -> Option<(Zone, &str)> {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || "/_+-:".contains(c)))
        .unwrap_or(s.len());
    let token = &s[..end];
    let rest = &s[end..];
    for prefix in ["GMT", "UTC", "UT"] {
        if let Some(tail) = token.strip_prefix(prefix) {
            if tail.is_empty() {
                return Some((Zone::Fixed(FixedOffset::east_opt(0)?), rest));
            }
            if let Some((secs, "")) = parse_offset(tail) {
                return Some((Zone::Fixed(FixedOffset::east_opt(secs)?), rest));
            }
        }
    }
    if token == "Z" {
        return Some((Zone::Fixed(FixedOffset::east_opt(0)?), rest));
    }
    if let Some((_, minutes)) = ABBREVIATIONS.iter().find(|(a, _)| *a == token) {
        return Some((Zone::Fixed(FixedOffset::east_opt(minutes * 60)?), rest));
    }
    if let Ok(tz) = Tz::from_str(token) {
        return Some((Zone::Named(tz), rest));
    }
    None
}

/// `timeZoneId`: an IANA id (any case), UTC/GMT/Z, or an offset.
fn parse_zone_id(text: &str) -> Option<Zone> {
    let text = text.trim();
    if let Some((secs, "")) = parse_offset(text) {
        return FixedOffset::east_opt(secs).map(Zone::Fixed);
    }
    if let Some((zone, "")) = parse_zone(text) {
        return Some(zone);
    }
    chrono_tz::TZ_VARIANTS
        .iter()
        .find(|tz| tz.name().eq_ignore_ascii_case(text))
        .map(|tz| Zone::Named(*tz))
}

// ---------- Java patterns ----------

#[derive(Debug, Clone)]
enum Token {
    Letter(char, usize),
    Literal(String),
    Optional(Vec<Token>),
}

/// Why a Java date pattern cannot be read here (the message follows "pattern \"...\"").
#[derive(Debug, thiserror::Error)]
enum PatternError {
    #[error("has an unterminated quote")]
    UnterminatedQuote,
    #[error("has a ']' without '['")]
    UnopenedBracket,
    #[error("uses the reserved character {0:?}")]
    Reserved(char),
    #[error("has a '[' without ']'")]
    UnclosedBracket,
    #[error("has too many optional sections (more than {MAX_ALTERNATIVES} combinations)")]
    TooManyAlternatives,
    #[error(
        "uses {0:?}, which is not supported (supported letters: y u M L d D E H h a m s S X x Z z V O)"
    )]
    Unsupported(String),
    #[error("cannot be translated ({0})")]
    Untranslatable(chrono::format::ParseError),
    #[error("has a nested optional section")]
    NestedOptional,
    #[error("has no year (y or u), so it cannot give an instant")]
    NoYear,
}

fn tokenize(pattern: &str) -> Result<Vec<Token>, PatternError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut stack: Vec<Vec<Token>> = vec![Vec::new()];
    let mut i = 0;
    let push = |stack: &mut Vec<Vec<Token>>, t: Token| {
        if let Some(top) = stack.last_mut() {
            top.push(t);
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() {
            let mut n = 1;
            while i + n < chars.len() && chars[i + n] == c {
                n += 1;
            }
            push(&mut stack, Token::Letter(c, n));
            i += n;
        } else if c == '\'' {
            let mut text = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => return Err(PatternError::UnterminatedQuote),
                    Some('\'') if chars.get(i + 1) == Some(&'\'') => {
                        text.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(ch) => {
                        text.push(*ch);
                        i += 1;
                    }
                }
            }
            if text.is_empty() {
                text.push('\'');
            }
            push(&mut stack, Token::Literal(text));
        } else if c == '[' {
            stack.push(Vec::new());
            i += 1;
        } else if c == ']' {
            if stack.len() < 2 {
                return Err(PatternError::UnopenedBracket);
            }
            let inner = stack.pop().unwrap_or_default();
            push(&mut stack, Token::Optional(inner));
            i += 1;
        } else if matches!(c, '#' | '{' | '}') {
            return Err(PatternError::Reserved(c));
        } else {
            push(&mut stack, Token::Literal(c.to_string()));
            i += 1;
        }
    }
    if stack.len() != 1 {
        return Err(PatternError::UnclosedBracket);
    }
    Ok(stack.pop().unwrap_or_default())
}

const MAX_ALTERNATIVES: usize = 64;

/// Every flattening of the optional sections, the longest (all sections present) first.
fn alternatives(tokens: &[Token]) -> Result<Vec<Vec<Token>>, PatternError> {
    let mut alts: Vec<Vec<Token>> = vec![Vec::new()];
    for t in tokens {
        match t {
            Token::Optional(inner) => {
                let inner_alts = alternatives(inner)?;
                let mut next = Vec::new();
                for a in &alts {
                    for ia in &inner_alts {
                        let mut with = a.clone();
                        with.extend(ia.iter().cloned());
                        next.push(with);
                    }
                    next.push(a.clone());
                }
                alts = next;
            }
            other => alts.iter_mut().for_each(|a| a.push(other.clone())),
        }
        if alts.len() > MAX_ALTERNATIVES {
            return Err(PatternError::TooManyAlternatives);
        }
    }
    Ok(alts)
}

enum Segment {
    Chrono(Vec<Item<'static>>),
    Offset,
    Zone,
}

/// One way of reading a pattern (optional sections resolved).
struct Layout {
    segments: Vec<Segment>,
    two_digit_year: bool,
}

fn strftime_for(letter: char, n: usize) -> Result<Option<&'static str>, PatternError> {
    let unsupported = || Err(PatternError::Unsupported(letter.to_string().repeat(n)));
    Ok(Some(match (letter, n) {
        ('y' | 'u', 2) => "%y",
        ('y' | 'u', _) => "%Y",
        ('M' | 'L', 1 | 2) => "%m",
        ('M' | 'L', 3) => "%b",
        ('M' | 'L', 4) => "%B",
        ('d', 1 | 2) => "%d",
        ('D', 1..=3) => "%j",
        ('E', 1..=3) => "%a",
        ('E', 4) => "%A",
        ('H', 1 | 2) => "%H",
        ('h', 1 | 2) => "%I",
        ('a', 1) => "%p",
        ('m', 1 | 2) => "%M",
        ('s', 1 | 2) => "%S",
        ('S', 3) => "%3f",
        ('S', 6) => "%6f",
        ('S', 9) => "%9f",
        ('X' | 'x', 1..=5) | ('Z', 1..=3 | 5) => return Ok(None),
        ('z', 1..=4) | ('V', 2) | ('O', 1 | 4) | ('Z', 4) => return Ok(None),
        _ => return unsupported(),
    }))
}

fn is_offset_letter(letter: char, n: usize) -> bool {
    matches!((letter, n), ('X' | 'x', 1..=5) | ('Z', 1..=3 | 5))
}

fn layout(tokens: &[Token]) -> Result<Layout, PatternError> {
    let mut segments = Vec::new();
    let mut fmt = String::new();
    let mut two_digit_year = false;
    let mut has_year = false;
    let flush = |fmt: &mut String, segments: &mut Vec<Segment>| -> Result<(), PatternError> {
        if !fmt.is_empty() {
            let items = StrftimeItems::new(fmt)
                .parse_to_owned()
                .map_err(PatternError::Untranslatable)?;
            segments.push(Segment::Chrono(items));
            fmt.clear();
        }
        Ok(())
    };
    for t in tokens {
        match t {
            Token::Literal(text) => {
                for c in text.chars() {
                    if c == '%' {
                        fmt.push_str("%%");
                    } else {
                        fmt.push(c);
                    }
                }
            }
            Token::Letter(c, n) => {
                if matches!(c, 'y' | 'u') {
                    has_year = true;
                    two_digit_year |= *n == 2;
                }
                match strftime_for(*c, *n)? {
                    Some(spec) => fmt.push_str(spec),
                    None => {
                        flush(&mut fmt, &mut segments)?;
                        segments.push(if is_offset_letter(*c, *n) {
                            Segment::Offset
                        } else {
                            Segment::Zone
                        });
                    }
                }
            }
            Token::Optional(_) => return Err(PatternError::NestedOptional),
        }
    }
    flush(&mut fmt, &mut segments)?;
    if !has_year {
        return Err(PatternError::NoYear);
    }
    Ok(Layout {
        segments,
        two_digit_year,
    })
}

fn compile_pattern(pattern: &str) -> Result<Vec<Layout>, PatternError> {
    let tokens = tokenize(pattern)?;
    alternatives(&tokens)?.iter().map(|a| layout(a)).collect()
}

impl Layout {
    fn parse(&self, value: &str, default_zone: &Zone) -> Option<DateTime<Utc>> {
        let mut parsed = Parsed::new();
        let mut rest = value;
        let mut zone = None;
        for seg in &self.segments {
            match seg {
                Segment::Chrono(items) => {
                    rest = parse_and_remainder(&mut parsed, rest, items.iter()).ok()?;
                }
                Segment::Offset => {
                    let (secs, r) = parse_offset(rest)?;
                    parsed.set_offset(i64::from(secs)).ok()?;
                    rest = r;
                }
                Segment::Zone => {
                    let (z, r) = parse_zone(rest.trim_start())?;
                    zone = Some(z);
                    rest = r;
                }
            }
        }
        if self.two_digit_year && parsed.year().is_none() && parsed.year_div_100().is_none() {
            parsed.set_year_div_100(20).ok()?;
        }
        if parsed.ordinal().is_none() {
            if parsed.month().is_none() {
                parsed.set_month(1).ok()?;
            }
            if parsed.day().is_none() {
                parsed.set_day(1).ok()?;
            }
        }
        match (parsed.hour_div_12(), parsed.hour_mod_12()) {
            (None, None) => parsed.set_hour(0).ok()?,
            (None, Some(_)) => parsed.set_ampm(false).ok()?,
            _ => {}
        }
        if parsed.minute().is_none() {
            parsed.set_minute(0).ok()?;
        }
        if parsed.second().is_none() {
            parsed.set_second(0).ok()?;
        }
        let local = parsed
            .to_naive_date()
            .ok()?
            .and_time(parsed.to_naive_time().ok()?);
        match (parsed.offset(), zone) {
            (Some(secs), _) => Zone::Fixed(FixedOffset::east_opt(secs)?).resolve(local),
            (None, Some(z)) => z.resolve(local),
            (None, None) => default_zone.resolve(local),
        }
    }
}

// ---------- Lucille's built-in formatters ----------

enum Formatter {
    Pipe(Regex),
    MonthStr(Regex),
    TwoYears(Regex),
    YearOnly(Regex),
    UnixTimestamp,
}

const FORMATTER_PACKAGE: &str = "com.kmwllc.lucille.stage.dateformatters.";

/// A `formatters` entry that names no formatter here.
#[derive(Debug, thiserror::Error)]
enum FormatterError {
    #[error(
        "unknown formatter class {0:?}; the built-in ones are DatePipeFormatter, \
         DateMonthStrFormatter, DateTwoYearsFormatter, DateYearOnlyFormatter and \
         UnixTimestampFormatter"
    )]
    Unknown(String),
    #[error(transparent)]
    Regex(#[from] regex::Error),
}

impl Formatter {
    fn from_class(class: &str) -> Result<Self, FormatterError> {
        let regex = Regex::new;
        let short = class
            .trim()
            .strip_prefix(FORMATTER_PACKAGE)
            .unwrap_or(class.trim());
        Ok(match short {
            "DatePipeFormatter" => Formatter::Pipe(regex(r"(\d{4})\|(\d{1,2})\|(\d{1,2})")?),
            "DateMonthStrFormatter" => {
                Formatter::MonthStr(regex(r"([A-Za-z]+) (\d{1,2}), (\d{1,4})")?)
            }
            "DateTwoYearsFormatter" => Formatter::TwoYears(regex(r"(\d{4})\W\d{1,4}")?),
            "DateYearOnlyFormatter" => Formatter::YearOnly(regex(r"^(\d{2,4})$")?),
            "UnixTimestampFormatter" => Formatter::UnixTimestamp,
            other => return Err(FormatterError::Unknown(other.to_string())),
        })
    }

    fn apply(&self, value: &str, zone: &Zone) -> Option<DateTime<Utc>> {
        let num = |caps: &regex::Captures<'_>, i: usize| -> Option<u32> {
            caps.get(i)?.as_str().parse().ok()
        };
        let day = |y: u32, m: u32, d: u32| -> Option<DateTime<Utc>> {
            let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(y).ok()?, m, d)?;
            zone.resolve(date.and_hms_opt(0, 0, 0)?)
        };
        match self {
            Formatter::Pipe(re) => {
                let c = re.captures(value)?;
                day(num(&c, 1)?, num(&c, 2)?, num(&c, 3)?)
            }
            Formatter::MonthStr(re) => {
                let c = re.captures(value)?;
                let month = month_number(c.get(1)?.as_str())?;
                day(num(&c, 3)?, month, num(&c, 2)?)
            }
            Formatter::TwoYears(re) => {
                let c = re.captures(value)?;
                day(num(&c, 1)?, 1, 1)
            }
            Formatter::YearOnly(re) => {
                let c = re.captures(value)?;
                day(num(&c, 1)?, 1, 1)
            }
            Formatter::UnixTimestamp => {
                let ms: i64 = value.parse().ok()?;
                DateTime::from_timestamp_millis(ms)
            }
        }
    }
}

fn month_number(name: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let lower = name.to_ascii_lowercase();
    MONTHS
        .iter()
        .position(|m| *m == lower || (lower.len() == 3 && m.starts_with(&lower)))
        .and_then(|i| u32::try_from(i + 1).ok())
}

// ---------- the stage ----------

struct ParseDate {
    pairs: Vec<(String, String)>,
    formats: Vec<Vec<Layout>>,
    formatters: Vec<Formatter>,
    zone: Zone,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ParseDateOptions::from_config(config)?;
    let mut errors = Vec::new();
    let pairs = source_dest_pairs(config, &o.source, &o.dest).unwrap_or_else(|e| {
        errors.push(e);
        Vec::new()
    });
    let mut patterns: Vec<&String> = Vec::new();
    for p in o.format_strs.iter().flat_map(|f| f.iter()) {
        if !patterns.contains(&p) {
            patterns.push(p);
        }
    }
    let mut formats = Vec::new();
    for p in patterns {
        match compile_pattern(p) {
            Ok(layouts) => formats.push(layouts),
            Err(e) => errors.push(config.error("formatStrs", format!("pattern {p:?} {e}"))),
        }
    }
    let mut formatters = Vec::new();
    for item in o.formatters.iter().flatten() {
        let Some(class) = item.get("class").and_then(Value::as_str) else {
            errors.push(config.error(
                "formatters",
                "each formatter must be an object with a \"class\"",
            ));
            continue;
        };
        match Formatter::from_class(class) {
            Ok(f) => formatters.push(f),
            Err(e) => errors.push(config.error("formatters", e.to_string())),
        }
    }
    let no_format_given = o.format_strs.as_ref().is_none_or(|f| f.is_empty())
        && o.formatters.as_ref().is_none_or(|f| f.is_empty());
    if no_format_given {
        errors.push(config.error(
            "formatStrs",
            "give at least one pattern in \"formatStrs\" or one of \"formatters\"",
        ));
    }
    let zone = match &o.time_zone_id {
        None => Some(Zone::Fixed(Utc.fix())),
        Some(id) => parse_zone_id(id).or_else(|| {
            errors.push(config.error(
                "timeZoneId",
                format!("unknown time zone {id:?} (use an IANA id such as \"Europe/Rome\", \"UTC\" or an offset such as \"+05:30\")"),
            ));
            None
        }),
    };
    let Some(zone) = zone.filter(|_| errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(ParseDate {
        pairs,
        formats,
        formatters,
        zone,
        mode: o.update_mode,
    }))
}

impl ParseDate {
    fn parse(&self, value: &str) -> Option<DateTime<Utc>> {
        for layouts in &self.formats {
            if let Some(dt) = layouts.iter().find_map(|l| l.parse(value, &self.zone)) {
                return Some(dt);
            }
        }
        self.formatters
            .iter()
            .find_map(|f| f.apply(value, &self.zone))
    }
}

impl Stage for ParseDate {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        for (source, dest) in &self.pairs {
            if !doc.has(source) {
                continue;
            }
            let outputs: Vec<String> = doc
                .get_string_list(source)?
                .iter()
                .filter_map(|v| self.parse(v))
                .map(|dt| dt.to_rfc3339_opts(SecondsFormat::AutoSi, true))
                .collect();
            if outputs.is_empty() && dest == source {
                doc.remove_field(source)?;
            }
            doc.update(dest, self.mode, outputs)?;
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn one(formats: serde_json::Value, zone: Option<&str>) -> Box<dyn Stage> {
        let mut cfg = json!({"class": "ParseDate", "source": ["date"], "dest": ["output"],
            "formatStrs": formats});
        if let Some(z) = zone {
            cfg["timeZoneId"] = json!(z);
        }
        build_stage(cfg)
    }

    fn parse(stage: &mut Box<dyn Stage>, value: &str) -> Option<serde_json::Value> {
        process(stage, json!({"id": "d", "date": value}))
            .get("output")
            .cloned()
    }

    #[test]
    fn lucille_example_with_formatters() {
        let mut s = build_stage(json!({"class": "ParseDate", "source": ["date1", "date2"],
            "dest": ["output1", "output2"],
            "formatters": [
                {"class": "com.kmwllc.lucille.stage.dateformatters.DatePipeFormatter"},
                {"class": "com.kmwllc.lucille.stage.dateformatters.DateMonthStrFormatter"},
                {"class": "DateTwoYearsFormatter"},
                {"class": "DateYearOnlyFormatter"},
                {"class": "UnixTimestampFormatter"}],
            "formatStrs": ["yy/MMM/dd", "yyyy-MM-dd"], "timeZoneId": "Universal"}));
        let out = process(&mut s, json!({"id": "d", "date1": "February 2, 2021"}));
        assert_eq!(out.get("output1"), Some(&json!("2021-02-02T00:00:00Z")));
        let out = process(
            &mut s,
            json!({"id": "d", "date1": "2003|10|25", "date2": "2020-2050"}),
        );
        assert_eq!(out.get("output1"), Some(&json!("2003-10-25T00:00:00Z")));
        assert_eq!(out.get("output2"), Some(&json!("2020-01-01T00:00:00Z")));
        let out = process(
            &mut s,
            json!({"id": "d", "date1": "90/Jul/17", "date2": "2023-06-21"}),
        );
        assert_eq!(out.get("output1"), Some(&json!("2090-07-17T00:00:00Z")));
        assert_eq!(out.get("output2"), Some(&json!("2023-06-21T00:00:00Z")));
        let out = process(&mut s, json!({"id": "d", "date1": "1696109846000"}));
        assert_eq!(out.get("output1"), Some(&json!("2023-09-30T21:37:26Z")));
        let out = process(&mut s, json!({"id": "d", "date1": "1999"}));
        assert_eq!(out.get("output1"), Some(&json!("1999-01-01T00:00:00Z")));
        let out = process(
            &mut s,
            json!({"id": "d", "date1": "not a date", "date2": "13|13|13"}),
        );
        assert!(!out.has("output1") && !out.has("output2"));
    }

    #[test]
    fn time_zones() {
        for (zone, expected) in [
            ("America/New_York", "2021-02-02T05:00:00Z"),
            ("Universal", "2021-02-02T00:00:00Z"),
            ("Europe/Rome", "2021-02-01T23:00:00Z"),
            ("Australia/Brisbane", "2021-02-01T14:00:00Z"),
            ("+05:30", "2021-02-01T18:30:00Z"),
            ("utc", "2021-02-02T00:00:00Z"),
        ] {
            let mut s = one(json!(["yyyy-MM-dd"]), Some(zone));
            assert_eq!(parse(&mut s, "2021-02-02"), Some(json!(expected)), "{zone}");
        }
        let mut s = one(json!(["yyyy-MM-dd"]), None);
        assert_eq!(
            parse(&mut s, "2021-02-02"),
            Some(json!("2021-02-02T00:00:00Z")),
            "default UTC"
        );
    }

    #[test]
    fn offsets_zones_and_optional_sections() {
        let mut s = one(json!(["yyyy-MM-dd'T'HH:mm:ssxxxxx[VV]"]), None);
        assert_eq!(
            parse(&mut s, "2011-12-03T10:15:31+01:00:00[Europe/Paris]"),
            Some(json!("2011-12-03T09:15:31Z"))
        );
        let mut s = one(json!(["yyyy-MM-dd'T'HH:mm:ss.SSSXXX"]), None);
        assert_eq!(
            parse(&mut s, "2021-06-01T12:00:00.250Z"),
            Some(json!("2021-06-01T12:00:00.250Z"))
        );
        assert_eq!(
            parse(&mut s, "2021-06-01T12:00:00.000-04:00"),
            Some(json!("2021-06-01T16:00:00Z"))
        );
        let mut s = one(json!(["yyyy-MM-dd HH:mm[:ss] VV"]), None);
        assert_eq!(
            parse(&mut s, "2021-07-01 09:30 Europe/London"),
            Some(json!("2021-07-01T08:30:00Z"))
        );
        assert_eq!(
            parse(&mut s, "2021-07-01 09:30:15 Asia/Tokyo"),
            Some(json!("2021-07-01T00:30:15Z"))
        );
        let mut s = one(json!(["EEE, dd MMM yyyy HH:mm:ss Z"]), None);
        assert_eq!(
            parse(&mut s, "Tue, 02 Feb 2021 10:00:00 +0100"),
            Some(json!("2021-02-02T09:00:00Z"))
        );
        assert_eq!(
            parse(&mut s, "Mon, 02 Feb 2021 10:00:00 +0100"),
            None,
            "wrong weekday"
        );
        let mut s = one(json!(["MMMM d, yyyy h:mm a z"]), None);
        assert_eq!(
            parse(&mut s, "July 4, 2021 3:05 PM PDT"),
            Some(json!("2021-07-04T22:05:00Z"))
        );
        assert_eq!(
            parse(&mut s, "July 4, 2021 3:05 pm GMT+2"),
            Some(json!("2021-07-04T13:05:00Z"))
        );
        let mut s = one(json!(["yyyyMMddHHmmss"]), None);
        assert_eq!(
            parse(&mut s, "20210202134501"),
            Some(json!("2021-02-02T13:45:01Z"))
        );
        let mut s = one(json!(["yyyy-DDD"]), None);
        assert_eq!(
            parse(&mut s, "2021-032"),
            Some(json!("2021-02-01T00:00:00Z"))
        );
        let mut s = one(json!(["yyyy"]), None);
        assert_eq!(parse(&mut s, "2021"), Some(json!("2021-01-01T00:00:00Z")));
        let mut s = one(json!(["'Q'yyyy'%'MM"]), None);
        assert_eq!(
            parse(&mut s, "Q2021%03"),
            Some(json!("2021-03-01T00:00:00Z"))
        );
    }

    #[test]
    fn format_order_and_trailing_text() {
        let cfg = |formats: serde_json::Value| {
            build_stage(json!({"class": "ParseDate", "source": ["date1", "date2"],
                "dest": ["output1", "output2"], "formatStrs": formats, "timeZoneId": "Europe/Rome"}))
        };
        let doc = json!({"id": "d", "date1": "2021-02-02", "date2": "2021-02-02 EST"});
        let mut s = cfg(json!(["yyyy-MM-dd z", "yyyy-MM-dd"]));
        let out = process(&mut s, doc.clone());
        assert_eq!(out.get("output1"), Some(&json!("2021-02-01T23:00:00Z")));
        assert_eq!(out.get("output2"), Some(&json!("2021-02-02T05:00:00Z")));
        let mut s = cfg(json!(["yyyy-MM-dd", "yyyy-MM-dd z"]));
        let out = process(&mut s, doc);
        assert_eq!(out.get("output2"), Some(&json!("2021-02-01T23:00:00Z")));
    }

    #[test]
    fn daylight_saving_edges() {
        let mut s = one(json!(["yyyy-MM-dd HH:mm"]), Some("America/New_York"));
        // 02:30 does not exist on 2021-03-14; Java reads it as 03:30 EDT.
        assert_eq!(
            parse(&mut s, "2021-03-14 02:30"),
            Some(json!("2021-03-14T07:30:00Z"))
        );
        // 01:30 happens twice on 2021-11-07; the earlier (EDT) is used.
        assert_eq!(
            parse(&mut s, "2021-11-07 01:30"),
            Some(json!("2021-11-07T05:30:00Z"))
        );
    }

    #[test]
    fn reconstructs_dates_in_many_zones() {
        for zone in [
            "Pacific/Kiritimati",
            "Pacific/Pago_Pago",
            "Asia/Kathmandu",
            "America/St_Johns",
        ] {
            let mut s = one(json!(["yyyy-MM-dd"]), Some(zone));
            let tz: Tz = zone.parse().unwrap();
            for input in ["1945-05-22", "2000-02-29", "2023-12-31"] {
                let out = parse(&mut s, input).unwrap();
                let instant: DateTime<Utc> = out.as_str().unwrap().parse().unwrap();
                assert_eq!(
                    instant.with_timezone(&tz).format("%Y-%m-%d").to_string(),
                    input
                );
            }
        }
    }

    #[test]
    fn unparsable_values_multi_values_and_in_place() {
        let mut s = one(json!(["yyyy-MM-dd"]), None);
        let out = process(
            &mut s,
            json!({"id": "d", "date": ["2021-01-05", "junk", 20210105]}),
        );
        assert_eq!(out.get("output"), Some(&json!("2021-01-05T00:00:00Z")));
        let out = process(&mut s, json!({"id": "d", "other": "x"}));
        assert!(!out.has("output"));
        let mut s = build_stage(
            json!({"class": "ParseDate", "source": "date", "dest": "date",
            "formatStrs": "yyyy-MM-dd"}),
        );
        let out = process(&mut s, json!({"id": "d", "date": "junk"}));
        assert!(!out.has("date"), "an unparsable in-place field is removed");
        let out = process(&mut s, json!({"id": "d", "date": "2021-01-05"}));
        assert_eq!(out.get("date"), Some(&json!("2021-01-05T00:00:00Z")));
        let err = process_err(&mut s, json!({"id": "d", "date": {"y": 2021}}));
        assert!(err.contains("date"), "{err}");
        let mut s = build_stage(json!({"class": "ParseDate", "source": "a", "dest": "b",
            "formatStrs": "yyyy", "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "a": "2020", "b": "old"}));
        assert_eq!(out.get("b"), Some(&json!("old")));
    }

    #[test]
    fn helpers() {
        assert_eq!(parse_offset("+01:00:00rest"), Some((3600, "rest")));
        assert_eq!(parse_offset("-0530"), Some((-(5 * 3600 + 30 * 60), "")));
        assert_eq!(parse_offset("Z"), Some((0, "")));
        assert_eq!(parse_offset("+2"), Some((7200, "")));
        assert_eq!(parse_offset("x"), None);
        assert!(matches!(
            parse_zone("Europe/Paris]"),
            Some((Zone::Named(_), "]"))
        ));
        assert!(parse_zone("Nowhere/City").is_none());
        assert_eq!(month_number("Sep"), Some(9));
        assert_eq!(month_number("Septem"), None);
        assert!(compile_pattern("yyyy[-MM[-dd]]").unwrap().len() == 3);
    }

    #[test]
    fn bad_configs() {
        let base = json!({"class": "ParseDate", "source": ["a"], "dest": ["b"]});
        let with = |k: &str, v: serde_json::Value| {
            let mut c = base.clone();
            c[k] = v;
            c
        };
        assert!(build_err(base.clone()).contains("formatStrs"));
        for (pattern, expect) in [
            ("YYYY-MM-dd", "not supported"),
            ("yyyy-MM-dd'T", "unterminated quote"),
            ("yyyy[-MM", "without ']'"),
            ("yyyy]", "without '['"),
            ("MM-dd", "no year"),
            ("yyyy#", "reserved"),
            ("yyyy-MMMMM", "not supported"),
            ("yyyy[a][b][c][d][e][f][g]", "too many"),
        ] {
            let err = build_err(with("formatStrs", json!([pattern])));
            assert!(
                err.contains("formatStrs") && err.contains(expect),
                "{pattern}: {err}"
            );
        }
        let mut c = with("formatStrs", json!(["yyyy"]));
        c["timeZoneId"] = json!("invalid");
        assert!(build_err(c).contains("timeZoneId"));
        let err = build_err(with(
            "formatters",
            json!([{"class": "com.example.MyFormatter"}]),
        ));
        assert!(
            err.contains("formatters") && err.contains("unknown formatter"),
            "{err}"
        );
        assert!(build_err(with("formatters", json!([{"klass": "x"}]))).contains("formatters"));
        let mut c = with("formatStrs", json!(["yyyy"]));
        c["dest"] = json!(["x", "y"]);
        assert!(build_err(c).contains("dest"));
    }
}
