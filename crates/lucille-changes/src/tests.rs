use std::sync::Arc;

use super::*;

fn temp_store() -> (std::path::PathBuf, SqliteChangeStore) {
    let dir = std::env::temp_dir().join(format!("lucille-changes-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("s.sqlite");
    let store = SqliteChangeStore::open(&path).unwrap();
    (path, store)
}

fn put(id: &str, hash: Hash, unit: Option<&str>) -> Change {
    Change::Put {
        id: id.into(),
        hash,
        unit: unit.map(Arc::from),
    }
}

#[test]
fn entries_units_and_removals_round_trip_per_scope() {
    let (path, mut s) = temp_store();
    s.apply(
        "files",
        &[
            put("a", 1, Some("x.jsonl")),
            put("b", u128::MAX, Some("x.jsonl")),
            put("c", 3, None),
            Change::Unit {
                unit: Arc::from("x.jsonl"),
                token: 42,
                docs: 2,
            },
        ],
    )
    .unwrap();
    s.apply("other", &[put("a", 9, None)]).unwrap();
    s.apply("files", &[Change::Remove { id: "c".into() }])
        .unwrap();
    drop(s);
    let mut s = SqliteChangeStore::open(&path).unwrap();
    let e = s.entries("files").unwrap();
    assert_eq!(e.len(), 2);
    assert_eq!(e[&lucille_core::unchanged::id_key("b")], u128::MAX);
    assert_eq!(s.unit("files", "x.jsonl").unwrap(), Some((42, 2)));
    assert_eq!(s.unit("other", "x.jsonl").unwrap(), None);
    let mut ids = s.ids_of_unit("files", "x.jsonl").unwrap();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(s.units("files").unwrap(), ["x.jsonl"]);
    s.apply(
        "files",
        &[Change::RemoveUnit {
            unit: Arc::from("x.jsonl"),
        }],
    )
    .unwrap();
    assert_eq!(s.unit("files", "x.jsonl").unwrap(), None);
    assert_eq!(s.entries("other").unwrap().len(), 1);
}

#[test]
fn a_store_of_another_schema_version_is_refused_with_what_to_do() {
    let (path, s) = temp_store();
    s.conn.pragma_update(None, "user_version", 99).unwrap();
    drop(s);
    let e = SqliteChangeStore::open(&path).err().unwrap();
    assert!(e.message.contains("delete it"), "{e}");
}

#[test]
fn a_unit_is_forgotten_once_no_document_names_it() {
    let (_, mut s) = temp_store();
    s.apply(
        "files",
        &[
            put("a", 1, Some("gone.jsonl")),
            Change::Unit {
                unit: Arc::from("gone.jsonl"),
                token: 5,
                docs: 1,
            },
        ],
    )
    .unwrap();
    s.apply(
        "files",
        &[
            Change::Remove { id: "a".into() },
            Change::RemoveUnit {
                unit: Arc::from("gone.jsonl"),
            },
        ],
    )
    .unwrap();
    assert!(s.units("files").unwrap().is_empty());
    assert!(s.ids_of_unit("files", "gone.jsonl").unwrap().is_empty());
    // A connector never stored reads as empty, and is not created by reading.
    assert!(s.entries("never").unwrap().is_empty());
    assert_eq!(s.unit("never", "x").unwrap(), None);
}

/// `cargo test --release -p lucille-changes -- --ignored --nocapture`: 200k puts in batches.
#[test]
#[ignore]
fn time_puts() {
    let (_, mut s) = temp_store();
    let unit: Arc<str> = Arc::from("/data/corpus-200000.jsonl");
    let started = std::time::Instant::now();
    for batch in 0..20 {
        let changes: Vec<Change> = (0..10_000)
            .map(|i| put(&format!("{}", batch * 10_000 + i), i as u128, None))
            .map(|c| match c {
                Change::Put { id, hash, .. } => Change::Put {
                    id,
                    hash,
                    unit: Some(unit.clone()),
                },
                c => c,
            })
            .collect();
        s.apply("files", &changes).unwrap();
    }
    println!("200k puts: {:?}", started.elapsed());
    let started = std::time::Instant::now();
    let n = s.entries("files").unwrap().len();
    println!("entries ({n}): {:?}", started.elapsed());
}
