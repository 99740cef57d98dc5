//! `indexer.type: "tantivy"`: the embedded search index, with
//! `tantivy { path, fields { name: { type, stored, fast } }, commitEverySecs, writerMemoryMb }`,
//! and [`search`] over such an index.
//!
//! Every index has three fields of its own:
//! - `id`: the index id as a raw string (indexed, stored, fast); upserts replace by it;
//! - `_fields`: a JSON field holding every field without a configured type, text-indexed with
//!   positions, so `package:json` finds `{"package": "json"}` without a schema;
//! - `_source`: the JSON text of those same fields, stored only, so a stored document comes
//!   back with its original shape (Tantivy's own JSON conversion turns date-like strings into
//!   dates).
//!
//! Each string is tokenized once, in `_fields` (or its typed field). Bare words of a query
//! search every text field: [`search`] expands them over the JSON paths that hold text (read
//! from the term dictionaries, a seek per path) and the typed text fields. Indexes written
//! before this layout also have `_all` (every string again, tokenized: the old default search
//! field); they are still written and searched as they were.
//!
//! Configured fields (`fields { ... }`) are ordinary typed Tantivy fields; their `stored` flag
//! is Tantivy's. A `vector` field (an embedding: a list of numbers) is a Tantivy bytes field,
//! always fast, holding the vector as little-endian float32s; [`search_vector`] ranks
//! documents by cosine similarity to a query vector, brute force over that column (fine at
//! the scale of an embedded index), optionally among the hits of a text query. An existing index is reopened with its own schema; configured fields that
//! disagree with it are an error before the run starts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Number, Value};

use crate::document::Fields;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::query_grammar::{Occur, UserInputAst, UserInputLeaf};
use tantivy::schema::{
    Field, FieldType, JsonObjectOptions, NumericOptions, OwnedValue, Schema, TextFieldIndexing,
    TextOptions, Value as _, FAST, STORED, STRING, TEXT,
};
use tantivy::{DateTime, Index, IndexWriter, Searcher, TantivyDocument, Term};

use super::{
    take_encoded, Backend, BackendCheck, BackendError, EncodeError, Encoded, Encoder, IndexOp,
};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Kind, OptionValue, Options};

pub const ID_FIELD: &str = "id";
pub const ALL_FIELD: &str = "_all";
pub const JSON_FIELD: &str = "_fields";
pub const SOURCE_FIELD: &str = "_source";
const RESERVED: [&str; 4] = [ID_FIELD, ALL_FIELD, JSON_FIELD, SOURCE_FIELD];
/// The index writer's memory without `writerMemoryMb` (the options type's default).
pub const DEFAULT_WRITER_MEMORY_MB: usize = 128;
/// Tantivy's floor per indexing thread.
const MIN_MB_PER_THREAD: usize = 15;

/// Writes documents to an embedded Tantivy index (a folder), searched with `lucille search`.
#[derive(Options)]
struct TantivyOptions {
    /// The index's folder (created if missing; an existing index is reopened with its schema).
    path: String,
    /// Typed fields ({ title: { type: text, stored: true } }); type is one of text, string,
    /// i64, f64, bool, date, json, vector; stored defaults to true, fast to false. Other fields
    /// are indexed as JSON.
    fields: Option<FieldDefs>,
    /// Seconds between commits while documents arrive (default: commit when the indexer asks).
    #[option(min = 0)]
    commit_every_secs: Option<i64>,
    /// The index writer's memory in MB (at least 15, Tantivy's minimum per indexing thread).
    #[option(default = 128, min = 15)]
    writer_memory_mb: i64,
    /// The index writer's indexing threads (default: one per core, at most 8, as far as
    /// writerMemoryMb allows 15 MB each).
    #[option(min = 1, max = 8)]
    writer_threads: Option<i64>,
}

/// The `tantivy` block, with the checks across its keys.
fn options(config: &ComponentConfig) -> Result<TantivyOptions, ConfigErrors> {
    let o = TantivyOptions::from_config(config)?;
    if let Some(t) = o.writer_threads {
        if o.writer_memory_mb < t * MIN_MB_PER_THREAD as i64 {
            return Err(config
                .error(
                    "writerThreads",
                    format!(
                        "{t} threads need writerMemoryMb of at least {} (Tantivy takes 15 MB per \
                         indexing thread); it is {}",
                        t * MIN_MB_PER_THREAD as i64,
                        o.writer_memory_mb
                    ),
                )
                .into());
        }
    }
    Ok(o)
}

// `writerMemoryMb`'s documented default and minimum are these.
const _: () = assert!(DEFAULT_WRITER_MEMORY_MB == 128 && MIN_MB_PER_THREAD == 15);

/// One configured field of the index: `fields { title: { type: text, stored: true } }`.
#[derive(Options)]
struct FieldOptions {
    /// The field's Tantivy type (vector: a list of numbers, searched by similarity).
    #[option(key = "type", one_of = ["text", "string", "i64", "f64", "bool", "date", "json", "vector"])]
    kind: String,
    /// Whether the value is stored (returned with hits).
    #[option(default = true)]
    stored: bool,
    /// Whether the field is a fast (columnar) field, for sorting and ranges.
    #[option(default = false)]
    fast: bool,
}

/// A configured field: `fields { title: { type: text, stored: true } }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldDef {
    pub name: String,
    pub kind: String,
    pub stored: bool,
    pub fast: bool,
}

/// The `fields` block, checked as the option is read; its problems (one per field) are
/// reported as one error on `fields`.
struct FieldDefs(Vec<FieldDef>);

impl OptionValue for FieldDefs {
    fn kind() -> Kind {
        Kind::Object
    }

    fn read(config: &ComponentConfig, key: &str) -> Result<Option<Self>, ConfigError> {
        let Some(fields) = config.object(key)? else {
            return Ok(None);
        };
        field_defs(config, key, fields)
            .map(|d| Some(FieldDefs(d)))
            .map_err(|e| ConfigError::joined(&config.key_path(key), e))
    }
}

/// Every field of a `fields` block, or every problem with them.
fn field_defs(
    config: &ComponentConfig,
    key: &str,
    fields: &Map<String, Value>,
) -> Result<Vec<FieldDef>, Vec<ConfigError>> {
    let mut errors = Vec::new();
    let mut defs = Vec::new();
    for (name, v) in fields {
        let path = config.key_path(&format!("{key}.{name}"));
        if name.is_empty() || RESERVED.contains(&name.as_str()) {
            errors.push(ConfigError::new(
                path,
                format!("{name:?} is reserved by the tantivy indexer (reserved: {RESERVED:?})"),
            ));
            continue;
        }
        let Value::Object(m) = v else {
            errors.push(ConfigError::new(
                path,
                "must be an object like { type: text, stored: true }",
            ));
            continue;
        };
        match FieldOptions::from_config(&ComponentConfig::new(m.clone(), path)) {
            Ok(f) => defs.push(FieldDef {
                name: name.clone(),
                kind: f.kind,
                stored: f.stored,
                fast: f.fast,
            }),
            Err(e) => errors.extend(e),
        }
    }
    if errors.is_empty() {
        Ok(defs)
    } else {
        Err(errors)
    }
}

/// The schema for `defs` (the dynamic schema when empty).
pub fn build_schema(defs: &[FieldDef]) -> Schema {
    let mut b = Schema::builder();
    b.add_text_field(ID_FIELD, STRING | STORED | FAST);
    let json = JsonObjectOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer("default")
            .set_index_option(tantivy::schema::IndexRecordOption::WithFreqsAndPositions),
    );
    b.add_json_field(JSON_FIELD, json);
    b.add_text_field(SOURCE_FIELD, STORED);
    for d in defs {
        let num = |n: NumericOptions| {
            let n = n.set_indexed();
            let n = if d.stored { n.set_stored() } else { n };
            if d.fast {
                n.set_fast()
            } else {
                n
            }
        };
        let text = |t: TextOptions| {
            let t = if d.stored { t | STORED } else { t };
            if d.fast {
                t | FAST
            } else {
                t
            }
        };
        let name = d.name.as_str();
        match d.kind.as_str() {
            "text" => b.add_text_field(name, text(TEXT)),
            "string" => b.add_text_field(name, text(STRING)),
            "i64" => b.add_i64_field(name, num(NumericOptions::default())),
            "f64" => b.add_f64_field(name, num(NumericOptions::default())),
            "bool" => b.add_bool_field(name, num(NumericOptions::default())),
            "vector" => {
                let o = tantivy::schema::BytesOptions::default().set_fast();
                b.add_bytes_field(name, if d.stored { o.set_stored() } else { o })
            }
            "date" => {
                let o = tantivy::schema::DateOptions::default().set_indexed();
                let o = if d.stored { o.set_stored() } else { o };
                b.add_date_field(name, if d.fast { o.set_fast() } else { o })
            }
            _ => {
                let o = JsonObjectOptions::from(TEXT);
                b.add_json_field(name, if d.stored { o | STORED } else { o })
            }
        };
    }
    b.build()
}

/// How documents map onto an index's schema (taken from the index itself).
#[derive(Clone)]
struct Layout {
    schema: Schema,
    id: Field,
    /// `_all`, in an index written before each string was tokenized once.
    all: Option<Field>,
    json: Field,
    source: Field,
    /// Typed fields by name.
    typed: HashMap<String, (Field, FieldType)>,
}

/// Why a document or an operation did not make it into the index.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("not an index written by lucille (it has no {0:?} field)")]
    NotOurs(String),
    #[error("field {0:?}: not a vector (a list of finite numbers)")]
    NotAVector(String),
    #[error("field {name:?}: {value} is not {what}")]
    DoesNotFit {
        name: String,
        value: Value,
        what: &'static str,
    },
    #[error("field {name:?}: values of type {kind:?} are not supported")]
    Unsupported {
        name: String,
        kind: tantivy::schema::Type,
    },
    #[error(
        "index override {0:?} is not a usable index name (no path separators or leading dots)"
    )]
    BadIndexName(String),
    #[error("cannot create {}: {source}", path.display())]
    CreateFolder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot {action} {}: {source}", path.display())]
    Tantivy {
        action: &'static str,
        path: PathBuf,
        source: tantivy::TantivyError,
    },
    #[error(transparent)]
    Open(#[from] BackendError),
    #[error("tantivy rejected the document: {0}")]
    Rejected(#[source] tantivy::TantivyError),
    #[error("delete by {field:?} failed: {source}")]
    Delete {
        field: String,
        source: tantivy::TantivyError,
    },
    #[error("cannot delete by field {field:?} = {value:?}: {source}")]
    DeleteQuery {
        field: String,
        value: String,
        source: tantivy::query::QueryParserError,
    },
    #[error("index vanished")]
    Vanished,
}

impl From<IndexError> for BackendError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::Open(e) => e,
            other => BackendError::new(other.to_string()),
        }
    }
}

impl Layout {
    fn of(schema: Schema) -> Result<Self, IndexError> {
        let get = |name: &str| {
            schema
                .get_field(name)
                .map_err(|_| IndexError::NotOurs(name.to_string()))
        };
        let (id, json, source) = (get(ID_FIELD)?, get(JSON_FIELD)?, get(SOURCE_FIELD)?);
        let all = schema.get_field(ALL_FIELD).ok();
        let typed = schema
            .fields()
            .filter(|(_, e)| !RESERVED.contains(&e.name()))
            .map(|(f, e)| (e.name().to_string(), (f, e.field_type().clone())))
            .collect();
        Ok(Layout {
            schema,
            id,
            all,
            json,
            source,
            typed,
        })
    }

    /// The Tantivy document for one upsert, or why a value does not fit its field.
    fn document(&self, id: &str, fields: &Fields) -> Result<TantivyDocument, IndexError> {
        self.document_owned(id, fields.clone())
    }

    /// As `document`, taking the fields (the untyped ones move into `_fields` uncopied).
    fn document_owned(&self, id: &str, mut fields: Fields) -> Result<TantivyDocument, IndexError> {
        let mut doc = TantivyDocument::new();
        doc.add_text(self.id, id);
        if let Some(all) = self.all {
            doc.add_text(all, id);
        }
        for (name, value) in &fields {
            if let Some(all) = self.all {
                collect_strings(value, &mut |s| doc.add_text(all, s));
            }
            if let Some((field, ty)) = self.typed.get(name) {
                add_typed(&mut doc, *field, ty, name, value)?;
            }
        }
        if !self.typed.is_empty() {
            fields.retain(|name, _| !self.typed.contains_key(name));
        }
        if !fields.is_empty() {
            doc.add_text(
                self.source,
                serde_json::to_string(&fields).unwrap_or_default(),
            );
            doc.add_field_value(self.json, &owned_object(fields));
        }
        Ok(doc)
    }

    /// The stored document: `_source` fields, then stored typed fields.
    fn stored(&self, doc: &TantivyDocument) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(id) = doc.get_first(self.id).and_then(|v| v.as_str()) {
            out.insert(ID_FIELD.into(), Value::String(id.into()));
        }
        if let Some(src) = doc.get_first(self.source).and_then(|v| v.as_str()) {
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(src) {
                out.extend(m);
            }
        }
        for (name, (field, ty)) in &self.typed {
            if matches!(ty, FieldType::Bytes(_)) {
                if let Some(bytes) = doc.get_first(*field).and_then(|v| v.as_bytes()) {
                    let floats = bytes_to_vector(bytes)
                        .into_iter()
                        .filter_map(crate::document::f32_to_value)
                        .collect();
                    out.insert(name.clone(), Value::Array(floats));
                }
                continue;
            }
            let values: Vec<Value> = doc
                .get_all(*field)
                .map(|v| owned_to_json(&OwnedValue::from(v)))
                .collect();
            match values.len() {
                0 => {}
                1 => {
                    out.insert(name.clone(), values.into_iter().next().unwrap_or_default());
                }
                _ => {
                    out.insert(name.clone(), Value::Array(values));
                }
            }
        }
        out
    }

    /// Default search fields: `_all` (an index of the old layout), typed text fields, and
    /// `_fields` (so unknown field names in a query go to the JSON field).
    fn default_fields(&self) -> Vec<Field> {
        let mut v: Vec<Field> = self.all.into_iter().collect();
        v.extend(self.text_fields().into_iter().map(|(_, f)| f));
        v.push(self.json);
        v
    }

    /// The `vector` fields (bytes fast fields), by name.
    fn vector_fields(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .typed
            .iter()
            .filter(|(_, (_, t))| matches!(t, FieldType::Bytes(_)))
            .map(|(name, _)| name.clone())
            .collect();
        v.sort_unstable();
        v
    }

    /// The typed fields that are tokenized text, by name.
    fn text_fields(&self) -> Vec<(&str, Field)> {
        let mut v: Vec<(&str, Field)> = self
            .typed
            .iter()
            .filter(|(_, (_, t))| matches!(t, FieldType::Str(o) if o.get_indexing_options().is_some_and(|i| i.tokenizer() != "raw")))
            .map(|(name, (f, _))| (name.as_str(), *f))
            .collect();
        v.sort_unstable();
        v
    }

    /// A query in Tantivy's syntax. In an index of the old layout bare words search `_all`;
    /// otherwise each bare word (or phrase) is looked for in every field that holds text (the
    /// typed text fields and the JSON paths of `_fields` that hold strings) and as a whole id.
    fn query(
        &self,
        index: &Index,
        searcher: &Searcher,
        text: &str,
    ) -> Result<Box<dyn tantivy::query::Query>, QueryError> {
        let parser = QueryParser::for_index(index, self.default_fields());
        if self.all.is_some() {
            return Ok(parser.parse_query(text)?);
        }
        let ast = tantivy::query_grammar::parse_query(text).map_err(|_| QueryError::Syntax {
            position: syntax_error_position(text),
        })?;
        let mut targets: Vec<String> = self
            .text_fields()
            .into_iter()
            .map(|(name, _)| name.replace('.', "\\."))
            .collect();
        targets.extend(text_paths(searcher, self.json).map_err(QueryError::Fields)?);
        // A document's id as a whole word too (`json.dumps` finds the document of that id,
        // whose name the tokenizer splits into two words that no one field may hold).
        targets.push(ID_FIELD.to_string());
        Ok(parser.build_query_from_user_input_ast(expand_bare(ast, &targets))?)
    }
}

/// Where in `text` (in characters) Tantivy's lenient parser finds its first error: the strict
/// parser says only that there is one.
fn syntax_error_position(text: &str) -> usize {
    let (_, errors) = tantivy::query_grammar::parse_query_lenient(text);
    let byte = errors.iter().map(|e| e.pos).min().unwrap_or(text.len());
    text.char_indices().take_while(|(i, _)| *i < byte).count()
}

/// `ast` with each word or phrase that names no field replaced by "any of `targets`".
fn expand_bare(ast: UserInputAst, targets: &[String]) -> UserInputAst {
    match ast {
        UserInputAst::Clause(clauses) => UserInputAst::Clause(
            clauses
                .into_iter()
                .map(|(occur, a)| (occur, expand_bare(a, targets)))
                .collect(),
        ),
        UserInputAst::Boost(a, boost) => {
            UserInputAst::Boost(Box::new(expand_bare(*a, targets)), boost)
        }
        UserInputAst::Leaf(leaf) => match *leaf {
            UserInputLeaf::Literal(literal)
                if literal.field_name.is_none() && !targets.is_empty() =>
            {
                UserInputAst::Clause(
                    targets
                        .iter()
                        .map(|t| {
                            let mut l = literal.clone();
                            l.field_name = Some(t.clone());
                            (
                                Some(Occur::Should),
                                UserInputAst::Leaf(Box::new(UserInputLeaf::Literal(l))),
                            )
                        })
                        .collect(),
                )
            }
            other => UserInputAst::Leaf(Box::new(other)),
        },
    }
}

/// Tantivy's JSON term layout: a path's segments are separated by 1, the path ends with 0, then
/// one byte of value type (`Type::to_code`) and the value. Checked by the tests, which find the
/// paths of a real index.
const JSON_PATH_SEGMENT_SEP: u8 = 1;
const JSON_END_OF_PATH: u8 = 0;

/// The JSON paths of `field` that hold text in any segment, as query field names (segments
/// joined by `.`, a `.` inside a key escaped). Read from each segment's term dictionary by
/// seeking from one path to the next, so its cost is a seek per path, not a walk over the terms.
fn text_paths(searcher: &Searcher, field: Field) -> tantivy::Result<Vec<String>> {
    let mut paths = std::collections::BTreeSet::new();
    let text = tantivy::schema::Type::Str.to_code();
    for segment in searcher.segment_readers() {
        let inverted = segment.inverted_index(field)?;
        let dict = inverted.terms();
        let mut from: Vec<u8> = Vec::new();
        loop {
            let mut stream = dict.range().ge(&from).into_stream()?;
            if !stream.advance() {
                break;
            }
            let key = stream.key();
            let Some((path, kind, value)) = split_json_term(key) else {
                break;
            };
            if kind == text {
                let path: Vec<String> = path.iter().map(|seg| seg.replace('.', "\\.")).collect();
                paths.insert(path.join("."));
            }
            // The first term after every term of this path and type.
            from = key[..key.len() - value.len()].to_vec();
            match from.last_mut() {
                Some(b) if *b < u8::MAX => *b += 1,
                _ => break,
            }
        }
    }
    Ok(paths.into_iter().collect())
}

fn collect_strings(v: &Value, f: &mut impl FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, f)),
        Value::Object(m) => m.values().for_each(|i| collect_strings(i, f)),
        _ => {}
    }
}

/// JSON to Tantivy without its date guessing (strings stay strings).
fn owned(v: Value) -> OwnedValue {
    match v {
        Value::Null => OwnedValue::Null,
        Value::Bool(b) => OwnedValue::Bool(b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => OwnedValue::I64(i),
            (None, Some(u)) => OwnedValue::U64(u),
            _ => OwnedValue::F64(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => OwnedValue::Str(s),
        Value::Array(items) => OwnedValue::Array(items.into_iter().map(owned).collect()),
        Value::Object(m) => owned_object(m),
    }
}

fn owned_object(m: impl IntoIterator<Item = (String, Value)>) -> OwnedValue {
    OwnedValue::Object(m.into_iter().map(|(k, v)| (k, owned(v))).collect())
}

fn owned_to_json(v: &OwnedValue) -> Value {
    match v {
        OwnedValue::Null => Value::Null,
        OwnedValue::Str(s) => Value::String(s.clone()),
        OwnedValue::U64(u) => Value::from(*u),
        OwnedValue::I64(i) => Value::from(*i),
        OwnedValue::F64(f) => Number::from_f64(*f).map_or(Value::Null, Value::Number),
        OwnedValue::Bool(b) => Value::Bool(*b),
        OwnedValue::Date(d) => Value::String(format_date(*d)),
        OwnedValue::Array(items) => Value::Array(items.iter().map(owned_to_json).collect()),
        OwnedValue::Object(kv) => Value::Object(
            kv.iter()
                .map(|(k, v)| (k.clone(), owned_to_json(v)))
                .collect(),
        ),
        other => Value::String(format!("{other:?}")),
    }
}

fn format_date(d: DateTime) -> String {
    use tantivy::time::format_description::well_known::Rfc3339;
    d.into_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| d.into_timestamp_secs().to_string())
}

fn parse_date(s: &str) -> Option<DateTime> {
    use tantivy::time::format_description::well_known::Rfc3339;
    use tantivy::time::{Date, OffsetDateTime};
    if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
        return Some(DateTime::from_utc(t));
    }
    let mut parts = s.splitn(3, '-').map(|p| p.parse::<i32>().ok());
    let (y, m, d) = (parts.next()??, parts.next()??, parts.next()??);
    let month = tantivy::time::Month::try_from(u8::try_from(m).ok()?).ok()?;
    let date = Date::from_calendar_date(y, month, u8::try_from(d).ok()?).ok()?;
    Some(DateTime::from_utc(date.midnight().assume_utc()))
}

/// A JSON list of finite numbers (or one number) as float32s.
pub fn value_to_vector(value: &Value) -> Option<Vec<f32>> {
    let one = |v: &Value| v.as_f64().map(|f| f as f32).filter(|f| f.is_finite());
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(one).collect(),
        Value::Number(_) => one(value).map(|f| vec![f]),
        _ => None,
    }
}

fn vector_to_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn bytes_to_vector(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Adds `value` (each element of a list) to a typed field, or says why it does not fit.
fn add_typed(
    doc: &mut TantivyDocument,
    field: Field,
    ty: &FieldType,
    name: &str,
    value: &Value,
) -> Result<(), IndexError> {
    if let FieldType::Bytes(_) = ty {
        if value.is_null() {
            return Ok(());
        }
        let vector =
            value_to_vector(value).ok_or_else(|| IndexError::NotAVector(name.to_string()))?;
        doc.add_bytes(field, &vector_to_bytes(&vector));
        return Ok(());
    }
    if let (Value::Array(items), false) = (value, matches!(ty, FieldType::JsonObject(_))) {
        for item in items {
            add_typed(doc, field, ty, name, item)?;
        }
        return Ok(());
    }
    if value.is_null() {
        return Ok(());
    }
    let bad = |what: &'static str| IndexError::DoesNotFit {
        name: name.to_string(),
        value: value.clone(),
        what,
    };
    match ty {
        FieldType::Str(_) => match value {
            Value::String(s) => doc.add_text(field, s),
            Value::Object(_) => return Err(bad("text (an object)")),
            other => doc.add_text(field, other.to_string()),
        },
        FieldType::I64(_) => {
            let i = match value {
                Value::Number(n) => n.as_i64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            doc.add_i64(field, i.ok_or_else(|| bad("an i64"))?);
        }
        FieldType::F64(_) => {
            let f = match value {
                Value::Number(n) => n.as_f64(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            doc.add_f64(field, f.ok_or_else(|| bad("an f64"))?);
        }
        FieldType::Bool(_) => {
            let b = match value {
                Value::Bool(b) => Some(*b),
                Value::String(s) if s.eq_ignore_ascii_case("true") => Some(true),
                Value::String(s) if s.eq_ignore_ascii_case("false") => Some(false),
                _ => None,
            };
            doc.add_bool(field, b.ok_or_else(|| bad("a bool"))?);
        }
        FieldType::Date(_) => {
            let d = match value {
                Value::String(s) => parse_date(s),
                Value::Number(n) => n.as_i64().map(DateTime::from_timestamp_millis),
                _ => None,
            };
            doc.add_date(
                field,
                d.ok_or_else(|| bad("a date (RFC 3339, YYYY-MM-DD, or epoch milliseconds)"))?,
            );
        }
        FieldType::JsonObject(_) => doc.add_field_value(field, &owned(value.clone())),
        other => {
            return Err(IndexError::Unsupported {
                name: name.to_string(),
                kind: other.value_type(),
            })
        }
    }
    Ok(())
}

/// The Tantivy index at `path`: reopened with its own schema if it exists (checked against
/// `defs` when fields are configured), else created with `defs`. Opened on the writer's own
/// directory, which maps what a merge reads afresh as it goes (`directory.rs`).
pub fn open_or_create(path: &Path, defs: &[FieldDef]) -> Result<Index, BackendError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| {
        BackendError::new(format!("tantivy index {}: {what}: {e}", path.display()))
    };
    std::fs::create_dir_all(path).map_err(|e| fail("cannot create the folder", &e))?;
    let wanted = build_schema(defs);
    if path.join("meta.json").exists() {
        let dir = directory::WriterDirectory::open(path)
            .map_err(|e| fail("cannot open the folder", &e))?;
        let index = Index::open(dir).map_err(|e| fail("cannot open", &e))?;
        let have = index.schema();
        Layout::of(have.clone()).map_err(|e| fail("cannot reuse", &e))?;
        if !defs.is_empty() && have != wanted {
            return Err(BackendError::new(format!(
                "tantivy index {}: its schema differs from tantivy.fields (it has {}; configured: {}); use another path or remove the index",
                path.display(),
                describe_schema(&have),
                describe_schema(&wanted),
            )));
        }
        Ok(index)
    } else {
        create_index(path, wanted).map_err(|e| fail("cannot create", &e))
    }
}

/// A new index of `schema` in the folder at `path`, on the writer's own directory.
fn create_index(path: &Path, schema: Schema) -> tantivy::Result<Index> {
    let dir = directory::WriterDirectory::open(path)?;
    Index::create(dir, schema, tantivy::IndexSettings::default())
}

fn describe_schema(s: &Schema) -> String {
    let typed: Vec<String> = s
        .fields()
        .filter(|(_, e)| !RESERVED.contains(&e.name()))
        .map(|(_, e)| {
            format!(
                "{}: {:?}{}{}",
                e.name(),
                e.field_type().value_type(),
                if e.is_stored() { " stored" } else { "" },
                if e.is_fast() { " fast" } else { "" }
            )
        })
        .collect();
    if typed.is_empty() {
        "no typed fields".into()
    } else {
        typed.join(", ")
    }
}

/// A writer for an index with a memory budget of `memory_mb`, split over as many indexing
/// threads as cores allow (each needs Tantivy's minimum of 15 MB).
pub fn writer(index: &Index, memory_mb: usize) -> Result<IndexWriter, tantivy::TantivyError> {
    writer_with(index, memory_mb, None)
}

/// As [`writer`], with `threads` indexing threads when given (`writerThreads`), for documents
/// of any type.
pub fn writer_with<D: tantivy::Document>(
    index: &Index,
    memory_mb: usize,
    threads: Option<usize>,
) -> Result<IndexWriter<D>, tantivy::TantivyError> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let fit = (memory_mb / MIN_MB_PER_THREAD).max(1);
    let threads = threads.map_or_else(|| fit.min(cpus.min(8)), |t| t.clamp(1, fit));
    index.writer_with_num_threads(threads, memory_mb.max(MIN_MB_PER_THREAD) * 1024 * 1024)
}

/// Ids upserted this session into an index that started empty: an id not in it cannot be in
/// the index, so its upsert needs no delete. Deletes are not free in Tantivy (each is looked up
/// in every segment at commit; a million of them halved a bulk load's throughput), and a first
/// load into an empty index is the common case. Holds 32-bit hashes: a collision only costs an
/// unneeded delete (~120 of them among 1M ids, ~1,900 among 4M), and the set takes 5 bytes a
/// slot where 64-bit hashes took 9 (1M ids: 10.5 MB instead of 18.9; 4M: 42 MB instead of 75).
/// Past `MAX_TRACKED` ids it is dropped and every upsert deletes first.
struct FreshIds(Option<std::collections::HashSet<u32>>);

const MAX_TRACKED: usize = 4_000_000;

impl FreshIds {
    /// Whether an upsert of `id` must delete first; records `id`.
    fn needs_delete(&mut self, id: &str) -> bool {
        let Some(seen) = &mut self.0 else {
            return true;
        };
        if seen.len() >= MAX_TRACKED {
            self.0 = None;
            return true;
        }
        use std::hash::{BuildHasher, BuildHasherDefault};
        let h =
            BuildHasherDefault::<std::collections::hash_map::DefaultHasher>::default().hash_one(id);
        // The low half of SipHash's 64 bits.
        !seen.insert(h as u32)
    }
}

struct Target {
    /// The index's folder.
    path: PathBuf,
    layout: Layout,
    writer: IndexWriter<Queued>,
    /// The documents handed to `writer` and not indexed yet.
    queue: Arc<Queue>,
    fresh: FreshIds,
}

/// How much of the documents handed to a writer may wait for its threads, in units of
/// `QUEUE_UNIT` bytes of document data (a document counts its data's whole units, plus one).
/// Tantivy's own queue holds up to 10,000 documents whatever their size (its channel's bound),
/// and it is full while indexing is the bottleneck (row 4 of the standard benchmark): 10,000 of
/// its documents are ~43 MB (the data of one is ~3.6 KB, in a 4 KB allocation: one unit), ~12%
/// of row 4's peak RSS at 1M records, and the backend was woken for every document the threads
/// took off a full queue. Here it waits at `MAX_QUEUED` units (~8 MB) until the threads are
/// down to `RESUME_AT`: the 1,500 documents of the benchmark left when it is woken are ~35 ms
/// of work for two indexing threads (~45 µs of CPU a document), time for it to be scheduled on
/// a busy machine (waiting at 1,000 until 500 gave 358-372 MB at 1M, against 363-389).
/// Documents of 100 KB wait ~77 at a time, not 10,000.
const MAX_QUEUED: usize = 2_000;
const RESUME_AT: usize = 1_500;
const QUEUE_UNIT: usize = 4096;

/// Counts the documents handed to a writer and not yet indexed ([`MAX_QUEUED`]).
#[derive(Default)]
struct Queue {
    /// In `QUEUE_UNIT`s.
    queued: std::sync::atomic::AtomicUsize,
    lock: std::sync::Mutex<()>,
    drained: std::sync::Condvar,
}

impl Queue {
    /// Counts `doc` queued until the returned ticket is dropped.
    fn ticket(self: &Arc<Self>, doc: &TantivyDocument) -> Ticket {
        let units = doc.node_data.len() / QUEUE_UNIT + 1;
        self.queued
            .fetch_add(units, std::sync::atomic::Ordering::SeqCst);
        Ticket {
            queue: self.clone(),
            units,
        }
    }

    /// With `MAX_QUEUED` units queued, waits until no more than `RESUME_AT` are, or for at most
    /// a second (a writer whose threads are gone holds its documents: `add_document` says so).
    fn wait_for_room(&self) {
        use std::sync::atomic::Ordering::SeqCst;
        if self.queued.load(SeqCst) < MAX_QUEUED {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        while self.queued.load(SeqCst) > RESUME_AT {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                break;
            };
            guard = self
                .drained
                .wait_timeout(guard, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// One queued document's place in its [`Queue`].
struct Ticket {
    queue: Arc<Queue>,
    units: usize,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let q = &self.queue;
        let before = q
            .queued
            .fetch_sub(self.units, std::sync::atomic::Ordering::SeqCst);
        // The one that brings the count down to `RESUME_AT` wakes the backend (it checks the
        // count under the lock, so this cannot come between its check and its wait).
        if before > RESUME_AT && before - self.units <= RESUME_AT {
            let _guard = q.lock.lock().unwrap_or_else(|e| e.into_inner());
            q.drained.notify_all();
        }
    }
}

/// A document handed to the backend's writer: counted in its [`Queue`] until the writer's
/// thread has indexed (and dropped) it.
struct Queued {
    doc: TantivyDocument,
    _ticket: Ticket,
}

impl tantivy::Document for Queued {
    type Value<'a> = <TantivyDocument as tantivy::Document>::Value<'a>;
    type FieldsValuesIter<'a> = <TantivyDocument as tantivy::Document>::FieldsValuesIter<'a>;

    fn iter_fields_and_values(&self) -> Self::FieldsValuesIter<'_> {
        self.doc.iter_fields_and_values()
    }
}

inventory::submit!(super::IndexerDescriptor {
    name: "tantivy",
    aliases: &[],
    spec: TantivyOptions::spec,
    check: |_, config| {
        let o = options(config)?;
        Ok(BackendCheck {
            output: Some(super::BackendOutput {
                path: config.resolve_output_path(&o.path),
                replaced: false,
            }),
            ..BackendCheck::default()
        })
    },
    // Opens nothing: the index (and its lock) is taken at `validate_connection` or the first
    // `send`.
    build: |_, config, _| Ok(Box::new(TantivyBackend::from_config(config)?)),
});

pub struct TantivyBackend {
    path: PathBuf,
    defs: Vec<FieldDef>,
    memory_mb: usize,
    /// `writerThreads`, when given.
    threads: Option<usize>,
    commit_every: Option<Duration>,
    last_commit: Instant,
    /// Successful commits so far (the indexer holds FINISH events until one).
    commits: u64,
    /// The main index (`None`) and indexes named by `indexOverrideField`, opened on demand.
    targets: HashMap<Option<String>, Target>,
}

impl TantivyBackend {
    /// A backend on the `tantivy` block; opens nothing.
    pub fn from_config(config: &ComponentConfig) -> Result<Self, ConfigErrors> {
        let o = options(config)?;
        let threads = o.writer_threads.map(|t| t.unsigned_abs() as usize);
        Ok(Self::new(
            config.resolve_output_path(&o.path),
            o.fields.map(|f| f.0).unwrap_or_default(),
            // At least 15: checked by its `min`.
            o.writer_memory_mb.unsigned_abs() as usize,
            o.commit_every_secs
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(s.unsigned_abs())),
        )
        .with_writer_threads(threads))
    }

    /// Sets the writer's indexing threads (`writerThreads`; `None`: sized to the machine).
    pub fn with_writer_threads(mut self, threads: Option<usize>) -> Self {
        self.threads = threads;
        self
    }

    /// Nothing is opened until `validate_connection` or the first `send`.
    pub fn new(
        path: PathBuf,
        defs: Vec<FieldDef>,
        memory_mb: usize,
        commit_every: Option<Duration>,
    ) -> Self {
        TantivyBackend {
            path,
            defs,
            memory_mb,
            threads: None,
            commit_every,
            last_commit: Instant::now(),
            commits: 0,
            targets: HashMap::new(),
        }
    }

    fn target(&mut self, index: &Option<String>) -> Result<&mut Target, IndexError> {
        if !self.targets.contains_key(index) {
            let path = match index {
                None => self.path.clone(),
                Some(name) => {
                    let ok = !name.is_empty()
                        && name != "."
                        && name != ".."
                        && !name.contains(['/', '\\'])
                        && !name.starts_with('.');
                    if !ok {
                        return Err(IndexError::BadIndexName(name.clone()));
                    }
                    self.path.join(name)
                }
            };
            // Override indexes get the main index's schema.
            let index_obj = match (index, self.targets.get(&None)) {
                (Some(_), Some(main)) if !path.join("meta.json").exists() => {
                    std::fs::create_dir_all(&path).map_err(|source| IndexError::CreateFolder {
                        path: path.clone(),
                        source,
                    })?;
                    create_index(&path, main.layout.schema.clone()).map_err(|source| {
                        IndexError::Tantivy {
                            action: "create",
                            path: path.clone(),
                            source,
                        }
                    })?
                }
                _ => open_or_create(&path, &self.defs)?,
            };
            let layout = Layout::of(index_obj.schema())?;
            let empty = index_obj
                .searchable_segment_ids()
                .map_err(|source| IndexError::Tantivy {
                    action: "read",
                    path: path.clone(),
                    source,
                })?
                .is_empty();
            let writer =
                writer_with(&index_obj, self.memory_mb, self.threads).map_err(|source| {
                    IndexError::Tantivy {
                        action: "open a writer on",
                        path: path.clone(),
                        source,
                    }
                })?;
            let fresh = FreshIds(empty.then(std::collections::HashSet::new));
            self.targets.insert(
                index.clone(),
                Target {
                    path: path.clone(),
                    layout,
                    writer,
                    queue: Arc::default(),
                    fresh,
                },
            );
        }
        self.targets.get_mut(index).ok_or(IndexError::Vanished)
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        let mut failed = None;
        for (name, t) in self.targets.iter_mut() {
            if let Err(e) = t.writer.commit() {
                failed = Some(BackendError::new(format!(
                    "tantivy commit failed{}: {e}",
                    name.as_deref()
                        .map(|n| format!(" (index {n:?})"))
                        .unwrap_or_default()
                )));
                break;
            }
        }
        if let Some(e) = failed {
            // A writer whose commit failed has lost its indexing threads (Tantivy's
            // prepare_commit stops at the first failed one and starts no others), but goes on
            // taking documents into a queue nobody reads, and its next commit "succeeds"
            // without them. Drop the writers: the next document reopens the index at its last
            // good commit with a fresh writer. Everything not committed FAILs (the indexer
            // holds those documents' events until a commit, and fails them with this error).
            self.targets.clear();
            return Err(e);
        }
        self.last_commit = Instant::now();
        self.commits += 1;
        Ok(())
    }

    /// Adds a built document, replacing any earlier one with its id.
    fn add(
        &mut self,
        id: &str,
        index: &Option<String>,
        doc: TantivyDocument,
    ) -> Result<(), IndexError> {
        let t = self.target(index)?;
        if t.fresh.needs_delete(id) {
            t.writer.delete_term(Term::from_field_text(t.layout.id, id));
        }
        t.queue.wait_for_room();
        let doc = Queued {
            _ticket: t.queue.ticket(&doc),
            doc,
        };
        t.writer.add_document(doc).map_err(IndexError::Rejected)?;
        Ok(())
    }

    fn apply(&mut self, op: &IndexOp) -> Result<(), IndexError> {
        match op {
            IndexOp::Upsert {
                id, index, fields, ..
            } => {
                let doc = self.target(index)?.layout.document(id, fields)?;
                self.add(id, index, doc)?;
            }
            IndexOp::DeleteById { id, index, .. } => {
                let t = self.target(index)?;
                t.writer.delete_term(Term::from_field_text(t.layout.id, id));
            }
            IndexOp::DeleteByField {
                field,
                value,
                index,
            } => {
                let t = self.target(index)?;
                let query = field_query(&t.layout, field, value)?;
                t.writer
                    .delete_query(query)
                    .map_err(|source| IndexError::Delete {
                        field: field.clone(),
                        source,
                    })?;
            }
        }
        Ok(())
    }
}

/// `field` = `value` as a query: the id or a raw string field by exact term, other fields
/// (typed or in `_fields`) as Tantivy parses `field:"value"`.
fn field_query(
    layout: &Layout,
    field: &str,
    value: &str,
) -> Result<Box<dyn tantivy::query::Query>, IndexError> {
    if field == ID_FIELD {
        return Ok(Box::new(tantivy::query::TermQuery::new(
            Term::from_field_text(layout.id, value),
            tantivy::schema::IndexRecordOption::Basic,
        )));
    }
    let parser = QueryParser::new(
        layout.schema.clone(),
        vec![layout.json],
        tantivy::tokenizer::TokenizerManager::default(),
    );
    let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
    let name = field.replace('.', "\\.");
    parser
        .parse_query(&format!("{name}:\"{escaped}\""))
        .map_err(|source| IndexError::DeleteQuery {
            field: field.to_string(),
            value: value.to_string(),
            source,
        })
}

/// Builds upserts' Tantivy documents for the main index, on the worker threads.
struct DocumentEncoder {
    layout: Layout,
}

impl Encoder for DocumentEncoder {
    fn encode(&self, op: &mut IndexOp) -> Result<Option<Encoded>, EncodeError> {
        match op {
            IndexOp::Upsert {
                id,
                index: None,
                fields,
                ..
            } => {
                let doc = self
                    .layout
                    .document_owned(id, std::mem::take(fields))
                    .map_err(EncodeError::new)?;
                Ok(Some(Box::new(doc)))
            }
            _ => Ok(None),
        }
    }
}

impl Backend for TantivyBackend {
    fn validate_connection(&mut self) -> Result<(), BackendError> {
        self.target(&None).map(|_| ()).map_err(BackendError::from)
    }

    fn send(&mut self, ops: &[IndexOp]) -> Result<Vec<Option<String>>, BackendError> {
        self.send_encoded(ops, Vec::new())
    }

    /// Builds the Tantivy documents of upserts into the main index on the worker threads
    /// (upserts to an override index, and deletes, are applied here as they are).
    fn encoder(&self) -> Option<Arc<dyn Encoder>> {
        self.targets.get(&None).map(|t| {
            Arc::new(DocumentEncoder {
                layout: t.layout.clone(),
            }) as Arc<dyn Encoder>
        })
    }

    fn send_encoded(
        &mut self,
        ops: &[IndexOp],
        mut encoded: Vec<Option<Encoded>>,
    ) -> Result<Vec<Option<String>>, BackendError> {
        let results = ops
            .iter()
            .enumerate()
            .map(
                |(i, op)| match (op, take_encoded::<TantivyDocument>(&mut encoded, i)) {
                    (IndexOp::Upsert { id, index, .. }, Some(doc)) => {
                        self.add(id, index, doc).err().map(|e| e.to_string())
                    }
                    (op, _) => self.apply(op).err().map(|e| e.to_string()),
                },
            )
            .collect();
        if self
            .commit_every
            .is_some_and(|every| self.last_commit.elapsed() >= every)
        {
            self.commit()?;
        }
        Ok(results)
    }

    fn commits(&self) -> Option<u64> {
        Some(self.commits)
    }

    fn commit(&mut self) -> Result<(), BackendError> {
        TantivyBackend::commit(self)
    }

    fn close(&mut self) -> Result<(), BackendError> {
        self.commit()?;
        for (_, t) in self.targets.drain() {
            let index = t.writer.index().clone();
            t.writer
                .wait_merging_threads()
                .map_err(|e| BackendError::new(format!("tantivy merge failed: {e}")))?;
            // The vector codes of the segments the merges left. Their documents are committed:
            // a failure here is logged, and searches build what is missing.
            let fields = t.layout.vector_fields();
            if !fields.is_empty() {
                if let Err(e) = vectors::write_all(&t.path, &index, &fields) {
                    tracing::warn!(
                        "cannot write the vector codes of {}: {e} (searches build them)",
                        t.path.display()
                    );
                }
            }
        }
        Ok(())
    }
}

/// One search result: its score and stored document (with `id`); in a hybrid search, its
/// 1-based rank in the text ranking and in the vector ranking (`None` where it is not among
/// the ranked).
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub score: f32,
    pub doc: Map<String, Value>,
    pub text_rank: Option<usize>,
    pub vector_rank: Option<usize>,
    /// With [`SearchRequest::snippets`]: for each field (a dotted path) whose text holds a term
    /// of the query, a fragment of it as HTML (escaped) with the terms in `<b>`.
    pub snippets: Option<Map<String, Value>>,
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("no index at {0}")]
    Missing(PathBuf),
    #[error("cannot open the index at {path}: {message}")]
    Open { path: PathBuf, message: String },
    #[error("bad query {query:?}: {reason}")]
    Query {
        query: String,
        #[source]
        reason: QueryError,
    },
}

/// Why a search's query (or its vector) cannot be run.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// Not Tantivy's query syntax; `position` is the character (from 0) where the parser
    /// gave up.
    #[error(
        "syntax error at character {position} (Tantivy's query syntax: words, \"a phrase\", \
         field:value, AND, OR, -word, parentheses)"
    )]
    Syntax { position: usize },
    /// Valid syntax the index cannot answer (a field it does not have, a value its field's type
    /// does not read), or, in an index of the old layout, Tantivy's own syntax error.
    #[error(transparent)]
    Parse(#[from] tantivy::query::QueryParserError),
    /// The text paths of the JSON field could not be read from the index.
    #[error("cannot read the index's field names: {0}")]
    Fields(#[source] tantivy::TantivyError),
    /// `search_vector`'s field is not a `vector` field.
    #[error("{0:?} is not a vector field of this index")]
    NotAVectorField(String),
    /// `search_vector`'s vector.
    #[error("the query vector must be non-empty, finite and not all zeros")]
    BadVector,
    /// `hybrid` without a vector to fuse the text ranking with.
    #[error("hybrid search needs a vector and its field (vector=, field=; --vector or --near)")]
    HybridNeedsVector,
    /// `rrf_k` negative or not a number.
    #[error("rrf_k must be a number >= 0, not {0}")]
    BadRrfK(f64),
}

/// A search of the embedded index (`lucille.search`, `lucille search`).
#[derive(Debug, Clone, Copy)]
pub struct SearchRequest<'a> {
    /// Tantivy's query syntax; empty: every document.
    pub query: &'a str,
    pub limit: usize,
    /// Hits to skip (paging).
    pub offset: usize,
    /// A `vector` field and the vector compared with it by cosine.
    pub vector: Option<(&'a str, &'a [f32])>,
    /// With `vector`: fuse the text ranking of `query` and the vector ranking of every document
    /// by reciprocal rank fusion, instead of ranking `query`'s documents by cosine.
    pub hybrid: bool,
    /// Reciprocal rank fusion's constant: a hit scores the sum of `1 / (rrf_k + rank)` over
    /// the rankings it is in.
    pub rrf_k: f64,
    /// Give each hit its [`Hit::snippets`].
    pub snippets: bool,
}

impl<'a> SearchRequest<'a> {
    /// `query`'s best `limit` hits.
    pub fn text(query: &'a str, limit: usize) -> Self {
        SearchRequest {
            query,
            limit,
            offset: 0,
            vector: None,
            hybrid: false,
            rrf_k: DEFAULT_RRF_K,
            snippets: false,
        }
    }
}

/// Reciprocal rank fusion's usual constant (Cormack, Clarke and Büttcher, 2009).
pub const DEFAULT_RRF_K: f64 = 60.0;
/// How deep each ranking a hybrid search fuses is taken (deeper when offset + limit is).
pub const FUSION_DEPTH: usize = 100;

/// Searches the index at `path` with Tantivy's query syntax; the best `limit` hits first.
/// Bare words search every string of the document; `field:value` targets a typed field or a
/// field without a type (routed to the JSON field).
pub fn search(path: &Path, query: &str, limit: usize) -> Result<Vec<Hit>, SearchError> {
    search_with(path, &SearchRequest::text(query, limit))
}

/// The best `limit` documents by cosine similarity between `vector` and their `field` (a
/// `vector` field), among the hits of `query` when one is given (else every document);
/// documents without the field, or whose vector has another length, are left out. A hit's
/// `score` is the cosine.
pub fn search_vector(
    path: &Path,
    field: &str,
    vector: &[f32],
    query: Option<&str>,
    limit: usize,
) -> Result<Vec<Hit>, SearchError> {
    search_with(
        path,
        &SearchRequest {
            vector: Some((field, vector)),
            ..SearchRequest::text(query.unwrap_or_default(), limit)
        },
    )
}

/// Runs `req` on the index at `path`: the hits ranked `offset + 1 ..= offset + limit`. Text:
/// Tantivy's BM25 score. Vector: the cosine, among `query`'s documents. Hybrid: the fused
/// score, with each hit's rank in the text and in the vector ranking (each taken to
/// [`FUSION_DEPTH`] or `offset + limit`, whichever is deeper); ties go to the document
/// indexed first.
pub fn search_with(path: &Path, req: &SearchRequest<'_>) -> Result<Vec<Hit>, SearchError> {
    let o = Opened::at(path)?;
    let bad_query = |reason: QueryError| SearchError::Query {
        query: req.query.to_string(),
        reason,
    };
    if req.hybrid && req.vector.is_none() {
        return Err(bad_query(QueryError::HybridNeedsVector));
    }
    if !(req.rrf_k.is_finite() && req.rrf_k >= 0.0) {
        return Err(bad_query(QueryError::BadRrfK(req.rrf_k)));
    }
    if let Some((field, vector)) = req.vector {
        match o.layout.typed.get(field) {
            Some((_, FieldType::Bytes(_))) => {}
            _ => return Err(bad_query(QueryError::NotAVectorField(field.to_string()))),
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if vector.is_empty() || !norm.is_finite() || norm == 0.0 {
            return Err(bad_query(QueryError::BadVector));
        }
    }
    // Parsed even when nothing is asked for, so a bad query is an error whatever the limit.
    let parsed = if req.query.trim().is_empty() && req.vector.is_some() {
        None
    } else {
        Some(o.query(req.query)?)
    };
    o.hits(req, parsed.as_deref())
}

/// An index opened for searching.
struct Opened {
    path: PathBuf,
    index: Index,
    layout: Layout,
    searcher: Searcher,
}

impl Opened {
    fn at(path: &Path) -> Result<Self, SearchError> {
        if !path.join("meta.json").is_file() {
            return Err(SearchError::Missing(path.to_path_buf()));
        }
        let open = |e: &dyn std::fmt::Display| SearchError::Open {
            path: path.to_path_buf(),
            message: e.to_string(),
        };
        let index = Index::open_in_dir(path).map_err(|e| open(&e))?;
        let layout = Layout::of(index.schema()).map_err(|e| open(&e))?;
        let searcher = index.reader().map_err(|e| open(&e))?.searcher();
        Ok(Opened {
            path: path.to_path_buf(),
            index,
            layout,
            searcher,
        })
    }

    /// A failure reading the index.
    fn error(&self, e: &dyn std::fmt::Display) -> SearchError {
        SearchError::Open {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }

    /// `text` in Tantivy's query syntax, as this index answers it; an empty one matches every
    /// document.
    fn query(&self, text: &str) -> Result<Box<dyn tantivy::query::Query>, SearchError> {
        if text.trim().is_empty() {
            return Ok(Box::new(tantivy::query::AllQuery));
        }
        self.layout
            .query(&self.index, &self.searcher, text)
            .map_err(|reason| SearchError::Query {
                query: text.to_string(),
                reason,
            })
    }

    /// `req`'s hits (its vector and rrf_k checked), `parsed` its query.
    fn hits(
        &self,
        req: &SearchRequest<'_>,
        parsed: Option<&dyn tantivy::query::Query>,
    ) -> Result<Vec<Hit>, SearchError> {
        let (layout, searcher) = (&self.layout, &self.searcher);
        let open = |e: &dyn std::fmt::Display| self.error(e);
        // No ranking is deeper than the index (a huge limit or offset must not size a heap).
        let live = usize::try_from(searcher.num_docs()).unwrap_or(usize::MAX);
        let wanted = req.offset.saturating_add(req.limit).min(live);
        if req.limit == 0 || req.offset >= wanted {
            return Ok(Vec::new());
        }
        let snippets = match (parsed, req.snippets) {
            (Some(q), true) => Some(Snippets::new(layout, searcher, q).map_err(|e| open(&e))?),
            (None, true) => Some(Snippets::default()),
            (_, false) => None,
        };
        let hit =
            |score: f32, addr, ranks: (Option<usize>, Option<usize>)| -> Result<Hit, SearchError> {
                let d: TantivyDocument = searcher.doc(addr).map_err(|e| open(&e))?;
                let doc = layout.stored(&d);
                Ok(Hit {
                    score,
                    snippets: snippets.as_ref().map(|s| s.of(&doc)),
                    doc,
                    text_rank: ranks.0,
                    vector_rank: ranks.1,
                })
            };
        let page = |ranked: Vec<(f32, tantivy::DocAddress)>| -> Result<Vec<Hit>, SearchError> {
            ranked
                .into_iter()
                .skip(req.offset)
                .take(req.limit)
                .map(|(score, addr)| hit(score, addr, (None, None)))
                .collect()
        };
        let text_ranking = |q: &dyn tantivy::query::Query, depth: usize| {
            searcher
                .search(q, &TopDocs::with_limit(depth))
                .map_err(|e| open(&e))
        };
        match (req.vector, req.hybrid) {
            (None, _) => match parsed {
                Some(q) => page(text_ranking(q, wanted)?),
                None => Ok(Vec::new()),
            },
            (Some((field, vector)), false) => {
                let allowed = match parsed {
                    Some(q) => Some(
                        searcher
                            .search(q, &tantivy::collector::DocSetCollector)
                            .map_err(|e| open(&e))?,
                    ),
                    None => None,
                };
                page(
                    cosine_ranking(
                        searcher,
                        Some((&self.path, &vectors::NARROWING)),
                        field,
                        vector,
                        allowed.as_ref(),
                        wanted,
                    )
                    .map_err(|e| open(&e))?,
                )
            }
            (Some((field, vector)), true) => {
                let depth = wanted.max(FUSION_DEPTH.min(live));
                let text = match parsed {
                    Some(q) => text_ranking(q, depth)?,
                    None => Vec::new(),
                };
                let near = cosine_ranking(
                    searcher,
                    Some((&self.path, &vectors::NARROWING)),
                    field,
                    vector,
                    None,
                    depth,
                )
                .map_err(|e| open(&e))?;
                fuse(&text, &near, req.rrf_k)
                    .into_iter()
                    .skip(req.offset)
                    .take(req.limit)
                    .map(|(score, addr, ranks)| hit(score as f32, addr, ranks))
                    .collect()
            }
        }
    }
}

/// How many documents the index at `path` holds (as of its last commit).
pub fn document_count(path: &Path) -> Result<u64, SearchError> {
    Ok(Opened::at(path)?.searcher.num_docs())
}

/// A page of a text search with what a search page shows beside it ([`search_page`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The documents the query matches.
    pub total: u64,
    pub hits: Vec<Hit>,
    /// With a facet field: its values among the matches with how many hold each, most first
    /// (ties by value), at most [`FACET_VALUES`].
    pub facets: Vec<(Value, u64)>,
}

/// The most values a facet lists.
pub const FACET_VALUES: usize = 20;

/// `query`'s hits ranked `offset + 1 ..= offset + limit` (with snippets when asked), how many
/// documents it matches, and the counts of the values of `facet` (a field or dotted path)
/// among them. The counts read each matching document's stored fields.
pub fn search_page(
    path: &Path,
    query: &str,
    limit: usize,
    offset: usize,
    snippets: bool,
    facet: Option<&str>,
) -> Result<Page, SearchError> {
    let o = Opened::at(path)?;
    let q = o.query(query)?;
    let req = SearchRequest {
        offset,
        snippets,
        ..SearchRequest::text(query, limit)
    };
    let hits = o.hits(&req, Some(q.as_ref()))?;
    let (layout, searcher) = (&o.layout, &o.searcher);
    let open = |e: &dyn std::fmt::Display| o.error(e);
    let Some(facet) = facet else {
        let total = searcher
            .search(q.as_ref(), &tantivy::collector::Count)
            .map_err(|e| open(&e))? as u64;
        return Ok(Page {
            total,
            hits,
            facets: Vec::new(),
        });
    };
    // The matches the values are counted in are the count too: one search, not two.
    let matches = searcher
        .search(q.as_ref(), &tantivy::collector::DocSetCollector)
        .map_err(|e| open(&e))?;
    let total = matches.len() as u64;
    let facets = {
        let path: Vec<String> = facet.split('.').map(str::to_string).collect();
        let mut counts: std::collections::HashMap<String, (Value, u64)> = Default::default();
        for addr in matches {
            let d: TantivyDocument = searcher.doc(addr).map_err(|e| open(&e))?;
            let doc = layout.stored(&d);
            let mut values = Vec::new();
            values_at(&doc, &path, &mut values);
            // A value counts once per document.
            let mut seen = std::collections::HashSet::new();
            for v in values {
                let key = v.to_string();
                if seen.insert(key.clone()) {
                    counts.entry(key).or_insert_with(|| (v.clone(), 0)).1 += 1;
                }
            }
        }
        let mut listed: Vec<(String, (Value, u64))> = counts.into_iter().collect();
        listed.sort_by(|a, b| b.1 .1.cmp(&a.1 .1).then_with(|| a.0.cmp(&b.0)));
        listed
            .into_iter()
            .take(FACET_VALUES)
            .map(|(_, v)| v)
            .collect()
    };
    Ok(Page {
        total,
        hits,
        facets,
    })
}

/// The scalar values at `path` in `doc` (through nested objects and lists).
fn values_at<'a>(doc: &'a Map<String, Value>, path: &[String], out: &mut Vec<&'a Value>) {
    fn walk<'a>(v: &'a Value, rest: &[String], out: &mut Vec<&'a Value>) {
        match (v, rest.split_first()) {
            (Value::Array(items), _) => items.iter().for_each(|i| walk(i, rest, out)),
            (Value::Object(m), Some((key, rest))) => {
                if let Some(v) = m.get(key) {
                    walk(v, rest, out);
                }
            }
            (Value::Object(_) | Value::Null, None) => {}
            (v, None) => out.push(v),
            _ => {}
        }
    }
    if let Some((key, rest)) = path.split_first() {
        if let Some(v) = doc.get(key) {
            walk(v, rest, out);
        }
    }
}

/// The fragments of a hit's text that hold a query's terms ([`Hit::snippets`]), made with
/// Tantivy's snippet generator from the terms the query looks for in each text field and JSON
/// path (bare words are looked for in all of them).
#[derive(Default)]
struct Snippets {
    /// A generator per field path (its segments), from the terms the query has for it.
    by_path: Vec<(Vec<String>, tantivy::snippet::SnippetGenerator)>,
}

impl Snippets {
    fn new(
        layout: &Layout,
        searcher: &Searcher,
        query: &dyn tantivy::query::Query,
    ) -> tantivy::Result<Self> {
        // The terms by field and path: a JSON term's path segments, or a typed field's name.
        type Place = (Field, Vec<String>);
        let mut terms: std::collections::BTreeMap<Place, Vec<(String, Term)>> = Default::default();
        query.query_terms(&mut |term, _| {
            // A hit shows its id whole; a bare word that is an id is no fragment of text.
            if term.field() == layout.id {
                return;
            }
            let value = term.value();
            let (path, text) = if term.field() == layout.json {
                let Some(parts) = json_text_term(term) else {
                    return;
                };
                parts
            } else {
                let Some(text) = value.as_str() else {
                    return;
                };
                let name = layout.schema.get_field_name(term.field()).to_string();
                (vec![name], text.to_string())
            };
            terms
                .entry((term.field(), path))
                .or_default()
                .push((text, term.clone()));
        });
        let mut by_path = Vec::new();
        for ((field, path), terms) in terms {
            let mut texts = std::collections::BTreeMap::new();
            for (text, term) in &terms {
                // As Tantivy's own generator weighs them: rarer terms count more.
                let df = searcher.doc_freq(term)?;
                if df > 0 {
                    texts.insert(text.clone(), 1.0 / (1.0 + df as f32));
                }
            }
            if texts.is_empty() {
                continue;
            }
            let tokenizer = searcher.index().tokenizer_for_field(field)?;
            by_path.push((
                path,
                tantivy::snippet::SnippetGenerator::new(texts, tokenizer, field, SNIPPET_CHARS),
            ));
        }
        Ok(Snippets { by_path })
    }

    /// `doc`'s snippets: field path -> HTML, for the fields with a term of the query.
    fn of(&self, doc: &Map<String, Value>) -> Map<String, Value> {
        let mut out = Map::new();
        for (path, generator) in &self.by_path {
            let mut texts = Vec::new();
            strings_at(doc, path, &mut texts);
            if texts.is_empty() {
                continue;
            }
            let snippet = generator.snippet(&texts.join(" … "));
            if !snippet.is_empty() {
                out.insert(path.join("."), Value::String(snippet.to_html()));
            }
        }
        out
    }
}

/// A JSON field's text term as its path's segments and its text (`None` for other values).
fn json_text_term(term: &Term) -> Option<(Vec<String>, String)> {
    let (path, kind, value) = split_json_term(term.serialized_value_bytes())?;
    if kind != tantivy::schema::Type::Str.to_code() {
        return None;
    }
    Some((path, std::str::from_utf8(value).ok()?.to_string()))
}

/// A JSON field's term (a key of its term dictionary, or a term's value bytes): its path's
/// segments (separated by `JSON_PATH_SEGMENT_SEP`, ended by `JSON_END_OF_PATH`), the value's
/// type code and the value. Tantivy keeps its own parser of this layout private.
fn split_json_term(bytes: &[u8]) -> Option<(Vec<String>, u8, &[u8])> {
    let end = bytes.iter().position(|&b| b == JSON_END_OF_PATH)?;
    let kind = *bytes.get(end + 1)?;
    let path = bytes[..end]
        .split(|&b| b == JSON_PATH_SEGMENT_SEP)
        .map(|seg| String::from_utf8_lossy(seg).into_owned())
        .collect();
    Some((path, kind, &bytes[end + 2..]))
}

/// The most characters of a snippet's fragment.
const SNIPPET_CHARS: usize = 150;

/// The strings at `path` in `doc` (through nested objects and lists).
fn strings_at<'a>(doc: &'a Map<String, Value>, path: &[String], out: &mut Vec<&'a str>) {
    let mut values = Vec::new();
    values_at(doc, path, &mut values);
    out.extend(values.into_iter().filter_map(Value::as_str));
}

/// Reciprocal rank fusion of two rankings (best first): each document scores the sum of
/// `1 / (k + rank)` (rank 1-based) over the rankings it is in; best fused score first, ties
/// to the smaller address. With each document's ranks (text, vector).
#[allow(clippy::type_complexity)]
fn fuse(
    text: &[(f32, tantivy::DocAddress)],
    vector: &[(f32, tantivy::DocAddress)],
    k: f64,
) -> Vec<(f64, tantivy::DocAddress, (Option<usize>, Option<usize>))> {
    let mut ranks: std::collections::HashMap<tantivy::DocAddress, (Option<usize>, Option<usize>)> =
        std::collections::HashMap::new();
    for (i, (_, addr)) in text.iter().enumerate() {
        ranks.entry(*addr).or_default().0 = Some(i + 1);
    }
    for (i, (_, addr)) in vector.iter().enumerate() {
        ranks.entry(*addr).or_default().1 = Some(i + 1);
    }
    let rrf = |rank: Option<usize>| rank.map_or(0.0, |r| 1.0 / (k + r as f64));
    let mut fused: Vec<_> = ranks
        .into_iter()
        .map(|(addr, (t, v))| (rrf(t) + rrf(v), addr, (t, v)))
        .collect();
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    fused
}

/// The cosine of a stored vector (little-endian float32 bytes) and `vector` (whose length is
/// `query_norm`); `None` for another length or a zero vector.
fn cosine(bytes: &[u8], vector: &[f32], query_norm: f32) -> Option<f32> {
    if bytes.len() != vector.len() * 4 {
        return None;
    }
    let (mut dot, mut norm) = (0f32, 0f32);
    for (c, q) in bytes.chunks_exact(4).zip(vector) {
        let x = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        dot += x * q;
        norm += x * x;
    }
    (norm > 0.0).then(|| dot / (norm.sqrt() * query_norm))
}

/// The documents with a vector in `field` (of `vector`'s length), best cosine first, at most
/// `depth`; only those in `allowed` when given. An unfiltered ranking of many vectors is first
/// narrowed through the vector codes beside the index (`codes`: its folder and how to narrow;
/// `vectors.rs`); the documents left are scored exactly, from the fast column.
fn cosine_ranking(
    searcher: &tantivy::Searcher,
    codes: Option<(&Path, &vectors::Narrowing)>,
    field: &str,
    vector: &[f32],
    allowed: Option<&std::collections::HashSet<tantivy::DocAddress>>,
    depth: usize,
) -> tantivy::Result<Vec<(f32, tantivy::DocAddress)>> {
    let narrowed = match (allowed, codes) {
        (None, Some((dir, n))) => vectors::narrow(searcher, dir, field, vector, depth, n)?,
        _ => None,
    };
    let query_norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    let mut scored: Vec<(f32, tantivy::DocAddress)> = Vec::new();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        let ord = ord as u32;
        let mut score = |docs: &[tantivy::DocId], bytes: &[u8]| {
            if let Some(s) = cosine(bytes, vector, query_norm) {
                scored.extend(docs.iter().map(|d| (s, tantivy::DocAddress::new(ord, *d))));
            }
        };
        match &narrowed {
            // In segment order: this segment's run of them.
            Some(chosen) => {
                let docs = chosen
                    .iter()
                    .filter(|a| a.segment_ord == ord)
                    .map(|a| a.doc_id);
                vectors::each_value(segment, field, docs, &mut score)?
            }
            None => {
                let docs = segment.doc_ids_alive().filter(|doc| {
                    allowed.is_none_or(|a| a.contains(&tantivy::DocAddress::new(ord, *doc)))
                });
                vectors::each_value(segment, field, docs, &mut score)?
            }
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.truncate(depth);
    Ok(scored)
}

mod directory;
pub mod vectors;

#[cfg(test)]
mod tests;
