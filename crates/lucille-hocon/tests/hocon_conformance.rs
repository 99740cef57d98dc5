//! HOCON parity with Typesafe Config (the reference HOCON reader), measured on the corpora in
//! `../shared/conformance/` (skipped with a message where that folder is absent):
//!
//! - `hocon-wild/`: real files from public projects, each with what Typesafe Config resolves
//!   it to (or its error) in `expected/`. A file passes when our resolved config equals
//!   Typesafe's (object key order aside, numbers compared as numbers), or when both fail.
//! - `typesafe/resources/equivNN/`: Typesafe's EquivalentsTest: every `.conf` / `.json` of a
//!   folder resolves equal to its `original.json`.
//!
//! Both run with an empty environment (Typesafe's expectations were made without env
//! fallbacks). The test prints the counts and the differences, and fails if a count falls
//! below the last measured one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lucille_hocon::{parse_file, ParseOptions};
use serde_json::Value;

/// hocon-wild files that matched Typesafe when last measured.
const WILD_FLOOR: usize = 186;
/// Typesafe equivalence files that matched when last measured.
const EQUIV_FLOOR: usize = 15;

fn conformance() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance");
    dir.is_dir().then_some(dir)
}

/// Equal as configs: object keys in any order, numbers by value.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// The first path where two configs differ, for the report.
fn first_difference(a: &Value, b: &Value, path: &str) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if !same(v, w) => {
                        return first_difference(v, w, &format!("{path}.{k}"))
                    }
                    None => return format!("{path}.{k}: only ours has it ({v})"),
                    _ => {}
                }
            }
            match y.iter().find(|(k, _)| !x.contains_key(*k)) {
                Some((k, w)) => format!("{path}.{k}: only Typesafe has it ({w})"),
                None => format!("{path}: differ"),
            }
        }
        _ => format!("{path}: ours {a}, Typesafe {b}"),
    }
}

fn opts() -> ParseOptions {
    ParseOptions::with_env(HashMap::new())
}

fn wild(dir: &Path) -> (usize, usize, Vec<String>) {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest"),
    )
    .expect("manifest is JSON");
    let mut files: Vec<String> = manifest["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["file"].as_str().map(String::from))
        .collect();
    if let Ok(stacks) = std::fs::read_dir(dir.join("stacks")) {
        let mut names: Vec<String> = stacks
            .filter_map(|e| e.ok())
            .map(|e| format!("stacks/{}", e.file_name().to_string_lossy()))
            .collect();
        names.sort();
        files.extend(names);
    }
    let (mut passed, mut total, mut report) = (0, 0, Vec::new());
    for file in files {
        let expected_path = dir.join("expected").join(format!("{file}.json"));
        let Ok(text) = std::fs::read_to_string(&expected_path) else {
            continue;
        };
        let Ok(expected) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        total += 1;
        let ours = parse_file(&dir.join(&file), &opts());
        match (&ours, expected.get("config"), expected.get("error")) {
            (Ok(v), Some(want), _) if same(v, want) => passed += 1,
            (Err(_), None, Some(_)) => passed += 1,
            (Ok(v), Some(want), _) => {
                report.push(format!("{file}: {}", first_difference(v, want, "")))
            }
            (Ok(_), None, Some(err)) => {
                report.push(format!("{file}: Typesafe fails ({err}), we do not"))
            }
            (Err(e), Some(_), _) => report.push(format!("{file}: we fail: {e}")),
            _ => report.push(format!("{file}: no expectation")),
        }
    }
    (passed, total, report)
}

fn equivalents(dir: &Path) -> (usize, usize, Vec<String>) {
    let (mut passed, mut total, mut report) = (0, 0, Vec::new());
    let mut folders: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("equiv"))
        })
        .collect();
    folders.sort();
    for folder in folders {
        let original = match parse_file(&folder.join("original.json"), &opts()) {
            Ok(v) => v,
            Err(e) => {
                report.push(format!("{}: original.json: {e}", folder.display()));
                continue;
            }
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.extension().is_some_and(|x| x == "conf" || x == "json")
                    && p.file_name().is_some_and(|n| n != "original.json")
            })
            .collect();
        files.sort();
        for file in files {
            total += 1;
            match parse_file(&file, &opts()) {
                Ok(v) if same(&v, &original) => passed += 1,
                Ok(v) => report.push(format!(
                    "{}: {}",
                    file.display(),
                    first_difference(&v, &original, "")
                )),
                Err(e) => report.push(format!("{}: we fail: {e}", file.display())),
            }
        }
    }
    (passed, total, report)
}

#[test]
fn resolves_as_typesafe_config_does() {
    let Some(dir) = conformance() else {
        eprintln!("hocon conformance: SKIPPED, ../shared/conformance is absent");
        return;
    };
    let (wild_passed, wild_total, wild_report) = wild(&dir.join("hocon-wild"));
    let (eq_passed, eq_total, eq_report) = equivalents(&dir.join("typesafe/resources"));
    for line in wild_report.iter().chain(&eq_report) {
        eprintln!("hocon conformance: {line}");
    }
    eprintln!(
        "hocon conformance: hocon-wild {wild_passed} of {wild_total} as Typesafe; \
         Typesafe equivalents {eq_passed} of {eq_total}"
    );
    assert!(
        wild_passed >= WILD_FLOOR,
        "hocon-wild: {wild_passed} < {WILD_FLOOR}"
    );
    assert!(
        eq_passed >= EQUIV_FLOOR,
        "equivalents: {eq_passed} < {EQUIV_FLOOR}"
    );
}
