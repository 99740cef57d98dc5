//! JSONata function signatures (`<s-nn?:s>`) checked before a jsonata-rs builtin runs:
//! jsonata-rs 0.3.4 parses signatures but checks none, so a wrong argument type silently gives
//! undefined where JSONata raises T0410 (argument does not match), T0411 (the context value
//! used for a missing first argument does not match) or T0412 (array member of the wrong type).
//!
//! Rules, as JSONata's: an undefined argument matches anything (the function then returns
//! undefined); with fewer arguments than mandatory parameters, a first parameter marked `-`
//! takes the context value; `?` marks an optional parameter, `+` a repeated one; an `a<t>`
//! parameter takes an array whose members are `t`, or a single `t`; `x` is anything, `j` any
//! JSON value (not a function); regexes count as functions.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use jsonata_rs::{Error, FunctionContext, Value};

use super::{context_value, custom_error};

/// The signatures of the jsonata-rs builtins this module checks (those of JSONata's reference),
/// and of the native functions that replaced such builtins (`$fromMillis`, `$toMillis`,
/// `$now`, `$millis`).
const SIGNATURES: &[(&str, &str)] = &[
    ("abs", "<n-:n>"),
    ("append", "<xx:a>"),
    ("assert", "<bs?:x>"),
    ("base64decode", "<s-:s>"),
    ("base64encode", "<s-:s>"),
    ("boolean", "<x-:b>"),
    ("ceil", "<n-:n>"),
    ("contains", "<s-(sf):b>"),
    ("count", "<a:n>"),
    ("distinct", "<x:x>"),
    ("error", "<s?:x>"),
    ("exists", "<x:b>"),
    ("floor", "<n-:n>"),
    ("fromMillis", "<n-s?s?:s>"),
    ("join", "<a<s>s?:s>"),
    ("length", "<s-:n>"),
    ("lookup", "<x-s:x>"),
    ("lowercase", "<s-:s>"),
    ("match", "<s-f<s:o>n?:a<o>>"),
    ("max", "<a<n>:n>"),
    ("merge", "<a<o>:o>"),
    ("millis", "<:n>"),
    ("min", "<a<n>:n>"),
    ("not", "<x-:b>"),
    ("now", "<s?s?:s>"),
    ("number", "<(nsb)-:n>"),
    ("pad", "<s-ns?:s>"),
    ("power", "<n-n:n>"),
    ("reduce", "<afj?:j>"),
    ("replace", "<s-(sf)(sf)n?:s>"),
    ("reverse", "<a:a>"),
    ("round", "<n-n?:n>"),
    ("split", "<s-(sf)n?:a<s>>"),
    ("sqrt", "<n-:n>"),
    ("substring", "<s-nn?:s>"),
    ("substringAfter", "<s-s:s>"),
    ("substringBefore", "<s-s:s>"),
    ("sum", "<a<n>:n>"),
    ("toMillis", "<s-s?:n>"),
    ("trim", "<s-:s>"),
    ("uppercase", "<s-:s>"),
    ("zip", "<a+:a>"),
];

#[derive(Debug, Default, Clone, PartialEq)]
struct Param {
    /// Type letters this parameter accepts (`x` and `j` included as written).
    types: Vec<char>,
    /// For `a<t>`: the member types.
    members: Option<Vec<char>>,
    optional: bool,
    context: bool,
    repeated: bool,
}

impl Param {
    fn accepts(&self, symbol: char) -> bool {
        self.types
            .iter()
            .any(|&t| t == symbol || t == 'x' || (t == 'j' && symbol != 'f'))
    }
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Signature {
    params: Vec<Param>,
}

/// Parses the parameter part of a signature (what comes before `:`).
fn parse(signature: &str) -> Signature {
    let chars: Vec<char> = signature.chars().collect();
    let mut params: Vec<Param> = Vec::new();
    let mut i = 1; // after '<'
    while i < chars.len() {
        match chars[i] {
            ':' | '>' => break,
            '(' => {
                let mut types = Vec::new();
                i += 1;
                while i < chars.len() && chars[i] != ')' {
                    types.push(chars[i]);
                    i += 1;
                }
                params.push(Param {
                    types,
                    ..Param::default()
                });
            }
            '<' => {
                // A subtype: `a<n>` keeps it; `f<s:o>` is not checked.
                let start = i + 1;
                let mut depth = 1;
                while i + 1 < chars.len() && depth > 0 {
                    i += 1;
                    match chars[i] {
                        '<' => depth += 1,
                        '>' => depth -= 1,
                        _ => {}
                    }
                }
                if let Some(last) = params.last_mut() {
                    if last.types == ['a'] {
                        let inner: String = chars[start..i].iter().collect();
                        last.members = Some(
                            parse(&format!("<{inner}>"))
                                .params
                                .into_iter()
                                .flat_map(|p| p.types)
                                .collect(),
                        );
                    }
                }
            }
            '?' => params
                .last_mut()
                .into_iter()
                .for_each(|p| p.optional = true),
            '-' => params.last_mut().into_iter().for_each(|p| p.context = true),
            '+' => params
                .last_mut()
                .into_iter()
                .for_each(|p| p.repeated = true),
            letter => params.push(Param {
                types: vec![letter],
                ..Param::default()
            }),
        }
        i += 1;
    }
    Signature { params }
}

/// The signature of the builtin `name`, if it is checked.
pub(super) fn of(name: &str) -> Option<&'static Signature> {
    static PARSED: OnceLock<HashMap<&'static str, Signature>> = OnceLock::new();
    PARSED
        .get_or_init(|| SIGNATURES.iter().map(|&(n, s)| (n, parse(s))).collect())
        .get(name)
}

/// The JSONata type letter of a value; `None` for undefined.
fn symbol(value: &Value<'_>) -> Option<char> {
    Some(match value {
        Value::Undefined => return None,
        Value::Null => 'l',
        Value::Bool(_) => 'b',
        Value::Number(_) => 'n',
        Value::String(_) => 's',
        Value::Array(..) | Value::Range(..) => 'a',
        Value::Object(_) => 'o',
        Value::Lambda { .. }
        | Value::NativeFn { .. }
        | Value::Transformer { .. }
        | Value::Regex(_) => 'f',
    })
}

/// Checks `args` against `signature`; returns the arguments to call with (the context value
/// first where the signature takes it).
///
/// `callback`: the function is being called back by another builtin (`$reduce` passes the
/// accumulator, the value, its index and the array to every function): arguments beyond the
/// signature are then dropped, as JSONata passes a function only as many as it declares.
pub(super) fn check<'a, 'b>(
    ctx: &FunctionContext<'a, '_>,
    signature: &Signature,
    args: &'b [&'a Value<'a>],
    callback: bool,
) -> Result<Cow<'b, [&'a Value<'a>]>, Error> {
    let params = &signature.params;
    let mandatory = params.iter().filter(|p| !p.optional).count();
    let repeated = params.last().is_some_and(|p| p.repeated);
    let args = if callback && !repeated && args.len() > params.len() {
        &args[..params.len()]
    } else {
        args
    };
    // Borrowed unless the context value is inserted: most calls copy nothing.
    let mut args = Cow::Borrowed(args);
    if args.len() < mandatory && params.first().is_some_and(|p| p.context) {
        let context = context_value(ctx);
        if let (Some(first), Some(sym)) = (params.first(), symbol(context)) {
            if !first.accepts(sym) {
                return Err(custom_error(
                    ctx,
                    "T0411",
                    &format!(
                        "Context value is not a compatible type with argument 1 of function {}",
                        ctx.name
                    ),
                ));
            }
        }
        args.to_mut().insert(0, context);
    }
    if args.len() > params.len() && !repeated {
        return Err(Error::T0410ArgumentNotValid(
            ctx.char_index,
            params.len() + 1,
            ctx.name.to_string(),
        ));
    }
    if args.len() < mandatory {
        return Err(Error::T0410ArgumentNotValid(
            ctx.char_index,
            args.len() + 1,
            ctx.name.to_string(),
        ));
    }
    for (i, arg) in args.iter().enumerate() {
        let Some(param) = params.get(i).or(params.last()) else {
            break;
        };
        let Some(sym) = symbol(arg) else {
            continue;
        };
        let members_ok = |members: &[char]| {
            let fits = |v: &Value<'_>| {
                symbol(v).is_none_or(|s| members.iter().any(|&t| t == s || t == 'x'))
            };
            if sym == 'a' {
                arg.members().all(fits)
            } else {
                fits(arg)
            }
        };
        match &param.members {
            Some(members) if param.types == ['a'] && !members_ok(members) => {
                return Err(Error::T0412ArgumentMustBeArrayOfType(
                    ctx.char_index,
                    i + 1,
                    ctx.name.to_string(),
                    members.iter().collect(),
                ));
            }
            // A single value is an array of one.
            _ if param.types == ['a'] => {}
            _ if !param.accepts(sym) => {
                return Err(Error::T0410ArgumentNotValid(
                    ctx.char_index,
                    i + 1,
                    ctx.name.to_string(),
                ));
            }
            _ => {}
        }
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_signatures() {
        let s = parse("<s-(sf)n?:a<s>>");
        assert_eq!(s.params.len(), 3);
        assert!(s.params[0].context && s.params[0].types == ['s']);
        assert_eq!(s.params[1].types, ['s', 'f']);
        assert!(s.params[2].optional);
        let s = parse("<a<n>:n>");
        assert_eq!(s.params[0].members.as_deref(), Some(&['n'][..]));
        let s = parse("<s-f<s:o>n?:a<o>>");
        assert_eq!(s.params.len(), 3);
        assert_eq!(s.params[1].types, ['f']);
        assert!(parse("<a+:a>").params[0].repeated);
        assert!(SIGNATURES.iter().all(|(n, _)| of(n).is_some()));
    }
}
