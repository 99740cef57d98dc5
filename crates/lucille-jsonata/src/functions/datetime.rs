//! `$toMillis(timestamp [, picture])`, `$fromMillis(millis [, picture [, timezone]])` and
//! `$now([picture [, timezone]])` (with `$millis()`): timestamps read and written with
//! XPath/XSLT 3.0 date-time picture strings, as JSONata defines them (jsonata-js
//! `datetime.js`). jsonata-rs 0.3.4 recognises a fixed list of pictures only (`[H]` or `[M1]`
//! are errors there, `[D1] [MNn]` parsing is a set of hard-coded layouts; its `$now` slices
//! time zones by bytes, which panics on non-ASCII text), so all four are replaced. `$now`
//! and `$millis` read the clock once per evaluation, as JSONata does.
//!
//! A picture is literal text and variable markers `[component presentation, width]`:
//! components `Y` year, `M` month, `D` day of month, `d` day of year, `F` day of week (1 =
//! Monday), `W` ISO week of year, `X` ISO week-numbering year, `w` week of month, `x` month
//! of that week, `H` hour (0-23), `h` hour (1-12), `P` am/pm, `m` minute, `s` second, `f`
//! milliseconds, `Z` / `z` time zone (`+01:00` / `GMT+01:00`), `C` calendar and `E` era
//! (both `ISO`). An integer presentation is an integer picture (`format_integer`: `01`,
//! `#1`, `I`, `a`, `w`, `Ww`, ...) optionally followed by `o` for ordinals; `N`, `n`, `Nn`
//! write month and day names (upper, lower, title case); the width modifier `,min-max`
//! pads numbers and cuts names (`[MNn,3-3]` is `Mar`) and years (`[Y,2]` is `18`). `[[` and
//! `]]` are literal brackets; whitespace inside a marker is ignored.
//!
//! Parsing matches the whole timestamp, case-insensitively, against the picture (a number
//! directly followed by another marker must have a fixed width, e.g. `[Y0001][M01]`), and
//! gives undefined when it does not match. The components must line up as year, month, day
//! (or year and day of year), hour (or hour, am/pm), minute, second, millisecond without
//! gaps: missing leading ones are taken from the current time (UTC), missing trailing ones
//! are the start of their range. ISO week dates are not parsed (D3136, as in JSONata).
//!
//! Where jsonata-js has slips, this module does what the picture says instead: negative
//! time zones with minutes (`-05:30`) count the minutes negatively too, a day of the year
//! past the year's end rolls into the next year, month and day names match in any case,
//! and a two-digit year stays a year of the first century (JavaScript's `Date.UTC` would
//! make `18` 1918). A timestamp without picture must be ISO 8601 (D3110); one without time
//! zone is read as UTC. Widths above 1000 are taken as 1000.

use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::rc::Rc;

use jsonata_rs::{FunctionContext, Value};

use super::format_integer::Picture;
use super::{arg, bad_arg, check_signature, custom_error, with_scope};
use lucille_calendar::{civil_from_days, days_from_civil};

type Res<'a> = jsonata_rs::Result<&'a Value<'a>>;

/// A date/time error: its JSONata code and message.
type DtError = (&'static str, String);

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

const MS_PER_DAY: i64 = 86_400_000;
/// The largest distance from the epoch that JavaScript dates (and so JSONata) represent.
const MAX_MILLIS: f64 = 8.64e15;
/// The largest width modifier honoured (a larger one would only allocate).
const MAX_WIDTH: usize = 1000;
/// The picture `$fromMillis` uses without one.
const ISO_PICTURE: &str = "[Y0001]-[M01]-[D01]T[H01]:[m01]:[s01].[f001][Z01:01t]";

fn unknown_component(c: &str) -> DtError {
    (
        "D3132",
        format!("Unknown component specifier {c} in date/time picture string"),
    )
}

fn no_names(c: char) -> DtError {
    (
        "D3133",
        format!(
            "The 'name' modifier can only be applied to months and days in the date/time \
             picture string, not {c}"
        ),
    )
}

fn underspecified() -> DtError {
    (
        "D3136",
        "The date/time picture string is missing specifiers required to parse the timestamp"
            .to_string(),
    )
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Case {
    Upper,
    Lower,
    Title,
}

#[derive(Debug)]
struct Marker {
    component: char,
    /// `N`, `n` or `Nn`: the component as a name.
    names: Option<Case>,
    /// The integer picture of an integer-valued component or of a time zone.
    integer: Option<Picture>,
    /// An error to raise when the marker is used (as JSONata raises it only then).
    deferred: Option<DtError>,
    /// The presentation ended in `t`: a zero time zone offset is written `Z`.
    traditional: bool,
    /// The width modifier's maximum.
    max_width: Option<usize>,
    /// For `Y`: the years are written modulo 10^n.
    year_digits: Option<usize>,
    /// When parsing: exactly this many digits (a number directly followed by another).
    parse_width: Option<usize>,
}

#[derive(Debug)]
enum Part {
    Literal(String),
    Marker(Marker),
}

/// Integer-valued components.
const INTEGER_COMPONENTS: &str = "YMDdFWwXxHhmsf";

fn default_presentation(component: char) -> Option<&'static str> {
    Some(match component {
        'Y' | 'M' | 'D' | 'd' | 'W' | 'w' | 'X' | 'x' | 'H' | 'h' | 'f' => "1",
        'F' | 'P' | 'C' | 'E' => "n",
        'm' | 's' => "01",
        'Z' | 'z' => "01:01",
        _ => return None,
    })
}

/// Appends literal text (with `]]` read as `]`), merged with a literal before it.
fn add_literal(parts: &mut Vec<Part>, text: &str) {
    if text.is_empty() {
        return;
    }
    let text = text.replace("]]", "]");
    match parts.last_mut() {
        Some(Part::Literal(last)) => last.push_str(&text),
        _ => parts.push(Part::Literal(text)),
    }
}

/// Splits a date/time picture into literals and analysed markers.
fn analyse(picture: &str) -> Result<Vec<Part>, DtError> {
    let mut parts = Vec::new();
    let mut rest = picture;
    while let Some(open) = rest.find('[') {
        add_literal(&mut parts, &rest[..open]);
        let after = &rest[open + 1..];
        if let Some(more) = after.strip_prefix('[') {
            add_literal(&mut parts, "[");
            rest = more;
            continue;
        }
        let Some(close) = after.find(']') else {
            return Err((
                "D3135",
                "No matching closing bracket ']' in date/time picture string".to_string(),
            ));
        };
        let marker = analyse_marker(&after[..close])?;
        // A number read right after another: the first must have a fixed width.
        if marker.integer.is_some() && INTEGER_COMPONENTS.contains(marker.component) {
            if let Some(Part::Marker(previous)) = parts.last_mut() {
                if let Some(picture) = &previous.integer {
                    previous.parse_width = picture.digits().map(|(mandatory, _)| mandatory);
                }
            }
        }
        parts.push(Part::Marker(marker));
        rest = &after[close + 1..];
    }
    add_literal(&mut parts, rest);
    Ok(parts)
}

/// A width: `*` or nothing for none, else its leading digits.
fn parse_width(text: &str) -> Option<usize> {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<usize>().ok().map(|w| w.min(MAX_WIDTH))
}

fn analyse_marker(text: &str) -> Result<Marker, DtError> {
    let spec: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let mut chars = spec.chars();
    let Some(component) = chars.next() else {
        return Err(unknown_component(""));
    };
    let Some(default) = default_presentation(component) else {
        return Err(unknown_component(&component.to_string()));
    };
    let body = chars.as_str();
    let (presentation, width) = match body.rfind(',') {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let (min_width, max_width) = match width {
        Some(w) => match w.split_once('-') {
            Some((min, max)) => (parse_width(min), parse_width(max)),
            None => (parse_width(w), None),
        },
        None => (None, None),
    };
    // The presentation modifier, and a trailing `a`/`t`/`c`/`o` as the second one.
    let (first, second) = match presentation.char_indices().last() {
        None => (default, None),
        Some((0, _)) => (presentation, None),
        Some((i, c)) if "atco".contains(c) => (&presentation[..i], Some(c)),
        Some(_) => (presentation, None),
    };
    let names = match first.get(..1) {
        Some("n") => Some(Case::Lower),
        Some("N") if first[1..].starts_with('n') => Some(Case::Title),
        Some("N") => Some(Case::Upper),
        _ => None,
    };
    let mut marker = Marker {
        component,
        names,
        integer: None,
        deferred: None,
        traditional: second == Some('t'),
        max_width,
        year_digits: None,
        parse_width: None,
    };
    let integer_picture = if names.is_some() {
        None
    } else if INTEGER_COMPONENTS.contains(component) {
        Some(match second {
            Some(c) => format!("{first};{c}"),
            None => first.to_string(),
        })
    } else if component == 'Z' || component == 'z' {
        Some(first.to_string())
    } else {
        None
    };
    if let Some(text) = integer_picture {
        match Picture::parse(&text) {
            Ok(mut picture) => {
                if let (Some(min), Some((mandatory, _))) = (min_width, picture.digits()) {
                    if component != 'Z' && component != 'z' && mandatory < min {
                        picture.set_mandatory(min);
                    }
                }
                if component == 'Y' {
                    marker.year_digits = match max_width {
                        Some(max) => {
                            picture.set_mandatory(max);
                            Some(max)
                        }
                        None => picture
                            .digits()
                            .map(|(mandatory, optional)| mandatory + optional)
                            .filter(|&w| w >= 2),
                    };
                }
                marker.integer = Some(picture);
            }
            // Mixed digit families are an error of the picture as a whole; an unsupported
            // format only when the marker is used.
            Err((code, message)) if code == "D3131" => return Err((code, message.to_string())),
            Err((code, message)) => marker.deferred = Some((code, message.to_string())),
        }
    }
    Ok(marker)
}

/// ISO day of the week, 1 = Monday.
fn weekday(days: i64) -> i64 {
    (days + 3).rem_euclid(7) + 1
}

/// The Monday starting week 1 of a month (January for a year): the week with its first
/// Thursday (ISO 8601, extended to months by XPath F&O).
fn first_week_start(year: i64, month: i64) -> i64 {
    let first = days_from_civil(year, month, 1);
    let wd = weekday(first);
    if wd > 4 {
        first + 8 - wd
    } else {
        first - (wd - 1)
    }
}

fn next_month(year: i64, month: i64) -> (i64, i64) {
    if month == 12 {
        (year + 1, 1)
    } else {
        (year, month + 1)
    }
}

fn previous_month(year: i64, month: i64) -> (i64, i64) {
    if month == 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    }
}

/// The calendar fields of a moment (already shifted to its time zone).
struct Fields {
    days: i64,
    year: i64,
    month: i64,
    day: i64,
    millis_of_day: i64,
}

impl Fields {
    fn at(millis: i64) -> Fields {
        let days = millis.div_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Fields {
            days,
            year,
            month,
            day,
            millis_of_day: millis.rem_euclid(MS_PER_DAY),
        }
    }

    /// The value of an integer-valued component (and `P`: 0 am, 1 pm).
    fn value(&self, component: char) -> i64 {
        let hour = self.millis_of_day / 3_600_000;
        match component {
            'Y' => self.year,
            'M' => self.month,
            'D' => self.day,
            'd' => self.days - days_from_civil(self.year, 1, 1) + 1,
            'F' => weekday(self.days),
            'W' | 'X' => {
                let start = first_week_start(self.year, 1);
                let next = first_week_start(self.year + 1, 1);
                let (year, week) = if self.days >= next {
                    (self.year + 1, 1)
                } else if self.days < start {
                    let previous = first_week_start(self.year - 1, 1);
                    (self.year - 1, (self.days - previous) / 7 + 1)
                } else {
                    (self.year, (self.days - start) / 7 + 1)
                };
                if component == 'W' {
                    week
                } else {
                    year
                }
            }
            'w' | 'x' => {
                let start = first_week_start(self.year, self.month);
                let (ny, nm) = next_month(self.year, self.month);
                let (month, week) = if self.days >= first_week_start(ny, nm) {
                    (nm, 1)
                } else if self.days < start {
                    let (py, pm) = previous_month(self.year, self.month);
                    (pm, (self.days - first_week_start(py, pm)) / 7 + 1)
                } else {
                    (self.month, (self.days - start) / 7 + 1)
                };
                if component == 'w' {
                    week
                } else {
                    month
                }
            }
            'H' => hour,
            'h' => match hour % 12 {
                0 => 12,
                h => h,
            },
            'P' => i64::from(hour >= 12),
            'm' => self.millis_of_day / 60_000 % 60,
            's' => self.millis_of_day / 1000 % 60,
            'f' => self.millis_of_day % 1000,
            _ => 0,
        }
    }
}

fn cased(text: &str, case: Case) -> String {
    match case {
        Case::Upper => text.to_uppercase(),
        Case::Lower => text.to_lowercase(),
        Case::Title => text.to_string(),
    }
}

/// `millis` written with `picture` in the time zone `offset` minutes east of UTC.
fn format_date_time(millis: i64, picture: &str, offset: i64) -> Result<String, DtError> {
    let parts = analyse(picture)?;
    let fields = Fields::at(millis + offset * 60_000);
    let mut out = String::new();
    for part in &parts {
        match part {
            Part::Literal(text) => out.push_str(text),
            Part::Marker(marker) => out.push_str(&format_marker(marker, &fields, offset)?),
        }
    }
    Ok(out)
}

fn format_marker(marker: &Marker, fields: &Fields, offset: i64) -> Result<String, DtError> {
    if let Some(error) = &marker.deferred {
        return Err(error.clone());
    }
    let c = marker.component;
    match c {
        'Z' | 'z' => format_zone(marker, offset),
        'P' => {
            let text = if fields.value('P') == 1 { "pm" } else { "am" };
            Ok(match marker.names {
                Some(Case::Upper) => text.to_uppercase(),
                _ => text.to_string(),
            })
        }
        'C' | 'E' => Ok("ISO".to_string()),
        _ => {
            let mut value = fields.value(c);
            if let Some(case) = marker.names {
                let name = match c {
                    'M' | 'x' => MONTHS.get((value - 1) as usize),
                    'F' => DAYS.get((value - 1) as usize),
                    _ => return Err(no_names(c)),
                };
                let mut name = cased(name.copied().unwrap_or_default(), case);
                if let Some(max) = marker.max_width {
                    name = name.chars().take(max).collect();
                }
                return Ok(name);
            }
            if let Some(n) = marker.year_digits.filter(|&n| n < 18) {
                value %= 10_i64.pow(n as u32);
            }
            match &marker.integer {
                Some(picture) => Ok(picture.format(value as f64)),
                None => Ok(value.to_string()),
            }
        }
    }
}

/// A time zone: `+hh:mm` for a picture with a regular separator, else `+h[:mm]` for one or
/// two digits, `+hhmm` for three or four; `GMT` before it for `z`; `Z` for a zero offset
/// when the picture ends in `t`.
fn format_zone(marker: &Marker, offset: i64) -> Result<String, DtError> {
    if marker.names.is_some() {
        return Err(no_names(marker.component));
    }
    let too_many = || {
        (
            "D3134",
            "The timezone integer format specifier cannot have more than four digits".to_string(),
        )
    };
    let picture = marker.integer.as_ref().ok_or_else(too_many)?;
    if offset == 0 && marker.traditional {
        return Ok("Z".to_string());
    }
    let (hours, minutes) = (offset.abs() / 60, offset.abs() % 60);
    let hhmm = (hours * 100 + minutes) as f64;
    let digits = if picture.regular_separator().is_some() {
        picture.format(hhmm)
    } else {
        match picture.digits().map(|(mandatory, _)| mandatory) {
            Some(1 | 2) if minutes != 0 => format!("{}:{minutes:02}", picture.format(hours as f64)),
            Some(1 | 2) => picture.format(hours as f64),
            Some(3 | 4) => picture.format(hhmm),
            _ => return Err(too_many()),
        }
    };
    let sign = if offset < 0 { '-' } else { '+' };
    let gmt = if marker.component == 'z' { "GMT" } else { "" };
    Ok(format!("{gmt}{sign}{digits}"))
}

/// A `$fromMillis` time zone argument: `±hhmm` (JSONata's form; `0000` is UTC) or `±hh:mm`;
/// the empty string is UTC. Minutes east of UTC.
fn parse_timezone(text: &str) -> Option<i64> {
    let text = text.trim();
    if text.is_empty() {
        return Some(0);
    }
    let (sign, rest) = match text.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, text.strip_prefix('+').unwrap_or(text)),
    };
    let number = |s: &str| -> Option<i64> {
        if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (hours, minutes) = match rest.split_once(':') {
        Some((h, m)) => (number(h)?, number(m)?),
        None => {
            let hhmm = number(rest)?;
            (hhmm / 100, hhmm % 100)
        }
    };
    Some(sign * (hours * 60 + minutes))
}

/// An analysed picture and the regex its timestamps match.
struct Reader {
    parts: Vec<Part>,
    regex: Option<regex::Regex>,
}

/// The regex for one marker when parsing.
fn marker_pattern(marker: &Marker) -> Result<String, DtError> {
    if let Some(error) = &marker.deferred {
        return Err(error.clone());
    }
    let c = marker.component;
    if marker.names.is_some() {
        return match c {
            'M' | 'x' | 'F' | 'P' => Ok("[a-z]+".to_string()),
            _ => Err(no_names(c)),
        };
    }
    Ok(match (c, &marker.integer) {
        ('Z' | 'z', Some(picture)) => {
            let gmt = if c == 'z' { "GMT" } else { "" };
            match picture.regular_separator() {
                Some(sep) => format!("{gmt}[-+][0-9]+{}[0-9]+", regex::escape(&sep.to_string())),
                None => format!("{gmt}[-+][0-9]+"),
            }
        }
        ('f', _) => "[0-9]+".to_string(),
        ('P', _) => "[a-z]+".to_string(),
        (_, Some(picture)) => picture.pattern(marker.parse_width),
        _ => return Err(no_names(c)),
    })
}

/// Analyses a picture for parsing (cached per thread: a pipeline reads many timestamps with
/// few pictures).
fn reader(picture: &str) -> Result<Rc<Reader>, DtError> {
    thread_local! {
        static CACHE: RefCell<HashMap<String, Rc<Reader>>> = RefCell::new(HashMap::new());
    }
    if let Some(found) = CACHE.with(|cache| cache.borrow().get(picture).cloned()) {
        return Ok(found);
    }
    let parts = analyse(picture)?;
    let mut pattern = String::from("(?i)\\A");
    for part in &parts {
        match part {
            Part::Literal(text) => pattern.push_str(&regex::escape(text)),
            Part::Marker(marker) => {
                pattern.push('(');
                pattern.push_str(&marker_pattern(marker)?);
                pattern.push(')');
            }
        }
    }
    pattern.push_str("\\z");
    // Literals are escaped and markers bounded, so only a pathologically long picture can
    // exceed the regex size limit; it then matches nothing.
    let regex = regex::Regex::new(&pattern).ok();
    let found = Rc::new(Reader { parts, regex });
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        if cache.len() >= 64 {
            cache.clear();
        }
        cache.insert(picture.to_string(), Rc::clone(&found));
    });
    Ok(found)
}

/// The value a marker's text stands for; `None` when it names nothing.
fn read_marker(marker: &Marker, text: &str) -> Option<f64> {
    let c = marker.component;
    let name_index = |names: &[&str]| {
        names
            .iter()
            .position(|name| {
                let name = match marker.max_width {
                    Some(max) => name.get(..max).unwrap_or(name),
                    None => name,
                };
                name.eq_ignore_ascii_case(text)
            })
            .map(|i| i as f64 + 1.0)
    };
    match c {
        'Z' | 'z' => {
            let text = if c == 'z' { text.get(3..)? } else { text };
            let sign = if text.starts_with('-') { -1.0 } else { 1.0 };
            let digits = text.get(1..)?;
            let sep = marker.integer.as_ref().and_then(Picture::regular_separator);
            let (hours, minutes) = match sep.and_then(|s| digits.split_once(s)) {
                Some((h, m)) => (h, m),
                None if digits.len() <= 2 => (digits, "0"),
                None => digits.split_at_checked(2)?,
            };
            let hours: f64 = hours.parse().ok()?;
            let minutes: f64 = minutes.parse().ok()?;
            Some(sign * (hours * 60.0 + minutes))
        }
        'f' => {
            // The first three digits, as milliseconds.
            let mut ms: String = text.chars().take(3).collect();
            while ms.len() < 3 {
                ms.push('0');
            }
            ms.parse().ok()
        }
        'P' => match text.to_ascii_lowercase().as_str() {
            "am" => Some(0.0),
            "pm" => Some(1.0),
            _ => None,
        },
        'M' | 'x' if marker.names.is_some() => name_index(&MONTHS),
        'F' if marker.names.is_some() => name_index(&DAYS),
        _ => marker.integer.as_ref()?.read(text),
    }
}

/// The components given, by letter.
type Components = HashMap<char, f64>;

/// Bits for the components in `order` that are given, the first the highest.
fn mask(components: &Components, order: &str) -> u32 {
    order
        .chars()
        .fold(0, |m, c| (m << 1) | u32::from(components.contains_key(&c)))
}

/// Whether the given components (`mask`) are some of `set` and nothing else.
fn is_type(mask: u32, set: u32) -> bool {
    mask & !set == 0 && mask & set != 0
}

/// `text` read with `picture`: milliseconds since the epoch, `None` when it does not match.
/// `now` (milliseconds) supplies the leading components that the picture leaves out.
fn parse_date_time(text: &str, picture: &str, now: i64) -> Result<Option<f64>, DtError> {
    let reader = reader(picture)?;
    let Some(captures) = reader.regex.as_ref().and_then(|r| r.captures(text)) else {
        return Ok(None);
    };
    let markers = reader.parts.iter().filter_map(|part| match part {
        Part::Marker(marker) => Some(marker),
        Part::Literal(_) => None,
    });
    let mut given = Components::new();
    for (i, marker) in markers.enumerate() {
        let Some(matched) = captures.get(i + 1) else {
            continue;
        };
        let Some(value) = read_marker(marker, matched.as_str()) else {
            return Ok(None);
        };
        given.insert(marker.component, value);
    }
    if given.is_empty() {
        return Ok(None);
    }

    // Which components make up the date (year-month-day, year-day of year, or the
    // unsupported week dates) and the time (24 or 12 hours).
    let dates = mask(&given, "YXMxWwdD");
    let date_ymd = is_type(dates, 0b1010_0001);
    let date_yd = !date_ymd && is_type(dates, 0b1000_0010);
    let date_month_week = is_type(dates, 0b0101_0100);
    let date_iso_week = !date_month_week && is_type(dates, 0b0100_1000);
    let times = mask(&given, "PHhmsf");
    let time_24 = is_type(times, 0b01_0111);
    let time_12 = !time_24 && is_type(times, 0b10_1111);
    let date_order = if date_yd {
        "YD"
    } else if date_month_week {
        "XxwF"
    } else if date_iso_week {
        "XWF"
    } else {
        "YMD"
    };
    let time_order = if time_12 { "Phmsf" } else { "Hmsf" };

    // Before the first given component: the current time's; after the last: the start of
    // the range; a gap between given ones is an error.
    let current = Fields::at(now);
    let (mut started, mut ended) = (false, false);
    let mut components = given;
    for c in date_order.chars().chain(time_order.chars()) {
        match components.entry(c) {
            Entry::Occupied(_) => {
                started = true;
                if ended {
                    return Err(underspecified());
                }
            }
            Entry::Vacant(slot) if started => {
                slot.insert(if "MDd".contains(c) { 1.0 } else { 0.0 });
                ended = true;
            }
            Entry::Vacant(slot) => {
                // (An omitted am/pm is am, as in JSONata.)
                slot.insert(if c == 'P' {
                    0.0
                } else {
                    current.value(c) as f64
                });
            }
        }
    }
    if date_month_week || date_iso_week {
        return Err(underspecified());
    }
    let get = |c: char| components.get(&c).copied().unwrap_or(0.0);
    let (mut year, mut month, mut day) = (get('Y'), (get('M') - 1.0).max(0.0), get('D'));
    if date_yd {
        if year.abs() > 400_000.0 || get('d').abs() > 1e9 {
            return Ok(None);
        }
        let days = days_from_civil(year as i64, 1, 1) + get('d') as i64 - 1;
        let (y, m, d) = civil_from_days(days);
        (year, month, day) = (y as f64, (m - 1) as f64, d as f64);
    }
    let hour = if time_12 {
        let h = get('h');
        (if h == 12.0 { 0.0 } else { h }) + if get('P') == 1.0 { 12.0 } else { 0.0 }
    } else {
        get('H')
    };
    // Date.UTC: months and days beyond their range carry over.
    year += (month / 12.0).floor();
    month = month.rem_euclid(12.0);
    if !year.is_finite() || year.abs() > 400_000.0 {
        return Ok(None);
    }
    let days = days_from_civil(year as i64, month as i64 + 1, 1) as f64 + day - 1.0;
    let mut millis = days * MS_PER_DAY as f64
        + hour * 3_600_000.0
        + get('m') * 60_000.0
        + get('s') * 1000.0
        + get('f');
    let zone = match (get('Z'), get('z')) {
        (z, _) if z != 0.0 => z,
        (_, z) => z,
    };
    millis -= zone * 60_000.0;
    Ok((millis.is_finite() && millis.abs() <= MAX_MILLIS).then_some(millis))
}

/// An ISO 8601 timestamp as JSONata reads one without picture: `yyyy[-mm[-dd]]`, then
/// optionally `Thh:mm:ss`, fractional seconds and a `Z` or `±hh[:]mm` offset. `None` when it
/// is not one (D3110). A timestamp without offset is UTC.
fn parse_iso(text: &str) -> Option<f64> {
    static ISO: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    let iso = ISO.get_or_init(|| {
        regex::Regex::new(
            r"\A([0-9]{4})(?:-([01][0-9])(?:-([0-3][0-9]))?)?(?:T([0-2][0-9]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?)?(Z|([-+])([0-2][0-9]):?([0-5][0-9]))?\z",
        )
        .ok()
    });
    let captures = iso.as_ref()?.captures(text)?;
    let number = |i: usize, default: i64| -> i64 {
        captures
            .get(i)
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(default)
    };
    let (year, month, day) = (number(1, 0), number(2, 1), number(3, 1));
    let (hour, minute, second) = (number(4, 0), number(5, 0), number(6, 0));
    let fraction = captures.get(7).map_or(0, |m| {
        let mut ms: String = m.as_str().chars().take(3).collect();
        while ms.len() < 3 {
            ms.push('0');
        }
        ms.parse().unwrap_or(0)
    });
    let (next_year, next_month) = next_month(year, month);
    let days_in_month = days_from_civil(next_year, next_month, 1) - days_from_civil(year, month, 1);
    let end_of_day = hour == 24 && minute == 0 && second == 0 && fraction == 0;
    if !(1..=12).contains(&month)
        || !(1..=days_in_month).contains(&day)
        || (hour > 23 && !end_of_day)
    {
        return None;
    }
    let offset = match captures.get(9) {
        Some(sign) => {
            let (h, m) = (number(10, 0), number(11, 0));
            if h > 23 {
                return None;
            }
            (h * 60 + m) * if sign.as_str() == "-" { -1 } else { 1 }
        }
        None => 0,
    };
    let millis = days_from_civil(year, month, day) * MS_PER_DAY
        + ((hour * 60 + minute - offset) * 60 + second) * 1000
        + fraction;
    Some(millis as f64)
}

fn raise(ctx: &FunctionContext<'_, '_>, (code, message): DtError) -> jsonata_rs::Error {
    custom_error(ctx, code, &message)
}

/// The current time: one instant per evaluation (see `EvalScope::now_millis`), the clock's
/// outside of one.
fn now_millis() -> i64 {
    with_scope(|scope| scope.now_millis()).unwrap_or_else(|| chrono::Utc::now().timestamp_millis())
}

/// `$toMillis(timestamp [, picture])`.
pub(super) fn fn_to_millis<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let args = check_signature(&ctx, "toMillis", args)?;
    let text = match arg(&args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::String(s) => s.as_str(),
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let millis = match arg(&args, 1) {
        Value::Undefined => Some(parse_iso(text).ok_or_else(|| {
            raise(
                &ctx,
                (
                    "D3110",
                    format!(
                        "The argument of the toMillis function must be an ISO 8601 formatted \
                         timestamp. Given {text:?}"
                    ),
                ),
            )
        })?),
        Value::String(picture) => {
            parse_date_time(text, picture.as_str(), now_millis()).map_err(|e| raise(&ctx, e))?
        }
        _ => return Err(bad_arg(&ctx, 2)),
    };
    Ok(match millis {
        Some(ms) => Value::number(ctx.arena, ms),
        None => Value::undefined(),
    })
}

/// `$fromMillis(millis [, picture [, timezone]])`.
pub(super) fn fn_from_millis<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let args = check_signature(&ctx, "fromMillis", args)?;
    let millis = match arg(&args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Number(n) if n.is_finite() && n.abs() <= MAX_MILLIS => n.trunc() as i64,
        _ => return Err(bad_arg(&ctx, 1)),
    };
    format_with(&ctx, millis, args.get(1..).unwrap_or_default(), 2)
}

/// `$now([picture [, timezone]])`: the evaluation's current time (the same instant however
/// often it is called in one evaluation), as `$fromMillis` writes it: ISO 8601 in UTC with
/// milliseconds without arguments.
pub(super) fn fn_now<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let args = check_signature(&ctx, "now", args)?;
    format_with(&ctx, now_millis(), &args, 1)
}

/// `$millis()`: the evaluation's current time in milliseconds since the epoch (the instant of
/// `$now()`).
pub(super) fn fn_millis<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    check_signature(&ctx, "millis", args)?;
    Ok(Value::number(ctx.arena, now_millis() as f64))
}

/// `millis` written with the optional picture and time zone arguments in `rest`, the picture
/// being argument number `first` (for error messages).
fn format_with<'a>(
    ctx: &FunctionContext<'a, '_>,
    millis: i64,
    rest: &[&'a Value<'a>],
    first: usize,
) -> Res<'a> {
    let picture = match arg(rest, 0) {
        Value::Undefined => ISO_PICTURE,
        Value::String(s) => s.as_str(),
        _ => return Err(bad_arg(ctx, first)),
    };
    let offset = match arg(rest, 1) {
        Value::Undefined => 0,
        Value::String(s) => match parse_timezone(s.as_str()) {
            // Within a day or so of UTC: enough for every real zone, and no overflow.
            Some(offset) if offset.abs() < 100 * 60 => offset,
            _ => return Err(bad_arg(ctx, first + 1)),
        },
        _ => return Err(bad_arg(ctx, first + 1)),
    };
    match format_date_time(millis, picture, offset) {
        Ok(text) => Ok(Value::string(ctx.arena, &text)),
        Err(e) => Err(raise(ctx, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2018-03-23T10:33:36.617Z, a Friday.
    const T: i64 = 1_521_801_216_617;
    const NOW: i64 = 1_700_000_000_000; // 2023-11-14T22:13:20Z

    fn format(millis: i64, picture: &str, offset: i64) -> String {
        format_date_time(millis, picture, offset).unwrap_or_else(|(code, _)| code.to_string())
    }

    fn parse(text: &str, picture: &str) -> Result<Option<f64>, &'static str> {
        parse_date_time(text, picture, NOW).map_err(|(code, _)| code)
    }

    #[test]
    fn civil_calendar_round_trips() {
        for days in [-719_468, -1, 0, 59, 60, 365, 10_957, 17_618, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        assert_eq!(weekday(0), 4); // a Thursday
    }

    #[test]
    fn formats_components() {
        assert_eq!(
            format(T, "[Y0001]-[M01]-[D01] [H01]:[m]:[s].[f001]", 0),
            "2018-03-23 10:33:36.617"
        );
        assert_eq!(
            format(T, "[FNn], [D1o] [MNn,3-3] [Y]", 0),
            "Friday, 23rd Mar 2018"
        );
        assert_eq!(
            format(T, "[Dwo] [MN] [Yw]", 0),
            "twenty-third MARCH two thousand and eighteen"
        );
        assert_eq!(format(T, "[YI] [Mi] [Da] [MA]", 0), "MMXVIII iii w C");
        assert_eq!(
            format(T, "[h]:[m] [P] [PN] [d] [F1] [W] [X]", 0),
            "10:33 am AM 82 5 12 2018"
        );
        assert_eq!(
            format(T, "[Y,2] [Y##01,2-2] [D,3] [M,*-1]", 0),
            "18 18 023 3"
        );
        assert_eq!(format(T, "[[[Y]]] ]] [H1]", 0), "[2018] ] 10");
        assert_eq!(format(T, "[ H 0 1 ]", 0), "10");
        assert_eq!(format(T, "[Y,5000]", 0).len(), MAX_WIDTH);
        // Time zones.
        assert_eq!(format(T, "[H01]:[m01][Z]", 330), "16:03+05:30");
        assert_eq!(format(T, "[H01]:[m01][Z0]", -330), "05:03-5:30");
        assert_eq!(
            format(T, "[Z0101] [z] [Z01:01t]", -60),
            "-0100 GMT-01:00 -01:00"
        );
        assert_eq!(format(T, "[Z0101t] [Z01:01] [z0]", 0), "Z +00:00 GMT+0");
        // Week of month: 1 Jan 2017 (a Sunday) is in the 5th week of December.
        assert_eq!(
            format(1_483_272_000_000, "[w] [xNn] [W] [X]", 0),
            "5 December 52 2016"
        );
    }

    #[test]
    fn format_errors() {
        assert_eq!(format(T, "[YN]", 0), "D3133");
        assert_eq!(format(T, "[Y", 0), "D3135");
        assert_eq!(format(T, "[YN]-[M", 0), "D3135");
        assert_eq!(format(T, "[q]", 0), "D3132");
        assert_eq!(format(T, "[]", 0), "D3132");
        assert_eq!(format(T, "[Z010101]", 0), "D3134");
        assert_eq!(format(T, "[Dα]", 0), "D3130");
        assert_eq!(format(T, "[D0١]", 0), "D3131");
    }

    #[test]
    fn parses_pictures() {
        let cases: &[(&str, &str, f64)] = &[
            ("201802", "[Y0001][M01]", 1_517_443_200_000.0),
            ("201802", "[Y,*-4][M01]", 1_517_443_200_000.0),
            ("2018-094", "[Y0001]-[d001]", 1_522_800_000_000.0),
            ("2018-400", "[Y0001]-[d001]", 1_549_238_400_000.0), // 2019-02-04
            ("27th 3 1976", "[D1o] [M#1] [Y0001]", 196_732_800_000.0),
            ("27 iii MMXVIII", "[D1] [Mi] [YI]", 1_522_108_800_000.0),
            ("ae C mmxviii", "[Da] [MA] [Yi]", 1_522_454_400_000.0),
            ("2 feb 2012", "[D1] [MNn,3-3] [Y0001]", 1_328_140_800_000.0),
            (
                "nineteen hundred and eighty-four",
                "[Yw]",
                441_763_200_000.0,
            ),
            (
                "Twentieth of August, two thousand and seventeen",
                "[DW] of [MNn], [Yw]",
                1_503_187_200_000.0,
            ),
            (
                "Mon, Twelfth November 2018",
                "[FNn,*-3], [DWwo] [MNn] [Y]",
                1_541_980_800_000.0,
            ),
            (
                "4/4/2018 12:06 am",
                "[D1]/[M1]/[Y0001] [h]:[m] [P]",
                1_522_800_360_000.0,
            ),
            (
                "4/4/2018 12:06 PM",
                "[D1]/[M1]/[Y0001] [h]:[m] [P]",
                1_522_843_560_000.0,
            ),
            (
                "2020-09-09 12:00:00 +05:30",
                "[Y0001]-[M01]-[D01] [H01]:[m01]:[s01] [Z]",
                1_599_633_000_000.0,
            ),
            (
                "2020-09-09 12:00:00 -05:30",
                "[Y0001]-[M01]-[D01] [H01]:[m01]:[s01] [Z]",
                1_599_672_600_000.0,
            ),
            (
                "2020-09-09 12:00:00 -0530",
                "[Y0001]-[M01]-[D01] [H01]:[m01]:[s01] [Z0001]",
                1_599_672_600_000.0,
            ),
            (
                "2020-09-09 12:00:00 GMT-5",
                "[Y0001]-[M01]-[D01] [H01]:[m01]:[s01] [z01]",
                1_599_670_800_000.0,
            ),
            (
                "2026-04-08T19:05:04.01987",
                "[Y0001]-[M01]-[D01]T[H01]:[m01]:[s01].[f1]",
                1_775_675_104_019.0,
            ),
            ("04.5", "[s01].[f1]", NOW as f64 - 20_000.0 + 4_500.0),
        ];
        for &(text, picture, millis) in cases {
            assert_eq!(parse(text, picture), Ok(Some(millis)), "{text} {picture}");
        }
    }

    #[test]
    fn leading_components_come_from_now_and_trailing_ones_start_their_range() {
        // NOW is 2023-11-14T22:13:20Z.
        assert_eq!(parse("13:45", "[H]:[m]"), Ok(Some(1_699_969_500_000.0)));
        assert_eq!(parse("5-22", "[M]-[D]"), Ok(Some(1_684_713_600_000.0)));
        assert_eq!(parse("2018", "[Y]"), Ok(Some(1_514_764_800_000.0)));
    }

    #[test]
    fn parse_failures() {
        assert_eq!(parse("Hello", "Hello"), Ok(None));
        assert_eq!(parse("irrelevant", "[Y]-[M]-[D]"), Ok(None));
        assert_eq!(parse("2018 Foo", "[Y] [MNn]"), Ok(None));
        assert_eq!(parse("2018-05-22", "[Y]-[M]-[q]"), Err("D3132"));
        assert_eq!(parse("2018-05-22", "[YN]-[M]-[D]"), Err("D3133"));
        assert_eq!(parse("ISO 2018", "[E] [Y]"), Err("D3133"));
        assert_eq!(parse("2018-22", "[Y]-[D]"), Err("D3136"));
        assert_eq!(parse("5-22 23:59", "[M]-[D] [m]:[s]"), Err("D3136"));
        assert_eq!(parse("2018-32-5", "[X]-[W]-[F1]"), Err("D3136"));
        assert_eq!(parse("99999999999999999999", "[Y]"), Ok(None));
    }

    #[test]
    fn iso_timestamps() {
        assert_eq!(parse_iso("1970-01-01T00:00:00.001Z"), Some(1.0));
        assert_eq!(
            parse_iso("2018-02-01T09:42:13.123+0000"),
            Some(1_517_478_133_123.0)
        );
        assert_eq!(
            parse_iso("2018-02-01T09:42:13.1234-05:30"),
            Some(1_517_497_933_123.0)
        );
        assert_eq!(parse_iso("2017-10-30"), Some(1_509_321_600_000.0));
        assert_eq!(parse_iso("2018"), Some(1_514_764_800_000.0));
        assert_eq!(parse_iso("2018-12-31T24:00:00Z"), Some(1_546_300_800_000.0));
        for bad in [
            "foo",
            "01-02-2018",
            "2018-02-03 11:15:33",
            "2018-02-30",
            "2018-13",
            "2018.5",
            "２０１８",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
    }

    #[test]
    fn timezone_arguments() {
        assert_eq!(parse_timezone("+0530"), Some(330));
        assert_eq!(parse_timezone("-0530"), Some(-330));
        assert_eq!(parse_timezone("-05:30"), Some(-330));
        assert_eq!(parse_timezone("0000"), Some(0));
        assert_eq!(parse_timezone(""), Some(0));
        assert_eq!(parse_timezone("é+00"), None);
        assert_eq!(parse_timezone("+"), None);
    }

    #[test]
    fn no_picture_or_input_panics() {
        // Pictures and timestamps made of the characters that matter, pseudo-randomly.
        const PIECES: &[&str] = &[
            "[",
            "]",
            "[[",
            "]]",
            ",",
            "-",
            "*",
            "Y",
            "M",
            "D",
            "d",
            "F",
            "W",
            "w",
            "X",
            "x",
            "H",
            "h",
            "P",
            "m",
            "s",
            "f",
            "Z",
            "z",
            "C",
            "E",
            "N",
            "n",
            "o",
            "t",
            "0",
            "1",
            "9",
            "#",
            "I",
            "i",
            "a",
            "A",
            ":",
            " ",
            "é",
            "١",
            "𝟎",
            "GMT",
            "+",
            "12",
            "twenty",
            "am",
            "March",
            ";",
            "999999999999999999999",
        ];
        use rand::{RngExt, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x2545_f491_4f6c_dd1d);
        let mut next = |n: usize| rng.random_range(0..n);
        for _ in 0..5000 {
            let mut picture = String::new();
            let mut text = String::new();
            for _ in 0..next(12) {
                picture.push_str(PIECES[next(PIECES.len())]);
                text.push_str(PIECES[next(PIECES.len())]);
            }
            let _ = format_date_time(T, &picture, next(1500) as i64 - 750);
            let _ = format_date_time(-62_135_596_800_000, &picture, 0);
            let _ = parse_date_time(&text, &picture, NOW);
            let _ = parse_date_time(&picture, &picture, NOW);
            let _ = parse_iso(&text);
            let _ = parse_timezone(&text);
        }
    }
}
