//! ApplyOpenNLPNameFinders: names found in a text field by Apache OpenNLP models (a TokenizerME
//! model and one TokenNameFinder model per output field), run by `lucille-opennlp`.
//!
//! Keys: `textField` (the text), `tokenizerPath` (a TokenizerME model file), `models` (output
//! field name -> a TokenNameFinder model file). Paths resolve as every input path does (the
//! working directory, then the config file's folder; `classpath:X` in the resource roots).
//! Per document: the text is tokenized, every name finder runs on the tokens as one sentence,
//! each name's tokens are joined with a space, and each distinct name is added (`setOrAdd`) to
//! its model's field. A model finding nothing leaves its field alone.
//!
//! The models are loaded and checked when the config is validated: a missing or unreadable
//! file, or one that is not a model of the right kind, is a config error at its key
//! (`models.PERSON`). They are loaded once and shared by every worker thread (read-only).
//!
//! Where we differ from Lucille: each document starts from fresh adaptive data (Java's
//! NameFinderME remembers every token's last outcome across documents unless cleared, so
//! Lucille's names depend on which documents a worker thread saw before); a model's names are
//! written in the order they are found and the fields in the order of `models` (Lucille's
//! HashMap / HashSet order is arbitrary). A document without the text field fails, as it does in
//! Lucille (a NullPointerException there), with a message naming the field.

use std::sync::Arc;

use lucille_opennlp::{NameFinder, Tokenizer};
use serde_json::{Map, Value};

use super::dictionary_lookup::shared_by_files;
use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "ApplyOpenNLPNameFinders",
    spec: ApplyOpenNLPNameFindersOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Finds names in a text field with Apache OpenNLP tokenizer and name finder models and adds
/// each model's names to a field of its own.
#[derive(Options)]
#[options(base = Spec::stage())]
struct ApplyOpenNLPNameFindersOptions {
    /// The field whose text is searched for names.
    text_field: String,
    /// An OpenNLP TokenizerME model file (such as en-token.bin); `classpath:X` is looked up in
    /// the resource roots.
    tokenizer_path: String,
    /// Output field name -> an OpenNLP TokenNameFinder model file (such as en-ner-person.bin):
    /// the names each model finds are added to its field.
    models: Map<String, Value>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let options = ApplyOpenNLPNameFindersOptions::from_config(config)?;
    let mut errors = Vec::new();
    // Each file is loaded once per process and shared (read-only) by every instance using it.
    let tokenizer = shared_by_files(
        config,
        "tokenizerPath",
        std::slice::from_ref(&options.tokenizer_path),
        || {
            Tokenizer::open(config.resolve_path(&options.tokenizer_path)).map_err(|e| {
                model_error(
                    config,
                    "tokenizerPath",
                    &options.tokenizer_path,
                    "tokenizer",
                    &e,
                )
            })
        },
    )
    .map_err(|e| errors.push(e))
    .ok();
    let mut finders = Vec::new();
    for (field, value) in &options.models {
        let key = format!("models.{field}");
        let Value::String(path) = value else {
            errors.push(config.error(
                &key,
                format!(
                    "must be the path of a name finder model file (a string), found {value}; \
                     write e.g. {field}: \"models/en-ner-{}.bin\"",
                    field.to_lowercase()
                ),
            ));
            continue;
        };
        let finder = shared_by_files(config, "models", std::slice::from_ref(path), || {
            NameFinder::open(config.resolve_path(path))
                .map_err(|e| model_error(config, &key, path, "name finder", &e))
        });
        match finder {
            Ok(f) => finders.push((field.clone(), f)),
            Err(e) => errors.push(e),
        }
    }
    match tokenizer {
        Some(tokenizer) if errors.is_empty() => Ok(Box::new(ApplyOpenNLPNameFinders {
            text_field: options.text_field,
            tokenizer,
            finders,
        })),
        _ => Err(errors.into()),
    }
}

/// A model that cannot be loaded, with what to do about it.
fn model_error(
    config: &ComponentConfig,
    key: &str,
    path: &str,
    kind: &str,
    error: &lucille_opennlp::OpenNlpError,
) -> ConfigError {
    let resolved = config.resolve_path(path);
    let hint = match error {
        lucille_opennlp::OpenNlpError::Io(_) if path.starts_with(crate::config::paths::CLASSPATH_PREFIX) => format!(
            "; classpath: is searched in {} (set runner.resourceRoots to add folders)",
            config.paths().describe_roots()
        ),
        lucille_opennlp::OpenNlpError::Io(_) => {
            "; check the path (a relative path is looked up in the working directory, then beside the config file)"
                .to_string()
        }
        _ => format!("; {key} needs an OpenNLP {kind} model file (as OpenNLP 1.5 to 2.x writes it)"),
    };
    config.error(
        key,
        format!(
            "cannot load {kind} model {:?}: {error}{hint}",
            resolved.display()
        ),
    )
}

struct ApplyOpenNLPNameFinders {
    text_field: String,
    tokenizer: Arc<Tokenizer>,
    finders: Vec<(String, Arc<NameFinder>)>,
}

impl Stage for ApplyOpenNLPNameFinders {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let Some(text) = doc.get_string(&self.text_field)? else {
            return Err(StageFailure::msg(format!(
                "ApplyOpenNLPNameFinders: the document has no textField {:?} to find names in",
                self.text_field
            )));
        };
        let tokens = self.tokenizer.tokenize(&text);
        for (field, finder) in &self.finders {
            // Fresh adaptive data per document (see the module comment).
            let mut names: Vec<String> = Vec::new();
            for span in finder.find(&tokens) {
                let name = tokens[span.start..span.end].join(" ");
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            for name in names {
                doc.set_or_add(field, name)?;
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::stage::testing::{build_err, build_stage, process};

    fn fixture(name: &str) -> String {
        format!(
            "{}/../lucille-opennlp/tests/fixtures/{name}",
            env!("CARGO_MANIFEST_DIR")
        )
    }

    fn config(models: Value) -> Value {
        json!({
            "class": "ApplyOpenNLPNameFinders",
            "textField": "text",
            "tokenizerPath": fixture("token.bin"),
            "models": models,
        })
    }

    #[test]
    fn finds_names_per_model_field() {
        let mut stage = build_stage(config(json!({
            "PERSON": fixture("ner-gis.bin"),
            "ALSO": fixture("ner-perceptron.bin"),
        })));
        let doc = process(
            &mut stage,
            json!({"id": "d1", "text": "Pierre Okafor said the weather in New York was fine. Pierre Okafor left."}),
        );
        // One finder trained on both types writes both to its field; a repeated name once.
        let person = doc.get_string_list("PERSON").unwrap();
        assert_eq!(person, ["Pierre Okafor", "New York"], "{doc:?}");
        assert!(!doc.get_string_list("ALSO").unwrap().is_empty());
    }

    #[test]
    fn names_append_to_an_existing_field() {
        let mut stage = build_stage(config(json!({"PERSON": fixture("ner-gis.bin")})));
        let doc = process(
            &mut stage,
            json!({"id": "d1", "text": "Fatima visited Lima last week.", "PERSON": "x"}),
        );
        assert_eq!(
            doc.get_string_list("PERSON").unwrap(),
            ["x", "Fatima", "Lima"]
        );
    }

    #[test]
    fn nothing_found_leaves_the_field_absent() {
        let mut stage = build_stage(config(json!({"PERSON": fixture("ner-gis.bin")})));
        let doc = process(&mut stage, json!({"id": "d1", "text": "it was fine ."}));
        assert!(!doc.has("PERSON"));
    }

    #[test]
    fn a_missing_text_field_fails_the_document() {
        let mut stage = build_stage(config(json!({"PERSON": fixture("ner-gis.bin")})));
        let mut doc = Document::new("d1").unwrap();
        let err = stage
            .process_document(&mut doc)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("no textField \"text\""), "{err}");
    }

    #[test]
    fn bad_models_are_config_errors_at_their_keys() {
        let err = build_err(config(
            json!({"PERSON": "no/such/en-ner-person.bin", "LOC": true}),
        ));
        assert!(
            err.contains("models.LOC: must be the path of a name finder model file"),
            "{err}"
        );
        let err = build_err(config(
            json!({"PERSON": "no/such/en-ner-person.bin", "LOC": fixture("token.bin")}),
        ));
        assert!(
            err.contains("models.PERSON: cannot load name finder model"),
            "{err}"
        );
        assert!(err.contains("check the path"), "{err}");
        assert!(
            err.contains("models.LOC: cannot load name finder model"),
            "{err}"
        );
        assert!(err.contains("needs an OpenNLP name finder model"), "{err}");
        let mut bad = config(json!({"PERSON": fixture("ner-gis.bin")}));
        bad["tokenizerPath"] = json!(fixture("heldout.txt"));
        let err = build_err(bad);
        assert!(
            err.contains("tokenizerPath: cannot load tokenizer model"),
            "{err}"
        );
        let err = build_err(json!({"class": "ApplyOpenNLPNameFinders", "textField": "text"}));
        assert!(
            err.contains("tokenizerPath") && err.contains("models"),
            "{err}"
        );
    }
}
