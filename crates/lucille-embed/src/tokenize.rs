//! The model folder's `tokenizer.json` (HuggingFace `tokenizers`), set to truncate to the
//! model's maximum sequence length and not to pad (the batch pads itself to its longest
//! sequence).

use std::path::Path;

use tokenizers::{Tokenizer, TruncationParams};

/// A sequence ready for the encoder: token ids and token-type ids.
pub type Sequence = (Vec<u32>, Vec<u32>);

pub struct TextTokenizer {
    inner: Tokenizer,
    pub max_tokens: usize,
}

impl TextTokenizer {
    /// Loads `tokenizer.json` from `folder`; sequences are cut to `max_tokens` tokens (special
    /// tokens included).
    pub fn load(folder: &Path, max_tokens: usize) -> Result<Self, String> {
        let path = folder.join("tokenizer.json");
        if !path.is_file() {
            return Err(format!("{} does not exist", path.display()));
        }
        let mut inner =
            Tokenizer::from_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        inner.with_padding(None);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(TextTokenizer { inner, max_tokens })
    }

    /// Tokenizes one text; the flag says whether it was truncated.
    pub fn encode(&self, text: &str) -> Result<(Sequence, bool), String> {
        let encoding = self
            .inner
            .encode(text, true)
            .map_err(|e| format!("tokenizer: {e}"))?;
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
