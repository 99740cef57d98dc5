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
//! (the `lucille-embed` crate); no Python lock is held.
//!
//! `JlamaEmbed` (Lucille's lucille-jlama plugin stage, `jlama_embed`) is this stage under
//! Lucille's keys.

pub mod jlama_embed;

use std::path::Path;
use std::sync::Arc;

use lucille_embed::{shared_embedder, Embedder, Sequence};

use super::field_util::check_writable;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Embed",
    spec: EmbedOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Sentence embeddings computed in-process from a local model folder (BERT, mean pooled,
/// L2-normalised), stored on the document as float32 numbers.
#[derive(Options)]
#[options(base = Spec::stage())]
struct EmbedOptions {
    /// The field whose text is embedded (several values are joined with a line break; a
    /// document without it passes unchanged).
    source: String,
    /// The field the vector is written to.
    #[option(default = "embedding")]
    dest: String,
    /// The model folder (model.safetensors, tokenizer.json, config.json), resolved like every
    /// input path.
    model: String,
    /// Documents embedded in one forward pass.
    #[option(default = 32, min = 1)]
    batch_size: usize,
    /// false keeps the raw mean-pooled vector (not L2-normalised).
    #[option(default = true)]
    normalize: bool,
}

struct Embed {
    source: String,
    dest: String,
    batch_size: usize,
    normalize: bool,
    text_of: TextOf,
    embedder: Arc<Embedder>,
}

/// Which text of `source` is embedded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextOf {
    /// Every value, joined with a line break (Embed).
    AllValues,
    /// The first value, as Lucille's `getString` reads it; a blank one is not embedded
    /// (JlamaEmbed, as Lucille's).
    FirstValue,
}

/// The shared model of `folder` (resolved already), or the config error at `key` (`shown` is
/// the folder as the config wrote it).
fn load_model(
    config: &ComponentConfig,
    key: &str,
    shown: &str,
    folder: &Path,
) -> Result<Arc<Embedder>, crate::config::ConfigError> {
    shared_embedder(folder).map_err(|e| {
        config.error(
            key,
            format!(
                "cannot load the model folder {shown:?}: {e} (it needs model.safetensors and \
                 tokenizer.json, and config.json for the sizes)"
            ),
        )
    })
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = EmbedOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_writable(config, "dest", &o.dest) {
        errors.push(e);
    }
    let resolved = config.resolve_path(&o.model);
    let embedder = load_model(config, "model", &o.model, &resolved)
        .map_err(|e| errors.push(e))
        .ok();
    match embedder {
        Some(embedder) if errors.is_empty() => Ok(Box::new(Embed {
            source: o.source,
            dest: o.dest,
            batch_size: o.batch_size,
            normalize: o.normalize,
            text_of: TextOf::AllValues,
            embedder,
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

impl Embed {
    /// The text to embed, or None when the document has none.
    fn text(&self, doc: &Document) -> Result<Option<String>, StageFailure> {
        if self.text_of == TextOf::FirstValue {
            // As Lucille's getString: a value that is no text (an object) reads as blank.
            return Ok(doc
                .get_string(&self.source)
                .ok()
                .flatten()
                .filter(|t| !t.trim().is_empty()));
        }
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
            match self.embedder.tokenize(&text) {
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
