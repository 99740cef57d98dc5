//! `indexer.type: "jsonl"` with `jsonl { path, append }`: one JSON object per line.
//!
//! An upsert writes the document (`{"id": ..., fields...}`, plus `"_index"` when an index
//! override applies), and its attached child documents as `"___children": [{"id": ...,
//! fields...}, ...]` after its fields, as Lucille's JSON form of a document holds them (each
//! child filtered as the document is, with its own children the same way): reading the line
//! back as a document gives them back. A file cannot delete, so deletes are written as intent lines that a
//! consumer can apply: `{"id": ..., "_delete": true}` and
//! `{"_delete_by": {"field": ..., "value": ...}}`. Each batch is written whole or not at all
//! (`batch_file`): a FINISH event always means the line is in the file, and a batch whose
//! write fails (a full disk, a file-size limit) FAILs with no partial line left behind.

use std::fs::OpenOptions;
use std::path::PathBuf;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::batch_file::BatchFile;
use super::{
    take_encoded, Backend, BackendCheck, BackendError, BackendOutput, ChildDocuments, EncodeError,
    Encoded, Encoder, IndexOp, Opening,
};
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::document::write::{write_object, write_str, write_value};
use crate::document::CHILDREN_FIELD;

inventory::submit!(super::IndexerDescriptor {
    name: "jsonl",
    aliases: &[],
    spec: JsonlOptions::spec,
    // Checking only reads the block: the file is created (or truncated) at build.
    check: |_, config| {
        let o = JsonlOptions::from_config(config)?;
        Ok(BackendCheck {
            output: Some(BackendOutput {
                path: config.resolve_output_path(&o.path),
                replaced: !Opening::Fresh.appends(o.append),
            }),
            ..BackendCheck::default()
        })
    },
    build: |_, config, opening| Ok(Box::new(JsonlBackend::from_config(config, opening)?)),
});

/// Writes one JSON object per line to a file (deletes as intent lines a consumer can apply).
#[derive(Options)]
struct JsonlOptions {
    /// The file written (its folder is created if missing).
    path: String,
    /// true: lines are added to an existing file instead of replacing it (default false; a
    /// long-running `lucille indexer` appends unless this is false).
    append: Option<bool>,
}

pub struct JsonlBackend {
    out: BatchFile,
    /// The batch being written, reused between batches.
    batch: Vec<u8>,
}

impl JsonlBackend {
    /// Opens the `jsonl` block's file (replaced or appended to: see [`Opening`]).
    pub fn from_config(config: &ComponentConfig, opening: Opening) -> Result<Self, ConfigErrors> {
        let o = JsonlOptions::from_config(config)?;
        let path = config.resolve_output_path(&o.path);
        Ok(Self::open(path, opening.appends(o.append))
            .map_err(|e| config.error("path", e.message))?)
    }

    pub fn open(path: PathBuf, append: bool) -> Result<Self, BackendError> {
        crate::config::paths::create_parent_folder(&path).map_err(|e| {
            let dir = path.parent().unwrap_or(&path);
            BackendError::new(format!("cannot create {}: {e}", dir.display()))
        })?;
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .map_err(|e| BackendError::new(format!("cannot open {}: {e}", path.display())))?;
        let out = BatchFile::new(path.clone(), file)
            .map_err(|e| BackendError::new(format!("cannot open {}: {e}", path.display())))?;
        Ok(JsonlBackend {
            out,
            batch: Vec::new(),
        })
    }

    /// Writes one op's line (with its newline) straight from the op: an upsert's fields are
    /// serialised where they are, never copied into a new object.
    fn write_line(out: &mut Vec<u8>, op: &IndexOp) -> serde_json::Result<()> {
        match op {
            IndexOp::Upsert {
                id,
                index,
                fields,
                children,
                ..
            } => {
                out.extend_from_slice(b"{\"id\":");
                write_str(out, id);
                if let Some(i) = index {
                    out.extend_from_slice(b",\"_index\":");
                    write_str(out, i);
                }
                for (k, v) in fields {
                    out.push(b',');
                    write_str(out, k);
                    out.push(b':');
                    write_value(out, v);
                }
                if !children.is_empty() {
                    out.extend_from_slice(b",");
                    write_str(out, CHILDREN_FIELD);
                    out.extend_from_slice(b":[");
                    for (n, child) in children.iter().enumerate() {
                        if n > 0 {
                            out.push(b',');
                        }
                        write_object(out, child.iter());
                    }
                    out.push(b']');
                }
                out.push(b'}');
            }
            IndexOp::DeleteById { id, index, .. } => {
                let v = match index {
                    Some(i) => json!({"id": id, "_index": i, "_delete": true}),
                    None => json!({"id": id, "_delete": true}),
                };
                serde_json::to_writer(&mut *out, &v)?;
            }
            IndexOp::DeleteByField {
                field,
                value,
                index,
            } => {
                let v = match index {
                    Some(i) => json!({"_delete_by": {"field": field, "value": value}, "_index": i}),
                    None => json!({"_delete_by": {"field": field, "value": value}}),
                };
                serde_json::to_writer(&mut *out, &v)?;
            }
        }
        out.push(b'\n');
        Ok(())
    }
}

/// Encodes each op's line on the worker threads; the indexer thread only writes bytes.
#[derive(Default)]
struct LineEncoder {
    /// The last line's length: the next buffer is sized for it, so it rarely regrows.
    last_len: AtomicUsize,
}

impl Encoder for LineEncoder {
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError> {
        let hint = self.last_len.load(Ordering::Relaxed);
        let mut line = Vec::with_capacity(hint + hint / 4 + 64);
        JsonlBackend::write_line(&mut line, op).map_err(EncodeError::new)?;
        self.last_len.store(line.len(), Ordering::Relaxed);
        if let IndexOp::Upsert {
            fields, children, ..
        } = op
        {
            // Encoded: the fields (and children: the line holds them all) are no longer
            // needed, and are freed here on the worker.
            *fields = crate::document::Fields::default();
            *children = Default::default();
        }
        Ok(Some(Box::new(line)))
    }
}

impl Backend for JsonlBackend {
    /// The line holds the children, with theirs.
    fn child_documents(&self) -> ChildDocuments {
        ChildDocuments::All
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        self.send_encoded(ops, Vec::new())
    }

    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        Some(Arc::new(LineEncoder::default()))
    }

    fn send_encoded(
        &mut self,
        ops: &[IndexOp],
        mut encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        let all_lines = encoded.len() == ops.len()
            && encoded
                .iter()
                .all(|e| e.as_ref().is_some_and(|b| b.is::<Vec<u8>>()));
        if all_lines {
            // Every line was encoded on a worker: written as they are, gathered by the kernel.
            let lines: Vec<Vec<u8>> = (0..ops.len())
                .filter_map(|i| take_encoded::<Vec<u8>>(&mut encoded, i))
                .collect();
            let parts: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
            self.out.write_parts(&parts)?;
            return Ok(vec![None; ops.len()]);
        }
        let mut batch = std::mem::take(&mut self.batch);
        batch.clear();
        for (i, op) in ops.iter().enumerate() {
            match take_encoded::<Vec<u8>>(&mut encoded, i) {
                Some(bytes) => batch.extend_from_slice(&bytes),
                None => Self::write_line(&mut batch, op).map_err(|e| {
                    BackendError::new(format!("writing {} failed: {e}", self.out.path().display()))
                })?,
            }
        }
        let written = self.out.write_batch(&batch);
        // A huge batch's buffer is not kept for the rest of the run.
        if batch.capacity() <= 8 << 20 {
            self.batch = batch;
        }
        written?;
        Ok(vec![None; ops.len()])
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.out.sync()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::config::ComponentConfig;
    use crate::indexer::{build_backend, validate_backend, IndexerSettings};

    #[test]
    fn checking_creates_no_file_and_building_does() {
        let dir = std::env::temp_dir().join(format!(
            "lucille-jsonl-{}",
            crate::document::ids::random_id()
        ));
        let path = dir.join("out.jsonl");
        let settings = IndexerSettings {
            kind: "jsonl".into(),
            ..IndexerSettings::default()
        };
        let block = |v: Value| match v {
            Value::Object(m) => ComponentConfig::new(m, "jsonl"),
            _ => unreachable!(),
        };
        let ok = block(json!({"path": path.to_str(), "append": "yes"}));
        validate_backend(&settings, &ok).unwrap();
        assert!(!path.exists() && !dir.exists());
        let e = validate_backend(&settings, &block(json!({"pth": "x"}))).unwrap_err();
        let text: Vec<String> = e.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "jsonl.pth: unknown key \"pth\" (did you mean \"path\"?)",
                "jsonl.path: missing required key \"path\" (a string)"
            ]
        );
        build_backend(&settings, &ok, crate::indexer::Opening::Fresh).unwrap();
        assert!(path.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A line holds the document's children as `___children`, each filtered as the document
    /// is, with their own children: reading the line back gives the same children, both
    /// from a worker's encoding and from the indexer thread's.
    #[test]
    fn a_line_holds_the_children_as_the_document_json_form_does() {
        use crate::document::Document;
        use crate::indexer::{Backend, Encoder};
        let dir = std::env::temp_dir().join(format!(
            "lucille-jsonl-{}",
            crate::document::ids::random_id()
        ));
        let path = dir.join("out.jsonl");
        let settings = IndexerSettings::from_config(&ComponentConfig::new(
            match json!({"type": "jsonl", "blacklist": ["secret"]}) {
                Value::Object(m) => m,
                _ => unreachable!(),
            },
            "indexer",
        ))
        .unwrap();
        let doc = Document::from_value(json!({"id": "p", "t": "parent", "secret": "s",
        "___children": [
            {"id": "c1", "t": "one", "secret": "x", "run_id": "r0",
             "___children": [{"id": "g1", "t": "grandchild", "secret": "y"}]},
            {"id": "c2", "t": "two"}
        ]}))
        .unwrap();
        let mut b = super::JsonlBackend::open(path.clone(), false).unwrap();
        let mut encoded_op = settings.op_for(&doc);
        let encoded = super::LineEncoder::default()
            .encode(&mut encoded_op)
            .unwrap();
        let plain =
            settings.op_for(&Document::from_value(json!({"id": "q", "t": "none"})).unwrap());
        let thread_op = settings.op_for(&doc);
        let r = b
            .send_encoded(&[encoded_op, plain, thread_op], vec![encoded, None, None])
            .unwrap();
        assert_eq!(r, [None, None, None]);
        b.close().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let expected = r#"{"id":"p","t":"parent","___children":[{"id":"c1","t":"one","___children":[{"id":"g1","t":"grandchild"}]},{"id":"c2","t":"two"}]}"#;
        assert_eq!(lines, [expected, r#"{"id":"q","t":"none"}"#, expected]);
        let back = Document::from_json(lines[0]).unwrap();
        let ids: Vec<String> = back.children().iter().map(|c| c.id().to_string()).collect();
        assert_eq!(ids, ["c1", "c2"]);
        assert_eq!(back.children()[0].children()[0].id(), "g1");
        assert_eq!(b.child_documents(), crate::indexer::ChildDocuments::All);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Every backend linked here (jsonl, csv and the core's) reads its block through its
    /// options.
    #[test]
    fn every_backend_checks_its_keys() {
        crate::indexer::test_backends::assert_every_backend_checks_its_keys();
    }
}
