//! Restoring object key order (see the module documentation, "Key order").

use std::cell::OnceCell;
use std::collections::HashMap;

/// The literal keys of the object constructors written in an expression.
#[derive(Debug, Default)]
pub(crate) struct SourceKeys {
    /// One entry per constructor with at least one literal key, in source order of its `{`:
    /// key -> position in that constructor.
    constructors: Vec<HashMap<String, usize>>,
    /// Key -> first appearance as a literal key anywhere in the expression.
    rank: HashMap<String, usize>,
}

struct Brace {
    keys: Vec<String>,
    /// Nesting of `(` and `[` inside this brace.
    nest: usize,
    expect_key: bool,
    slot: usize,
}

impl SourceKeys {
    /// Scans JSONata source for `{ "key": ..., 'key': ... }` constructors. A best-effort
    /// lexer: strings, backtick names, comments and regex literals are skipped correctly.
    pub(crate) fn scan(src: &str) -> SourceKeys {
        let chars: Vec<char> = src.chars().collect();
        let mut result = SourceKeys::default();
        let mut slots: Vec<Option<Vec<String>>> = Vec::new();
        let mut stack: Vec<Brace> = Vec::new();
        // A literal string seen where a key may start, waiting for a `:`.
        let mut pending: Option<String> = None;
        // Whether the previous token ends an operand (then `/` is division, not a regex).
        let mut prev_operand = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c.is_whitespace() {
                i += 1;
                continue;
            }
            if c == '/' && chars.get(i + 1) == Some(&'*') {
                i += 2;
                while i < chars.len() && !(chars[i] == '*' && chars.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
                continue;
            }
            let expect_key = stack.last().is_some_and(|b| b.expect_key && b.nest == 0);
            if let Some(top) = stack.last_mut().filter(|b| b.nest == 0) {
                top.expect_key = false;
            }
            let key = pending.take();
            match c {
                '"' | '\'' => {
                    let (s, next) = read_string(&chars, i + 1, c);
                    i = next;
                    if expect_key {
                        pending = Some(s);
                    }
                    prev_operand = true;
                    continue;
                }
                '`' => {
                    i += 1;
                    while i < chars.len() && chars[i] != '`' {
                        i += 1;
                    }
                    i += 1;
                    prev_operand = true;
                    continue;
                }
                '/' if !prev_operand => {
                    i = skip_regex(&chars, i + 1);
                    prev_operand = true;
                    continue;
                }
                ':' => {
                    let top = stack.last_mut().filter(|b| b.nest == 0);
                    match (key, top) {
                        (Some(key), Some(top)) if chars.get(i + 1) != Some(&'=') => {
                            let next_rank = result.rank.len();
                            result.rank.entry(key.clone()).or_insert(next_rank);
                            top.keys.push(key);
                        }
                        _ => {}
                    }
                    prev_operand = false;
                }
                '{' => {
                    slots.push(None);
                    stack.push(Brace {
                        keys: Vec::new(),
                        nest: 0,
                        expect_key: true,
                        slot: slots.len() - 1,
                    });
                    prev_operand = false;
                }
                '}' => {
                    if let Some(brace) = stack.pop().filter(|b| !b.keys.is_empty()) {
                        slots[brace.slot] = Some(brace.keys);
                    }
                    prev_operand = true;
                }
                '(' | '[' => {
                    if let Some(top) = stack.last_mut() {
                        top.nest += 1;
                    }
                    prev_operand = false;
                }
                ')' | ']' => {
                    if let Some(top) = stack.last_mut() {
                        top.nest = top.nest.saturating_sub(1);
                    }
                    prev_operand = true;
                }
                ',' => {
                    if let Some(top) = stack.last_mut().filter(|b| b.nest == 0) {
                        top.expect_key = true;
                    }
                    prev_operand = false;
                }
                c if c.is_alphanumeric() || c == '_' || c == '$' => {
                    let start = i;
                    while i < chars.len()
                        && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$')
                    {
                        i += 1;
                    }
                    let word: String = chars[start..i].iter().collect();
                    prev_operand = !matches!(word.as_str(), "and" | "or" | "in");
                    continue;
                }
                _ => prev_operand = false,
            }
            i += 1;
        }
        result.constructors = slots
            .into_iter()
            .flatten()
            .map(|keys| {
                let mut positions = HashMap::with_capacity(keys.len());
                for (pos, key) in keys.into_iter().enumerate() {
                    positions.entry(key).or_insert(pos);
                }
                positions
            })
            .collect();
        result
    }

    /// The constructor with exactly `keys` (`exact`), or the smallest one containing them.
    fn constructor_for(&self, keys: &[&str], exact: bool) -> Option<&HashMap<String, usize>> {
        self.constructors
            .iter()
            .filter(|c| {
                (if exact {
                    c.len() == keys.len()
                } else {
                    c.len() > keys.len()
                }) && keys.iter().all(|k| c.contains_key(*k))
            })
            .min_by_key(|c| c.len())
    }
}

fn read_string(chars: &[char], mut i: usize, quote: char) -> (String, usize) {
    let mut s = String::new();
    while i < chars.len() && chars[i] != quote {
        if chars[i] == '\\' && i + 1 < chars.len() {
            i += 1;
            match chars[i] {
                'n' => s.push('\n'),
                't' => s.push('\t'),
                'r' => s.push('\r'),
                'b' => s.push('\u{8}'),
                'f' => s.push('\u{c}'),
                'u' => {
                    let hex: String = chars.iter().skip(i + 1).take(4).collect();
                    let mut units = vec![u16::from_str_radix(&hex, 16).unwrap_or(0xfffd)];
                    i += 4;
                    if (0xd800..0xdc00).contains(&units[0])
                        && chars.get(i + 1) == Some(&'\\')
                        && chars.get(i + 2) == Some(&'u')
                    {
                        let hex: String = chars.iter().skip(i + 3).take(4).collect();
                        units.push(u16::from_str_radix(&hex, 16).unwrap_or(0xfffd));
                        i += 6;
                    }
                    s.extend(char::decode_utf16(units).map(|r| r.unwrap_or('\u{fffd}')));
                }
                other => s.push(other),
            }
        } else {
            s.push(chars[i]);
        }
        i += 1;
    }
    (s, i + 1)
}

/// Skips a regex literal body (after its opening `/`) and its flags.
fn skip_regex(chars: &[char], mut i: usize) -> usize {
    let mut in_class = false;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 1,
            '[' => in_class = true,
            ']' => in_class = false,
            '/' if !in_class => break,
            _ => {}
        }
        i += 1;
    }
    i += 1;
    while i < chars.len() && chars[i].is_ascii_alphabetic() {
        i += 1;
    }
    i
}

/// Key positions derived from the input document, built on first use.
#[derive(Debug, Default)]
struct InputIndex {
    /// Key -> first appearance in a depth-first walk of the input.
    rank: HashMap<String, usize>,
    /// String value -> first appearance in the input (orders group-by results).
    value_rank: HashMap<String, usize>,
    /// Sorted key set of an input object -> that object's key order (first such object).
    by_keys: HashMap<Vec<String>, Vec<String>>,
}

impl InputIndex {
    fn build(input: &serde_json::Value) -> InputIndex {
        let mut index = InputIndex::default();
        let mut stack = vec![input];
        while let Some(value) = stack.pop() {
            match value {
                serde_json::Value::Array(items) => stack.extend(items.iter().rev()),
                serde_json::Value::String(s) => {
                    let next = index.value_rank.len();
                    if !index.value_rank.contains_key(s) {
                        index.value_rank.insert(s.clone(), next);
                    }
                }
                serde_json::Value::Object(map) => {
                    for key in map.keys() {
                        let next = index.rank.len();
                        if !index.rank.contains_key(key) {
                            index.rank.insert(key.clone(), next);
                        }
                    }
                    if map.len() > 1 {
                        let mut sorted: Vec<String> = map.keys().cloned().collect();
                        sorted.sort_unstable();
                        index
                            .by_keys
                            .entry(sorted)
                            .or_insert_with(|| map.keys().cloned().collect());
                    }
                    stack.extend(map.values().rev());
                }
                _ => {}
            }
        }
        index
    }
}

/// Orders the keys of objects produced by one evaluation.
pub(crate) struct KeyOrderer<'s> {
    source: &'s SourceKeys,
    input: &'s serde_json::Value,
    index: OnceCell<InputIndex>,
}

impl<'s> KeyOrderer<'s> {
    pub(crate) fn new(source: &'s SourceKeys, input: &'s serde_json::Value) -> Self {
        KeyOrderer {
            source,
            input,
            index: OnceCell::new(),
        }
    }

    fn index(&self) -> &InputIndex {
        self.index.get_or_init(|| InputIndex::build(self.input))
    }

    /// Sorts `keys` (the distinct keys of one object) into the order described in the module
    /// documentation.
    pub(crate) fn order(&self, keys: &mut [&str]) {
        if keys.len() < 2 {
            return;
        }
        if let Some(c) = self.source.constructor_for(keys, true) {
            keys.sort_by_key(|k| c.get(*k).copied().unwrap_or(usize::MAX));
            return;
        }
        let index = self.index();
        let mut sorted: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        sorted.sort_unstable();
        if let Some(order) = index.by_keys.get(&sorted) {
            let pos: HashMap<&str, usize> = order
                .iter()
                .enumerate()
                .map(|(i, k)| (k.as_str(), i))
                .collect();
            keys.sort_by_key(|k| pos.get(k).copied().unwrap_or(usize::MAX));
            return;
        }
        if let Some(c) = self.source.constructor_for(keys, false) {
            keys.sort_by_key(|k| c.get(*k).copied().unwrap_or(usize::MAX));
            return;
        }
        keys.sort_by(|a, b| {
            let rank = |k: &str| {
                (
                    index.rank.get(k).copied().unwrap_or(usize::MAX),
                    self.source.rank.get(k).copied().unwrap_or(usize::MAX),
                    index.value_rank.get(k).copied().unwrap_or(usize::MAX),
                )
            };
            rank(a).cmp(&rank(b)).then_with(|| a.cmp(b))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn constructors(src: &str) -> Vec<Vec<String>> {
        SourceKeys::scan(src)
            .constructors
            .into_iter()
            .map(|c| {
                let mut keys: Vec<(String, usize)> = c.into_iter().collect();
                keys.sort_by_key(|(_, p)| *p);
                keys.into_iter().map(|(k, _)| k).collect()
            })
            .collect()
    }

    #[test]
    fn scans_constructor_keys_in_written_order() {
        assert_eq!(
            constructors(
                r#"{"z": 1, 'a': {"y": [1, {"q": 2}], "b": x ? "c" : "d"}, "m": $f("k", 2)}"#
            ),
            vec![vec!["z", "a", "m"], vec!["y", "b"], vec!["q"],]
        );
    }

    #[test]
    fn scan_skips_comments_regexes_and_blocks() {
        assert_eq!(
            constructors(
                r#"/* {"no": 1} */ $replace(s, /"{x/, "") & {"w\"x": 1, "v": 2}.w / 2 ~> function($v){ $v }"#
            ),
            vec![vec!["w\"x", "v"]]
        );
        assert!(constructors("Account.Order{Product: Price}").is_empty());
        assert!(constructors("$x := {}").is_empty());
    }

    #[test]
    fn orders_by_constructor_then_input_then_rank() {
        let src = SourceKeys::scan(r#"{"b": 1, "a": 2, "c": 3}"#);
        let input = json!({"x": 1, "y": {"q": 1, "p": 2}});
        let o = KeyOrderer::new(&src, &input);
        let mut k = vec!["a", "c", "b"];
        o.order(&mut k);
        assert_eq!(k, ["b", "a", "c"]);
        let mut k = vec!["p", "q"];
        o.order(&mut k);
        assert_eq!(k, ["q", "p"]);
        let mut k = vec!["c", "a"];
        o.order(&mut k);
        assert_eq!(k, ["a", "c"]);
        let mut k = vec!["zz", "a", "y", "x", "new"];
        o.order(&mut k);
        assert_eq!(k, ["x", "y", "a", "new", "zz"]);
    }
}
