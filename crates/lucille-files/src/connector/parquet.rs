//! ParquetConnector (Lucille's `com.kmwllc.lucille.parquet.connector.ParquetConnector`):
//! publishes one document per row of each `.parquet` file under `pathToStorage` (a file, or a
//! folder walked recursively in name order), its id from the `idField` column (with
//! `docIdPrefix`).
//!
//! Keys as Lucille's: `pathToStorage`, `idField`, `fsUri`, `limit` (rows published in all,
//! across files, FAILed rows included; absent or negative: no limit), `start` (rows skipped at the beginning of each file;
//! whole row groups are skipped without being read), `s3Key` / `s3Secret`.
//!
//! Where the files are: `fsUri` `file:///` (or absent) reads local files; `s3://` or `s3a://`
//! reads an S3 bucket (through the FileConnector's object storage: `object_store`, listing
//! paged, each file spooled to an unlinked temporary file, as Parquet readers seek). With
//! `fsUri: "s3://"` the first segment of `pathToStorage` is the bucket (`bucket/folder`), with
//! `fsUri: "s3://bucket"` all of it is the key prefix; `pathToStorage` may also be a whole
//! `s3://bucket/prefix` URL. `s3Key` / `s3Secret` are the access key (both or neither; without
//! them the AWS environment and credential chain are used); region and endpoint come from the
//! AWS environment (`AWS_REGION`, `AWS_ENDPOINT_URL`, as the AWS SDKs read them). Other file
//! systems (`hdfs://`, ...) are a config error; S3 keys with local files are a warning (Lucille
//! ignores them there). As Lucille: files not named `*.parquet` are passed over, the id column must be in
//! the file's schema, the id column is not kept as a field, nulls are left out.
//!
//! Values (the parquet crate's row API, no Arrow): integers and floats as numbers, DECIMAL as in
//! the DatabaseConnector (a number up to 15 significant digits, else its exact text), strings,
//! binary as base64, DATE `2024-01-31`, TIME `10:00:00.250`, TIMESTAMP ISO-8601 (`...Z` when the
//! column is adjusted to UTC, as pyarrow writes zoned timestamps; milli, micro and nanosecond
//! units, INT96 too), lists as multi-valued fields (nested lists as JSON arrays), structs as JSON
//! objects, maps as JSON objects keyed by the map key's text. Differences from Lucille: Lucille
//! keeps only primitive columns and lists of primitives and needs a string id; here every column
//! is kept and a numeric id is read as its text. A row without an id FAILs with its file and row
//! number; a file that cannot be read (corrupt, truncated, not Parquet) stops the connector with
//! its path.

use std::collections::HashMap;
use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, NaiveTime};
use parquet::basic::{ConvertedType, LogicalType, TimeUnit, Type as PhysicalType};
use parquet::errors::ParquetError;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::{Field, Row};
use serde_json::{Map, Value};

use super::{record_connector_spec, Common, Connector, ConnectorDescriptor, ConnectorError};
use crate::accounting::Publisher;
use crate::config::{ComponentConfig, ConfigErrors, Options};
use crate::database::value;
use crate::document::ids::id_text;
use crate::document::{is_reserved, Document, DocumentError};
use crate::storage::cloud_config::{parse_url, ObjectUrl, S3Options, UrlError, DEFAULT_PAGE_SIZE};
use crate::storage::object::{CloudRuntime, ObjectStorage};
use crate::storage::{Listed, Storage};

pub const DESCRIPTOR: ConnectorDescriptor = ConnectorDescriptor {
    name: "ParquetConnector",
    aliases: &["com.kmwllc.lucille.parquet.connector.ParquetConnector"],
    spec: ParquetOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Publishes one document per row of each `.parquet` file under `pathToStorage`, local or in
/// S3, its id from the `idField` column.
#[derive(Options)]
#[options(base = record_connector_spec())]
struct ParquetOptions {
    /// A .parquet file, or a folder read recursively in name order; with an s3:// fsUri, the
    /// bucket and prefix (or a whole s3://bucket/prefix URL).
    path_to_storage: String,
    /// The column whose value is the id (not kept as a field).
    id_field: String,
    /// The file system: file:/// (the default, local files), s3:// (pathToStorage starts with
    /// the bucket) or s3://bucket; s3a:// is the same.
    fs_uri: Option<String>,
    /// The S3 access key id (with s3Secret; without both, the AWS environment).
    s3_key: Option<String>,
    /// The S3 secret access key (with s3Key).
    s3_secret: Option<String>,
    /// Rows published in all, across files, FAILed rows included (absent or negative: no
    /// limit).
    limit: Option<i64>,
    /// Rows skipped at the beginning of each file.
    #[option(default = 0, min = 0)]
    start: i64,
}

/// Where the Parquet files are.
enum Source {
    Local(PathBuf),
    /// An S3 bucket and key prefix.
    S3 {
        storage: ObjectStorage,
        prefix: String,
    },
}

struct ParquetConnector {
    common: Common,
    source: Source,
    id_field: String,
    limit: Option<u64>,
    start: u64,
}

fn build(config: &ComponentConfig, common: &Common) -> Result<Box<dyn Connector>, ConfigErrors> {
    Ok(Box::new(new(config, common)?))
}

/// Reads and checks the config, every problem at once.
fn new(config: &ComponentConfig, common: &Common) -> Result<ParquetConnector, ConfigErrors> {
    let o = ParquetOptions::from_config(config)?;
    let mut problems = Vec::new();
    let raw = o.path_to_storage;
    let fs_uri = o.fs_uri;
    let key = o.s3_key;
    let secret = o.s3_secret;
    if key.is_some() != secret.is_some() {
        let missing = if key.is_some() { "s3Secret" } else { "s3Key" };
        problems.push(config.error(
            missing,
            "s3Key and s3Secret go together: give both, or neither to use the AWS environment",
        ));
    }
    let s3_scheme = |u: &str| {
        let l = u.to_ascii_lowercase();
        l.starts_with("s3://") || l.starts_with("s3a://")
    };
    let uri = fs_uri.as_deref().unwrap_or("file:///");
    let lower = uri.to_ascii_lowercase();
    let mut source = None;
    if s3_scheme(uri) || (fs_uri.is_none() && s3_scheme(&raw)) {
        match s3_url(uri, &raw) {
            Ok(url) => {
                let options = S3Options {
                    access_key_id: key.clone(),
                    secret_access_key: secret.clone(),
                    region: None,
                    endpoint: None,
                    page_size: DEFAULT_PAGE_SIZE,
                };
                let runtime = Arc::new(CloudRuntime::default());
                match ObjectStorage::s3(&url, &options, runtime) {
                    Ok(storage) => {
                        source = Some(Source::S3 {
                            storage,
                            prefix: url.prefix.clone(),
                        })
                    }
                    Err(e) => problems.push(config.error("fsUri", format!("S3: {e}"))),
                }
            }
            Err(e) => problems.push(config.error("pathToStorage", e.to_string())),
        }
    } else if lower == "file:" || lower.starts_with("file:/") {
        if s3_scheme(&raw) {
            problems.push(config.error(
                "pathToStorage",
                format!("{raw:?} is an S3 URL but fsUri is {uri:?}: set fsUri to \"s3://\""),
            ));
        }
        let path_text = raw.strip_prefix("file://").unwrap_or(&raw);
        if path_text.trim().is_empty() {
            problems.push(config.error("pathToStorage", "must not be empty"));
        }
        if key.is_some() {
            tracing::warn!(
                "{}: s3Key / s3Secret are used only with an s3:// fsUri; fsUri is {uri:?}",
                config.path()
            );
        }
        source = Some(Source::Local(config.resolve_path(path_text)));
    } else {
        problems.push(config.error(
            "fsUri",
            format!(
                "{uri:?}: the file systems read are local files (\"file:///\") and S3 \
                 (\"s3://\" or \"s3://bucket\")"
            ),
        ));
    }
    if o.id_field.trim().is_empty() {
        problems.push(config.error("idField", "must not be empty"));
    }
    let Some(source) = source.filter(|_| problems.is_empty()) else {
        if problems.is_empty() {
            problems.push(config.error("pathToStorage", "names no source"));
        }
        return Err(problems.into());
    };
    Ok(ParquetConnector {
        common: common.clone(),
        source,
        id_field: o.id_field,
        limit: o.limit.and_then(|n| u64::try_from(n).ok()),
        // Not negative: checked by its `min`.
        start: o.start.unsigned_abs(),
    })
}

/// Why `fsUri` and `pathToStorage` name no S3 bucket ([`s3_url`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum S3UrlError {
    /// The joined URL is a local path, not a URL.
    #[error("{url:?} is not an S3 URL")]
    NotS3 { url: String },
    #[error("{0} (with fsUri \"s3://\", pathToStorage starts with the bucket: \"bucket/folder\")")]
    Invalid(#[source] UrlError),
}

/// The bucket and prefix of an S3 source: `fsUri` `s3://` with `pathToStorage`
/// `bucket/prefix`, `fsUri` `s3://bucket[/base]` with `pathToStorage` a prefix under it, or
/// `pathToStorage` a whole `s3://bucket/prefix` URL.
fn s3_url(fs_uri: &str, path: &str) -> Result<ObjectUrl, S3UrlError> {
    let lower = path.to_ascii_lowercase();
    let text = if lower.starts_with("s3://") || lower.starts_with("s3a://") {
        path.to_string()
    } else {
        let (scheme, rest) = fs_uri.split_once("://").unwrap_or(("s3", ""));
        let base = rest.trim_matches('/');
        let tail = path.trim_start_matches('/');
        if base.is_empty() {
            format!("{scheme}://{tail}")
        } else {
            format!("{scheme}://{base}/{tail}")
        }
    };
    // `s3a://` is Hadoop's name for the same store.
    let text = match text.get(..6) {
        Some(head) if head.eq_ignore_ascii_case("s3a://") => format!("s3://{}", &text[6..]),
        _ => text,
    };
    match parse_url(&text) {
        Ok(Some(url)) => Ok(url),
        Ok(None) => Err(S3UrlError::NotS3 { url: text }),
        Err(e) => Err(S3UrlError::Invalid(e)),
    }
}

/// A Parquet file to read, in name order: a local path, or an object of the bucket.
enum Found<'a> {
    Local(PathBuf),
    Object(&'a ObjectStorage, Listed),
}

impl Found<'_> {
    /// As shown in messages and ids: the path, or the object's URL.
    fn name(&self) -> String {
        match self {
            Found::Local(p) => p.display().to_string(),
            Found::Object(_, l) => l.path.clone(),
        }
    }

    /// The file, an object spooled to a temporary file (the reader seeks).
    fn open(&self) -> std::io::Result<File> {
        match self {
            Found::Local(p) => File::open(p),
            Found::Object(storage, l) => storage.open_seekable(l),
        }
    }
}

/// A row that cannot become a document, or a document.
enum Out {
    Doc(Document),
    Failed { id: String, reason: String },
}

/// Why the local files to read cannot be listed ([`files`]).
#[derive(Debug, thiserror::Error)]
enum ListError {
    #[error("{}: {source}", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An entry under the root (the message names its path).
    #[error(transparent)]
    Walk(#[from] walkdir::Error),
}

/// The `.parquet` files to read, in name order.
fn files(root: &Path) -> Result<Vec<PathBuf>, ListError> {
    let meta = std::fs::metadata(root).map_err(|source| ListError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    let is_parquet = |p: &Path| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with("parquet"))
    };
    if meta.is_file() {
        return Ok(if is_parquet(root) {
            vec![root.to_path_buf()]
        } else {
            tracing::info!(
                "ParquetConnector: {} is not named *.parquet and is skipped",
                root.display()
            );
            Vec::new()
        });
    }
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
        let entry = entry?;
        if entry.file_type().is_file() && is_parquet(entry.path()) {
            out.push(entry.into_path());
        }
    }
    Ok(out)
}

/// How a leaf column's values are read beyond what the row API knows.
#[derive(Debug, Clone, Copy)]
enum Leaf {
    /// A timestamp: adjusted to UTC (`...Z`), or local (no zone).
    Timestamp {
        utc: bool,
        nanos: bool,
    },
    TimeNanos,
}

/// Schema names that wrap list and map members, left out of a leaf's path.
const WRAPPERS: &[&str] = &["list", "element", "item", "array", "bag", "key_value"];

fn leaf_key(parts: &[String]) -> String {
    parts
        .iter()
        .filter(|p| !WRAPPERS.contains(&p.as_str()))
        .cloned()
        .collect::<Vec<_>>()
        .join(".")
}

/// A column of a type the row API does not read ([`leaves`]).
#[derive(Debug, thiserror::Error)]
#[error("column {column:?} has the type {physical} {converted}, which is not supported")]
struct UnsupportedColumn {
    column: String,
    physical: PhysicalType,
    converted: ConvertedType,
}

/// Leaf columns that need the schema to be read right, and a check that every column has a
/// type the row API reads (it would otherwise panic on, e.g., INTERVAL).
fn leaves(reader: &SerializedFileReader<File>) -> Result<HashMap<String, Leaf>, UnsupportedColumn> {
    let mut out = HashMap::new();
    for col in reader.metadata().file_metadata().schema_descr().columns() {
        let name = col.path().string();
        let key = leaf_key(col.path().parts());
        match col.logical_type_ref() {
            Some(LogicalType::Timestamp(t)) => {
                out.insert(
                    key,
                    Leaf::Timestamp {
                        utc: t.is_adjusted_to_u_t_c,
                        nanos: matches!(t.unit, TimeUnit::NANOS),
                    },
                );
                continue;
            }
            Some(LogicalType::Time(t)) if matches!(t.unit, TimeUnit::NANOS) => {
                out.insert(key, Leaf::TimeNanos);
                continue;
            }
            _ => {}
        }
        use ConvertedType as C;
        let converted = col.converted_type();
        let ok = match col.physical_type() {
            PhysicalType::BOOLEAN
            | PhysicalType::INT96
            | PhysicalType::FLOAT
            | PhysicalType::DOUBLE => true,
            PhysicalType::INT32 => matches!(
                converted,
                C::NONE
                    | C::INT_8
                    | C::INT_16
                    | C::INT_32
                    | C::UINT_8
                    | C::UINT_16
                    | C::UINT_32
                    | C::DATE
                    | C::TIME_MILLIS
                    | C::DECIMAL
            ),
            PhysicalType::INT64 => matches!(
                converted,
                C::NONE
                    | C::INT_64
                    | C::UINT_64
                    | C::TIME_MICROS
                    | C::TIMESTAMP_MILLIS
                    | C::TIMESTAMP_MICROS
                    | C::DECIMAL
            ),
            PhysicalType::BYTE_ARRAY => matches!(
                converted,
                C::NONE | C::UTF8 | C::ENUM | C::JSON | C::BSON | C::DECIMAL
            ),
            PhysicalType::FIXED_LEN_BYTE_ARRAY => matches!(converted, C::NONE | C::DECIMAL),
        };
        if !ok {
            return Err(UnsupportedColumn {
                column: name,
                physical: col.physical_type(),
                converted,
            });
        }
        if matches!(converted, C::TIMESTAMP_MILLIS | C::TIMESTAMP_MICROS) {
            out.insert(
                key,
                Leaf::Timestamp {
                    utc: true,
                    nanos: false,
                },
            );
        }
    }
    Ok(out)
}

/// A value the row API read that has no JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum ValueError {
    #[error("a decimal wider than 128 bits")]
    WideDecimal,
    #[error("a timestamp out of range")]
    Timestamp,
    #[error("a time out of range")]
    Time,
    #[error("a date out of range")]
    Date,
    /// The column (its leaf key) whose value it is.
    #[error("column {column:?}: {source}")]
    Column {
        column: String,
        #[source]
        source: Box<ValueError>,
    },
}

/// A decimal's big-endian two's-complement bytes and scale as decimal text.
fn decimal_text(bytes: &[u8], scale: i32) -> Result<String, ValueError> {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    // Sign-extension bytes past 16 carry no value.
    let extra = bytes.len().saturating_sub(16);
    let fill = if negative { 0xFF } else { 0 };
    if bytes[..extra].iter().any(|b| *b != fill) {
        return Err(ValueError::WideDecimal);
    }
    let mut n: i128 = if negative { -1 } else { 0 };
    for b in &bytes[extra..] {
        n = (n << 8) | i128::from(*b);
    }
    let digits = n.unsigned_abs().to_string();
    let sign = if n < 0 { "-" } else { "" };
    let scale = usize::try_from(scale).unwrap_or(0);
    if scale == 0 {
        return Ok(format!("{sign}{digits}"));
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (int, frac) = padded.split_at(padded.len() - scale);
    Ok(format!("{sign}{int}.{frac}"))
}

fn timestamp(nanos: i128, utc: bool) -> Result<Value, ValueError> {
    let secs = i64::try_from(nanos.div_euclid(1_000_000_000)).map_err(|_| ValueError::Timestamp)?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    let dt = DateTime::from_timestamp(secs, sub).ok_or(ValueError::Timestamp)?;
    let text = dt.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string();
    Ok(Value::String(if utc { format!("{text}Z") } else { text }))
}

fn time_of_day(nanos: i64) -> Result<Value, ValueError> {
    let secs = u32::try_from(nanos.div_euclid(1_000_000_000)).map_err(|_| ValueError::Time)?;
    let sub = u32::try_from(nanos.rem_euclid(1_000_000_000)).unwrap_or(0);
    let t = NaiveTime::from_num_seconds_from_midnight_opt(secs, sub).ok_or(ValueError::Time)?;
    Ok(Value::String(t.format("%H:%M:%S%.f").to_string()))
}

/// One value as JSON; `path` is the leaf key of the column (struct members joined by dots).
fn convert(field: &Field, path: &str, leaves: &HashMap<String, Leaf>) -> Result<Value, ValueError> {
    let leaf = leaves.get(path).copied();
    Ok(match field {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => match leaf {
            Some(Leaf::Timestamp { utc, nanos: true }) => timestamp(i128::from(*n), utc)?,
            Some(Leaf::TimeNanos) => time_of_day(*n)?,
            _ => Value::from(*n),
        },
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float16(f) => value::float32(f.to_f32()),
        Field::Float(f) => value::float32(*f),
        Field::Double(f) => value::float(*f),
        Field::Decimal(d) => value::decimal(&decimal_text(d.data(), d.scale())?),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => value::bytes(b.data()),
        Field::Date(days) => {
            let d = NaiveDate::from_ymd_opt(1970, 1, 1)
                .and_then(|epoch| {
                    epoch.checked_add_signed(chrono::Duration::days(i64::from(*days)))
                })
                .ok_or(ValueError::Date)?;
            Value::String(d.format("%Y-%m-%d").to_string())
        }
        Field::TimeMillis(ms) => time_of_day(i64::from(*ms) * 1_000_000)?,
        Field::TimeMicros(us) => time_of_day(us.saturating_mul(1000))?,
        Field::TimestampMillis(ms) => timestamp(
            i128::from(*ms) * 1_000_000,
            // INT96 and legacy columns: UTC.
            !matches!(leaf, Some(Leaf::Timestamp { utc: false, .. })),
        )?,
        Field::TimestampMicros(us) => timestamp(
            i128::from(*us) * 1000,
            !matches!(leaf, Some(Leaf::Timestamp { utc: false, .. })),
        )?,
        Field::Group(row) => Value::Object(object(row, path, leaves)?),
        Field::ListInternal(list) => Value::Array(
            list.elements()
                .iter()
                .map(|f| convert(f, path, leaves))
                .collect::<Result<_, _>>()?,
        ),
        Field::MapInternal(map) => {
            let mut out = Map::new();
            let (kp, vp) = (format!("{path}.key"), format!("{path}.value"));
            for (k, v) in map.entries() {
                let key = match convert(k, &kp, leaves)? {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                out.insert(key, convert(v, &vp, leaves)?);
            }
            out
        }
        .into(),
    })
}

fn object(
    row: &Row,
    path: &str,
    leaves: &HashMap<String, Leaf>,
) -> Result<Map<String, Value>, ValueError> {
    let mut out = Map::new();
    for (name, field) in row.get_column_iter() {
        let p = if path.is_empty() {
            name.clone()
        } else {
            format!("{path}.{name}")
        };
        out.insert(
            name.clone(),
            convert(field, &p, leaves).map_err(|e| ValueError::Column {
                column: p.clone(),
                source: Box::new(e),
            })?,
        );
    }
    Ok(out)
}

impl ParquetConnector {
    /// Reads every file, handing each row to `emit`; the number of documents published.
    fn read(
        &self,
        emit: &mut dyn FnMut(Out) -> Result<(), ConnectorError>,
    ) -> Result<u64, ConnectorError> {
        let err = |m: String| {
            ConnectorError::new(format!("ParquetConnector {:?}: {m}", self.common.name))
        };
        let mut count = 0u64;
        let found: Vec<Found<'_>> = match &self.source {
            Source::Local(root) => files(root)
                .map_err(|e| err(e.to_string()))?
                .into_iter()
                .map(Found::Local)
                .collect(),
            Source::S3 { storage, prefix } => {
                let mut listed = storage.list(prefix).map_err(|e| err(e.to_string()))?;
                // As Lucille: only names ending in "parquet".
                listed.retain(|l| l.locator.ends_with("parquet"));
                listed.sort_by(|a, b| a.locator.cmp(&b.locator));
                listed
                    .into_iter()
                    .map(|l| Found::Object(storage, l))
                    .collect()
            }
        };
        for found in found {
            if self.limit.is_some_and(|l| count >= l) {
                break;
            }
            let name = found.name();
            let file = found
                .open()
                .map_err(|e| err(format!("cannot read {name}: {e}")))?;
            // The parquet crate panics on a few malformed inputs: a panic is this file's error.
            let r = catch_unwind(AssertUnwindSafe(|| {
                self.read_file(file, &name, &mut count, emit)
            }));
            match r {
                Ok(Ok(())) => {}
                Ok(Err(FileError::Publish(e))) => return Err(e),
                Ok(Err(e)) => return Err(err(format!("cannot read {name}: {e}"))),
                Err(panic) => {
                    let m = lucille_panic::message(panic.as_ref());
                    return Err(err(format!("cannot read {name}: {m}")));
                }
            }
        }
        Ok(count)
    }

    fn read_file(
        &self,
        file: File,
        path: &str,
        count: &mut u64,
        emit: &mut dyn FnMut(Out) -> Result<(), ConnectorError>,
    ) -> Result<(), FileError> {
        let reader = SerializedFileReader::new(file)?;
        let leaves = leaves(&reader)?;
        let schema = reader.metadata().file_metadata().schema_descr();
        let top: Vec<String> = schema
            .root_schema()
            .get_fields()
            .iter()
            .map(|f| f.name().to_string())
            .collect();
        if !top.contains(&self.id_field) {
            return Err(FileError::NoIdField {
                id_field: self.id_field.clone(),
                columns: top,
            });
        }
        if let Some(bad) = top.iter().find(|n| **n != self.id_field && is_reserved(n)) {
            return Err(FileError::Reserved(bad.clone()));
        }
        let mut skip = self.start;
        let mut row_number = 0u64;
        for g in 0..reader.num_row_groups() {
            let rows_in_group =
                u64::try_from(reader.metadata().row_group(g).num_rows()).unwrap_or(0);
            if skip >= rows_in_group {
                // Whole row groups before `start` are never decoded.
                skip -= rows_in_group;
                row_number += rows_in_group;
                continue;
            }
            let group = reader
                .get_row_group(g)
                .map_err(|source| FileError::RowGroup { group: g, source })?;
            let rows = group
                .get_row_iter(None)
                .map_err(|source| FileError::RowGroup { group: g, source })?;
            for row in rows {
                row_number += 1;
                let row = row.map_err(|source| FileError::Row {
                    row: row_number,
                    source,
                })?;
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                if self.limit.is_some_and(|l| *count >= l) {
                    return Ok(());
                }
                let out = self.document(&row, path, row_number, &leaves)?;
                emit(out).map_err(FileError::Publish)?;
                *count += 1;
            }
        }
        Ok(())
    }

    fn document(
        &self,
        row: &Row,
        path: &str,
        row_number: u64,
        leaves: &HashMap<String, Leaf>,
    ) -> Result<Out, FileError> {
        let fields = object(row, "", leaves).map_err(|source| FileError::Value {
            row: row_number,
            source,
        })?;
        let where_ = || format!("{path} row {row_number}");
        let Some(id) = fields.get(&self.id_field).and_then(id_text) else {
            let id = self.common.doc_id(&format!("{path}:row-{row_number}"));
            return Ok(Out::Failed {
                id,
                reason: format!("{}: idField {:?} has no usable id", where_(), self.id_field),
            });
        };
        let mut doc =
            Document::new(self.common.doc_id(&id)).map_err(|source| FileError::Document {
                row: row_number,
                source,
            })?;
        for (name, v) in fields {
            if name == self.id_field || v.is_null() {
                continue;
            }
            // A list is a multi-valued field; an empty one is left out, as a null.
            if matches!(&v, Value::Array(a) if a.is_empty()) {
                continue;
            }
            doc.set_field(&name, v).map_err(|source| FileError::Field {
                row: row_number,
                column: name.clone(),
                source,
            })?;
        }
        if let Some(size) = self.common.oversize(&doc) {
            return Ok(Out::Failed {
                id: doc.id().to_string(),
                reason: format!(
                    "{}: the record is larger than maxDocumentBytes ({}): {size} bytes as JSON",
                    where_(),
                    self.common.max_document_bytes.unwrap_or_default()
                ),
            });
        }
        Ok(Out::Doc(doc))
    }
}

/// Why a file stops being read: it cannot be read (the connector stops with its path and
/// this message), or a document cannot be published.
#[derive(Debug, thiserror::Error)]
enum FileError {
    /// Not a Parquet file, or its footer cannot be read.
    #[error(transparent)]
    Parquet(#[from] ParquetError),
    #[error(transparent)]
    Unsupported(#[from] UnsupportedColumn),
    #[error("the schema has no idField {id_field:?} (columns: {})", .columns.join(", "))]
    NoIdField {
        id_field: String,
        columns: Vec<String>,
    },
    #[error("column {0:?} is a reserved field name")]
    Reserved(String),
    #[error("row group {group}: {source}")]
    RowGroup {
        group: usize,
        #[source]
        source: ParquetError,
    },
    #[error("row {row}: {source}")]
    Row {
        row: u64,
        #[source]
        source: ParquetError,
    },
    #[error("row {row}: {source}")]
    Value {
        row: u64,
        #[source]
        source: ValueError,
    },
    #[error("row {row}: {source}")]
    Document {
        row: u64,
        #[source]
        source: DocumentError,
    },
    #[error("row {row}, column {column:?}: {source}")]
    Field {
        row: u64,
        column: String,
        #[source]
        source: DocumentError,
    },
    /// The run is stopping: the connector ends with this error as it is.
    #[error(transparent)]
    Publish(ConnectorError),
}

impl Connector for ParquetConnector {
    fn execute(&mut self, publisher: &Arc<Publisher>) -> Result<(), ConnectorError> {
        let count = self.read(&mut |out| {
            match out {
                Out::Doc(doc) => publisher.publish(doc),
                Out::Failed { id, reason } => {
                    tracing::warn!(id, "{reason}");
                    publisher.publish_failed(&id, &reason)
                }
            }
            .map_err(ConnectorError::from)
        })?;
        tracing::info!(
            "ParquetConnector {:?}: published {count} documents",
            self.common.name
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use parquet::data_type::{ByteArray, ByteArrayType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use serde_json::json;

    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "lucille-parquet-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// One row of the test file: id, n, price (cents), ts (micros, UTC), tags.
    type TestRow<'a> = (Option<&'a str>, Option<i64>, i32, i64, &'a [&'a str]);

    /// Writes `groups` as one row group each (written at test time with the parquet crate's
    /// column writers; pyarrow's files are read in tests/python/test_parquet_connector.py).
    fn write(path: &Path, groups: &[&[TestRow<'_>]]) {
        let schema = Arc::new(
            parse_message_type(
                "message t {
                   optional binary id (UTF8);
                   optional int64 n;
                   required int32 price (DECIMAL(9,2));
                   required int64 ts (TIMESTAMP(MICROS,true));
                   optional group tags (LIST) { repeated group list { optional binary element (UTF8); } }
                 }",
            )
            .unwrap(),
        );
        let file = File::create(path).unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let mut w = SerializedFileWriter::new(file, schema, props).unwrap();
        for rows in groups {
            let mut g = w.next_row_group().unwrap();
            // id
            let mut c = g.next_column().unwrap().unwrap();
            let ids: Vec<ByteArray> = rows
                .iter()
                .filter_map(|r| r.0)
                .map(ByteArray::from)
                .collect();
            let defs: Vec<i16> = rows.iter().map(|r| i16::from(r.0.is_some())).collect();
            c.typed::<ByteArrayType>()
                .write_batch(&ids, Some(&defs), None)
                .unwrap();
            c.close().unwrap();
            // n
            let mut c = g.next_column().unwrap().unwrap();
            let ns: Vec<i64> = rows.iter().filter_map(|r| r.1).collect();
            let defs: Vec<i16> = rows.iter().map(|r| i16::from(r.1.is_some())).collect();
            c.typed::<Int64Type>()
                .write_batch(&ns, Some(&defs), None)
                .unwrap();
            c.close().unwrap();
            // price
            let mut c = g.next_column().unwrap().unwrap();
            let ps: Vec<i32> = rows.iter().map(|r| r.2).collect();
            c.typed::<Int32Type>().write_batch(&ps, None, None).unwrap();
            c.close().unwrap();
            // ts
            let mut c = g.next_column().unwrap().unwrap();
            let ts: Vec<i64> = rows.iter().map(|r| r.3).collect();
            c.typed::<Int64Type>().write_batch(&ts, None, None).unwrap();
            c.close().unwrap();
            // tags: def 3 = element present, 1 = empty list; rep 0 starts a row
            let mut c = g.next_column().unwrap().unwrap();
            let (mut vals, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
            for r in rows.iter() {
                if r.4.is_empty() {
                    defs.push(1);
                    reps.push(0);
                }
                for (i, t) in r.4.iter().enumerate() {
                    vals.push(ByteArray::from(*t));
                    defs.push(3);
                    reps.push(i16::from(i > 0));
                }
            }
            c.typed::<ByteArrayType>()
                .write_batch(&vals, Some(&defs), Some(&reps))
                .unwrap();
            c.close().unwrap();
            g.close().unwrap();
        }
        w.close().unwrap();
    }

    fn connector(config: Value) -> Result<ParquetConnector, ConfigErrors> {
        let mut map = match config {
            Value::Object(m) => m,
            _ => panic!("not an object"),
        };
        map.entry("name").or_insert(json!("pq"));
        map.entry("class").or_insert(json!("ParquetConnector"));
        let common = Common {
            name: "pq".into(),
            doc_id_prefix: map
                .get("docIdPrefix")
                .and_then(Value::as_str)
                .map(str::to_string),
            ..Default::default()
        };
        let config = ComponentConfig::new(map, "connectors[0]");
        new(&config, &common)
    }

    /// Documents, and failed rows as (id, reason).
    type Read = (Vec<Value>, Vec<(String, String)>);

    fn read(c: &ParquetConnector) -> Result<Read, ConnectorError> {
        let (mut docs, mut failed) = (Vec::new(), Vec::new());
        c.read(&mut |o| {
            match o {
                Out::Doc(d) => docs.push(d.into_value()),
                Out::Failed { id, reason } => failed.push((id, reason)),
            }
            Ok(())
        })?;
        Ok((docs, failed))
    }

    const TS: i64 = 1_709_210_096_123_456; // 2024-02-29T12:34:56.123456Z

    fn sample(dir: &Path) -> PathBuf {
        let p = dir.join("a.parquet");
        write(
            &p,
            &[
                &[
                    (Some("1"), Some(10), 1250, TS, &["x", "y"]),
                    (Some("2"), None, -5, TS, &[]),
                ],
                &[
                    (Some("3"), Some(30), 0, TS, &["z"]),
                    (None, Some(40), 1, TS, &[]),
                ],
                &[(Some("5"), Some(50), 99, TS, &[])],
            ],
        );
        p
    }

    #[test]
    fn rows_of_every_row_group_become_typed_documents() {
        let dir = temp_dir("rows");
        let p = sample(&dir);
        let c = connector(
            json!({"pathToStorage": p.display().to_string(), "idField": "id",
                                 "fsUri": "file:///", "docIdPrefix": "p-"}),
        )
        .unwrap();
        let (docs, failed) = read(&c).unwrap();
        assert_eq!(
            docs,
            vec![
                json!({"id": "p-1", "n": 10, "price": 12.5, "ts": "2024-02-29T12:34:56.123456Z",
                       "tags": ["x", "y"]}),
                json!({"id": "p-2", "price": -0.05, "ts": "2024-02-29T12:34:56.123456Z"}),
                json!({"id": "p-3", "n": 30, "price": 0.0, "ts": "2024-02-29T12:34:56.123456Z",
                       "tags": ["z"]}),
                json!({"id": "p-5", "n": 50, "price": 0.99, "ts": "2024-02-29T12:34:56.123456Z"}),
            ]
        );
        // The row without an id FAILs with its file and row number.
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert!(
            failed[0].1.contains("a.parquet row 4") && failed[0].1.contains("no usable id"),
            "{failed:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn start_skips_rows_of_each_file_and_limit_counts_across_files() {
        let dir = temp_dir("paging");
        sample(&dir);
        let sub = dir.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        write(
            &sub.join("b.parquet"),
            &[&[
                (Some("b1"), None, 1, TS, &[]),
                (Some("b2"), None, 1, TS, &[]),
                (Some("b3"), None, 1, TS, &[]),
            ]],
        );
        std::fs::write(dir.join("notes.txt"), "not parquet").unwrap();
        let ids = |config: Value| -> Vec<String> {
            let (docs, _) = read(&connector(config).unwrap()).unwrap();
            docs.iter()
                .map(|d| d["id"].as_str().unwrap().to_string())
                .collect()
        };
        let root = dir.display().to_string();
        assert_eq!(
            ids(json!({"pathToStorage": root, "idField": "id"})),
            ["1", "2", "3", "5", "b1", "b2", "b3"]
        );
        // start 3 skips the first row group (2 rows) whole, then one row of the second.
        assert_eq!(
            ids(json!({"pathToStorage": root, "idField": "id", "start": 3})),
            ["5"]
        );
        // The row without an id counts: it is published as a FAIL.
        assert_eq!(
            ids(json!({"pathToStorage": root, "idField": "id", "start": 1, "limit": 3})),
            ["2", "3"]
        );
        assert_eq!(
            ids(json!({"pathToStorage": root, "idField": "id", "limit": 6})),
            ["1", "2", "3", "5", "b1"]
        );
        assert!(ids(json!({"pathToStorage": root, "idField": "id", "start": 100})).is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unreadable_files_and_bad_configs_are_errors_with_the_path_or_key() {
        let dir = temp_dir("bad");
        let p = sample(&dir);
        let bytes = std::fs::read(&p).unwrap();
        // Truncated: the footer is gone.
        let cut = dir.join("cut.parquet");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let err = read(
            &connector(json!({"pathToStorage": cut.display().to_string(), "idField": "id"}))
                .unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("cut.parquet") && err.contains("cannot read"),
            "{err}"
        );
        // Garbage pages behind a valid footer.
        let mut bad = bytes.clone();
        for b in bad.iter_mut().skip(4).take(bytes.len() / 3) {
            *b = 0x5A;
        }
        let garbled = dir.join("garbled.parquet");
        std::fs::write(&garbled, &bad).unwrap();
        let err = read(
            &connector(json!({"pathToStorage": garbled.display().to_string(), "idField": "id"}))
                .unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("garbled.parquet"), "{err}");
        let err = read(
            &connector(json!({"pathToStorage": p.display().to_string(), "idField": "nope"}))
                .unwrap(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("no idField \"nope\"") && err.contains("a.parquet"),
            "{err}"
        );
        let err = read(&connector(json!({"pathToStorage": dir.join("missing.parquet").display().to_string(), "idField": "id"})).unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.parquet"), "{err}");

        let err = match connector(json!({"pathToStorage": "/data", "idField": "id",
            "fsUri": "hdfs://namenode", "s3Key": "k"}))
        {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted HDFS"),
        };
        assert!(
            err.contains("fsUri") && err.contains("\"hdfs://namenode\"") && err.contains("s3://"),
            "{err}"
        );
        assert!(
            err.contains("s3Secret: s3Key and s3Secret go together"),
            "{err}"
        );
        // A value out of its range is reported with the other values' problems, before the
        // checks across keys.
        let err = match connector(
            json!({"pathToStorage": "/data", "idField": "id", "start": -1,
            "limit": "many"}),
        ) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("accepted a negative start"),
        };
        assert!(err.contains("start: must not be negative"), "{err}");
        assert!(err.contains("limit: must be an integer"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn s3_sources_name_their_bucket_as_lucille_does() {
        let at = |fs: &str, p: &str| s3_url(fs, p).map(|u| (u.bucket, u.prefix));
        assert_eq!(
            at("s3://", "bucket/parquet-stuff"),
            Ok(("bucket".into(), "parquet-stuff".into()))
        );
        assert_eq!(at("s3a://b", "/x/y"), Ok(("b".into(), "x/y".into())));
        assert_eq!(at("s3://b/base/", "x"), Ok(("b".into(), "base/x".into())));
        assert_eq!(at("s3://", "s3a://c/p"), Ok(("c".into(), "p".into())));
        let err = at("s3://", "").unwrap_err().to_string();
        assert!(
            err.contains("no bucket") && err.contains("bucket/folder"),
            "{err}"
        );
    }

    #[test]
    fn decimals_times_and_keys() {
        assert_eq!(decimal_text(&[0x04, 0xE2], 2).unwrap(), "12.50");
        assert_eq!(decimal_text(&[0xFF, 0xFB], 2).unwrap(), "-0.05");
        assert_eq!(decimal_text(&[0x00, 0x07], 3).unwrap(), "0.007");
        assert_eq!(decimal_text(&[0x01], 0).unwrap(), "1");
        let mut wide = vec![0u8; 17];
        wide[0] = 1;
        assert_eq!(
            decimal_text(&wide, 0).unwrap_err().to_string(),
            "a decimal wider than 128 bits"
        );
        assert_eq!(
            ValueError::Column {
                column: "s".into(),
                source: Box::new(ValueError::Column {
                    column: "s.t".into(),
                    source: Box::new(ValueError::Time),
                }),
            }
            .to_string(),
            "column \"s\": column \"s.t\": a time out of range"
        );
        assert!(time_of_day(86_400 * 1_000_000_000).is_err());
        assert_eq!(
            timestamp(-1, false).unwrap(),
            json!("1969-12-31T23:59:59.999999999")
        );
        assert_eq!(time_of_day(3_723_000_000_000).unwrap(), json!("01:02:03"));
        let parts: Vec<String> = ["tags", "list", "element"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(leaf_key(&parts), "tags");
    }
}
