//! XML file handler (Lucille's XMLFileHandler keys): one document per element at
//! `xmlRootPath` (e.g. `/catalog/book`), streamed with quick-xml so only the current element is
//! in memory. Each document gets the element's XML in `outputField` (default `xml`; alias
//! `xmlField`), its attributes and the text of its direct child elements as fields (a repeated
//! child becomes a list). Id: the text at `xmlIdPath` (absolute, e.g. `/catalog/book/isbn`), or
//! the field `idField`, else the file name and the element's number (`books.xml-2`); with
//! `docIdPrefix`. An empty id is a FAIL, or a logged skip with `skipEmptyId`.
//!
//! Malformed XML ends the file with a FAIL naming the byte position; the documents before it
//! stay published. Text that is not UTF-8 fails only its element. Only UTF-8 input is read
//! (`encoding` other than UTF-8 is rejected up front); Lucille's `xpathIdPath` is not supported.

use std::io::BufRead;

use quick_xml::events::{BytesRef, BytesStart, Event};
use quick_xml::{Reader, Writer};
use serde_json::{Map, Value};

use super::{insert_field, prefixed, FileHandler, FileSource, HandlerError, RecordSink};
use crate::config::{ComponentConfig, ConfigErrors, Options, Spec};
use crate::document::ids::id_text;
use crate::document::Document;

inventory::submit!(super::FileHandlerDescriptor {
    name: "xml",
    aliases: &["com.kmwllc.lucille.core.fileHandler.XMLFileHandler"],
    build: |config, prefix| {
        XmlHandler::from_config(config, prefix).map(|h| std::sync::Arc::new(h) as _)
    },
});

/// Reads an XML file: each element at `xmlRootPath` is a document.
#[derive(Options, Debug, Clone, PartialEq)]
#[options(extend = unsupported_keys)]
pub(crate) struct XmlOptions {
    /// The absolute path of the elements that become documents, e.g. "/catalog/book".
    pub xml_root_path: String,
    /// The absolute path of the element whose text is the id, below xmlRootPath (e.g.
    /// "/catalog/book/isbn"); default: the file name and the element's number.
    pub xml_id_path: Option<String>,
    /// The field whose value is the id (instead of xmlIdPath).
    pub id_field: Option<String>,
    /// Put before every id (default: the connector's docIdPrefix).
    pub doc_id_prefix: Option<String>,
    /// The field that gets the element's XML.
    #[option(default = "xml", alias = "xmlField")]
    pub output_field: String,
    /// The files' encoding: only UTF-8 is read.
    pub encoding: Option<String>,
    /// An element with an empty id is skipped (logged) instead of FAILed.
    #[option(default)]
    pub skip_empty_id: bool,
}

/// Lucille's keys that are not done here.
fn unsupported_keys(spec: Spec) -> Spec {
    spec.unsupported(
        "xpathIdPath",
        "is not supported; use xmlIdPath (an absolute element path) or idField",
    )
}

pub struct XmlHandler {
    prefix: String,
    root: Vec<String>,
    /// `xmlIdPath` below the root element.
    id_path: Option<Vec<String>>,
    id_field: Option<String>,
    output_field: String,
    skip_empty_id: bool,
}

fn segments(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

impl XmlHandler {
    pub fn from_config(config: &ComponentConfig, prefix: &str) -> Result<Self, ConfigErrors> {
        Self::new(config, XmlOptions::from_config(config)?, prefix)
    }

    /// The handler of read options; `prefix` is the connector's `docIdPrefix`; `config` (the
    /// block they were read from) names a key in an error.
    pub(crate) fn new(
        config: &ComponentConfig,
        o: XmlOptions,
        prefix: &str,
    ) -> Result<Self, ConfigErrors> {
        let mut errors = Vec::new();
        let root = segments(&o.xml_root_path);
        if root.is_empty() {
            errors.push(config.error("xmlRootPath", "must name an element, e.g. \"/root/item\""));
        }
        if o.xml_id_path.is_some() && o.id_field.is_some() {
            errors.push(config.error("idField", "give only one of xmlIdPath and idField"));
        }
        let id_path = match o.xml_id_path.map(|p| segments(&p)) {
            Some(p) if p.len() > root.len() && p[..root.len()] == root[..] => {
                Some(p[root.len()..].to_vec())
            }
            Some(_) => {
                errors.push(config.error(
                    "xmlIdPath",
                    "must be a path below xmlRootPath, e.g. \"/root/item/id\"",
                ));
                None
            }
            None => None,
        };
        if let Some(enc) = o.encoding {
            let e = enc.to_ascii_lowercase().replace('_', "-");
            if e != "utf-8" && e != "utf8" {
                errors.push(config.error(
                    "encoding",
                    format!("only UTF-8 is supported, found {enc:?}"),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(errors.into());
        }
        Ok(XmlHandler {
            prefix: o.doc_id_prefix.unwrap_or_else(|| prefix.to_string()),
            root,
            id_path,
            id_field: o.id_field,
            output_field: o.output_field,
            skip_empty_id: o.skip_empty_id,
        })
    }
}

/// Appends a value, turning a single value into a list.
fn add_value(map: &mut Map<String, Value>, name: &str, value: String) {
    if crate::document::is_reserved(name) || name.is_empty() {
        return;
    }
    match map.get_mut(name) {
        None => {
            map.insert(name.to_string(), Value::from(value));
        }
        Some(Value::Array(items)) => items.push(Value::from(value)),
        Some(existing) => {
            let first = existing.take();
            *existing = Value::Array(vec![first, Value::from(value)]);
        }
    }
}

/// An entity reference that stands for no text.
#[derive(Debug, thiserror::Error)]
enum EntityError {
    #[error(transparent)]
    CharRef(#[from] quick_xml::Error),
    #[error(transparent)]
    Encoding(#[from] quick_xml::encoding::EncodingError),
    #[error("unknown entity &{0};")]
    Unknown(String),
}

fn resolve_entity(r: &BytesRef<'_>) -> Result<String, EntityError> {
    if let Some(c) = r.resolve_char_ref()? {
        return Ok(c.to_string());
    }
    let name = r.decode()?;
    match name.as_ref() {
        "amp" => Ok("&".into()),
        "lt" => Ok("<".into()),
        "gt" => Ok(">".into()),
        "quot" => Ok("\"".into()),
        "apos" => Ok("'".into()),
        other => Err(EntityError::Unknown(other.to_string())),
    }
}

/// The element being turned into a document.
struct Record {
    depth: usize,
    start: u64,
    writer: Writer<Vec<u8>>,
    fields: Map<String, Value>,
    /// The direct child being read: its name and text so far.
    child: Option<(String, String)>,
    id: String,
    error: Option<String>,
    /// Past `maxDocumentBytes`: what was gathered is freed and the rest of the element is
    /// read without keeping it, to FAIL it at its end.
    oversize: bool,
}

impl Record {
    fn text(&mut self, text: &str, in_id: bool) {
        if let Some((_, t)) = &mut self.child {
            t.push_str(text);
        }
        if in_id {
            self.id.push_str(text);
        }
    }
}

fn local_name(e: &BytesStart<'_>) -> String {
    String::from_utf8_lossy(e.local_name().as_ref()).into_owned()
}

impl XmlHandler {
    fn in_id_path(&self, stack: &[String], depth: usize) -> bool {
        match &self.id_path {
            Some(p) => stack.len() >= depth + p.len() && stack[depth..depth + p.len()] == p[..],
            None => false,
        }
    }

    fn attributes(e: &BytesStart<'_>, record: &mut Record) {
        for attr in e.attributes() {
            match attr {
                Ok(a) => {
                    let name = String::from_utf8_lossy(a.key.local_name().as_ref()).into_owned();
                    match a.normalized_value(quick_xml::XmlVersion::Implicit1_0) {
                        Ok(v) => add_value(&mut record.fields, &name, v.into_owned()),
                        Err(err) => {
                            record
                                .error
                                .get_or_insert(format!("attribute {name:?}: {err}"));
                        }
                    }
                }
                Err(err) => {
                    record.error.get_or_insert(format!("bad attribute: {err}"));
                }
            }
        }
    }

    fn finish(
        &self,
        record: Record,
        number: u64,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        let position = format!("byte{}", record.start);
        let fail_id = source.failure_id(&self.prefix, &position);
        let at = format!("{}: element at byte {}", source.path, record.start);
        if let Some(e) = record.error {
            sink.fail(fail_id, format!("{at}: {e}"))?;
            return Ok(());
        }
        let mut fields = record.fields;
        let id = if self.id_path.is_some() {
            record.id.trim().to_string()
        } else if let Some(f) = &self.id_field {
            let v = match fields.get(f) {
                Some(Value::Array(items)) => items.first().and_then(id_text),
                Some(v) => id_text(v),
                None => None,
            };
            v.unwrap_or_default().trim().to_string()
        } else {
            format!("{}-{number}", source.name)
        };
        if id.is_empty() {
            if self.skip_empty_id {
                tracing::warn!("{at}: empty id, skipped (skipEmptyId)");
                return Ok(());
            }
            sink.fail(fail_id, format!("{at}: empty id"))?;
            return Ok(());
        }
        let xml = String::from_utf8_lossy(&record.writer.into_inner()).into_owned();
        insert_field(&mut fields, &self.output_field, Value::from(xml));
        let mut map = Map::with_capacity(fields.len() + 1);
        map.insert("id".into(), Value::from(prefixed(&self.prefix, &id)));
        map.extend(fields);
        match Document::from_map(map) {
            Ok(doc) => sink.publish(doc)?,
            Err(e) => sink.fail(fail_id, format!("{at}: {e}"))?,
        }
        Ok(())
    }
}

impl FileHandler for XmlHandler {
    fn process(
        &self,
        input: &mut dyn BufRead,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        let mut reader = Reader::from_reader(input);
        let mut buf = Vec::with_capacity(8192);
        let mut stack: Vec<String> = Vec::new();
        let mut record: Option<Record> = None;
        let mut number: u64 = 0;
        loop {
            if let (Some(r), Some(max)) = (&mut record, source.max_bytes) {
                if r.oversize || reader.buffer_position().saturating_sub(r.start) > max {
                    if !r.oversize {
                        r.oversize = true;
                        r.error = Some(format!(
                            "the element is larger than maxDocumentBytes ({max}); not read whole"
                        ));
                    }
                    r.writer.get_mut().clear();
                    r.fields.clear();
                    r.child = None;
                    r.id.clear();
                }
            }
            buf.clear();
            let before = reader.buffer_position();
            let event = match reader.read_event_into(&mut buf) {
                Ok(e) => e,
                Err(e) => {
                    let pos = reader.error_position();
                    return Err(HandlerError::File {
                        id: source.failure_id(&self.prefix, &format!("byte{pos}")),
                        reason: format!("{}: malformed XML at byte {pos}: {e}", source.path),
                    });
                }
            };
            match event {
                Event::Start(ref e) | Event::Empty(ref e) => {
                    let empty = matches!(event, Event::Empty(_));
                    stack.push(local_name(e));
                    if let Some(r) = &mut record {
                        let _ = r.writer.write_event(event.borrow());
                        if stack.len() == r.depth + 1 {
                            r.child = Some((stack[stack.len() - 1].clone(), String::new()));
                        }
                    } else if stack == self.root {
                        number += 1;
                        let mut r = Record {
                            depth: stack.len(),
                            start: before,
                            writer: Writer::new(Vec::new()),
                            fields: Map::new(),
                            child: None,
                            id: String::new(),
                            error: None,
                            oversize: false,
                        };
                        let _ = r.writer.write_event(event.borrow());
                        Self::attributes(e, &mut r);
                        record = Some(r);
                    }
                    if empty {
                        self.end_element(&mut stack, &mut record, number, source, sink)?;
                    }
                }
                Event::End(ref e) => {
                    if let Some(r) = &mut record {
                        let _ = r.writer.write_event(Event::End(e.borrow()));
                    }
                    self.end_element(&mut stack, &mut record, number, source, sink)?;
                }
                Event::Text(ref t) => {
                    if let Some(r) = &mut record {
                        let _ = r.writer.write_event(Event::Text(t.borrow()));
                        let in_id = self.in_id_path(&stack, r.depth);
                        match t.xml10_content() {
                            Ok(text) => r.text(&text, in_id),
                            Err(e) => {
                                r.error
                                    .get_or_insert(format!("text is not valid UTF-8: {e}"));
                            }
                        }
                    }
                }
                Event::CData(ref c) => {
                    if let Some(r) = &mut record {
                        let _ = r.writer.write_event(Event::CData(c.borrow()));
                        let in_id = self.in_id_path(&stack, r.depth);
                        match c.decode() {
                            Ok(text) => r.text(&text, in_id),
                            Err(e) => {
                                r.error
                                    .get_or_insert(format!("CDATA is not valid UTF-8: {e}"));
                            }
                        }
                    }
                }
                Event::GeneralRef(ref g) => {
                    if let Some(r) = &mut record {
                        let _ = r.writer.write_event(Event::GeneralRef(g.borrow()));
                        let in_id = self.in_id_path(&stack, r.depth);
                        match resolve_entity(g) {
                            Ok(text) => r.text(&text, in_id),
                            Err(e) => {
                                r.error.get_or_insert(e.to_string());
                            }
                        }
                    }
                }
                Event::Eof => {
                    if let Some(open) = stack.last() {
                        let pos = reader.buffer_position();
                        return Err(HandlerError::File {
                            id: source.failure_id(&self.prefix, &format!("byte{pos}")),
                            reason: format!(
                                "{}: malformed XML at byte {pos}: the file ends inside <{open}>",
                                source.path
                            ),
                        });
                    }
                    return Ok(());
                }
                Event::Comment(_) | Event::Decl(_) | Event::PI(_) | Event::DocType(_) => {}
            }
        }
    }
}

impl XmlHandler {
    /// Closes the innermost element: a direct child's text becomes a field, the root element a
    /// document.
    fn end_element(
        &self,
        stack: &mut Vec<String>,
        record: &mut Option<Record>,
        number: u64,
        source: &FileSource,
        sink: &mut dyn RecordSink,
    ) -> Result<(), HandlerError> {
        if let Some(r) = record {
            if stack.len() == r.depth + 1 {
                if let Some((name, text)) = r.child.take() {
                    add_value(&mut r.fields, &name, text.trim().to_string());
                }
            } else if stack.len() == r.depth {
                if let Some(done) = record.take() {
                    self.finish(done, number, source, sink)?;
                }
            }
        }
        stack.pop();
        Ok(())
    }
}
