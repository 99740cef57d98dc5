//! TokenizerME: whitespace tokens, each split further where the model says `T` between two of
//! its characters. Positions are UTF-16 units, as Java's: the features a model was trained on
//! (prefix, suffix, the characters around a position) are built from them. As OpenNLP 2.5 (the
//! version Lucille runs): a token in the model's abbreviation dictionary is not split at a dot;
//! without an abbreviation dictionary OpenNLP 2.1 to 2.5 tokenize alike.

use crate::archive::ModelArchive;
use crate::dictionary::StringSet;
use crate::error::{OpenNlpError, Result};
use crate::java::{is_digit, is_letter, is_upper_case, is_whitespace, utf16};
use crate::maxent::MaxentModel;

const MODEL_ENTRY: &str = "token.model";
const ABBREVIATIONS_ENTRY: &str = "abbreviations.dictionary";
const DEFAULT_ALPHANUMERIC: &str = "^[A-Za-z0-9]+$";
const PORTUGUESE_ALPHANUMERIC: &str = "^[0-9a-záãâàéêíóõôúüçA-ZÁÃÂÀÉÊÍÓÕÔÚÜÇ]+$";

/// A token: its text and where it is in the input, in UTF-16 units (Java's string indices) and
/// with its probability as TokenizerME reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub text: String,
    pub start: usize,
    pub end: usize,
    pub probability: f64,
}

/// Which tokens the alphanumeric optimisation leaves whole.
#[derive(Debug, Clone)]
enum Alphanumeric {
    /// `^[A-Za-z0-9]+$`, OpenNLP's default.
    Ascii,
    /// OpenNLP's pattern for Portuguese (`pt` / `por`).
    Portuguese,
    /// A model's own pattern, compiled with the regex crate (whose syntax covers the common
    /// part of Java's).
    Custom(regex::Regex),
}

impl Alphanumeric {
    fn matches(&self, token: &str) -> bool {
        match self {
            Alphanumeric::Ascii => {
                !token.is_empty() && token.bytes().all(|b| b.is_ascii_alphanumeric())
            }
            Alphanumeric::Portuguese => {
                !token.is_empty()
                    && token.chars().all(|c| {
                        c.is_ascii_alphanumeric() || "áãâàéêíóõôúüçÁÃÂÀÉÊÍÓÕÔÚÜÇ".contains(c)
                    })
            }
            Alphanumeric::Custom(re) => re
                .find(token)
                .is_some_and(|m| m.start() == 0 && m.end() == token.len()),
        }
    }
}

/// A loaded tokenizer model (read-only: share it between threads).
#[derive(Debug, Clone)]
pub struct Tokenizer {
    model: MaxentModel,
    use_alphanumeric_optimization: bool,
    alphanumeric: Alphanumeric,
    abbreviations: StringSet,
}

impl Tokenizer {
    /// Loads a TokenizerME model file.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::from_archive(&ModelArchive::open(path)?)
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Self::from_archive(&ModelArchive::from_bytes(bytes)?)
    }

    pub fn from_archive(archive: &ModelArchive) -> Result<Self> {
        archive.expect_component("TokenizerME")?;
        let bytes = archive
            .entry(MODEL_ENTRY)
            .ok_or_else(|| OpenNlpError::MissingEntry(MODEL_ENTRY.into()))?;
        let model = MaxentModel::read(bytes, MODEL_ENTRY)?;
        if model.index("T").is_none() && model.index("F").is_none() {
            return Err(OpenNlpError::Outcomes {
                component: "tokenizer",
                reason: "neither T nor F is an outcome".into(),
            });
        }
        let use_alphanumeric_optimization = archive
            .property("useAlphaNumericOptimization")
            .map(crate::java::parse_boolean)
            .ok_or(OpenNlpError::MissingProperty("useAlphaNumericOptimization"))?;
        let language = archive.property("Language").unwrap_or_default();
        // TokenizerFactory.getAlphaNumericPattern: the manifest's pattern, else the language's.
        let alphanumeric = match archive.property("alphaNumericPattern") {
            None if matches!(language, "pt" | "por") => Alphanumeric::Portuguese,
            None | Some(DEFAULT_ALPHANUMERIC) => Alphanumeric::Ascii,
            Some(PORTUGUESE_ALPHANUMERIC) => Alphanumeric::Portuguese,
            Some(pattern) => Alphanumeric::Custom(regex::Regex::new(pattern).map_err(|e| {
                OpenNlpError::Pattern {
                    pattern: pattern.to_string(),
                    reason: e.to_string(),
                }
            })?),
        };
        let abbreviations = match archive.entry(ABBREVIATIONS_ENTRY) {
            Some(bytes) => StringSet::read(bytes, ABBREVIATIONS_ENTRY)?,
            None => StringSet::default(),
        };
        Ok(Tokenizer {
            model,
            use_alphanumeric_optimization,
            alphanumeric,
            abbreviations,
        })
    }

    /// The tokens' texts.
    pub fn tokenize(&self, text: &str) -> Vec<String> {
        self.tokenize_pos(text)
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    /// `tokenizePos` with the token texts and `getTokenProbabilities`.
    pub fn tokenize_pos(&self, text: &str) -> Vec<Token> {
        let units = utf16(text);
        let mut out = Vec::new();
        for (ws_start, ws_end) in whitespace_tokens(&units) {
            let tok = &units[ws_start..ws_end];
            let tok_string = String::from_utf16_lossy(tok);
            if tok.len() < 2
                || (self.use_alphanumeric_optimization && self.alphanumeric.matches(&tok_string))
            {
                out.push(token(&units, ws_start, ws_end, 1.0));
                continue;
            }
            let mut start = ws_start;
            let mut token_prob = 1.0;
            // OpenNLP 2.5 (Lucille's version): where the model splits a whitespace token that is
            // in the abbreviation dictionary, the rest of the token is kept whole and the scan
            // jumps past as many positions as the token has dots (OpenNLP 2.1 split it there).
            let abbreviation = self.abbreviations.contains(&tok_string);
            let dots = tok_string.chars().filter(|&c| c == '.').count();
            let mut j = ws_start + 1;
            while j < ws_end {
                let context = self.context(tok, &tok_string, j - ws_start);
                let probs = self.model.eval(&context);
                let best = self.model.best_outcome(&probs);
                let best_label = &self.model.outcomes()[best];
                let index = self.model.index(best_label).unwrap_or(best);
                token_prob *= probs[index];
                if best_label == "T" {
                    if abbreviation {
                        out.push(token(&units, start, ws_end, token_prob));
                        j += dots;
                        start = j + 1;
                    } else {
                        out.push(token(&units, start, j, token_prob));
                        start = j;
                    }
                    token_prob = 1.0;
                }
                j += 1;
            }
            if start < ws_end {
                out.push(token(&units, start, ws_end, token_prob));
            }
        }
        out
    }

    /// DefaultTokenContextGenerator.createContext for a split before `index` of `sentence` (a
    /// whitespace token).
    fn context(&self, sentence: &[u16], sentence_string: &str, index: usize) -> Vec<String> {
        let s = |units: &[u16]| String::from_utf16_lossy(units);
        let mut preds = Vec::with_capacity(24);
        preds.push(format!("p={}", s(&sentence[..index])));
        preds.push(format!("s={}", s(&sentence[index..])));
        if index > 0 {
            add_char_preds("p1", sentence[index - 1], &mut preds);
            if index > 1 {
                add_char_preds("p2", sentence[index - 2], &mut preds);
                preds.push(format!("p21={}", s(&sentence[index - 2..index])));
            } else {
                preds.push("p2=bok".to_string());
            }
            preds.push(format!("p1f1={}", s(&sentence[index - 1..=index])));
        } else {
            preds.push("p1=bok".to_string());
        }
        add_char_preds("f1", sentence[index], &mut preds);
        if index + 1 < sentence.len() {
            add_char_preds("f2", sentence[index + 1], &mut preds);
            preds.push(format!("f12={}", s(&sentence[index..index + 2])));
        } else {
            preds.push("f2=bok".to_string());
        }
        if sentence.first() == Some(&u16::from(b'&')) && sentence.last() == Some(&u16::from(b';')) {
            preds.push("cc".to_string());
        }
        if index == sentence.len() - 1 && self.abbreviations.contains(sentence_string) {
            preds.push("pabb".to_string());
        }
        preds
    }
}

fn token(units: &[u16], start: usize, end: usize, probability: f64) -> Token {
    Token {
        text: String::from_utf16_lossy(&units[start..end]),
        start,
        end,
        probability,
    }
}

/// WhitespaceTokenizer.tokenizePos: maximal runs of non-whitespace units.
fn whitespace_tokens(units: &[u16]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, &u) in units.iter().enumerate() {
        if is_whitespace(u) {
            if let Some(s) = start.take() {
                spans.push((s, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        spans.push((s, units.len()));
    }
    spans
}

fn add_char_preds(key: &str, c: u16, preds: &mut Vec<String>) {
    preds.push(format!("{key}={}", String::from_utf16_lossy(&[c])));
    if is_letter(c) {
        preds.push(format!("{key}_alpha"));
        if is_upper_case(c) {
            preds.push(format!("{key}_caps"));
        }
    } else if is_digit(c) {
        preds.push(format!("{key}_num"));
    } else if is_whitespace(c) {
        preds.push(format!("{key}_ws"));
    } else {
        let class = match char::from_u32(u32::from(c)) {
            Some('.' | '?' | '!') => Some("_eos"),
            Some('`' | '"' | '\'') => Some("_quote"),
            Some('[' | '{' | '(') => Some("_lp"),
            Some(']' | '}' | ')') => Some("_rp"),
            _ => None,
        };
        if let Some(class) = class {
            preds.push(format!("{key}{class}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn utf(s: &str) -> Vec<u8> {
        let mut v = (s.len() as u16).to_be_bytes().to_vec();
        v.extend(s.as_bytes());
        v
    }

    /// A tokenizer whose model says T everywhere (a GIS model whose one predicate weighs
    /// nothing: T and F at 0.5 each, and argmax keeps the first, T), with `e.g.` in its
    /// abbreviation dictionary.
    fn always_split() -> Tokenizer {
        let mut model = utf("GIS");
        model.extend(1i32.to_be_bytes());
        model.extend(0f64.to_be_bytes());
        model.extend(2i32.to_be_bytes());
        model.extend(utf("T"));
        model.extend(utf("F"));
        model.extend(1i32.to_be_bytes());
        model.extend(utf("1 0 1"));
        model.extend(1i32.to_be_bytes());
        model.extend(utf("p1=bok"));
        model.extend(0f64.to_be_bytes());
        model.extend(0f64.to_be_bytes());
        let manifest = "Manifest-Version=1.0\nOpenNLP-Version=2.1.0\nComponent-Name=TokenizerME\nLanguage=en\nuseAlphaNumericOptimization=false\n";
        let dictionary = r#"<?xml version="1.0" encoding="UTF-8"?><dictionary case_sensitive="false"><entry><token>e.g.</token></entry></dictionary>"#;
        let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, data) in [
            ("manifest.properties", manifest.as_bytes()),
            ("token.model", &model),
            ("abbreviations.dictionary", dictionary.as_bytes()),
        ] {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(data).unwrap();
        }
        let bytes = zip.finish().unwrap().into_inner();
        Tokenizer::from_bytes(&bytes).unwrap()
    }

    #[test]
    fn abbreviations_stay_whole_as_in_opennlp_2_5() {
        let t = always_split();
        // Equal scores: argmax keeps the first outcome, T.
        assert_eq!(t.tokenize("ab E.G. x.y"), ["a", "b", "E.G.", "x", ".", "y"]);
        let tokens = t.tokenize_pos("e.g.");
        assert_eq!(tokens.len(), 1);
        assert_eq!((tokens[0].start, tokens[0].end), (0, 4));
        assert!((tokens[0].probability - 0.5).abs() < 1e-15);
    }
}
