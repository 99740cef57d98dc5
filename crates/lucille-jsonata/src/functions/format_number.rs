//! `$formatNumber(number, picture [, options])`, following JSONata's implementation of the
//! XPath F&O 3.1 `format-number` picture syntax.

use jsonata_rs::{FunctionContext, Value};

use super::Res;
use super::{arg, bad_arg, custom_error, max_args, round_half_even};

struct Properties {
    decimal: char,
    grouping: char,
    exponent: char,
    minus: char,
    /// Percent and per-mille signs: any text (they are passive, so only searched for).
    percent: String,
    per_mille: String,
    zero: char,
    digit: char,
    pattern: char,
    infinity: String,
    nan: String,
}

impl Properties {
    fn is_family(&self, c: char) -> bool {
        (self.zero as u32..self.zero as u32 + 10).contains(&(c as u32))
    }
    fn is_active(&self, c: char) -> bool {
        self.is_family(c)
            || c == self.decimal
            || c == self.exponent
            || c == self.grouping
            || c == self.digit
            || c == self.pattern
    }
}

struct Parts {
    prefix: String,
    suffix: String,
    /// Between prefix and suffix: the whole sub-picture when it has no active character.
    active: Vec<char>,
    integer: Vec<char>,
    fraction: Vec<char>,
    exponent: Option<Vec<char>>,
    picture: String,
}

struct Analysis {
    grouping_positions: Vec<usize>,
    regular_grouping: usize,
    min_integer: usize,
    scaling_factor: i32,
    prefix: String,
    suffix: String,
    fraction_grouping_positions: Vec<usize>,
    min_fraction: usize,
    max_fraction: usize,
    min_exponent: usize,
    picture: String,
}

/// Splits a sub-picture as JSONata does: the prefix and suffix are the passive text before
/// the first and after the last active character other than the exponent separator (both
/// empty when there is none); an exponent separator after the prefix (and at most directly
/// after the active part) starts the exponent.
fn split_parts(sub: &str, p: &Properties) -> Parts {
    let chars: Vec<char> = sub.chars().collect();
    let is_mantissa_active = |c: char| p.is_active(c) && c != p.exponent;
    let first = chars.iter().position(|&c| is_mantissa_active(c));
    let last = chars.iter().rposition(|&c| is_mantissa_active(c));
    let (start, end) = match (first, last) {
        (Some(f), Some(l)) => (f, l + 1),
        _ => (0, chars.len()),
    };
    let prefix: String = chars[..start].iter().collect();
    let suffix: String = chars[end..].iter().collect();
    let active = chars[start..end].to_vec();
    let exponent_at = chars[start..]
        .iter()
        .position(|&c| c == p.exponent)
        .map(|i| start + i)
        .filter(|&i| i <= end);
    let (mantissa, exponent) = match exponent_at {
        Some(e) => (
            &chars[start..e],
            Some(chars.get(e + 1..end).unwrap_or_default().to_vec()),
        ),
        None => (&chars[start..end], None),
    };
    let (integer, fraction) = match mantissa.iter().position(|&c| c == p.decimal) {
        Some(d) => (mantissa[..d].to_vec(), mantissa[d + 1..].to_vec()),
        None => (mantissa.to_vec(), Vec::new()),
    };
    Parts {
        prefix,
        suffix,
        active,
        integer,
        fraction,
        exponent,
        picture: sub.to_string(),
    }
}

/// Validates a sub-picture (XPath F&O 4.7.3). Every rule is checked and the last one broken
/// is reported, in JSONata's order, as JSONata does.
fn validate(parts: &Parts, p: &Properties) -> Result<(), (&'static str, &'static str)> {
    let picture = parts.picture.as_str();
    let count = |c: char| picture.chars().filter(|&x| x == c).count();
    let occurs = |s: &str| picture.matches(s).count();
    let whole: Vec<char> = picture.chars().collect();
    let mut error = None;
    if count(p.decimal) > 1 {
        error = Some((
            "D3081",
            "The sub-picture must not contain more than one instance of the 'decimal-separator' character",
        ));
    }
    if occurs(&p.percent) > 1 {
        error = Some((
            "D3082",
            "The sub-picture must not contain more than one instance of the 'percent' character",
        ));
    }
    if occurs(&p.per_mille) > 1 {
        error = Some((
            "D3083",
            "The sub-picture must not contain more than one instance of the 'per-mille' character",
        ));
    }
    let scaled = occurs(&p.percent) > 0 || occurs(&p.per_mille) > 0;
    if occurs(&p.percent) > 0 && occurs(&p.per_mille) > 0 {
        error = Some((
            "D3084",
            "The sub-picture must not contain both a 'percent' and a 'per-mille' character",
        ));
    }
    let mantissa = parts.integer.iter().chain(&parts.fraction);
    if !mantissa.clone().any(|&c| c == p.digit || p.is_family(c)) {
        error = Some((
            "D3085",
            "The mantissa part of a sub-picture must contain at least one character that is either an 'optional digit character' or a member of the 'decimal digit family'",
        ));
    }
    if parts.active.iter().any(|&c| !p.is_active(c)) {
        error = Some((
            "D3086",
            "A sub-picture must not contain a passive character that is preceded by an active character and that is followed by another active character",
        ));
    }
    match whole.iter().position(|&c| c == p.decimal) {
        Some(d) => {
            let before = d.checked_sub(1).and_then(|i| whole.get(i));
            if before == Some(&p.grouping) || whole.get(d + 1) == Some(&p.grouping) {
                error = Some((
                    "D3087",
                    "The sub-picture must not contain a 'grouping-separator' character that appears adjacent to a 'decimal-separator' character",
                ));
            }
        }
        None if parts.integer.last() == Some(&p.grouping) => {
            error = Some((
                "D3088",
                "The sub-picture must not contain a 'grouping-separator' at the end of the integer part",
            ));
        }
        None => {}
    }
    if whole
        .windows(2)
        .any(|w| w[0] == p.grouping && w[1] == p.grouping)
    {
        error = Some((
            "D3089",
            "The sub-picture must not contain two adjacent instances of the 'grouping-separator' character",
        ));
    }
    let int = &parts.integer;
    let first_optional = int.iter().position(|&c| c == p.digit);
    if first_optional.is_some_and(|first| int[..first].iter().any(|&c| p.is_family(c))) {
        error = Some((
            "D3090",
            "The integer part of the sub-picture must not contain a member of the 'decimal digit family' that is followed by an instance of the 'optional digit character'",
        ));
    }
    let fraction = &parts.fraction;
    let last_optional = fraction.iter().rposition(|&c| c == p.digit);
    if last_optional.is_some_and(|last| fraction[last..].iter().any(|&c| p.is_family(c))) {
        error = Some((
            "D3091",
            "The fractional part of the sub-picture must not contain an instance of the 'optional digit character' that is followed by a member of the 'decimal digit family'",
        ));
    }
    if let Some(exp) = &parts.exponent {
        if !exp.is_empty() && scaled {
            error = Some((
                "D3092",
                "A sub-picture that contains a 'percent' or 'per-mille' character must not contain a character treated as an 'exponent-separator'",
            ));
        }
        if exp.is_empty() || exp.iter().any(|&c| !p.is_family(c)) {
            error = Some((
                "D3093",
                "The exponent part of the sub-picture must comprise only of one or more characters that are members of the 'decimal digit family'",
            ));
        }
    }
    error.map_or(Ok(()), Err)
}

fn analyse(parts: Parts, p: &Properties) -> Analysis {
    let digits_in = |part: &[char]| {
        part.iter()
            .filter(|&&c| p.is_family(c) || c == p.digit)
            .count()
    };
    // Integer part: digits to the right of each grouping separator.
    let grouping_positions: Vec<usize> = parts
        .integer
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c == p.grouping)
        .map(|(i, _)| digits_in(&parts.integer[i..]))
        .collect();
    let regular_grouping = {
        fn gcd(a: usize, b: usize) -> usize {
            match b {
                0 => a,
                _ => gcd(b, a % b),
            }
        }
        match grouping_positions.iter().copied().reduce(gcd) {
            Some(factor)
                if factor > 0
                    && (1..=grouping_positions.len())
                        .all(|i| grouping_positions.contains(&(i * factor))) =>
            {
                factor
            }
            _ => 0,
        }
    };
    let fraction_grouping_positions: Vec<usize> = parts
        .fraction
        .iter()
        .enumerate()
        .filter(|&(_, &c)| c == p.grouping)
        .map(|(i, _)| digits_in(&parts.fraction[..i]))
        .collect();
    let mut min_integer = parts.integer.iter().filter(|&&c| p.is_family(c)).count();
    let scaling_factor = min_integer as i32;
    let mut min_fraction = parts.fraction.iter().filter(|&&c| p.is_family(c)).count();
    let mut max_fraction = digits_in(&parts.fraction);
    let exponent_present = parts.exponent.is_some();
    if min_integer == 0 && max_fraction == 0 {
        if exponent_present {
            min_fraction = 1;
            max_fraction = 1;
        } else {
            min_integer = 1;
        }
    }
    if exponent_present && min_integer == 0 && parts.integer.contains(&p.digit) {
        min_integer = 1;
    }
    if min_integer == 0 && min_fraction == 0 {
        min_fraction = 1;
    }
    let min_exponent = parts
        .exponent
        .as_ref()
        .map_or(0, |e| e.iter().filter(|&&c| p.is_family(c)).count());
    Analysis {
        grouping_positions,
        regular_grouping,
        min_integer,
        scaling_factor,
        prefix: parts.prefix,
        suffix: parts.suffix,
        fraction_grouping_positions,
        min_fraction,
        max_fraction,
        min_exponent,
        picture: parts.picture,
    }
}

fn single_char(value: &Value<'_>) -> Option<char> {
    match value {
        Value::String(s) => {
            let mut chars = s.chars();
            let c = chars.next()?;
            chars.next().is_none().then_some(c)
        }
        _ => None,
    }
}

pub(super) fn fn_format_number<'a>(
    ctx: FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Res<'a> {
    max_args(&ctx, args, 3)?;
    let value = match arg(args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Number(n) => *n,
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let picture = match arg(args, 1) {
        Value::String(s) => s.as_str().to_string(),
        _ => return Err(bad_arg(&ctx, 2)),
    };
    let mut p = Properties {
        decimal: '.',
        grouping: ',',
        exponent: 'e',
        minus: '-',
        percent: "%".to_string(),
        per_mille: "\u{2030}".to_string(),
        zero: '0',
        digit: '#',
        pattern: ';',
        infinity: "Infinity".to_string(),
        nan: "NaN".to_string(),
    };
    match arg(args, 2) {
        Value::Undefined => {}
        Value::Object(options) => {
            for (key, v) in options.iter() {
                let c = single_char(v);
                let target = match key.as_str() {
                    "decimal-separator" => &mut p.decimal,
                    "grouping-separator" => &mut p.grouping,
                    "exponent-separator" => &mut p.exponent,
                    "minus-sign" => &mut p.minus,
                    "zero-digit" => &mut p.zero,
                    "digit" => &mut p.digit,
                    "pattern-separator" => &mut p.pattern,
                    "infinity" | "NaN" | "percent" | "per-mille" => {
                        // (An empty percent sign would be found in every picture.)
                        let text = match v {
                            Value::String(s)
                                if !s.as_str().is_empty()
                                    || matches!(key.as_str(), "NaN" | "infinity") =>
                            {
                                s.as_str().to_string()
                            }
                            _ => return Err(bad_arg(&ctx, 3)),
                        };
                        *match key.as_str() {
                            "NaN" => &mut p.nan,
                            "infinity" => &mut p.infinity,
                            "percent" => &mut p.percent,
                            _ => &mut p.per_mille,
                        } = text;
                        continue;
                    }
                    _ => continue,
                };
                match c {
                    Some(c) => *target = c,
                    None => return Err(bad_arg(&ctx, 3)),
                }
            }
        }
        _ => return Err(bad_arg(&ctx, 3)),
    }
    if value.is_nan() {
        return Ok(Value::string(ctx.arena, &p.nan));
    }
    if value.is_infinite() {
        return Ok(Value::string(ctx.arena, &p.infinity));
    }

    let sub_pictures: Vec<&str> = picture.split(p.pattern).collect();
    if sub_pictures.len() > 2 {
        return Err(custom_error(
            &ctx,
            "D3080",
            "The picture string must only contain a maximum of two sub-pictures",
        ));
    }
    let mut analysed = Vec::new();
    for sub in &sub_pictures {
        let parts = split_parts(sub, &p);
        if let Err((code, message)) = validate(&parts, &p) {
            return Err(custom_error(&ctx, code, message));
        }
        analysed.push(analyse(parts, &p));
    }
    let negative_pic;
    let pic = if value >= 0.0 {
        &analysed[0]
    } else if analysed.len() > 1 {
        &analysed[1]
    } else {
        let base = &analysed[0];
        negative_pic = Analysis {
            grouping_positions: base.grouping_positions.clone(),
            prefix: format!("{}{}", p.minus, base.prefix),
            suffix: base.suffix.clone(),
            fraction_grouping_positions: base.fraction_grouping_positions.clone(),
            picture: base.picture.clone(),
            ..*base
        };
        &negative_pic
    };

    let mut adjusted = value;
    if pic.picture.contains(p.percent.as_str()) {
        adjusted *= 100.0;
    } else if pic.picture.contains(p.per_mille.as_str()) {
        adjusted *= 1000.0;
    }
    let mut exponent: Option<i32> = None;
    let mut mantissa = adjusted.abs();
    if pic.min_exponent > 0 {
        let max_mantissa = 10f64.powi(pic.scaling_factor);
        let min_mantissa = 10f64.powi(pic.scaling_factor - 1);
        let mut e = 0;
        if mantissa != 0.0 {
            while mantissa < min_mantissa {
                mantissa *= 10.0;
                e -= 1;
            }
            while mantissa > max_mantissa {
                mantissa /= 10.0;
                e += 1;
            }
        }
        exponent = Some(e);
    }
    let rounded = round_half_even(mantissa, pic.max_fraction as i32);
    let to_family = |s: &str| -> Vec<char> {
        s.chars()
            .map(|c| match c.to_digit(10) {
                Some(d) => char::from_u32(p.zero as u32 + d).unwrap_or(c),
                None => c,
            })
            .collect()
    };
    let fixed = format!("{:.*}", pic.max_fraction, rounded.abs());
    let mut s: Vec<char> = to_family(&fixed);
    match s.iter().position(|&c| c == '.') {
        Some(i) => s[i] = p.decimal,
        None => s.push(p.decimal),
    }
    while s.first() == Some(&p.zero) {
        s.remove(0);
    }
    while s.last() == Some(&p.zero) {
        s.pop();
    }
    let decimal_pos = s.iter().position(|&c| c == p.decimal).unwrap_or(s.len());
    let pad_left = pic.min_integer.saturating_sub(decimal_pos);
    let fraction_len = s.len() - decimal_pos - 1;
    let pad_right = pic.min_fraction.saturating_sub(fraction_len);
    let mut padded: Vec<char> = std::iter::repeat_n(p.zero, pad_left).collect();
    padded.extend(s);
    padded.extend(std::iter::repeat_n(p.zero, pad_right));
    let mut s = padded;

    let mut decimal_pos = s.iter().position(|&c| c == p.decimal).unwrap_or(s.len());
    if let Some(groups) = decimal_pos
        .saturating_sub(1)
        .checked_div(pic.regular_grouping)
    {
        for group in 1..=groups {
            s.insert(decimal_pos - group * pic.regular_grouping, p.grouping);
        }
    } else {
        for &pos in &pic.grouping_positions {
            if pos <= decimal_pos {
                s.insert(decimal_pos - pos, p.grouping);
                decimal_pos += 1;
            }
        }
    }
    let decimal_pos = s.iter().position(|&c| c == p.decimal).unwrap_or(s.len());
    for &pos in &pic.fraction_grouping_positions {
        let at = pos + decimal_pos + 1;
        if at <= s.len() {
            s.insert(at, p.grouping);
        }
    }
    if s.last() == Some(&p.decimal) {
        s.pop();
    }
    let mut out: String = pic.prefix.clone();
    out.extend(s);
    if let Some(e) = exponent {
        let digits = to_family(&e.unsigned_abs().to_string());
        out.push(p.exponent);
        if e < 0 {
            out.push(p.minus);
        }
        out.extend(std::iter::repeat_n(
            p.zero,
            pic.min_exponent.saturating_sub(digits.len()),
        ));
        out.extend(digits);
    }
    out.push_str(&pic.suffix);
    Ok(Value::string(ctx.arena, &out))
}
