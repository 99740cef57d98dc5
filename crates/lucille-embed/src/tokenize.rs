//! The model folder's `tokenizer.json` (HuggingFace `tokenizers`), set to truncate to the
//! model's maximum sequence length and not to pad (the batch pads itself to its longest
//! sequence).

use std::path::{Path, PathBuf};

use tokenizers::{Tokenizer, TruncationParams};

/// Why the model folder's `tokenizer.json` cannot be loaded, or a text not tokenized.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The folder has no `tokenizer.json`.
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// `tokenizer.json` cannot be read, parsed or set to truncate.
    #[error("{}: {source}", .path.display())]
    Load {
        path: PathBuf,
        #[source]
        source: tokenizers::Error,
    },
    /// A text cannot be tokenized.
    #[error("tokenizer: {0}")]
    Encode(#[source] tokenizers::Error),
}

/// A sequence ready for the encoder: token ids and token-type ids.
pub type Sequence = (Vec<u32>, Vec<u32>);

pub struct TextTokenizer {
    inner: Tokenizer,
    pub max_tokens: usize,
}

impl TextTokenizer {
    /// Loads `tokenizer.json` from `folder`; sequences are cut to `max_tokens` tokens (special
    /// tokens included).
    pub fn load(folder: &Path, max_tokens: usize) -> Result<Self, TokenizerError> {
        let path = folder.join("tokenizer.json");
        if !path.is_file() {
            return Err(TokenizerError::Missing(path));
        }
        let load_error = |source| TokenizerError::Load {
            path: path.clone(),
            source,
        };
        let mut inner = Tokenizer::from_file(&path).map_err(load_error)?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(load_error)?;
        Ok(TextTokenizer { inner, max_tokens })
    }

    /// Tokenizes one text; the flag says whether it was truncated.
    pub fn encode(&self, text: &str) -> Result<(Sequence, bool), TokenizerError> {
        let encoding = self
            .inner
            .encode(text, true)
            .map_err(TokenizerError::Encode)?;
        let truncated = !encoding.get_overflowing().is_empty();
        Ok((
            (
                encoding.get_ids().to_vec(),
                encoding.get_type_ids().to_vec(),
            ),
            truncated,
        ))
    }
}
