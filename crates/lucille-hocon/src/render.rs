//! Rendering resolved values back to readable HOCON text.

use serde_json::Value;

const INDENT: &str = "  ";
/// Arrays of scalars up to this many characters are rendered on one line.
const INLINE_WIDTH: usize = 72;

/// True if `key` can be written without quotes and reads back as the same single key.
fn key_is_bare(key: &str) -> bool {
    !key.is_empty()
        && key != "include"
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn render_key(key: &str) -> String {
    if key_is_bare(key) {
        key.to_string()
    } else {
        quote(key)
    }
}

/// JSON-style quoted string.
fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("{s:?}"))
}

fn render_string(s: &str) -> String {
    let triple_ok = s.contains('\n')
        && !s.contains("\"\"\"")
        && !s.ends_with('"')
        && !s
            .chars()
            .any(|c| (c as u32) < 0x20 && c != '\n' && c != '\t');
    if triple_ok {
        format!("\"\"\"{s}\"\"\"")
    } else {
        quote(s)
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

fn render_value(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&render_string(s)),
        Value::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            if items.iter().all(is_scalar) {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| {
                        let mut s = String::new();
                        render_value(i, indent, &mut s);
                        s
                    })
                    .collect();
                let one_line = format!("[{}]", parts.join(", "));
                if one_line.len() <= INLINE_WIDTH && !one_line.contains('\n') {
                    out.push_str(&one_line);
                    return;
                }
            }
            out.push_str("[\n");
            let n = items.len();
            for (i, item) in items.iter().enumerate() {
                out.push_str(&INDENT.repeat(indent + 1));
                render_value(item, indent + 1, out);
                if i + 1 < n {
                    out.push(',');
                }
                out.push('\n');
            }
            out.push_str(&INDENT.repeat(indent));
            out.push(']');
        }
        Value::Object(m) => {
            if m.is_empty() {
                out.push_str("{}");
                return;
            }
            out.push_str("{\n");
            render_fields(m, indent + 1, out);
            out.push_str(&INDENT.repeat(indent));
            out.push('}');
        }
    }
}

fn render_fields(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&INDENT.repeat(indent));
        out.push_str(&render_key(k));
        match v {
            Value::Object(o) if !o.is_empty() => out.push(' '),
            _ => out.push_str(" = "),
        }
        render_value(v, indent, out);
        out.push('\n');
    }
}

/// Render a resolved value as HOCON text. An object is rendered as a root
/// object without braces; keys are quoted only when needed.
pub fn render_hocon(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => render_fields(m, 0, &mut out),
        other => {
            render_value(other, 0, &mut out);
            out.push('\n');
        }
    }
    out
}
