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

inventory::submit!(super::FileHandlerDescriptor {
    name: "csv",
    aliases: &["com.kmwllc.lucille.core.fileHandler.CSVFileHandler"],
    build: |config, prefix| {
        CsvHandler::from_config(config, prefix).map(|h| std::sync::Arc::new(h) as _)
    },
});

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

    fn core(&self) -> csv_core::Reader {
        let mut b = csv_core::ReaderBuilder::new();
        b.delimiter(self.separator).escape(self.escape);
        match self.quote {
            Some(q) => b.quote(q),
            None => b.quoting(false),
        };
        b.build()
    }
}

/// What [`Records::next`] found.
enum Next {
    /// A record starting at this line; its fields are in [`Records::fields`].
    Row(u64),
    /// A record starting at this line whose fields and separators came to `size` bytes, more
    /// than the limit: it was parsed to its end (quotes and all) but not kept.
    TooBig(u64, u64),
    End,
}

/// CSV records read with `csv_core`, so that a record over `maxDocumentBytes` is never held:
/// past the limit its bytes are parsed (to find where it ends) and dropped.
struct Records<'a> {
    input: &'a mut dyn BufRead,
    core: csv_core::Reader,
    out: Vec<u8>,
    ends: Vec<usize>,
    fields: usize,
    max: Option<u64>,
    /// Newlines of blank lines skipped here, before the core saw them.
    blank_lines: u64,
}

impl<'a> Records<'a> {
    fn new(input: &'a mut dyn BufRead, core: csv_core::Reader, max: Option<u64>) -> Self {
        Records {
            input,
            core,
            // Never more than the limit and a byte, so that passing it is seen.
            out: vec![0; max.map_or(1024, |m| (m as usize + 1).min(1024))],
            ends: vec![0; max.map_or(32, |m| (m as usize + 1).min(32))],
            fields: 0,
            max,
            blank_lines: 0,
        }
    }

    fn next(&mut self) -> std::io::Result<Next> {
        use csv_core::ReadRecordResult::*;
        // Blank lines are not records: skipped here, so that a record's line is its own.
        loop {
            let buf = self.input.fill_buf()?;
            let n = buf
                .iter()
                .take_while(|&&b| b == b'\n' || b == b'\r')
                .count();
            if n == 0 {
                break;
            }
            self.blank_lines += buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
            self.input.consume(n);
        }
        let line = self.line();
        let (mut outlen, mut endlen) = (0usize, 0usize);
        // Bytes of the record dropped so far (fields and separators), once it passed the limit.
        let mut dropped: Option<u64> = None;
        loop {
            let input = self.input.fill_buf()?;
            let (res, nin, nout, nend) =
                self.core
                    .read_record(input, &mut self.out[outlen..], &mut self.ends[endlen..]);
            self.input.consume(nin);
            outlen += nout;
            endlen += nend;
            if let Some(max) = self.max {
                let size = dropped.unwrap_or(0) + (outlen + endlen) as u64;
                if size > max {
                    dropped = Some(size);
                    (outlen, endlen) = (0, 0);
                }
            }
            match res {
                InputEmpty => {}
                OutputFull => {
                    if outlen > 0 {
                        let cap = self.out.len() * 2;
                        let cap = self
                            .max
                            .map_or(cap, |m| cap.min(m as usize + 1).max(outlen + 1));
                        self.out.resize(cap, 0);
                    }
                }
                OutputEndsFull => {
                    if endlen > 0 {
                        let cap = self.ends.len() * 2;
                        let cap = self
                            .max
                            .map_or(cap, |m| cap.min(m as usize + 1).max(endlen + 1));
                        self.ends.resize(cap, 0);
                    }
                }
                Record => {
                    return Ok(match dropped {
                        Some(size) => Next::TooBig(line, size),
                        None => {
                            self.fields = endlen;
                            Next::Row(line)
                        }
                    });
                }
                End => return Ok(Next::End),
            }
        }
    }

    /// The line the reader is at (1-based).
    fn line(&self) -> u64 {
        self.core.line() + self.blank_lines
    }

    /// The fields of the record [`Records::next`] returned last as [`Next::Row`].
    fn fields(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends[..self.fields]
            .iter()
            .map(|&end| {
                let f = &self.out[start..end];
                start = end;
                f
            })
            .collect()
    }
}

impl FileHandler for CsvHandler {
    fn process(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        let mut records = Records::new(input, self.core(), source.max_bytes);
        let read_error = |line: u64, e: std::io::Error| HandlerError::File {
            id: source.failure_id(&self.prefix, &format!("line{line}")),
            reason: format!("{}: line {line}: cannot read CSV: {e}", source.path),
        };
        let too_big = |line: u64, size: u64| {
            format!(
                "{}: line {line}: the record is larger than maxDocumentBytes ({}): {size} \
                 bytes; skipped to its end without holding it",
                source.path,
                source.max_bytes.unwrap_or_default()
            )
        };
        // Header.
        match records.next() {
            Ok(Next::Row(_)) => {}
            Ok(Next::End) => return Ok(()), // an empty file has no rows
            Ok(Next::TooBig(line, size)) => {
                return Err(HandlerError::File {
                    id: source.failure_id(&self.prefix, "line1"),
                    reason: format!("the header: {}", too_big(line, size)),
                })
            }
            Err(e) => return Err(read_error(1, e)),
        }
        let header: Vec<String> = match records
            .fields()
            .into_iter()
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
            let line = match records.next() {
                Ok(Next::Row(line)) => line,
                Ok(Next::End) => return Ok(()),
                Ok(Next::TooBig(line, size)) => {
                    row_number += 1;
                    let fail_id = source.failure_id(&self.prefix, &format!("line{line}"));
                    sink.fail(fail_id, too_big(line, size))?;
                    continue;
                }
                // An I/O error: the rest of the file cannot be trusted.
                Err(e) => return Err(read_error(records.line(), e)),
            };
            row_number += 1;
            let record = records.fields();
            let fail_id = source.failure_id(&self.prefix, &format!("line{line}"));
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
                .map(|f| std::str::from_utf8(f))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_over_the_limit_is_parsed_to_its_end_without_being_held() {
        // A 4 MB quoted field with newlines, separators and doubled quotes inside, then rows.
        let mut body = String::new();
        while body.len() < 4 << 20 {
            body.push_str("a \"\"quoted\"\", line,\nmore ");
        }
        let text = format!("id,body\n1,short\n2,\"{body}\"\n3,after\n\n4,last");
        let lines_in_body = body.matches('\n').count() as u64;
        let mut input: &[u8] = text.as_bytes();
        let mut records = Records::new(&mut input, csv_core::Reader::new(), Some(1000));
        let mut seen = Vec::new();
        loop {
            match records.next().unwrap() {
                Next::Row(line) => {
                    let fields: Vec<String> = records
                        .fields()
                        .iter()
                        .map(|f| String::from_utf8_lossy(f).into_owned())
                        .collect();
                    seen.push(format!("{line}:{}", fields.join("|")));
                }
                Next::TooBig(line, size) => {
                    // Parsed bytes: a doubled quote counts once, the enclosing quotes not.
                    assert!(size as usize > body.len() * 9 / 10, "{size}");
                    seen.push(format!("{line}:too big"));
                }
                Next::End => break,
            }
            // Never more than the limit (and one byte) of a record is kept.
            assert!(records.out.len() <= 1001, "{}", records.out.len());
            assert!(records.ends.len() <= 1001, "{}", records.ends.len());
        }
        let after = 4 + lines_in_body;
        assert_eq!(
            seen,
            [
                "1:id|body".to_string(),
                "2:1|short".to_string(),
                "3:too big".to_string(),
                format!("{after}:3|after"),
                format!("{}:4|last", after + 2),
            ]
        );
    }

    #[test]
    fn a_record_of_many_empty_fields_is_bounded_too() {
        let text = format!("id,a\n{}\nx,y\n", ",".repeat(100_000));
        let mut input: &[u8] = text.as_bytes();
        let mut records = Records::new(&mut input, csv_core::Reader::new(), Some(500));
        assert!(matches!(records.next().unwrap(), Next::Row(1)));
        assert!(matches!(records.next().unwrap(), Next::TooBig(2, _)));
        assert!(records.ends.len() <= 501, "{}", records.ends.len());
        assert!(matches!(records.next().unwrap(), Next::Row(3)));
        assert_eq!(records.fields(), [b"x".as_slice(), b"y".as_slice()]);
    }
}
