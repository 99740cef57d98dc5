//! CSV file handler (Lucille's CSVFileHandler keys): the first row is the header, each further
//! row one document. Id: `idField` / `idFields` values joined by `_` (or `docIdFormat`), else
//! the file name and the row number (`data.csv-3`), with `docIdPrefix`. Each document also gets
//! the file path (`filePathField`, default `source`), the file name (`filenameField`, default
//! `filename`) and the row number (`lineNumberField`, default `csvLineNumber`).
//!
//! A row whose column count differs from the header, or that is not UTF-8, is a FAIL with file
//! and line (Lucille logs and skips it). Blank lines are not rows. The default escape character
//! is none (RFC 4180 doubled quotes); `escapeChar` sets one.

use std::io::BufRead;

use serde_json::{Map, Value};

use super::{
    format_id, handler_prefix, insert_field, prefixed, take, FileHandler, FileSource, HandlerError,
    RecordSink,
};
use crate::config::{ComponentConfig, ConfigError, Kind, Spec};
use crate::document::Document;

fn spec() -> Spec {
    Spec::new()
        .optional("docIdPrefix", Kind::String)
        .optional("idField", Kind::String)
        .optional("idFields", Kind::StringList)
        .optional("docIdFormat", Kind::String)
        .optional("separatorChar", Kind::String)
        .optional("useTabs", Kind::Bool)
        .optional("quoteChar", Kind::String)
        .optional("interpretQuotes", Kind::Bool)
        .optional("escapeChar", Kind::String)
        .optional("ignoreEscapeChar", Kind::Bool)
        .optional("lowercaseFields", Kind::Bool)
        .optional("ignoredTerms", Kind::StringList)
        .optional("lineNumberField", Kind::String)
        .optional("filenameField", Kind::String)
        .optional("filePathField", Kind::String)
}

pub struct CsvHandler {
    prefix: String,
    id_fields: Vec<String>,
    id_format: Option<String>,
    separator: u8,
    quote: Option<u8>,
    escape: Option<u8>,
    lowercase_fields: bool,
    ignored_terms: Vec<String>,
    line_number_field: String,
    filename_field: String,
    file_path_field: String,
}

/// One ASCII character from a config string.
fn one_char(config: &ComponentConfig, key: &str) -> Result<Option<u8>, ConfigError> {
    match config.string(key)? {
        None => Ok(None),
        Some(s) => {
            let s = if s == "\\t" { "\t".to_string() } else { s };
            match s.as_bytes() {
                [b] if b.is_ascii() => Ok(Some(*b)),
                _ => Err(config.error(key, format!("must be one ASCII character, found {s:?}"))),
            }
        }
    }
}

impl CsvHandler {
    pub fn from_config(config: &ComponentConfig, prefix: &str) -> Result<Self, Vec<ConfigError>> {
        let mut errors = spec().validate(config.map(), config.path());
        let prefix =
            take(&mut errors, handler_prefix(config, prefix).map(Some)).unwrap_or_default();
        let id_fields = match take(&mut errors, config.string("idField")) {
            Some(f) => vec![f],
            None => take(&mut errors, config.string_list("idFields")).unwrap_or_default(),
        };
        let id_format = take(&mut errors, config.string("docIdFormat"));
        let use_tabs = take(&mut errors, config.bool("useTabs")).unwrap_or(false);
        let separator = if use_tabs {
            b'\t'
        } else {
            take(&mut errors, one_char(config, "separatorChar")).unwrap_or(b',')
        };
        let interpret_quotes = take(&mut errors, config.bool("interpretQuotes")).unwrap_or(true);
        let quote = if interpret_quotes {
            Some(take(&mut errors, one_char(config, "quoteChar")).unwrap_or(b'"'))
        } else {
            None
        };
        let ignore_escape = take(&mut errors, config.bool("ignoreEscapeChar")).unwrap_or(false);
        let escape = if ignore_escape {
            None
        } else {
            take(&mut errors, one_char(config, "escapeChar"))
        };
        let handler = CsvHandler {
            prefix,
            id_fields,
            id_format,
            separator,
            quote,
            escape,
            lowercase_fields: take(&mut errors, config.bool("lowercaseFields")).unwrap_or(false),
            ignored_terms: take(&mut errors, config.string_list("ignoredTerms"))
                .unwrap_or_default(),
            line_number_field: take(&mut errors, config.string("lineNumberField"))
                .unwrap_or_else(|| "csvLineNumber".into()),
            filename_field: take(&mut errors, config.string("filenameField"))
                .unwrap_or_else(|| "filename".into()),
            file_path_field: take(&mut errors, config.string("filePathField"))
                .unwrap_or_else(|| "source".into()),
        };
        if errors.is_empty() {
            Ok(handler)
        } else {
            Err(errors)
        }
    }

    fn reader<'a>(&self, input: &'a mut dyn BufRead) -> ::csv::Reader<&'a mut dyn BufRead> {
        let mut b = ::csv::ReaderBuilder::new();
        b.has_headers(false)
            .flexible(true)
            .delimiter(self.separator)
            .escape(self.escape);
        match self.quote {
            Some(q) => b.quote(q),
            None => b.quoting(false),
        };
        b.from_reader(input)
    }
}

impl FileHandler for CsvHandler {
    fn process(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        let mut reader = self.reader(input);
        let mut record = ::csv::ByteRecord::new();
        let read_error = |line: u64, e: ::csv::Error| HandlerError::File {
            id: source.failure_id(&self.prefix, &format!("line{line}")),
            reason: format!("{}: line {line}: cannot read CSV: {e}", source.path),
        };
        // Header.
        match reader.read_byte_record(&mut record) {
            Ok(true) => {}
            Ok(false) => return Ok(()), // an empty file has no rows
            Err(e) => return Err(read_error(1, e)),
        }
        let header: Vec<String> = match record
            .iter()
            .map(|f| std::str::from_utf8(f).map(str::to_string))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(h) => h
                .into_iter()
                .enumerate()
                .map(|(i, h)| {
                    let h = if i == 0 {
                        h.trim_start_matches('\u{feff}').to_string()
                    } else {
                        h
                    };
                    if self.lowercase_fields {
                        h.to_lowercase()
                    } else {
                        h
                    }
                })
                .collect(),
            Err(e) => {
                return Err(HandlerError::File {
                    id: source.failure_id(&self.prefix, "line1"),
                    reason: format!("{}: line 1: header is not valid UTF-8: {e}", source.path),
                })
            }
        };
        let id_columns: Vec<usize> = {
            let mut cols = Vec::new();
            for f in &self.id_fields {
                let f = if self.lowercase_fields {
                    f.to_lowercase()
                } else {
                    f.clone()
                };
                match header.iter().position(|h| *h == f) {
                    Some(i) => cols.push(i),
                    None => {
                        return Err(HandlerError::File {
                            id: source.failure_id(&self.prefix, "line1"),
                            reason: format!(
                                "{}: line 1: the header has no id column {f:?}",
                                source.path
                            ),
                        })
                    }
                }
            }
            cols
        };
        let mut row_number: u64 = 0;
        loop {
            let line = reader.position().line();
            match reader.read_byte_record(&mut record) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) => {
                    // An I/O error or a broken quote: the rest of the file cannot be trusted.
                    return Err(read_error(line, e));
                }
            }
            row_number += 1;
            let line = record.position().map(|p| p.line()).unwrap_or(line);
            let fail_id = source.failure_id(&self.prefix, &format!("line{line}"));
            if let Some(max) = source.max_bytes {
                // The csv reader holds a whole record; one over the limit is FAILed, not
                // published.
                let size = record.as_slice().len() as u64;
                if size > max {
                    sink.fail(
                        fail_id,
                        format!(
                            "{}: line {line}: the record is larger than maxDocumentBytes \
                             ({max}): {size} bytes",
                            source.path
                        ),
                    )?;
                    continue;
                }
            }
            if record.len() != header.len() {
                sink.fail(
                    fail_id,
                    format!(
                        "{}: line {line}: row has {} columns but the header has {}",
                        source.path,
                        record.len(),
                        header.len()
                    ),
                )?;
                continue;
            }
            let values: Vec<&str> = match record
                .iter()
                .map(std::str::from_utf8)
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(v) => v,
                Err(e) => {
                    sink.fail(
                        fail_id,
                        format!("{}: line {line}: row is not valid UTF-8: {e}", source.path),
                    )?;
                    continue;
                }
            };
            let id = if id_columns.is_empty() {
                format!("{}{}-{row_number}", self.prefix, source.name)
            } else {
                let parts: Vec<String> =
                    id_columns.iter().map(|&i| values[i].to_string()).collect();
                if parts.iter().all(|p| p.trim().is_empty()) {
                    sink.fail(
                        fail_id,
                        format!(
                            "{}: line {line}: id column(s) {:?} are blank",
                            source.path, self.id_fields
                        ),
                    )?;
                    continue;
                }
                prefixed(&self.prefix, &format_id(self.id_format.as_deref(), &parts))
            };
            let mut map = Map::with_capacity(header.len() + 4);
            map.insert("id".into(), Value::from(id));
            insert_field(
                &mut map,
                &self.file_path_field,
                Value::from(source.path.clone()),
            );
            insert_field(
                &mut map,
                &self.filename_field,
                Value::from(source.name.clone()),
            );
            for (name, value) in header.iter().zip(values) {
                if !self.ignored_terms.iter().any(|t| t == value) {
                    insert_field(&mut map, name, Value::from(value));
                }
            }
            insert_field(&mut map, &self.line_number_field, Value::from(row_number));
            match Document::from_map(map) {
                Ok(doc) => sink.publish(doc)?,
                Err(e) => sink.fail(fail_id, format!("{}: line {line}: {e}", source.path))?,
            }
        }
    }
}
