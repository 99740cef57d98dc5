//! Recursive-descent parser: tokens -> unresolved [`Node`] tree, with includes.

use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::lexer::{lex, Tok, Token};
use super::node::{
    merge_field, merge_maps, merge_nodes, relativize, Node, NumLit, OMap, Piece, Pos, Subst,
};
use super::properties;
use super::HoconError;

/// Maximum nesting of the value tree: each key and each bracket counts one,
/// so about 100 levels of `a { b { ... } }` are allowed.
pub(crate) const MAX_NESTING: usize = 200;
/// Maximum depth of nested includes.
const MAX_INCLUDE_DEPTH: usize = 50;
/// Maximum number of files included while parsing one document.
const MAX_INCLUDES: usize = 1000;

/// State shared by a document and everything it includes.
#[derive(Debug, Default)]
pub(crate) struct ParseCtx {
    next_id: u64,
    include_stack: Vec<PathBuf>,
    includes_loaded: usize,
    /// Nesting depth of the include point while an included file is parsed.
    nesting_base: usize,
}

impl ParseCtx {
    pub(crate) fn new_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    pub(crate) fn push_file(&mut self, p: &Path) {
        self.include_stack.push(canonical(p));
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum IncludeKind {
    Heuristic,
    File,
    Url,
    Classpath,
}

/// Parse a HOCON document into its root object.
pub(crate) fn parse_document(
    text: &str,
    file: &str,
    base_dir: Option<&Path>,
    ctx: &mut ParseCtx,
) -> Result<OMap<Node>, HoconError> {
    let toks = lex(text, file)?;
    let mut p = Parser::new(toks, file, base_dir, ctx);
    p.parse_root()
}

/// Parse a file's bytes according to its extension (`.properties` or HOCON/JSON).
pub(crate) fn parse_bytes(
    bytes: Vec<u8>,
    path: &Path,
    ctx: &mut ParseCtx,
) -> Result<OMap<Node>, HoconError> {
    let file = path.display().to_string();
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            let col = valid.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            return Err(HoconError::Syntax {
                file,
                line,
                col,
                message: "file is not valid UTF-8".into(),
            });
        }
    };
    let is_props = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("properties"));
    if is_props {
        Ok(properties::parse_properties(&text))
    } else {
        parse_document(&text, &file, path.parent(), ctx)
    }
}

/// Parse a path expression such as `a.b."c.d"` (used for override keys).
pub(crate) fn parse_path_expr(text: &str, file: &str) -> Result<Vec<String>, HoconError> {
    let toks = lex(text, file)?;
    let mut parts: Vec<Token> = Vec::new();
    for t in toks {
        match t.tok {
            Tok::Eof => break,
            Tok::Newline => {
                return Err(HoconError::Syntax {
                    file: file.to_string(),
                    line: t.line,
                    col: t.col,
                    message: "newline in path expression".into(),
                });
            }
            _ => parts.push(t),
        }
    }
    while matches!(
        parts.last(),
        Some(Token {
            tok: Tok::Ws(_),
            ..
        })
    ) {
        parts.pop();
    }
    let lead = parts
        .iter()
        .take_while(|t| matches!(t.tok, Tok::Ws(_)))
        .count();
    parts.drain(..lead);
    if parts.is_empty() {
        return Err(HoconError::Syntax {
            file: file.to_string(),
            line: 1,
            col: 1,
            message: "empty path expression".into(),
        });
    }
    path_from_tokens(&parts, file)
}

/// Parse the text of an override value as a single HOCON value. Returns `None`
/// when the text is not exactly one HOCON value (the caller then uses it as a
/// literal string).
pub(crate) fn parse_override_value(text: &str, file: &str, ctx: &mut ParseCtx) -> Option<Node> {
    if text.trim().is_empty() {
        return Some(Node::Str(text.to_string()));
    }
    let toks = lex(text, file).ok()?;
    let mut p = Parser::new(toks, file, None, ctx);
    p.skip_ws_nl();
    let v = p.parse_value().ok()?;
    p.skip_ws_nl();
    if p.peek().tok == Tok::Eof {
        Some(v)
    } else {
        None
    }
}

/// Turn key / substitution tokens into path elements: unquoted `.` separates,
/// quoted text is literal, whitespace between pieces is kept.
pub(crate) fn path_from_tokens(toks: &[Token], file: &str) -> Result<Vec<String>, HoconError> {
    let err = |t: &Token, message: &str| HoconError::Syntax {
        file: file.to_string(),
        line: t.line,
        col: t.col,
        message: message.to_string(),
    };
    let mut elems = Vec::new();
    let mut cur = String::new();
    let mut cur_quoted = false;
    let Some(first) = toks.first() else {
        return Ok(elems);
    };
    for t in toks {
        match &t.tok {
            Tok::Quoted(s) => {
                cur.push_str(s);
                cur_quoted = true;
            }
            other => {
                let Some(text) = other.path_text() else {
                    return Err(err(
                        t,
                        &format!("{} is not allowed in a path expression", other.describe()),
                    ));
                };
                for c in text.chars() {
                    if c == '.' {
                        if cur.is_empty() && !cur_quoted {
                            return Err(err(
                                t,
                                "invalid path: empty element (leading, trailing or double '.'; quote \"\" for an empty key)",
                            ));
                        }
                        elems.push(std::mem::take(&mut cur));
                        cur_quoted = false;
                    } else {
                        cur.push(c);
                    }
                }
            }
        }
    }
    if cur.is_empty() && !cur_quoted {
        return Err(err(
            first,
            "invalid path: it ends with '.' (quote \"\" for an empty key)",
        ));
    }
    elems.push(cur);
    Ok(elems)
}

fn is_value_start(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Quoted(_)
            | Tok::Unquoted(_)
            | Tok::Number(_)
            | Tok::True
            | Tok::False
            | Tok::Null
            | Tok::Subst { .. }
            | Tok::LBrace
            | Tok::LBracket
    )
}

struct Parser<'c> {
    toks: Vec<Token>,
    i: usize,
    eof: Token,
    file: Rc<str>,
    base_dir: Option<PathBuf>,
    ctx: &'c mut ParseCtx,
    /// Path (within this document) of the object currently being parsed.
    path: Vec<String>,
    /// Objects/arrays currently open.
    depth: usize,
    /// Nesting depth of the include point (0 for a top-level document).
    base_depth: usize,
    /// Lists (and `+=` values, which become lists) open around the current position.
    array_count: usize,
}

impl<'c> Parser<'c> {
    fn new(toks: Vec<Token>, file: &str, base_dir: Option<&Path>, ctx: &'c mut ParseCtx) -> Self {
        let eof = toks.last().cloned().unwrap_or(Token {
            tok: Tok::Eof,
            line: 1,
            col: 1,
        });
        let base_depth = ctx.nesting_base;
        Parser {
            toks,
            i: 0,
            eof,
            file: Rc::from(file),
            base_dir: base_dir.map(Path::to_path_buf),
            ctx,
            path: Vec::new(),
            depth: 0,
            base_depth,
            array_count: 0,
        }
    }

    /// Bound on the depth of the value tree at the current position: keys of
    /// the enclosing fields plus open brackets (an object value is counted
    /// twice, once as a key and once as a bracket, so the bound is generous).
    fn nesting(&self) -> usize {
        self.base_depth + self.depth + self.path.len()
    }

    fn peek(&self) -> &Token {
        self.toks.get(self.i).unwrap_or(&self.eof)
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if self.i < self.toks.len() {
            self.i += 1;
        }
        t
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek().tok, Tok::Ws(_)) {
            self.i += 1;
        }
    }

    /// Typesafe takes a comma that starts a later line (`a = [1\n, 2]`, `a = 1\n, b = 2`) as
    /// the separator: when only whitespace and newlines stand before a comma, moves to it.
    fn comma_after_newlines(&mut self) {
        if self.peek().tok != Tok::Newline {
            return;
        }
        let start = self.i;
        self.skip_ws_nl();
        if self.peek().tok != Tok::Comma {
            self.i = start;
        }
    }

    fn skip_ws_nl(&mut self) {
        while matches!(self.peek().tok, Tok::Ws(_) | Tok::Newline) {
            self.i += 1;
        }
    }

    fn pos(&self, t: &Token) -> Pos {
        Pos {
            file: self.file.clone(),
            line: t.line,
            col: t.col,
        }
    }

    fn err_at(&self, line: usize, col: usize, message: impl Into<String>) -> HoconError {
        HoconError::Syntax {
            file: self.file.to_string(),
            line,
            col,
            message: message.into(),
        }
    }

    fn err(&self, t: &Token, message: impl Into<String>) -> HoconError {
        self.err_at(t.line, t.col, message)
    }

    fn parse_root(&mut self) -> Result<OMap<Node>, HoconError> {
        self.skip_ws_nl();
        let t = self.peek().clone();
        match t.tok {
            Tok::LBrace => {
                self.next();
                self.depth += 1;
                let obj = self.parse_object_body(Some(&t))?;
                self.depth -= 1;
                self.skip_ws_nl();
                let after = self.peek().clone();
                if after.tok != Tok::Eof {
                    return Err(self.err(
                        &after,
                        format!(
                            "unexpected {} after the closing '}}' of the root object",
                            after.tok.describe()
                        ),
                    ));
                }
                Ok(obj)
            }
            Tok::LBracket => Err(self.err(
                &t,
                "the root of a config document must be an object, not an array",
            )),
            _ => self.parse_object_body(None),
        }
    }

    /// Parse fields until `}` (when `open` is the opening brace) or end of input.
    fn parse_object_body(&mut self, open: Option<&Token>) -> Result<OMap<Node>, HoconError> {
        let mut obj = OMap::new();
        loop {
            self.skip_ws_nl();
            let t = self.peek().clone();
            match &t.tok {
                Tok::RBrace => {
                    if open.is_some() {
                        self.next();
                        return Ok(obj);
                    }
                    return Err(self.err(&t, "unbalanced '}' (no matching '{')"));
                }
                Tok::Eof => {
                    if let Some(o) = open {
                        return Err(self.err(
                            &t,
                            format!(
                                "end of input before the '}}' closing the object opened at line {}, column {}",
                                o.line, o.col
                            ),
                        ));
                    }
                    return Ok(obj);
                }
                Tok::Comma => {
                    return Err(self.err(
                        &t,
                        "unexpected ',' (fields may not start with a comma or have two commas in a row)",
                    ));
                }
                Tok::Unquoted(u) if u == "include" => {
                    self.next();
                    self.parse_include(&mut obj, &t)?;
                }
                _ => self.parse_field(&mut obj)?,
            }
            // field separator (a comma may also start a following line, as Typesafe allows)
            self.skip_ws();
            self.comma_after_newlines();
            let s = self.peek().clone();
            match &s.tok {
                Tok::Comma => {
                    self.next();
                    self.skip_ws_nl();
                    let n = self.peek().clone();
                    if n.tok == Tok::Comma {
                        return Err(self.err(&n, "two commas in a row"));
                    }
                }
                Tok::Newline | Tok::RBrace | Tok::Eof => {}
                other => {
                    return Err(self.err(
                        &s,
                        format!(
                            "expected ',', a newline or '}}' after a field, got {}",
                            other.describe()
                        ),
                    ));
                }
            }
        }
    }

    fn parse_field(&mut self, obj: &mut OMap<Node>) -> Result<(), HoconError> {
        let mut key_toks: Vec<Token> = Vec::new();
        loop {
            let t = self.peek().clone();
            match t.tok {
                Tok::Ws(_)
                | Tok::Unquoted(_)
                | Tok::Quoted(_)
                | Tok::Number(_)
                | Tok::True
                | Tok::False
                | Tok::Null => {
                    key_toks.push(t);
                    self.next();
                }
                Tok::Subst { .. } => {
                    return Err(self.err(&t, "substitutions are not allowed in keys"));
                }
                _ => break,
            }
        }
        while matches!(
            key_toks.last(),
            Some(Token {
                tok: Tok::Ws(_),
                ..
            })
        ) {
            key_toks.pop();
        }
        if key_toks.is_empty() {
            let t = self.peek().clone();
            return Err(self.err(&t, format!("expected a key, got {}", t.tok.describe())));
        }
        let key = path_from_tokens(&key_toks, &self.file)?;
        if self.nesting() + key.len() > MAX_NESTING {
            let at = key_toks.first().unwrap_or(&self.eof).clone();
            return Err(self.err(
                &at,
                format!(
                    "keys and objects nested too deeply (more than {MAX_NESTING} keys and brackets)"
                ),
            ));
        }
        self.skip_ws_nl();
        let sep = self.peek().clone();
        let plus = match sep.tok {
            Tok::Colon | Tok::Equals => {
                self.next();
                self.skip_ws_nl();
                false
            }
            Tok::PlusEquals => {
                self.next();
                self.skip_ws_nl();
                true
            }
            Tok::LBrace => false,
            ref other => {
                return Err(self.err(
                    &sep,
                    format!(
                        "key '{}' must be followed by ':', '=', '+=' or '{{', got {} (quote the key or value if it contains special characters)",
                        super::node::render_path(&key),
                        other.describe()
                    ),
                ));
            }
        };
        if plus && self.array_count > 0 {
            // Typesafe Config rejects this rather than give a wrong result (its issue 160)
            return Err(self.err(
                &sep,
                "'+=' does not work inside a list (a limitation shared with Typesafe Config: += expands to a ${} substitution, and a ${} path cannot refer to list elements); move the += outside the list and refer to it from inside with ${}",
            ));
        }
        let saved = self.path.len();
        self.path.extend(key.iter().cloned());
        // the value of `+=` goes into a list, so a `+=` inside it is inside a list
        self.array_count += usize::from(plus);
        let value = self.parse_value();
        self.array_count -= usize::from(plus);
        let full_path = self.path.clone();
        self.path.truncate(saved);
        let mut value = value?;
        if plus {
            // `a += v` means `a = ${?a} [v]`
            let subst = Node::Subst(Subst {
                id: self.ctx.new_id(),
                path: full_path,
                prefix_len: 0,
                optional: true,
                pos: self.pos(&sep),
            });
            value = Node::Concat(
                vec![Piece::Val(subst), Piece::Val(Node::Arr(vec![value]))],
                self.pos(&sep),
            );
        }
        merge_field(obj, &key, value);
        Ok(())
    }

    /// Parse a value, including value/array/object concatenation on one line.
    fn parse_value(&mut self) -> Result<Node, HoconError> {
        let first = self.peek().clone();
        if !is_value_start(&first.tok) {
            return Err(self.err(
                &first,
                format!("expected a value, got {}", first.tok.describe()),
            ));
        }
        let mut pieces: Vec<Piece> = Vec::new();
        // Whether an object, array or substitution came before: Typesafe ignores unquoted text
        // after an object or array (`fieldsToCopy: ["a"];`), as it ignores whitespace, so such
        // text is kept as whitespace is (it still joins a substitution that is a string).
        let mut after_structure = false;
        loop {
            match &self.peek().tok {
                Tok::Unquoted(text) if after_structure => {
                    pieces.push(Piece::Ws(text.clone()));
                    self.i += 1;
                }
                _ => {
                    let v = self.parse_single()?;
                    after_structure = matches!(v, Node::Obj(_) | Node::Arr(_) | Node::Subst(_));
                    pieces.push(Piece::Val(v));
                }
            }
            let mut ws = String::new();
            while let Tok::Ws(s) = &self.peek().tok {
                ws.push_str(s);
                self.i += 1;
            }
            if !is_value_start(&self.peek().tok) {
                break;
            }
            if !ws.is_empty() {
                pieces.push(Piece::Ws(ws));
            }
        }
        self.consolidate(pieces, &first)
    }

    fn consolidate(&mut self, mut pieces: Vec<Piece>, first: &Token) -> Result<Node, HoconError> {
        if pieces.len() == 1 {
            if let Some(Piece::Val(v)) = pieces.pop() {
                return Ok(v);
            }
            return Err(self.err(first, "internal error: empty value"));
        }
        let has_subst = pieces
            .iter()
            .any(|p| matches!(p, Piece::Val(Node::Subst(_))));
        if has_subst {
            return Ok(Node::Concat(pieces, self.pos(first)));
        }
        let vals: Vec<Node> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Val(v) => Some(v.clone()),
                Piece::Ws(_) => None,
            })
            .collect();
        let any_obj = vals.iter().any(|v| matches!(v, Node::Obj(_)));
        let any_arr = vals.iter().any(|v| matches!(v, Node::Arr(_)));
        if any_obj || any_arr {
            if vals.iter().all(|v| matches!(v, Node::Obj(_))) {
                let mut it = vals.into_iter();
                let base = it.next().unwrap_or(Node::Obj(OMap::new()));
                return Ok(it.fold(base, merge_nodes));
            }
            if vals.iter().all(|v| matches!(v, Node::Arr(_))) {
                let mut items = Vec::new();
                for v in vals {
                    if let Node::Arr(mut a) = v {
                        items.append(&mut a);
                    }
                }
                return Ok(Node::Arr(items));
            }
            return Err(HoconError::Type {
                file: self.file.to_string(),
                line: first.line,
                col: first.col,
                message:
                    "cannot concatenate an object or array with a value of another type (quote the text, or use separate fields)"
                        .into(),
            });
        }
        let mut s = String::new();
        for p in &pieces {
            match p {
                Piece::Ws(w) => s.push_str(w),
                Piece::Val(v) => match v {
                    Node::Str(t) => s.push_str(t),
                    Node::Num(n) => s.push_str(&n.text),
                    Node::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
                    Node::Null => s.push_str("null"),
                    _ => {}
                },
            }
        }
        Ok(Node::Str(s))
    }

    fn parse_single(&mut self) -> Result<Node, HoconError> {
        let t = self.next();
        match t.tok {
            Tok::Quoted(s) | Tok::Unquoted(s) => Ok(Node::Str(s)),
            Tok::Number(s) => Ok(match NumLit::parse(&s) {
                Some(n) => Node::Num(n),
                None => Node::Str(s),
            }),
            Tok::True => Ok(Node::Bool(true)),
            Tok::False => Ok(Node::Bool(false)),
            Tok::Null => Ok(Node::Null),
            Tok::Subst {
                optional,
                ref inner,
            } => {
                let path = path_from_tokens(inner, &self.file)?;
                Ok(Node::Subst(Subst {
                    id: self.ctx.new_id(),
                    path,
                    prefix_len: 0,
                    optional,
                    pos: self.pos(&t),
                }))
            }
            Tok::LBrace => {
                self.enter(&t)?;
                let obj = self.parse_object_body(Some(&t));
                self.depth -= 1;
                Ok(Node::Obj(obj?))
            }
            Tok::LBracket => {
                self.enter(&t)?;
                let arr = self.parse_array(&t);
                self.depth -= 1;
                arr
            }
            ref other => Err(self.err(&t, format!("expected a value, got {}", other.describe()))),
        }
    }

    fn enter(&mut self, t: &Token) -> Result<(), HoconError> {
        if self.nesting() >= MAX_NESTING {
            return Err(self.err(
                t,
                format!(
                    "objects/arrays nested too deeply (more than {MAX_NESTING} keys and brackets)"
                ),
            ));
        }
        self.depth += 1;
        Ok(())
    }

    fn parse_array(&mut self, open: &Token) -> Result<Node, HoconError> {
        self.array_count += 1;
        let r = self.parse_array_items(open);
        self.array_count -= 1;
        r
    }

    fn parse_array_items(&mut self, open: &Token) -> Result<Node, HoconError> {
        let mut items = Vec::new();
        loop {
            self.skip_ws_nl();
            let t = self.peek().clone();
            match t.tok {
                Tok::RBracket => {
                    self.next();
                    return Ok(Node::Arr(items));
                }
                Tok::Eof => {
                    return Err(self.err(
                        &t,
                        format!(
                            "end of input before the ']' closing the array opened at line {}, column {}",
                            open.line, open.col
                        ),
                    ));
                }
                Tok::Comma => {
                    return Err(self.err(
                        &t,
                        "unexpected ',' (array elements may not start with a comma or have two commas in a row)",
                    ));
                }
                _ => {}
            }
            items.push(self.parse_value()?);
            self.skip_ws();
            self.comma_after_newlines();
            let s = self.peek().clone();
            match s.tok {
                Tok::Comma => {
                    self.next();
                    self.skip_ws_nl();
                    let n = self.peek().clone();
                    if n.tok == Tok::Comma {
                        return Err(self.err(&n, "two commas in a row"));
                    }
                }
                Tok::Newline | Tok::RBracket => {}
                ref other => {
                    return Err(self.err(
                        &s,
                        format!(
                            "expected ',', a newline or ']' after an array element, got {}",
                            other.describe()
                        ),
                    ));
                }
            }
        }
    }

    // ----- includes -----

    fn include_arg(&mut self, pending: &mut Option<String>, at: &Token) -> Token {
        if let Some(p) = pending.take() {
            return Token {
                tok: Tok::Unquoted(p),
                line: at.line,
                col: at.col,
            };
        }
        self.skip_ws_nl();
        self.next()
    }

    fn expect_close(&mut self, pending: &mut Option<String>, at: &Token) -> Result<(), HoconError> {
        let t = self.include_arg(pending, at);
        if let Tok::Unquoted(u) = &t.tok {
            if let Some(rest) = u.strip_prefix(')') {
                if !rest.is_empty() {
                    *pending = Some(rest.to_string());
                }
                return Ok(());
            }
        }
        Err(self.err(
            &t,
            format!(
                "expected ')' in include statement, got {}",
                t.tok.describe()
            ),
        ))
    }

    fn parse_include(&mut self, obj: &mut OMap<Node>, inc: &Token) -> Result<(), HoconError> {
        let mut pending: Option<String> = None;
        let mut t = self.include_arg(&mut pending, inc);
        let mut required = false;
        if let Tok::Unquoted(u) = &t.tok {
            if let Some(rest) = u.strip_prefix("required(") {
                required = true;
                if !rest.is_empty() {
                    pending = Some(rest.to_string());
                }
                t = self.include_arg(&mut pending, inc);
            }
        }
        let (kind, name) = match &t.tok {
            Tok::Quoted(s) => (IncludeKind::Heuristic, s.clone()),
            Tok::Unquoted(u) => {
                let (kind, rest) = if let Some(r) = u.strip_prefix("file(") {
                    (IncludeKind::File, r)
                } else if let Some(r) = u.strip_prefix("url(") {
                    (IncludeKind::Url, r)
                } else if let Some(r) = u.strip_prefix("classpath(") {
                    (IncludeKind::Classpath, r)
                } else {
                    return Err(self.err(
                        &t,
                        format!(
                            "include must be followed by a quoted file name, file(\"...\"), required(...), url(...) or classpath(...), got {} (no space is allowed before '(')",
                            t.tok.describe()
                        ),
                    ));
                };
                if !rest.is_empty() {
                    pending = Some(rest.to_string());
                }
                let n = self.include_arg(&mut pending, inc);
                let Tok::Quoted(name) = n.tok.clone() else {
                    return Err(self.err(
                        &n,
                        format!(
                            "expected a quoted string inside file(), url() or classpath(), got {}",
                            n.tok.describe()
                        ),
                    ));
                };
                self.expect_close(&mut pending, inc)?;
                (kind, name)
            }
            other => {
                return Err(self.err(
                    &t,
                    format!(
                        "include must be followed by a quoted file name, file(\"...\"), required(...), url(...) or classpath(...), got {}",
                        other.describe()
                    ),
                ));
            }
        };
        if required {
            self.expect_close(&mut pending, inc)?;
        }
        if let Some(rest) = pending {
            return Err(self.err(inc, format!("unexpected '{rest}' after include statement")));
        }
        if let Some(included) = self.load_include(kind, &name, required, inc)? {
            if self.array_count > 0 && included.iter().any(|(_, v)| v.has_substitutions()) {
                // as in Typesafe Config, an error rather than a wrong result (its issue 160)
                return Err(self.include_err(
                    inc,
                    &name,
                    "an include inside a list value cannot use ${} substitutions in the included file (a limitation shared with Typesafe Config); move the include outside the list or remove the ${} from the included file",
                ));
            }
            let mut tmp = OMap::new();
            for (k, mut v) in included.into_entries() {
                relativize(&mut v, &self.path);
                tmp.set(k, v);
            }
            merge_maps(obj, tmp);
        }
        Ok(())
    }

    fn include_err(&self, at: &Token, target: &str, message: impl Into<String>) -> HoconError {
        HoconError::Include {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            target: target.to_string(),
            message: message.into(),
        }
    }

    fn load_include(
        &mut self,
        kind: IncludeKind,
        name: &str,
        required: bool,
        at: &Token,
    ) -> Result<Option<OMap<Node>>, HoconError> {
        // Typesafe's heuristic include: a name that is a URL (`include "file:/a/b.conf"`) is
        // included as url() is (ConfParserTest includeURLHeuristically)
        let kind = match kind {
            IncludeKind::Heuristic if url_scheme(name).is_some_and(|s| is_java_url_scheme(&s)) => {
                IncludeKind::Url
            }
            k => k,
        };
        let local = match kind {
            IncludeKind::Url => match file_url_path(name) {
                Ok(Some(path)) => path,
                // `file:` with no path names no file: nothing to include
                Ok(None) if !required => return Ok(None),
                Ok(None) => {
                    return Err(self.include_err(
                        at,
                        name,
                        "required include not found: the file: URL names no file",
                    ));
                }
                Err(e) => return Err(self.include_err(at, name, e.to_string())),
            },
            IncludeKind::Classpath => {
                return Err(self.include_err(at, name, "classpath() includes are not supported"));
            }
            IncludeKind::File | IncludeKind::Heuristic => name.to_string(),
        };
        let p = Path::new(&local);
        let full = if p.is_absolute() {
            p.to_path_buf()
        } else {
            match &self.base_dir {
                Some(d) => d.join(p),
                None => {
                    return Err(self.include_err(
                        at,
                        name,
                        "relative include in a document that has no base directory",
                    ));
                }
            }
        };
        let ext = full
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        let candidates: Vec<PathBuf> = match ext.as_deref() {
            // a URL names one file: no `.conf` / `.json` / `.properties` guessing (Typesafe's
            // includeURLBasename: a URL without an extension loads nothing)
            _ if kind == IncludeKind::Url => vec![full.clone()],
            Some("conf" | "json" | "properties") => vec![full.clone()],
            _ => ["properties", "json", "conf"]
                .iter()
                .map(|e| {
                    let mut s = full.clone().into_os_string();
                    s.push(".");
                    s.push(e);
                    PathBuf::from(s)
                })
                .collect(),
        };
        let mut acc: Option<OMap<Node>> = None;
        for cand in &candidates {
            let bytes = match std::fs::read(cand) {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(HoconError::Io {
                        path: cand.clone(),
                        source: e,
                    });
                }
            };
            let canon = canonical(cand);
            if self.ctx.include_stack.contains(&canon) {
                return Err(self.include_err(
                    at,
                    name,
                    format!("include cycle: {} is already being parsed", cand.display()),
                ));
            }
            if self.ctx.include_stack.len() >= MAX_INCLUDE_DEPTH {
                return Err(self.include_err(
                    at,
                    name,
                    format!("includes nested more than {MAX_INCLUDE_DEPTH} levels deep"),
                ));
            }
            self.ctx.includes_loaded += 1;
            if self.ctx.includes_loaded > MAX_INCLUDES {
                return Err(self.include_err(
                    at,
                    name,
                    format!("more than {MAX_INCLUDES} files included"),
                ));
            }
            self.ctx.include_stack.push(canon);
            let saved_base = self.ctx.nesting_base;
            self.ctx.nesting_base = self.nesting();
            let parsed = parse_bytes(bytes, cand, self.ctx);
            self.ctx.nesting_base = saved_base;
            self.ctx.include_stack.pop();
            let parsed = parsed?;
            acc = Some(match acc {
                None => parsed,
                Some(mut a) => {
                    merge_maps(&mut a, parsed);
                    a
                }
            });
        }
        if acc.is_none() && required {
            let shown = if candidates.len() == 1 {
                full.display().to_string()
            } else {
                format!("{}{{.conf,.json,.properties}}", full.display())
            };
            return Err(self.include_err(at, name, format!("required include not found: {shown}")));
        }
        Ok(acc)
    }
}

/// Schemes a Java `URL` knows that name something other than a local file; Typesafe Config
/// would fetch them (over the network, or from a jar), which this reader does not do.
const NON_FILE_SCHEMES: [&str; 6] = ["http", "https", "ftp", "jar", "jrt", "mailto"];

/// The scheme of a URL (`file` in `file:/a.conf`), lowercased; `None` without one.
fn url_scheme(url: &str) -> Option<String> {
    let end = url.find(':')?;
    let s = url.get(..end)?;
    let valid = s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| s.to_ascii_lowercase())
}

/// A scheme Java's `URL` accepts, so that Typesafe reads a name with it as a URL.
fn is_java_url_scheme(scheme: &str) -> bool {
    scheme == "file" || NON_FILE_SCHEMES.contains(&scheme)
}

/// Why an `include url(...)` names no local file (the include's error message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FileUrlError {
    /// Not a URL: Typesafe's "include url() specifies an invalid URL".
    #[error(
        "invalid URL: no scheme (write file:/path/to/file.conf, or use file(\"...\") for a path)"
    )]
    NoScheme,
    /// A URL Java would fetch over the network (`http`, `https`, `jar`, ...).
    #[error(
        "including a {0}: URL is not supported (only file: URLs, which name local files, are read)"
    )]
    NotAFile(String),
    /// A scheme Java's `URL` does not know.
    #[error(
        "invalid URL: unknown scheme {0}: (write file:/path/to/file.conf, or use file(\"...\") \
         for a path)"
    )]
    UnknownScheme(String),
}

/// The local path that `include url("file:…")` reads, as Typesafe Config resolves a `file:`
/// URL (it reads `file:` URLs as files): `file:/a/b.conf`, `file:///a/b.conf` and
/// `file://host/a/b.conf` are `/a/b.conf`; `file:b.conf` is the relative path `b.conf`
/// (resolved, like `file("b.conf")`, against the including file's folder). `%XX` escapes
/// are decoded (kept as written when they do not decode to UTF-8, as Java falls back to
/// the raw path); a query or fragment is dropped. `Ok(None)`: the URL has no path.
/// `Err`: not a `file:` URL, with the reason (a network scheme, or not a URL at all, which
/// Typesafe rejects as "include url() specifies an invalid URL").
pub(crate) fn file_url_path(url: &str) -> Result<Option<String>, FileUrlError> {
    let Some(scheme) = url_scheme(url) else {
        return Err(FileUrlError::NoScheme);
    };
    if NON_FILE_SCHEMES.contains(&scheme.as_str()) {
        return Err(FileUrlError::NotAFile(scheme));
    }
    if scheme != "file" {
        return Err(FileUrlError::UnknownScheme(scheme));
    }
    let rest = url.get(scheme.len() + 1..).unwrap_or_default();
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    // `file://authority/path`: the authority (a host name, usually empty) is not part of the path
    let path = match rest.strip_prefix("//") {
        Some(after) => after.find('/').map_or("", |i| &after[i..]),
        None => rest,
    };
    if path.is_empty() {
        return Ok(None);
    }
    Ok(Some(
        percent_decode(path).unwrap_or_else(|| path.to_string()),
    ))
}

/// `%XX` escapes decoded; `None` if an escape is malformed or the bytes are not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return None;
            }
            out.push(u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}
