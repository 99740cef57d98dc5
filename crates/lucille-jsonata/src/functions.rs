//! Native JSONata functions that jsonata-rs 0.3.4 lacks or gets wrong for our purposes.

use bumpalo::Bump;
use jsonata_rs::{ArrayFlags, Error, FunctionContext, Value};

use super::order::KeyOrderer;
use super::with_scope;

mod datetime;
mod eval;
mod format_integer;
mod format_number;
mod matcher;
mod signature;

use matcher::{wrap_match, wrap_split};

/// The type of a jsonata-rs native function.
pub(crate) type Native = for<'a, 'e, 'b> fn(
    FunctionContext<'a, 'e>,
    &'b [&'a Value<'a>],
) -> jsonata_rs::Result<&'a Value<'a>>;

type Res<'a> = jsonata_rs::Result<&'a Value<'a>>;

/// Functions missing from jsonata-rs: (name, arity, implementation). The arity counts the
/// mandatory parameters only: higher-order functions such as `$map` pass that many arguments.
pub(crate) const SUPPLIED: &[(&str, usize, Native)] = &[
    ("average", 1, fn_average),
    ("type", 1, fn_type),
    ("spread", 1, fn_spread),
    ("sift", 2, fn_sift),
    ("shuffle", 1, fn_shuffle),
    ("formatBase", 1, fn_format_base),
    ("formatNumber", 2, format_number::fn_format_number),
    ("formatInteger", 2, format_integer::fn_format_integer),
    ("parseInteger", 2, format_integer::fn_parse_integer),
    ("eval", 1, eval::fn_eval),
    ("clone", 1, eval::fn_clone),
    ("encodeUrlComponent", 1, fn_encode_url_component),
    ("encodeUrl", 1, fn_encode_url),
    ("decodeUrlComponent", 1, fn_decode_url_component),
    ("decodeUrl", 1, fn_decode_url),
];

/// Replacements for jsonata-rs builtins (bound over them in each evaluation's frame).
/// `$map`, `$filter`, `$single` and `$sort` are re-implemented so that the tail-call thunks
/// their function arguments return are evaluated (jsonata-rs's `$filter`, `$single` and
/// `$sort` ignore them).
pub(crate) const OVERRIDES: &[(&str, usize, Native)] = &[
    ("map", 2, fn_map),
    ("filter", 2, fn_filter),
    ("single", 2, fn_single),
    ("sort", 1, fn_sort),
    ("keys", 1, fn_keys),
    ("each", 2, fn_each),
    ("string", 1, fn_string),
    // Date/time pictures (`datetime`); the arities are jsonata-rs's, as when these were
    // wrapped builtins.
    ("fromMillis", 3, datetime::fn_from_millis),
    ("toMillis", 2, datetime::fn_to_millis),
    ("now", 2, datetime::fn_now),
    ("millis", 0, datetime::fn_millis),
];

/// jsonata-rs builtins wrapped so that their arguments are checked against JSONata's
/// signatures first (`signature`): (name, jsonata-rs arity, wrapper). The wrapper's index in
/// this table selects the original builtin (read by `start_hook` in each evaluation).
pub(crate) const WRAPPED: &[(&str, usize, Native)] = &[
    ("reduce", 3, wrap_reduce),
    ("replace", 4, wrap_replace),
    ("match", 2, wrap_match),
    ("contains", 2, wrap_contains),
    ("split", 3, wrap_split),
    ("abs", 1, wrap_abs),
    ("append", 2, wrap_append),
    ("assert", 2, wrap_assert),
    ("base64decode", 1, wrap_base64decode),
    ("base64encode", 1, wrap_base64encode),
    ("boolean", 1, wrap_boolean),
    ("ceil", 1, wrap_ceil),
    ("count", 1, wrap_count),
    ("distinct", 1, wrap_distinct),
    ("error", 1, wrap_error),
    ("exists", 1, wrap_exists),
    ("floor", 1, wrap_floor),
    ("join", 2, wrap_join),
    ("length", 1, wrap_length),
    ("lookup", 2, wrap_lookup),
    ("lowercase", 1, wrap_lowercase),
    ("max", 1, wrap_max),
    ("merge", 1, wrap_merge),
    ("min", 1, wrap_min),
    ("not", 1, wrap_not),
    ("number", 1, wrap_number),
    ("pad", 2, wrap_pad),
    ("power", 2, wrap_power),
    ("reverse", 1, wrap_reverse),
    ("round", 2, wrap_round),
    ("sqrt", 1, wrap_sqrt),
    ("substring", 3, wrap_substring),
    ("substringAfter", 2, wrap_substring_after),
    ("substringBefore", 2, wrap_substring_before),
    ("sum", 1, wrap_sum),
    ("trim", 1, wrap_trim),
    ("uppercase", 1, wrap_uppercase),
    ("zip", 1, wrap_zip),
];

/// The type of a jsonata-rs builtin for one arena lifetime.
type Builtin<'a> = for<'e, 'b> fn(FunctionContext<'a, 'e>, &'b [&'a Value<'a>]) -> Res<'a>;

macro_rules! wrapper {
    ($($name:ident = $index:expr),* $(,)?) => {$(
        fn $name<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
            call_original($index, ctx, args)
        }
    )*};
}

wrapper!(
    wrap_reduce = 0,
    wrap_replace = 1,
    wrap_abs = 5,
    wrap_append = 6,
    wrap_assert = 7,
    wrap_base64decode = 8,
    wrap_base64encode = 9,
    wrap_boolean = 10,
    wrap_ceil = 11,
    wrap_count = 12,
    wrap_distinct = 13,
    wrap_error = 14,
    wrap_exists = 15,
    wrap_floor = 16,
    wrap_join = 17,
    wrap_length = 18,
    wrap_lookup = 19,
    wrap_lowercase = 20,
    wrap_max = 21,
    wrap_merge = 22,
    wrap_min = 23,
    wrap_not = 24,
    wrap_power = 27,
    wrap_reverse = 28,
    wrap_round = 29,
    wrap_sqrt = 30,
    wrap_substring = 31,
    wrap_substring_after = 32,
    wrap_substring_before = 33,
    wrap_sum = 34,
    wrap_trim = 35,
    wrap_uppercase = 36,
    wrap_zip = 37,
);

/// `$number(arg)`: strings are read as JSONata reads them (jsonata-rs takes whatever Rust's
/// float parser does, and gives undefined for `"1e500"`): a decimal number (leading zeros
/// allowed) or an unsigned `0x`/`0o`/`0b` integer; anything else, and a number too large for a double, is D3030.
/// Other arguments go to jsonata-rs's `$number`.
fn wrap_number<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let value = match args {
        [] => context_value(&ctx),
        [value] => *value,
        _ => return call_original(25, ctx, args),
    };
    let Value::String(text) = value else {
        return call_original(25, ctx, args);
    };
    match parse_number(text.as_str()) {
        Some(n) => Ok(Value::number(ctx.arena, n)),
        None => Err(custom_error(
            &ctx,
            "D3030",
            &format!("Unable to cast value to a number: {:?}", text.as_str()),
        )),
    }
}

/// A string as JSONata's `$number` reads it; `None` for D3030.
fn parse_number(text: &str) -> Option<f64> {
    let radix = |prefix: [&str; 2], radix: u32| {
        let digits = prefix.iter().find_map(|p| text.strip_prefix(p))?;
        if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
            return None;
        }
        // Digit by digit, as JavaScript's `Number` (exact up to 2^53, then rounded).
        Some(
            digits
                .chars()
                .filter_map(|c| c.to_digit(radix))
                .fold(0.0, |n, d| n * f64::from(radix) + f64::from(d)),
        )
    };
    if let Some(n) = radix(["0x", "0X"], 16)
        .or_else(|| radix(["0o", "0O"], 8))
        .or_else(|| radix(["0b", "0B"], 2))
    {
        return n.is_finite().then_some(n);
    }
    // -?[0-9]+(\.[0-9]+)?([Ee][-+]?[0-9]+)?
    let bytes = text.as_bytes();
    let mut i = usize::from(bytes.first() == Some(&b'-'));
    let digits_from = |i: usize| bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
    let int = digits_from(i);
    if int == 0 {
        return None;
    }
    i += int;
    if bytes.get(i) == Some(&b'.') {
        let frac = digits_from(i + 1);
        if frac == 0 {
            return None;
        }
        i += 1 + frac;
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exp = digits_from(i);
        if exp == 0 {
            return None;
        }
        i += exp;
    }
    if i != bytes.len() {
        return None;
    }
    text.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// `$pad(string, width [, char])`: the width is truncated to an integer first, as JSONata
/// does (jsonata-rs rounds it).
fn wrap_pad<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    match args.get(1) {
        Some(Value::Number(width)) if width.fract() != 0.0 => {
            let mut truncated = args.to_vec();
            truncated[1] = Value::number(ctx.arena, width.trunc());
            call_original(26, ctx, &truncated)
        }
        _ => call_original(26, ctx, args),
    }
}

/// `$contains(string, pattern)`: undefined when the pattern is (jsonata-rs raises T0410); a
/// matcher function as pattern is handled by `matcher`.
fn wrap_contains<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    if let Some(result) = matcher::contains_with_matcher(&ctx, args)? {
        return Ok(result);
    }
    match args {
        [_, pattern] if pattern.is_undefined() => Ok(Value::undefined()),
        _ => call_original(3, ctx, args),
    }
}

/// The JSONata signature of `WRAPPED[index]`, if it is checked (looked up by name once).
fn wrapped_signature(index: usize) -> Option<&'static signature::Signature> {
    static BY_INDEX: std::sync::OnceLock<Vec<Option<&'static signature::Signature>>> =
        std::sync::OnceLock::new();
    BY_INDEX
        .get_or_init(|| {
            WRAPPED
                .iter()
                .map(|(name, _, _)| signature::of(name))
                .collect()
        })
        .get(index)
        .copied()
        .flatten()
}

fn call_original<'a>(
    index: usize,
    ctx: FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Res<'a> {
    let checked;
    let args = match wrapped_signature(index) {
        Some(sig) => {
            let callback = IN_BUILTIN.with(|depth| depth.get() > 0);
            checked = signature::check(&ctx, sig, args, callback)?;
            &checked[..]
        }
        None => args,
    };
    let Some(ptr) = with_scope(|scope| scope.original(index)).flatten() else {
        return Err(Error::T1006InvokedNonFunction(ctx.char_index));
    };
    // SAFETY: `ptr` is the `func` of the builtin `Value::NativeFn` that jsonata-rs bound for
    // `WRAPPED[index]` in this evaluation (read by `start_hook`), i.e. one of jsonata-rs's
    // `pub fn fn_x<'a>(FunctionContext<'a, '_>, &[&'a Value<'a>]) -> Result<&'a Value<'a>>`,
    // which is generic over the arena lifetime; it is called with values of this arena.
    let original = unsafe { std::mem::transmute::<*const (), Builtin<'a>>(ptr) };
    IN_BUILTIN.with(|depth| depth.set(depth.get() + 1));
    let result = original(ctx, args);
    IN_BUILTIN.with(|depth| depth.set(depth.get().saturating_sub(1)));
    result
}

thread_local! {
    /// How many wrapped jsonata-rs builtins are running on this thread: a function called
    /// while one runs is called back by it (see `signature::check`). A panic inside one is
    /// caught by the evaluation, which starts from 0 (`BuiltinDepth`).
    static IN_BUILTIN: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Checks `args` against the JSONata signature of `name` (see `signature`), for a native
/// function that replaces a jsonata-rs builtin whose arguments used to be checked that way.
fn check_signature<'a, 'b>(
    ctx: &FunctionContext<'a, '_>,
    name: &str,
    args: &'b [&'a Value<'a>],
) -> Result<std::borrow::Cow<'b, [&'a Value<'a>]>, Error> {
    match signature::of(name) {
        Some(sig) => {
            let callback = IN_BUILTIN.with(|depth| depth.get() > 0);
            signature::check(ctx, sig, args, callback)
        }
        None => Ok(std::borrow::Cow::Borrowed(args)),
    }
}

/// Held by an evaluation: it starts with no builtin running (forgetting any left running by
/// a caught panic) and gives the depth back when it ends (an `$eval` evaluates inside another
/// evaluation).
pub(crate) struct BuiltinDepth(u32);

impl BuiltinDepth {
    pub(crate) fn enter() -> Self {
        BuiltinDepth(IN_BUILTIN.with(|depth| depth.replace(0)))
    }
}

impl Drop for BuiltinDepth {
    fn drop(&mut self) {
        IN_BUILTIN.with(|depth| depth.set(self.0));
    }
}

fn arg<'a>(args: &[&'a Value<'a>], i: usize) -> &'a Value<'a> {
    args.get(i).copied().unwrap_or_else(Value::undefined)
}

/// The context value, unwrapped from the array jsonata-rs wraps array inputs in.
fn context_value<'a>(ctx: &FunctionContext<'a, '_>) -> &'a Value<'a> {
    let input = ctx.input;
    if input.has_flags(ArrayFlags::WRAPPED) {
        input.get_member(0)
    } else {
        input
    }
}

/// The first argument, or the context value when the function was called without arguments.
fn arg_or_context<'a>(ctx: &FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> &'a Value<'a> {
    if args.is_empty() {
        context_value(ctx)
    } else {
        args[0]
    }
}

fn bad_arg(ctx: &FunctionContext<'_, '_>, index: usize) -> Error {
    Error::T0410ArgumentNotValid(ctx.char_index, index, ctx.name.to_string())
}

fn max_args(ctx: &FunctionContext<'_, '_>, args: &[&Value<'_>], max: usize) -> Result<(), Error> {
    if args.len() > max {
        Err(bad_arg(ctx, max + 1))
    } else {
        Ok(())
    }
}

/// An error with a JSONata code that jsonata-rs has no variant for.
pub(super) fn custom_error(ctx: &FunctionContext<'_, '_>, code: &str, message: &str) -> Error {
    let mark = super::ERROR_MARK;
    Error::D3137Error(format!("{mark}{code} @ {}: {message}", ctx.char_index))
}

fn sequence<'a>(arena: &'a Bump) -> &'a mut Value<'a> {
    Value::array(arena, ArrayFlags::SEQUENCE)
}

/// The keys of an object in this module's order (see "Key order").
fn ordered_keys<'a>(map_value: &'a Value<'a>) -> Vec<&'a str> {
    let Value::Object(map) = map_value else {
        return Vec::new();
    };
    let mut keys: Vec<&'a str> = map.keys().map(|k| k.as_str()).collect();
    let ordered = with_scope(|scope| scope.orderer.order(&mut keys));
    if ordered.is_none() {
        keys.sort_unstable();
    }
    keys
}

fn is_function(v: &Value<'_>) -> bool {
    matches!(
        v,
        Value::Lambda { .. } | Value::NativeFn { .. } | Value::Transformer { .. }
    )
}

/// Calls `func` with as many of (value, key/index, container) as its arity asks for.
fn call_with_arity<'a>(
    ctx: &FunctionContext<'a, '_>,
    func: &'a Value<'a>,
    all: [&'a Value<'a>; 3],
) -> Res<'a> {
    let arity = func.arity().clamp(1, 3);
    let result = ctx.evaluate_function(func, &all[..arity])?;
    ctx.trampoline_evaluate_value(result)
}

/// The array argument of `$map`/`$filter`/`$single` and its function, after recording it.
fn array_and_function<'a>(
    ctx: &FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Result<Option<(&'a Value<'a>, &'a Value<'a>)>, Error> {
    max_args(ctx, args, 2)?;
    let array = arg(args, 0);
    let func = arg(args, 1);
    if array.is_undefined() {
        return Ok(None);
    }
    if !is_function(func) {
        return Err(bad_arg(ctx, 2));
    }
    Ok(Some((
        Value::wrap_in_array_if_needed(ctx.arena, array, ArrayFlags::empty()),
        func,
    )))
}

/// `$map(array, function)`.
fn fn_map<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let Some((array, func)) = array_and_function(&ctx, args)? else {
        return Ok(Value::undefined());
    };
    let out = sequence(ctx.arena);
    for (i, item) in array.members().enumerate() {
        let index = Value::number(ctx.arena, i as f64);
        let mapped = call_with_arity(&ctx, func, [item, index, array])?;
        if !mapped.is_undefined() {
            out.push(mapped);
        }
    }
    Ok(out)
}

/// `$filter(array, function)`.
fn fn_filter<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let Some((array, func)) = array_and_function(&ctx, args)? else {
        return Ok(Value::undefined());
    };
    let out = sequence(ctx.arena);
    for (i, item) in array.members().enumerate() {
        let index = Value::number(ctx.arena, i as f64);
        if call_with_arity(&ctx, func, [item, index, array])?.is_truthy() {
            out.push(item);
        }
    }
    Ok(out)
}

/// `$sort(array [, function])`: stable merge sort; `function($a, $b)` returns true when `$a`
/// belongs after `$b`. Without a function, the items must be all numbers or all strings.
fn fn_sort<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let array = arg(args, 0);
    if array.is_undefined() {
        return Ok(Value::undefined());
    }
    let items: Vec<&'a Value<'a>> = match array {
        Value::Array(..) | Value::Range(..) => array.members().collect(),
        // A single value is an array of one (`$sort(1)` is `[1]`).
        other => {
            let out = Value::array_with_capacity(ctx.arena, 1, ArrayFlags::empty());
            out.push(other);
            return Ok(out);
        }
    };
    if items.len() <= 1 {
        return Ok(array);
    }
    let func = arg(args, 1);
    let sorted = if func.is_undefined() {
        let mut items = items;
        if items.iter().all(|v| matches!(v, Value::Number(_))) {
            items.sort_by(|a, b| a.as_f64().total_cmp(&b.as_f64()));
        } else if items.iter().all(|v| matches!(v, Value::String(_))) {
            items.sort_by(|a, b| match (a, b) {
                (Value::String(x), Value::String(y)) => x.as_str().cmp(y.as_str()),
                _ => std::cmp::Ordering::Equal,
            });
        } else {
            return Err(Error::D3070InvalidDefaultSort(ctx.char_index));
        }
        items
    } else if is_function(func) {
        merge_sort(items, &mut |a, b| {
            let result = ctx.evaluate_function(func, &[a, b])?;
            Ok(ctx.trampoline_evaluate_value(result)?.is_truthy())
        })?
    } else {
        return Err(bad_arg(&ctx, 2));
    };
    let out = Value::array_with_capacity(ctx.arena, sorted.len(), ArrayFlags::empty());
    for item in sorted {
        out.push(item);
    }
    Ok(out)
}

/// Stable merge sort where `after(a, b)` says that `a` must come after `b`.
fn merge_sort<'a>(
    items: Vec<&'a Value<'a>>,
    after: &mut dyn FnMut(&'a Value<'a>, &'a Value<'a>) -> Result<bool, Error>,
) -> Result<Vec<&'a Value<'a>>, Error> {
    if items.len() <= 1 {
        return Ok(items);
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let left = merge_sort(left, after)?;
    let right = merge_sort(right, after)?;
    let mut merged = Vec::with_capacity(left.len() + right.len());
    let (mut l, mut r) = (left.into_iter().peekable(), right.into_iter().peekable());
    while let (Some(&a), Some(&b)) = (l.peek(), r.peek()) {
        if after(a, b)? {
            merged.push(b);
            r.next();
        } else {
            merged.push(a);
            l.next();
        }
    }
    merged.extend(l);
    merged.extend(r);
    Ok(merged)
}

/// `$single(array [, function])`: the one item that matches, else error D3138/D3139.
fn fn_single<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let array = arg(args, 0);
    if array.is_undefined() {
        return Ok(Value::undefined());
    }
    let func = arg(args, 1);
    let func = if func.is_undefined() {
        None
    } else if is_function(func) {
        Some(func)
    } else {
        return Err(bad_arg(&ctx, 2));
    };
    let array = Value::wrap_in_array_if_needed(ctx.arena, array, ArrayFlags::empty());
    let mut found = None;
    for (i, item) in array.members().enumerate() {
        let matched = match func {
            None => true,
            Some(func) => {
                let index = Value::number(ctx.arena, i as f64);
                call_with_arity(&ctx, func, [item, index, array])?.is_truthy()
            }
        };
        if matched {
            if found.is_some() {
                return Err(Error::D3138Error(format!(
                    "More than one value matched the predicate at index {i}"
                )));
            }
            found = Some(item);
        }
    }
    found.ok_or_else(|| Error::D3139Error("No values matched the predicate.".to_string()))
}

/// `$average(array)`: mean of an array of numbers; undefined for an empty array.
fn fn_average<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let value = arg(args, 0);
    let mut sum = 0.0;
    let mut count = 0usize;
    match value {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Number(n) => return Ok(Value::number(ctx.arena, *n)),
        Value::Array(..) | Value::Range(..) => {
            for member in value.members() {
                match member {
                    Value::Number(n) => {
                        sum += n;
                        count += 1;
                    }
                    _ => {
                        return Err(Error::T0412ArgumentMustBeArrayOfType(
                            ctx.char_index,
                            1,
                            ctx.name.to_string(),
                            "number".to_string(),
                        ));
                    }
                }
            }
        }
        _ => return Err(bad_arg(&ctx, 1)),
    }
    if count == 0 {
        return Ok(Value::undefined());
    }
    Ok(Value::number(ctx.arena, sum / count as f64))
}

/// `$type(value)`: "null", "number", "string", "boolean", "array", "object" or "function".
fn fn_type<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let name = match arg(args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Null => "null",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Bool(_) => "boolean",
        Value::Array(..) | Value::Range(..) => "array",
        Value::Object(_) => "object",
        Value::Lambda { .. }
        | Value::NativeFn { .. }
        | Value::Transformer { .. }
        | Value::Regex(_) => "function",
    };
    Ok(Value::string(ctx.arena, name))
}

/// `$spread(object)`: an array of single-key objects, one per key.
fn fn_spread<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let value = arg_or_context(&ctx, args);
    fn spread_into<'a>(arena: &'a Bump, value: &'a Value<'a>, out: &mut Value<'a>) {
        match value {
            Value::Array(..) | Value::Range(..) => {
                for member in value.members() {
                    spread_into(arena, member, out);
                }
            }
            Value::Object(map) => {
                for key in ordered_keys(value) {
                    if let Some(v) = map.get(key) {
                        let single = Value::object_with_capacity(arena, 1);
                        single.insert(key, v);
                        out.push(single);
                    }
                }
            }
            Value::Undefined => {}
            other => out.push(other),
        }
    }
    match value {
        Value::Array(..) | Value::Range(..) | Value::Object(_) => {
            let out = sequence(ctx.arena);
            spread_into(ctx.arena, value, out);
            Ok(out)
        }
        other => Ok(other),
    }
}

/// `$sift(object, function)`: the entries for which `function(value, key, object)` is truthy.
fn fn_sift<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let (object, func) = if args.len() == 1 {
        (context_value(&ctx), args[0])
    } else {
        (arg(args, 0), arg(args, 1))
    };
    if object.is_undefined() {
        return Ok(Value::undefined());
    }
    let Value::Object(map) = object else {
        return Err(bad_arg(&ctx, 1));
    };
    if !is_function(func) {
        return Err(bad_arg(&ctx, 2));
    }
    let result = Value::object(ctx.arena);
    let mut any = false;
    for key in ordered_keys(object) {
        let Some(value) = map.get(key) else { continue };
        let key_value = Value::string(ctx.arena, key);
        if call_with_arity(&ctx, func, [value, key_value, object])?.is_truthy() {
            result.insert(key, value);
            any = true;
        }
    }
    Ok(if any { result } else { Value::undefined() })
}

/// A random `u64` without a `rand` dependency (std's per-instance random hash keys).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish()
}

/// `$shuffle(array)`: the items in random order.
fn fn_shuffle<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let value = arg(args, 0);
    if value.is_undefined() {
        return Ok(Value::undefined());
    }
    let mut items: Vec<&'a Value<'a>> = match value {
        Value::Array(..) | Value::Range(..) => value.members().collect(),
        other => vec![other],
    };
    // Fisher-Yates with a splitmix64 stream.
    let mut state = random_u64();
    for i in (1..items.len()).rev() {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        let j = (z % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
    let out = Value::array_with_capacity(ctx.arena, items.len(), ArrayFlags::empty());
    for item in items {
        out.push(item);
    }
    Ok(out)
}

/// JSONata's rounding: half to even, at `dp` decimal places (decimal, not binary, halves).
pub(super) fn round_half_even(value: f64, dp: i32) -> f64 {
    let shifted: f64 = format!("{value:e}")
        .split_once('e')
        .and_then(|(m, e)| {
            let e: i32 = e.parse().ok()?;
            format!("{m}e{}", e + dp).parse().ok()
        })
        .unwrap_or(value);
    let mut rounded = shifted.round();
    if (shifted - shifted.trunc()).abs() == 0.5 && rounded % 2.0 != 0.0 {
        rounded -= shifted.signum();
    }
    format!("{rounded:e}")
        .split_once('e')
        .and_then(|(m, e)| {
            let e: i32 = e.parse().ok()?;
            format!("{m}e{}", e - dp).parse().ok()
        })
        .unwrap_or(rounded)
}

/// `$formatBase(number, radix)`: the integer part (rounded) in base 2..36.
fn fn_format_base<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let value = match arg_or_context(&ctx, args) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::Number(n) => *n,
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let radix = match arg(args, 1) {
        Value::Undefined => 10.0,
        Value::Number(n) => *n,
        _ => return Err(bad_arg(&ctx, 2)),
    };
    // The radix is rounded as the number is (JSONata's `$round`).
    let radix = round_half_even(radix, 0);
    if !(2.0..=36.0).contains(&radix) {
        return Err(custom_error(
            &ctx,
            "D3100",
            &format!(
                "The radix of the formatBase function must be between 2 and 36.  It was given {}",
                js_number_to_string(radix)
            ),
        ));
    }
    let rounded = round_half_even(value, 0);
    if rounded.abs() >= 1e38 || !rounded.is_finite() {
        return Err(bad_arg(&ctx, 1));
    }
    let mut n = rounded.abs() as u128;
    let radix = radix as u128;
    let mut digits = Vec::new();
    loop {
        let d = (n % radix) as u32;
        digits.push(char::from_digit(d, 36).unwrap_or('?'));
        n /= radix;
        if n == 0 {
            break;
        }
    }
    if rounded < 0.0 {
        digits.push('-');
    }
    let s: String = digits.into_iter().rev().collect();
    Ok(Value::string(ctx.arena, &s))
}

fn string_arg<'a>(
    ctx: &FunctionContext<'a, '_>,
    args: &[&'a Value<'a>],
) -> Result<Option<&'a str>, Error> {
    max_args(ctx, args, 1)?;
    match arg_or_context(ctx, args) {
        Value::Undefined => Ok(None),
        Value::String(s) => Ok(Some(s.as_str())),
        _ => Err(bad_arg(ctx, 1)),
    }
}

/// Percent-encodes every byte of `s` except ASCII alphanumerics and `keep`.
fn percent_encode(s: &str, keep: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if ch.is_ascii_alphanumeric() || keep.contains(ch) {
            out.push(ch);
        } else {
            let mut buf = [0u8; 4];
            for b in ch.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{b:02X}"));
            }
        }
    }
    out
}

/// Decodes `%XX` escapes (UTF-8); escapes of characters in `reserved` are left as they are.
fn percent_decode(s: &str, reserved: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    while i < bytes.len() {
        if bytes[i] != b'%' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let byte = hex(*bytes.get(i + 1)?)? << 4 | hex(*bytes.get(i + 2)?)?;
        if byte < 0x80 {
            if reserved.as_bytes().contains(&byte) {
                out.extend_from_slice(&bytes[i..i + 3]);
            } else {
                out.push(byte);
            }
            i += 3;
            continue;
        }
        // A multi-byte UTF-8 sequence: all of its bytes must be escaped.
        let len = match byte {
            0xc2..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf4 => 4,
            _ => return None,
        };
        let mut seq = vec![byte];
        for k in 1..len {
            let at = i + 3 * k;
            if bytes.get(at) != Some(&b'%') {
                return None;
            }
            seq.push(hex(*bytes.get(at + 1)?)? << 4 | hex(*bytes.get(at + 2)?)?);
        }
        std::str::from_utf8(&seq).ok()?;
        out.extend_from_slice(&seq);
        i += 3 * len;
    }
    String::from_utf8(out).ok()
}

const URI_UNRESERVED: &str = "-_.!~*'()";
const URI_RESERVED: &str = ";/?:@&=+$,#";

fn fn_encode_url_component<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    Ok(match string_arg(&ctx, args)? {
        None => Value::undefined(),
        Some(s) => Value::string(ctx.arena, &percent_encode(s, URI_UNRESERVED)),
    })
}

fn fn_encode_url<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    let keep = format!("{URI_UNRESERVED}{URI_RESERVED}");
    Ok(match string_arg(&ctx, args)? {
        None => Value::undefined(),
        Some(s) => Value::string(ctx.arena, &percent_encode(s, &keep)),
    })
}

fn decode<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>], reserved: &str) -> Res<'a> {
    let Some(s) = string_arg(&ctx, args)? else {
        return Ok(Value::undefined());
    };
    match percent_decode(s, reserved) {
        Some(decoded) => Ok(Value::string(ctx.arena, &decoded)),
        None => Err(custom_error(
            &ctx,
            "D3140",
            &format!("Malformed URL passed to ${}(): {s:?}", ctx.name),
        )),
    }
}

fn fn_decode_url_component<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    decode(ctx, args, "")
}

fn fn_decode_url<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    decode(ctx, args, URI_RESERVED)
}

/// `$keys(object | array of objects)`, in this module's key order.
fn fn_keys<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let value = arg_or_context(&ctx, args);
    let mut keys: Vec<&'a str> = Vec::new();
    match value {
        Value::Object(_) => keys = ordered_keys(value),
        Value::Array(..) => {
            for member in value.members() {
                for key in ordered_keys(member) {
                    if !keys.contains(&key) {
                        keys.push(key);
                    }
                }
            }
        }
        _ => {}
    }
    let out = sequence(ctx.arena);
    for key in keys {
        out.push(Value::string(ctx.arena, key));
    }
    Ok(out)
}

/// `$each(object, function)`: `function(value, key, object)` for each entry, in key order.
fn fn_each<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let (object, func) = if args.len() == 1 {
        (context_value(&ctx), args[0])
    } else {
        (arg(args, 0), arg(args, 1))
    };
    if object.is_undefined() {
        return Ok(Value::undefined());
    }
    let Value::Object(map) = object else {
        return Err(bad_arg(&ctx, 1));
    };
    if !is_function(func) {
        return Err(bad_arg(&ctx, 2));
    }
    let out = sequence(ctx.arena);
    for key in ordered_keys(object) {
        let Some(value) = map.get(key) else { continue };
        let key_value = Value::string(ctx.arena, key);
        let mapped = call_with_arity(&ctx, func, [value, key_value, object])?;
        if !mapped.is_undefined() {
            out.push(mapped);
        }
    }
    Ok(out)
}

/// `$string(value, prettify)`, serializing like JSONata (`JSON.stringify` with numbers at 15
/// significant digits, functions as `""`) and listing keys in this module's order.
fn fn_string<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let value = arg_or_context(&ctx, args);
    let pretty = match arg(args, 1) {
        Value::Undefined => false,
        Value::Bool(b) => *b,
        _ => return Err(bad_arg(&ctx, 2)),
    };
    match value {
        Value::Undefined => Ok(Value::undefined()),
        Value::String(_) => Ok(value),
        v if is_function(v) || matches!(v, Value::Regex(_)) => Ok(Value::string(ctx.arena, "")),
        Value::Number(n) if !n.is_finite() => Err(Error::D3001StringNotFinite(ctx.char_index)),
        // Writing a value recurses on its depth (a stack overflow aborts the process); only a
        // value built by the expression can be this deep (JavaScript's own recursion limit
        // makes jsonata-js fail too).
        v if deeper_than(v, super::MAX_RESULT_DEPTH) => Err(custom_error(
            &ctx,
            "U1001",
            "the value is nested too deeply to be written as a string",
        )),
        v if has_non_finite(v) => Err(custom_error(&ctx, "D1001", "Number out of range")),
        _ => {
            let mut out = String::new();
            with_scope(|scope| stringify(value, pretty, Some(&scope.orderer), 0, &mut out))
                .unwrap_or_else(|| stringify(value, pretty, None, 0, &mut out));
            Ok(Value::string(ctx.arena, &out))
        }
    }
}

/// True when `value` has more than `limit` levels of arrays/objects (recursing at most
/// `limit` levels).
fn deeper_than<'a>(value: &'a Value<'a>, limit: usize) -> bool {
    match value {
        Value::Array(..) => limit == 0 || value.members().any(|v| deeper_than(v, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|v| deeper_than(v, limit - 1)),
        _ => false,
    }
}

/// An infinite or NaN number inside an array or object (JSON has no way to write one).
fn has_non_finite<'a>(value: &'a Value<'a>) -> bool {
    match value {
        Value::Number(n) => !n.is_finite(),
        Value::Array(..) => value.members().any(has_non_finite),
        Value::Object(map) => map.values().any(|v| has_non_finite(v)),
        _ => false,
    }
}

fn push_json_string(s: &str, out: &mut String) {
    match serde_json::to_string(s) {
        Ok(quoted) => out.push_str(&quoted),
        Err(_) => out.push_str("\"\""),
    }
}

fn newline(pretty: bool, indent: usize, out: &mut String) {
    if pretty {
        out.push('\n');
        for _ in 0..indent {
            out.push_str("  ");
        }
    }
}

/// `JSON.stringify(value, jsonata's replacer, pretty ? 2 : 0)`.
fn stringify<'a>(
    value: &'a Value<'a>,
    pretty: bool,
    orderer: Option<&KeyOrderer<'_>>,
    indent: usize,
    out: &mut String,
) {
    match value {
        Value::Undefined | Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        // Integers a double holds exactly are written in full (as jsonata-js 2 does), other
        // numbers to 15 significant digits.
        Value::Number(n) if n.is_finite() && n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER => {
            out.push_str(&js_number_to_string(*n))
        }
        Value::Number(n) if n.is_finite() => {
            out.push_str(&js_number_to_string(to_precision_15(*n)))
        }
        Value::Number(_) => out.push_str("null"),
        Value::String(s) => push_json_string(s.as_str(), out),
        Value::Lambda { .. }
        | Value::NativeFn { .. }
        | Value::Transformer { .. }
        | Value::Regex(_) => out.push_str("\"\""),
        Value::Array(..) | Value::Range(..) => {
            if value.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, member) in value.members().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(pretty, indent + 1, out);
                stringify(member, pretty, orderer, indent + 1, out);
            }
            newline(pretty, indent, out);
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&str> = map
                .iter()
                .filter(|(_, v)| !v.is_undefined())
                .map(|(k, _)| k.as_str())
                .collect();
            match orderer {
                Some(o) => o.order(&mut keys),
                None => keys.sort_unstable(),
            }
            if keys.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push('{');
            for (i, key) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(pretty, indent + 1, out);
                push_json_string(key, out);
                out.push(':');
                if pretty {
                    out.push(' ');
                }
                if let Some(v) = map.get(*key) {
                    stringify(v, pretty, orderer, indent + 1, out);
                }
            }
            newline(pretty, indent, out);
            out.push('}');
        }
    }
}

/// 2^53: every integer up to this is exactly a double.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_992.0;

/// `Number(x.toPrecision(15))`.
pub(super) fn to_precision_15(x: f64) -> f64 {
    format!("{x:.14e}").parse().unwrap_or(x)
}

/// JavaScript's `Number.prototype.toString()` for finite numbers (ECMA-262 Number::toString).
pub(super) fn js_number_to_string(x: f64) -> String {
    if x == 0.0 {
        return "0".to_string();
    }
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // Shortest round-trip digits and exponent: x = 0.d1d2... * 10^n.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let k = digits.len() as i64;
    let n = exp.parse::<i64>().unwrap_or(0) + 1;
    let mut out = String::new();
    if x < 0.0 {
        out.push('-');
    }
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n > 0 { '+' } else { '-' });
        out.push_str(&(n - 1).abs().to_string());
    }
    out
}

#[cfg(test)]
mod wrapped_tests {
    use super::*;

    #[test]
    fn every_wrapper_calls_the_builtin_of_its_own_name() {
        // The wrapper! indices must follow WRAPPED's order: wrap_x at index i wraps WRAPPED[i].
        let wrappers: [Native; 38] = [
            wrap_reduce,
            wrap_replace,
            wrap_match,
            wrap_contains,
            wrap_split,
            wrap_abs,
            wrap_append,
            wrap_assert,
            wrap_base64decode,
            wrap_base64encode,
            wrap_boolean,
            wrap_ceil,
            wrap_count,
            wrap_distinct,
            wrap_error,
            wrap_exists,
            wrap_floor,
            wrap_join,
            wrap_length,
            wrap_lookup,
            wrap_lowercase,
            wrap_max,
            wrap_merge,
            wrap_min,
            wrap_not,
            wrap_number,
            wrap_pad,
            wrap_power,
            wrap_reverse,
            wrap_round,
            wrap_sqrt,
            wrap_substring,
            wrap_substring_after,
            wrap_substring_before,
            wrap_sum,
            wrap_trim,
            wrap_uppercase,
            wrap_zip,
        ];
        assert_eq!(wrappers.len(), WRAPPED.len());
        for (i, (name, _, f)) in WRAPPED.iter().enumerate() {
            assert!(
                std::ptr::fn_addr_eq(*f, wrappers[i]),
                "WRAPPED[{i}] ({name})"
            );
        }
    }
}
