//! Lucille patch: function signatures on function literals, `function($x, $y)<n-n:n>{...}`,
//! checked (and used to fill and coerce arguments) when the function is called, as JSONata
//! does.
//!
//! A signature lists one type per parameter up to `:` (the return type, not checked):
//! `s` string, `n` number, `b` boolean, `l` null, `o` object, `a` array (a single value is
//! wrapped in one; `a<t>` also checks the members' type), `f` function (`f<..>` not checked),
//! `j` any JSON value, `x` anything, `(sn)` a choice. `?` makes a parameter optional, `+`
//! repeated, `-` optional and taken from the context value when missing. An undefined argument
//! matches any type but `f`.
//!
//! Errors, as jsonata-js: S0401 (a type parameter on something other than `a` or `f`), S0402
//! (a choice with a type parameter), at parse time; T0410 (arguments that do not match), T0411
//! (a context value of the wrong type), T0412 (array members of the wrong type), at the call.

use bumpalo::Bump;

use crate::evaluator::value::{ArrayFlags, Value};
use crate::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Repeat {
    One,
    Optional,
    OneOrMore,
}

#[derive(Debug, Clone, PartialEq)]
struct Param {
    /// The symbols (see `symbol`) this parameter accepts.
    accepts: String,
    /// The type letter as written (`(` for a choice).
    kind: char,
    /// `a<t>`: `t`.
    subtype: Option<String>,
    /// `-`: a missing argument is the context value.
    context: bool,
    repeat: Repeat,
}

/// The most parameters a signature may have (matching recurses once per parameter, and
/// costs up to parameters x arguments^2 steps).
pub const MAX_PARAMS: usize = 100;

/// A parsed function signature.
#[derive(Debug, Clone, PartialEq)]
pub struct Signature {
    params: Vec<Param>,
}

/// The index of the bracket closing the one at `open` (`None` if it is not closed).
fn closing(chars: &[char], open: usize, left: char, right: char) -> Option<usize> {
    let mut depth = 0usize;
    for (index, &c) in chars.iter().enumerate().skip(open) {
        if c == left {
            depth += 1;
        } else if c == right {
            depth = depth.saturating_sub(1);
            if depth == 0 {
                return Some(index);
            }
        }
    }
    None
}

impl Signature {
    /// Parses `text` (from `<` to its matching `>`); `char_index` is its position, for errors.
    pub fn parse(text: &str, char_index: usize) -> Result<Signature> {
        let chars: Vec<char> = text.chars().collect();
        let mut params: Vec<Param> = Vec::new();
        let simple = |accepts: &str, kind: char| Param {
            accepts: accepts.to_string(),
            kind,
            subtype: None,
            context: false,
            repeat: Repeat::One,
        };
        let mut position = 1;
        while position < chars.len() {
            let symbol = chars[position];
            match symbol {
                ':' | '>' => break,
                's' | 'n' | 'b' | 'l' | 'o' => params.push(simple(&format!("{symbol}m"), symbol)),
                'a' | 'x' => params.push(simple("asnblfom", symbol)),
                'j' => params.push(simple("asnblom", symbol)),
                'f' => params.push(simple("f", symbol)),
                '-' => {
                    if let Some(last) = params.last_mut() {
                        last.context = true;
                        last.repeat = Repeat::Optional;
                    }
                }
                '?' => {
                    if let Some(last) = params.last_mut() {
                        last.repeat = Repeat::Optional;
                    }
                }
                '+' => {
                    if let Some(last) = params.last_mut() {
                        last.repeat = Repeat::OneOrMore;
                    }
                }
                '(' => {
                    let end = closing(&chars, position, '(', ')').ok_or_else(|| {
                        Error::S0402SignatureChoiceGroupType(char_index + position, text.into())
                    })?;
                    let choice: String = chars[position + 1..end].iter().collect();
                    if choice.contains('<') {
                        return Err(Error::S0402SignatureChoiceGroupType(
                            char_index + position,
                            text.into(),
                        ));
                    }
                    params.push(simple(&format!("{choice}m"), '('));
                    position = end;
                }
                '<' => {
                    let end = match params.last() {
                        Some(last) if last.kind == 'a' || last.kind == 'f' => {
                            closing(&chars, position, '<', '>')
                        }
                        _ => None,
                    }
                    .ok_or_else(|| {
                        Error::S0401SignatureTypeParameter(char_index + position, text.into())
                    })?;
                    let subtype: String = chars[position + 1..end].iter().collect();
                    if let Some(last) = params.last_mut() {
                        last.subtype = Some(subtype);
                    }
                    position = end;
                }
                _ => {}
            }
            position += 1;
        }
        if params.len() > MAX_PARAMS {
            return Err(Error::U1004SignatureTooLong(char_index));
        }
        Ok(Signature { params })
    }

    /// Checks `args` against the signature and gives the arguments to bind: a missing `-`
    /// argument is `context`, a single value for an `a` parameter is wrapped in an array.
    pub fn validate<'a>(
        &self,
        arena: &'a Bump,
        args: &[&'a Value<'a>],
        context: &'a Value<'a>,
        char_index: usize,
        name: &str,
    ) -> Result<Vec<&'a Value<'a>>> {
        let symbols: Vec<char> = args.iter().map(|arg| symbol(arg)).collect();
        let Some(counts) = self.match_counts(&symbols) else {
            // Where it went wrong: the first argument no parameter accepts, else one too many.
            let index = symbols
                .iter()
                .position(|s| !self.params.iter().any(|p| p.accepts.contains(*s)))
                .unwrap_or(symbols.len().min(self.params.len()));
            return Err(Error::T0410ArgumentNotValid(
                char_index,
                index + 1,
                name.to_string(),
            ));
        };
        let mut validated = Vec::with_capacity(args.len().max(self.params.len()));
        // `arg_index` is the next argument to take, `at` the next symbol matched: as in
        // jsonata-js, they part when a missing optional argument takes a position.
        let mut arg_index = 0;
        let mut at = 0;
        for (param, count) in self.params.iter().zip(counts) {
            if count == 0 {
                if param.context {
                    let context_symbol = symbol(context);
                    if context_symbol != 'm' && param.accepts.contains(context_symbol) {
                        validated.push(context);
                    } else {
                        return Err(Error::T0411ContextValueNotCompatible(
                            char_index,
                            arg_index + 1,
                            name.to_string(),
                        ));
                    }
                } else {
                    // As jsonata-js: a missing optional argument still takes a position.
                    validated.push(
                        args.get(arg_index)
                            .copied()
                            .unwrap_or_else(Value::undefined),
                    );
                    arg_index += 1;
                }
                continue;
            }
            let matched: String = symbols.iter().skip(at).take(count).collect();
            at += count;
            for single in matched.chars() {
                let arg = args
                    .get(arg_index)
                    .copied()
                    .unwrap_or_else(Value::undefined);
                if param.kind != 'a' || single == 'm' {
                    validated.push(if single == 'm' {
                        Value::undefined()
                    } else {
                        arg
                    });
                    arg_index += 1;
                    continue;
                }
                if let Some(subtype) = &param.subtype {
                    // (`arg` need not be the array that matched: as in jsonata-js, a missing
                    // optional argument before shifts the arguments taken.)
                    let ok = if single == 'a' && arg.is_array() {
                        let mut members = arg.members();
                        match members.next() {
                            None => true,
                            Some(first) => {
                                let item = symbol(first);
                                subtype.starts_with(item)
                                    && arg.members().all(|member| symbol(member) == item)
                            }
                        }
                    } else if single == 'a' {
                        true
                    } else {
                        matched == *subtype
                    };
                    if !ok {
                        return Err(Error::T0412ArgumentMustBeArrayOfType(
                            char_index,
                            arg_index + 1,
                            name.to_string(),
                            subtype.clone(),
                        ));
                    }
                }
                validated.push(if single == 'a' {
                    arg
                } else {
                    Value::wrap_in_array(arena, arg, ArrayFlags::empty())
                });
                arg_index += 1;
            }
        }
        Ok(validated)
    }

    /// How many arguments each parameter takes, as the regex that jsonata-js builds from the
    /// signature would match them (greedy, first match), or `None` if they do not match.
    /// Failures are memoised, so this is polynomial however the signature is written.
    fn match_counts(&self, symbols: &[char]) -> Option<Vec<usize>> {
        let mut failed = vec![false; (self.params.len() + 1) * (symbols.len() + 1)];
        let mut counts = vec![0; self.params.len()];
        if self.match_from(0, 0, symbols, &mut counts, &mut failed) {
            Some(counts)
        } else {
            None
        }
    }

    fn match_from(
        &self,
        param: usize,
        at: usize,
        symbols: &[char],
        counts: &mut [usize],
        failed: &mut [bool],
    ) -> bool {
        let Some(p) = self.params.get(param) else {
            return at == symbols.len();
        };
        let memo = param * (symbols.len() + 1) + at;
        if failed[memo] {
            return false;
        }
        let run = symbols[at..]
            .iter()
            .take_while(|s| p.accepts.contains(**s))
            .count();
        let (most, least) = match p.repeat {
            Repeat::One => (run.min(1), 1),
            Repeat::Optional => (run.min(1), 0),
            Repeat::OneOrMore => (run, 1),
        };
        for count in (least..=most).rev() {
            counts[param] = count;
            if self.match_from(param + 1, at + count, symbols, counts, failed) {
                return true;
            }
        }
        failed[memo] = true;
        false
    }
}

/// The signature symbol of a value (`m`: missing, undefined).
fn symbol(value: &Value) -> char {
    match value {
        Value::Undefined => 'm',
        Value::Null => 'l',
        Value::Number(..) => 'n',
        Value::Bool(..) => 'b',
        Value::String(..) => 's',
        Value::Array(..) | Value::Range(..) => 'a',
        Value::Object(..) => 'o',
        Value::Regex(..)
        | Value::Lambda { .. }
        | Value::NativeFn { .. }
        | Value::Transformer { .. } => 'f',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects_as_jsonata() {
        assert!(Signature::parse("<a<s>s?:s>", 0).is_ok());
        assert!(Signature::parse("<f<n:n>:f<n:n>>", 0).is_ok());
        assert_eq!(
            Signature::parse("<n<n>>", 0).map_err(|e| e.code().to_string()),
            Err("S0401".to_string())
        );
        assert_eq!(
            Signature::parse("<(sa<n>)>>", 0).map_err(|e| e.code().to_string()),
            Err("S0402".to_string())
        );
        // Odd text is no panic.
        for odd in ["<", "<(", "<a<", "<?+-", "<)>", "<<<>"] {
            let _ = Signature::parse(odd, 0);
        }
    }

    #[test]
    fn a_shifted_argument_is_no_panic() {
        // `f?` takes the array's position (jsonata-js's quirk), so `a<s>` gets undefined.
        let arena = Bump::new();
        let sig = Signature::parse("<f?a<s>s?:s>", 0).unwrap();
        let array = Value::wrap_in_array(&arena, Value::string(&arena, "a"), ArrayFlags::empty());
        let validated = sig.validate(&arena, &[array], Value::undefined(), 0, "f");
        assert!(validated.is_ok());
    }

    #[test]
    fn counts_are_greedy_and_polynomial() {
        let sig = Signature::parse("<n+s-:a<n>>", 0).unwrap();
        assert_eq!(sig.match_counts(&['n', 'n']), Some(vec![2, 0]));
        assert_eq!(sig.match_counts(&['n', 'n', 's']), Some(vec![2, 1]));
        let many = Signature::parse(&format!("<{}s>", "n+".repeat(30)), 0).unwrap();
        assert_eq!(many.match_counts(&['n'; 60]), None);
        assert_eq!(
            Signature::parse(&format!("<{}>", "n".repeat(100_000)), 0)
                .map_err(|e| e.code().to_string()),
            Err("U1004".to_string())
        );
    }
}
