//! Compares this crate's results with jsonata-python's (the reference implementation) on
//! tests/jsonata/oracle_corpus.json. Expected results come from running tests/jsonata/oracle.py (needs
//! `pip install jsonata-python`); without it the test falls back to the checked-in
//! tests/jsonata/oracle_expected.json, or skips with a message if that is missing too.
//!
//! Cases with a "known_difference" note in the corpus are reported, not failed.

use std::path::Path;
use std::process::Command;

use lucille_jsonata::Expression;
use serde_json::Value;

fn expected_results(dir: &Path) -> Option<Value> {
    let corpus = dir.join("oracle_corpus.json");
    let fresh = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oracle_expected.json");
    let run = Command::new("python3")
        .arg(dir.join("oracle.py"))
        .arg(&corpus)
        .arg(&fresh)
        .output();
    let path = match run {
        Ok(out) if out.status.success() => fresh,
        other => {
            let why = match other {
                Ok(out) => String::from_utf8_lossy(&out.stderr).trim().to_string(),
                Err(e) => format!("python3: {e}"),
            };
            eprintln!(
                "oracle: cannot run jsonata-python ({why}); using tests/jsonata/oracle_expected.json"
            );
            dir.join("oracle_expected.json")
        }
    };
    let text = std::fs::read_to_string(&path).ok()?;
    serde_json::from_str(&text).ok()
}

/// Equal as JSON, with key order significant and numbers compared with a relative tolerance.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => false,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
        }
        _ => a == b,
    }
}

#[test]
fn agrees_with_jsonata_python() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("jsonata");
    let corpus: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("oracle_corpus.json")).expect("corpus"),
    )
    .expect("corpus is JSON");
    let Some(expected) = expected_results(&dir) else {
        eprintln!("oracle: SKIPPED, no jsonata-python and no tests/jsonata/oracle_expected.json");
        return;
    };
    let cases = corpus["cases"].as_array().expect("cases");
    let results = expected["cases"].as_array().expect("expected cases");
    assert_eq!(cases.len(), results.len(), "expected results are stale");
    let (mut agree, mut known, mut failures) = (0, Vec::new(), Vec::new());
    for (case, want) in cases.iter().zip(results) {
        let expr = case["expr"].as_str().expect("expr");
        assert_eq!(
            want["expr"].as_str(),
            Some(expr),
            "expected results are stale"
        );
        let input = &corpus["inputs"][case["input"].as_str().expect("input")];
        let got = Expression::compile(expr).and_then(|mut e| e.evaluate(input));
        let ok = match (want["outcome"].as_str(), &got) {
            (Some("value"), Ok(Some(v))) => same(v, &want["value"]),
            (Some("undefined"), Ok(None)) => true,
            (Some("error"), Err(_)) => true,
            _ => false,
        };
        let line = format!(
            "{expr}\n    jsonata-python: {}\n    this crate:     {}",
            match want["outcome"].as_str() {
                Some("value") => want["value"].to_string(),
                Some("error") => format!("error: {}", want["error"]),
                other => format!("{other:?}"),
            },
            match &got {
                Ok(Some(v)) => v.to_string(),
                Ok(None) => "undefined".to_string(),
                Err(e) => format!("error: {e}"),
            }
        );
        if ok {
            agree += 1;
        } else if let Some(note) = case["known_difference"].as_str() {
            known.push(format!("{line}\n    known difference: {note}"));
        } else {
            failures.push(line);
        }
    }
    for k in &known {
        eprintln!("oracle: {k}");
    }
    eprintln!(
        "oracle: {agree} agree, {} known differences, {} failures of {}",
        known.len(),
        failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "disagreements:\n{}",
        failures.join("\n")
    );
}
