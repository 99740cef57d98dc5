//! The Tantivy references of the standard benchmark: the documents the pipeline produced (row
//! 1's JSONL output) fed straight to Tantivy's own `IndexWriter` with the same writer memory and
//! one commit at the end, in one of two schemas:
//!
//! - `dynamic` (the default): the schema the tantivy indexer uses without `tantivy.fields`
//!   (`id`, `_fields` holding every field as JSON text with positions, `_source` stored), built
//!   by the indexer's own `build_schema`: what the library alone costs, beside row 4;
//! - `hand`: the schema a Tantivy user would write by hand for these documents: a text field per
//!   text value, `tags` as exact strings, the numbers as numeric fields, the dates as exact
//!   strings, `author` as a JSON text field; every field stored. What the dynamic schema costs
//!   is the difference.
//!
//!   cargo run --release --example tantivy_direct -- PIPELINE_OUTPUT.jsonl INDEX_DIR [dynamic|hand]

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{BufRead, BufReader};

use lucille::indexer::tantivy::{self as tv, ID_FIELD, JSON_FIELD, SOURCE_FIELD};
use serde_json::{Map, Value};
use tantivy::schema::{JsonObjectOptions, OwnedValue, Schema, FAST, INDEXED, STORED, STRING, TEXT};
use tantivy::{Index, TantivyDocument};

fn owned(v: Value) -> OwnedValue {
    match v {
        Value::Null => OwnedValue::Null,
        Value::Bool(b) => OwnedValue::Bool(b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => OwnedValue::I64(i),
            (None, Some(u)) => OwnedValue::U64(u),
            _ => OwnedValue::F64(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => OwnedValue::Str(s),
        Value::Array(a) => OwnedValue::Array(a.into_iter().map(owned).collect()),
        Value::Object(m) => OwnedValue::Object(m.into_iter().map(|(k, v)| (k, owned(v))).collect()),
    }
}

/// The fields of the hand-written schema, by how they are indexed.
const TEXT_FIELDS: [&str; 5] = ["title", "title_copy", "body", "body_clean", "summary"];
const EXACT_FIELDS: [&str; 3] = ["tags", "date", "date_parsed"];
const I64_FIELDS: [&str; 2] = ["publication_year", "tag_count"];

fn hand_schema() -> Schema {
    let mut b = Schema::builder();
    b.add_text_field(ID_FIELD, STRING | STORED | FAST);
    for f in TEXT_FIELDS {
        b.add_text_field(f, TEXT | STORED);
    }
    for f in EXACT_FIELDS {
        b.add_text_field(f, STRING | STORED);
    }
    for f in I64_FIELDS {
        b.add_i64_field(f, INDEXED | STORED);
    }
    b.add_f64_field("price", INDEXED | STORED);
    b.add_json_field("author", JsonObjectOptions::from(TEXT) | STORED);
    b.build()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if !(3..=4).contains(&args.len()) {
        eprintln!("usage: tantivy_direct PIPELINE_OUTPUT.jsonl INDEX_DIR [dynamic|hand]");
        std::process::exit(2);
    }
    let hand = match args.get(3).map(String::as_str) {
        None | Some("dynamic") => false,
        Some("hand") => true,
        Some(other) => {
            eprintln!("unknown schema {other:?}: dynamic or hand");
            std::process::exit(2);
        }
    };
    let dir = std::path::Path::new(&args[2]);
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let schema = if hand {
        hand_schema()
    } else {
        tv::build_schema(&[])
    };
    let field = |n: &str| schema.get_field(n);
    let id_f = field(ID_FIELD)?;
    let index = Index::create_in_dir(dir, schema.clone())?;
    let mut writer: tantivy::IndexWriter = tv::writer(&index, tv::DEFAULT_WRITER_MEMORY_MB)?;
    let mut n = 0u64;
    for line in BufReader::with_capacity(1 << 20, File::open(&args[1])?).lines() {
        let Value::Object(mut fields): Value = serde_json::from_str(&line?)? else {
            continue;
        };
        let id = match fields.shift_remove(ID_FIELD) {
            Some(Value::String(s)) => s,
            _ => continue,
        };
        let mut doc = TantivyDocument::new();
        doc.add_text(id_f, &id);
        if hand {
            for (name, value) in fields {
                let Ok(f) = field(&name) else { continue };
                match value {
                    Value::String(s) => doc.add_text(f, s),
                    Value::Array(items) => {
                        for s in items.iter().filter_map(Value::as_str) {
                            doc.add_text(f, s);
                        }
                    }
                    Value::Number(x) if name == "price" => {
                        doc.add_f64(f, x.as_f64().unwrap_or_default())
                    }
                    Value::Number(x) => doc.add_i64(f, x.as_i64().unwrap_or_default()),
                    v @ Value::Object(_) => doc.add_field_value(f, &owned(v)),
                    _ => {}
                }
            }
        } else {
            doc.add_text(field(SOURCE_FIELD)?, serde_json::to_string(&fields)?);
            let object: Vec<(String, OwnedValue)> =
                Map::into_iter(fields).map(|(k, v)| (k, owned(v))).collect();
            doc.add_field_value(field(JSON_FIELD)?, &OwnedValue::Object(object));
        }
        writer.add_document(doc)?;
        n += 1;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    eprintln!("{n} records");
    Ok(())
}
