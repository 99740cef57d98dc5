//! Substitution resolution.
//!
//! The model follows Typesafe Config:
//! * substitutions look up absolute paths in the whole (merged) document and are
//!   resolved lazily, so they "look forward" to the final value;
//! * a delayed merge stack (`a = 1`, then `a = ${x}`) resolves each layer with
//!   the field itself replaced by the layers below it, which gives
//!   self-referential fields (`path = ${path} [x]`, `+=`) their "look back"
//!   meaning and lets an undefined `${?x}` leave the earlier value alone;
//! * every syntactic substitution acts as a cycle marker: meeting it again while
//!   it is being resolved is a cycle, which is an error for `${x}` and
//!   "undefined" for `${?x}`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use super::node::{render_path, Node, NumLit, NumVal, OMap, Piece, Pos, Subst};
use super::HoconError;

/// Maximum depth of nested resolution steps (substitution chains).
const MAX_DEPTH: usize = 400;
/// Budget for values copied by substitutions, in nodes (a string counts one
/// node per 16 bytes); guards against "billion laughs" style exponential
/// expansion. Real configs copy a few thousand nodes at most.
const MAX_WORK: usize = 1_000_000;

fn rval_size(v: &RVal) -> usize {
    match v {
        RVal::Str(s) => 1 + s.len() / 16,
        RVal::Arr(a) => 1 + a.iter().map(rval_size).sum::<usize>(),
        RVal::Obj(m) => 1 + m.iter().map(|(k, v)| k.len() + rval_size(v)).sum::<usize>(),
        _ => 1,
    }
}

/// A fully resolved value.
#[derive(Debug, Clone)]
pub(crate) enum RVal {
    Null,
    Bool(bool),
    Num(NumLit),
    Str(String),
    Arr(Vec<RVal>),
    Obj(OMap<RVal>),
}

enum Fail {
    /// A substitution was met again while being resolved; carries the chain.
    Cycle(Vec<String>),
    TooDeep,
    TooBig,
    Hard(HoconError),
}

impl From<HoconError> for Fail {
    fn from(e: HoconError) -> Self {
        Fail::Hard(e)
    }
}

/// Address of a node in a document tree: object keys, and layers of merge stacks.
#[derive(Debug, Clone)]
enum Seg {
    Key(String),
    Item(usize),
}

struct Ctx {
    id: usize,
    root: Rc<Node>,
}

enum Step<'a> {
    Missing,
    Child(&'a Node, Option<usize>),
    Virtual(Node),
    NeedsResolve,
}

/// A value's memo key: the context it is read in (see `Resolver::memo_key`) and its path.
type MemoKey = (usize, Vec<String>);

struct Resolver<'e> {
    env: &'e HashMap<String, String>,
    memo: HashMap<MemoKey, Option<RVal>>,
    /// Each look-back context: the context it was made from, and the key path of the field
    /// it replaced. A path that neither contains nor lies inside that field names the same
    /// node as in the parent context, so it shares the parent's memo (see `memo_key`).
    ctx_parents: HashMap<usize, (usize, Vec<String>)>,
    /// Substitution layers of merge stacks resolved by `merge_child`, by the stack's memo key
    /// and the layer's position: each is resolved once however many of its fields are read.
    layer_memo: HashMap<(MemoKey, usize), Option<RVal>>,
    active: Vec<(u64, String)>,
    next_ctx: usize,
    depth: usize,
    work: usize,
}

/// Resolve every substitution in `root`.
pub(crate) fn resolve_root(
    root: OMap<Node>,
    env: &HashMap<String, String>,
) -> Result<OMap<RVal>, HoconError> {
    let mut r = Resolver {
        env,
        memo: HashMap::new(),
        ctx_parents: HashMap::new(),
        layer_memo: HashMap::new(),
        active: Vec::new(),
        next_ctx: 1,
        depth: 0,
        work: 0,
    };
    let ctx = Ctx {
        id: 0,
        root: Rc::new(Node::Obj(root)),
    };
    let root = ctx.root.clone();
    match r.resolve_value(&root, &[], Some(&[]), &ctx) {
        Ok(Some(RVal::Obj(m))) => Ok(m),
        Ok(_) => Ok(OMap::new()),
        Err(Fail::Hard(e)) => Err(e),
        Err(Fail::Cycle(chain)) => Err(HoconError::Cycle {
            path: chain.first().cloned().unwrap_or_default(),
            chain: chain.join(" -> "),
            file: String::new(),
            line: 0,
            col: 0,
        }),
        Err(Fail::TooDeep) => Err(HoconError::Type {
            file: String::new(),
            line: 0,
            col: 0,
            message: format!("substitutions nested more than {MAX_DEPTH} levels deep"),
        }),
        Err(Fail::TooBig) => Err(too_big(None)),
    }
}

fn too_big(pos: Option<&Pos>) -> HoconError {
    HoconError::Type {
        file: pos.map(|p| p.file.to_string()).unwrap_or_default(),
        line: pos.map_or(0, |p| p.line),
        col: pos.map_or(0, |p| p.col),
        message: format!("substitutions expand the config to more than {MAX_WORK} copied values"),
    }
}

/// Positions of `keys` in the order Typesafe Config resolves an object's fields: the
/// iteration order of the `java.util.HashMap` holding them (bucket of the key's
/// `String.hashCode()` in a table of the size that many entries grow it to, ties in
/// insertion order). The order decides nothing for most configs, since substitutions
/// resolve on demand; it matters where a field is first resolved while another field looks
/// back past itself (Typesafe memoizes that first result, see `Resolver::memo_key`), as in
/// ConfigSubstitutionTest's avoidDelayedMergeObjectResolveProblem5, which resolves as
/// Typesafe does only in this order. Tables Typesafe builds by merging can size
/// differently; this is the table a parsed object has.
fn java_hash_order<'k>(keys: impl Iterator<Item = &'k str>) -> Vec<usize> {
    let hashes: Vec<u32> = keys
        .map(|k| {
            k.encode_utf16()
                .fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)))
        })
        .collect();
    // HashMap: 16 buckets, doubled whenever the entries pass three quarters of them
    let mut buckets: usize = 16;
    while hashes.len() > buckets / 4 * 3 && buckets < 1 << 30 {
        buckets *= 2;
    }
    let mask = u32::try_from(buckets - 1).unwrap_or(u32::MAX);
    let mut order: Vec<usize> = (0..hashes.len()).collect();
    order.sort_by_key(|&i| hashes.get(i).map_or(0, |h| (h ^ (h >> 16)) & mask));
    order
}

fn pure_key(addr: &[Seg]) -> bool {
    addr.iter().all(|s| matches!(s, Seg::Key(_)))
}

fn with_seg(addr: Option<&[Seg]>, seg: Seg) -> Option<Vec<Seg>> {
    addr.map(|a| {
        let mut v = a.to_vec();
        v.push(seg);
        v
    })
}

fn step<'a>(node: &'a Node, key: &str) -> Step<'a> {
    match node {
        Node::Obj(m) => match m.get(key) {
            Some(c) => Step::Child(c, None),
            None => Step::Missing,
        },
        Node::Merge(stack) => {
            let mut found: Vec<(usize, &'a Node)> = Vec::new();
            for (i, item) in stack.iter().enumerate().rev() {
                match item {
                    Node::Obj(m) => {
                        if let Some(c) = m.get(key) {
                            found.push((i, c));
                            if !matches!(
                                c,
                                Node::Obj(_) | Node::Subst(_) | Node::Concat(..) | Node::Merge(_)
                            ) {
                                break;
                            }
                        }
                    }
                    Node::Subst(_) | Node::Concat(..) | Node::Merge(_) => {
                        return Step::NeedsResolve;
                    }
                    // a non-object hides everything below it
                    _ => break,
                }
            }
            match found.as_slice() {
                [] => Step::Missing,
                [(i, c)] => Step::Child(c, Some(*i)),
                _ => {
                    let mut it = found.iter().rev().map(|(_, c)| (*c).clone());
                    let base = it.next().unwrap_or(Node::Null);
                    Step::Virtual(it.fold(base, super::node::merge_nodes))
                }
            }
        }
        Node::Subst(_) | Node::Concat(..) => Step::NeedsResolve,
        _ => Step::Missing,
    }
}

/// Field `key` of a resolved merge-stack layer: `Some(None)` when the layer leaves it to the
/// layers below (undefined, or an object without it), `None` when the layer is not an object
/// and so hides everything below it.
fn layer_field(layer: Option<&RVal>, key: &str) -> Option<Option<RVal>> {
    match layer {
        None => Some(None),
        Some(RVal::Obj(m)) => Some(m.get(key).cloned()),
        Some(_) => None,
    }
}

fn descend(v: Option<RVal>, rest: &[String]) -> Option<RVal> {
    let mut cur = v?;
    for k in rest {
        match cur {
            RVal::Obj(mut m) => cur = m.remove(k)?,
            _ => return None,
        }
    }
    Some(cur)
}

/// Replace (or remove, if `rep` is None) the node at `addr`. Returns false if
/// the address does not exist in `node`.
fn replace_at(node: &mut Node, addr: &[Seg], rep: Option<Node>) -> bool {
    match addr {
        [Seg::Key(k)] => match node {
            Node::Obj(m) => {
                match rep {
                    Some(r) => m.set(k.clone(), r),
                    None => {
                        m.remove(k);
                    }
                }
                true
            }
            _ => false,
        },
        [Seg::Key(k), rest @ ..] => match node {
            Node::Obj(m) => match m.get_mut(k) {
                Some(c) => replace_at(c, rest, rep),
                None => false,
            },
            _ => false,
        },
        [Seg::Item(i), rest @ ..] if !rest.is_empty() => match node {
            Node::Merge(stack) => match stack.get_mut(*i) {
                Some(c) => replace_at(c, rest, rep),
                None => false,
            },
            _ => false,
        },
        _ => false,
    }
}

/// `upper` merged over `lower`: objects merge recursively (keeping the lower
/// value's key order), anything else in `upper` wins.
fn with_fallback(upper: RVal, lower: RVal) -> RVal {
    match (upper, lower) {
        (RVal::Obj(up), RVal::Obj(mut low)) => {
            for (k, v) in up.into_entries() {
                match low.get_mut(&k) {
                    Some(slot) => {
                        let prev = std::mem::replace(slot, RVal::Null);
                        *slot = with_fallback(v, prev);
                    }
                    None => low.set(k, v),
                }
            }
            RVal::Obj(low)
        }
        (up, _) => up,
    }
}

fn combine(lower: Option<RVal>, upper: Option<RVal>) -> Option<RVal> {
    match (lower, upper) {
        (l, None) => l,
        (None, u) => u,
        (Some(l), Some(u)) => Some(with_fallback(u, l)),
    }
}

fn type_name(v: &RVal) -> &'static str {
    match v {
        RVal::Null => "null",
        RVal::Bool(_) => "boolean",
        RVal::Num(_) => "number",
        RVal::Str(_) => "string",
        RVal::Arr(_) => "array",
        RVal::Obj(_) => "object",
    }
}

enum RPart {
    Ws(String),
    Val(RVal),
}

impl Resolver<'_> {
    /// Account for a value copied out of the memo.
    fn charge(&mut self, v: Option<&RVal>) -> Result<(), Fail> {
        self.work = self.work.saturating_add(v.map_or(1, rval_size));
        if self.work > MAX_WORK {
            return Err(Fail::TooBig);
        }
        Ok(())
    }

    /// A new look-back context made from `parent` by replacing the node at `addr`.
    fn fresh_ctx(&mut self, parent: usize, addr: &[Seg]) -> usize {
        self.next_ctx += 1;
        let replaced: Vec<String> = addr
            .iter()
            .map_while(|s| match s {
                Seg::Key(k) => Some(k.clone()),
                Seg::Item(_) => None,
            })
            .collect();
        self.ctx_parents.insert(self.next_ctx, (parent, replaced));
        self.next_ctx
    }

    /// Memo key of the value at `path` in context `ctx`. Like Typesafe Config, which memoizes
    /// a value's resolution by the value itself whatever source it was resolved against, a
    /// node that a look-back context shares with the context it came from (every path not
    /// overlapping the replaced field) is memoized once: the first resolution wins. So
    /// `defaults { a = ${item1.b} }` first resolved while `item1 = ${defaults}` looks back
    /// keeps the looked-back value (ConfigSubstitutionTest's
    /// avoidDelayedMergeObjectResolveProblem3 and 5).
    fn memo_key(&self, ctx: usize, path: &[String]) -> MemoKey {
        let mut c = ctx;
        while let Some((parent, replaced)) = self.ctx_parents.get(&c) {
            if path.starts_with(replaced) || replaced.starts_with(path) {
                break;
            }
            c = *parent;
        }
        (c, path.to_vec())
    }

    fn resolve_value(
        &mut self,
        node: &Node,
        path: &[String],
        addr: Option<&[Seg]>,
        ctx: &Ctx,
    ) -> Result<Option<RVal>, Fail> {
        let memo_key = match addr {
            Some(a) if pure_key(a) && !path.is_empty() => Some(self.memo_key(ctx.id, path)),
            _ => None,
        };
        if let Some(k) = &memo_key {
            if let Some(v) = self.memo.get(k) {
                let v = v.clone();
                self.charge(v.as_ref())?;
                return Ok(v);
            }
        }
        if self.depth >= MAX_DEPTH {
            return Err(Fail::TooDeep);
        }
        self.depth += 1;
        let r = self.resolve_inner(node, path, addr, ctx);
        self.depth -= 1;
        let v = r?;
        if let Some(k) = memo_key {
            self.memo.insert(k, v.clone());
        }
        Ok(v)
    }

    fn resolve_inner(
        &mut self,
        node: &Node,
        path: &[String],
        addr: Option<&[Seg]>,
        ctx: &Ctx,
    ) -> Result<Option<RVal>, Fail> {
        Ok(match node {
            Node::Null => Some(RVal::Null),
            Node::Bool(b) => Some(RVal::Bool(*b)),
            Node::Num(n) => Some(RVal::Num(n.clone())),
            Node::Str(s) => Some(RVal::Str(s.clone())),
            Node::Obj(m) => {
                // Resolved in Typesafe's order, kept in definition order.
                let children: Vec<(&String, &Node)> = m.iter().collect();
                let mut values: Vec<Option<RVal>> = vec![None; children.len()];
                for i in java_hash_order(children.iter().map(|(k, _)| k.as_str())) {
                    let Some(((k, child), slot)) = children.get(i).zip(values.get_mut(i)) else {
                        continue;
                    };
                    let mut p = path.to_vec();
                    p.push((*k).clone());
                    let a = with_seg(addr, Seg::Key((*k).clone()));
                    *slot = self.resolve_value(child, &p, a.as_deref(), ctx)?;
                }
                let mut out = OMap::new();
                for ((k, _), v) in children.into_iter().zip(values) {
                    if let Some(v) = v {
                        out.set(k.clone(), v);
                    }
                }
                Some(RVal::Obj(out))
            }
            Node::Arr(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    if let Some(v) = self.resolve_value(item, path, None, ctx)? {
                        out.push(v);
                    }
                }
                Some(RVal::Arr(out))
            }
            Node::Subst(_) | Node::Concat(..) => {
                // A field inside a layer of a merge stack (`e = ${base}` then
                // `e { y = ${e.y}0 }`) can have earlier values in the layers
                // below: resolve it with itself removed, so a self-reference
                // looks back to those layers.
                let mut lookback = None;
                if let Some(a) = addr.filter(|a| a.iter().any(|s| matches!(s, Seg::Item(_)))) {
                    let mut new_root = (*ctx.root).clone();
                    if replace_at(&mut new_root, a, None) {
                        lookback = Some(Ctx {
                            id: self.fresh_ctx(ctx.id, a),
                            root: Rc::new(new_root),
                        });
                    }
                }
                let c = lookback.as_ref().unwrap_or(ctx);
                match node {
                    Node::Subst(s) => self.resolve_subst(s, c)?,
                    Node::Concat(pieces, pos) => self.resolve_concat(pieces, pos, path, c)?,
                    _ => None,
                }
            }
            Node::Merge(stack) => self.resolve_merge(stack, path, addr, ctx)?,
        })
    }

    fn resolve_merge(
        &mut self,
        stack: &[Node],
        path: &[String],
        addr: Option<&[Seg]>,
        ctx: &Ctx,
    ) -> Result<Option<RVal>, Fail> {
        let mut acc: Option<RVal> = None;
        for (k, item) in stack.iter().enumerate() {
            let r = if item.is_unmergeable() {
                self.resolve_unmergeable_layer(stack, k, path, addr, ctx, Some(&acc))?
            } else {
                let a = with_seg(addr, Seg::Item(k));
                self.resolve_value(item, path, a.as_deref(), ctx)?
            };
            acc = combine(acc, r);
        }
        Ok(acc)
    }

    /// Layer `k` of a merge stack (a substitution or concatenation), resolved with the field
    /// replaced by the layers below it, so a self-reference looks back to them. `below`: the
    /// resolved value of those layers, when known.
    fn resolve_unmergeable_layer(
        &mut self,
        stack: &[Node],
        k: usize,
        path: &[String],
        addr: Option<&[Seg]>,
        ctx: &Ctx,
        below: Option<&Option<RVal>>,
    ) -> Result<Option<RVal>, Fail> {
        let Some(item) = stack.get(k) else {
            return Ok(None);
        };
        if let Some(a) = addr.filter(|a| !a.is_empty()) {
            let remainder = match k {
                0 => None,
                1 => stack.first().cloned(),
                _ => Some(Node::Merge(stack.iter().take(k).cloned().collect())),
            };
            let mut new_root = (*ctx.root).clone();
            if replace_at(&mut new_root, a, remainder) {
                let c2 = Ctx {
                    id: self.fresh_ctx(ctx.id, a),
                    root: Rc::new(new_root),
                };
                if let Some(below) = below.filter(|_| pure_key(a)) {
                    let key = self.memo_key(c2.id, path);
                    self.memo.insert(key, below.clone());
                }
                return self.resolve_value(item, path, None, &c2);
            }
        }
        self.resolve_value(item, path, None, ctx)
    }

    /// Field `key` of the merge stack at `path`, resolving only what it needs: the stack's
    /// layers from the top down, each object layer's `key` alone (not its other fields),
    /// until a layer sets `key` to a non-object. Typesafe resolves a lookup through a merge
    /// stack the same way (restricted to the child), so `item2.d = ${item1.a}` does not
    /// touch `item1.c = ${item2.d}` (ConfigSubstitutionTest's resolveDelayedMergeObjectEmbrace).
    fn merge_child(
        &mut self,
        stack: &[Node],
        path: &[String],
        addr: Option<&[Seg]>,
        ctx: &Ctx,
        key: &str,
    ) -> Result<Option<RVal>, Fail> {
        let stack_key = addr
            .filter(|a| pure_key(a) && !path.is_empty())
            .map(|_| self.memo_key(ctx.id, path));
        if let Some(whole) = stack_key.as_ref().and_then(|k| self.memo.get(k)) {
            // the whole field is resolved already
            let v = match whole {
                Some(RVal::Obj(m)) => m.get(key).cloned(),
                _ => None,
            };
            self.charge(v.as_ref())?;
            return Ok(v);
        }
        let mut child_path = path.to_vec();
        child_path.push(key.to_string());
        // the values of `key`, top layer first
        let mut found: Vec<RVal> = Vec::new();
        for (k, item) in stack.iter().enumerate().rev() {
            let v = match item {
                Node::Obj(m) => match m.get(key) {
                    Some(child) => {
                        let a = with_seg(addr, Seg::Item(k))
                            .and_then(|a| with_seg(Some(&a), Seg::Key(key.to_string())));
                        self.resolve_value(child, &child_path, a.as_deref(), ctx)?
                    }
                    None => continue,
                },
                Node::Subst(_) | Node::Concat(..) | Node::Merge(_) => {
                    let from_layer = if item.is_unmergeable() {
                        match &stack_key {
                            Some(sk) => {
                                let lk = (sk.clone(), k);
                                if !self.layer_memo.contains_key(&lk) {
                                    let v = self.resolve_unmergeable_layer(
                                        stack, k, path, addr, ctx, None,
                                    )?;
                                    self.layer_memo.insert(lk.clone(), v);
                                }
                                layer_field(self.layer_memo.get(&lk).and_then(Option::as_ref), key)
                            }
                            None => {
                                let v = self
                                    .resolve_unmergeable_layer(stack, k, path, addr, ctx, None)?;
                                layer_field(v.as_ref(), key)
                            }
                        }
                    } else {
                        let a = with_seg(addr, Seg::Item(k));
                        let v = self.resolve_value(item, path, a.as_deref(), ctx)?;
                        layer_field(v.as_ref(), key)
                    };
                    match from_layer {
                        Some(v) => {
                            self.charge(v.as_ref())?;
                            v
                        }
                        // a non-object hides everything below it
                        None => break,
                    }
                }
                _ => break,
            };
            let Some(v) = v else { continue };
            let is_obj = matches!(v, RVal::Obj(_));
            found.push(v);
            if !is_obj {
                break;
            }
        }
        let mut acc: Option<RVal> = None;
        for v in found.into_iter().rev() {
            acc = combine(acc, Some(v));
        }
        Ok(acc)
    }

    fn resolve_subst(&mut self, s: &Subst, ctx: &Ctx) -> Result<Option<RVal>, Fail> {
        if let Some(i) = self.active.iter().position(|(id, _)| *id == s.id) {
            let mut chain: Vec<String> =
                self.active.iter().skip(i).map(|(_, r)| r.clone()).collect();
            chain.push(s.render());
            return Err(Fail::Cycle(chain));
        }
        self.active.push((s.id, s.render()));
        let res = self.subst_lookup(s, ctx);
        self.active.pop();
        let shown = render_path(s.path.get(s.prefix_len..).unwrap_or(&s.path));
        match res {
            Ok(Some(v)) => Ok(Some(v)),
            Ok(None) if s.optional => Ok(None),
            Ok(None) => Err(Fail::Hard(HoconError::UnresolvedSubstitution {
                path: shown,
                file: s.pos.file.to_string(),
                line: s.pos.line,
                col: s.pos.col,
            })),
            Err(Fail::Cycle(_)) if s.optional => Ok(None),
            Err(Fail::Cycle(chain)) => Err(Fail::Hard(HoconError::Cycle {
                path: shown,
                chain: chain.join(" -> "),
                file: s.pos.file.to_string(),
                line: s.pos.line,
                col: s.pos.col,
            })),
            Err(Fail::TooBig) => Err(Fail::Hard(too_big(Some(&s.pos)))),
            Err(Fail::TooDeep) => Err(Fail::Hard(HoconError::Type {
                file: s.pos.file.to_string(),
                line: s.pos.line,
                col: s.pos.col,
                message: format!(
                    "substitution {} nests more than {MAX_DEPTH} levels of substitutions",
                    s.render()
                ),
            })),
            Err(e) => Err(e),
        }
    }

    fn subst_lookup(&mut self, s: &Subst, ctx: &Ctx) -> Result<Option<RVal>, Fail> {
        if let Some(v) = self.lookup(&s.path, ctx)? {
            return Ok(Some(v));
        }
        let unprefixed = s.path.get(s.prefix_len..).unwrap_or(&s.path);
        if s.prefix_len > 0 && !unprefixed.is_empty() {
            if let Some(v) = self.lookup(unprefixed, ctx)? {
                return Ok(Some(v));
            }
        }
        let name = unprefixed.join(".");
        match self.env.get(&name) {
            Some(v) if !v.is_empty() => Ok(Some(RVal::Str(v.clone()))),
            _ => Ok(None),
        }
    }

    /// Value at absolute `path` in the document of `ctx` (None if not present).
    fn lookup(&mut self, path: &[String], ctx: &Ctx) -> Result<Option<RVal>, Fail> {
        if path.is_empty() {
            return Ok(None);
        }
        let key = self.memo_key(ctx.id, path);
        if let Some(v) = self.memo.get(&key) {
            let v = v.clone();
            self.charge(v.as_ref())?;
            return Ok(v);
        }
        let root = ctx.root.clone();
        let mut cur: Cow<'_, Node> = Cow::Borrowed(&root);
        let mut addr: Option<Vec<Seg>> = Some(Vec::new());
        for (i, k) in path.iter().enumerate() {
            let next: Option<Cow<'_, Node>> = match cur {
                Cow::Borrowed(n) => match step(n, k) {
                    Step::Child(c, item) => {
                        Self::push_addr(&mut addr, item, k);
                        Some(Cow::Borrowed(c))
                    }
                    Step::Virtual(v) => {
                        addr = None;
                        Some(Cow::Owned(v))
                    }
                    Step::Missing => None,
                    Step::NeedsResolve => {
                        let prefix = path.get(..i).unwrap_or(&[]);
                        let v = match n {
                            Node::Merge(stack) => {
                                let v = self.merge_child(stack, prefix, addr.as_deref(), ctx, k)?;
                                descend(v, path.get(i + 1..).unwrap_or(&[]))
                            }
                            _ => {
                                let v = self.resolve_value(n, prefix, addr.as_deref(), ctx)?;
                                descend(v, path.get(i..).unwrap_or(&[]))
                            }
                        };
                        self.memo.insert(key, v.clone());
                        return Ok(v);
                    }
                },
                Cow::Owned(n) => match step(&n, k) {
                    Step::Child(c, item) => {
                        Self::push_addr(&mut addr, item, k);
                        Some(Cow::Owned(c.clone()))
                    }
                    Step::Virtual(v) => {
                        addr = None;
                        Some(Cow::Owned(v))
                    }
                    Step::Missing => None,
                    Step::NeedsResolve => {
                        let prefix = path.get(..i).unwrap_or(&[]);
                        let v = self.resolve_value(&n, prefix, None, ctx)?;
                        let v = descend(v, path.get(i..).unwrap_or(&[]));
                        self.memo.insert(key, v.clone());
                        return Ok(v);
                    }
                },
            };
            match next {
                Some(n) => cur = n,
                None => {
                    self.memo.insert(key, None);
                    return Ok(None);
                }
            }
        }
        let v = self.resolve_value(&cur, path, addr.as_deref(), ctx)?;
        self.memo.insert(key, v.clone());
        Ok(v)
    }

    fn push_addr(addr: &mut Option<Vec<Seg>>, item: Option<usize>, k: &str) {
        if let Some(a) = addr.as_mut() {
            if let Some(i) = item {
                a.push(Seg::Item(i));
            }
            a.push(Seg::Key(k.to_string()));
        }
    }

    fn resolve_concat(
        &mut self,
        pieces: &[Piece],
        pos: &Pos,
        path: &[String],
        ctx: &Ctx,
    ) -> Result<Option<RVal>, Fail> {
        let mut parts: Vec<RPart> = Vec::new();
        let mut any_defined = false;
        for p in pieces {
            match p {
                Piece::Ws(s) => {
                    // Typesafe: `${?x} ${?y}` with both unset is " " (the whitespace is a
                    // defined piece); only pieces that are all undefined make no field.
                    any_defined = true;
                    parts.push(RPart::Ws(s.clone()));
                }
                Piece::Val(n) => {
                    if let Some(v) = self.resolve_value(n, path, None, ctx)? {
                        any_defined = true;
                        parts.push(RPart::Val(v));
                    }
                }
            }
        }
        if !any_defined {
            // e.g. `a = ${?x}${?y}` with both undefined: the field is not created
            return Ok(None);
        }
        if let [RPart::Val(..)] = parts.as_slice() {
            if let Some(RPart::Val(v)) = parts.pop() {
                return Ok(Some(v));
            }
        }
        let structured = parts
            .iter()
            .any(|p| matches!(p, RPart::Val(RVal::Obj(_) | RVal::Arr(_))));
        let type_err = |a: &RVal, b: &RVal| {
            Fail::Hard(HoconError::Type {
                file: pos.file.to_string(),
                line: pos.line,
                col: pos.col,
                message: format!(
                    "cannot concatenate {} with {} (only strings/numbers/booleans, only arrays, or only objects can be concatenated)",
                    type_name(a),
                    type_name(b)
                ),
            })
        };
        if structured {
            // unquoted whitespace between objects/arrays is ignored
            let mut acc: Option<RVal> = None;
            for p in parts {
                let RPart::Val(v) = p else { continue };
                acc = Some(match acc {
                    None => v,
                    Some(RVal::Obj(a)) => match v {
                        RVal::Obj(b) => with_fallback(RVal::Obj(b), RVal::Obj(a)),
                        other => return Err(type_err(&RVal::Obj(a), &other)),
                    },
                    Some(RVal::Arr(mut a)) => match v {
                        RVal::Arr(mut b) => {
                            a.append(&mut b);
                            self.charge(None)?;
                            RVal::Arr(a)
                        }
                        other => return Err(type_err(&RVal::Arr(a), &other)),
                    },
                    Some(other) => return Err(type_err(&other, &v)),
                });
            }
            return Ok(acc);
        }
        let mut s = String::new();
        for p in &parts {
            if s.len() / 16 > MAX_WORK {
                return Err(Fail::Hard(too_big(Some(pos))));
            }
            match p {
                RPart::Ws(w) => s.push_str(w),
                RPart::Val(v) => match v {
                    RVal::Str(t) => s.push_str(t),
                    RVal::Num(n) => s.push_str(&n.text),
                    RVal::Bool(b) => s.push_str(if *b { "true" } else { "false" }),
                    // a null, substituted or written, is "null" in a string (Typesafe's
                    // ConfigNull.transformToString; ConfigSubstitutionTest resolveNullInString)
                    RVal::Null => s.push_str("null"),
                    RVal::Obj(_) | RVal::Arr(_) => {}
                },
            }
        }
        Ok(Some(RVal::Str(s)))
    }
}

/// Convert a resolved value to JSON.
pub(crate) fn to_json(v: RVal) -> serde_json::Value {
    use serde_json::Value;
    match v {
        RVal::Null => Value::Null,
        RVal::Bool(b) => Value::Bool(b),
        RVal::Num(n) => match n.value {
            NumVal::Int(i) => Value::from(i),
            NumVal::UInt(u) => Value::from(u),
            NumVal::Float(f) => match serde_json::Number::from_f64(f) {
                Some(x) => Value::Number(x),
                None => Value::String(n.text),
            },
        },
        RVal::Str(s) => Value::String(s),
        RVal::Arr(a) => Value::Array(a.into_iter().map(to_json).collect()),
        RVal::Obj(m) => {
            let mut out = serde_json::Map::new();
            for (k, v) in m.into_entries() {
                out.insert(k, to_json(v));
            }
            Value::Object(out)
        }
    }
}
