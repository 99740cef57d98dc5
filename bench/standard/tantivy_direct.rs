//! The Tantivy reference of the standard benchmark: the documents the pipeline produced (row 1's
//! JSONL output) fed straight to Tantivy's own `IndexWriter`, into the schema the tantivy
//! indexer uses (`id`, `_all`, `_fields`, `_source`), with the same writer memory, one commit at
//! the end. It measures what the library alone costs, so the runtime's row 4 can be compared.
//!
//!   cargo run --release --example tantivy_direct -- PIPELINE_OUTPUT.jsonl INDEX_DIR

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{BufRead, BufReader};

use lucille::indexer::tantivy::{self as tv, ALL_FIELD, ID_FIELD, JSON_FIELD, SOURCE_FIELD};
use serde_json::{Map, Value};
use tantivy::schema::OwnedValue;
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

fn strings<'a>(v: &'a Value, out: &mut dyn FnMut(&'a str)) {
    match v {
        Value::String(s) => out(s),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: tantivy_direct PIPELINE_OUTPUT.jsonl INDEX_DIR");
        std::process::exit(2);
    }
    let dir = std::path::Path::new(&args[2]);
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let schema = tv::build_schema(&[]);
    let field = |n: &str| schema.get_field(n);
    let (id_f, all_f, json_f, source_f) = (
        field(ID_FIELD)?,
        field(ALL_FIELD)?,
        field(JSON_FIELD)?,
        field(SOURCE_FIELD)?,
    );
    let index = Index::create_in_dir(dir, schema.clone())?;
    let mut writer = tv::writer(&index, tv::DEFAULT_WRITER_MEMORY_MB)?;
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
        doc.add_text(all_f, &id);
        for v in fields.values() {
            strings(v, &mut |s| doc.add_text(all_f, s));
        }
        doc.add_text(source_f, serde_json::to_string(&fields)?);
        let object: Vec<(String, OwnedValue)> =
            Map::into_iter(fields).map(|(k, v)| (k, owned(v))).collect();
        doc.add_field_value(json_f, &OwnedValue::Object(object));
        writer.add_document(doc)?;
        n += 1;
    }
    writer.commit()?;
    writer.wait_merging_threads()?;
    eprintln!("{n} records");
    Ok(())
}
