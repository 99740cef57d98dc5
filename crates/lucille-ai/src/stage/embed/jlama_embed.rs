//! JlamaEmbed (Lucille's lucille-jlama plugin stage, `com.kmwllc.lucille.jlama.stage.JlamaEmbed`)
//! on the Embed stage's engine: the text of `source` is embedded in-process with a local BERT
//! model folder (model.safetensors, tokenizer.json, config.json) and the vector stored in `dest`
//! as float32 numbers, exactly as the Embed stage stores it for the same folder and text.
//!
//! Keys (Lucille's): `source` (required; its first value is the text, and a document without it
//! or with a blank one passes unchanged, as Lucille's), `dest` (default `embeddings`), `model`
//! (required) and `pathToStoreModel` (optional here; required in Lucille). Lucille downloads
//! `model`, a Hugging Face name `owner/name`, into `pathToStoreModel/owner_name` (`na_name`
//! without an owner) and loads it from there. Nothing is downloaded here: `model` is either a
//! model folder (resolved like every input path), or a Hugging Face name whose folder is
//! already where Jlama keeps it (`pathToStoreModel/owner_name`, e.g. left by a Lucille run or
//! written by `huggingface-cli download owner/name --local-dir pathToStoreModel/owner_name`).
//! Any other `model` is a config error at validation that says how to download it. New here:
//! `batchSize` (documents embedded in one forward pass, default 32), as Embed.
//!
//! Lucille keys that cannot be honoured are rejected, never ignored: `workingMemoryType` and
//! `workingQuantizationType` choose Jlama's in-memory number types (F16, BF16, I8, Q4...); the
//! engine here computes in float32 without quantisation, so only `F32` (or a blank value, or
//! leaving the key out) is accepted. `deleteModelAfter: true` (delete the downloaded model when
//! the stage stops) is rejected: the folder is shared by every worker and the Embed stage and
//! is never deleted here; `false` is accepted.
//!
//! Where the vectors differ from Lucille's: Jlama's `PoolingType.MODEL` runs the model's BERT
//! pooler (a dense layer and tanh over one token's state, not normalised); here, as the Embed
//! stage and sentence-transformers, the token states are mean pooled and L2-normalised, the
//! vectors the sentence-embedding models (all-MiniLM-L6-v2 and the like) are trained to give.
//! Lucille fails a text longer than the model's context; here it is truncated to it, as Embed
//! does.

use std::path::PathBuf;

use super::{load_model, Embed, TextOf};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::stage::field_util::check_writable;
use crate::stage::{Stage, StageDescriptor};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "JlamaEmbed",
    spec: JlamaEmbedOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Lucille's JlamaEmbed on the Embed stage's engine: sentence embeddings from a local model
/// folder (BERT, mean pooled, L2-normalised), stored on the document as float32 numbers.
#[derive(Options)]
#[options(base = Spec::stage())]
struct JlamaEmbedOptions {
    /// The field whose text (its first value) is embedded; a document without it, or with a
    /// blank text, passes unchanged.
    source: String,
    /// The field the vector is written to.
    #[option(default = "embeddings")]
    dest: String,
    /// A model folder (model.safetensors, tokenizer.json, config.json), or a Hugging Face name
    /// (owner/name) already in pathToStoreModel as owner_name; nothing is downloaded.
    model: String,
    /// Where Jlama keeps downloaded models: a Hugging Face name in model is looked up here as
    /// owner_name (na_name without an owner).
    path_to_store_model: Option<String>,
    /// Jlama's working memory type: only F32 (the engine computes in float32).
    working_memory_type: Option<String>,
    /// Jlama's quantisation type: only F32 (the engine does not quantise).
    working_quantization_type: Option<String>,
    /// Only false: the model folder is never deleted here.
    #[option(default = false)]
    delete_model_after: bool,
    /// Documents embedded in one forward pass.
    #[option(default = 32, min = 1)]
    batch_size: usize,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = JlamaEmbedOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_writable(config, "dest", &o.dest) {
        errors.push(e);
    }
    for (key, value, what) in [
        (
            "workingMemoryType",
            &o.working_memory_type,
            "the engine computes in float32",
        ),
        (
            "workingQuantizationType",
            &o.working_quantization_type,
            "the engine does not quantise",
        ),
    ] {
        if let Some(v) = value {
            let v = v.trim();
            if !v.is_empty() && !v.eq_ignore_ascii_case("F32") {
                errors.push(config.error(
                    key,
                    format!("{v:?} cannot be honoured: {what}; set it to F32 or leave the key out"),
                ));
            }
        }
    }
    if o.delete_model_after {
        errors.push(config.error(
            "deleteModelAfter",
            "true cannot be honoured: the model folder is shared by every worker and never \
             deleted here; set it to false (or leave it out) and remove the folder yourself",
        ));
    }
    let embedder = locate(config, &o.model, o.path_to_store_model.as_deref())
        .and_then(|folder| load_model(config, "model", &o.model, &folder))
        .map_err(|e| errors.push(e))
        .ok();
    match embedder {
        Some(embedder) if errors.is_empty() => Ok(Box::new(Embed {
            source: o.source,
            dest: o.dest,
            batch_size: o.batch_size,
            normalize: true,
            text_of: TextOf::FirstValue,
            embedder,
        })),
        _ => Err(ConfigErrors(errors)),
    }
}

/// A Hugging Face model name, `owner/name` or `name`: its owner (None without one) and name.
fn hugging_face_name(model: &str) -> Option<(Option<&str>, &str)> {
    let valid = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    match model.split_once('/') {
        Some((owner, name)) if valid(owner) && valid(name) => Some((Some(owner), name)),
        None if valid(model) => Some((None, model)),
        _ => None,
    }
}

/// Jlama's folder for a model in its store: `owner_name`, `na_name` without an owner.
fn jlama_folder(owner: Option<&str>, name: &str) -> String {
    format!("{}_{name}", owner.unwrap_or("na"))
}

/// The model folder `model` names: the folder itself, else a Hugging Face name's folder in
/// `store` (Jlama's layout). A name found in neither is a config error at `model` that says
/// how to download it; a path that is no folder goes on to the loader, whose error says so.
fn locate(
    config: &ComponentConfig,
    model: &str,
    store: Option<&str>,
) -> Result<PathBuf, ConfigError> {
    let model = model.trim();
    let direct = config.resolve_path(model);
    if direct.is_dir() {
        return Ok(direct);
    }
    let Some((owner, name)) = hugging_face_name(model) else {
        return Ok(direct);
    };
    let folder = jlama_folder(owner, name);
    let message = match store {
        Some(store) => {
            let stored = config.resolve_path(store).join(&folder);
            if stored.is_dir() {
                return Ok(stored);
            }
            let target = std::path::Path::new(store).join(&folder);
            format!(
                "{model:?} is not a model folder, nor a Hugging Face model in pathToStoreModel \
                 as {:?} (where Jlama keeps it), and Hugging Face models are not downloaded \
                 here: download it with `huggingface-cli download {model} --local-dir {}` \
                 (then it is found there), or set model to a model folder (model.safetensors, \
                 tokenizer.json, config.json)",
                target.display().to_string(),
                target.display()
            )
        }
        None => format!(
            "{model:?} is not a model folder, and Hugging Face models are not downloaded here: \
             download it with `huggingface-cli download {model} --local-dir models/{folder}` \
             and set model to that folder (\"models/{folder}\"; it holds model.safetensors, \
             tokenizer.json, config.json)"
        ),
    };
    Err(config.error("model", message))
}

#[cfg(test)]
mod tests {
    use super::{hugging_face_name, jlama_folder};

    #[test]
    fn hugging_face_names_and_jlama_folders() {
        assert_eq!(
            hugging_face_name("intfloat/e5-small-v2"),
            Some((Some("intfloat"), "e5-small-v2"))
        );
        assert_eq!(
            hugging_face_name("bert.base_x"),
            Some((None, "bert.base_x"))
        );
        for path in ["/models/x", "./x", "a/b/c", "a b", "", "owner/", "../x"] {
            assert_eq!(hugging_face_name(path), None, "{path}");
        }
        assert_eq!(jlama_folder(Some("intfloat"), "e5"), "intfloat_e5");
        assert_eq!(jlama_folder(None, "e5"), "na_e5");
    }
}
