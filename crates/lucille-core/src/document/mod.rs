//! The Document: an ordered set of named fields, each holding one value or a list of values,
//! backed directly by a JSON object so it crosses every boundary (queues, Kafka, search engine
//! bulk APIs, test assertions) without a mapping layer.
//!
//! The backing object also holds the reserved fields (`id` first, then `run_id`, and the
//! `___dropped` / `___skipped` / `___children` control fields), exactly as Lucille's JSON form,
//! so `to_json` is a single serialisation and `from_json` a single parse.

mod convert;
mod error;
pub mod ids;
mod parse;
mod path;
pub mod write;

use serde_json::{Map, Value};

/// A document's fields, reserved ones included, in insertion order: serde_json's
/// `preserve_order` map, but hashed with foldhash (a seeded fast hasher) instead of SipHash,
/// which cost ~15% of a worker's instructions (callgrind, bench/standard row 1): every field
/// read and write is a lookup. Nested objects stay serde_json `Map`s.
pub type Fields = indexmap::IndexMap<String, Value, foldhash::fast::RandomState>;

/// An empty [`Fields`] with room for `n` entries.
pub fn fields_with_capacity(n: usize) -> Fields {
    Fields::with_capacity_and_hasher(n, Default::default())
}

pub use convert::{f32_to_value, f64_to_value, FromField};
pub use error::DocumentError;
pub use parse::{read_object, ObjectParser, ObjectReader, ParseError};
pub use path::{FieldPath, Segment};

use lucille_jsonata::Expression;

pub const ID_FIELD: &str = "id";
pub const RUN_ID_FIELD: &str = "run_id";
pub const CHILDREN_FIELD: &str = "___children";
pub const DROP_FIELD: &str = "___dropped";
pub const SKIP_FIELD: &str = "___skipped";
pub const RESERVED_FIELDS: [&str; 5] = [
    ID_FIELD,
    RUN_ID_FIELD,
    CHILDREN_FIELD,
    DROP_FIELD,
    SKIP_FIELD,
];

pub fn is_reserved(name: &str) -> bool {
    RESERVED_FIELDS.contains(&name)
}

/// How a write treats a field that already has a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum UpdateMode {
    /// The first value replaces whatever was there; further values are appended.
    #[default]
    Overwrite,
    /// Every value is appended (set-or-add: an absent field starts single-valued).
    Append,
    /// The field is left alone if it exists.
    Skip,
}

impl UpdateMode {
    /// Parses Lucille's config spelling (`overwrite`, `append`, `skip`, any case).
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "overwrite" => Some(UpdateMode::Overwrite),
            "append" => Some(UpdateMode::Append),
            "skip" => Some(UpdateMode::Skip),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    data: Fields,
}

impl Document {
    /// A document with the given id and no fields.
    pub fn new(id: impl Into<String>) -> Result<Self, DocumentError> {
        let id = id.into();
        if id.is_empty() {
            return Err(DocumentError::EmptyId);
        }
        let mut data = fields_with_capacity(8);
        data.insert(ID_FIELD.to_string(), Value::String(id));
        Ok(Document { data })
    }

    /// A document with a random UUID id: only for sources with no natural key (ids are then
    /// not stable across runs; see `ids`).
    pub fn with_random_id() -> Self {
        let mut data = fields_with_capacity(8);
        data.insert(ID_FIELD.to_string(), Value::String(ids::random_id()));
        Document { data }
    }

    /// An empty stand-in left behind while a document is lent out (to Python code); never
    /// published, indexed or returned to users.
    pub fn placeholder() -> Self {
        Document {
            data: Fields::default(),
        }
    }

    /// Builds a document from a JSON object that has a non-empty string `id`. Reserved fields
    /// present in the object (`run_id`, `___children`, flags) are kept, so a serialised
    /// document round-trips.
    pub fn from_map(data: Map<String, Value>) -> Result<Self, DocumentError> {
        Self::from_fields(data.into_iter().collect())
    }

    /// [`Document::from_map`] for fields already in a [`Fields`] map (a parsed record).
    pub fn from_fields(data: Fields) -> Result<Self, DocumentError> {
        match data.get(ID_FIELD) {
            None => {
                return Err(DocumentError::InvalidJson(
                    "document has no \"id\" field".into(),
                ))
            }
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(Value::String(_)) => return Err(DocumentError::EmptyId),
            Some(other) => {
                return Err(DocumentError::InvalidJson(format!(
                    "\"id\" must be a string, found {}",
                    convert::type_name(other)
                )))
            }
        }
        match data.get(RUN_ID_FIELD) {
            None | Some(Value::String(_)) => {}
            Some(other) => {
                return Err(DocumentError::InvalidJson(format!(
                    "\"run_id\" must be a string, found {}",
                    convert::type_name(other)
                )))
            }
        }
        if let Some(children) = data.get(CHILDREN_FIELD) {
            let ok = match children {
                Value::Array(items) => items.iter().all(|c| {
                    matches!(c, Value::Object(m) if matches!(m.get(ID_FIELD), Some(Value::String(s)) if !s.is_empty()))
                }),
                _ => false,
            };
            if !ok {
                return Err(DocumentError::InvalidJson(
                    "\"___children\" must be a list of objects with a non-empty string id".into(),
                ));
            }
        }
        Ok(Document { data })
    }

    pub fn from_value(value: Value) -> Result<Self, DocumentError> {
        match value {
            Value::Object(map) => Self::from_map(map),
            other => Err(DocumentError::InvalidJson(format!(
                "a document must be a JSON object, found {}",
                convert::type_name(&other)
            ))),
        }
    }

    pub fn from_json(json: &str) -> Result<Self, DocumentError> {
        Self::from_json_bytes(json.as_bytes())
    }

    pub fn from_json_bytes(json: &[u8]) -> Result<Self, DocumentError> {
        let value: Value =
            serde_json::from_slice(json).map_err(|e| DocumentError::InvalidJson(e.to_string()))?;
        Self::from_value(value)
    }

    /// The document as compact JSON, reserved fields included.
    pub fn to_json(&self) -> String {
        // Serialising a map of JSON values cannot fail (keys are strings, numbers are finite).
        serde_json::to_string(&self.data).unwrap_or_default()
    }

    pub fn write_json<W: std::io::Write>(&self, writer: W) -> std::io::Result<()> {
        serde_json::to_writer(writer, &self.data).map_err(std::io::Error::other)
    }

    /// The whole backing object, reserved fields included.
    pub fn as_map(&self) -> &Fields {
        &self.data
    }

    pub fn into_map(self) -> Fields {
        self.data
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.data.into_iter().collect())
    }

    pub fn id(&self) -> &str {
        match self.data.get(ID_FIELD) {
            Some(Value::String(s)) => s,
            // Every constructor guarantees a string id.
            _ => "",
        }
    }

    pub fn run_id(&self) -> Option<&str> {
        match self.data.get(RUN_ID_FIELD) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        }
    }

    /// Stamps the run id, as the Publisher does; a document can be stamped only once.
    pub fn initialize_run_id(&mut self, run_id: &str) -> Result<(), DocumentError> {
        if let Some(existing) = self.run_id() {
            return Err(DocumentError::RunIdAlreadySet {
                id: self.id().to_string(),
                run_id: existing.to_string(),
            });
        }
        self.data
            .insert(RUN_ID_FIELD.to_string(), Value::String(run_id.to_string()));
        Ok(())
    }

    pub fn clear_run_id(&mut self) {
        self.data.shift_remove(RUN_ID_FIELD);
    }

    fn validate_name(&self, name: &str) -> Result<(), DocumentError> {
        if name.is_empty() {
            Err(DocumentError::EmptyFieldName {
                id: self.id().to_string(),
            })
        } else if is_reserved(name) {
            Err(DocumentError::ReservedField {
                id: self.id().to_string(),
                field: name.to_string(),
            })
        } else {
            Ok(())
        }
    }

    // ----- reading -----

    pub fn has(&self, name: &str) -> bool {
        self.data.contains_key(name)
    }

    pub fn has_non_null(&self, name: &str) -> bool {
        matches!(self.data.get(name), Some(v) if !v.is_null())
    }

    /// Whether field `name` holds `value` (read as text): Lucille's deletion-marker test
    /// (`deletionMarkerField` / `deletionMarkerFieldValue`), for the indexer and the stages
    /// that act on marked documents.
    pub fn is_marked(&self, name: &str, value: &str) -> bool {
        self.has_non_null(name) && self.get_string(name).ok().flatten().as_deref() == Some(value)
    }

    pub fn is_multivalued(&self, name: &str) -> bool {
        matches!(self.data.get(name), Some(Value::Array(_)))
    }

    /// Number of values: 0 if absent, the list's length if multi-valued, else 1.
    pub fn len_of(&self, name: &str) -> usize {
        match self.data.get(name) {
            None => 0,
            Some(Value::Array(a)) => a.len(),
            Some(_) => 1,
        }
    }

    /// The raw stored value (a list for a multi-valued field).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.data.get(name)
    }

    /// The first value: the value itself, or the first element of a list (`None` if the list
    /// is empty or the field absent).
    pub fn get_first(&self, name: &str) -> Option<&Value> {
        match self.data.get(name)? {
            Value::Array(a) => a.first(),
            v => Some(v),
        }
    }

    /// All values as a slice: `[]` if absent, `[v]` if single-valued.
    pub fn values(&self, name: &str) -> &[Value] {
        match self.data.get(name) {
            None => &[],
            Some(Value::Array(a)) => a,
            Some(v) => std::slice::from_ref(v),
        }
    }

    /// The first value if it is a JSON string (no conversion, no copy).
    pub fn get_str(&self, name: &str) -> Option<&str> {
        self.get_first(name).and_then(Value::as_str)
    }

    fn convert<T: FromField>(&self, name: &str, value: &Value) -> Result<T, DocumentError> {
        T::from_field(value).map_err(|m| match m {
            convert::Mismatch::Type { expected } => DocumentError::TypeMismatch {
                id: self.id().to_string(),
                field: name.to_string(),
                expected,
                found: convert::type_name(value),
            },
            convert::Mismatch::Content { expected } => DocumentError::Unconvertible {
                id: self.id().to_string(),
                field: name.to_string(),
                expected,
                value: truncate_for_message(value),
            },
        })
    }

    /// The first value converted as Lucille's typed getters do; `None` if absent or null.
    pub fn get_as<T: FromField>(&self, name: &str) -> Result<Option<T>, DocumentError> {
        match self.get_first(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => self.convert(name, v).map(Some),
        }
    }

    /// Every value converted; nulls stay `None`.
    pub fn get_list_as<T: FromField>(&self, name: &str) -> Result<Vec<Option<T>>, DocumentError> {
        self.values(name)
            .iter()
            .map(|v| match v {
                Value::Null => Ok(None),
                v => self.convert(name, v).map(Some),
            })
            .collect()
    }

    pub fn get_string(&self, name: &str) -> Result<Option<String>, DocumentError> {
        self.get_as(name)
    }
    pub fn get_i64(&self, name: &str) -> Result<Option<i64>, DocumentError> {
        self.get_as(name)
    }
    pub fn get_f64(&self, name: &str) -> Result<Option<f64>, DocumentError> {
        self.get_as(name)
    }
    pub fn get_bool(&self, name: &str) -> Result<Option<bool>, DocumentError> {
        self.get_as(name)
    }
    /// Non-null values converted to strings (the common "all values of a text field" read).
    pub fn get_string_list(&self, name: &str) -> Result<Vec<String>, DocumentError> {
        Ok(self
            .get_list_as::<String>(name)?
            .into_iter()
            .flatten()
            .collect())
    }

    /// Field names in insertion order, reserved fields excluded.
    pub fn field_names(&self) -> impl Iterator<Item = &str> {
        self.data
            .keys()
            .map(String::as_str)
            .filter(|k| !is_reserved(k))
    }

    /// Number of non-reserved fields.
    pub fn field_count(&self) -> usize {
        self.field_names().count()
    }

    /// Non-reserved fields with their values, in order.
    pub fn fields(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.data
            .iter()
            .filter(|(k, _)| !is_reserved(k))
            .map(|(k, v)| (k.as_str(), v))
    }

    // ----- writing -----

    /// Replaces any value(s) with a single value, keeping the field's position if it existed.
    pub fn set_field(&mut self, name: &str, value: impl Into<Value>) -> Result<(), DocumentError> {
        self.validate_name(name)?;
        self.data.insert(name.to_string(), value.into());
        Ok(())
    }

    /// Appends a value, making the field multi-valued (an absent field becomes `[value]`).
    pub fn add_to_field(
        &mut self,
        name: &str,
        value: impl Into<Value>,
    ) -> Result<(), DocumentError> {
        self.validate_name(name)?;
        self.list_mut(name).push(value.into());
        Ok(())
    }

    /// Sets the field if absent, else appends.
    pub fn set_or_add(&mut self, name: &str, value: impl Into<Value>) -> Result<(), DocumentError> {
        if self.has(name) {
            self.add_to_field(name, value)
        } else {
            self.set_field(name, value)
        }
    }

    /// Lucille's `update`: OVERWRITE sets the first value and appends the rest; APPEND appends
    /// all (set-or-add, so an absent field written with one value is single-valued); SKIP leaves
    /// an existing field alone and otherwise behaves as APPEND. No values: no change.
    pub fn update<I, V>(
        &mut self,
        name: &str,
        mode: UpdateMode,
        values: I,
    ) -> Result<(), DocumentError>
    where
        I: IntoIterator<Item = V>,
        V: Into<Value>,
    {
        self.validate_name(name)?;
        let mut values = values.into_iter().peekable();
        if values.peek().is_none() {
            return Ok(());
        }
        if mode == UpdateMode::Skip && self.has(name) {
            return Ok(());
        }
        if mode == UpdateMode::Overwrite {
            if let Some(first) = values.next() {
                self.set_field(name, first)?;
            }
        }
        for v in values {
            self.set_or_add(name, v)?;
        }
        Ok(())
    }

    /// Turns the field into a list (creating an empty one if absent) and returns it.
    fn list_mut(&mut self, name: &str) -> &mut Vec<Value> {
        let slot = self
            .data
            .entry(name.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if !slot.is_array() {
            let single = std::mem::take(slot);
            *slot = Value::Array(vec![single]);
        }
        match slot {
            Value::Array(a) => a,
            _ => unreachable!("slot was just made an array"),
        }
    }

    /// Set-or-add of another document's value(s) for one field: sets it if absent here,
    /// else appends the other's values (each element of a list).
    pub fn set_or_add_from(&mut self, name: &str, other: &Document) -> Result<(), DocumentError> {
        self.validate_name(name)?;
        let Some(other_value) = other.get(name) else {
            return Ok(());
        };
        if !self.has(name) {
            self.data.insert(name.to_string(), other_value.clone());
            return Ok(());
        }
        let list = self.list_mut(name);
        match other_value {
            Value::Array(items) => list.extend(items.iter().cloned()),
            v => list.push(v.clone()),
        }
        Ok(())
    }

    /// Merges every non-reserved field of another document (set if absent, else append), as
    /// the collapsing Publisher and CollapseChildrenDocuments do.
    pub fn set_or_add_all(&mut self, other: &Document) {
        for name in other.field_names() {
            // Names from field_names() are never reserved or empty.
            let _ = self.set_or_add_from(name, other);
        }
    }

    /// Renames a field. If `new` exists: OVERWRITE replaces it, APPEND appends the old values
    /// to it, SKIP leaves it alone and drops the old field (as Lucille). Renaming an absent
    /// field does nothing and returns false.
    pub fn rename_field(
        &mut self,
        old: &str,
        new: &str,
        mode: UpdateMode,
    ) -> Result<bool, DocumentError> {
        self.validate_name(old)?;
        self.validate_name(new)?;
        if old == new {
            return Ok(self.has(old));
        }
        let Some(old_value) = self.data.shift_remove(old) else {
            return Ok(false);
        };
        if self.has(new) {
            match mode {
                UpdateMode::Skip => return Ok(true),
                UpdateMode::Append => {
                    let list = self.list_mut(new);
                    match old_value {
                        Value::Array(items) => list.extend(items),
                        v => list.push(v),
                    }
                    return Ok(true);
                }
                UpdateMode::Overwrite => {}
            }
        }
        self.data.insert(new.to_string(), old_value);
        Ok(true)
    }

    /// Removes a field, returning its value.
    pub fn remove_field(&mut self, name: &str) -> Result<Option<Value>, DocumentError> {
        self.validate_name(name)?;
        Ok(self.data.shift_remove(name))
    }

    /// Removes one value of a multi-valued field by index (index 0 of a single-valued field
    /// removes the field).
    pub fn remove_from_array(&mut self, name: &str, index: usize) -> Result<Value, DocumentError> {
        self.validate_name(name)?;
        let len = self.len_of(name);
        let id = self.id().to_string();
        let out_of_range = || DocumentError::IndexOutOfRange {
            id: id.clone(),
            field: name.to_string(),
            index,
            len,
        };
        if index >= len {
            return Err(out_of_range());
        }
        match self.data.get_mut(name) {
            Some(Value::Array(items)) => Ok(items.remove(index)),
            Some(_) => Ok(self.data.shift_remove(name).unwrap_or(Value::Null)),
            None => Err(out_of_range()),
        }
    }

    /// Removes repeated values of a multi-valued field, keeping first occurrences in order;
    /// writes the result to `target` (in place when `None` or the same field). A field that
    /// is not multi-valued is copied unchanged to a different target.
    pub fn remove_duplicate_values(
        &mut self,
        name: &str,
        target: Option<&str>,
    ) -> Result<(), DocumentError> {
        let target = target.unwrap_or(name);
        self.validate_name(target)?;
        let Some(value) = self.data.get(name) else {
            return Ok(());
        };
        let deduped = match value {
            Value::Array(items) => {
                let mut seen = std::collections::HashSet::new();
                let unique: Vec<Value> = items
                    .iter()
                    .filter(|v| seen.insert(v.to_string()))
                    .cloned()
                    .collect();
                Value::Array(unique)
            }
            v => v.clone(),
        };
        self.data.insert(target.to_string(), deduped);
        Ok(())
    }

    // ----- nested paths -----

    /// The value at a nested path such as `a.b[2].c`; `None` if any step is missing.
    pub fn get_nested(&self, path: &str) -> Result<Option<&Value>, DocumentError> {
        let path = FieldPath::parse(path)?;
        Ok(self.get_nested_path(&path))
    }

    pub fn get_nested_path(&self, path: &FieldPath) -> Option<&Value> {
        let mut segments = path.segments().iter();
        let mut node = self.data.get(path.root())?;
        segments.next();
        for segment in segments {
            node = match (segment, node) {
                (Segment::Field(name), Value::Object(map)) => map.get(name)?,
                (Segment::Index(i), Value::Array(items)) => items.get(*i)?,
                _ => return None,
            };
        }
        Some(node)
    }

    /// Sets the value at a nested path, creating intermediate objects (before a name step) and
    /// lists (before an index step). An index may address an existing element or the end of a
    /// list (appending); a step through a value of the wrong kind is an error naming the path.
    pub fn set_nested(&mut self, path: &str, value: impl Into<Value>) -> Result<(), DocumentError> {
        let path = FieldPath::parse(path)?;
        self.set_nested_path(&path, value.into())
    }

    pub fn set_nested_path(&mut self, path: &FieldPath, value: Value) -> Result<(), DocumentError> {
        self.validate_name(path.root())?;
        let segments = path.segments();
        if segments.len() == 1 {
            self.data.insert(path.root().to_string(), value);
            return Ok(());
        }
        let id = self.id().to_string();
        let conflict = |reason: String| DocumentError::PathConflict {
            id: id.clone(),
            path: path.to_string(),
            reason,
        };
        let fresh = |next: &Segment| match next {
            Segment::Index(_) => Value::Array(Vec::new()),
            Segment::Field(_) => Value::Object(Map::new()),
        };
        let mut node = self
            .data
            .entry(path.root().to_string())
            .or_insert_with(|| fresh(&segments[1]));
        for (i, segment) in segments.iter().enumerate().skip(1) {
            let last = i + 1 == segments.len();
            let next_fresh = || {
                if last {
                    Value::Null
                } else {
                    fresh(&segments[i + 1])
                }
            };
            node = match (segment, node) {
                (Segment::Field(name), Value::Object(map)) => {
                    map.entry(name.clone()).or_insert_with(next_fresh)
                }
                (Segment::Index(index), Value::Array(items)) => {
                    if *index == items.len() {
                        items.push(next_fresh());
                    } else if *index > items.len() {
                        return Err(conflict(format!(
                            "index {index} is past the end of a list of length {}",
                            items.len()
                        )));
                    }
                    &mut items[*index]
                }
                (Segment::Field(name), other) => {
                    return Err(conflict(format!(
                        "cannot step into {} with field name {name:?}",
                        convert::type_name(other)
                    )))
                }
                (Segment::Index(index), other) => {
                    return Err(conflict(format!(
                        "cannot index {} with [{index}]",
                        convert::type_name(other)
                    )))
                }
            };
        }
        *node = value;
        Ok(())
    }

    /// Removes the value at a nested path and returns it (`None` if nothing was there).
    pub fn remove_nested(&mut self, path: &str) -> Result<Option<Value>, DocumentError> {
        let path = FieldPath::parse(path)?;
        self.validate_name(path.root())?;
        let segments = path.segments();
        if segments.len() == 1 {
            return Ok(self.data.shift_remove(path.root()));
        }
        let Some(mut node) = self.data.get_mut(path.root()) else {
            return Ok(None);
        };
        for segment in &segments[1..segments.len() - 1] {
            node = match (segment, node) {
                (Segment::Field(name), Value::Object(map)) => match map.get_mut(name) {
                    Some(n) => n,
                    None => return Ok(None),
                },
                (Segment::Index(i), Value::Array(items)) => match items.get_mut(*i) {
                    Some(n) => n,
                    None => return Ok(None),
                },
                _ => return Ok(None),
            };
        }
        let removed = match (&segments[segments.len() - 1], node) {
            (Segment::Field(name), Value::Object(map)) => map.shift_remove(name),
            (Segment::Index(i), Value::Array(items)) if *i < items.len() => Some(items.remove(*i)),
            _ => None,
        };
        Ok(removed)
    }

    // ----- children and flags -----

    /// Attaches a child document (stored inside this one, as Lucille's `___children`).
    pub fn add_child(&mut self, child: Document) {
        let slot = self
            .data
            .entry(CHILDREN_FIELD.to_string())
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = slot {
            items.push(Value::Object(child.data.into_iter().collect()));
        } else {
            *slot = Value::Array(vec![Value::Object(child.data.into_iter().collect())]);
        }
    }

    /// Copies of the attached children, in the order they were added.
    pub fn children(&self) -> Vec<Document> {
        match self.data.get(CHILDREN_FIELD) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|c| match c {
                    Value::Object(m) => Document::from_map(m.clone()).ok(),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    pub fn has_children(&self) -> bool {
        matches!(self.data.get(CHILDREN_FIELD), Some(Value::Array(items)) if !items.is_empty())
    }

    /// Detaches and returns the children.
    pub fn take_children(&mut self) -> Vec<Document> {
        let children = self.children();
        self.data.shift_remove(CHILDREN_FIELD);
        children
    }

    pub fn is_dropped(&self) -> bool {
        self.data.contains_key(DROP_FIELD)
    }

    pub fn set_dropped(&mut self, dropped: bool) {
        set_flag(&mut self.data, DROP_FIELD, dropped);
    }

    pub fn is_skipped(&self) -> bool {
        self.data.contains_key(SKIP_FIELD)
    }

    pub fn set_skipped(&mut self, skipped: bool) {
        set_flag(&mut self.data, SKIP_FIELD, skipped);
    }

    // ----- vectors and bytes -----

    /// Stores an embedding as a list of numbers (each in its shortest f32 form).
    pub fn set_vector(&mut self, name: &str, vector: &[f32]) -> Result<(), DocumentError> {
        self.validate_name(name)?;
        let values = vector
            .iter()
            .map(|f| {
                f32_to_value(*f).ok_or_else(|| DocumentError::UnrepresentableValue {
                    id: self.id().to_string(),
                    field: name.to_string(),
                    reason: format!("{f} is not a finite number"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.data.insert(name.to_string(), Value::Array(values));
        Ok(())
    }

    /// Reads every value of a field as f32 (a single number is a vector of one).
    pub fn get_vector(&self, name: &str) -> Result<Option<Vec<f32>>, DocumentError> {
        if !self.has(name) {
            return Ok(None);
        }
        self.values(name)
            .iter()
            .map(|v| match v {
                Value::Number(_) => self.convert::<f32>(name, v),
                other => Err(DocumentError::TypeMismatch {
                    id: self.id().to_string(),
                    field: name.to_string(),
                    expected: "a list of numbers",
                    found: convert::type_name(other),
                }),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// Stores bytes as a base64 string, as Lucille stores `byte[]`.
    pub fn set_bytes(&mut self, name: &str, bytes: &[u8]) -> Result<(), DocumentError> {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
        self.set_field(name, encoded)
    }

    /// Decodes the first value of a field from base64.
    pub fn get_bytes(&self, name: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        use base64::Engine;
        match self.get_first(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => base64::engine::general_purpose::STANDARD
                .decode(s)
                .map(Some)
                .map_err(|_| DocumentError::Unconvertible {
                    id: self.id().to_string(),
                    field: name.to_string(),
                    expected: "base64 bytes",
                    value: truncate_for_message(&Value::String(s.clone())),
                }),
            Some(other) => Err(DocumentError::TypeMismatch {
                id: self.id().to_string(),
                field: name.to_string(),
                expected: "base64 bytes",
                found: convert::type_name(other),
            }),
        }
    }

    // ----- JSONata -----

    /// Evaluates a JSONata expression over the document's JSON (reserved fields included, as
    /// Lucille does). `None` when the result is undefined.
    pub fn evaluate(&self, expr: &mut Expression) -> Result<Option<Value>, DocumentError> {
        // The evaluator takes a Value; the map is cloned into one (jsonata-rs converts the
        // input into its own arena anyway, so this is not the dominant cost).
        let input = Value::Object(
            self.data
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        expr.evaluate(&input)
            .map_err(|e| DocumentError::Jsonata(format!("document {:?}: {e}", self.id())))
    }

    /// Replaces the non-reserved fields with the object a JSONata expression returns. Fields
    /// that survive keep their position; new fields follow in the result's order. Reserved
    /// fields (id, run_id, children, flags) are kept; a result that sets one of them to a
    /// different value, or a result that is not an object, is an error and leaves the
    /// document unchanged.
    pub fn transform(&mut self, expr: &mut Expression) -> Result<(), DocumentError> {
        let result = self.evaluate(expr)?;
        let id = self.id().to_string();
        let fail = |reason: String| DocumentError::Transform {
            id: id.clone(),
            reason,
        };
        let result = match result {
            Some(Value::Object(map)) => map,
            None => return Err(fail("the expression returned nothing (undefined)".into())),
            Some(other) => {
                return Err(fail(format!(
                    "the expression must return an object, returned {}",
                    convert::type_name(&other)
                )))
            }
        };
        self.replace_fields(result)
    }

    /// Replaces the non-reserved fields with those of `result` (fields that stay keep their
    /// places, new ones follow); reserved fields are kept, and `result` may repeat them but
    /// not change them. Used by `transform` and the ApplyJavascript stage.
    pub fn replace_fields(&mut self, mut result: Map<String, Value>) -> Result<(), DocumentError> {
        let id = self.id().to_string();
        for reserved in RESERVED_FIELDS {
            if let Some(v) = result.get(reserved) {
                if self.data.get(reserved) != Some(v) {
                    return Err(DocumentError::Transform {
                        id,
                        reason: format!("the result changes the reserved field {reserved:?}"),
                    });
                }
            }
        }
        let mut out = fields_with_capacity(self.data.len().max(result.len()));
        for (k, v) in &self.data {
            if is_reserved(k) {
                out.insert(k.clone(), v.clone());
            } else if let Some(new) = result.shift_remove(k) {
                out.insert(k.clone(), new);
            }
        }
        for (k, v) in result {
            if !is_reserved(&k) {
                out.insert(k, v);
            }
        }
        self.data = out;
        Ok(())
    }

    /// The length in bytes of the document's JSON (Lucille's `getByteSize`), counted without
    /// building the text.
    pub fn byte_size(&self) -> u64 {
        struct Count(u64);
        impl std::io::Write for Count {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0 += buf.len() as u64;
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut count = Count(0);
        // Writing to a counter cannot fail; a map of JSON values always serializes.
        let _ = serde_json::to_writer(&mut count, &self.data);
        count.0
    }
}

fn set_flag(data: &mut Fields, name: &str, on: bool) {
    if on {
        data.insert(name.to_string(), Value::Bool(true));
    } else {
        data.shift_remove(name);
    }
}

fn truncate_for_message(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        let cut: String = text.chars().take(77).collect();
        format!("{cut}...")
    } else {
        text
    }
}

impl std::fmt::Display for Document {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_json())
    }
}

#[cfg(test)]
mod tests;
