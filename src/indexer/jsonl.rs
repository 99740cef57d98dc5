//! `indexer.type: "jsonl"` with `jsonl { path, append }`: one JSON object per line.
//!
//! An upsert writes the document (`{"id": ..., fields...}`, plus `"_index"` when an index
//! override applies). A file cannot delete, so deletes are written as intent lines that a
//! consumer can apply: `{"id": ..., "_delete": true}` and
//! `{"_delete_by": {"field": ..., "value": ...}}`. Lines are flushed at the end of every batch
//! so a FINISH event always means the line is in the file.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use serde_json::{json, Map, Value};

use super::{Backend, BackendError, IndexOp};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};

pub fn spec() -> Spec {
    Spec::new()
        .required("path", Kind::String)
        .optional("append", Kind::Bool)
}

pub struct JsonlBackend {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl JsonlBackend {
    pub fn from_config(
        config: &ComponentConfig,
        continuing: bool,
    ) -> Result<Self, Vec<ConfigError>> {
        let errors = spec().validate(config.map(), config.path());
        if !errors.is_empty() {
            return Err(errors);
        }
        let one = |e: ConfigError| vec![e];
        let path = config.resolve_path(&config.require_string("path").map_err(one)?);
        let append = continuing || config.bool_or("append", false).map_err(one)?;
        Self::open(path, append).map_err(|e| vec![config.error("path", e.message)])
    }

    pub fn open(path: PathBuf, append: bool) -> Result<Self, BackendError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| BackendError::new(format!("cannot create {}: {e}", dir.display())))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .map_err(|e| BackendError::new(format!("cannot open {}: {e}", path.display())))?;
        Ok(JsonlBackend {
            path,
            writer: BufWriter::new(file),
        })
    }

    fn line(op: &IndexOp) -> Value {
        match op {
            IndexOp::Upsert {
                id, index, fields, ..
            } => {
                let mut m = Map::with_capacity(fields.len() + 2);
                m.insert("id".into(), Value::String(id.clone()));
                if let Some(i) = index {
                    m.insert("_index".into(), Value::String(i.clone()));
                }
                for (k, v) in fields {
                    m.insert(k.clone(), v.clone());
                }
                Value::Object(m)
            }
            IndexOp::DeleteById { id, index, .. } => match index {
                Some(i) => json!({"id": id, "_index": i, "_delete": true}),
                None => json!({"id": id, "_delete": true}),
            },
            IndexOp::DeleteByField {
                field,
                value,
                index,
            } => match index {
                Some(i) => json!({"_delete_by": {"field": field, "value": value}, "_index": i}),
                None => json!({"_delete_by": {"field": field, "value": value}}),
            },
        }
    }
}

impl Backend for JsonlBackend {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let io = |e: std::io::Error| {
            BackendError::new(format!("writing {} failed: {e}", self.path.display()))
        };
        for op in ops {
            serde_json::to_writer(&mut self.writer, &Self::line(op))
                .map_err(|e| io(std::io::Error::other(e)))?;
            self.writer.write_all(b"\n").map_err(io)?;
        }
        self.writer.flush().map_err(io)?;
        Ok(vec![None; ops.len()])
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.writer
            .flush()
            .and_then(|_| self.writer.get_ref().sync_all())
            .map_err(|e| BackendError::new(format!("closing {} failed: {e}", self.path.display())))
    }
}
