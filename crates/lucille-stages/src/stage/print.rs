//! Print: writes each document as one line of JSON, to standard output and/or a file; for
//! debugging pipelines.
//!
//! Keys: `shouldLog` (default true: print to standard output; Lucille logs at INFO level),
//! `outputFile` (also append each document to this file, resolved against the config file's
//! folder), `overwriteFile` (default true: truncate the file when the stage first writes to
//! it; false appends to what is there), `appendThreadName` (default true: add the worker
//! thread's name to the file name, `out.json` → `out-<thread>.json`, so workers never share a
//! file), `whitelist` / `blacklist` (only these fields / all but these; `id` is always kept,
//! and the reserved fields `run_id`, `___children`, `___dropped`, `___skipped` obey the lists
//! too, as in Lucille).
//!
//! The file is opened on the first document (so the name is the thread that uses the stage)
//! and flushed when the stage stops. A write error fails the document. Lucille joins the thread
//! name to the file name without the `-`.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec, Strings};
use crate::document::{Document, ID_FIELD};

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "Print",
    spec: PrintOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Writes each document as one line of JSON, to standard output and/or a file; for debugging
/// pipelines.
#[derive(Options)]
#[options(base = Spec::stage())]
struct PrintOptions {
    /// Print to standard output.
    #[option(default = true)]
    should_log: bool,
    /// Also append each document to this file, resolved against the config file's folder.
    output_file: Option<String>,
    /// Truncate the file when the stage first writes to it; false appends to what is there.
    #[option(default = true)]
    overwrite_file: bool,
    /// Add the worker thread's name to the file name (`out.json` → `out-<thread>.json`), so
    /// workers never share a file.
    #[option(default = true)]
    append_thread_name: bool,
    /// Print only these fields (and `id`).
    whitelist: Option<Strings>,
    /// Print every field but these (`id` is always printed).
    blacklist: Option<Strings>,
}

struct Print {
    to_stdout: bool,
    output: Option<PathBuf>,
    overwrite: bool,
    append_thread_name: bool,
    whitelist: Vec<String>,
    blacklist: Vec<String>,
    writer: Option<(PathBuf, BufWriter<File>)>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = PrintOptions::from_config(config)?;
    let output = match o.output_file.as_deref() {
        Some("") => {
            return Err(config.error("outputFile", "must not be empty").into());
        }
        Some(p) => Some(config.resolve_output_path(p)),
        None => None,
    };
    Ok(Box::new(Print {
        to_stdout: o.should_log,
        output,
        overwrite: o.overwrite_file,
        append_thread_name: o.append_thread_name,
        whitelist: o.whitelist.map(Vec::from).unwrap_or_default(),
        blacklist: o.blacklist.map(Vec::from).unwrap_or_default(),
        writer: None,
    }))
}

/// `dir/name.ext` → `dir/name-<suffix>.ext`.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{suffix}"),
    };
    path.with_file_name(name)
}

/// The current thread's name (or id), made safe for a file name.
fn thread_label() -> String {
    let current = std::thread::current();
    let raw = match current.name() {
        Some(n) => n.to_string(),
        None => format!("{:?}", current.id()),
    };
    raw.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl Print {
    fn include(&self, field: &str) -> bool {
        field == ID_FIELD
            || ((self.whitelist.is_empty() || self.whitelist.iter().any(|w| w == field))
                && !self.blacklist.iter().any(|b| b == field))
    }

    fn line(&self, doc: &Document) -> String {
        if self.whitelist.is_empty() && self.blacklist.is_empty() {
            return doc.to_json();
        }
        let filtered: Map<String, Value> = doc
            .as_map()
            .iter()
            .filter(|(k, _)| self.include(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Value::Object(filtered).to_string()
    }

    fn file(&mut self) -> Result<Option<&mut BufWriter<File>>, StageFailure> {
        if self.writer.is_none() {
            let Some(base) = &self.output else {
                return Ok(None);
            };
            let path = if self.append_thread_name {
                with_suffix(base, &thread_label())
            } else {
                base.clone()
            };
            let file = OpenOptions::new()
                .create(true)
                .write(true)
                .append(!self.overwrite)
                .truncate(self.overwrite)
                .open(&path)
                .map_err(|e| {
                    StageFailure::msg(format!("cannot open {:?} for writing: {e}", path.display()))
                })?;
            self.writer = Some((path, BufWriter::new(file)));
        }
        Ok(self.writer.as_mut().map(|(_, w)| w))
    }
}

impl Stage for Print {
    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let mut line = self.line(doc);
        line.push('\n');
        if self.to_stdout {
            let mut out = std::io::stdout().lock();
            out.write_all(line.as_bytes())
                .and_then(|_| out.flush())
                .map_err(|e| StageFailure::msg(format!("cannot write to standard output: {e}")))?;
        }
        if let Some(w) = self.file()? {
            w.write_all(line.as_bytes())
                .map_err(|e| StageFailure::msg(format!("cannot write to the output file: {e}")))?;
        }
        Ok(None)
    }

    fn stop(&mut self) -> Result<(), StageFailure> {
        if let Some((path, mut w)) = self.writer.take() {
            w.flush().map_err(|e| {
                StageFailure::msg(format!("cannot write to {:?}: {e}", path.display()))
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::with_suffix;
    use crate::stage::testing::{build_err, build_stage, process};
    use serde_json::json;
    use std::path::Path;

    fn temp_dir() -> std::path::PathBuf {
        let file = crate::stage::testing::temp_file("placeholder", b"");
        file.parent().unwrap().to_path_buf()
    }

    #[test]
    fn writes_filtered_lines_to_a_file() {
        let dir = temp_dir();
        let out = dir.join("out.json");
        let mut s = build_stage(json!({"class": "Print", "shouldLog": false,
            "outputFile": out.to_str().unwrap(), "appendThreadName": false,
            "whitelist": ["a", "b", "run_id"], "blacklist": "b"}));
        let doc = process(
            &mut s,
            json!({"id": "d1", "run_id": "r", "a": 1, "b": 2, "c": 3}),
        );
        assert_eq!(
            doc.get("b"),
            Some(&json!(2)),
            "the document itself is untouched"
        );
        process(&mut s, json!({"id": "d2", "___skipped": true}));
        s.stop().unwrap();
        let text = std::fs::read_to_string(&out).unwrap();
        assert_eq!(
            text,
            "{\"id\":\"d1\",\"run_id\":\"r\",\"a\":1}\n{\"id\":\"d2\"}\n"
        );

        // overwriteFile false appends; true (the default) truncates.
        let mut s = build_stage(json!({"class": "Print", "shouldLog": false,
            "outputFile": out.to_str().unwrap(), "appendThreadName": false,
            "overwriteFile": false}));
        process(&mut s, json!({"id": "d3"}));
        s.stop().unwrap();
        assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 3);
        let mut s = build_stage(json!({"class": "Print", "shouldLog": false,
            "outputFile": out.to_str().unwrap(), "appendThreadName": false}));
        process(&mut s, json!({"id": "d4", "x": [1]}));
        s.stop().unwrap();
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"id\":\"d4\",\"x\":[1]}\n"
        );
    }

    #[test]
    fn thread_name_goes_into_the_file_name() {
        let dir = temp_dir();
        let out = dir.join("docs.jsonl");
        let out_str = out.to_str().unwrap().to_string();
        std::thread::Builder::new()
            .name("worker-7".into())
            .spawn(move || {
                let mut s = build_stage(json!({"class": "Print", "shouldLog": false,
                    "outputFile": out_str}));
                process(&mut s, json!({"id": "d"}));
                s.stop().unwrap();
            })
            .unwrap()
            .join()
            .unwrap();
        let written = dir.join("docs-worker-7.jsonl");
        assert_eq!(
            std::fs::read_to_string(written).unwrap(),
            "{\"id\":\"d\"}\n"
        );
        assert!(!out.exists());
        assert_eq!(
            with_suffix(Path::new("a/b"), "t"),
            Path::new("a/b-t"),
            "no extension"
        );
    }

    #[test]
    fn prints_to_stdout_by_default() {
        // Output goes to the test harness; this checks the stage accepts and keeps documents.
        let mut s = build_stage(json!({"class": "Print"}));
        let out = process(&mut s, json!({"id": "d", "a": 1}));
        assert_eq!(out.get("a"), Some(&json!(1)));
    }

    #[test]
    fn bad_configs_and_unwritable_files() {
        assert!(build_err(json!({"class": "Print", "outputFile": ""})).contains("outputFile"));
        assert!(build_err(json!({"class": "Print", "whitelist": {"a": 1}})).contains("whitelist"));
        assert!(build_err(json!({"class": "Print", "shouldLog": "loud"})).contains("shouldLog"));
        let mut s = build_stage(json!({"class": "Print", "shouldLog": false,
            "outputFile": "/nonexistent-dir/x/out.json"}));
        let err = crate::stage::testing::process_err(&mut s, json!({"id": "d"}));
        assert!(err.contains("cannot open"), "{err}");
    }
}
