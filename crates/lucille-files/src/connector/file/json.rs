//! JSON-lines file handler (Lucille's JsonFileHandler; `fileHandlers.json` and `.jsonl`): one
//! object per line, streamed line by line. Id: the `idField` value (default `id`), or
//! `idFields` joined by `_` / `docIdFormat`, with `docIdPrefix`; `ignoreFields` are removed.
//! A `run_id` left by an earlier run (re-ingesting an indexer's output) is dropped.
//!
//! A line that is not a JSON object, or has no id, is a FAIL with file and line number (Lucille
//! stops the file there); blank lines are skipped. A line whose id the connector read from its
//! first key FAILs under that id on the worker if the rest of it is not JSON.

use std::borrow::Cow;
use std::io::BufRead;
use std::sync::Arc;

use serde::de::{IgnoredAny, MapAccess};
use serde_json::Value;

use super::{
    format_id, prefixed, read_line_max, FileHandler, FileSource, HandlerError, Line, RecordSink,
};
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::document::ids::id_text;
use crate::document::{read_object, Document, ObjectParser, ObjectReader, ParseError};
use crate::record::{BuildError, Record, RecordBuilder};

inventory::submit!(super::FileHandlerDescriptor {
    name: "json",
    aliases: &[
        "jsonl",
        "com.kmwllc.lucille.core.fileHandler.JsonFileHandler"
    ],
    build: |config, prefix| {
        JsonHandler::from_config(config, prefix).map(|h| std::sync::Arc::new(h) as _)
    },
});

/// Reads a JSON-lines file: one object per line, each a document.
#[derive(Options, Debug, Clone, Default, PartialEq)]
pub(crate) struct JsonOptions {
    /// Put before every id (default: the connector's docIdPrefix).
    pub doc_id_prefix: Option<String>,
    /// The field whose value is the id (default `id`).
    pub id_field: Option<String>,
    /// Fields whose values, joined by `_` (or docIdFormat), are the id; idField wins.
    pub id_fields: Option<Vec<String>>,
    /// How the id fields' values make the id: Java's String.format with %s placeholders.
    pub doc_id_format: Option<String>,
    /// Fields removed from every document (not an id field).
    #[option(default)]
    pub ignore_fields: Vec<String>,
}

pub struct JsonHandler {
    prefix: String,
    builder: Arc<JsonBuilder>,
}

/// How a line's document id is made: the id field(s)' values, formatted, prefixed.
struct IdRule {
    prefix: String,
    fields: Vec<String>,
    format: Option<String>,
    /// Finds `"<field>"` when there is one id field (see [`IdRule::leading`]).
    quoted_field: Option<memchr::memmem::Finder<'static>>,
}

/// Why a line gives no document (its FAIL reason).
#[derive(Debug, thiserror::Error)]
enum LineError {
    #[error("no usable id field {0:?} (a non-empty string or number)")]
    NoId(String),
    #[error("invalid JSON: {0}")]
    InvalidJson(serde_json::Error),
    #[error("invalid JSON: the line is not UTF-8")]
    NotUtf8,
    #[error(transparent)]
    Parse(#[from] ParseError),
}

impl IdRule {
    /// The id from the id fields' values (in `fields` order).
    fn of_values<'v>(
        &self,
        values: impl IntoIterator<Item = Option<&'v Value>>,
    ) -> Result<String, LineError> {
        let mut parts = Vec::with_capacity(self.fields.len());
        for (f, value) in self.fields.iter().zip(values) {
            match value.and_then(id_text) {
                Some(v) if !v.is_empty() => parts.push(v),
                _ => return Err(LineError::NoId(f.clone())),
            }
        }
        Ok(prefixed(
            &self.prefix,
            &format_id(self.format.as_deref(), &parts),
        ))
    }

    /// The id of a line whose first key is the one id field with a plain string value
    /// (`{"id":"doc-1",...`, the usual shape), read without parsing the rest of the line;
    /// `None` for any other shape, and whenever the rest could hold the id key again (it
    /// contains `"id"`, or a `\u` escape that could spell it): the full scan reads those and
    /// takes the last duplicate, as the parsed document does. The worker parses the whole
    /// line and FAILs it if it is not JSON. Scanning each ~1 KB line in full on the
    /// connector thread was ~11% of a six-stage run's instructions (callgrind).
    fn leading(&self, line: &str) -> Option<String> {
        let ([field], Some(quoted_field)) = (self.fields.as_slice(), &self.quoted_field) else {
            return None;
        };
        let ws = [' ', '\t', '\n', '\r'];
        let rest = line.trim_start_matches(ws).strip_prefix('{')?;
        let rest = rest.trim_start_matches(ws).strip_prefix('"')?;
        let rest = rest.strip_prefix(field.as_str())?.strip_prefix('"')?;
        let rest = rest.trim_start_matches(ws).strip_prefix(':')?;
        let rest = rest.trim_start_matches(ws).strip_prefix('"')?;
        let end = rest.find(['"', '\\'])?;
        let raw = &rest[..end];
        if rest.as_bytes()[end] != b'"' || raw.is_empty() || raw.bytes().any(|b| b < 0x20) {
            return None;
        }
        let after = &rest.as_bytes()[end..];
        if quoted_field.find(after).is_some() || memchr::memmem::find(after, b"\\u").is_some() {
            return None;
        }
        Some(prefixed(
            &self.prefix,
            &format_id(self.format.as_deref(), &[raw.to_string()]),
        ))
    }
}

/// Builds a line's document on a worker (see `record`).
struct JsonBuilder {
    ids: IdRule,
    ignore_fields: Vec<String>,
    parser: ObjectParser,
}

impl RecordBuilder for JsonBuilder {
    fn build(&self, id: &str, text: &str) -> Result<Document, BuildError> {
        let mut map = self.parser.parse(text)?;
        for f in &self.ignore_fields {
            map.shift_remove(f);
        }
        map.shift_remove("run_id");
        map.insert("id".into(), Value::from(id));
        Ok(Document::from_fields(map)?)
    }
}

impl JsonHandler {
    pub fn from_config(config: &ComponentConfig, prefix: &str) -> Result<Self, ConfigErrors> {
        Self::new(config, JsonOptions::from_config(config)?, prefix)
    }

    /// The handler of read options; `prefix` is the connector's `docIdPrefix`; `config` (the
    /// block they were read from) names a key in an error.
    pub(crate) fn new(
        config: &ComponentConfig,
        o: JsonOptions,
        prefix: &str,
    ) -> Result<Self, ConfigErrors> {
        let prefix = o.doc_id_prefix.unwrap_or_else(|| prefix.to_string());
        let id_fields = match o.id_field {
            Some(f) => vec![f],
            None => o.id_fields.unwrap_or_else(|| vec!["id".into()]),
        };
        let ignore_fields = o.ignore_fields;
        let clash: Vec<&String> = id_fields
            .iter()
            .filter(|f| ignore_fields.contains(f))
            .collect();
        if !clash.is_empty() {
            return Err(config
                .error(
                    "ignoreFields",
                    format!("must not contain the id field(s) {clash:?}"),
                )
                .into());
        }
        Ok(JsonHandler {
            prefix: prefix.clone(),
            builder: Arc::new(JsonBuilder {
                ids: IdRule {
                    prefix,
                    quoted_field: match id_fields.as_slice() {
                        [f] => Some(
                            memchr::memmem::Finder::new(format!("\"{f}\"").as_bytes()).into_owned(),
                        ),
                        _ => None,
                    },
                    fields: id_fields,
                    format: o.doc_id_format,
                },
                ignore_fields,
                parser: ObjectParser::new(),
            }),
        })
    }

    /// The line as text, checked UTF-8 here once (the worker then parses it as a `&str`
    /// without checking every string again); a line that is not FAILs at its position with
    /// serde_json's own message, as a parse would.
    fn line_text(line: &[u8]) -> Result<&str, LineError> {
        std::str::from_utf8(line).map_err(|_| match serde_json::from_slice::<IgnoredAny>(line) {
            Err(e) => LineError::InvalidJson(e),
            Ok(_) => LineError::NotUtf8,
        })
    }

    /// The line's document id, read without building the document: from the first key when
    /// it is the id ([`IdRule::leading`]), else by scanning the line as JSON, reading the id
    /// field(s) and skipping everything else unallocated.
    fn scan_id(&self, line: &str) -> Result<String, LineError> {
        let ids = &self.builder.ids;
        if let Some(id) = ids.leading(line) {
            return Ok(id);
        }
        let found = read_object(
            line,
            IdScan {
                fields: &ids.fields,
            },
        )?;
        ids.of_values(found.iter().map(Option::as_ref))
    }
}

/// Reads the values of the id fields of a top-level object (the last of duplicate keys, as a
/// parsed map keeps) and skips the rest unallocated.
struct IdScan<'a> {
    fields: &'a [String],
}

impl<'de> ObjectReader<'de> for IdScan<'_> {
    type Out = Vec<Option<Value>>;

    fn read<A: MapAccess<'de>>(self, mut entries: A) -> Result<Self::Out, A::Error> {
        let mut found = vec![None; self.fields.len()];
        while let Some(key) = entries.next_key::<Cow<'de, str>>()? {
            match self.fields.iter().position(|f| *f == key) {
                Some(i) => found[i] = Some(entries.next_value::<Value>()?),
                None => {
                    entries.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(found)
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
        let origin: Arc<str> = Arc::from(source.path.as_str());
        let mut line_number: u64 = 0;
        loop {
            match read_line_max(input, &mut buf, source.max_bytes) {
                Ok(Line::Read) => {}
                Ok(Line::Eof) => return Ok(()),
                Ok(Line::TooLong) => {
                    line_number += 1;
                    sink.fail(
                        source.failure_id(&self.prefix, &format!("line{line_number}")),
                        format!(
                            "{}: line {line_number}: the record is larger than \
                             maxDocumentBytes ({}); skipped without reading it whole",
                            source.path,
                            source.max_bytes.unwrap_or_default()
                        ),
                    )?;
                    continue;
                }
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
            // Only the id is read here; a worker parses the line (see `record`).
            match Self::line_text(&buf).and_then(|text| Ok((self.scan_id(text)?, text))) {
                Ok((id, text)) => sink.publish_record(Record {
                    id,
                    text: text.to_owned(),
                    builder: self.builder.clone(),
                    origin: origin.clone(),
                    line: line_number,
                    run_id: None,
                })?,
                Err(reason) => sink.fail(
                    source.failure_id(&self.prefix, &format!("line{line_number}")),
                    format!("{}: line {line_number}: {reason}", source.path),
                )?,
            }
        }
    }
}
