//! NameFinderME: names in a sentence of tokens, found by a beam search over the model's
//! outcomes with the codec's sequence validator, each token's context built by the model's
//! feature generators plus the previous outcomes (DefaultNameContextGenerator).

use std::collections::HashMap;

use crate::archive::ModelArchive;
use crate::beam::{JavaPriorityQueue, Sequence};
use crate::codec::{Codec, Span};
use crate::error::{OpenNlpError, Result};
use crate::featuregen::{token_feature, FeatureGenerator, DEFAULT_DESCRIPTOR};
use crate::maxent::MaxentModel;

const MODEL_ENTRY: &str = "nameFinder.model";
const DESCRIPTOR_ENTRY: &str = "generator.featuregen";
/// NameFinderME.DEFAULT_BEAM_SIZE.
const DEFAULT_BEAM_SIZE: usize = 3;
/// BeamSearch's `zeroLog`: sequences scoring at or below it are dropped.
const MIN_SEQUENCE_SCORE: f64 = -100000.0;

/// A loaded name finder model (read-only: share it between threads).
#[derive(Debug, Clone)]
pub struct NameFinder {
    model: MaxentModel,
    generator: FeatureGenerator,
    codec: Codec,
    beam_size: usize,
}

/// What a Java NameFinderME carries from one `find` to the next: the previous-map features'
/// data (each token's last outcome), and BeamSearch's score buffer, which a QN model adds to
/// (GIS and Perceptron models overwrite it). `NameFinder::find` starts from a fresh one.
#[derive(Debug, Clone, Default)]
pub struct AdaptiveData {
    previous: HashMap<String, String>,
    buffer: Vec<f64>,
}

impl AdaptiveData {
    /// NameFinderME.clearAdaptiveData: forgets the previous outcomes (as in OpenNLP, the score
    /// buffer is not reset).
    pub fn clear(&mut self) {
        self.previous.clear();
    }
}

impl NameFinder {
    /// Loads a TokenNameFinder model file.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_archive(&ModelArchive::open(path)?)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::from_archive(&ModelArchive::from_bytes(bytes)?)
    }

    pub fn from_archive(archive: &ModelArchive) -> Result<Self> {
        archive.expect_component("NameFinderME")?;
        let bytes = archive
            .entry(MODEL_ENTRY)
            .ok_or_else(|| OpenNlpError::MissingEntry(MODEL_ENTRY.into()))?;
        let model = MaxentModel::read(bytes, MODEL_ENTRY)?;
        let codec = Codec::from_manifest(archive.property("sequenceCodecImplName"))?;
        if !codec.compatible(model.outcomes()) {
            return Err(OpenNlpError::Outcomes {
                component: "name finder",
                reason: format!("{:?} outcomes {:?}", codec, model.outcomes()),
            });
        }
        let descriptor = archive
            .entry(DESCRIPTOR_ENTRY)
            .filter(|d| !d.is_empty())
            .unwrap_or(DEFAULT_DESCRIPTOR.as_bytes());
        let generator = FeatureGenerator::from_descriptor(descriptor)?;
        let beam_size = match archive.property("BeamSize") {
            None => DEFAULT_BEAM_SIZE,
            Some(s) => crate::java::parse_int(s)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    OpenNlpError::Descriptor(format!("BeamSize `{s}` is not a positive number"))
                })?,
        };
        Ok(NameFinder {
            model,
            generator,
            codec,
            beam_size,
        })
    }

    pub fn codec(&self) -> Codec {
        self.codec
    }

    pub fn model(&self) -> &MaxentModel {
        &self.model
    }

    /// The names in one sentence, from fresh adaptive data (the same tokens give the same names
    /// whatever came before).
    pub fn find(&self, tokens: &[String]) -> Vec<Span> {
        self.find_with(tokens, &mut AdaptiveData::default())
    }

    /// The names in one sentence as a Java NameFinderME finds them after the sentences `data`
    /// has seen; `data` then remembers this sentence's outcomes.
    pub fn find_with(&self, tokens: &[String], data: &mut AdaptiveData) -> Vec<Span> {
        let Some(best) = self.best_sequence(tokens, data) else {
            return Vec::new();
        };
        let labels: Vec<String> = best
            .outcomes
            .iter()
            .map(|&o| self.model.outcomes()[o].clone())
            .collect();
        for (token, label) in tokens.iter().zip(&labels) {
            data.previous.insert(token.clone(), label.clone());
        }
        self.codec
            .decode(&labels)
            .into_iter()
            .map(|(start, end, kind)| {
                let sum: f64 = best.probs[start..end].iter().sum();
                Span {
                    start,
                    end,
                    kind,
                    probability: sum / (end - start) as f64,
                }
            })
            .collect()
    }

    /// BeamSearch.bestSequence with OpenNLP's exact queue order and pruning.
    fn best_sequence(&self, tokens: &[String], data: &mut AdaptiveData) -> Option<Sequence> {
        let n_outcomes = self.model.outcomes().len();
        if data.buffer.len() != n_outcomes {
            data.buffer = vec![0.0; n_outcomes];
        }
        let mut prev = JavaPriorityQueue::default();
        let mut next = JavaPriorityQueue::default();
        prev.add(Sequence::default());
        let mut sorted = vec![0.0; n_outcomes];
        for i in 0..tokens.len() {
            let sz = self.beam_size.min(prev.len());
            // The token's generator features, computed once for every sequence of the beam
            // (CachedFeatureGenerator's role).
            let mut base = Vec::new();
            self.generator.create(&mut base, tokens, i, &data.previous);
            for _ in 0..sz {
                let Some(top) = prev.remove() else { break };
                let outcome_labels: Vec<String> = top
                    .outcomes
                    .iter()
                    .map(|&o| self.model.outcomes()[o].clone())
                    .collect();
                let context = context(&base, tokens, i, &outcome_labels);
                self.model.eval_into(&context, &mut data.buffer);
                let scores = &data.buffer;
                sorted.copy_from_slice(scores);
                sorted.sort_by(|a, b| crate::java::double_compare(*a, *b));
                let min = sorted[n_outcomes.saturating_sub(self.beam_size)];
                for (p, &score) in scores.iter().enumerate() {
                    if score >= min {
                        let out = &self.model.outcomes()[p];
                        if self.codec.valid(&outcome_labels, out) {
                            let ns = top.extend(p, score);
                            if ns.score > MIN_SEQUENCE_SCORE {
                                next.add(ns);
                            }
                        }
                    }
                }
                if next.len() == 0 {
                    for (p, &score) in scores.iter().enumerate() {
                        let out = &self.model.outcomes()[p];
                        if self.codec.valid(&outcome_labels, out) {
                            let ns = top.extend(p, score);
                            if ns.score > MIN_SEQUENCE_SCORE {
                                next.add(ns);
                            }
                        }
                    }
                }
            }
            prev.clear();
            std::mem::swap(&mut prev, &mut next);
        }
        prev.remove()
    }
}

/// DefaultNameContextGenerator.getContext: the generators' features, then the previous
/// outcomes' features.
fn context(base: &[String], tokens: &[String], index: usize, preds: &[String]) -> Vec<String> {
    let mut features = Vec::with_capacity(base.len() + 4);
    features.extend_from_slice(base);
    let other = "other";
    let po = if index > 0 {
        preds.get(index - 1).map_or(other, String::as_str)
    } else {
        other
    };
    let ppo = if index > 1 {
        preds.get(index - 2).map_or(other, String::as_str)
    } else {
        other
    };
    features.push(format!("po={po}"));
    features.push(format!("pow={po},{}", tokens[index]));
    features.push(format!("powf={po},{}", token_feature(&tokens[index])));
    features.push(format!("ppo={ppo}"));
    features
}
