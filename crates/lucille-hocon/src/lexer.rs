//! Tokenizer for HOCON text.
//!
//! Produces a flat token list. Whitespace (other than newlines) is kept as
//! [`Tok::Ws`] tokens because value concatenation preserves the whitespace
//! between simple values; comments are dropped (the newline ending them is kept).

use super::HoconError;

/// Characters that may never appear in an unquoted string (besides whitespace).
const FORBIDDEN: &str = "$\"{}[]:=,+#`^?!@*&\\";
/// Characters that may continue a number once it has started.
const NUMBER_CHARS: &str = "0123456789eE+-.";

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    /// Run of non-newline whitespace.
    Ws(String),
    Newline,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Colon,
    Equals,
    PlusEquals,
    /// Quoted or triple-quoted string (escapes already processed).
    Quoted(String),
    Unquoted(String),
    /// A number as written in the source (validated to parse).
    Number(String),
    True,
    False,
    Null,
    /// `${path}` or `${?path}`; `inner` holds the path-expression tokens with
    /// leading/trailing whitespace removed.
    Subst {
        optional: bool,
        inner: Vec<Token>,
    },
    Eof,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub line: usize,
    pub col: usize,
}

impl Tok {
    /// Human readable description for error messages.
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ws(_) => "whitespace".into(),
            Tok::Newline => "end of line".into(),
            Tok::LBrace => "'{'".into(),
            Tok::RBrace => "'}'".into(),
            Tok::LBracket => "'['".into(),
            Tok::RBracket => "']'".into(),
            Tok::Comma => "','".into(),
            Tok::Colon => "':'".into(),
            Tok::Equals => "'='".into(),
            Tok::PlusEquals => "'+='".into(),
            Tok::Quoted(s) => format!("quoted string {s:?}"),
            Tok::Unquoted(s) => format!("'{s}'"),
            Tok::Number(s) => format!("number {s}"),
            Tok::True => "'true'".into(),
            Tok::False => "'false'".into(),
            Tok::Null => "'null'".into(),
            Tok::Subst { .. } => "substitution".into(),
            Tok::Eof => "end of input".into(),
        }
    }

    /// Text of a token that can be part of a key / path expression.
    pub(crate) fn path_text(&self) -> Option<&str> {
        match self {
            Tok::Unquoted(s) | Tok::Number(s) | Tok::Ws(s) => Some(s),
            Tok::True => Some("true"),
            Tok::False => Some("false"),
            Tok::Null => Some("null"),
            _ => None,
        }
    }
}

/// HOCON whitespace: Unicode Zs/Zl/Zp, ASCII controls tab..CR, 0x1C-0x1F, and BOM.
pub(crate) fn is_ws(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n'
            | '\u{0B}'
            | '\u{0C}'
            | '\r'
            | '\u{1C}'..='\u{1F}'
            | ' '
            | '\u{A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

pub(crate) fn is_forbidden(c: char) -> bool {
    FORBIDDEN.contains(c)
}

struct Lexer<'a> {
    chars: Vec<char>,
    i: usize,
    line: usize,
    col: usize,
    file: &'a str,
}

/// Tokenize `text`. `file` is used for error messages only.
pub(crate) fn lex(text: &str, file: &str) -> Result<Vec<Token>, HoconError> {
    let mut lx = Lexer {
        chars: text.chars().collect(),
        i: 0,
        line: 1,
        col: 1,
        file,
    };
    let mut out = Vec::new();
    loop {
        let t = lx.next_token(false)?;
        let end = t.tok == Tok::Eof;
        out.push(t);
        if end {
            break;
        }
    }
    Ok(out)
}

impl Lexer<'_> {
    fn peek(&self, off: usize) -> Option<char> {
        self.chars.get(self.i + off).copied()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.chars.get(self.i).copied()?;
        self.i += 1;
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }

    fn err(&self, line: usize, col: usize, message: impl Into<String>) -> HoconError {
        HoconError::Syntax {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    fn starts_comment(&self) -> bool {
        match self.peek(0) {
            Some('#') => true,
            Some('/') => self.peek(1) == Some('/'),
            _ => false,
        }
    }

    /// Lex one token. Inside a substitution, `${` is rejected (no nesting).
    fn next_token(&mut self, in_subst: bool) -> Result<Token, HoconError> {
        // skip comments (they end before the newline, which is its own token)
        while self.starts_comment() {
            while let Some(c) = self.peek(0) {
                if c == '\n' {
                    break;
                }
                self.bump();
            }
        }
        let (line, col) = (self.line, self.col);
        let mk = |tok| Token { tok, line, col };
        let Some(c) = self.peek(0) else {
            return Ok(mk(Tok::Eof));
        };
        if c == '\n' {
            self.bump();
            return Ok(mk(Tok::Newline));
        }
        if is_ws(c) {
            let mut s = String::new();
            while let Some(c) = self.peek(0) {
                if c == '\n' || !is_ws(c) {
                    break;
                }
                s.push(c);
                self.bump();
            }
            return Ok(mk(Tok::Ws(s)));
        }
        let simple = match c {
            '{' => Some(Tok::LBrace),
            '}' => Some(Tok::RBrace),
            '[' => Some(Tok::LBracket),
            ']' => Some(Tok::RBracket),
            ',' => Some(Tok::Comma),
            ':' => Some(Tok::Colon),
            '=' => Some(Tok::Equals),
            _ => None,
        };
        if let Some(t) = simple {
            self.bump();
            return Ok(mk(t));
        }
        match c {
            '"' => {
                if self.peek(1) == Some('"') && self.peek(2) == Some('"') {
                    self.lex_triple(line, col).map(mk)
                } else {
                    self.lex_quoted(line, col).map(mk)
                }
            }
            '$' => {
                if self.peek(1) != Some('{') {
                    return Err(self.err(
                        line,
                        col,
                        "'$' must be followed by '{' to start a substitution (quote it to use a literal '$')",
                    ));
                }
                if in_subst {
                    return Err(self.err(line, col, "substitutions cannot be nested"));
                }
                self.bump();
                self.bump();
                self.lex_subst(line, col).map(mk)
            }
            '+' => {
                if self.peek(1) == Some('=') {
                    self.bump();
                    self.bump();
                    Ok(mk(Tok::PlusEquals))
                } else {
                    Err(self.err(
                        line,
                        col,
                        "reserved character '+' is not allowed outside quotes (did you mean '+='?)",
                    ))
                }
            }
            '0'..='9' | '-' => self.lex_number(line, col).map(mk),
            c if is_forbidden(c) => Err(self.err(
                line,
                col,
                format!("reserved character '{c}' is not allowed outside quotes"),
            )),
            _ => Ok(mk(self.lex_unquoted())),
        }
    }

    fn lex_unquoted(&mut self) -> Tok {
        let mut s = String::new();
        let mut n = 0usize;
        while let Some(c) = self.peek(0) {
            if is_ws(c) || is_forbidden(c) || (c == '/' && self.peek(1) == Some('/')) {
                break;
            }
            s.push(c);
            n += 1;
            self.bump();
            // keywords are recognised at the start of an unquoted run only
            if n == 4 && s == "true" {
                return Tok::True;
            }
            if n == 4 && s == "null" {
                return Tok::Null;
            }
            if n == 5 && s == "false" {
                return Tok::False;
            }
        }
        Tok::Unquoted(s)
    }

    fn lex_number(&mut self, line: usize, col: usize) -> Result<Tok, HoconError> {
        let mut s = String::new();
        let mut decimal = false;
        while let Some(c) = self.peek(0) {
            if !NUMBER_CHARS.contains(c) {
                break;
            }
            if matches!(c, '.' | 'e' | 'E') {
                decimal = true;
            }
            s.push(c);
            self.bump();
        }
        let valid = if decimal {
            // Rust accepts "inf"/"nan" spellings, but those cannot occur here
            // because only NUMBER_CHARS were collected.
            s.parse::<f64>().is_ok()
        } else {
            s.parse::<i64>().is_ok() || s.parse::<u64>().is_ok()
        };
        if valid {
            return Ok(Tok::Number(s));
        }
        // Not a number after all: like Typesafe Config, treat it as unquoted
        // text unless it contains a reserved character.
        if s.contains('+') {
            return Err(self.err(
                line,
                col,
                format!("reserved character '+' is not allowed outside quotes (in {s:?})"),
            ));
        }
        Ok(Tok::Unquoted(s))
    }

    fn lex_quoted(&mut self, line: usize, col: usize) -> Result<Tok, HoconError> {
        self.bump(); // opening quote
        let mut s = String::new();
        loop {
            let (cl, cc) = (self.line, self.col);
            let Some(c) = self.bump() else {
                return Err(self.err(line, col, "unterminated quoted string"));
            };
            match c {
                '"' => return Ok(Tok::Quoted(s)),
                '\\' => {
                    let Some(e) = self.bump() else {
                        return Err(self.err(line, col, "unterminated quoted string"));
                    };
                    match e {
                        '"' => s.push('"'),
                        '\\' => s.push('\\'),
                        '/' => s.push('/'),
                        'b' => s.push('\u{08}'),
                        'f' => s.push('\u{0C}'),
                        'n' => s.push('\n'),
                        'r' => s.push('\r'),
                        't' => s.push('\t'),
                        'u' => {
                            let hi = self.hex4(cl, cc)?;
                            if (0xD800..0xDC00).contains(&hi)
                                && self.peek(0) == Some('\\')
                                && self.peek(1) == Some('u')
                            {
                                let save = (self.i, self.line, self.col);
                                self.bump();
                                self.bump();
                                let lo = self.hex4(cl, cc)?;
                                if (0xDC00..0xE000).contains(&lo) {
                                    let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                    s.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                                } else {
                                    // lone high surrogate; re-read the second escape
                                    s.push('\u{FFFD}');
                                    (self.i, self.line, self.col) = save;
                                }
                            } else {
                                s.push(char::from_u32(hi).unwrap_or('\u{FFFD}'));
                            }
                        }
                        other => {
                            return Err(self.err(
                                cl,
                                cc,
                                format!("invalid escape sequence '\\{other}' in quoted string"),
                            ));
                        }
                    }
                }
                '\n' => {
                    return Err(self.err(
                        cl,
                        cc,
                        "newline in quoted string (use \\n or a \"\"\"triple-quoted\"\"\" string)",
                    ));
                }
                c if (c as u32) < 0x20 => {
                    return Err(self.err(
                        cl,
                        cc,
                        format!(
                            "control character U+{:04X} in quoted string must be escaped",
                            c as u32
                        ),
                    ));
                }
                c => s.push(c),
            }
        }
    }

    fn hex4(&mut self, line: usize, col: usize) -> Result<u32, HoconError> {
        let mut v = 0u32;
        for _ in 0..4 {
            let d = self.peek(0).and_then(|c| c.to_digit(16));
            match d {
                Some(d) => {
                    v = v * 16 + d;
                    self.bump();
                }
                None => {
                    return Err(self.err(
                        line,
                        col,
                        "\\u escape must be followed by four hex digits",
                    ));
                }
            }
        }
        Ok(v)
    }

    fn lex_triple(&mut self, line: usize, col: usize) -> Result<Tok, HoconError> {
        for _ in 0..3 {
            self.bump();
        }
        let mut s = String::new();
        loop {
            if self.peek(0) == Some('"') && self.peek(1) == Some('"') && self.peek(2) == Some('"') {
                // Any extra quotes before the closing three belong to the string.
                let mut run = 0usize;
                while self.peek(run) == Some('"') {
                    run += 1;
                }
                for _ in 0..run - 3 {
                    s.push('"');
                }
                for _ in 0..run {
                    self.bump();
                }
                return Ok(Tok::Quoted(s));
            }
            match self.bump() {
                Some(c) => s.push(c),
                None => return Err(self.err(line, col, "unterminated triple-quoted string")),
            }
        }
    }

    fn lex_subst(&mut self, line: usize, col: usize) -> Result<Tok, HoconError> {
        let optional = if self.peek(0) == Some('?') {
            self.bump();
            true
        } else {
            false
        };
        let mut inner: Vec<Token> = Vec::new();
        loop {
            let t = self.next_token(true)?;
            match &t.tok {
                Tok::RBrace => break,
                Tok::Eof => {
                    return Err(self.err(line, col, "substitution '${' was not closed with '}'"));
                }
                Tok::Newline => {
                    return Err(self.err(
                        t.line,
                        t.col,
                        "substitution '${' was not closed with '}' before the end of the line",
                    ));
                }
                Tok::Ws(_)
                | Tok::Quoted(_)
                | Tok::Unquoted(_)
                | Tok::Number(_)
                | Tok::True
                | Tok::False
                | Tok::Null => inner.push(t),
                other => {
                    return Err(self.err(
                        t.line,
                        t.col,
                        format!("{} is not allowed inside a substitution", other.describe()),
                    ));
                }
            }
        }
        while matches!(
            inner.last(),
            Some(Token {
                tok: Tok::Ws(_),
                ..
            })
        ) {
            inner.pop();
        }
        let lead = inner
            .iter()
            .take_while(|t| matches!(t.tok, Tok::Ws(_)))
            .count();
        inner.drain(..lead);
        if inner.is_empty() {
            return Err(self.err(line, col, "empty substitution '${}'"));
        }
        Ok(Tok::Subst { optional, inner })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s, "t")
            .expect("lex")
            .into_iter()
            .map(|t| t.tok)
            .collect()
    }

    #[test]
    fn keywords_only_at_start() {
        assert_eq!(
            toks("truefoo footrue"),
            vec![
                Tok::True,
                Tok::Unquoted("foo".into()),
                Tok::Ws(" ".into()),
                Tok::Unquoted("footrue".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn numbers_and_fallback_text() {
        assert_eq!(
            toks("10.0bar"),
            vec![
                Tok::Number("10.0".into()),
                Tok::Unquoted("bar".into()),
                Tok::Eof
            ]
        );
        assert_eq!(toks("1.2.3"), vec![Tok::Unquoted("1.2.3".into()), Tok::Eof]);
        assert_eq!(toks("-"), vec![Tok::Unquoted("-".into()), Tok::Eof]);
        assert!(lex("1+2", "t").is_err());
    }

    #[test]
    fn comments_keep_newline() {
        assert_eq!(
            toks("a // c\n# d\nb"),
            vec![
                Tok::Unquoted("a".into()),
                Tok::Ws(" ".into()),
                Tok::Newline,
                Tok::Newline,
                Tok::Unquoted("b".into()),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn triple_quotes_extra_quotes() {
        assert_eq!(
            toks("\"\"\"a\"b\"\"\"\"\""),
            vec![Tok::Quoted("a\"b\"\"".into()), Tok::Eof]
        );
    }

    #[test]
    fn escapes() {
        assert_eq!(
            toks(r#""a\n\t\u0041\ud83d\ude00\/""#),
            vec![Tok::Quoted("a\n\tA\u{1F600}/".into()), Tok::Eof]
        );
        assert!(lex(r#""\x""#, "t").is_err());
        assert!(lex("\"a\nb\"", "t").is_err());
    }

    #[test]
    fn subst_trims_ws() {
        let t = toks("${ a.b }");
        match &t[0] {
            Tok::Subst { optional, inner } => {
                assert!(!optional);
                assert_eq!(inner.len(), 1);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(lex("${}", "t").is_err());
        assert!(lex("${a", "t").is_err());
        assert!(lex("${a${b}}", "t").is_err());
    }

    #[test]
    fn reserved_chars() {
        for s in [
            "a?b", "a!b", "a@b", "a*b", "a&b", "a^b", "a`b", "a\\b", "$a",
        ] {
            assert!(lex(s, "t").is_err(), "{s}");
        }
    }
}
