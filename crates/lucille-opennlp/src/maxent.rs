//! OpenNLP's classifiers as written by its `GenericModelWriter` in binary form: the type name,
//! (GIS only: a correction constant and parameter, unused since OpenNLP 1.6), the outcome
//! labels, the outcome patterns ("count o1 o2 ..." strings: `count` predicates in a row share
//! the outcomes o1 o2 ...), the predicate labels, and one parameter per (predicate, pattern
//! outcome). Evaluation follows GISModel, PerceptronModel and QNModel of OpenNLP 2.1 step for
//! step (same order of additions, same normalisation) so probabilities agree to the last bits.

use std::collections::HashMap;

use crate::error::{corrupt, OpenNlpError, Result};
use crate::java::DataInput;

/// Which of OpenNLP's classifiers a model is; each normalises its scores differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelType {
    /// Maximum entropy trained with GIS (`MAXENT`): a uniform log prior, then softmax.
    Gis,
    /// `PERCEPTRON` (and `PERCEPTRON_SEQUENCE`): scores divided by the largest magnitude, then
    /// softmax.
    Perceptron,
    /// Maximum entropy trained with L-BFGS (`MAXENT_QN`): log-sum-exp softmax.
    Qn,
}

/// The parameters of one predicate: the outcomes it has weights for, and the weights.
#[derive(Debug, Clone)]
struct Context {
    outcomes: Vec<usize>,
    parameters: Vec<f64>,
}

/// A loaded classifier.
#[derive(Debug, Clone)]
pub struct MaxentModel {
    model_type: ModelType,
    outcomes: Vec<String>,
    predicates: HashMap<String, Context>,
}

impl MaxentModel {
    /// Reads a model entry (e.g. `token.model`, `nameFinder.model`).
    pub fn read(bytes: &[u8], entry: &str) -> Result<Self> {
        let mut input = DataInput::new(bytes, entry);
        let type_name = input.read_utf()?;
        let model_type = match type_name.as_str() {
            "GIS" => ModelType::Gis,
            "Perceptron" => ModelType::Perceptron,
            "QN" => ModelType::Qn,
            _ => return Err(OpenNlpError::UnsupportedModelType(type_name)),
        };
        if model_type == ModelType::Gis {
            // The correction constant and parameter: read and ignored, as OpenNLP does.
            input.read_int()?;
            input.read_double()?;
        }
        let n_outcomes = input.read_count("outcome", 2)?;
        let mut outcomes = Vec::with_capacity(n_outcomes);
        for _ in 0..n_outcomes {
            outcomes.push(input.read_utf()?);
        }
        let n_patterns = input.read_count("outcome pattern", 2)?;
        let mut patterns = Vec::with_capacity(n_patterns);
        for _ in 0..n_patterns {
            let text = input.read_utf()?;
            // StringTokenizer on " ": empty pieces are skipped.
            let mut numbers = Vec::new();
            for piece in text.split(' ').filter(|p| !p.is_empty()) {
                let n = crate::java::parse_int(piece)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        corrupt(
                            entry,
                            format!("outcome pattern `{text}` is not a list of numbers"),
                        )
                    })?;
                numbers.push(n);
            }
            let Some((&count, pattern_outcomes)) = numbers.split_first() else {
                return Err(corrupt(entry, "an empty outcome pattern"));
            };
            if let Some(&bad) = pattern_outcomes.iter().find(|&&o| o >= n_outcomes) {
                return Err(corrupt(
                    entry,
                    format!("outcome {bad} of a pattern, of {n_outcomes} outcomes"),
                ));
            }
            patterns.push((count, pattern_outcomes.to_vec()));
        }
        let n_predicates = input.read_count("predicate", 2)?;
        let mut labels = Vec::with_capacity(n_predicates);
        for _ in 0..n_predicates {
            labels.push(input.read_utf()?);
        }
        let declared: usize = patterns
            .iter()
            .map(|(count, _)| *count)
            .fold(0, usize::saturating_add);
        if declared != n_predicates {
            return Err(corrupt(
                entry,
                format!("the patterns cover {declared} predicates, the model has {n_predicates}"),
            ));
        }
        let mut predicates = HashMap::with_capacity(n_predicates);
        let mut labels = labels.into_iter();
        for (count, pattern_outcomes) in &patterns {
            for _ in 0..*count {
                let mut parameters = Vec::with_capacity(pattern_outcomes.len());
                for _ in 0..pattern_outcomes.len() {
                    parameters.push(input.read_double()?);
                }
                let label = labels
                    .next()
                    .ok_or_else(|| corrupt(entry, "more parameters than predicates"))?;
                // A label listed twice keeps its last parameters, as OpenNLP's HashMap does.
                predicates.insert(
                    label,
                    Context {
                        outcomes: pattern_outcomes.clone(),
                        parameters,
                    },
                );
            }
        }
        if outcomes.is_empty() {
            return Err(corrupt(entry, "no outcomes"));
        }
        Ok(MaxentModel {
            model_type,
            outcomes,
            predicates,
        })
    }

    pub fn model_type(&self) -> ModelType {
        self.model_type
    }

    pub fn outcomes(&self) -> &[String] {
        &self.outcomes
    }

    /// The probability of each outcome for a context (a fresh evaluation: `model.eval(context)`).
    pub fn eval(&self, context: &[String]) -> Vec<f64> {
        let mut probs = vec![0.0; self.outcomes.len()];
        self.eval_into(context, &mut probs);
        probs
    }

    /// `model.eval(context, probs)` with the caller's buffer, as OpenNLP's BeamSearch calls it.
    /// GIS and Perceptron overwrite the buffer; QN adds its scores to what the buffer holds (so
    /// a QN name finder's results depend on its previous evaluation, in OpenNLP as here).
    pub fn eval_into(&self, context: &[String], probs: &mut [f64]) {
        let n = self.outcomes.len();
        match self.model_type {
            ModelType::Gis => {
                // UniformPrior.logPrior: every outcome starts at log(1/n).
                let r = (1.0 / n as f64).ln();
                probs.iter_mut().for_each(|p| *p = r);
                self.sum_features(context, probs);
                let mut normal = 0.0;
                for p in probs.iter_mut() {
                    *p = p.exp();
                    normal += *p;
                }
                probs.iter_mut().for_each(|p| *p /= normal);
            }
            ModelType::Perceptron => {
                probs.iter_mut().for_each(|p| *p = 0.0);
                self.sum_features(context, probs);
                let mut max_prior = 1.0f64;
                for p in probs.iter() {
                    if max_prior < p.abs() {
                        max_prior = p.abs();
                    }
                }
                let mut normal = 0.0;
                for p in probs.iter_mut() {
                    *p = (*p / max_prior).exp();
                    normal += *p;
                }
                probs.iter_mut().for_each(|p| *p /= normal);
            }
            ModelType::Qn => {
                self.sum_features(context, probs);
                let log_sum_exp = log_sum_of_exps(probs);
                probs.iter_mut().for_each(|p| *p = (*p - log_sum_exp).exp());
            }
        }
    }

    fn sum_features(&self, context: &[String], probs: &mut [f64]) {
        for predicate in context {
            if let Some(c) = self.predicates.get(predicate) {
                for (&o, &w) in c.outcomes.iter().zip(&c.parameters) {
                    probs[o] += w;
                }
            }
        }
    }

    /// `getBestOutcome`: the first outcome of the highest probability.
    pub fn best_outcome(&self, probs: &[f64]) -> usize {
        argmax(probs)
    }

    /// `getIndex`: the first outcome of this label.
    pub fn index(&self, outcome: &str) -> Option<usize> {
        self.outcomes.iter().position(|o| o == outcome)
    }
}

/// ArrayMath.argmax: the first index of the largest value (a strict `<` moves it).
pub(crate) fn argmax(x: &[f64]) -> usize {
    let mut best = 0;
    for i in 1..x.len() {
        if x[best] < x[i] {
            best = i;
        }
    }
    best
}

/// ArrayMath.logSumOfExps.
fn log_sum_of_exps(x: &[f64]) -> f64 {
    let max = x.get(argmax(x)).copied().unwrap_or(0.0);
    let mut sum = 0.0;
    for &v in x {
        if v != f64::NEG_INFINITY {
            sum += (v - max).exp();
        }
    }
    max + sum.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u16).to_be_bytes().to_vec();
        v.extend(s.as_bytes());
        v
    }

    /// A two-outcome model with predicates `a` (both outcomes) and `b` (outcome 1 only).
    fn model(kind: &str) -> Vec<u8> {
        let mut b = utf(kind);
        if kind == "GIS" {
            b.extend(1i32.to_be_bytes());
            b.extend(0f64.to_be_bytes());
        }
        b.extend(2i32.to_be_bytes());
        b.extend(utf("x"));
        b.extend(utf("y"));
        b.extend(2i32.to_be_bytes());
        b.extend(utf("1 0 1"));
        b.extend(utf("1 1"));
        b.extend(2i32.to_be_bytes());
        b.extend(utf("a"));
        b.extend(utf("b"));
        for w in [0.5f64, -0.5, 2.0] {
            b.extend(w.to_be_bytes());
        }
        b
    }

    #[test]
    fn evaluates_each_type() {
        let gis = MaxentModel::read(&model("GIS"), "m").unwrap();
        let p = gis.eval(&["a".into(), "b".into(), "unknown".into()]);
        let (x, y) = (0.5f64.exp(), 1.5f64.exp());
        assert!((p[0] - x / (x + y)).abs() < 1e-15);
        let perceptron = MaxentModel::read(&model("Perceptron"), "m").unwrap();
        let p = perceptron.eval(&["a".into(), "b".into()]);
        let (x, y) = ((0.5f64 / 1.5).exp(), 1f64.exp());
        assert!((p[1] - y / (x + y)).abs() < 1e-15);
        let qn = MaxentModel::read(&model("QN"), "m").unwrap();
        let mut buffer = vec![0.0; 2];
        qn.eval_into(&["a".into()], &mut buffer);
        let first = buffer.clone();
        qn.eval_into(&["a".into()], &mut buffer);
        assert_ne!(
            first, buffer,
            "QN adds to the buffer it is given, as OpenNLP's does"
        );
    }

    #[test]
    fn corrupt_or_unknown_models_are_errors() {
        let bytes = model("GIS");
        for cut in 0..bytes.len() {
            assert!(
                MaxentModel::read(&bytes[..cut], "m").is_err(),
                "cut at {cut}"
            );
        }
        let err = MaxentModel::read(&model("NaiveBayes"), "m").unwrap_err();
        assert!(err.to_string().contains("NaiveBayes"), "{err}");
    }
}
