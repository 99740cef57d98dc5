//! Minimal Java `.properties` reader for `include "x.properties"`.
//!
//! Values are always strings; keys are split on `.` (keeping empty elements),
//! and when a key is both a value and a parent object, the object wins (as the
//! HOCON spec requires for properties).

use super::node::{Node, OMap};

fn is_prop_ws(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{0C}')
}

fn ends_with_odd_backslashes(s: &str) -> bool {
    s.chars().rev().take_while(|&c| c == '\\').count() % 2 == 1
}

/// Split a logical line into its unescaped key and value.
fn split_entry(line: &str) -> (String, String) {
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    let mut key = String::new();
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' {
            i += 1;
            if i < chars.len() {
                i = unescape_at(&chars, i, &mut key);
            }
            continue;
        }
        if c == '=' || c == ':' || is_prop_ws(c) {
            break;
        }
        key.push(c);
        i += 1;
    }
    while i < chars.len() && is_prop_ws(chars[i]) {
        i += 1;
    }
    if i < chars.len() && (chars[i] == '=' || chars[i] == ':') {
        i += 1;
    }
    while i < chars.len() && is_prop_ws(chars[i]) {
        i += 1;
    }
    let mut value = String::new();
    while i < chars.len() {
        if chars[i] == '\\' {
            i += 1;
            if i < chars.len() {
                i = unescape_at(&chars, i, &mut value);
            }
            continue;
        }
        value.push(chars[i]);
        i += 1;
    }
    (key, value)
}

/// Unescape the character at `chars[i]` (which follows a backslash); returns the next index.
fn unescape_at(chars: &[char], i: usize, out: &mut String) -> usize {
    let Some(&c) = chars.get(i) else {
        return i;
    };
    match c {
        't' => out.push('\t'),
        'n' => out.push('\n'),
        'r' => out.push('\r'),
        'f' => out.push('\u{0C}'),
        'u' => {
            let hex: String = chars.iter().skip(i + 1).take(4).collect();
            if hex.len() == 4 {
                if let Ok(v) = u32::from_str_radix(&hex, 16) {
                    out.push(char::from_u32(v).unwrap_or('\u{FFFD}'));
                    return i + 5;
                }
            }
            out.push('u');
        }
        other => out.push(other),
    }
    i + 1
}

fn insert(obj: &mut OMap<Node>, path: &[String], value: String) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    if rest.is_empty() {
        // an object already at this key wins over a plain value
        if !matches!(obj.get(first), Some(Node::Obj(_))) {
            obj.set(first.clone(), Node::Str(value));
        }
        return;
    }
    if !matches!(obj.get(first), Some(Node::Obj(_))) {
        obj.set(first.clone(), Node::Obj(OMap::new()));
    }
    if let Some(Node::Obj(child)) = obj.get_mut(first) {
        insert(child, rest, value);
    }
}

pub(crate) fn parse_properties(text: &str) -> OMap<Node> {
    let lines: Vec<&str> = text.lines().collect();
    let mut obj = OMap::new();
    let mut i = 0;
    while i < lines.len() {
        let mut line = lines[i].trim_start_matches(is_prop_ws);
        i += 1;
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let mut logical = String::new();
        loop {
            if ends_with_odd_backslashes(line) {
                logical.push_str(&line[..line.len() - 1]);
                if i < lines.len() {
                    line = lines[i].trim_start_matches(is_prop_ws);
                    i += 1;
                    continue;
                }
            } else {
                logical.push_str(line);
            }
            break;
        }
        let (key, value) = split_entry(&logical);
        let path: Vec<String> = key.split('.').map(str::to_string).collect();
        insert(&mut obj, &path, value);
    }
    obj
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'a>(o: &'a OMap<Node>, k: &str) -> Option<&'a Node> {
        o.get(k)
    }

    #[test]
    fn basic_properties() {
        let o = parse_properties(
            "# comment\n! also\na.b=1\nc : two\nd three\\\n   four\ne=x\\ty\na=hidden\n",
        );
        match get(&o, "a") {
            Some(Node::Obj(a)) => assert!(matches!(a.get("b"), Some(Node::Str(s)) if s == "1")),
            other => panic!("{other:?}"),
        }
        assert!(matches!(get(&o, "c"), Some(Node::Str(s)) if s == "two"));
        assert!(matches!(get(&o, "d"), Some(Node::Str(s)) if s == "threefour"));
        assert!(matches!(get(&o, "e"), Some(Node::Str(s)) if s == "x\ty"));
    }
}
