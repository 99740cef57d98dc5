//! The BERT encoder of a sentence-embedding model, run on the CPU with candle: weights read
//! from `model.safetensors`, sizes from `config.json` (or, without one, from the weights'
//! shapes), the forward pass of a BERT encoder (word + position + token-type embeddings,
//! post-norm transformer layers with erf GELU; the fused kernels are in `kernels.rs`), then masked
//! mean pooling and, optionally, L2
//! normalisation, as sentence-transformers does for all-MiniLM-L6-v2 and its family.

use std::collections::HashMap;
use std::path::Path;

use candle_core::{DType, Device, Tensor, D};
use candle_nn::{Embedding, LayerNorm, Module};

use super::kernels::{Dense, Norm};

/// Sizes of the encoder.
#[derive(Debug, Clone, PartialEq)]
pub struct BertConfig {
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub max_positions: usize,
    pub layer_norm_eps: f64,
}

impl BertConfig {
    /// Reads `config.json` when `text` is given; otherwise infers the sizes from the weights:
    /// hidden size and positions from the embedding tables, layers by counting them, and heads
    /// as hidden size / 64 (the BERT convention; a `config.json` states it exactly).
    fn read(text: Option<&str>, weights: &HashMap<String, Tensor>) -> Result<Self, String> {
        let table = |name: &str| -> Result<(usize, usize), String> {
            weights
                .get(name)
                .ok_or_else(|| format!("the weights have no {name:?}"))?
                .dims2()
                .map_err(|e| format!("{name}: {e}"))
        };
        let (max_positions, hidden_from_weights) = table("embeddings.position_embeddings.weight")?;
        let layers_from_weights = (0..)
            .take_while(|i| {
                weights.contains_key(&format!("encoder.layer.{i}.attention.self.query.weight"))
            })
            .count();
        let config = match text {
            Some(text) => {
                let json: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| format!("config.json is not JSON: {e}"))?;
                let int = |key: &str| -> Result<usize, String> {
                    json.get(key)
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|v| usize::try_from(v).ok())
                        .ok_or_else(|| format!("config.json has no positive integer {key:?}"))
                };
                if let Some(act) = json.get("hidden_act").and_then(|v| v.as_str()) {
                    if act != "gelu" {
                        return Err(format!(
                            "config.json: hidden_act {act:?} is not supported (only \"gelu\")"
                        ));
                    }
                }
                BertConfig {
                    hidden_size: int("hidden_size")?,
                    num_layers: int("num_hidden_layers")?,
                    num_heads: int("num_attention_heads")?,
                    max_positions: int("max_position_embeddings")?.min(max_positions),
                    layer_norm_eps: json
                        .get("layer_norm_eps")
                        .and_then(serde_json::Value::as_f64)
                        .unwrap_or(1e-12),
                }
            }
            None => BertConfig {
                hidden_size: hidden_from_weights,
                num_layers: layers_from_weights,
                num_heads: (hidden_from_weights / 64).max(1),
                max_positions,
                layer_norm_eps: 1e-12,
            },
        };
        if config.hidden_size != hidden_from_weights {
            return Err(format!(
                "config.json says hidden_size {} but the weights have {hidden_from_weights}",
                config.hidden_size
            ));
        }
        if config.num_layers == 0 || config.num_layers > layers_from_weights {
            return Err(format!(
                "config.json says {} layers but the weights have {layers_from_weights}",
                config.num_layers
            ));
        }
        if config.num_heads == 0 || config.hidden_size % config.num_heads != 0 {
            return Err(format!(
                "hidden size {} is not divisible into {} attention heads",
                config.hidden_size, config.num_heads
            ));
        }
        Ok(config)
    }
}

/// One transformer layer. The query, key and value projections are one dense layer of
/// `3 * hidden` outputs (one matrix product), with the query rows pre-scaled by
/// 1/sqrt(head size); each LayerNorm is fused with the bias and residual before it.
struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// A loaded encoder; shared (read-only) by every worker's stage instance.
pub struct BertModel {
    pub config: BertConfig,
    word: Embedding,
    position: Embedding,
    token_type: Option<Embedding>,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    device: Device,
}

/// Candle errors as text (the stage reports them with the document id).
fn err(e: candle_core::Error) -> String {
    e.to_string()
}

impl BertModel {
    /// Loads `model.safetensors` (and `config.json` when present) from `folder`.
    pub fn load(folder: &Path) -> Result<Self, String> {
        let device = Device::Cpu;
        let weights_path = folder.join("model.safetensors");
        if !weights_path.is_file() {
            return Err(format!("{} does not exist", weights_path.display()));
        }
        let raw = candle_core::safetensors::load(&weights_path, &device)
            .map_err(|e| format!("{}: {e}", weights_path.display()))?;
        // Some exports prefix every name with the architecture ("bert.").
        let mut weights = HashMap::with_capacity(raw.len());
        for (name, tensor) in raw {
            let name = name
                .strip_prefix("bert.")
                .map(str::to_string)
                .unwrap_or(name);
            let tensor = tensor.to_dtype(DType::F32).map_err(err)?;
            weights.insert(name, tensor);
        }
        let config_path = folder.join("config.json");
        let config_text = if config_path.is_file() {
            Some(
                std::fs::read_to_string(&config_path)
                    .map_err(|e| format!("{}: {e}", config_path.display()))?,
            )
        } else {
            None
        };
        let config = BertConfig::read(config_text.as_deref(), &weights)?;
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let get = |name: &str| -> Result<Tensor, String> {
            weights
                .get(name)
                .cloned()
                .ok_or_else(|| format!("the weights have no {name:?}"))
        };
        let dense = |prefix: &str| -> Result<Dense, String> {
            Dense::new(
                &get(&format!("{prefix}.weight"))?,
                get(&format!("{prefix}.bias"))?,
            )
            .map_err(err)
        };
        // Old checkpoints name the LayerNorm parameters gamma / beta.
        let norm_params = |prefix: &str| -> Result<(Tensor, Tensor), String> {
            let w =
                get(&format!("{prefix}.weight")).or_else(|_| get(&format!("{prefix}.gamma")))?;
            let b = get(&format!("{prefix}.bias")).or_else(|_| get(&format!("{prefix}.beta")))?;
            Ok((w, b))
        };
        let norm = |prefix: &str| -> Result<LayerNorm, String> {
            let (w, b) = norm_params(prefix)?;
            Ok(LayerNorm::new(w, b, eps))
        };
        let fused_norm = |after: &Dense, prefix: &str| -> Result<Norm, String> {
            let (w, b) = norm_params(prefix)?;
            Norm::new(after, &w, &b, eps as f32).map_err(err)
        };
        let scale = 1.0 / ((hidden / config.num_heads) as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_layers);
        for i in 0..config.num_layers {
            let p = format!("encoder.layer.{i}");
            let part = |name: &str, what: &str| get(&format!("{p}.attention.self.{name}.{what}"));
            let qkv_weight = Tensor::cat(
                &[
                    (part("query", "weight")? * scale).map_err(err)?,
                    part("key", "weight")?,
                    part("value", "weight")?,
                ],
                0,
            )
            .map_err(err)?;
            let qkv_bias = Tensor::cat(
                &[
                    (part("query", "bias")? * scale).map_err(err)?,
                    part("key", "bias")?,
                    part("value", "bias")?,
                ],
                0,
            )
            .map_err(err)?;
            let attention_out = dense(&format!("{p}.attention.output.dense"))?;
            let output = dense(&format!("{p}.output.dense"))?;
            layers.push(Layer {
                qkv: Dense::new(&qkv_weight, qkv_bias).map_err(err)?,
                attention_norm: fused_norm(
                    &attention_out,
                    &format!("{p}.attention.output.LayerNorm"),
                )?,
                attention_out,
                intermediate: dense(&format!("{p}.intermediate.dense"))?,
                output_norm: fused_norm(&output, &format!("{p}.output.LayerNorm"))?,
                output,
            });
        }
        Ok(BertModel {
            word: Embedding::new(get("embeddings.word_embeddings.weight")?, hidden),
            position: Embedding::new(get("embeddings.position_embeddings.weight")?, hidden),
            token_type: get("embeddings.token_type_embeddings.weight")
                .ok()
                .map(|t| Embedding::new(t, hidden)),
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            config,
            device,
        })
    }

    /// Embeds a batch of token sequences (each at most `max_positions` long): one pooled vector
    /// per sequence, L2-normalised when `normalize`.
    pub fn embed(
        &self,
        sequences: &[(Vec<u32>, Vec<u32>)],
        normalize: bool,
    ) -> Result<Vec<Vec<f32>>, String> {
        if sequences.is_empty() {
            return Ok(Vec::new());
        }
        let batch = sequences.len();
        let len = sequences
            .iter()
            .map(|(ids, _)| ids.len())
            .max()
            .unwrap_or(0)
            .max(1);
        if len > self.config.max_positions {
            return Err(format!(
                "a sequence of {len} tokens is longer than the model's {} positions",
                self.config.max_positions
            ));
        }
        let mut ids = vec![0u32; batch * len];
        let mut types = vec![0u32; batch * len];
        let mut mask = vec![0f32; batch * len];
        for (row, (seq_ids, seq_types)) in sequences.iter().enumerate() {
            let start = row * len;
            ids[start..start + seq_ids.len()].copy_from_slice(seq_ids);
            for (j, t) in seq_types.iter().enumerate().take(seq_ids.len()) {
                types[start + j] = *t;
            }
            for m in &mut mask[start..start + seq_ids.len()] {
                *m = 1.0;
            }
        }
        let d = &self.device;
        let ids = Tensor::from_vec(ids, (batch, len), d).map_err(err)?;
        let types = Tensor::from_vec(types, (batch, len), d).map_err(err)?;
        let mask = Tensor::from_vec(mask, (batch, len), d).map_err(err)?;
        let pooled = self.forward(&ids, &types, &mask).map_err(err)?;
        let pooled = if normalize {
            let norm = pooled
                .sqr()
                .and_then(|t| t.sum_keepdim(1))
                .and_then(|t| t.sqrt())
                .and_then(|t| t.clamp(1e-12f32, f32::MAX))
                .map_err(err)?;
            pooled.broadcast_div(&norm).map_err(err)?
        } else {
            pooled
        };
        pooled.to_vec2::<f32>().map_err(err)
    }

    /// The encoder and masked mean pooling: `(batch, hidden)`. Tokens are kept as one
    /// `(batch * len, hidden)` matrix between the attention steps, so every dense layer is one
    /// large matrix product rather than one per sequence.
    fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, len) = ids.dims2()?;
        let hidden = self.config.hidden_size;
        let positions = Tensor::arange(0u32, len as u32, &self.device)?;
        let mut x = self
            .word
            .forward(ids)?
            .broadcast_add(&self.position.forward(&positions)?)?;
        if let Some(token_type) = &self.token_type {
            x = x.add(&token_type.forward(types)?)?;
        }
        let mut x = self
            .embedding_norm
            .forward(&x.reshape((batch * len, hidden))?)?;
        // 0 where a token is real, a large negative number on padding: added to the scores,
        // only when the batch has padding.
        let padded = len > 1 && mask.min_all()?.to_scalar::<f32>()? < 0.5;
        let bias = if padded {
            Some(((mask - 1.0)? * 1e9)?.reshape((batch, 1, 1, len))?)
        } else {
            None
        };
        let heads = self.config.num_heads;
        let head_dim = hidden / heads;
        for layer in &self.layers {
            // (batch * len, 3 * hidden) -> (3, batch, heads, len, head_dim)
            let qkv = layer
                .qkv
                .forward(&x)?
                .reshape((batch, len, 3, heads, head_dim))?
                .permute((2, 0, 3, 1, 4))?
                .contiguous()?;
            let (q, k, v) = (qkv.get(0)?, qkv.get(1)?, qkv.get(2)?);
            let mut scores = q.matmul(&k.t()?)?;
            if let Some(bias) = &bias {
                scores = scores.broadcast_add(bias)?;
            }
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs
                .matmul(&v)?
                .transpose(1, 2)?
                .contiguous()?
                .reshape((batch * len, hidden))?;
            let attended =
                layer
                    .attention_out
                    .forward_add_norm(&context, &x, &layer.attention_norm)?;
            let inner = layer.intermediate.forward_gelu(&attended)?;
            x = layer
                .output
                .forward_add_norm(&inner, &attended, &layer.output_norm)?;
        }
        let x = x.reshape((batch, len, hidden))?;
        let mask3 = mask.unsqueeze(D::Minus1)?;
        let summed = x.broadcast_mul(&mask3)?.sum(1)?;
        let counts = mask.sum_keepdim(1)?.clamp(1e-9f32, f32::MAX)?;
        summed.broadcast_div(&counts)
    }
}
