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

use super::{format_id, insert_field, prefixed, FileHandler, FileSource, HandlerError, RecordSink};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options};
use crate::document::Document;

inventory::submit!(super::FileHandlerDescriptor {
    name: "csv",
    aliases: &["com.kmwllc.lucille.core.fileHandler.CSVFileHandler"],
    build: |config, prefix| {
        CsvHandler::from_config(config, prefix).map(|h| std::sync::Arc::new(h) as _)
    },
});

/// Reads a CSV file whose first row is the header: each further row is a document.
#[derive(Options, Debug, Clone, PartialEq)]
pub(crate) struct CsvOptions {
    /// Put before every id (default: the connector's docIdPrefix).
    pub doc_id_prefix: Option<String>,
    /// The column whose value is the id (default: the file name and the row number).
    pub id_field: Option<String>,
    /// Columns whose values, joined by `_` (or docIdFormat), are the id; idField wins.
    pub id_fields: Option<Vec<String>>,
    /// How the id columns' values make the id: Java's String.format with %s placeholders.
    pub doc_id_format: Option<String>,
    /// The character between columns (default `,`; `\t` is a tab).
    pub separator_char: Option<AsciiChar>,
    /// Columns are separated by tabs (separatorChar is then not used).
    #[option(default)]
    pub use_tabs: bool,
    /// The character that quotes a value (default `"`).
    pub quote_char: Option<AsciiChar>,
    /// Quotes are read as quotes; false reads them as text.
    #[option(default = true)]
    pub interpret_quotes: bool,
    /// The character that escapes the next one (default: none, quotes are doubled as in RFC 4180).
    pub escape_char: Option<AsciiChar>,
    /// No escape character, even with escapeChar.
    #[option(default)]
    pub ignore_escape_char: bool,
    /// Header names are lower-cased.
    #[option(default)]
    pub lowercase_fields: bool,
    /// Values left out of their row's document (e.g. "NULL").
    #[option(default)]
    pub ignored_terms: Vec<String>,
    /// The field that gets the row's line number.
    #[option(default = "csvLineNumber")]
    pub line_number_field: String,
    /// The field that gets the file's name.
    #[option(default = "filename")]
    pub filename_field: String,
    /// The field that gets the file's full path.
    #[option(default = "source")]
    pub file_path_field: String,
}

/// One ASCII character (`separatorChar`, `quoteChar`, `escapeChar`); `\t` is a tab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AsciiChar(pub u8);

impl OptionValue for AsciiChar {
    fn kind() -> Kind {
        Kind::String
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(s) = config.string(key)? else {
            return Ok(None);
        };
        let s = if s == "\\t" { "\t".to_string() } else { s };
        match s.as_bytes() {
            [b] if b.is_ascii() => Ok(Some(AsciiChar(*b))),
            _ => Err(config.error(key, format!("must be one ASCII character, found {s:?}"))),
        }
    }
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

impl CsvHandler {
    pub fn from_config(config: &ComponentConfig, prefix: &str) -> Result<Self, ConfigErrors> {
        Ok(Self::new(CsvOptions::from_config(config)?, prefix))
    }

    /// The handler of read options (the CSVConnector's keys are the same ones at its top
    /// level); `prefix` is the connector's `docIdPrefix`.
    pub(crate) fn new(o: CsvOptions, prefix: &str) -> Self {
        let id_fields = match o.id_field {
            Some(f) => vec![f],
            None => o.id_fields.unwrap_or_default(),
        };
        let separator = if o.use_tabs {
            b'\t'
        } else {
            o.separator_char.map_or(b',', |c| c.0)
        };
        let quote = o
            .interpret_quotes
            .then(|| o.quote_char.map_or(b'"', |c| c.0));
        let escape = if o.ignore_escape_char {
            None
        } else {
            o.escape_char.map(|c| c.0)
        };
        CsvHandler {
            prefix: o.doc_id_prefix.unwrap_or_else(|| prefix.to_string()),
            id_fields,
            id_format: o.doc_id_format,
            separator,
            quote,
            escape,
            lowercase_fields: o.lowercase_fields,
            ignored_terms: o.ignored_terms,
            line_number_field: o.line_number_field,
            filename_field: o.filename_field,
            file_path_field: o.file_path_field,
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
