//! Embed (new; not in Lucille): sentence embeddings computed in-process from a local model
//! folder, on the CPU, with no network and no Python: the text of `source` is tokenized with
//! the folder's `tokenizer.json`, run through the BERT encoder in `model.safetensors`
//! (`config.json` gives its sizes; without it they are read from the weights' shapes), mean
//! pooled over the real tokens and L2-normalised, as sentence-transformers does for
//! all-MiniLM-L6-v2 and models like it. The vector is stored in `dest` as float32 numbers, as
//! `Document.set_vector` does.
//!
//! Keys: `source` (the text field; several values are joined with a line break), `dest`
//! (default `embedding`), `model` (the model folder, resolved like every input path),
//! `batchSize` (documents embedded in one forward pass, default 32), `normalize` (default
//! true; false keeps the raw mean-pooled vector).
//!
//! A document without `source` (or with only nulls) passes unchanged. Texts longer than the
//! model's maximum sequence length are truncated to it (`max_seq_length` of
//! `sentence_bert_config.json` when the folder has one, 256 for all-MiniLM-L6-v2; otherwise
//! the model's positions, usually 512 tokens) as sentence-transformers does; each truncation
//! is logged at debug level. Chunk long texts first (ChunkText) to embed all of them: the
//! chunks are children and go through the stages after ChunkText like any document.
//!
//! The model is loaded once per folder and shared by every worker; a missing or unreadable
//! folder is a config error at validation. Documents are embedded in batches: the pipeline
//! hands the stage up to `batchSize` documents at once (the batch hook), whose token sequences
//! are packed one after another (no padding) into forward passes, spread over rayon's threads
//! (`model.rs`); no Python lock is held.

mod kernels;
mod model;
mod tokenize;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub use model::{BertConfig, BertModel};
use tokenize::{Sequence, TextTokenizer};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Embed",
    spec,
    build,
};

/// Tokens of one forward pass at most (whole sequences; a longer sequence has a pass of its
/// own): bounds the buffers each thread keeps (about 15 MB for all-MiniLM-L6-v2).
const PASS_TOKENS: usize = 1024;

fn spec() -> Spec {
    Spec::stage()
        .required("source", Kind::String)
        .optional("dest", Kind::String)
        .required("model", Kind::String)
        .optional("batchSize", Kind::Integer)
        .optional("normalize", Kind::Bool)
}

/// A model folder loaded: tokenizer and encoder.
pub struct Embedder {
    pub model: BertModel,
    tokenizer: TextTokenizer,
}

impl Embedder {
    /// Loads a model folder (model.safetensors + tokenizer.json, + config.json).
    pub fn load(folder: &Path) -> Result<Self, String> {
        if !folder.is_dir() {
            return Err(format!("{} is not a folder", folder.display()));
        }
        let model = BertModel::load(folder)?;
        let max_tokens = max_seq_length(folder)?
            .unwrap_or(model.config.max_positions)
            .min(model.config.max_positions);
        let tokenizer = TextTokenizer::load(folder, max_tokens)?;
        Ok(Embedder { model, tokenizer })
    }

    /// The vector length.
    pub fn dimensions(&self) -> usize {
        self.model.config.hidden_size
    }

    /// The longest sequence embedded, in tokens; longer texts are truncated.
    pub fn max_tokens(&self) -> usize {
        self.tokenizer.max_tokens
    }

    /// Embeds texts (one vector each, in order), in length-sorted groups.
    pub fn embed(&self, texts: &[&str], normalize: bool) -> Result<Vec<Vec<f32>>, String> {
        let sequences = texts
            .iter()
            .map(|t| self.tokenizer.encode(t).map(|(s, _)| s))
            .collect::<Result<Vec<_>, _>>()?;
        self.embed_sequences(&sequences, normalize)
    }

    /// Embeds sequences in passes of up to `PASS_TOKENS` tokens, run on rayon's threads
    /// (`RAYON_NUM_THREADS`) when there are several: each pass is one thread's work, its
    /// products single-threaded, so threads never wait on each other inside a pass.
    fn embed_sequences(
        &self,
        sequences: &[Sequence],
        normalize: bool,
    ) -> Result<Vec<Vec<f32>>, String> {
        use rayon::prelude::*;
        let threads = rayon::current_num_threads().max(1);
        let total: usize = sequences.iter().map(|(ids, _)| ids.len()).sum();
        // Enough passes to give every thread work, none over PASS_TOKENS.
        let target = total.div_ceil(threads).clamp(1, PASS_TOKENS);
        let mut passes = Vec::new();
        let (mut start, mut tokens) = (0, 0);
        for (i, (ids, _)) in sequences.iter().enumerate() {
            if i > start && tokens + ids.len() > target {
                passes.push(start..i);
                (start, tokens) = (i, 0);
            }
            tokens += ids.len();
        }
        if start < sequences.len() {
            passes.push(start..sequences.len());
        }
        let run = |r: &std::ops::Range<usize>| self.model.embed(&sequences[r.clone()], normalize);
        let results: Vec<Result<Vec<Vec<f32>>, String>> = if threads > 1 && passes.len() > 1 {
            passes.par_iter().map(run).collect()
        } else {
            passes.iter().map(run).collect()
        };
        let mut out = Vec::with_capacity(sequences.len());
        for r in results {
            out.extend(r?);
        }
        Ok(out)
    }
}

/// `max_seq_length` from `sentence_bert_config.json`, when the folder has one.
fn max_seq_length(folder: &Path) -> Result<Option<usize>, String> {
    let path = folder.join("sentence_bert_config.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(json
        .get("max_seq_length")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n >= 2))
}

type Cache = Mutex<HashMap<PathBuf, Weak<Embedder>>>;

/// One loaded model per folder, shared by every stage instance alive.
pub fn shared_embedder(folder: &Path) -> Result<Arc<Embedder>, String> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    if !folder.is_dir() {
        return Err(format!("{} is not a folder", folder.display()));
    }
    let key = std::fs::canonicalize(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    // Held while loading, so concurrent workers load a model once.
    let mut map = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(existing) = map.get(&key).and_then(Weak::upgrade) {
        return Ok(existing);
    }
    let embedder = Arc::new(Embedder::load(&key)?);
    map.retain(|_, w| w.strong_count() > 0);
    map.insert(key, Arc::downgrade(&embedder));
    Ok(embedder)
}

/// Like `shared_embedder`, and keeps the model of the latest call loaded until another folder is
/// asked for: for `lucille.embed` and `lucille search --near`, which embed a few texts per
/// call (a notebook cell, a query) and hold no stage that would keep the model alive; loading
/// it anew each call cost ~100 ms.
pub fn kept_embedder(folder: &Path) -> Result<Arc<Embedder>, String> {
    static LATEST: Mutex<Option<Arc<Embedder>>> = Mutex::new(None);
    let embedder = shared_embedder(folder)?;
    let mut latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    *latest = Some(Arc::clone(&embedder));
    Ok(embedder)
}

struct Embed {
    source: String,
    dest: String,
    batch_size: usize,
    normalize: bool,
    embedder: Arc<Embedder>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigError> {
    let source = config.require_string("source")?;
    let dest = config
        .string("dest")?
        .unwrap_or_else(|| "embedding".to_string());
    if dest.is_empty() || crate::document::is_reserved(&dest) {
        return Err(config.error(
            "dest",
            format!("{dest:?} cannot be written: it is reserved or empty"),
        ));
    }
    let batch_size = match config.i64("batchSize")? {
        None => 32,
        Some(n) => usize::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| config.error("batchSize", "must be a positive integer"))?,
    };
    let folder = config.require_string("model")?;
    let resolved = config.resolve_path(&folder);
    let embedder = shared_embedder(&resolved).map_err(|e| {
        config.error(
            "model",
            format!(
                "cannot load the model folder {folder:?}: {e} (it needs model.safetensors and \
                 tokenizer.json, and config.json for the sizes)"
            ),
        )
    })?;
    Ok(Box::new(Embed {
        source,
        dest,
        batch_size,
        normalize: config.bool_or("normalize", true)?,
        embedder,
    }))
}

impl Embed {
    /// The text to embed, or None when the document has none.
    fn text(&self, doc: &Document) -> Result<Option<String>, StageFailure> {
        let values = doc.get_string_list(&self.source)?;
        Ok(if values.is_empty() {
            None
        } else {
            Some(values.join("\n"))
        })
    }
}

impl Stage for Embed {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        self.process_batch(std::slice::from_mut(doc))
            .pop()
            .unwrap_or(Ok(None))
    }

    fn batch_size(&self) -> usize {
        self.batch_size
    }

    fn process_batch(&mut self, docs: &mut [Document]) -> Vec<StageResult> {
        let mut results: Vec<StageResult> = (0..docs.len()).map(|_| Ok(None)).collect();
        // The documents with text, and their token sequences, in the same order.
        let mut waiting: Vec<usize> = Vec::new();
        let mut sequences: Vec<Sequence> = Vec::new();
        for (i, doc) in docs.iter().enumerate() {
            let text = match self.text(doc) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(e) => {
                    results[i] = Err(e);
                    continue;
                }
            };
            match self.embedder.tokenizer.encode(&text) {
                Ok((seq, truncated)) => {
                    if truncated {
                        tracing::debug!(
                            doc_id = doc.id(),
                            field = %self.source,
                            max_tokens = self.embedder.max_tokens(),
                            "Embed: text truncated to the model's maximum sequence length"
                        );
                    }
                    waiting.push(i);
                    sequences.push(seq);
                }
                Err(e) => results[i] = Err(StageFailure::msg(format!("{}: {e}", self.source))),
            }
        }
        match self.embedder.embed_sequences(&sequences, self.normalize) {
            Ok(vectors) => {
                for (&i, vector) in waiting.iter().zip(vectors) {
                    if let Err(e) = docs[i].set_vector(&self.dest, &vector) {
                        results[i] = Err(e.into());
                    }
                }
            }
            Err(e) => {
                for &i in &waiting {
                    results[i] = Err(StageFailure::msg(format!("embedding failed: {e}")));
                }
            }
        }
        results
    }
}

#[cfg(test)]
mod tests;
