//! OpenAIEmbed and PromptOllama against local HTTP servers (tiny_http) answering with the
//! real request and response shapes of the OpenAI embeddings API and Ollama's chat API,
//! including error answers and 429s.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::document::Document;
use crate::http::mock::{Mock, Seen};
use crate::stage::testing::{build_err, build_stage, process, process_err};

/// The OpenAI embeddings answer for the request: each input's vector is [length, 1.0, index].
fn embeddings_answer(seen: &Seen) -> (u16, String) {
    let req: Value = serde_json::from_str(&seen.body).unwrap();
    let inputs = req["input"].as_array().unwrap();
    // Answer out of order: the stage must sort by `index`.
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            json!({"object": "embedding", "index": i,
                   "embedding": [t.as_str().unwrap().len() as f64, 1.0, i as f64]})
        })
        .collect();
    let answer = json!({"object": "list", "data": data, "model": req["model"],
        "usage": {"prompt_tokens": 3, "total_tokens": 3}});
    (200, answer.to_string())
}

fn embed_config(url: &str) -> Value {
    json!({"class": "OpenAIEmbed", "source": "text", "dest": "v", "embed_document": true,
           "embed_children": false, "api_key": "sk-test", "url": format!("{url}/v1"),
           "model_name": "nomic-embed-text", "dimensions": 3, "batchSize": 2,
           "retryWaitDurationMs": 1, "maxRetries": 2})
}

fn doc(id: &str, v: Value) -> Document {
    let mut m = v.as_object().unwrap().clone();
    m.insert("id".into(), json!(id));
    Document::from_json(&Value::Object(m).to_string()).unwrap()
}

fn floats(d: &Document, f: &str) -> Vec<f64> {
    d.get_list_as::<f64>(f)
        .unwrap()
        .into_iter()
        .map(|x| x.unwrap())
        .collect()
}

#[test]
fn openai_embed_sends_batches_and_stores_each_vector() {
    let mock = Mock::start(Box::new(embeddings_answer));
    let mut stage = build_stage(embed_config(&mock.url));
    assert_eq!(stage.batch_size(), 2);
    let mut docs = vec![
        doc("a", json!({"text": "hello"})),
        doc("b", json!({"text": "  "})),
        doc("c", json!({"text": "abc"})),
    ];
    let results = stage.process_batch(&mut docs);
    assert!(results.iter().all(|r| matches!(r, Ok(None))));
    assert_eq!(floats(&docs[0], "v"), [5.0, 1.0, 0.0]);
    assert!(!docs[1].has("v"), "a blank text is not sent");
    assert_eq!(floats(&docs[2], "v"), [3.0, 1.0, 1.0]);
    let seen = mock.requests();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path(), "/v1/embeddings");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test"));
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(
        body,
        json!({"model": "nomic-embed-text", "input": ["hello", "abc"],
               "encoding_format": "float", "dimensions": 3})
    );
}

#[test]
fn openai_embed_retries_429_and_fails_documents_on_errors() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mock = Mock::start(Box::new(move |seen: &Seen| {
        match c.fetch_add(1, Ordering::SeqCst) {
            0 => (
                429,
                json!({"error": {"message": "Rate limit reached", "type": "requests"}}).to_string(),
            ),
            1 => embeddings_answer(seen),
            _ => (
                400,
                json!({"error": {"message": "input too long", "type": "invalid_request_error"}})
                    .to_string(),
            ),
        }
    }));
    let mut stage = build_stage(embed_config(&mock.url));
    let d = process(&mut stage, json!({"id": "1", "text": "hi"}));
    assert_eq!(floats(&d, "v"), [2.0, 1.0, 0.0]);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the 429 was retried");
    let err = process_err(&mut stage, json!({"id": "2", "text": "hi"}));
    assert!(
        err.contains("HTTP 400") && err.contains("input too long"),
        "{err}"
    );
    // 429 for good: the retries run out and the document fails.
    let always = Mock::start(Box::new(|_: &Seen| (429, "{}".to_string())));
    let mut stage = build_stage(embed_config(&always.url));
    let err = process_err(&mut stage, json!({"id": "3", "text": "hi"}));
    assert!(err.contains("after 3 attempts"), "{err}");
    assert_eq!(always.requests().len(), 3);
}

#[test]
fn openai_embed_embeds_attached_children_and_checks_the_answer() {
    let mock = Mock::start(Box::new(embeddings_answer));
    let mut c = embed_config(&mock.url);
    c["embed_document"] = json!(false);
    c["embed_children"] = json!(true);
    let mut stage = build_stage(c);
    let mut parent = doc("p", json!({"text": "parent"}));
    parent.add_child(doc("p-1", json!({"text": "one"})));
    parent.add_child(doc("p-2", json!({"text": "three"})));
    let r = stage.process_batch(std::slice::from_mut(&mut parent));
    assert!(matches!(r[0], Ok(None)));
    assert!(!parent.has("v"));
    let kids = parent.children();
    assert_eq!(floats(&kids[0], "v"), [3.0, 1.0, 0.0]);
    assert_eq!(floats(&kids[1], "v"), [5.0, 1.0, 1.0]);
    // An answer with the wrong number of embeddings fails the document.
    let short = Mock::start(Box::new(|_: &Seen| {
        (200, json!({"object": "list", "data": []}).to_string())
    }));
    let mut stage = build_stage(embed_config(&short.url));
    let err = process_err(&mut stage, json!({"id": "x", "text": "hi"}));
    assert!(err.contains("0 embeddings for 1 inputs"), "{err}");
}

#[test]
fn openai_embed_config_errors() {
    let mut c = embed_config("http://127.0.0.1:1");
    c["embed_document"] = json!(false);
    assert!(build_err(c).contains("embedChildren are both false"));
    let mut c = embed_config("http://127.0.0.1:1");
    c["api_key"] = json!(" ");
    assert!(build_err(c).contains("apiKey"));
    let mut c = embed_config("http://127.0.0.1:1");
    c.as_object_mut().unwrap().remove("maxRetries");
    assert!(build_err(c).contains("needs maxRetries"));
    let mut c = embed_config("http://127.0.0.1:1");
    c["url"] = json!("not a url");
    assert!(build_err(c).contains("url"));
    let mut c = embed_config("http://127.0.0.1:1");
    c.as_object_mut().unwrap().remove("embed_children");
    assert!(build_err(c).contains("embedChildren"));
    // Current Lucille's names.
    let mut c = embed_config("http://127.0.0.1:1");
    let map = c.as_object_mut().unwrap();
    for (old, new) in [
        ("embed_document", "embedDocument"),
        ("embed_children", "embedChildren"),
        ("api_key", "apiKey"),
        ("model_name", "modelName"),
    ] {
        let v = map.remove(old).unwrap();
        map.insert(new.to_string(), v);
    }
    crate::stage::testing::build_stage(c);
}

fn chat_answer(content: &str) -> String {
    json!({"model": "llama3.2", "created_at": "2024-07-22T20:33:28.123648Z",
           "message": {"role": "assistant", "content": content},
           "done_reason": "stop", "done": true, "total_duration": 5191566416u64,
           "eval_count": 12})
    .to_string()
}

#[test]
fn prompt_ollama_sends_the_chat_request_and_merges_a_json_answer() {
    let mock = Mock::start(Box::new(|_: &Seen| {
        (
            200,
            chat_answer(r#"{"summary": "a cat", "people": ["Ann", "Bo"], "title": "new"}"#),
        )
    }));
    let mut stage = build_stage(json!({"class": "PromptOllama", "hostURL": mock.url,
        "modelName": "llama3.2", "systemPrompt": "Summarise as JSON.", "fields": ["body"],
        "requireJSON": true, "update_mode": "skip"}));
    let d = process(
        &mut stage,
        json!({"id": "1", "body": "The cat sat.", "title": "old"}),
    );
    assert_eq!(d.get("summary"), Some(&json!("a cat")));
    assert_eq!(d.get("people"), Some(&json!(["Ann", "Bo"])));
    assert_eq!(
        d.get("title"),
        Some(&json!("old")),
        "skip keeps an existing field"
    );
    let seen = &mock.requests()[0];
    assert_eq!(seen.path(), "/api/chat");
    let body: Value = serde_json::from_str(&seen.body).unwrap();
    assert_eq!(
        body,
        json!({"model": "llama3.2", "stream": false, "format": "json", "messages": [
            {"role": "system", "content": "Summarise as JSON."},
            {"role": "user", "content": "{\"body\":\"The cat sat.\"}"}]})
    );
}

#[test]
fn prompt_ollama_text_answers_errors_and_429s() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mock = Mock::start(Box::new(move |_: &Seen| {
        match c.fetch_add(1, Ordering::SeqCst) {
            0 => (429, "Too Many Requests".to_string()),
            1 | 2 => (200, chat_answer("Just some text.")),
            _ => (
                404,
                json!({"error": "model \"nope\" not found, try pulling it first"}).to_string(),
            ),
        }
    }));
    let config = json!({"class": "PromptOllama", "hostURL": format!("{}/", mock.url),
        "modelName": "llama3.2", "retryWaitDurationMs": 1, "maxRetries": 1});
    let mut stage = build_stage(config.clone());
    let d = process(&mut stage, json!({"id": "1", "body": "x"}));
    assert_eq!(d.get("ollamaResponse"), Some(&json!("Just some text.")));
    let seen = mock.requests();
    assert_eq!(seen.len(), 2, "the 429 was retried");
    let body: Value = serde_json::from_str(&seen[1].body).unwrap();
    assert!(body.get("format").is_none());
    let user: Value =
        serde_json::from_str(body["messages"][0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        user["id"],
        json!("1"),
        "the whole document is sent without `fields`"
    );
    let mut strict = config.clone();
    strict["requireJSON"] = json!(true);
    let mut strict = build_stage(strict);
    let err = process_err(&mut strict, json!({"id": "2"}));
    assert!(err.contains("not a JSON object"), "{err}");
    let err = process_err(&mut stage, json!({"id": "3"}));
    assert!(
        err.contains("HTTP 404") && err.contains("try pulling it first"),
        "{err}"
    );
    assert!(build_err(json!({"class": "PromptOllama", "hostURL": "x"})).contains("modelName"));
    assert!(build_err(
        json!({"class": "PromptOllama", "hostURL": mock.url, "modelName": "m",
        "timeout": 0})
    )
    .contains("timeout"));
}

/// Ollama's /api/embed answer for the request: each input's vector is [length, 0.5, index].
fn ollama_embed_answer(seen: &Seen) -> (u16, String) {
    let req: Value = serde_json::from_str(&seen.body).unwrap();
    let embeddings: Vec<Value> = req["input"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| json!([t.as_str().unwrap().len() as f64, 0.5, i as f64]))
        .collect();
    let answer = json!({"model": req["model"], "embeddings": embeddings,
        "total_duration": 14143917u64, "load_duration": 1019500u64, "prompt_eval_count": 8});
    (200, answer.to_string())
}

fn ollama_config(url: &str) -> Value {
    json!({"class": "OllamaEmbed", "hostURL": format!("{url}/"), "modelName": "nomic-embed-text",
           "source": "text", "dest": "v", "batchSize": 2, "retryWaitDurationMs": 1,
           "maxRetries": 2})
}

#[test]
fn ollama_embed_sends_batches_to_api_embed_and_stores_each_vector() {
    let mock = Mock::start(Box::new(ollama_embed_answer));
    let mut c = ollama_config(&mock.url);
    c["keepAlive"] = json!("10m");
    c["options"] = json!({"num_ctx": 512});
    let mut stage = build_stage(c);
    assert_eq!(stage.batch_size(), 2);
    let mut docs = vec![
        doc("a", json!({"text": "hello"})),
        doc("b", json!({"other": "x"})),
        doc("c", json!({"text": ["abc", "second value"]})),
        doc("d", json!({"text": "four"})),
    ];
    let results = stage.process_batch(&mut docs);
    assert!(results.iter().all(|r| matches!(r, Ok(None))));
    assert_eq!(floats(&docs[0], "v"), [5.0, 0.5, 0.0]);
    assert!(!docs[1].has("v"), "a missing source is not sent");
    assert_eq!(floats(&docs[2], "v"), [3.0, 0.5, 1.0], "the first value");
    assert_eq!(floats(&docs[3], "v"), [4.0, 0.5, 0.0], "second request");
    let seen = mock.requests();
    assert_eq!(seen.len(), 2, "3 texts in batches of 2");
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path(), "/api/embed");
    assert_eq!(seen[0].header("authorization"), None);
    let body: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(
        body,
        json!({"model": "nomic-embed-text", "input": ["hello", "abc"], "truncate": true,
               "keep_alive": "10m", "options": {"num_ctx": 512}})
    );
    let body: Value = serde_json::from_str(&seen[1].body).unwrap();
    assert_eq!(body["input"], json!(["four"]));
    // The stored vector is float32, as Document.set_vector writes it.
    let mock = Mock::start(Box::new(|_: &Seen| {
        (
            200,
            json!({"embeddings": [[0.123456789012, 1e-3]]}).to_string(),
        )
    }));
    let mut c = ollama_config(&mock.url);
    c["truncate"] = json!(false);
    let mut stage = build_stage(c);
    let d = process(&mut stage, json!({"id": "1", "text": "x"}));
    assert_eq!(floats(&d, "v"), [0.12345679, 0.001], "float32 precision");
    let body: Value = serde_json::from_str(&mock.requests()[0].body).unwrap();
    assert_eq!(
        body,
        json!({"model": "nomic-embed-text", "input": ["x"], "truncate": false})
    );
}

#[test]
fn ollama_embed_embeds_attached_children() {
    let mock = Mock::start(Box::new(ollama_embed_answer));
    let mut c = ollama_config(&mock.url);
    c["embedDocument"] = json!(false);
    c["embedChildren"] = json!(true);
    c["batchSize"] = json!(8);
    let mut stage = build_stage(c);
    let mut parent = doc("p", json!({"text": "parent"}));
    parent.add_child(doc("p-1", json!({"text": "one"})));
    parent.add_child(doc("p-2", json!({"text": " "})));
    parent.add_child(doc("p-3", json!({"text": "three"})));
    let r = stage.process_batch(std::slice::from_mut(&mut parent));
    assert!(matches!(r[0], Ok(None)));
    assert!(!parent.has("v"));
    let kids = parent.children();
    assert_eq!(kids.len(), 3);
    assert_eq!(floats(&kids[0], "v"), [3.0, 0.5, 0.0]);
    assert!(!kids[1].has("v"));
    assert_eq!(floats(&kids[2], "v"), [5.0, 0.5, 1.0]);
}

#[test]
fn ollama_embed_retries_429_and_fails_the_request_s_documents_with_the_server_s_message() {
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let mock = Mock::start(Box::new(move |seen: &Seen| {
        match c.fetch_add(1, Ordering::SeqCst) {
            0 => (429, json!({"error": "server busy"}).to_string()),
            1 => ollama_embed_answer(seen),
            2 => (
                404,
                json!({"error": "model \"nope\" not found, try pulling it first"}).to_string(),
            ),
            3 => (
                400,
                json!({"error": "the input length exceeds the context length"}).to_string(),
            ),
            4 => (
                200,
                json!({"model": "m", "embeddings": [[1.0]]}).to_string(),
            ),
            5 => (200, "<html>busy</html>".to_string()),
            _ => (500, "plain failure".to_string()),
        }
    }));
    let mut stage = build_stage(ollama_config(&mock.url));
    let d = process(&mut stage, json!({"id": "1", "text": "hi"}));
    assert_eq!(floats(&d, "v"), [2.0, 0.5, 0.0]);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the 429 was retried");
    let err = process_err(&mut stage, json!({"id": "2", "text": "hi"}));
    assert!(
        err.contains("/api/embed answered HTTP 404")
            && err.contains("model \"nope\" not found, try pulling it first"),
        "{err}"
    );
    // Both documents of the request fail; the one without text is not in it and succeeds.
    let mut docs = vec![
        doc("3", json!({"text": "a"})),
        doc("4", json!({})),
        doc("5", json!({"text": "b"})),
    ];
    let results = stage.process_batch(&mut docs);
    for i in [0, 2] {
        let e = results[i].as_ref().err().unwrap().to_string();
        assert!(
            e.contains("HTTP 400") && e.contains("exceeds the context length"),
            "{e}"
        );
    }
    assert!(matches!(results[1], Ok(None)));
    // One embedding for two inputs.
    let results = stage.process_batch(&mut docs);
    let e = results[0].as_ref().err().unwrap().to_string();
    assert!(e.contains("1 embeddings for 2 inputs"), "{e}");
    assert!(results[2].is_err() && !docs[0].has("v") && !docs[2].has("v"));
    let err = process_err(&mut stage, json!({"id": "6", "text": "hi"}));
    assert!(err.contains("(not JSON): <html>busy</html>"), "{err}");
    let err = process_err(&mut stage, json!({"id": "7", "text": "hi"}));
    assert!(
        err.contains("HTTP 500") && err.contains("plain failure"),
        "{err}"
    );
    // No server: refused, retried, then the document fails.
    let port = crate::http::mock::free_port();
    let mut stage = build_stage(ollama_config(&format!("http://127.0.0.1:{port}")));
    let err = process_err(&mut stage, json!({"id": "8", "text": "hi"}));
    assert!(
        err.starts_with("embedding failed") && err.contains("after 3 attempts"),
        "{err}"
    );
}

#[test]
fn ollama_embed_config_errors() {
    let base = || ollama_config("http://127.0.0.1:1");
    let err = build_err(json!({"class": "OllamaEmbed", "source": "text"}));
    assert!(
        err.contains("stage.hostURL") && err.contains("stage.modelName"),
        "{err}"
    );
    let mut c = base();
    c["embedDocument"] = json!(false);
    let err = build_err(c);
    assert!(
        err.contains("stage.embedDocument") && err.contains("both false"),
        "{err}"
    );
    let mut c = base();
    c["hostURL"] = json!("localhost 11434");
    assert!(build_err(c).contains("stage.hostURL"));
    let mut c = base();
    c["keepAlive"] = json!("5 minutes");
    let err = build_err(c);
    assert!(
        err.contains("stage.keepAlive") && err.contains("not a duration"),
        "{err}"
    );
    let mut c = base();
    c["timeout"] = json!(0);
    assert!(build_err(c).contains("stage.timeout"));
    let mut c = base();
    c["options"] = json!("num_ctx=2");
    assert!(build_err(c).contains("stage.options"));
    let mut c = base();
    c.as_object_mut().unwrap().remove("maxRetries");
    assert!(build_err(c).contains("needs maxRetries"));
    let mut c = base();
    c["dest"] = json!("");
    assert!(build_err(c).contains("stage.dest"));
    let mut c = base();
    c["modelName"] = json!(" ");
    assert!(build_err(c).contains("stage.modelName"));
    let mut c = base();
    c["embed_children"] = json!(true);
    assert!(build_err(c).contains("embed_children"), "unknown key");
    // Lucille's pull request's config: defaults for the rest.
    let stage = build_stage(json!({"class": "com.kmwllc.lucille.stage.OllamaEmbed",
        "hostURL": "http://localhost:11434", "modelName": "mxbai-embed-large",
        "source": "text", "timeout": 30}));
    assert_eq!(stage.batch_size(), 32);
}
