//! `$eval(expr, context?)`: parses and evaluates a JSONata expression given as a string,
//! against `context` or the current context value (jsonata-rs 0.3.4 has no `$eval`). The
//! expression is compiled as an [`Expression`] of its own and evaluated on a JSON copy of the
//! context; its result is copied back into the calling evaluation's arena. A syntax error is
//! D3120, an evaluation error D3121, as in JSONata.

use bumpalo::Bump;
use jsonata_rs::{ArrayFlags, FunctionContext, Value};

use super::{arg, bad_arg, context_value, custom_error, max_args};
use crate::{to_json, with_scope, Expression, JsonataError, ToJsonError};

type Res<'a> = jsonata_rs::Result<&'a Value<'a>>;

pub(super) fn fn_eval<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 2)?;
    let source = match arg(args, 0) {
        Value::Undefined => return Ok(Value::undefined()),
        Value::String(s) => s.as_str().to_string(),
        _ => return Err(bad_arg(&ctx, 1)),
    };
    let context = if args.len() > 1 {
        arg(args, 1)
    } else {
        context_value(&ctx)
    };
    let input = with_scope(|scope| to_json(context, &scope.orderer, 0))
        .unwrap_or(Err(ToJsonError::NoEvaluation))
        .map_err(|e| custom_error(&ctx, "D3121", &e.to_string()))?;
    let mut expression = match Expression::compile(&source) {
        Ok(e) => e,
        Err(JsonataError::Compile { message, .. } | JsonataError::Evaluate { message, .. }) => {
            return Err(custom_error(
                &ctx,
                "D3120",
                &format!("Syntax error in expression passed to function eval: {message}"),
            ))
        }
    };
    match expression.evaluate_optional(input.as_ref()) {
        Ok(Some(result)) => Ok(from_json(ctx.arena, &result)),
        Ok(None) => Ok(Value::undefined()),
        Err(JsonataError::Compile { message, .. } | JsonataError::Evaluate { message, .. }) => {
            Err(custom_error(
                &ctx,
                "D3121",
                &format!(
                    "Dynamic error evaluating the expression passed to function eval: {message}"
                ),
            ))
        }
    }
}

/// A JSON value as a jsonata-rs value in `arena`.
fn from_json<'a>(arena: &'a Bump, value: &serde_json::Value) -> &'a Value<'a> {
    match value {
        serde_json::Value::Null => Value::null(arena),
        serde_json::Value::Bool(b) => Value::bool(*b),
        serde_json::Value::Number(n) => Value::number(arena, n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) => Value::string(arena, s),
        serde_json::Value::Array(items) => {
            let array = Value::array_with_capacity(arena, items.len(), ArrayFlags::empty());
            for item in items {
                array.push(from_json(arena, item));
            }
            array
        }
        serde_json::Value::Object(map) => {
            let object = Value::object_with_capacity(arena, map.len());
            for (k, v) in map {
                object.insert(k, from_json(arena, v));
            }
            object
        }
    }
}

/// `$clone(value)`: a deep copy of a JSON value (functions have none: undefined).
pub(super) fn fn_clone<'a>(ctx: FunctionContext<'a, '_>, args: &[&'a Value<'a>]) -> Res<'a> {
    max_args(&ctx, args, 1)?;
    let value = if args.is_empty() {
        context_value(&ctx)
    } else {
        arg(args, 0)
    };
    if value.is_undefined() {
        return Ok(Value::undefined());
    }
    let copy = with_scope(|scope| to_json(value, &scope.orderer, 0))
        .unwrap_or(Err(ToJsonError::NoEvaluation))
        .map_err(|e| custom_error(&ctx, "D3121", &e.to_string()))?;
    Ok(copy.map_or_else(Value::undefined, |v| from_json(ctx.arena, &v)))
}
