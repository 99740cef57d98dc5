//! `$formatInteger(number, picture)` and `$parseInteger(string, picture)`: integers written
//! and read with an XPath F&O 3.1 picture string, as JSONata defines them (jsonata-rs 0.3.4
//! has neither).
//!
//! Pictures: a decimal digit pattern (`0000`, `#,##0`, digits of any one Unicode decimal
//! digit family, e.g. `###١` or fullwidth `###０`; `#` for optional digits; any other
//! character is a grouping separator, repeated to the left when the separators are regular),
//! `A` / `a` (letters: 1 = a, 26 = z, 27 = aa), `I` / `i` (roman numerals), `W` / `w` / `Ww`
//! (English words, upper, lower or title case). After a `;`, `o` asks for an ordinal (`1st`,
//! `first`) and `c` for a cardinal (the default).

use jsonata_rs::{FunctionContext, Value};

use super::{arg, bad_arg, custom_error, max_args};

type Res<'a> = jsonata_rs::Result<&'a Value<'a>>;

/// A picture error: its JSONata code and message.
pub(super) type PictureError = (&'static str, &'static str);

const UNSUPPORTED: PictureError = (
    "D3130",
    "Formatting or parsing an integer as a sequence starting with this picture is not supported",
);
const MIXED_DIGITS: PictureError = (
    "D3131",
    "In a decimal digit pattern, all digits must be from the same decimal group",
);

/// The zero of every Unicode decimal digit family (general category Nd) as of Unicode 15:
/// each family is ten consecutive code points. Written out because std only knows ASCII
/// digits and no crate in the tree exposes the Nd category.
const DIGIT_ZEROS: &[u32] = &[
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66,
    0xDE6, 0xE50, 0xED0, 0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90,
    0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650,
    0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60, 0x16AC0,
    0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950,
    0x1FBF0,
];

/// The zero of `c`'s digit family and `c`'s value, if `c` is a decimal digit.
fn digit(c: char) -> Option<(u32, u32)> {
    let code = c as u32;
    DIGIT_ZEROS
        .iter()
        .find(|&&zero| (zero..zero + 10).contains(&code))
        .map(|&zero| (zero, code - zero))
}

#[derive(Debug, PartialEq)]
enum Primary {
    Letters { upper: bool },
    Roman { upper: bool },
    Words(Case),
    Decimal(Decimal),
}

#[derive(Debug, PartialEq, Clone, Copy)]
enum Case {
    Lower,
    Upper,
    Title,
}

#[derive(Debug, PartialEq)]
struct Decimal {
    zero: u32,
    /// Mandatory digits (the digit characters of the pattern).
    mandatory: usize,
    /// Optional digits (the `#`s of the pattern).
    optional: usize,
    /// (position counted in digits from the right, separator), nearest the units first.
    separators: Vec<(usize, char)>,
    /// Every `n` digits, when the separators are regular.
    regular: Option<(usize, char)>,
}

/// An analysed integer picture; also the integer part of a date/time picture's variable
/// markers (`[D01]`, `[Yw]`, `[D1o]`), see `datetime`.
#[derive(Debug, PartialEq)]
pub(super) struct Picture {
    primary: Primary,
    ordinal: bool,
}

impl Picture {
    /// Analyses `picture` (D3130 for an unsupported one, D3131 for mixed digit families).
    pub(super) fn parse(picture: &str) -> Result<Picture, PictureError> {
        parse_picture(picture)
    }

    /// (mandatory, optional) digits of a decimal digit pattern; `None` for other formats.
    pub(super) fn digits(&self) -> Option<(usize, usize)> {
        match &self.primary {
            Primary::Decimal(d) => Some((d.mandatory, d.optional)),
            _ => None,
        }
    }

    /// Sets the mandatory digits of a decimal digit pattern (a date/time width modifier);
    /// other formats have none.
    pub(super) fn set_mandatory(&mut self, digits: usize) {
        if let Primary::Decimal(d) = &mut self.primary {
            d.mandatory = digits;
        }
    }

    /// The grouping separator of a decimal digit pattern whose separators are regular.
    pub(super) fn regular_separator(&self) -> Option<char> {
        match &self.primary {
            Primary::Decimal(Decimal {
                regular: Some((_, c)),
                ..
            }) => Some(*c),
            _ => None,
        }
    }

    /// `value` (an integer) written with this picture.
    pub(super) fn format(&self, value: f64) -> String {
        format_with(self, value)
    }

    /// The integer `text` writes with this picture; `None` when it is not one.
    pub(super) fn read(&self, text: &str) -> Option<f64> {
        match &self.primary {
            Primary::Letters { .. } => parse_letters(text),
            Primary::Roman { .. } => parse_roman(text),
            Primary::Words(_) => parse_words(text),
            Primary::Decimal(d) => parse_decimal(text, d, self.ordinal),
        }
    }

    /// A regular expression (for the `regex` crate, to be matched case-insensitively) for
    /// the text this picture writes for a non-negative integer: letters, roman numerals,
    /// number words, or digits of the pattern's family (exactly `width` of them if given),
    /// with the ordinal suffix if the picture asks for one. As JSONata's, it admits no
    /// grouping separators.
    pub(super) fn pattern(&self, width: Option<usize>) -> String {
        match &self.primary {
            Primary::Letters { .. } => "[a-z]+".to_string(),
            Primary::Roman { .. } => "[mdclxvi]+".to_string(),
            Primary::Words(_) => {
                let mut words: Vec<&str> = FEW
                    .iter()
                    .chain(FEW_ORDINAL.iter())
                    .chain(TENS.iter())
                    .chain(TENS_ORDINAL.iter())
                    .chain(["hundred", "hundredth"].iter())
                    .copied()
                    .collect();
                let magnitudes = MAGNITUDES.iter().map(|m| format!("{m}th|{m}"));
                // Longer alternatives first, so that a word is not cut short by its prefix
                // (`seventeen` before `seven`); the overall match backtracks either way.
                words.sort_by_key(|w| std::cmp::Reverse(w.len()));
                let alternatives: Vec<String> = magnitudes
                    .chain(words.into_iter().map(str::to_string))
                    .collect();
                format!("(?:{}|and|[-, ])+", alternatives.join("|"))
            }
            Primary::Decimal(d) => {
                let zero = char::from_u32(d.zero).unwrap_or('0');
                let nine = char::from_u32(d.zero + 9).unwrap_or('9');
                // Digits are no regex metacharacters.
                let class = format!("[{zero}-{nine}]");
                let count = match width {
                    Some(n) => format!("{{{n}}}"),
                    None => "+".to_string(),
                };
                let suffix = if self.ordinal { "(?:st|nd|rd|th)" } else { "" };
                format!("{class}{count}{suffix}")
            }
        }
    }
}

fn parse_picture(picture: &str) -> Result<Picture, PictureError> {
    let (primary, modifier) = match picture.rfind(';') {
        Some(i) => (&picture[..i], &picture[i + 1..]),
        None => (picture, ""),
    };
    let ordinal = modifier.starts_with('o');
    let primary = match primary {
        "A" => Primary::Letters { upper: true },
        "a" => Primary::Letters { upper: false },
        "I" => Primary::Roman { upper: true },
        "i" => Primary::Roman { upper: false },
        "W" => Primary::Words(Case::Upper),
        "w" => Primary::Words(Case::Lower),
        "Ww" => Primary::Words(Case::Title),
        pattern => Primary::Decimal(decimal_pattern(pattern)?),
    };
    Ok(Picture { primary, ordinal })
}

fn decimal_pattern(pattern: &str) -> Result<Decimal, PictureError> {
    let mut zero = None;
    let (mut mandatory, mut optional) = (0, 0);
    let mut marks = Vec::new(); // (digits to its right so far counted from the left, char)
    for c in pattern.chars() {
        if let Some((z, _)) = digit(c) {
            if zero.is_some_and(|known| known != z) {
                return Err(MIXED_DIGITS);
            }
            zero = Some(z);
            mandatory += 1;
        } else if c == '#' {
            optional += 1;
        } else if c.is_alphanumeric() {
            // A letter that is not one of the formats above.
            return Err(UNSUPPORTED);
        } else {
            marks.push((mandatory + optional, c));
        }
    }
    let Some(zero) = zero else {
        return Err(UNSUPPORTED);
    };
    let width = mandatory + optional;
    let mut separators: Vec<(usize, char)> = marks
        .into_iter()
        .map(|(left, c)| (width - left, c))
        .filter(|&(pos, _)| pos > 0)
        .collect();
    separators.reverse();
    let regular = match separators.first() {
        Some(&(first, c)) => separators
            .iter()
            .enumerate()
            .all(|(i, &(pos, sc))| sc == c && pos == first * (i + 1))
            .then_some((first, c)),
        None => None,
    };
    Ok(Decimal {
        zero,
        mandatory,
        optional,
        separators,
        regular,
    })
}

fn format_decimal(n: u128, d: &Decimal) -> String {
    let digits: Vec<u32> = {
        let mut v: Vec<u32> = n.to_string().bytes().map(|b| u32::from(b - b'0')).collect();
        while v.len() < d.mandatory {
            v.insert(0, 0);
        }
        v
    };
    let mut out = Vec::with_capacity(digits.len() * 2);
    for (i, &dv) in digits.iter().rev().enumerate() {
        if i > 0 {
            let sep = match d.regular {
                Some((every, c)) => (i % every == 0).then_some(c),
                None => d
                    .separators
                    .iter()
                    .find(|(pos, _)| *pos == i)
                    .map(|&(_, c)| c),
            };
            out.extend(sep);
        }
        out.push(char::from_u32(d.zero + dv).unwrap_or('?'));
    }
    out.into_iter().rev().collect()
}

fn ordinal_suffix(n: u128) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

fn letters(mut n: u128, upper: bool) -> String {
    let base = if upper { b'A' } else { b'a' };
    let mut out = Vec::new();
    while n > 0 {
        n -= 1;
        out.push(char::from(base + (n % 26) as u8));
        n /= 26;
    }
    out.into_iter().rev().collect()
}

const ROMAN: &[(u128, &str)] = &[
    (1000, "m"),
    (900, "cm"),
    (500, "d"),
    (400, "cd"),
    (100, "c"),
    (90, "xc"),
    (50, "l"),
    (40, "xl"),
    (10, "x"),
    (9, "ix"),
    (5, "v"),
    (4, "iv"),
    (1, "i"),
];

fn roman(mut n: u128, upper: bool) -> String {
    let mut out = String::new();
    for &(value, letters) in ROMAN {
        while n >= value {
            out.push_str(letters);
            n -= value;
        }
    }
    if upper {
        out.to_uppercase()
    } else {
        out
    }
}

const FEW: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];
const FEW_ORDINAL: [&str; 20] = [
    "zeroth",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "sixth",
    "seventh",
    "eighth",
    "ninth",
    "tenth",
    "eleventh",
    "twelfth",
    "thirteenth",
    "fourteenth",
    "fifteenth",
    "sixteenth",
    "seventeenth",
    "eighteenth",
    "nineteenth",
];
const TENS: [&str; 8] = [
    "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];
const TENS_ORDINAL: [&str; 8] = [
    "twentieth",
    "thirtieth",
    "fortieth",
    "fiftieth",
    "sixtieth",
    "seventieth",
    "eightieth",
    "ninetieth",
];
/// 10^3, 10^6, 10^9, 10^12; larger numbers repeat the last (`one thousand trillion`).
const MAGNITUDES: [&str; 4] = ["thousand", "million", "billion", "trillion"];

/// English words for `n` (a non-negative integer); `after` when words precede it (it then
/// starts with " and " or ", "). Doubles, not integers: a number past 2^128 still has words
/// (`1e46` is "ten billion trillion trillion trillion"), exact up to 2^53 as in JavaScript.
fn words(n: f64, after: bool, ordinal: bool) -> String {
    let mut out = String::new();
    if n < 20.0 {
        if after {
            out.push_str(" and ");
        }
        out.push_str(if ordinal { FEW_ORDINAL } else { FEW }[n as usize]);
    } else if n < 100.0 {
        if after {
            out.push_str(" and ");
        }
        let (tens, rest) = ((n / 10.0).floor() as usize - 2, n % 10.0);
        out.push_str(
            if ordinal && rest == 0.0 {
                TENS_ORDINAL
            } else {
                TENS
            }[tens],
        );
        if rest > 0.0 {
            out.push('-');
            out.push_str(&words(rest, false, ordinal));
        }
    } else {
        let (unit, name) = if n < 1000.0 {
            (100.0, "hundred")
        } else {
            let mut mag = 0;
            let mut unit = 1.0;
            while mag < MAGNITUDES.len() && n >= unit * 1000.0 {
                unit *= 1000.0;
                mag += 1;
            }
            (unit, MAGNITUDES[mag - 1])
        };
        if after {
            out.push_str(", ");
        }
        let high = (n / unit).floor();
        out.push_str(&words(high, false, false));
        out.push(' ');
        out.push_str(name);
        let rest = n - high * unit;
        if rest > 0.0 {
            out.push_str(&words(rest, true, ordinal));
        } else if ordinal {
            out.push_str("th");
        }
    }
    out
}

fn cased(text: String, case: Case) -> String {
    match case {
        Case::Lower => text,
        Case::Upper => text.to_uppercase(),
        Case::Title => text
            .split(' ')
            .map(|word| {
                if word == "and" {
                    return word.to_string();
                }
                let mut start = true;
                word.chars()
                    .map(|c| {
                        let c2 = if start { c.to_ascii_uppercase() } else { c };
                        start = c == '-';
                        c2
                    })
                    .collect()
            })
            .collect::<Vec<String>>()
            .join(" "),
    }
}

/// `value` (already an integer) written with `picture`.
pub(super) fn format_integer(value: f64, picture: &str) -> Result<String, PictureError> {
    Ok(Picture::parse(picture)?.format(value))
}

fn format_with(picture: &Picture, value: f64) -> String {
    let negative = value < 0.0;
    // Integers up to 2^128 are exact here; larger ones are beyond what a double spells out.
    let n = value.abs().min(u128::MAX as f64) as u128;
    let text = match &picture.primary {
        Primary::Letters { upper } => letters(n, *upper),
        Primary::Roman { upper } => roman(n, *upper),
        Primary::Words(case) => cased(words(value.abs(), false, picture.ordinal), *case),
        Primary::Decimal(d) => {
            let mut s = format_decimal(n, d);
            if picture.ordinal {
                s.push_str(ordinal_suffix(n));
            }
            s
        }
    };
    match (negative, &picture.primary) {
        (true, Primary::Words(case)) => format!("{}{text}", cased("minus ".into(), *case)),
        (true, _) => format!("-{text}"),
        (false, _) => text,
    }
}

/// The integer `text` writes with `picture`; `None` when it is not one.
pub(super) fn parse_integer(text: &str, picture: &str) -> Result<Option<f64>, PictureError> {
    Ok(Picture::parse(picture)?.read(text))
}

fn parse_letters(text: &str) -> Option<f64> {
    text.chars().try_fold(0.0, |acc, c| {
        let c = c.to_ascii_lowercase();
        c.is_ascii_lowercase()
            .then(|| acc * 26.0 + f64::from(c as u8 - b'a' + 1))
    })
}

fn parse_roman(text: &str) -> Option<f64> {
    let value = |c: char| {
        ROMAN
            .iter()
            .find(|(_, l)| l.len() == 1 && l.starts_with(c.to_ascii_lowercase()))
            .map(|&(v, _)| v as f64)
    };
    let values: Option<Vec<f64>> = text.chars().map(value).collect();
    let values = values?;
    let mut total = 0.0;
    for (i, v) in values.iter().enumerate() {
        if values.get(i + 1).is_some_and(|next| next > v) {
            total -= v;
        } else {
            total += v;
        }
    }
    Some(total)
}

fn word_value(word: &str) -> Option<f64> {
    if let Some(i) = FEW.iter().position(|w| *w == word) {
        return Some(i as f64);
    }
    if let Some(i) = FEW_ORDINAL.iter().position(|w| *w == word) {
        return Some(i as f64);
    }
    if let Some(i) = TENS.iter().position(|w| *w == word) {
        return Some((i as f64 + 2.0) * 10.0);
    }
    if let Some(i) = TENS_ORDINAL.iter().position(|w| *w == word) {
        return Some((i as f64 + 2.0) * 10.0);
    }
    if word == "hundred" || word == "hundredth" {
        return Some(100.0);
    }
    MAGNITUDES
        .iter()
        .position(|m| word == *m || word.strip_suffix("th") == Some(m))
        .map(|i| 1000f64.powi(i as i32 + 1))
}

/// Words back to a number: values under 100 add to the current group, multipliers scale it,
/// and a group of a thousand or more is closed before the next small value starts a new one
/// (so `one thousand trillion` is 10^15 and `three thousand, seven hundred` is 3700).
fn parse_words(text: &str) -> Option<f64> {
    let lower = text.to_lowercase();
    let mut groups = vec![0.0];
    for word in lower
        .split(|c: char| c.is_whitespace() || c == ',' || c == '-')
        .filter(|w| !w.is_empty() && *w != "and")
    {
        let value = word_value(word)?;
        let top = groups.pop().unwrap_or(0.0);
        if value < 100.0 {
            if top >= 1000.0 {
                groups.push(top);
                groups.push(value);
            } else {
                groups.push(top + value);
            }
        } else {
            groups.push(top.max(1.0) * value);
        }
    }
    Some(groups.iter().sum())
}

fn parse_decimal(text: &str, d: &Decimal, ordinal: bool) -> Option<f64> {
    let body = if ordinal {
        text.trim_end_matches(|c: char| c.is_alphabetic())
    } else {
        text
    };
    let (negative, body) = match body.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, body),
    };
    let mut n = 0.0;
    let mut any = false;
    for c in body.chars() {
        match digit(c) {
            Some((zero, v)) if zero == d.zero => {
                n = n * 10.0 + f64::from(v);
                any = true;
            }
            Some(_) => return None,
            None if d.separators.iter().any(|&(_, s)| s == c) => {}
            None => return None,
        }
    }
    any.then_some(if negative { -n } else { n })
}

pub(super) fn fn_format_integer<'a>(
    ctx: FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let value = match arg(args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Number(n) if n.is_finite() => n.floor(),
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let Value::String(picture) = arg(args, 1) else {
        return Err(bad_arg(&ctx, 2));
    };
    match format_integer(value, picture.as_str()) {
        Ok(text) => Ok(Value::string(ctx.arena, &text)),
        Err((code, message)) => Err(custom_error(&ctx, code, message)),
    }
}

pub(super) fn fn_parse_integer<'a>(
    ctx: FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let text = match arg(args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::String(s) => s.as_str(),
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let Value::String(picture) = arg(args, 1) else {
        return Err(bad_arg(&ctx, 2));
    };
    match parse_integer(text, picture.as_str()) {
        Ok(Some(n)) => Ok(Value::number(ctx.arena, n)),
        Ok(None) => Ok(Value::undefined()),
        Err((code, message)) => Err(custom_error(&ctx, code, message)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(value: f64, picture: &str) -> String {
        format_integer(value, picture).unwrap_or_else(|(code, _)| code.to_string())
    }

    #[test]
    fn formats_and_parses_back() {
        for (value, picture, text) in [
            (-3.0, "0000", "-0003"),
            (1234567890.0, "#,##0", "1,234,567,890"),
            (1234567890.0, "#:###,##0", "1234:567,890"),
            (1234567890.0, "##,##,##0", "12345,67,890"),
            (12340.0, "###０", "１２３４０"),
            (123.0, "000;o", "123rd"),
            (111.0, "0;o", "111th"),
            (1984.0, "I", "MCMLXXXIV"),
            (300.0, "A", "KN"),
            (555.0, "Ww", "Five Hundred and Fifty-Five"),
            (
                3731.0,
                "w;o",
                "three thousand, seven hundred and thirty-first",
            ),
            (1e15, "w", "one thousand trillion"),
            (1e12 + 1.0, "w;o", "one trillion and first"),
            (1e46, "w", "ten billion trillion trillion trillion"),
        ] {
            assert_eq!(f(value, picture), text, "{value} {picture}");
            assert_eq!(
                parse_integer(text, picture),
                Ok(Some(value)),
                "{text} {picture}"
            );
        }
    }

    #[test]
    fn bad_pictures() {
        assert_eq!(f(1.0, "##0０"), "D3131");
        assert_eq!(f(1.0, "α"), "D3130");
        assert_eq!(parse_integer("50", "#").err().map(|e| e.0), Some("D3130"));
        assert_eq!(parse_integer("twelve-ish", "w"), Ok(None));
    }
}
