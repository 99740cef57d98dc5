//! Unresolved document tree produced by the parser, and the parse-time merge rules.

use std::collections::HashMap;
use std::rc::Rc;

/// Source location.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pos {
    pub file: Rc<str>,
    pub line: usize,
    pub col: usize,
}

/// A number literal, keeping its original spelling for concatenation and keys.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NumLit {
    pub text: String,
    pub value: NumVal,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum NumVal {
    Int(i64),
    UInt(u64),
    Float(f64),
}

impl NumLit {
    /// Parse a lexer-validated number literal.
    pub(crate) fn parse(text: &str) -> Option<NumLit> {
        let value = if text.contains(['.', 'e', 'E']) {
            NumVal::Float(text.parse::<f64>().ok()?)
        } else if let Ok(i) = text.parse::<i64>() {
            NumVal::Int(i)
        } else {
            NumVal::UInt(text.parse::<u64>().ok()?)
        };
        Some(NumLit {
            text: text.to_string(),
            value,
        })
    }
}

/// Insertion-ordered string map.
#[derive(Debug, Clone, Default)]
pub(crate) struct OMap<V> {
    entries: Vec<(String, V)>,
    index: HashMap<String, usize>,
}

impl<V> OMap<V> {
    pub(crate) fn new() -> Self {
        OMap {
            entries: Vec::new(),
            index: HashMap::new(),
        }
    }

    pub(crate) fn get(&self, k: &str) -> Option<&V> {
        self.index
            .get(k)
            .and_then(|&i| self.entries.get(i))
            .map(|e| &e.1)
    }

    pub(crate) fn get_mut(&mut self, k: &str) -> Option<&mut V> {
        match self.index.get(k) {
            Some(&i) => self.entries.get_mut(i).map(|e| &mut e.1),
            None => None,
        }
    }

    /// Insert or replace, keeping the position of an existing key.
    pub(crate) fn set(&mut self, k: String, v: V) {
        if let Some(slot) = self.get_mut(&k) {
            *slot = v;
        } else {
            self.index.insert(k.clone(), self.entries.len());
            self.entries.push((k, v));
        }
    }

    pub(crate) fn remove(&mut self, k: &str) -> Option<V> {
        let i = self.index.remove(k)?;
        if i >= self.entries.len() {
            return None;
        }
        let (_, v) = self.entries.remove(i);
        for (j, (key, _)) in self.entries.iter().enumerate().skip(i) {
            self.index.insert(key.clone(), j);
        }
        Some(v)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    pub(crate) fn into_entries(self) -> Vec<(String, V)> {
        self.entries
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Subst {
    /// Unique identity of this syntactic substitution (cycle detection).
    pub id: u64,
    /// Full path, including any include prefix.
    pub path: Vec<String>,
    /// How many leading elements of `path` come from include relativization.
    pub prefix_len: usize,
    pub optional: bool,
    pub pos: Pos,
}

impl Subst {
    pub(crate) fn render(&self) -> String {
        format!(
            "${{{}{}}}",
            if self.optional { "?" } else { "" },
            render_path(&self.path)
        )
    }
}

/// A piece of a value concatenation.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    /// Unquoted whitespace between two values.
    Ws(String),
    Val(Node),
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Num(NumLit),
    Str(String),
    Obj(OMap<Node>),
    Arr(Vec<Node>),
    Subst(Subst),
    /// Value concatenation containing at least one substitution.
    Concat(Vec<Piece>, Pos),
    /// Delayed merge stack, lowest priority first. Created when a value is
    /// merged with something whose type is only known after resolution.
    Merge(Vec<Node>),
}

impl Node {
    /// Whether resolving this value needs substitutions (it is not final as parsed).
    pub(crate) fn has_substitutions(&self) -> bool {
        match self {
            Node::Subst(_) | Node::Concat(..) | Node::Merge(_) => true,
            Node::Obj(m) => m.iter().any(|(_, v)| v.has_substitutions()),
            Node::Arr(items) => items.iter().any(Node::has_substitutions),
            Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(_) => false,
        }
    }

    /// Substitutions and concatenations: values whose type is unknown until resolved.
    pub(crate) fn is_unmergeable(&self) -> bool {
        matches!(self, Node::Subst(_) | Node::Concat(..))
    }
}

/// Render a path for messages / env lookup: elements joined with '.', quoting
/// elements that need it.
pub(crate) fn render_path(path: &[String]) -> String {
    path.iter()
        .map(|p| {
            if !p.is_empty()
                && p.chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
            {
                p.clone()
            } else {
                format!("{p:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(".")
}

/// Merge `new` on top of `old` (later definition wins, objects merge).
pub(crate) fn merge_nodes(old: Node, new: Node) -> Node {
    match new {
        Node::Obj(new_map) => match old {
            Node::Obj(mut old_map) => {
                merge_maps(&mut old_map, new_map);
                Node::Obj(old_map)
            }
            Node::Merge(mut stack) => {
                match stack.pop() {
                    Some(Node::Obj(mut top)) => {
                        merge_maps(&mut top, new_map);
                        stack.push(Node::Obj(top));
                    }
                    Some(other) => {
                        stack.push(other);
                        stack.push(Node::Obj(new_map));
                    }
                    None => stack.push(Node::Obj(new_map)),
                }
                Node::Merge(stack)
            }
            old @ (Node::Subst(_) | Node::Concat(..)) => Node::Merge(vec![old, Node::Obj(new_map)]),
            // an object replaces a non-object
            _ => Node::Obj(new_map),
        },
        new @ (Node::Subst(_) | Node::Concat(..)) => match old {
            Node::Merge(mut stack) => {
                stack.push(new);
                Node::Merge(stack)
            }
            old => Node::Merge(vec![old, new]),
        },
        Node::Merge(items) => items.into_iter().fold(old, merge_nodes),
        // resolved non-object values replace whatever was there
        other => other,
    }
}

pub(crate) fn merge_maps(old: &mut OMap<Node>, new: OMap<Node>) {
    for (k, v) in new.into_entries() {
        match old.get_mut(&k) {
            Some(slot) => {
                let prev = std::mem::replace(slot, Node::Null);
                *slot = merge_nodes(prev, v);
            }
            None => old.set(k, v),
        }
    }
}

/// Wrap `value` in nested objects for the path `path` (which must be non-empty).
pub(crate) fn wrap_path(path: &[String], value: Node) -> Option<(String, Node)> {
    let (first, rest) = path.split_first()?;
    let mut v = value;
    for k in rest.iter().rev() {
        let mut m = OMap::new();
        m.set(k.clone(), v);
        v = Node::Obj(m);
    }
    Some((first.clone(), v))
}

/// Merge a field (path expression key) into an object.
pub(crate) fn merge_field(obj: &mut OMap<Node>, path: &[String], value: Node) {
    if let Some((k, v)) = wrap_path(path, value) {
        let mut m = OMap::new();
        m.set(k, v);
        merge_maps(obj, m);
    }
}

/// Prefix every substitution path in `node` with `prefix` (used for includes).
pub(crate) fn relativize(node: &mut Node, prefix: &[String]) {
    if prefix.is_empty() {
        return;
    }
    match node {
        Node::Subst(s) => {
            let mut p = prefix.to_vec();
            p.append(&mut s.path);
            s.path = p;
            s.prefix_len += prefix.len();
        }
        Node::Obj(m) => {
            for (_, v) in m.entries.iter_mut() {
                relativize(v, prefix);
            }
        }
        Node::Arr(items) | Node::Merge(items) => {
            for v in items {
                relativize(v, prefix);
            }
        }
        Node::Concat(pieces, _) => {
            for p in pieces {
                if let Piece::Val(v) = p {
                    relativize(v, prefix);
                }
            }
        }
        Node::Null | Node::Bool(_) | Node::Num(_) | Node::Str(_) => {}
    }
}
