//! Matcher functions: JSONata lets `$match`, `$split` and `$contains` take a function in place
//! of a regex. Called with the string, it returns undefined (no match) or an object
//! `{match, start, end, groups, next}` whose `next()` gives the following match the same way
//! (this is how JSONata's own regexes behave). jsonata-rs 0.3.4 accepts regexes only (a
//! function was T0410), so these calls are handled here; a result of another shape is T1010,
//! as in JSONata. Positions are UTF-16 code units, as in JavaScript.

use std::borrow::Cow;

use jsonata_rs::{ArrayFlags, Error, FunctionContext, Value};

use super::{call_original, custom_error, signature, wrapped_signature, IN_BUILTIN};

type Res<'a> = jsonata_rs::Result<&'a Value<'a>>;

/// A matcher function (regexes are functions to JSONata but jsonata-rs handles them).
fn is_matcher(value: &Value<'_>) -> bool {
    matches!(value, Value::Lambda { .. } | Value::NativeFn { .. })
}

/// The arguments checked against the signature of `WRAPPED[index]` when the second one is a
/// matcher function; `None` when this call is one for jsonata-rs.
fn matcher_call<'a, 'b>(
    index: usize,
    ctx: &FunctionContext<'a, '_>,
    args: &'b [&'a Value<'a>],
) -> Result<Option<Cow<'b, [&'a Value<'a>]>>, Error> {
    if !args.iter().any(|v| is_matcher(v)) {
        return Ok(None);
    }
    let checked = match wrapped_signature(index) {
        Some(sig) => {
            let callback = IN_BUILTIN.with(|depth| depth.get() > 0);
            signature::check(ctx, sig, args, callback)?
        }
        None => Cow::Borrowed(args),
    };
    if checked.get(1).is_some_and(|v| is_matcher(v)) {
        Ok(Some(checked))
    } else {
        Ok(None)
    }
}

/// Calls a matcher (or a match's `next`): the match object, or `None` for no match.
fn evaluate_matcher<'a>(
    ctx: &FunctionContext<'a, '_>,
    matcher: &'a Value<'a>,
    args: &[&'a Value<'a>],
) -> Result<Option<&'a Value<'a>>, Error> {
    if !is_matcher(matcher) {
        return Ok(None);
    }
    let result = ctx.evaluate_function(matcher, args)?;
    let result = ctx.trampoline_evaluate_value(result)?;
    if !result.is_truthy() {
        return Ok(None);
    }
    let well_formed = match result {
        Value::Object(map) => {
            let field = |key: &str| map.get(key).copied().unwrap_or_else(Value::undefined);
            matches!(field("start"), Value::Number(_))
                || matches!(field("end"), Value::Number(_))
                || matches!(field("groups"), Value::Array(..) | Value::Range(..))
                || is_matcher(field("next"))
        }
        _ => false,
    };
    if !well_formed {
        return Err(custom_error(
            ctx,
            "T1010",
            &format!(
                "The matcher function argument passed to function {} does not return the \
                 correct object structure",
                ctx.name
            ),
        ));
    }
    Ok(Some(result))
}

fn field<'a>(value: &'a Value<'a>, key: &str) -> &'a Value<'a> {
    match value {
        Value::Object(map) => map.get(key).copied().unwrap_or_else(Value::undefined),
        _ => Value::undefined(),
    }
}

/// The optional limit argument: `None` for no limit; negative is an error (`code`).
fn limit(
    ctx: &FunctionContext<'_, '_>,
    value: &Value<'_>,
    code: &str,
) -> Result<Option<f64>, Error> {
    match value {
        Value::Number(n) if *n < 0.0 => Err(custom_error(
            ctx,
            code,
            &format!(
                "Third argument of {} function must evaluate to a positive number",
                ctx.name
            ),
        )),
        Value::Number(n) => Ok(Some(*n)),
        _ => Ok(None),
    }
}

/// JavaScript's `str.substring(start, end)` on UTF-16 code units.
fn substring(units: &[u16], start: &Value<'_>, end: Option<&Value<'_>>) -> String {
    let clamp = |v: &Value<'_>| match v {
        Value::Number(n) if n.is_finite() => n.trunc().clamp(0.0, units.len() as f64) as usize,
        Value::Number(n) if *n > 0.0 => units.len(),
        _ => 0,
    };
    let a = clamp(start);
    let b = end.map_or(units.len(), clamp);
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    String::from_utf16_lossy(units.get(a..b).unwrap_or_default())
}

/// Follows the matches of a matcher, at most `limit` of them.
fn each_match<'a>(
    ctx: &FunctionContext<'a, '_>,
    matcher: &'a Value<'a>,
    text: &'a Value<'a>,
    limit: Option<f64>,
    mut found: impl FnMut(&'a Value<'a>),
) -> Result<usize, Error> {
    let mut count = 0usize;
    if limit.is_some_and(|l| l <= 0.0) {
        return Ok(0);
    }
    let mut next = evaluate_matcher(ctx, matcher, &[text])?;
    while let Some(m) = next {
        if limit.is_some_and(|l| count as f64 >= l) {
            break;
        }
        found(m);
        count += 1;
        next = evaluate_matcher(ctx, field(m, "next"), &[])?;
    }
    Ok(count)
}

/// `$match(string, matcher [, limit])`: `{match, index, groups}` for each match.
pub(super) fn wrap_match<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let Some(args) = matcher_call(2, &ctx, args)? else {
        return call_original(2, ctx, args);
    };
    let text = args[0];
    if text.is_undefined() {
        return Ok(Value::undefined());
    }
    let limit = limit(
        &ctx,
        args.get(2).copied().unwrap_or_else(Value::undefined),
        "D3040",
    )?;
    let out = Value::array(ctx.arena, ArrayFlags::SEQUENCE);
    let mut matches = Vec::new();
    each_match(&ctx, args[1], text, limit, |m| matches.push(m))?;
    for m in matches {
        let item = Value::object(ctx.arena);
        for (key, from) in [("match", "match"), ("index", "start"), ("groups", "groups")] {
            let value = field(m, from);
            if !value.is_undefined() {
                item.insert(key, value);
            }
        }
        out.push(item);
    }
    Ok(out)
}

/// `$split(string, matcher [, limit])`: the text between the matches.
pub(super) fn wrap_split<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let Some(args) = matcher_call(4, &ctx, args)? else {
        return call_original(4, ctx, args);
    };
    let Value::String(text) = args[0] else {
        return Ok(Value::undefined());
    };
    let units: Vec<u16> = text.as_str().encode_utf16().collect();
    let limit = limit(
        &ctx,
        args.get(2).copied().unwrap_or_else(Value::undefined),
        "D3020",
    )?;
    let mut pieces = Vec::new();
    let mut start: &Value<'_> = Value::number(ctx.arena, 0.0);
    let count = each_match(&ctx, args[1], args[0], limit, |m| {
        pieces.push(substring(&units, start, Some(field(m, "start"))));
        start = field(m, "end");
    })?;
    if limit.is_none_or(|l| (count as f64) < l) {
        pieces.push(substring(&units, start, None));
    }
    let out = Value::array_with_capacity(ctx.arena, pieces.len(), ArrayFlags::empty());
    for piece in pieces {
        out.push(Value::string(ctx.arena, &piece));
    }
    Ok(out)
}

/// `$contains(string, matcher)`: whether the matcher matches.
pub(super) fn contains_with_matcher<'a>(
    ctx: &FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Result<Option<&'a Value<'a>>, Error> {
    let Some(args) = matcher_call(3, ctx, args)? else {
        return Ok(None);
    };
    if args[0].is_undefined() {
        return Ok(Some(Value::undefined()));
    }
    let found = evaluate_matcher(ctx, args[1], &[args[0]])?.is_some();
    Ok(Some(Value::bool(found)))
}
