//! JSON-lines file handler (Lucille's JsonFileHandler; `fileHandlers.json` and `.jsonl`): one
//! object per line, streamed line by line. Id: the `idField` value (default `id`), or
//! `idFields` joined by `_` / `docIdFormat`, with `docIdPrefix`; `ignoreFields` are removed.
//! A `run_id` left by an earlier run (re-ingesting an indexer's output) is dropped.
//!
//! A line that is not a JSON object, or has no id, is a FAIL with file and line number (Lucille
//! stops the file there); blank lines are skipped.

use std::io::BufRead;

use serde_json::Value;

use super::{
    format_id, handler_prefix, prefixed, read_line, take, FileHandler, FileSource, HandlerError,
    RecordSink,
};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::ids::id_text;
use crate::document::{Document, ObjectParser};

fn spec() -> Spec {
    Spec::new()
        .optional("docIdPrefix", Kind::String)
        .optional("idField", Kind::String)
        .optional("idFields", Kind::StringList)
        .optional("docIdFormat", Kind::String)
        .optional("ignoreFields", Kind::StringList)
}

pub struct JsonHandler {
    prefix: String,
    id_fields: Vec<String>,
    id_format: Option<String>,
    ignore_fields: Vec<String>,
}

impl JsonHandler {
    pub fn from_config(config: &ComponentConfig, prefix: &str) -> Result<Self, Vec<ConfigError>> {
        let mut errors = spec().validate(config.map(), config.path());
        let prefix =
            take(&mut errors, handler_prefix(config, prefix).map(Some)).unwrap_or_default();
        let id_fields = match take(&mut errors, config.string("idField")) {
            Some(f) => vec![f],
            None => take(&mut errors, config.string_list("idFields"))
                .unwrap_or_else(|| vec!["id".into()]),
        };
        let ignore_fields: Vec<String> =
            take(&mut errors, config.string_list("ignoreFields")).unwrap_or_default();
        let clash: Vec<&String> = id_fields
            .iter()
            .filter(|f| ignore_fields.contains(f))
            .collect();
        if !clash.is_empty() {
            errors.push(config.error(
                "ignoreFields",
                format!("must not contain the id field(s) {clash:?}"),
            ));
        }
        let handler = JsonHandler {
            prefix,
            id_fields,
            id_format: take(&mut errors, config.string("docIdFormat")),
            ignore_fields,
        };
        if errors.is_empty() {
            Ok(handler)
        } else {
            Err(errors)
        }
    }

    /// The document for one line, or why it cannot be one.
    pub fn document(&self, parser: &mut ObjectParser, line: &[u8]) -> Result<Document, String> {
        let mut map = parser.parse(line).map_err(|e| e.to_string())?;
        for f in &self.ignore_fields {
            map.shift_remove(f);
        }
        map.shift_remove("run_id");
        let mut parts = Vec::with_capacity(self.id_fields.len());
        for f in &self.id_fields {
            match map.get(f).and_then(id_text) {
                Some(v) if !v.is_empty() => parts.push(v),
                _ => {
                    return Err(format!(
                        "no usable id field {f:?} (a non-empty string or number)"
                    ))
                }
            }
        }
        let id = prefixed(&self.prefix, &format_id(self.id_format.as_deref(), &parts));
        map.insert("id".into(), Value::from(id));
        Document::from_map(map).map_err(|e| e.to_string())
    }
}

impl FileHandler for JsonHandler {
    fn process(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        let mut buf = Vec::with_capacity(4096);
        let mut parser = ObjectParser::new();
        let mut line_number: u64 = 0;
        loop {
            match read_line(input, &mut buf) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => {
                    return Err(HandlerError::File {
                        id: source.failure_id(&self.prefix, &format!("line{}", line_number + 1)),
                        reason: format!(
                            "{}: line {}: cannot read: {e}",
                            source.path,
                            line_number + 1
                        ),
                    })
                }
            }
            line_number += 1;
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match self.document(&mut parser, &buf) {
                Ok(doc) => sink.publish(doc)?,
                Err(reason) => sink.fail(
                    source.failure_id(&self.prefix, &format!("line{line_number}")),
                    format!("{}: line {line_number}: {reason}", source.path),
                )?,
            }
        }
    }
}
