//! QueryDatabase: runs a prepared SQL statement per document, with values of the document's
//! `keyFields` as its parameters, and adds columns of every row found to fields.
//!
//! Keys (Lucille's): `driver` and `connectionString` (the DatabaseConnector's drivers: SQLite,
//! PostgreSQL, MySQL / MariaDB), `jdbcUser`, `jdbcPassword`, `sql` (with one `?` per key field; PostgreSQL's
//! `$1` works too), `keyFields` (the fields whose first values fill the parameters, in order),
//! `inputTypes` (one per key field: String, Integer, Long, Double, Boolean, Date), `fieldMapping`
//! (column label → field), `connectionRetries` (default 1), `connectionRetryPause` (ms, default
//! 10000).
//!
//! As in Lucille: the connection is made and the statement prepared when the stage starts (a
//! bad statement or an unreachable database stops the pipeline before its first document); a
//! document without a key field, or whose value does not convert to its input type, FAILs; each
//! mapped column of each row is added with set-or-add (several rows make a multi-valued field)
//! and SQL NULLs are left out; values keep their SQL type (text stays text, integers integers).
//! Lucille's `jdbcUser` / `jdbcPassword` are optional here (SQLite needs neither).

use std::time::Duration;

use chrono::NaiveDate;
use serde_json::Value;

use super::{Stage, StageDescriptor, StageFailure, StageResult};
use crate::config::{ComponentConfig, ConfigError, ConfigErrors, Options, Spec};
use crate::connector::database::positive_or;
use crate::database::lookup::{Lookup, Param};
use crate::database::{resolve_target, Problems, Target, TargetOptions};
use crate::document::Document;

pub const DESCRIPTOR: StageDescriptor = StageDescriptor {
    name: "QueryDatabase",
    spec: QueryDatabaseOptions::spec,
    build,
};
inventory::submit!(DESCRIPTOR);

/// Runs a prepared SQL statement per document, with values of the document's keyFields as
/// its parameters, and adds columns of every row found to fields.
#[derive(Options)]
#[options(base = Spec::stage())]
struct QueryDatabaseOptions {
    /// The database: driver, connectionString, jdbcUser, jdbcPassword.
    #[option(flatten)]
    target: TargetOptions,
    /// The SQL statement, with one ? per key field.
    sql: String,
    /// The fields whose first values fill the statement's parameters, in order.
    key_fields: Vec<String>,
    /// The type of each key field's parameter: String, Integer, Long, Double, Boolean or Date.
    input_types: Vec<String>,
    /// Column label to the field its values are added to.
    field_mapping: Vec<(String, String)>,
    /// Attempts to connect; not negative, 0 means the default.
    #[option(default = 1)]
    connection_retries: i64,
    /// Milliseconds between connection attempts; not negative, 0 means the default.
    #[option(default = 10_000)]
    connection_retry_pause: i64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum InputType {
    String,
    Integer,
    Long,
    Double,
    Boolean,
    Date,
}

impl InputType {
    fn parse(name: &str) -> Option<Self> {
        Some(match name.to_ascii_lowercase().as_str() {
            "string" => InputType::String,
            "integer" | "int" => InputType::Integer,
            "long" => InputType::Long,
            "double" => InputType::Double,
            "boolean" => InputType::Boolean,
            "date" => InputType::Date,
            _ => return None,
        })
    }
}

struct QueryDatabase {
    target: Target,
    sql: String,
    keys: Vec<(String, InputType)>,
    mapping: Vec<(String, String)>,
    retries: u32,
    pause: Duration,
    lookup: Option<Lookup>,
}

fn build(config: &ComponentConfig) -> Result<Box<dyn Stage>, ConfigErrors> {
    let o = QueryDatabaseOptions::from_config(config)?;
    let mut p = Problems {
        config,
        list: Vec::new(),
    };
    let target = resolve_target(&mut p, o.target);
    if o.sql.trim().is_empty() {
        p.push("sql", "must not be empty");
    }
    let mut types = Vec::new();
    for name in &o.input_types {
        match InputType::parse(name) {
            Some(t) => types.push(t),
            None => p.push(
                "inputTypes",
                format!("unknown input type {name:?}; use String, Integer, Long, Double, Boolean or Date"),
            ),
        }
    }
    if o.key_fields.len() != o.input_types.len() {
        p.push(
            "inputTypes",
            format!(
                "needs one input type per key field ({} keyFields, {} inputTypes)",
                o.key_fields.len(),
                o.input_types.len()
            ),
        );
    }
    if o.field_mapping.is_empty() {
        p.push("fieldMapping", "must map at least one column to a field");
    }
    let retries = positive_or(&mut p, "connectionRetries", o.connection_retries, 1);
    let pause = positive_or(
        &mut p,
        "connectionRetryPause",
        o.connection_retry_pause,
        10_000,
    );
    match target {
        Some(target) if p.list.is_empty() => Ok(Box::new(QueryDatabase {
            target,
            sql: o.sql,
            keys: o.key_fields.into_iter().zip(types).collect(),
            mapping: o
                .field_mapping
                .into_iter()
                .map(|(column, field)| (column.to_lowercase(), field))
                .collect(),
            retries: u32::try_from(retries).unwrap_or(u32::MAX),
            pause: Duration::from_millis(pause),
            lookup: None,
        })),
        _ => Err(ConfigError::new(
            config.path(),
            format!("QueryDatabase: {}", p.list.join("; ")),
        )
        .into()),
    }
}

/// A date from a field: `2024-07-30`, or an instant such as `2024-07-30T12:00:00Z` (its date).
fn date(text: &str) -> Option<NaiveDate> {
    let t = text.trim();
    NaiveDate::parse_from_str(t.get(..10).unwrap_or(t), "%Y-%m-%d").ok()
}

impl QueryDatabase {
    fn param(&self, doc: &Document, field: &str, ty: InputType) -> Result<Param, StageFailure> {
        let missing = || StageFailure::msg(format!("document does not have field {field:?}"));
        let wrong = |what: &str| {
            StageFailure::msg(format!(
                "field {field:?} cannot be read as {what} for the SQL"
            ))
        };
        Ok(match ty {
            InputType::String => Param::Str(doc.get_string(field)?.ok_or_else(missing)?),
            InputType::Integer => {
                let n = doc.get_i64(field)?.ok_or_else(missing)?;
                Param::Int(i32::try_from(n).map_err(|_| wrong("an Integer"))?)
            }
            InputType::Long => Param::Long(doc.get_i64(field)?.ok_or_else(missing)?),
            InputType::Double => Param::Double(doc.get_f64(field)?.ok_or_else(missing)?),
            InputType::Boolean => Param::Bool(doc.get_bool(field)?.ok_or_else(missing)?),
            InputType::Date => {
                let text = doc.get_string(field)?.ok_or_else(missing)?;
                Param::Date(date(&text).ok_or_else(|| wrong("a Date"))?)
            }
        })
    }
}

impl Stage for QueryDatabase {
    fn start(&mut self) -> Result<(), StageFailure> {
        let lookup = Lookup::open(&self.target, self.retries, self.pause, &self.sql)
            .map_err(|e| StageFailure::msg(e.to_string()))?;
        self.lookup = Some(lookup);
        Ok(())
    }

    fn stop(&mut self) -> Result<(), StageFailure> {
        self.lookup = None;
        Ok(())
    }

    fn process_document(&mut self, doc: &mut Document) -> StageResult {
        let params = self
            .keys
            .iter()
            .map(|(field, ty)| self.param(doc, field, *ty))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(lookup) = self.lookup.as_mut() else {
            return Err(StageFailure::msg("the stage was not started"));
        };
        let found = lookup
            .query(&params)
            .map_err(|e| StageFailure::msg(e.to_string()))?;
        let columns: Vec<(usize, &str)> = self
            .mapping
            .iter()
            .map(|(column, field)| {
                found
                    .columns
                    .iter()
                    .position(|c| c == column)
                    .map(|i| (i, field.as_str()))
                    .ok_or_else(|| {
                        StageFailure::msg(format!(
                            "fieldMapping names column {column:?}, which the SQL does not return (it returns {})",
                            found.columns.join(", ")
                        ))
                    })
            })
            .collect::<Result<_, _>>()?;
        for row in found.rows {
            for &(i, field) in &columns {
                match row.get(i) {
                    None | Some(Value::Null) => {}
                    Some(v) => doc.set_or_add(field, v.clone())?,
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::stage::testing::{build_err, build_stage, process, process_err};
    use serde_json::{json, Value};

    /// Lucille's test tables (db-test-start.sql), in a fresh SQLite file.
    fn database(name: &str) -> String {
        let dir = std::env::temp_dir().join(format!("lucille-qdb-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("test.db");
        let conn = rusqlite::Connection::open(&path).expect("sqlite");
        conn.execute_batch(
            "CREATE TABLE animal(id INT, name VARCHAR(10), type VARCHAR(10), birthday DATE);
             INSERT INTO animal VALUES (1, 'Matt', 'Human', '2001-07-30'), (2, 'Sonny', 'Cat', '2024-07-30'),
                                       (3, 'Blaze', 'Cat', '2024-05-30');
             CREATE TABLE meal(id INT, animal_id INT, name VARCHAR(20));
             INSERT INTO meal VALUES (1, 1, 'breakfast'), (2, 1, 'lunch'), (3, 1, 'dinner'), (4, 2, 'breakfast');
             CREATE TABLE data(id INT, animal_id INT, attr_id INT, val VARCHAR(10));
             INSERT INTO data VALUES (1, 1, 1, '165'), (2, 1, 2, 'brown'), (3, 2, 1, '12'), (4, 2, 2, 'tiger');
             CREATE TABLE types(s VARCHAR(20), i INT, l BIGINT, d DOUBLE, b BOOLEAN, day DATE, n INT);
             INSERT INTO types VALUES ('Test VARCHAR', 2147483647, 9223372036854775807, 1.25e-3, 1, '2024-07-30', NULL);",
        )
        .expect("tables");
        format!("jdbc:sqlite:{}", path.display())
    }

    fn config(conn: &str, sql: &str, keys: Value, types: Value, mapping: Value) -> Value {
        json!({ "class": "QueryDatabase", "driver": "org.sqlite.JDBC", "connectionString": conn,
                "jdbcUser": "", "jdbcPassword": "", "sql": sql, "keyFields": keys,
                "inputTypes": types, "fieldMapping": mapping,
                "connectionRetries": 1, "connectionRetryPause": 1 })
    }

    fn started(config: Value) -> Box<dyn crate::stage::Stage> {
        let mut stage = build_stage(config);
        stage.start().expect("start");
        stage
    }

    #[test]
    fn single_and_multivalued_key_fields() {
        let db = database("keys");
        let mut stage = started(config(
            &db,
            "SELECT name FROM animal WHERE name = ?",
            json!(["name"]),
            json!(["String"]),
            json!({ "name": "output1" }),
        ));
        let d = process(&mut stage, json!({ "id": "id", "name": "Blaze" }));
        assert_eq!(
            d.get_string("output1").ok().flatten().as_deref(),
            Some("Blaze")
        );
        // Lucille's meal.conf: the first value of each key field fills its parameter.
        let mut stage = started(config(
            &db,
            "SELECT name FROM meal WHERE id = ? AND animal_id = ?",
            json!(["fish", "fish2"]),
            json!(["Integer", "Integer"]),
            json!({ "name": "output1" }),
        ));
        let d = process(&mut stage, json!({ "id": "id", "fish": 2, "fish2": [1] }));
        assert_eq!(
            d.get_string("output1").ok().flatten().as_deref(),
            Some("lunch")
        );
    }

    #[test]
    fn several_rows_make_multivalued_fields_with_their_sql_types() {
        let db = database("rows");
        let mut stage = started(config(
            &db,
            "SELECT val, animal_id FROM data WHERE animal_id = ?",
            json!(["fish"]),
            json!(["Integer"]),
            json!({ "val": "output1", "animal_id": "output2" }),
        ));
        let d = process(&mut stage, json!({ "id": "id", "fish": 2 }));
        // As Lucille's test: text stays text, integers stay integers.
        assert_eq!(
            d.to_json(),
            r#"{"id":"id","fish":2,"output1":["12","tiger"],"output2":[2,2]}"#
        );
    }

    #[test]
    fn every_input_type_binds_and_nulls_are_left_out() {
        let db = database("types");
        let mut stage = started(config(
            &db,
            "SELECT * FROM types WHERE s = ? AND i = ? AND l = ? AND d = ? AND b = ? AND day = ?",
            json!(["string", "int", "long", "double", "bool", "date"]),
            json!(["String", "Integer", "Long", "Double", "Boolean", "Date"]),
            json!({ "s": "s", "i": "i", "l": "l", "d": "d", "b": "b", "day": "day", "n": "n" }),
        ));
        let d = process(
            &mut stage,
            json!({ "id": "id", "string": "Test VARCHAR", "int": 2147483647_i64,
                    "long": 9223372036854775807_i64, "double": 1.25e-3, "bool": true,
                    "date": "2024-07-30T12:00:00Z" }),
        );
        assert_eq!(d.get_i64("l").ok().flatten(), Some(i64::MAX));
        assert_eq!(d.get_bool("b").ok().flatten(), Some(true));
        assert_eq!(
            d.get_string("day").ok().flatten().as_deref(),
            Some("2024-07-30")
        );
        assert!(!d.has("n"), "a NULL column is not added");
    }

    #[test]
    fn bad_documents_fail_with_the_reason() {
        let db = database("fail");
        let mut stage = started(config(
            &db,
            "SELECT name FROM animal WHERE id = ?",
            json!(["fish", "fish2"]),
            json!(["Integer", "Integer"]),
            json!({ "name": "out" }),
        ));
        // Two parameters for one `?` (Lucille's mismatch.conf).
        let e = process_err(&mut stage, json!({ "id": "a", "fish": 2, "fish2": 3 }));
        assert!(e.contains("SQL error"), "{e}");
        let e = process_err(&mut stage, json!({ "id": "a", "fish": 2 }));
        assert!(e.contains("does not have field \"fish2\""), "{e}");
        let e = process_err(&mut stage, json!({ "id": "a", "fish": 1e12, "fish2": 1 }));
        assert!(e.contains("cannot be read as an Integer"), "{e}");
        let mut stage = started(config(
            &db,
            "SELECT name FROM animal WHERE id = ?",
            json!(["fish"]),
            json!(["Integer"]),
            json!({ "nope": "out" }),
        ));
        let e = process_err(&mut stage, json!({ "id": "a", "fish": 1 }));
        assert!(e.contains("column \"nope\""), "{e}");
    }

    #[test]
    fn config_errors_are_reported_together_and_a_bad_statement_stops_start() {
        let db = database("config");
        let e = build_err(config(
            &db,
            "SELECT 1",
            json!(["a", "b"]),
            json!(["Integer", "Cheese"]),
            json!({}),
        ));
        assert!(e.contains("unknown input type \"Cheese\""), "{e}");
        assert!(e.contains("fieldMapping"), "{e}");
        let e = build_err(json!({ "class": "QueryDatabase", "driver": "org.h2.Driver",
            "connectionString": "jdbc:h2:mem:test", "sql": "SELECT 1", "keyFields": [],
            "inputTypes": [], "fieldMapping": { "a": "b" } }));
        assert!(e.contains("unknown driver \"org.h2.Driver\""), "{e}");
        let mut stage = build_stage(config(
            &db,
            "SELEKT name FROM animal",
            json!([]),
            json!([]),
            json!({ "name": "out" }),
        ));
        let e = stage.start().expect_err("a bad statement").to_string();
        assert!(e.contains("SELEKT"), "{e}");
    }
}
