//! The BERT encoder of a sentence-embedding model, run on the CPU: weights read from
//! `model.safetensors` (with candle's loader, any float type), sizes from `config.json` (or,
//! without one, from the weights' shapes), the forward pass of a BERT encoder (word + position +
//! token-type embeddings, post-norm transformer layers with erf GELU), then mean pooling over
//! the tokens and, optionally, L2 normalisation, as sentence-transformers does for
//! all-MiniLM-L6-v2 and its family.
//!
//! The forward pass is written here on `kernels.rs` (the `gemm` crate for the products) rather
//! than with candle's tensors: the sequences of a pass are packed one after another into one
//! matrix of real tokens (no padding rows, no attention mask: attention runs per sequence over
//! its own rows), every buffer is reused from one pass to the next on each thread, and each
//! attention head is read in place from the packed QKV rows. Profiled on candle, a fresh tensor
//! per product (pages zeroed by the kernel) and the head split/merge copies were over a quarter
//! of the time.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use crate::kernels::{
    add_norm, bias_add, bias_gelu, layer_norm, matmul, softmax, Mat, MatmulError,
};
use crate::EmbedError;

/// Why a model folder cannot be used: a missing or unreadable file, bad JSON, weights missing
/// or of the wrong shape, a configuration the encoder does not support.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A file the model needs is not in the folder.
    #[error("{} does not exist", .0.display())]
    Missing(PathBuf),
    /// A file of the folder cannot be read.
    #[error("{}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A JSON file of the folder (`sentence_bert_config.json`) is not JSON.
    #[error("{}: {source}", .path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// `model.safetensors` cannot be loaded.
    #[error("{}: {source}", .path.display())]
    Weights {
        path: PathBuf,
        #[source]
        source: candle_core::Error,
    },
    /// A tensor operation on the weights failed.
    #[error(transparent)]
    Candle(#[from] candle_core::Error),
    /// A tensor operation on the named weight (or layer) failed.
    #[error("{name}: {source}")]
    Tensor {
        name: String,
        #[source]
        source: candle_core::Error,
    },
    /// The weights have no tensor of this name.
    #[error("the weights have no {0:?}")]
    NoTensor(String),
    /// `config.json` is not JSON.
    #[error("config.json is not JSON: {0}")]
    ConfigJson(#[source] serde_json::Error),
    /// `config.json` lacks this key, or its value is not a positive integer.
    #[error("config.json has no positive integer {0:?}")]
    ConfigKey(&'static str),
    /// `config.json` names an activation other than erf GELU.
    #[error("config.json: hidden_act {0:?} is not supported (only \"gelu\")")]
    Activation(String),
    /// `config.json`'s hidden size is not the weights'.
    #[error("config.json says hidden_size {config} but the weights have {weights}")]
    HiddenSize { config: usize, weights: usize },
    /// `config.json` has no layers, or more than the weights.
    #[error("config.json says {config} layers but the weights have {weights}")]
    Layers { config: usize, weights: usize },
    /// The hidden size cannot be split into that many heads.
    #[error("hidden size {hidden} is not divisible into {heads} attention heads")]
    Heads { hidden: usize, heads: usize },
    /// A LayerNorm's parameters are not as wide as the model.
    #[error("{name}: a LayerNorm of {gamma} / {beta} parameters in a model of width {width}")]
    NormWidth {
        name: String,
        gamma: usize,
        beta: usize,
        width: usize,
    },
    /// An embedding table's rows are not as wide as the model.
    #[error("{name} has rows of {rows}, the model's width is {width}")]
    TableWidth {
        name: String,
        rows: usize,
        width: usize,
    },
    /// A dense layer's weight is not of the expected shape.
    #[error("{name} is {outputs}x{inputs}, expected {expected_outputs}x{expected_inputs}")]
    DenseShape {
        name: String,
        outputs: usize,
        inputs: usize,
        expected_outputs: usize,
        expected_inputs: usize,
    },
}

/// Why a forward pass failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComputeError {
    /// A token id, position or token type past the end of its embedding table.
    #[error("{what} {index} is outside the model's table of {rows}")]
    OutsideTable {
        what: &'static str,
        index: usize,
        rows: usize,
    },
    /// A matrix product refused its operands.
    #[error(transparent)]
    Matmul(#[from] MatmulError),
}

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
    fn read(text: Option<&str>, weights: &HashMap<String, Tensor>) -> Result<Self, ModelError> {
        let table = |name: &str| -> Result<(usize, usize), ModelError> {
            weights
                .get(name)
                .ok_or_else(|| ModelError::NoTensor(name.to_string()))?
                .dims2()
                .map_err(|source| ModelError::Tensor {
                    name: name.to_string(),
                    source,
                })
        };
        let (max_positions, hidden_from_weights) = table("embeddings.position_embeddings.weight")?;
        let layers_from_weights = (0..)
            .take_while(|i| {
                weights.contains_key(&format!("encoder.layer.{i}.attention.self.query.weight"))
            })
            .count();
        let config = match text {
            Some(text) => {
                let json: serde_json::Value =
                    serde_json::from_str(text).map_err(ModelError::ConfigJson)?;
                let int = |key: &'static str| -> Result<usize, ModelError> {
                    json.get(key)
                        .and_then(serde_json::Value::as_u64)
                        .and_then(|v| usize::try_from(v).ok())
                        .ok_or(ModelError::ConfigKey(key))
                };
                if let Some(act) = json.get("hidden_act").and_then(|v| v.as_str()) {
                    if act != "gelu" {
                        return Err(ModelError::Activation(act.to_string()));
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
            return Err(ModelError::HiddenSize {
                config: config.hidden_size,
                weights: hidden_from_weights,
            });
        }
        if config.num_layers == 0 || config.num_layers > layers_from_weights {
            return Err(ModelError::Layers {
                config: config.num_layers,
                weights: layers_from_weights,
            });
        }
        if config.num_heads == 0 || config.hidden_size % config.num_heads != 0 {
            return Err(ModelError::Heads {
                hidden: config.hidden_size,
                heads: config.num_heads,
            });
        }
        Ok(config)
    }
}

/// A dense layer: `x . weight^T + bias`, the weight kept transposed (`in x out`, row-major).
struct Dense {
    weight_t: Vec<f32>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl Dense {
    /// From PyTorch's `(out, in)` weight and `(out)` bias.
    fn new(weight: &Tensor, bias: &Tensor) -> candle_core::Result<Self> {
        let (outputs, inputs) = weight.dims2()?;
        let bias = bias.flatten_all()?.to_vec1::<f32>()?;
        if bias.len() != outputs {
            candle_core::bail!("bias of {} for {outputs} outputs", bias.len());
        }
        Ok(Dense {
            weight_t: weight.t()?.contiguous()?.flatten_all()?.to_vec1::<f32>()?,
            bias,
            inputs,
            outputs,
        })
    }

    /// `out (rows x outputs) = x (rows x inputs) . W^T`, bias not added.
    fn product(&self, out: &mut [f32], x: &[f32], rows: usize) -> Result<(), MatmulError> {
        matmul(
            out,
            Mat::rows(0, self.outputs),
            x,
            Mat::rows(0, self.inputs),
            &self.weight_t,
            Mat::rows(0, self.outputs),
            (rows, self.inputs, self.outputs),
        )
    }
}

/// LayerNorm parameters.
struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

impl Norm {
    /// The LayerNorm `name` (named in errors).
    fn new(gamma: &Tensor, beta: &Tensor, width: usize, name: &str) -> Result<Self, ModelError> {
        let values = |t: &Tensor| {
            t.flatten_all()
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|source| ModelError::Tensor {
                    name: name.to_string(),
                    source,
                })
        };
        let gamma = values(gamma)?;
        let beta = values(beta)?;
        if gamma.len() != width || beta.len() != width {
            return Err(ModelError::NormWidth {
                name: name.to_string(),
                gamma: gamma.len(),
                beta: beta.len(),
                width,
            });
        }
        Ok(Norm { gamma, beta })
    }
}

/// One transformer layer. The query, key and value projections are one dense layer of
/// `3 * hidden` outputs (one matrix product), with the query rows pre-scaled by
/// 1/sqrt(head size).
struct Layer {
    qkv: Dense,
    attention_out: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// An embedding table: `rows x width`, row-major.
struct Table {
    data: Vec<f32>,
    rows: usize,
}

impl Table {
    fn new(t: &Tensor, width: usize, name: &str) -> Result<Self, ModelError> {
        let (rows, w) = t.dims2().map_err(|source| ModelError::Tensor {
            name: name.to_string(),
            source,
        })?;
        if w != width {
            return Err(ModelError::TableWidth {
                name: name.to_string(),
                rows: w,
                width,
            });
        }
        let data = t.flatten_all().and_then(|t| t.to_vec1::<f32>())?;
        Ok(Table { data, rows })
    }

    /// Row `i`, or an error naming the table when the id is out of range.
    fn row(&self, i: usize, width: usize, what: &'static str) -> Result<&[f32], ComputeError> {
        if i >= self.rows {
            return Err(ComputeError::OutsideTable {
                what,
                index: i,
                rows: self.rows,
            });
        }
        Ok(&self.data[i * width..(i + 1) * width])
    }
}

/// A loaded encoder; shared (read-only) by every worker's stage instance.
pub struct BertModel {
    pub config: BertConfig,
    word: Table,
    position: Table,
    token_type: Option<Table>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    eps: f32,
}

/// The buffers of one forward pass, kept per thread and reused: grown to the largest pass seen.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    qkv: Vec<f32>,
    context: Vec<f32>,
    attended: Vec<f32>,
    inner: Vec<f32>,
    scores: Vec<f32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// The first `n` values of a reused buffer (grown when shorter).
fn take(buf: &mut Vec<f32>, n: usize) -> &mut [f32] {
    if buf.len() < n {
        buf.resize(n, 0.0);
    }
    &mut buf[..n]
}

impl BertModel {
    /// Loads `model.safetensors` (and `config.json` when present) from `folder`.
    pub fn load(folder: &Path) -> Result<Self, EmbedError> {
        Self::read(folder).map_err(EmbedError::from)
    }

    fn read(folder: &Path) -> Result<Self, ModelError> {
        let device = Device::Cpu;
        let weights_path = folder.join("model.safetensors");
        if !weights_path.is_file() {
            return Err(ModelError::Missing(weights_path));
        }
        let raw = match candle_core::safetensors::load(&weights_path, &device) {
            Ok(raw) => raw,
            Err(source) => {
                return Err(ModelError::Weights {
                    path: weights_path,
                    source,
                })
            }
        };
        // Some exports prefix every name with the architecture ("bert.").
        let mut weights = HashMap::with_capacity(raw.len());
        for (name, tensor) in raw {
            let name = name
                .strip_prefix("bert.")
                .map(str::to_string)
                .unwrap_or(name);
            let tensor = tensor.to_dtype(DType::F32)?;
            weights.insert(name, tensor);
        }
        let config_path = folder.join("config.json");
        let config_text = if config_path.is_file() {
            match std::fs::read_to_string(&config_path) {
                Ok(text) => Some(text),
                Err(source) => {
                    return Err(ModelError::Read {
                        path: config_path,
                        source,
                    })
                }
            }
        } else {
            None
        };
        let config = BertConfig::read(config_text.as_deref(), &weights)?;
        let hidden = config.hidden_size;
        let get = |name: &str| -> Result<Tensor, ModelError> {
            weights
                .get(name)
                .cloned()
                .ok_or_else(|| ModelError::NoTensor(name.to_string()))
        };
        let checked = |d: Dense, name: &str, inputs: usize, outputs: usize| {
            if d.inputs == inputs && d.outputs == outputs {
                Ok(d)
            } else {
                Err(ModelError::DenseShape {
                    name: name.to_string(),
                    outputs: d.outputs,
                    inputs: d.inputs,
                    expected_outputs: outputs,
                    expected_inputs: inputs,
                })
            }
        };
        let dense = |prefix: &str| -> Result<Dense, ModelError> {
            Dense::new(
                &get(&format!("{prefix}.weight"))?,
                &get(&format!("{prefix}.bias"))?,
            )
            .map_err(|source| ModelError::Tensor {
                name: prefix.to_string(),
                source,
            })
        };
        // Old checkpoints name the LayerNorm parameters gamma / beta.
        let norm = |prefix: &str| -> Result<Norm, ModelError> {
            let w =
                get(&format!("{prefix}.weight")).or_else(|_| get(&format!("{prefix}.gamma")))?;
            let b = get(&format!("{prefix}.bias")).or_else(|_| get(&format!("{prefix}.beta")))?;
            Norm::new(&w, &b, hidden, prefix)
        };
        let scale = 1.0 / ((hidden / config.num_heads) as f64).sqrt();
        let mut layers = Vec::with_capacity(config.num_layers);
        for i in 0..config.num_layers {
            let p = format!("encoder.layer.{i}");
            let part = |name: &str, what: &str| get(&format!("{p}.attention.self.{name}.{what}"));
            let qkv_weight = Tensor::cat(
                &[
                    (part("query", "weight")? * scale)?,
                    part("key", "weight")?,
                    part("value", "weight")?,
                ],
                0,
            )?;
            let qkv_bias = Tensor::cat(
                &[
                    (part("query", "bias")? * scale)?,
                    part("key", "bias")?,
                    part("value", "bias")?,
                ],
                0,
            )?;
            let qkv = Dense::new(&qkv_weight, &qkv_bias)?;
            let intermediate = dense(&format!("{p}.intermediate.dense"))?;
            let inner = intermediate.outputs;
            layers.push(Layer {
                qkv: checked(qkv, &format!("{p}.attention.self"), hidden, 3 * hidden)?,
                attention_out: checked(
                    dense(&format!("{p}.attention.output.dense"))?,
                    &format!("{p}.attention.output.dense"),
                    hidden,
                    hidden,
                )?,
                attention_norm: norm(&format!("{p}.attention.output.LayerNorm"))?,
                intermediate: checked(
                    intermediate,
                    &format!("{p}.intermediate.dense"),
                    hidden,
                    inner,
                )?,
                output: checked(
                    dense(&format!("{p}.output.dense"))?,
                    &format!("{p}.output.dense"),
                    inner,
                    hidden,
                )?,
                output_norm: norm(&format!("{p}.output.LayerNorm"))?,
            });
        }
        let table =
            |name: &str| -> Result<Table, ModelError> { Table::new(&get(name)?, hidden, name) };
        Ok(BertModel {
            word: table("embeddings.word_embeddings.weight")?,
            position: table("embeddings.position_embeddings.weight")?,
            token_type: match get("embeddings.token_type_embeddings.weight") {
                Ok(_) => Some(table("embeddings.token_type_embeddings.weight")?),
                Err(_) => None,
            },
            embedding_norm: norm("embeddings.LayerNorm")?,
            layers,
            eps: config.layer_norm_eps as f32,
            config,
        })
    }

    /// Embeds token sequences (each at most `max_positions` long) in one forward pass: one
    /// pooled vector per sequence, L2-normalised when `normalize`. The pass holds every token
    /// of `sequences` at once; callers bound it (the Embed stage packs up to `PASS_TOKENS`).
    pub fn embed(
        &self,
        sequences: &[(Vec<u32>, Vec<u32>)],
        normalize: bool,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if sequences.is_empty() {
            return Ok(Vec::new());
        }
        for (ids, _) in sequences {
            if ids.len() > self.config.max_positions {
                return Err(EmbedError::Compute(format!(
                    "a sequence of {} tokens is longer than the model's {} positions",
                    ids.len(),
                    self.config.max_positions
                )));
            }
        }
        SCRATCH.with(|s| {
            let mut scratch = s.borrow_mut();
            self.forward(sequences, normalize, &mut scratch)
                .map_err(EmbedError::from)
        })
    }

    /// The encoder, mean pooling and normalisation over packed sequences.
    fn forward(
        &self,
        sequences: &[(Vec<u32>, Vec<u32>)],
        normalize: bool,
        s: &mut Scratch,
    ) -> Result<Vec<Vec<f32>>, ComputeError> {
        let h = self.config.hidden_size;
        // An empty sequence (no tokens at all; the tokenizer always adds its special tokens, so
        // only a hand-made one) has no rows and pools to a zero vector.
        let lens: Vec<usize> = sequences.iter().map(|(ids, _)| ids.len()).collect();
        let tokens: usize = lens.iter().sum();
        let x = take(&mut s.x, tokens * h);
        let mut rows = x.chunks_exact_mut(h);
        for (ids, types) in sequences {
            for (t, (&id, out)) in ids.iter().zip(rows.by_ref()).enumerate() {
                out.copy_from_slice(self.word.row(id as usize, h, "token id")?);
                for (o, p) in out.iter_mut().zip(self.position.row(t, h, "position")?) {
                    *o += p;
                }
                if let Some(table) = &self.token_type {
                    let ty = types.get(t).copied().unwrap_or(0) as usize;
                    for (o, p) in out.iter_mut().zip(table.row(ty, h, "token type")?) {
                        *o += p;
                    }
                }
            }
        }
        layer_norm(
            x,
            &self.embedding_norm.gamma,
            &self.embedding_norm.beta,
            self.eps,
        );
        for layer in &self.layers {
            self.layer(layer, &lens, tokens, s)?;
        }
        let x = &s.x[..tokens * h];
        let mut out = Vec::with_capacity(sequences.len());
        let mut start = 0;
        for &len in &lens {
            let mut v = vec![0f32; h];
            for r in start..start + len {
                for (o, a) in v.iter_mut().zip(&x[r * h..(r + 1) * h]) {
                    *o += a;
                }
            }
            let inv = 1.0 / len.max(1) as f32;
            v.iter_mut().for_each(|o| *o *= inv);
            if normalize {
                let norm = v.iter().map(|a| a * a).sum::<f32>().sqrt().max(1e-12);
                v.iter_mut().for_each(|o| *o /= norm);
            }
            out.push(v);
            start += len;
        }
        Ok(out)
    }

    /// One transformer layer over the packed tokens in `s.x` (replaced by the layer's output).
    fn layer(
        &self,
        layer: &Layer,
        lens: &[usize],
        tokens: usize,
        s: &mut Scratch,
    ) -> Result<(), ComputeError> {
        let h = self.config.hidden_size;
        let heads = self.config.num_heads;
        let hd = h / heads;
        let inner_width = layer.intermediate.outputs;
        let x = &s.x[..tokens * h];
        let qkv = take(&mut s.qkv, tokens * 3 * h);
        layer.qkv.product(qkv, x, tokens)?;
        bias_add(qkv, &layer.qkv.bias);
        // Attention, per sequence and head, reading Q, K and V in place from the QKV rows and
        // writing each head's context into its columns of the context rows.
        let context = take(&mut s.context, tokens * h);
        let mut start = 0;
        for &len in lens {
            let scores = take(&mut s.scores, len * len);
            for head in 0..heads {
                let q = Mat {
                    offset: start * 3 * h + head * hd,
                    rs: 3 * h,
                    cs: 1,
                };
                // K transposed: element (i, j) is K[j][i].
                let kt = Mat {
                    offset: start * 3 * h + h + head * hd,
                    rs: 1,
                    cs: 3 * h,
                };
                let v = Mat {
                    offset: start * 3 * h + 2 * h + head * hd,
                    rs: 3 * h,
                    cs: 1,
                };
                matmul(scores, Mat::rows(0, len), qkv, q, qkv, kt, (len, hd, len))?;
                scores.chunks_exact_mut(len).for_each(softmax);
                let out = Mat {
                    offset: start * h + head * hd,
                    rs: h,
                    cs: 1,
                };
                matmul(
                    context,
                    out,
                    scores,
                    Mat::rows(0, len),
                    qkv,
                    v,
                    (len, len, hd),
                )?;
            }
            start += len;
        }
        let attended = take(&mut s.attended, tokens * h);
        layer.attention_out.product(attended, context, tokens)?;
        add_norm(
            attended,
            &layer.attention_out.bias,
            x,
            &layer.attention_norm.gamma,
            &layer.attention_norm.beta,
            self.eps,
        );
        let inner = take(&mut s.inner, tokens * inner_width);
        layer.intermediate.product(inner, attended, tokens)?;
        bias_gelu(inner, &layer.intermediate.bias);
        // The layer's output goes into the context buffer (no longer needed), then becomes x.
        layer.output.product(context, inner, tokens)?;
        add_norm(
            context,
            &layer.output.bias,
            attended,
            &layer.output_norm.gamma,
            &layer.output_norm.beta,
            self.eps,
        );
        std::mem::swap(&mut s.x, &mut s.context);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weights(names: &[(&str, (usize, usize))]) -> HashMap<String, Tensor> {
        names
            .iter()
            .map(|&(name, shape)| {
                let t = Tensor::zeros(shape, DType::F32, &Device::Cpu)
                    .unwrap_or_else(|e| panic!("{e}"));
                (name.to_string(), t)
            })
            .collect()
    }

    fn config_err(text: Option<&str>, w: &HashMap<String, Tensor>) -> String {
        match BertConfig::read(text, w) {
            Ok(c) => panic!("expected an error, got {c:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn config_error_messages_are_exact() {
        let none = HashMap::new();
        assert_eq!(
            config_err(None, &none),
            "the weights have no \"embeddings.position_embeddings.weight\""
        );
        let w = weights(&[
            ("embeddings.position_embeddings.weight", (16, 8)),
            ("encoder.layer.0.attention.self.query.weight", (8, 8)),
        ]);
        assert!(config_err(Some("{"), &w).starts_with("config.json is not JSON: "));
        assert_eq!(
            config_err(Some(r#"{"hidden_act": "relu"}"#), &w),
            "config.json: hidden_act \"relu\" is not supported (only \"gelu\")"
        );
        assert_eq!(
            config_err(Some("{}"), &w),
            "config.json has no positive integer \"hidden_size\""
        );
        let config = |hidden: usize, layers: usize, heads: usize| {
            format!(
                r#"{{"hidden_size": {hidden}, "num_hidden_layers": {layers},
                    "num_attention_heads": {heads}, "max_position_embeddings": 16}}"#
            )
        };
        assert_eq!(
            config_err(Some(&config(4, 1, 1)), &w),
            "config.json says hidden_size 4 but the weights have 8"
        );
        assert_eq!(
            config_err(Some(&config(8, 2, 1)), &w),
            "config.json says 2 layers but the weights have 1"
        );
        assert_eq!(
            config_err(Some(&config(8, 1, 3)), &w),
            "hidden size 8 is not divisible into 3 attention heads"
        );
    }

    #[test]
    fn weight_and_compute_error_messages_are_exact() {
        let w = weights(&[("t", (4, 3)), ("g", (1, 3)), ("b", (1, 2))]);
        let table = match Table::new(&w["t"], 5, "t") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a table of the wrong width"),
        };
        assert_eq!(table, "t has rows of 3, the model's width is 5");
        let norm = match Norm::new(&w["g"], &w["b"], 3, "n.LayerNorm") {
            Err(e) => e.to_string(),
            Ok(_) => panic!("a LayerNorm of the wrong width"),
        };
        assert_eq!(
            norm,
            "n.LayerNorm: a LayerNorm of 3 / 2 parameters in a model of width 3"
        );
        let t = Table::new(&w["t"], 3, "t").unwrap_or_else(|e| panic!("{e}"));
        let row = t
            .row(4, 3, "token id")
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            row,
            Err("token id 4 is outside the model's table of 4".to_string())
        );
        let e = ComputeError::from(MatmulError { m: 2, k: 3, n: 4 });
        assert_eq!(
            e.to_string(),
            "matrix product 2x3 . 3x4: an operand lies outside its buffer"
        );
        let missing = std::env::temp_dir().join("lucille-embed-no-such-folder");
        assert_eq!(
            BertModel::load(&missing).err().map(|e| e.to_string()),
            Some(format!(
                "{} does not exist",
                missing.join("model.safetensors").display()
            ))
        );
        assert_eq!(
            crate::tokenize::TextTokenizer::load(&missing, 8)
                .err()
                .map(|e| e.to_string()),
            Some(format!(
                "{} does not exist",
                missing.join("tokenizer.json").display()
            ))
        );
    }
}
