//! ChunkText: splits the text of a field into chunks and emits one child document per chunk,
//! lazily: chunks are computed as the pipeline pulls the children, so a huge text never has all
//! its chunks in memory at once.
//!
//! Keys: `source` (the field to chunk; its first value), `dest` (the children's text field,
//! default `text`), `chunkingMethod` (`sentence`, the default; `paragraph`; `fixed`; `custom`),
//! `lengthToSplit` (characters per chunk, required and positive for `fixed`), `regex` (the
//! separator pattern, required for `custom`; `regEx` is accepted too), `cleanChunks` (default
//! false: replace every run of whitespace containing a line break by one space, then trim),
//! `preMergeMinChunkLen` (join a chunk shorter than this many characters with the ones after
//! it; a short last chunk joins the one before), `preMergeMaxChunkLen` (cut chunks longer
//! than this before merging), `chunksToMerge` (default 1: join this many consecutive chunks
//! into one), `chunksToOverlap` (with `chunksToMerge`: consecutive merged chunks share this many
//! chunks, so it must be smaller than `chunksToMerge`), `overlapPercentage` (instead of
//! `chunksToOverlap`: each chunk also takes this percentage of its own length in characters
//! from the end of the chunk before it and the start of the chunk after it), `characterLimit`
//! (cut final chunks to this many characters), `dropParent` (default false; see below).
//! A zero or negative `preMergeMinChunkLen` / `preMergeMaxChunkLen`, and a `characterLimit` of
//! 0 or -1, mean "off", as in Lucille. Order: split, clean, pre-merge join, pre-merge cut,
//! merge/overlap, character limit. Joined chunks are separated by one space; cut chunks are
//! trimmed.
//!
//! Splitting: `paragraph` splits at every run of whitespace holding two or more line breaks
//! (`\r\n` counts as one); `fixed` every `lengthToSplit` characters; `custom` at every match of
//! `regex` (Rust regex syntax); `sentence` at Unicode (UAX #29) sentence boundaries, each
//! sentence trimmed.
//!
//! Each child has `id` `<parentId>-<N>` (N from 1), `parent_id`, `chunk_number`,
//! `total_chunks`, `offset` (in characters, where the chunk's own text starts in the source
//! text; text borrowed from neighbours by `overlapPercentage` is not counted), `length` (the
//! chunk's length in characters) and `dest`. A missing, null or blank source gives no children.
//!
//! `attachChildren` (default: true when an EmitNestedChildren comes later in the same pipeline,
//! else false): attach the chunks to the parent (`___children`), as Lucille's ChunkText always
//! does, for that EmitNestedChildren to emit with its `fieldsToCopy` and `dropParent`, so
//! Lucille's chunking recipe (ChunkText, then `EmitNestedChildren { dropParent: true }`) gives
//! Lucille's result. Attached chunks are all made at once; emitted ones lazily.
//!
//! Where we differ from Lucille:
//! - Without a later EmitNestedChildren the chunks are emitted directly, lazily, as documents
//!   of their own that flow through the stages after this one (Lucille would leave them
//!   attached, for an indexer that sends nested documents). `dropParent: true` then marks the
//!   parent dropped when it has chunks; it cannot be combined with attached chunks (put it on
//!   the EmitNestedChildren, as in Lucille).
//! - `total_chunks` is known before the first child is emitted, so the chunks are computed
//!   twice (once to count them) rather than stored.
//! - Sentences come from UAX #29 rules rather than OpenNLP's English model: close for ordinary
//!   prose, but an abbreviation followed by a capitalised word ("Mr. Smith") ends a sentence.
//! - Lengths, offsets and cuts count Unicode characters (Lucille counts UTF-16 units), and
//!   Lucille's `offset` is the sum of the previous chunks' lengths, which drifts from the text
//!   as soon as separators are dropped; ours is the real position.
//! - Empty chunks (e.g. between two adjacent `custom` separators) are dropped; an unknown
//!   `chunkingMethod` is a config error (Lucille falls back to sentences); merging with
//!   `chunksToOverlap` never loses text (Lucille emits nothing when there are no more chunks
//!   than `chunksToOverlap`); a chunk is long enough for `preMergeMinChunkLen` when it has at
//!   least that many characters.

use std::collections::VecDeque;
use std::sync::Arc;

use regex::Regex;
use unicode_segmentation::UnicodeSegmentation;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::ids::child_id;
use crate::document::Document;
use crate::pipeline::{PlanRule, StagePlan};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ChunkText",
    spec: ChunkTextOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);
inventory::submit!(PlanRule {
    name: "ChunkText before EmitNestedChildren",
    apply: attach_chunks_before_emit,
});

/// Splits a field's text into chunks and emits one child document per chunk, lazily.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ChunkTextOptions {
    /// The field whose text (first value) is chunked.
    source: String,
    /// The children's text field.
    #[option(default = "text")]
    dest: String,
    /// How the text is split: at sentences, at paragraphs (blank lines), every lengthToSplit
    /// characters, or at each match of regex.
    #[option(default = "sentence", one_of = ["sentence", "paragraph", "fixed", "custom"])]
    chunking_method: String,
    /// Characters per chunk (required, and positive, for fixed).
    length_to_split: Option<i64>,
    /// The separator pattern (required for custom; Rust regex syntax).
    #[option(alias = "regEx")]
    regex: Option<String>,
    /// Replace every run of whitespace holding a line break by one space, then trim.
    #[option(default)]
    clean_chunks: bool,
    /// Join a chunk shorter than this many characters with the ones after it (0 or less: off).
    pre_merge_min_chunk_len: Option<i64>,
    /// Cut chunks longer than this many characters before merging (0 or less: off).
    pre_merge_max_chunk_len: Option<i64>,
    /// Join this many consecutive chunks into one.
    #[option(default = 1, min = 1)]
    chunks_to_merge: i64,
    /// With chunksToMerge: how many chunks consecutive merged chunks share (smaller than
    /// chunksToMerge).
    chunks_to_overlap: Option<usize>,
    /// Instead of chunksToOverlap: each chunk also takes this percentage of its own length
    /// from the chunk before it and the chunk after it.
    #[option(default = 0, min = 0)]
    overlap_percentage: i64,
    /// Cut final chunks to this many characters (0 or -1: off).
    character_limit: Option<i64>,
    /// Mark the parent dropped when it has chunks (not with attached chunks).
    #[option(default)]
    drop_parent: bool,
    /// Attach the chunks to the parent (`___children`) rather than emit them (default: true
    /// when an EmitNestedChildren comes later in the same pipeline, else false).
    attach_children: Option<bool>,
}

enum Method {
    Sentence,
    Paragraph,
    Fixed(usize),
    Custom(Regex),
}

struct Chunking {
    method: Method,
    clean: bool,
    pre_min: Option<usize>,
    pre_max: Option<usize>,
    merge: usize,
    overlap_chunks: Option<usize>,
    overlap_percent: usize,
    limit: Option<usize>,
}

struct ChunkText {
    source: String,
    dest: String,
    drop_parent: bool,
    attach: bool,
    chunking: Arc<Chunking>,
}

/// A positive length, or `None` when absent or not positive (Lucille's "off").
fn positive_or_off(n: Option<i64>) -> Option<usize> {
    n.and_then(|n| usize::try_from(n).ok()).filter(|n| *n > 0)
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = ChunkTextOptions::from_config(config)?;
    let mut errors = Vec::new();
    let mut push = |e: ConfigError| errors.push(e);
    if o.dest.is_empty() || crate::document::is_reserved(&o.dest) {
        push(config.error(
            "dest",
            format!("{:?} cannot be written: it is reserved or empty", o.dest),
        ));
    }
    let method = match o.chunking_method.as_str() {
        "paragraph" => Some(Method::Paragraph),
        "fixed" => match o.length_to_split {
            Some(n) if n > 0 => Some(Method::Fixed(usize::try_from(n).unwrap_or(usize::MAX))),
            _ => {
                push(config.error(
                    "lengthToSplit",
                    "must be a positive integer for fixed chunking",
                ));
                None
            }
        },
        "custom" => match o.regex.as_deref().unwrap_or_default() {
            "" => {
                push(config.error("regex", "must be a non-empty pattern for custom chunking"));
                None
            }
            pattern => match Regex::new(pattern) {
                Ok(r) => Some(Method::Custom(r)),
                Err(e) => {
                    push(config.error("regex", format!("invalid pattern: {e}")));
                    None
                }
            },
        },
        _ => Some(Method::Sentence),
    };
    // At least 1 (checked by the options).
    let merge = usize::try_from(o.chunks_to_merge).unwrap_or(usize::MAX);
    // Not negative (checked by the options).
    let overlap_percent = usize::try_from(o.overlap_percentage).unwrap_or(0);
    let overlap_chunks = o.chunks_to_overlap;
    if let Some(overlap) = overlap_chunks {
        if overlap_percent > 0 {
            push(config.error(
                "chunksToOverlap",
                "give either chunksToOverlap or overlapPercentage, not both",
            ));
        } else if overlap >= merge {
            push(config.error(
                "chunksToOverlap",
                format!("must be smaller than chunksToMerge ({overlap} >= {merge})"),
            ));
        }
    }
    let limit = match o.character_limit {
        None | Some(-1) | Some(0) => None,
        Some(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => {
            push(config.error(
                "characterLimit",
                format!("must be a positive integer (or -1 for none), found {n}"),
            ));
            None
        }
    };
    let attach = o.attach_children.unwrap_or(false);
    if attach && o.drop_parent {
        push(config.error(
            "dropParent",
            "cannot be combined with attached chunks (attachChildren, or a later \
             EmitNestedChildren): set dropParent on the EmitNestedChildren, as in Lucille",
        ));
    }
    let (Some(method), true) = (method, errors.is_empty()) else {
        return Err(errors.into());
    };
    Ok(Box::new(ChunkText {
        source: o.source,
        dest: o.dest,
        drop_parent: o.drop_parent,
        attach,
        chunking: Arc::new(Chunking {
            method,
            clean: o.clean_chunks,
            pre_min: positive_or_off(o.pre_merge_min_chunk_len),
            pre_max: positive_or_off(o.pre_merge_max_chunk_len),
            merge,
            overlap_chunks,
            overlap_percent,
            limit,
        }),
    }))
}

impl Stage for ChunkText {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let text = match doc.get_string(&self.source)? {
            Some(t) if !t.trim().is_empty() => Arc::<str>::from(t),
            _ => return Ok(None),
        };
        let source = Source::new(&self.chunking, text);
        let total = chunks(&self.chunking, source.clone()).count();
        if total == 0 {
            return Ok(None);
        }
        if self.drop_parent {
            doc.set_dropped(true);
        }
        let parent = doc.id().to_string();
        let dest = self.dest.clone();
        let children = chunks(&self.chunking, source)
            .enumerate()
            .map(move |(i, chunk)| chunk_document(&parent, &dest, i + 1, total, chunk));
        if self.attach {
            for child in children {
                doc.add_child(child?);
            }
            return Ok(None);
        }
        Ok(Some(Box::new(children)))
    }
}

/// The child document of chunk `number` (from 1) of `total`.
fn chunk_document(
    parent: &str,
    dest: &str,
    number: usize,
    total: usize,
    chunk: Piece,
) -> Result<Document, StageFailure> {
    let mut child = Document::new(child_id(parent, number))?;
    child.set_field("parent_id", parent)?;
    child.set_field("chunk_number", number)?;
    child.set_field("total_chunks", total)?;
    child.set_field("offset", chunk.offset)?;
    child.set_field("length", chunk.chars)?;
    child.set_field(dest, chunk.text)?;
    Ok(child)
}

/// A chunk on its way through the steps: its text, where it starts in the source (characters)
/// and its length in characters.
#[derive(Debug, Clone, PartialEq)]
struct Piece {
    offset: usize,
    text: String,
    chars: usize,
}

impl Piece {
    fn new(offset: usize, text: String) -> Self {
        let chars = text.chars().count();
        Piece {
            offset,
            text,
            chars,
        }
    }

    fn trimmed(self) -> Piece {
        let lead = self.text.len() - self.text.trim_start().len();
        let lead_chars = self.text[..lead].chars().count();
        let text = self.text.trim().to_string();
        Piece::new(self.offset + lead_chars, text)
    }

    /// The first `max` characters, trimmed (unchanged if not longer).
    fn cut(self, max: usize) -> Piece {
        if self.chars <= max {
            return self;
        }
        let text: String = self.text.chars().take(max).collect();
        Piece::new(self.offset, text).trimmed()
    }

    /// Pieces joined by single spaces, trimmed; the offset is the first's.
    fn join<'a>(pieces: impl IntoIterator<Item = &'a Piece>) -> Option<Piece> {
        let mut iter = pieces.into_iter();
        let first = iter.next()?;
        let mut text = first.text.clone();
        for p in iter {
            text.push(' ');
            text.push_str(&p.text);
        }
        Some(Piece::new(first.offset, text).trimmed())
    }
}

type Pieces = Box<dyn Iterator<Item = Piece> + Send>;

/// The chunks of `text`, lazily, after every configured step.
fn chunks(cfg: &Arc<Chunking>, source: Source) -> Pieces {
    let mut it: Pieces = Box::new(
        Splitter {
            cfg: cfg.clone(),
            text: source.text,
            view: source.view,
            byte: 0,
            chars: 0,
            search: 0,
            done: false,
        }
        .filter(|p| !p.text.is_empty()),
    );
    if cfg.clean {
        it = Box::new(it.map(clean).filter(|p| !p.text.is_empty()));
    }
    if let Some(min) = cfg.pre_min {
        it = Box::new(JoinShort {
            inner: it,
            min,
            held: None,
        });
    }
    if let Some(max) = cfg.pre_max {
        it = Box::new(it.map(move |p| p.cut(max)).filter(|p| !p.text.is_empty()));
    }
    if let Some(overlap) = cfg.overlap_chunks {
        it = Box::new(Windows {
            inner: it,
            size: cfg.merge,
            step: cfg.merge - overlap,
            buf: VecDeque::new(),
            started: false,
        });
    } else {
        if cfg.merge > 1 {
            let size = cfg.merge;
            let mut inner = it;
            it = Box::new(std::iter::from_fn(move || {
                let group: Vec<Piece> = inner.by_ref().take(size).collect();
                Piece::join(&group)
            }));
        }
        if cfg.overlap_percent > 0 {
            it = Box::new(Overlap {
                inner: it.peekable(),
                percent: cfg.overlap_percent,
                prev: None,
            });
        }
    }
    if let Some(limit) = cfg.limit {
        it = Box::new(it.map(move |p| p.cut(limit)));
    }
    Box::new(it.filter(|p| !p.text.is_empty()))
}

/// Splits the source text by the chunking method, one piece at a time.
/// The text to chunk and, for sentences, the copy that sentence boundaries are found in.
#[derive(Clone)]
struct Source {
    text: Arc<str>,
    view: Option<Arc<str>>,
}

impl Source {
    fn new(cfg: &Chunking, text: Arc<str>) -> Self {
        let view = matches!(cfg.method, Method::Sentence).then(|| Arc::from(sentence_view(&text)));
        Source { text, view }
    }
}

/// A copy of `text` in which every whitespace run holding exactly one line break has its line
/// break characters replaced by as many bytes of spaces, so UAX #29 (which ends a sentence at
/// every line break) does not split hard-wrapped sentences, while byte offsets stay the same.
fn sentence_view(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut run = String::new();
    let mut breaks = 0usize;
    let mut prev_cr = false;
    let flush = |out: &mut String, run: &mut String, breaks: usize| {
        if breaks == 1 {
            for c in run.chars() {
                if is_line_break(c) {
                    out.extend(std::iter::repeat_n(' ', c.len_utf8()));
                } else {
                    out.push(c);
                }
            }
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_whitespace() {
            if is_line_break(c) && !(c == '\n' && prev_cr) {
                breaks += 1;
            }
            prev_cr = c == '\r';
            run.push(c);
        } else {
            flush(&mut out, &mut run, breaks);
            breaks = 0;
            prev_cr = false;
            out.push(c);
        }
    }
    flush(&mut out, &mut run, breaks);
    out
}

struct Splitter {
    cfg: Arc<Chunking>,
    text: Arc<str>,
    /// For sentences: [`sentence_view`] of `text`.
    view: Option<Arc<str>>,
    /// Start of the rest of the text (bytes), and the same position in characters.
    byte: usize,
    chars: usize,
    /// Where the next `custom` separator search starts (bytes).
    search: usize,
    done: bool,
}

impl Splitter {
    /// Takes the piece `[self.byte, end)` and moves past the separator up to `next`.
    fn take(&mut self, end: usize, next: usize) -> Piece {
        #[cfg(test)]
        tests::SPLITS.with(|n| n.set(n.get() + 1));
        let piece = Piece::new(self.chars, self.text[self.byte..end].to_string());
        self.chars += piece.chars + self.text[end..next].chars().count();
        self.byte = next;
        piece
    }
}

impl Iterator for Splitter {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        let len = self.text.len();
        if self.done || self.byte >= len {
            return None;
        }
        match &self.cfg.method {
            Method::Fixed(n) => {
                let rest = &self.text[self.byte..];
                let end = rest
                    .char_indices()
                    .nth(*n)
                    .map_or(len, |(i, _)| self.byte + i);
                Some(self.take(end, end))
            }
            Method::Sentence => {
                let view = self.view.as_deref().unwrap_or(&self.text);
                let rest = view.get(self.byte..).unwrap_or("");
                let mut end = self.byte
                    + rest
                        .split_sentence_bounds()
                        .next()
                        .map_or(rest.len(), str::len);
                while end < len && !self.text.is_char_boundary(end) {
                    end += 1;
                }
                Some(self.take(end.min(len), end.min(len)).trimmed())
            }
            Method::Paragraph => match paragraph_break(&self.text[self.byte..]) {
                Some((start, end)) => {
                    let (start, end) = (self.byte + start, self.byte + end);
                    Some(self.take(start, end))
                }
                None => Some(self.take(len, len)),
            },
            Method::Custom(_) => self.next_custom(),
        }
    }
}

impl Splitter {
    fn next_custom(&mut self) -> Option<Piece> {
        let cfg = self.cfg.clone();
        let Method::Custom(re) = &cfg.method else {
            return None;
        };
        let len = self.text.len();
        loop {
            let found = re
                .find_at(&self.text, self.search)
                .map(|m| (m.start(), m.end()));
            match found {
                None => {
                    self.done = true;
                    return Some(self.take(len, len));
                }
                // An empty match where the piece starts separates nothing: look further on.
                Some((start, end)) if start == end && start == self.byte => {
                    match self.text[start..].chars().next() {
                        Some(c) => self.search = start + c.len_utf8(),
                        None => {
                            self.done = true;
                            return None;
                        }
                    }
                }
                Some((start, end)) => {
                    self.search = end;
                    return Some(self.take(start, end));
                }
            }
        }
    }
}

fn is_line_break(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0B}' | '\u{0C}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// The first run of whitespace holding at least two line breaks (`\r\n` is one), as a byte
/// range.
fn paragraph_break(text: &str) -> Option<(usize, usize)> {
    let mut run: Option<(usize, usize)> = None; // (start, breaks)
    let mut prev_cr = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            let (_, breaks) = run.get_or_insert((i, 0));
            if is_line_break(c) && !(c == '\n' && prev_cr) {
                *breaks += 1;
            }
            prev_cr = c == '\r';
        } else {
            if let Some((start, breaks)) = run.take() {
                if breaks >= 2 {
                    return Some((start, i));
                }
            }
            prev_cr = false;
        }
    }
    match run {
        Some((start, breaks)) if breaks >= 2 => Some((start, text.len())),
        _ => None,
    }
}

/// `cleanChunks`: whitespace runs holding a line break become one space; then trim.
fn clean(piece: Piece) -> Piece {
    let mut out = String::with_capacity(piece.text.len());
    let mut run = String::new();
    let mut run_breaks = false;
    let flush = |out: &mut String, run: &mut String, breaks: bool| {
        if breaks {
            out.push(' ');
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in piece.text.chars() {
        if c.is_whitespace() {
            run.push(c);
            run_breaks |= is_line_break(c);
        } else {
            flush(&mut out, &mut run, run_breaks);
            run_breaks = false;
            out.push(c);
        }
    }
    flush(&mut out, &mut run, run_breaks);
    let lead = piece.text.chars().take_while(|c| c.is_whitespace()).count();
    Piece::new(piece.offset + lead, out.trim().to_string())
}

/// `preMergeMinChunkLen`: joins pieces until they reach `min` characters; a short remainder at
/// the end joins the chunk before it. Holds back one finished chunk for that.
struct JoinShort {
    inner: Pieces,
    min: usize,
    held: Option<Piece>,
}

impl Iterator for JoinShort {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        loop {
            let mut acc: Option<Piece> = None;
            for p in self.inner.by_ref() {
                let joined = match acc.take() {
                    None => p,
                    Some(a) => Piece::join([&a, &p])?,
                };
                let long_enough = joined.chars >= self.min;
                acc = Some(joined);
                if long_enough {
                    break;
                }
            }
            match (acc, self.held.take()) {
                (None, held) => return held,
                (Some(a), held) if a.chars >= self.min => {
                    self.held = Some(a);
                    if held.is_some() {
                        return held;
                    }
                }
                (Some(a), Some(h)) => return Piece::join([&h, &a]),
                (Some(a), None) => return Some(a),
            }
        }
    }
}

/// `chunksToMerge` with `chunksToOverlap`: windows of `size` pieces moving by `step`; a window
/// is emitted only if it brings a piece the previous one did not have.
struct Windows {
    inner: Pieces,
    size: usize,
    step: usize,
    buf: VecDeque<Piece>,
    started: bool,
}

impl Iterator for Windows {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        if self.started {
            if self.buf.len() < self.size {
                return None;
            }
            for _ in 0..self.step {
                self.buf.pop_front();
            }
        }
        self.started = true;
        let mut added = 0;
        while self.buf.len() < self.size {
            match self.inner.next() {
                Some(p) => {
                    self.buf.push_back(p);
                    added += 1;
                }
                None => break,
            }
        }
        if added == 0 {
            return None;
        }
        Piece::join(&self.buf)
    }
}

/// `overlapPercentage`: each chunk takes `percent`% of its own length from the end of the
/// previous chunk and the start of the next.
struct Overlap {
    inner: std::iter::Peekable<Pieces>,
    percent: usize,
    prev: Option<Piece>,
}

impl Iterator for Overlap {
    type Item = Piece;

    fn next(&mut self) -> Option<Piece> {
        let current = self.inner.next()?;
        let n = current.chars.saturating_mul(self.percent) / 100;
        let mut text = String::new();
        if let Some(prev) = &self.prev {
            let skip = prev.chars.saturating_sub(n);
            text.extend(prev.text.chars().skip(skip));
            text.push(' ');
        }
        let own_start = text.chars().count();
        text.push_str(&current.text);
        if let Some(next) = self.inner.peek() {
            text.push(' ');
            text.extend(next.text.chars().take(n));
        }
        let trimmed_lead = text.chars().take_while(|c| c.is_whitespace()).count();
        let offset = current.offset + trimmed_lead.saturating_sub(own_start);
        let out = Piece::new(offset, text.trim().to_string());
        self.prev = Some(current);
        Some(out)
    }
}

/// Lucille's ChunkText attaches its chunks to the parent for an EmitNestedChildren later in
/// the pipeline to emit (with that stage's `fieldsToCopy` and `dropParent`); ours emits them
/// lazily unless told to attach. So that Lucille's recipe gives Lucille's result, a ChunkText
/// followed by an EmitNestedChildren gets `attachChildren: true` unless its config sets it.
fn attach_chunks_before_emit(plans: &mut [StagePlan]) -> Vec<ConfigError> {
    let is = |plan: &StagePlan, name: &str| plan.builtin() == Some(name);
    let mut errors = Vec::new();
    for i in 0..plans.len() {
        if !is(&plans[i], "ChunkText") {
            continue;
        }
        // The stage's options as it reads them (a block with problems is left for its build
        // to report).
        let Ok(options) = ChunkTextOptions::from_config(plans[i].config()) else {
            continue;
        };
        if options.attach_children.is_some() {
            continue;
        }
        let Some(emit) = plans[i + 1..].iter().find(|p| is(p, "EmitNestedChildren")) else {
            continue;
        };
        let emit = emit.name.clone();
        let plan = &mut plans[i];
        let mut map = plan.config().map().clone();
        map.insert("attachChildren".into(), serde_json::Value::Bool(true));
        let config = ComponentConfig::new(map, plan.config().path())
            .with_paths(plan.config().paths().clone());
        if options.drop_parent {
            errors.push(config.error(
                "dropParent",
                format!(
                    "EmitNestedChildren stage {emit:?} later in this pipeline emits the chunks: \
                     set dropParent on it instead, as in Lucille"
                ),
            ));
            continue;
        }
        plan.set_config(config);
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::paragraph_break;
    use crate::document::Document;
    use crate::stage::testing::{build_err, build_stage, process, process_children, process_err};
    use serde_json::{json, Value};
    use std::cell::Cell;

    thread_local! {
        /// Pieces split off the source so far on this thread.
        pub(super) static SPLITS: Cell<usize> = const { Cell::new(0) };
    }

    const THIRTEEN: &str = "The sun is bright. The sky is clear. Birds are singing. A dog barks. \
        Children play. Trees sway. Leaves rustle. A car drives by. The breeze is cool. \
        Flowers bloom. A cat sleeps. The clock ticks. The phone rings.";

    fn texts(config: Value, text: &str) -> Vec<String> {
        let mut config = config;
        config["class"] = json!("ChunkText");
        config["source"] = json!("text");
        let mut s = build_stage(config);
        let (_, children) = process_children(&mut s, json!({"id": "id", "text": text}));
        children
            .iter()
            .map(|c| c.get_str("text").unwrap().to_string())
            .collect()
    }

    #[test]
    fn sentence_children_carry_ids_numbers_offsets() {
        let mut s = build_stage(json!({"class": "ChunkText", "source": "text"}));
        let text = "This is a sentence. This is the second sentence. This is the third sentence.";
        let (parent, children) = process_children(&mut s, json!({"id": "id", "text": text}));
        assert!(!parent.is_dropped());
        let ids: Vec<_> = children.iter().map(Document::id).collect();
        assert_eq!(ids, ["id-1", "id-2", "id-3"]);
        let c = &children[1];
        assert_eq!(
            c.to_json(),
            r#"{"id":"id-2","parent_id":"id","chunk_number":2,"total_chunks":3,"offset":20,"length":28,"text":"This is the second sentence."}"#
        );
        for c in &children {
            let offset = c.get_i64("offset").unwrap().unwrap() as usize;
            let len = c.get_i64("length").unwrap().unwrap() as usize;
            let from_source: String = text.chars().skip(offset).take(len).collect();
            assert_eq!(from_source, c.get_str("text").unwrap());
        }
    }

    #[test]
    fn children_are_lazy() {
        let text = "word ".repeat(200_000);
        let mut s = build_stage(json!({"class": "ChunkText", "source": "t",
            "chunkingMethod": "fixed", "lengthToSplit": 5}));
        let mut doc = Document::from_value(json!({"id": "big", "t": text})).unwrap();
        SPLITS.with(|n| n.set(0));
        let mut children = s.process_document(&mut doc).unwrap().unwrap();
        assert_eq!(SPLITS.with(Cell::get), 200_000, "one counting pass");
        let first = children.next().unwrap().unwrap();
        assert_eq!(
            SPLITS.with(Cell::get),
            200_001,
            "the first child needs only the first chunk"
        );
        assert_eq!(first.get("total_chunks"), Some(&json!(200_000)));
        assert_eq!(first.get_str("text"), Some("word "));
        assert_eq!(children.count(), 199_999);
    }

    #[test]
    fn clean_fixed_paragraph_custom() {
        assert_eq!(
            texts(
                json!({"cleanChunks": true, "characterLimit": 100}),
                "This is\na sentence.   \n\n This is the second sentence. This is the \nthird sentence.     "
            ),
            [
                "This is a sentence.",
                "This is the second sentence.",
                "This is the third sentence."
            ]
        );
        assert_eq!(
            texts(
                json!({"chunkingMethod": "fixed", "lengthToSplit": 15}),
                "This is the\nfirst paragraph.\n\nThis is the second paragraph"
            ),
            [
                "This is the\nfir",
                "st paragraph.\n\n",
                "This is the sec",
                "ond paragraph"
            ]
        );
        assert_eq!(
            texts(
                json!({"chunkingMethod": "paragraph", "characterLimit": 60}),
                "This is the first\nparagraph of the document.\n\n This is the second paragraph of the document.\n \nThis is the third paragraph of the document. \n \n This is the fourth paragraph of the document."
            ),
            [
                "This is the first\nparagraph of the document.",
                "This is the second paragraph of the document.",
                "This is the third paragraph of the document.",
                "This is the fourth paragraph of the document."
            ]
        );
        assert_eq!(
            texts(
                json!({"chunkingMethod": "paragraph"}),
                "\r\n\r\nOne\r\ntwo\r\n\r\nThree\n\n\n"
            ),
            ["One\r\ntwo", "Three"]
        );
        assert_eq!(
            texts(
                json!({"chunkingMethod": "custom", "regex": ","}),
                "This is the first sentence, with a comma. This is the second sentence, with another comma"
            ),
            [
                "This is the first sentence",
                " with a comma. This is the second sentence",
                " with another comma"
            ]
        );
        assert_eq!(
            texts(json!({"chunkingMethod": "custom", "regEx": ";+"}), ";a;;b;"),
            ["a", "b"],
            "empty pieces are dropped"
        );
    }

    #[test]
    fn character_limit_and_pre_merge() {
        assert_eq!(
            texts(
                json!({"characterLimit": 40}),
                "This is a sentence. This is a sentence so long that it passes the character limit."
            ),
            [
                "This is a sentence.",
                "This is a sentence so long that it passe"
            ]
        );
        assert_eq!(
            texts(
                json!({"preMergeMinChunkLen": 10}),
                "The sun is bright. 3.\n The phone rings."
            ),
            ["The sun is bright.", "3. The phone rings."]
        );
        assert_eq!(
            texts(
                json!({"preMergeMinChunkLen": 10}),
                "The sun is bright. The phone rings. 3. \n"
            ),
            ["The sun is bright.", "The phone rings. 3."]
        );
        assert_eq!(
            texts(
                json!({"preMergeMinChunkLen": 100}),
                "The sun is bright. The phone rings. The trees sway."
            ),
            ["The sun is bright. The phone rings. The trees sway."]
        );
        assert_eq!(
            texts(
                json!({"preMergeMaxChunkLen": 30, "chunksToMerge": 3}),
                "This is the first sentence. This sentence is too long and will be truncated before merging. This is the other sentence."
            ),
            ["This is the first sentence. This sentence is too long and This is the other sentence."]
        );
    }

    #[test]
    fn merging_and_overlaps() {
        assert_eq!(
            texts(json!({"chunksToMerge": 3}), THIRTEEN),
            [
                "The sun is bright. The sky is clear. Birds are singing.",
                "A dog barks. Children play. Trees sway.",
                "Leaves rustle. A car drives by. The breeze is cool.",
                "Flowers bloom. A cat sleeps. The clock ticks.",
                "The phone rings."
            ]
        );
        assert_eq!(
            texts(
                json!({"chunksToMerge": 3}),
                "The sun is bright. The sky is clear."
            ),
            ["The sun is bright. The sky is clear."]
        );
        let six = "The sun is bright. The sky is clear. Birds are singing. A dog barks. Children play. Trees sway.";
        assert_eq!(
            texts(json!({"chunksToMerge": 2, "chunksToOverlap": 1}), six),
            [
                "The sun is bright. The sky is clear.",
                "The sky is clear. Birds are singing.",
                "Birds are singing. A dog barks.",
                "A dog barks. Children play.",
                "Children play. Trees sway."
            ]
        );
        assert_eq!(
            texts(json!({"chunksToMerge": 3, "chunksToOverlap": 1}), six),
            [
                "The sun is bright. The sky is clear. Birds are singing.",
                "Birds are singing. A dog barks. Children play.",
                "Children play. Trees sway."
            ]
        );
        assert_eq!(
            texts(json!({"chunksToMerge": 4, "chunksToOverlap": 2}), THIRTEEN).len(),
            6
        );
        let five_three = texts(json!({"chunksToMerge": 5, "chunksToOverlap": 3}), THIRTEEN);
        assert_eq!(five_three.len(), 5);
        assert_eq!(
            five_three[4],
            "The breeze is cool. Flowers bloom. A cat sleeps. The clock ticks. The phone rings."
        );
        assert_eq!(
            texts(
                json!({"chunksToMerge": 3, "chunksToOverlap": 2}),
                "One. Two."
            ),
            ["One. Two."],
            "no text is lost when there are few chunks"
        );
        assert_eq!(
            texts(
                json!({"overlapPercentage": 20}),
                "The sun is bright, The sky is clear. Birds are singing, a dog barks, children play. Trees sway, leaves rustle, a car drives by. The breeze is cool, flowers bloom, a cat sleeps. The clock ticks, the phone rings."
            ),
            [
                "The sun is bright, The sky is clear. Birds a",
                "is clear. Birds are singing, a dog barks, children play. Trees swa",
                "en play. Trees sway, leaves rustle, a car drives by. The bree",
                "rives by. The breeze is cool, flowers bloom, a cat sleeps. The clock",
                "leeps. The clock ticks, the phone rings."
            ]
        );
        let merged = texts(
            json!({"chunksToMerge": 3, "overlapPercentage": 20}),
            THIRTEEN,
        );
        assert_eq!(
            merged[0],
            "The sun is bright. The sky is clear. Birds are singing. A dog barks"
        );
        assert_eq!(merged[4], "ks. The phone rings.");
    }

    #[test]
    fn overlap_offsets_point_at_own_text() {
        let mut s = build_stage(json!({"class": "ChunkText", "source": "t",
            "chunkingMethod": "fixed", "lengthToSplit": 10, "overlapPercentage": 50}));
        let (_, children) = process_children(
            &mut s,
            json!({"id": "d", "t": "aaaaaaaaaabbbbbbbbbbcccccccccc"}),
        );
        let offsets: Vec<_> = children
            .iter()
            .map(|c| c.get("offset").cloned().unwrap())
            .collect();
        assert_eq!(offsets, [json!(0), json!(10), json!(20)]);
        assert_eq!(children[1].get_str("text"), Some("aaaaa bbbbbbbbbb ccccc"));
    }

    #[test]
    fn missing_blank_drop_parent_and_dest() {
        let mut s = build_stage(json!({"class": "ChunkText", "source": "t", "dest": "chunk",
            "dropParent": true}));
        for doc in [
            json!({"id": "d"}),
            json!({"id": "d", "t": null}),
            json!({"id": "d", "t": "  \n "}),
        ] {
            let out = process(&mut s, doc);
            assert!(!out.is_dropped());
        }
        let (parent, children) =
            process_children(&mut s, json!({"id": "d", "t": ["Hi there.", "ignored"]}));
        assert!(parent.is_dropped());
        assert_eq!(children.len(), 1);
        assert_eq!(children[0].get("chunk"), Some(&json!("Hi there.")));
        let (_, children) = process_children(&mut s, json!({"id": "n", "t": 12.5}));
        assert_eq!(children[0].get("chunk"), Some(&json!("12.5")));
        let err = process_err(&mut s, json!({"id": "d", "t": {"o": 1}}));
        assert!(err.contains("\"t\""), "{err}");
    }

    #[test]
    fn unicode_counts_characters() {
        let mut s = build_stage(json!({"class": "ChunkText", "source": "t",
            "chunkingMethod": "fixed", "lengthToSplit": 2}));
        let (_, children) = process_children(&mut s, json!({"id": "d", "t": "äöü€😀"}));
        let t: Vec<_> = children
            .iter()
            .map(|c| c.get_str("text").unwrap().to_string())
            .collect();
        assert_eq!(t, ["äö", "ü€", "😀"]);
        assert_eq!(children[2].get("offset"), Some(&json!(4)));
    }

    #[test]
    fn sentences_span_single_line_breaks_but_not_blank_lines() {
        assert_eq!(
            texts(
                json!({}),
                "A hard-wrapped\nsentence here. Next one.\r\nStill next.\n\nHeading\n\nBody"
            ),
            [
                "A hard-wrapped\nsentence here.",
                "Next one.",
                "Still next.",
                "Heading",
                "Body"
            ]
        );
        assert_eq!(
            super::sentence_view("a\u{2028}b\n\nc\r\nd"),
            "a   b\n\nc  d"
        );
    }

    #[test]
    fn chunks_flow_through_later_stages_in_a_pipeline() {
        let stages = [
            json!({"class": "ChunkText", "source": "body", "dropParent": true}),
            json!({"class": "Contains", "contains": "dog", "fields": "text",
                "output": "about", "value": "dogs"}),
        ];
        let plan =
            crate::pipeline::PipelinePlan::from_config("p", &stages, "stages", &Default::default())
                .unwrap();
        let mut pipeline = plan.instantiate().unwrap();
        pipeline.start().unwrap();
        let doc =
            Document::from_value(json!({"id": "d", "body": "A cat sat. A dog ran."})).unwrap();
        let outputs: Vec<_> = pipeline.process(doc).collect();
        let summary: Vec<_> = outputs
            .iter()
            .map(|o| {
                (
                    o.doc.id().to_string(),
                    o.is_child,
                    o.doc.is_dropped(),
                    o.doc.get("about").cloned(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("d-1".to_string(), true, false, None),
                ("d-2".to_string(), true, false, Some(json!("dogs"))),
                ("d".to_string(), false, true, None),
            ]
        );
        pipeline.stop().unwrap();
    }

    #[test]
    fn paragraph_breaks() {
        assert_eq!(paragraph_break("a\r\nb"), None);
        assert_eq!(paragraph_break("a\n\nb"), Some((1, 3)));
        assert_eq!(paragraph_break("a \n \n b"), Some((1, 6)));
        assert_eq!(paragraph_break("a\n b\n\n"), Some((4, 6)));
    }

    #[test]
    fn bad_configs() {
        let base = json!({"class": "ChunkText", "source": "t"});
        let with = |pairs: Value| {
            let mut c = base.clone();
            c.as_object_mut()
                .unwrap()
                .extend(pairs.as_object().unwrap().clone());
            c
        };
        for (extra, key) in [
            (json!({"chunkingMethod": "custom"}), "regex"),
            (json!({"chunkingMethod": "custom", "regex": ""}), "regex"),
            (
                json!({"chunkingMethod": "custom", "regex": "(unclosed"}),
                "regex",
            ),
            (json!({"chunkingMethod": "fixed"}), "lengthToSplit"),
            (
                json!({"chunkingMethod": "fixed", "lengthToSplit": 0}),
                "lengthToSplit",
            ),
            (json!({"chunkingMethod": "words"}), "chunkingMethod"),
            (json!({"characterLimit": -24}), "characterLimit"),
            (json!({"chunksToMerge": 0}), "chunksToMerge"),
            (
                json!({"chunksToMerge": 2, "chunksToOverlap": 2}),
                "chunksToOverlap",
            ),
            (
                json!({"chunksToMerge": 3, "chunksToOverlap": 1, "overlapPercentage": 50}),
                "chunksToOverlap",
            ),
            (json!({"overlapPercentage": -5}), "overlapPercentage"),
            (json!({"dest": "id"}), "dest"),
            (json!({"regex": "a", "regEx": "b"}), "regEx"),
        ] {
            let err = build_err(with(extra.clone()));
            assert!(err.contains(key), "{extra}: {err}");
        }
        assert!(build_err(json!({"class": "ChunkText"})).contains("source"));
        // Off values accepted as in Lucille.
        build_stage(with(
            json!({"characterLimit": -1, "preMergeMinChunkLen": -3, "preMergeMaxChunkLen": 0}),
        ));
    }
}
