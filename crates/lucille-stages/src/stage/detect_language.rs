//! DetectLanguage: detects the language of the text in the source fields and writes its code
//! and the detector's confidence.
//!
//! Keys: `source` (required: field names), `languageField` (required), `languageConfidenceField`
//! (default `languageConfidence`), `minLength` (default 50: shorter texts are not examined),
//! `maxLength` (default 10000: longer texts are cut), `minProbability` (default 0.95: less
//! confident results are not written), `updateMode` (default overwrite).
//!
//! The values of every source field are joined (in order, separated by spaces) into one text,
//! cut at `maxLength` characters; if it has at least `minLength` characters, its language is
//! detected with the `whatlang` crate (69 languages, trigram and script based, no model files).
//! When the confidence is at least `minProbability`, `languageField` gets the language's code
//! and `languageConfidenceField` the confidence rounded down to two decimals (0.99).
//!
//! Codes are the ones Lucille's detector (language-detection profiles) uses: ISO 639-1 (`en`,
//! `es`, `ru`, `hi`...), `zh-cn` for Mandarin (whatlang does not tell simplified from
//! traditional), `no` for Norwegian Bokmål, `fa` for Persian; the few languages with no
//! two-letter code keep whatlang's ISO 639-3 code.
//!
//! Differences from Lucille: the detector differs, so confidences are not the same numbers.
//! whatlang is confident (1.0) on sentences of 60 or more characters but much less on short
//! ones ("This is a sentence in English!" scores about 0.72, a 53-character Spanish sentence
//! about 0.33), so with short fields lower `minProbability` (or raise `minLength`). The
//! language set differs slightly. Values are joined with spaces (Lucille joins them with
//! nothing, gluing the last word of one value to the first of the next); lengths count
//! characters. A source value that is not text or a number fails the document.

use whatlang::Lang;

use super::field_util::check_fields;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{f64_to_value, Document, UpdateMode};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "DetectLanguage",
    spec: DetectLanguageOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Detects the language of the text in the source fields and writes its code and the
/// detector's confidence.
#[derive(Options)]
#[options(base = Spec::stage())]
struct DetectLanguageOptions {
    /// The fields whose values are joined (with spaces) into the text examined.
    source: Strings,
    /// The field the language code (ISO 639-1, as Lucille's) is written to.
    language_field: String,
    /// The field the confidence (0 to 1, two decimals) is written to.
    #[option(default = "languageConfidence")]
    language_confidence_field: String,
    /// Texts shorter than this many characters are not examined.
    #[option(default = 50, min = 0)]
    min_length: i64,
    /// Longer texts are cut to this many characters (at least 1 and at least minLength).
    #[option(default = 10_000, min = 0)]
    max_length: i64,
    /// Less confident results are not written.
    #[option(default = 0.95, min = 0, max = 1)]
    min_probability: f64,
    /// How the two fields are written when they already have values.
    #[option(default)]
    update_mode: UpdateMode,
}

struct DetectLanguage {
    sources: Vec<String>,
    language_field: String,
    confidence_field: String,
    min_length: usize,
    max_length: usize,
    min_probability: f64,
    mode: UpdateMode,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = DetectLanguageOptions::from_config(config)?;
    let mut errors = Vec::new();
    if let Err(e) = check_fields(config, "source", &o.source, false) {
        errors.push(e);
    }
    // Not negative (checked by the options).
    let min_length = usize::try_from(o.min_length).unwrap_or(0);
    let max_length = usize::try_from(o.max_length).unwrap_or(0);
    if max_length == 0 || max_length < min_length {
        errors.push(config.error(
            "maxLength",
            format!("must be at least 1 and at least minLength ({min_length}), found {max_length}"),
        ));
    }
    if !errors.is_empty() {
        return Err(errors.into());
    }
    let mode = o.update_mode;
    Ok(Box::new(DetectLanguage {
        sources: o.source.into(),
        language_field: o.language_field,
        confidence_field: o.language_confidence_field,
        min_length,
        max_length,
        min_probability: o.min_probability,
        mode,
    }))
}

/// Lucille's (language-detection's) code for a whatlang language.
pub(crate) fn lucille_code(lang: Lang) -> &'static str {
    match lang {
        Lang::Epo => "eo",
        Lang::Eng => "en",
        Lang::Rus => "ru",
        Lang::Cmn => "zh-cn",
        Lang::Spa => "es",
        Lang::Por => "pt",
        Lang::Ita => "it",
        Lang::Ben => "bn",
        Lang::Fra => "fr",
        Lang::Deu => "de",
        Lang::Ukr => "uk",
        Lang::Kat => "ka",
        Lang::Ara => "ar",
        Lang::Hin => "hi",
        Lang::Jpn => "ja",
        Lang::Heb => "he",
        Lang::Yid => "yi",
        Lang::Pol => "pl",
        Lang::Amh => "am",
        Lang::Jav => "jv",
        Lang::Kor => "ko",
        Lang::Nob => "no",
        Lang::Dan => "da",
        Lang::Swe => "sv",
        Lang::Fin => "fi",
        Lang::Tur => "tr",
        Lang::Nld => "nl",
        Lang::Hun => "hu",
        Lang::Ces => "cs",
        Lang::Ell => "el",
        Lang::Bul => "bg",
        Lang::Bel => "be",
        Lang::Mar => "mr",
        Lang::Kan => "kn",
        Lang::Ron => "ro",
        Lang::Slv => "sl",
        Lang::Hrv => "hr",
        Lang::Srp => "sr",
        Lang::Mkd => "mk",
        Lang::Lit => "lt",
        Lang::Lav => "lv",
        Lang::Est => "et",
        Lang::Tam => "ta",
        Lang::Vie => "vi",
        Lang::Urd => "ur",
        Lang::Tha => "th",
        Lang::Guj => "gu",
        Lang::Uzb => "uz",
        Lang::Pan => "pa",
        Lang::Aze => "az",
        Lang::Ind => "id",
        Lang::Tel => "te",
        Lang::Pes => "fa",
        Lang::Mal => "ml",
        Lang::Ori => "or",
        Lang::Mya => "my",
        Lang::Nep => "ne",
        Lang::Sin => "si",
        Lang::Khm => "km",
        Lang::Tuk => "tk",
        Lang::Aka => "ak",
        Lang::Zul => "zu",
        Lang::Sna => "sn",
        Lang::Afr => "af",
        Lang::Lat => "la",
        Lang::Slk => "sk",
        Lang::Cat => "ca",
        Lang::Tgl => "tl",
        Lang::Hye => "hy",
        #[allow(unreachable_patterns)]
        other => other.code(),
    }
}

impl Stage for DetectLanguage {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut text = String::new();
        let mut chars = 0usize;
        'fields: for source in &self.sources {
            for value in doc.get_string_list(source)? {
                if !text.is_empty() {
                    text.push(' ');
                    chars += 1;
                }
                for c in value.chars() {
                    if chars >= self.max_length {
                        break 'fields;
                    }
                    text.push(c);
                    chars += 1;
                }
            }
        }
        if chars < self.min_length || text.trim().is_empty() {
            return Ok(None);
        }
        let Some(info) = whatlang::detect(&text) else {
            return Ok(None);
        };
        let confidence = info.confidence();
        if confidence < self.min_probability {
            return Ok(None);
        }
        let rounded = (confidence * 100.0).floor() / 100.0;
        let rounded = f64_to_value(rounded).ok_or_else(|| {
            StageFailure::msg(format!(
                "language detector returned confidence {confidence}"
            ))
        })?;
        doc.update(&self.language_field, self.mode, [lucille_code(info.lang())])?;
        doc.update(&self.confidence_field, self.mode, [rounded])?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::json;

    fn stage(extra: serde_json::Value) -> Box<dyn crate::stage::Stage> {
        let mut cfg = json!({"class": "DetectLanguage", "source": ["input1", "input2", "input3"],
            "languageField": "language", "languageConfidenceField": "lang_conf",
            "minLength": 0, "maxLength": 512, "minProbability": 0.3});
        for (k, v) in extra.as_object().unwrap() {
            cfg[k] = v.clone();
        }
        build_stage(cfg)
    }

    #[test]
    fn detects_languages_with_lucille_codes() {
        let mut s = stage(json!({}));
        for (field, text, code) in [
            (
                "input1",
                "This is a sentence in English, written to check the detector.",
                "en",
            ),
            (
                "input3",
                "Eso oracion esta en espanol. Ojala que podimos verla.",
                "es",
            ),
            ("input1", "Это стандартное предложение на моем языке.", "ru"),
            ("input2", "यह मेरी पसंद की भाषा में एक मानक वाक्य है।", "hi"),
            ("input1", "这是我选择的语言的标准句子。", "zh-cn"),
            (
                "input1",
                "Dies ist ein ganz normaler deutscher Satz über das Wetter.",
                "de",
            ),
        ] {
            let out = process(&mut s, json!({"id": "d", field: text}));
            assert_eq!(out.get("language"), Some(&json!(code)), "{text}");
            let conf = out.get_f64("lang_conf").unwrap().unwrap();
            assert!((0.3..=1.0).contains(&conf), "{conf}");
            assert_eq!((conf * 100.0).fract(), 0.0, "two decimals: {conf}");
        }
    }

    #[test]
    fn joins_sources_and_respects_lengths_and_probability() {
        let mut s = stage(json!({"minLength": 30}));
        let out = process(&mut s, json!({"id": "d", "input1": "short"}));
        assert!(!out.has("language"), "below minLength");
        let out = process(
            &mut s,
            json!({"id": "d", "input1": ["Le chat est sur", "la table de la cuisine"], "input2": "ce matin."}),
        );
        assert_eq!(out.get("language"), Some(&json!("fr")));

        // maxLength cuts the text: only the English part is examined.
        let english = "This is a sentence in English, written to check the detector.";
        let mut s = stage(json!({"maxLength": english.chars().count()}));
        let out = process(
            &mut s,
            json!({"id": "d",
            "input1": english,
            "input2": "Der schnelle braune Fuchs springt über den faulen Hund am Fluss und noch viel weiter"}),
        );
        assert_eq!(out.get("language"), Some(&json!("en")));

        let mut s = stage(json!({"minProbability": 1.0}));
        let out = process(&mut s, json!({"id": "d", "input1": "Hello there"}));
        assert!(!out.has("language"), "not confident enough");
    }

    #[test]
    fn default_confidence_field_and_update_modes() {
        let mut s = build_stage(json!({"class": "DetectLanguage", "source": "text",
            "languageField": "lang", "minLength": 10, "minProbability": 0.1,
            "updateMode": "append"}));
        let text = "Questa è una frase italiana abbastanza lunga per il rilevatore di lingua.";
        let out = process(&mut s, json!({"id": "d", "text": text, "lang": "xx"}));
        assert_eq!(out.get("lang"), Some(&json!(["xx", "it"])));
        assert!(out.has("languageConfidence"));
        let mut s = build_stage(json!({"class": "DetectLanguage", "source": "text",
            "languageField": "lang", "minLength": 10, "minProbability": 0.1,
            "updateMode": "skip"}));
        let out = process(&mut s, json!({"id": "d", "text": text, "lang": "xx"}));
        assert_eq!(out.get("lang"), Some(&json!("xx")));
    }

    #[test]
    fn missing_and_bad_values() {
        let mut s = stage(json!({}));
        let out = process(
            &mut s,
            json!({"id": "d", "other": "This is English text for sure."}),
        );
        assert!(!out.has("language"));
        let out = process(&mut s, json!({"id": "d", "input1": "   12345  "}));
        assert!(!out.has("language"), "no letters: nothing detected");
        let err = process_err(&mut s, json!({"id": "d", "input1": {"a": "b"}}));
        assert!(err.contains("input1"), "{err}");
    }

    #[test]
    fn bad_configs() {
        assert!(
            build_err(json!({"class": "DetectLanguage", "source": ["a"]}))
                .contains("languageField")
        );
        assert!(
            build_err(json!({"class": "DetectLanguage", "source": [], "languageField": "l"}))
                .contains("source")
        );
        assert!(build_err(
            json!({"class": "DetectLanguage", "source": ["a"], "languageField": "l",
            "minLength": 100, "maxLength": 10})
        )
        .contains("maxLength"));
        assert!(build_err(
            json!({"class": "DetectLanguage", "source": ["a"], "languageField": "l",
            "minProbability": 1.5})
        )
        .contains("minProbability"));
        assert!(build_err(
            json!({"class": "DetectLanguage", "source": ["a"], "languageField": "l",
            "minLength": -1})
        )
        .contains("minLength"));
    }
}
