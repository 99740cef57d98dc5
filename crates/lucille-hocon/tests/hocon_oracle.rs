//! Oracle test: every `tests/corpus/*.conf` is parsed by our module and by
//! pyhocon (through `tests/hocon/pyhocon_oracle.py`), and the JSON results must be
//! identical, including key order.
//!
//! Where pyhocon deviates from the HOCON spec / Typesafe Config, the case has a
//! `NAME.expected.json` next to it: our result must equal that file, and the
//! pyhocon result is only reported. A `NAME.expected-error.txt` file marks a
//! case that must fail; its content is a substring of our error message.
//!
//! If python3 or pyhocon is missing, the pyhocon comparison is skipped with a
//! printed message (the expected.json / expected-error cases still run).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lucille_hocon::{parse_file, ParseOptions};
use serde_json::Value;

/// Corpus folder, relative to the crate root.
const CORPUS: &str = "tests/hocon/corpus";
/// pyhocon helper script, relative to the crate root.
const HELPER: &str = "tests/hocon/pyhocon_oracle.py";

const ENV: &[(&str, &str)] = &[
    ("HOCON_TEST_HOST", "example.org"),
    ("HOCON_TEST_PORT", "8983"),
    ("hocon.test.dotted", "dotted-env"),
    ("HOCON_TEST_EMPTY", ""),
];

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(CORPUS)
}

fn test_env() -> HashMap<String, String> {
    let mut env: HashMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| !k.starts_with("HOCON_TEST_"))
        .collect();
    for (k, v) in ENV {
        env.insert(k.to_string(), v.to_string());
    }
    env
}

enum Py {
    Value(Value),
    Failed(String),
}

/// Run pyhocon on all `files` in one python process. `Err` if python3 or
/// pyhocon is unavailable.
fn pyhocon_all(files: &[PathBuf]) -> Result<HashMap<PathBuf, Py>, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(HELPER);
    let mut cmd = Command::new("python3");
    cmd.arg(&script).args(files);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("HOCON_TEST_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in ENV {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    match out.status.code() {
        Some(0) => {}
        Some(3) => return Err("pyhocon is not installed (pip install pyhocon)".into()),
        _ => {
            return Err(format!(
                "pyhocon helper failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut results = HashMap::new();
    for (file, line) in files.iter().zip(text.lines()) {
        let parsed: Value =
            serde_json::from_str(line).map_err(|e| format!("bad helper output: {e}"))?;
        let py = match (parsed.get("ok"), parsed.get("error")) {
            (Some(v), _) => Py::Value(v.clone()),
            (None, Some(e)) => Py::Failed(shorten(e.as_str().unwrap_or_default())),
            _ => Py::Failed("no result".into()),
        };
        results.insert(file.clone(), py);
    }
    Ok(results)
}

/// pyparsing errors are huge; keep the start and the tail.
fn shorten(err: &str) -> String {
    let err = err.replace('\n', " ");
    let chars: Vec<char> = err.chars().collect();
    if chars.len() > 200 {
        let head: String = chars[..80].iter().collect();
        let tail: String = chars[chars.len() - 100..].iter().collect();
        format!("{head} ... {tail}")
    } else {
        err
    }
}

fn show(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

#[test]
fn oracle_corpus() {
    let dir = corpus_dir();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 40, "corpus has only {} cases", cases.len());

    let opts = ParseOptions::with_env(test_env());
    let py = match pyhocon_all(&cases) {
        Ok(r) => Some(r),
        Err(why) => {
            println!("SKIPPING pyhocon comparison: {why}");
            None
        }
    };
    let pyhocon = |p: &Path| py.as_ref().and_then(|r| r.get(p));

    let mut failures: Vec<String> = Vec::new();
    let mut compared = 0;
    let mut overridden = 0;
    for case in &cases {
        let name = case
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        let stem = name.trim_end_matches(".conf");
        let expected_json = dir.join(format!("{stem}.expected.json"));
        let expected_err = dir.join(format!("{stem}.expected-error.txt"));
        let mine = parse_file(case, &opts);

        if expected_err.exists() {
            let needle = std::fs::read_to_string(&expected_err).expect("read expected-error");
            let needle = needle.trim();
            match &mine {
                Ok(v) => failures.push(format!("{name}: expected an error, got {}", show(v))),
                Err(e) if !e.to_string().contains(needle) => {
                    failures.push(format!("{name}: error {e:?} does not contain {needle:?}"))
                }
                Err(e) => println!("{name}: error as expected: {e}"),
            }
            match pyhocon(case) {
                Some(Py::Value(v)) => println!("  note: pyhocon accepts {name}: {}", show(v)),
                Some(Py::Failed(e)) => println!("  pyhocon also fails: {e}"),
                None => {}
            }
            overridden += 1;
            continue;
        }

        let mine = match mine {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{name}: our parser failed: {e}"));
                continue;
            }
        };

        if expected_json.exists() {
            let text = std::fs::read_to_string(&expected_json).expect("read expected.json");
            let want: Value = serde_json::from_str(&text).expect("expected.json is JSON");
            if show(&mine) != show(&want) {
                failures.push(format!(
                    "{name}: differs from expected.json\n    ours:     {}\n    expected: {}",
                    show(&mine),
                    show(&want)
                ));
            }
            match pyhocon(case) {
                Some(Py::Value(v)) if show(v) == show(&want) => {
                    println!("  note: {name} has an expected.json but pyhocon now agrees with it")
                }
                Some(Py::Value(v)) => {
                    println!("{name}: pyhocon deviates (spec result used): {}", show(v))
                }
                Some(Py::Failed(e)) => println!("{name}: pyhocon fails (spec result used): {e}"),
                None => {}
            }
            overridden += 1;
            continue;
        }

        match pyhocon(case) {
            None => {}
            Some(Py::Value(v)) => {
                compared += 1;
                if show(v) != show(&mine) {
                    failures.push(format!(
                        "{name}: differs from pyhocon\n    ours:    {}\n    pyhocon: {}",
                        show(&mine),
                        show(v)
                    ));
                }
            }
            Some(Py::Failed(e)) => failures.push(format!(
                "{name}: pyhocon failed ({e}); ours: {}",
                show(&mine)
            )),
        }
    }
    println!(
        "oracle corpus: {} cases, {compared} compared with pyhocon, {overridden} with expected files",
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} corpus failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
