//! `indexer.type: "csv"` with `csv { path, columns, includeHeader, append }` (Lucille's keys):
//! one row per document, the configured fields as columns in order.
//!
//! The column `id` is the document's index id. A multi-valued field is written as a JSON array
//! and an object as JSON text, so a row always reads back unambiguously. A CSV file cannot
//! delete: deletion markers and index overrides are rejected up front (Lucille logs a warning
//! and writes deletions as ordinary rows, which silently indexes what was meant to be removed).
//! The header is written when the file is created or empty (with `append`, an existing file
//! keeps its header). Rows are flushed at the end of every batch so FINISH means "in the file".

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::batch_file::BatchFile;
use super::{Backend, BackendCheck, BackendError, IndexOp, IndexerSettings};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options};

inventory::submit!(super::IndexerDescriptor {
    name: "csv",
    aliases: &["com.kmwllc.lucille.indexer.CSVIndexer"],
    spec: CsvOptions::spec,
    // Checking only reads the block: the file is created (or truncated) at build.
    check: |settings, config| {
        let o = read(settings, config)?;
        Ok(BackendCheck {
            output: Some(super::BackendOutput {
                path: config.resolve_output_path(&o.path),
                replaced: !super::Opening::Fresh.appends(o.append),
            }),
            ..BackendCheck::default()
        })
    },
    build: |settings, config, opening| {
        let o = read(settings, config)?;
        let path = config.resolve_output_path(&o.path);
        let append = opening.appends(o.append);
        Ok(Box::new(
            CsvBackend::open(path, o.columns, append, o.include_header)
                .map_err(|e| config.error("path", e.message))?,
        ))
    },
});

/// Writes one CSV row per document, the configured fields as columns in order (`id` is the
/// index id; lists and objects as JSON text).
#[derive(Options)]
struct CsvOptions {
    /// The file written (its folder is created if missing).
    path: String,
    /// The fields written, one column each, in order.
    columns: Vec<String>,
    /// true: the first row names the columns (written when the file is created or empty).
    #[option(default = true)]
    include_header: bool,
    /// true: rows are added to an existing file instead of replacing it (default false; a
    /// long-running `lucille indexer` appends unless this is false).
    append: Option<bool>,
}

/// The block, read once for checking and building, with the indexer settings a CSV file
/// cannot honour: every problem at once.
fn read(settings: &IndexerSettings, config: &ComponentConfig) -> Result<CsvOptions, ConfigErrors> {
    let mut errors = Vec::new();
    if settings.index_override_field.is_some() {
        errors.push(ConfigError::new(
            "indexer.indexOverrideField",
            "is not supported by the csv indexer (one file is one index)",
        ));
    }
    if settings.deletion_marker_field.is_some() {
        errors.push(ConfigError::new(
            "indexer.deletionMarkerField",
            "is not supported by the csv indexer (a CSV file cannot delete rows)",
        ));
    }
    match CsvOptions::from_config(config) {
        Ok(o) => {
            if o.columns.is_empty() {
                errors.push(config.error("columns", "must name at least one field"));
            }
            if errors.is_empty() {
                return Ok(o);
            }
        }
        Err(e) => errors.extend(e),
    }
    Err(errors.into())
}

pub struct CsvBackend {
    columns: Vec<String>,
    /// Each batch's rows are written whole or not at all (see `batch_file`).
    out: BatchFile,
}

impl CsvBackend {
    pub fn open(
        path: PathBuf,
        columns: Vec<String>,
        append: bool,
        include_header: bool,
    ) -> Result<Self, BackendError> {
        let fail = |what: &str, e: std::io::Error| {
            BackendError::new(format!("cannot {what} {}: {e}", path.display()))
        };
        crate::config::paths::create_parent_folder(&path)
            .map_err(|e| fail("create the folder of", e))?;
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(&path)
            .map_err(|e| fail("open", e))?;
        let empty = file.metadata().map_err(|e| fail("stat", e))?.len() == 0;
        let mut out = BatchFile::new(path.clone(), file).map_err(|e| fail("open", e))?;
        if include_header && empty {
            out.write_batch(&rows(&path, std::iter::once(columns.clone()))?)?;
        }
        Ok(CsvBackend { columns, out })
    }

    fn row(&self, id: &str, fields: &crate::document::Fields) -> Vec<String> {
        self.columns
            .iter()
            .map(|c| match fields.get(c) {
                None | Some(Value::Null) if c == "id" => id.to_string(),
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
            })
            .collect()
    }
}

/// Rows as CSV bytes.
fn rows(path: &Path, rows: impl Iterator<Item = Vec<String>>) -> Result<Vec<u8>, BackendError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for row in rows {
        w.write_record(&row)
            .map_err(|e| BackendError::new(format!("cannot write {}: {e}", path.display())))?;
    }
    w.into_inner()
        .map_err(|e| BackendError::new(format!("cannot write {}: {e}", path.display())))
}

impl Backend for CsvBackend {
    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        let mut results = Vec::with_capacity(ops.len());
        let mut batch = Vec::with_capacity(ops.len());
        for op in ops {
            match op {
                IndexOp::Upsert { id, fields, .. } => {
                    batch.push(self.row(id, fields));
                    results.push(None);
                }
                // Rejected at config time; kept total so a new op kind cannot pass silently.
                _ => results.push(Some("the csv indexer cannot delete".to_string())),
            }
        }
        let bytes = rows(self.out.path(), batch.into_iter())?;
        self.out.write_batch(&bytes)?;
        Ok(results)
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.out.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn upsert(id: &str, v: Value) -> IndexOp {
        let Value::Object(fields) = v else {
            panic!("fields must be an object")
        };
        let fields = fields.into_iter().collect();
        IndexOp::Upsert {
            id: id.into(),
            index: None,
            fields,
            children: Default::default(),
            routing: None,
            version: None,
        }
    }

    fn columns(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn writes_header_and_rows_with_lists_as_json() {
        let dir = tempdir();
        let path = dir.join("out.csv");
        let mut b =
            CsvBackend::open(path.clone(), columns(&["id", "title", "tags"]), false, true).unwrap();
        let r = b
            .send(&[
                upsert("a", json!({"title": "Hello, world", "tags": ["x", "y"]})),
                upsert("b", json!({"tags": "solo"})),
            ])
            .unwrap();
        assert_eq!(r, vec![None, None]);
        b.close().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "id,title,tags\na,\"Hello, world\",\"[\"\"x\"\",\"\"y\"\"]\"\nb,,solo\n"
        );
    }

    #[test]
    fn append_keeps_existing_rows_and_writes_the_header_once() {
        let dir = tempdir();
        let path = dir.join("nested/out.csv");
        for (i, append) in [(1, false), (2, true)] {
            let mut b =
                CsvBackend::open(path.clone(), columns(&["id", "n"]), append, true).unwrap();
            b.send(&[upsert(&format!("d{i}"), json!({"n": i}))])
                .unwrap();
            b.close().unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "id,n\nd1,1\nd2,2\n");
        // Without append the file starts again.
        let mut b = CsvBackend::open(path.clone(), columns(&["id"]), false, false).unwrap();
        b.send(&[upsert("z", json!({}))]).unwrap();
        b.close().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "z\n");
    }

    #[test]
    fn deletes_and_overrides_are_config_errors() {
        let settings = IndexerSettings {
            index_override_field: Some("idx".into()),
            deletion_marker_field: Some("deleted".into()),
            ..Default::default()
        };
        let Value::Object(m) = json!({"path": "x.csv", "columns": []}) else {
            unreachable!()
        };
        let errors: Vec<String> = match read(&settings, &ComponentConfig::new(m, "csv")) {
            Ok(_) => Vec::new(),
            Err(e) => e.0.iter().map(ToString::to_string).collect(),
        };
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].contains("indexOverrideField"), "{errors:?}");
        assert!(errors[1].contains("deletionMarkerField"), "{errors:?}");
        assert!(errors[2].contains("at least one field"), "{errors:?}");
    }

    fn tempdir() -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("lucille-csv-{}", crate::document::ids::random_id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
