//! Sentence embeddings computed in-process from a local model folder, on the CPU, with no
//! network and no Python: a text is tokenized with the folder's `tokenizer.json`, run through
//! the BERT encoder in `model.safetensors` (`config.json` gives its sizes; without it they are
//! read from the weights' shapes), mean pooled over the real tokens and L2-normalised, as
//! sentence-transformers does for all-MiniLM-L6-v2 and models like it.
//!
//! Texts longer than the model's maximum sequence length are truncated to it (`max_seq_length`
//! of `sentence_bert_config.json` when the folder has one, otherwise the model's positions).
//! Sequences are packed one after another (no padding) into forward passes, spread over
//! rayon's threads (`model.rs`; the matrix products in `kernels.rs`). The Embed stage, the
//! Python `lucille.embed` and vector search all use this crate; it knows nothing of documents.

mod kernels;
mod model;
mod tokenize;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};

pub use model::{BertConfig, BertModel};
use model::{ComputeError, ModelError};

/// Why a model could not be loaded or a text embedded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmbedError {
    /// The model folder cannot be used: missing files, bad JSON, weights of the wrong shape.
    #[error("{0}")]
    Model(String),
    /// A text cannot be tokenized.
    #[error("{0}")]
    Tokenize(String),
    /// A forward pass failed (a sequence longer than the model's positions, a kernel error).
    #[error("{0}")]
    Compute(String),
}

impl From<ModelError> for EmbedError {
    fn from(e: ModelError) -> Self {
        EmbedError::Model(e.to_string())
    }
}

impl From<ComputeError> for EmbedError {
    fn from(e: ComputeError) -> Self {
        EmbedError::Compute(e.to_string())
    }
}

pub use tokenize::Sequence;
use tokenize::TextTokenizer;

/// Tokens of one forward pass at most (whole sequences; a longer sequence has a pass of its
/// own): bounds the buffers each thread keeps (about 15 MB for all-MiniLM-L6-v2).
const PASS_TOKENS: usize = 1024;

/// A model folder loaded: tokenizer and encoder.
pub struct Embedder {
    pub model: BertModel,
    tokenizer: TextTokenizer,
}

impl Embedder {
    /// Loads a model folder (model.safetensors + tokenizer.json, + config.json).
    pub fn load(folder: &Path) -> Result<Self, EmbedError> {
        if !folder.is_dir() {
            return Err(EmbedError::Model(format!(
                "{} is not a folder",
                folder.display()
            )));
        }
        let model = BertModel::load(folder)?;
        let max_tokens = max_seq_length(folder)?
            .unwrap_or(model.config.max_positions)
            .min(model.config.max_positions);
        let tokenizer = TextTokenizer::load(folder, max_tokens)
            .map_err(|e| EmbedError::Model(e.to_string()))?;
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

    /// A text's token sequence, and whether it was truncated to `max_tokens`.
    pub fn tokenize(&self, text: &str) -> Result<(Sequence, bool), EmbedError> {
        self.tokenizer
            .encode(text)
            .map_err(|e| EmbedError::Tokenize(e.to_string()))
    }

    /// Embeds texts (one vector each, in order), in length-sorted groups.
    pub fn embed(&self, texts: &[&str], normalize: bool) -> Result<Vec<Vec<f32>>, EmbedError> {
        let sequences = texts
            .iter()
            .map(|t| self.tokenize(t).map(|(s, _)| s))
            .collect::<Result<Vec<_>, _>>()?;
        self.embed_sequences(&sequences, normalize)
    }

    /// Embeds sequences in passes of up to `PASS_TOKENS` tokens, run on rayon's threads
    /// (`RAYON_NUM_THREADS`) when there are several: each pass is one thread's work, its
    /// products single-threaded, so threads never wait on each other inside a pass.
    pub fn embed_sequences(
        &self,
        sequences: &[Sequence],
        normalize: bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
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
        let results: Vec<Result<Vec<Vec<f32>>, EmbedError>> = if threads > 1 && passes.len() > 1 {
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
fn max_seq_length(folder: &Path) -> Result<Option<usize>, ModelError> {
    let path = folder.join("sentence_bert_config.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(source) => return Err(ModelError::Read { path, source }),
    };
    let json: serde_json::Value = match serde_json::from_str(&text) {
        Ok(json) => json,
        Err(source) => return Err(ModelError::Json { path, source }),
    };
    Ok(json
        .get("max_seq_length")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| usize::try_from(n).ok())
        .filter(|n| *n >= 2))
}

type Cache = Mutex<HashMap<PathBuf, Weak<Embedder>>>;

/// One loaded model per folder, shared by every stage instance alive.
pub fn shared_embedder(folder: &Path) -> Result<Arc<Embedder>, EmbedError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    if !folder.is_dir() {
        return Err(EmbedError::Model(format!(
            "{} is not a folder",
            folder.display()
        )));
    }
    let key = std::fs::canonicalize(folder)
        .map_err(|e| EmbedError::Model(format!("{}: {e}", folder.display())))?;
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
pub fn kept_embedder(folder: &Path) -> Result<Arc<Embedder>, EmbedError> {
    static LATEST: Mutex<Option<Arc<Embedder>>> = Mutex::new(None);
    let embedder = shared_embedder(folder)?;
    let mut latest = LATEST.lock().unwrap_or_else(|e| e.into_inner());
    *latest = Some(Arc::clone(&embedder));
    Ok(embedder)
}
