use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rusqlite::Connection;
use serde_json::{json, Map, Value};

use super::*;
use crate::database::lookup;
use crate::runner::{run, test_history, RunMode, RunOptions};

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "lucille-db-{name}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => panic!("not an object"),
    }
}

fn connector(config: Value, base: Option<&Path>) -> Result<DatabaseConnector, ConfigErrors> {
    let mut map = object(config);
    map.entry("name").or_insert(json!("db"));
    map.entry("class").or_insert(json!("DatabaseConnector"));
    let spec = DatabaseOptions::spec();
    spec.normalize(&mut map);
    let errors = spec.validate(&map, "connectors[0]");
    assert!(errors.is_empty(), "{errors:?}");
    let config = ComponentConfig::new(map, "connectors[0]").with_base_dir(base.map(Into::into));
    let common = Common {
        name: "db".into(),
        doc_id_prefix: config.string("docIdPrefix")?,
        max_document_bytes: config.usize("maxDocumentBytes")?.map(|n| n as u64),
        skip_unchanged: config
            .get("skipUnchanged")
            .is_some()
            .then_some(crate::unchanged::SkipMode::Record),
        ..Default::default()
    };
    let settings = settings(&config, common.skip_unchanged)?;
    Ok(DatabaseConnector { common, settings })
}

/// Documents, and failed rows as (id, reason).
type Rows = (Vec<Document>, Vec<(String, String)>);

fn read_rows(c: &DatabaseConnector) -> Result<Rows, ConnectorError> {
    let (mut docs, mut failed) = (Vec::new(), Vec::new());
    c.read(&mut |row| {
        match row {
            Row::Doc(d) | Row::Hashed(d, _) => docs.push(d),
            Row::Failed { id, reason } => failed.push((id, reason)),
        }
        Ok(())
    })?;
    Ok((docs, failed))
}

fn read_all(c: &DatabaseConnector) -> Result<Vec<Document>, ConnectorError> {
    let (docs, failed) = read_rows(c)?;
    assert!(failed.is_empty(), "{failed:?}");
    Ok(docs)
}

fn fields(doc: &Document) -> Value {
    let mut v = doc.clone().into_value();
    if let Value::Object(m) = &mut v {
        m.shift_remove("___children");
    }
    v
}

/// A SQLite file with the test tables: people (parents), orders and tags (children).
fn sqlite_db(dir: &Path) -> PathBuf {
    let path = dir.join("test.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        r#"
        CREATE TABLE people (id INTEGER PRIMARY KEY, "Name" TEXT, score REAL, photo BLOB,
                             active BOOLEAN, born DATE, note TEXT, code TEXT);
        INSERT INTO people VALUES
            (1, 'Ann', 1.5, x'00FF', 1, '1990-01-31', NULL, 'a1'),
            (2, 'Bob', NULL, NULL, 0, NULL, 'hi', 'b2'),
            (3, 'Cy', -2.25, NULL, NULL, NULL, NULL, 'c3');
        CREATE TABLE orders (person_id INTEGER, item TEXT, qty INTEGER);
        INSERT INTO orders VALUES (0, 'orphan', 1), (1, 'pen', 2), (1, 'ink', NULL),
                                  (3, 'pad', 5), (9, 'late', 1);
        CREATE TABLE tags (pid INTEGER, tag TEXT);
        INSERT INTO tags VALUES (1, 'x'), (2, 'y'), (2, 'z');
        CREATE TABLE log (what TEXT);
        "#,
    )
    .unwrap();
    path
}

#[test]
fn sqlite_rows_become_typed_documents_with_nulls_skipped() {
    let dir = temp_dir("types");
    sqlite_db(&dir);
    let c = connector(
        json!({"driver": "org.sqlite.JDBC", "connectionString": "jdbc:sqlite:test.db",
               "sql": "SELECT * FROM people ORDER BY id", "idField": "ID"}),
        Some(&dir),
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    let got: Vec<Value> = docs.iter().map(fields).collect();
    assert_eq!(
        got,
        vec![
            json!({"id": "1", "name": "Ann", "score": 1.5, "photo": "AP8=", "active": true,
                   "born": "1990-01-31", "code": "a1"}),
            json!({"id": "2", "name": "Bob", "active": false, "note": "hi", "code": "b2"}),
            json!({"id": "3", "name": "Cy", "score": -2.25, "code": "c3"}),
        ]
    );
}

#[test]
fn id_from_another_column_with_prefix_keeps_the_column() {
    let dir = temp_dir("idfield");
    let db = sqlite_db(&dir);
    let c = connector(
        json!({"connectionString": db.display().to_string(), "driver": "sqlite",
               "sql": "SELECT code, \"Name\" AS Label FROM people ORDER BY id",
               "idField": "CODE", "docIdPrefix": "p-", "ignoreColumns": ["LABEL"]}),
        None,
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    let got: Vec<Value> = docs.iter().map(fields).collect();
    assert_eq!(
        got,
        vec![
            json!({"id": "p-a1", "code": "a1"}),
            json!({"id": "p-b2", "code": "b2"}),
            json!({"id": "p-c3", "code": "c3"}),
        ]
    );
}

#[test]
fn other_sqls_become_children_as_lucille_merges_them() {
    let dir = temp_dir("children");
    sqlite_db(&dir);
    let c = connector(
        json!({"connectionString": "jdbc:sqlite:test.db",
               "sql": "SELECT id, \"Name\" FROM people ORDER BY id", "idField": "id",
               "otherSQLs": ["SELECT * FROM orders ORDER BY person_id",
                             "SELECT pid, tag FROM tags ORDER BY pid"],
               "otherJoinFields": ["person_id", "PID"]}),
        Some(&dir),
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    let children: Vec<Vec<Value>> = docs
        .iter()
        .map(|d| d.children().iter().map(fields).collect())
        .collect();
    // Child ids count from 0 per other SQL (Lucille's numbering); rows whose join value
    // matches no parent (0 and 9) are passed over; NULL child values are skipped.
    assert_eq!(
        children,
        vec![
            vec![
                json!({"id": "0", "person_id": 1, "item": "pen", "qty": 2}),
                json!({"id": "1", "person_id": 1, "item": "ink"}),
                json!({"id": "0", "pid": 1, "tag": "x"}),
            ],
            vec![
                json!({"id": "0", "pid": 2, "tag": "y"}),
                json!({"id": "1", "pid": 2, "tag": "z"}),
            ],
            vec![json!({"id": "0", "person_id": 3, "item": "pad", "qty": 5})],
        ]
    );
    assert_eq!(docs[1].get_str("name"), Some("Bob"));
}

#[test]
fn pre_sql_runs_before_and_post_sql_after_the_query() {
    let dir = temp_dir("prepost");
    let db = sqlite_db(&dir);
    let c = connector(
        json!({"connectionString": "jdbc:sqlite:test.db",
               "preSql": "INSERT INTO people (id, \"Name\") VALUES (4, 'Di'); INSERT INTO log VALUES ('pre')",
               "sql": "SELECT id, \"Name\" FROM people ORDER BY id", "idField": "id",
               "postSQL": "INSERT INTO log SELECT 'post ' || count(*) FROM people"}),
        Some(&dir),
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    assert_eq!(
        docs.iter().map(|d| d.id().to_string()).collect::<Vec<_>>(),
        ["1", "2", "3", "4"]
    );
    let conn = Connection::open(&db).unwrap();
    let log: Vec<String> = conn
        .prepare("SELECT what FROM log ORDER BY rowid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(log, ["pre", "post 4"]);
}

#[test]
fn sql_errors_name_the_connector_and_the_sql() {
    let dir = temp_dir("badsql");
    sqlite_db(&dir);
    let bad = connector(
        json!({"connectionString": "jdbc:sqlite:test.db", "sql": "SELECT nope FROM people",
               "idField": "id"}),
        Some(&dir),
    )
    .unwrap();
    let err = read_all(&bad).unwrap_err().to_string();
    assert!(err.contains("DatabaseConnector \"db\""), "{err}");
    assert!(err.contains("SELECT nope FROM people"), "{err}");
    assert!(err.contains("no such column"), "{err}");

    let bad_pre = connector(
        json!({"connectionString": "jdbc:sqlite:test.db", "sql": "SELECT * FROM people",
               "idField": "id", "preSQL": "DELETE FROM missing_table"}),
        Some(&dir),
    )
    .unwrap();
    let err = read_all(&bad_pre).unwrap_err().to_string();
    assert!(
        err.contains("preSQL") && err.contains("missing_table"),
        "{err}"
    );
}

#[test]
fn rows_without_a_usable_id_and_bad_columns_are_clear_errors() {
    let dir = temp_dir("badrows");
    sqlite_db(&dir);
    let read = |sql: &str, extra: Value| {
        let mut cfg =
            json!({"connectionString": "jdbc:sqlite:test.db", "sql": sql, "idField": "note"});
        if let (Value::Object(m), Value::Object(e)) = (&mut cfg, extra) {
            m.extend(e);
        }
        read_all(&connector(cfg, Some(&dir)).unwrap())
            .unwrap_err()
            .to_string()
    };
    // A row without a usable id is a FAIL-ed record; the rows after it still become documents.
    let c = connector(
        json!({"connectionString": "jdbc:sqlite:test.db", "idField": "note", "name": "db",
               "sql": "SELECT note, code FROM people ORDER BY id"}),
        Some(&dir),
    )
    .unwrap();
    let (docs, failed) = read_rows(&c).unwrap();
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed[0].1.contains("row 1") && failed[0].1.contains("NULL"),
        "{failed:?}"
    );
    assert_eq!(docs.len(), 1);
    assert_eq!(docs[0].id(), "hi");
    let err = read("SELECT id FROM people", json!({}));
    assert!(err.contains("idField \"note\" is not a column"), "{err}");
    let err = read("SELECT note, 1 AS run_id FROM people", json!({}));
    assert!(
        err.contains("\"run_id\"") && err.contains("reserved"),
        "{err}"
    );
    // Ignored, a reserved column is fine.
    let ok = connector(
        json!({"connectionString": "jdbc:sqlite:test.db", "idField": "id",
               "sql": "SELECT id, 1 AS run_id FROM people", "ignoreColumns": ["RUN_ID"]}),
        Some(&dir),
    )
    .unwrap();
    assert_eq!(read_all(&ok).unwrap().len(), 3);
    let err = read(
        "SELECT note FROM people",
        json!({"otherSQLs": ["SELECT * FROM tags"], "otherJoinFields": ["nope"]}),
    );
    assert!(err.contains("otherJoinFields[0] \"nope\""), "{err}");
}

#[test]
fn config_errors_are_reported_together_before_connecting() {
    let err = match connector(
        json!({"driver": "com.mysql.Driver", "connectionString": "jdbc:sqlite:x.db",
               "sql": "SELECT 1", "idField": "id", "otherSQLs": ["SELECT 2", "SELECT 3"],
               "otherJoinFields": ["a"], "fetchSize": -5}),
        None,
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted a bad config"),
    };
    assert!(err.contains("unknown driver \"com.mysql.Driver\""), "{err}");
    assert!(
        err.contains("one join field per entry of otherSQLs (2 SQLs, 1 join fields)"),
        "{err}"
    );
    assert!(err.contains("fetchSize: must not be negative"), "{err}");

    let err = match connector(
        json!({"connectionString": "db.sqlite", "sql": "SELECT 1", "idField": "id"}),
        None,
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted a connection string with no driver"),
    };
    assert!(err.contains("names no driver"), "{err}");
    let err = match connector(
        json!({"driver": "org.postgresql.Driver", "connectionString": "jdbc:postgresql://h/db?bogus=1",
               "sql": "SELECT 1", "idField": "id"}),
        None,
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted an unsupported JDBC property"),
    };
    assert!(err.contains("\"bogus\""), "{err}");
}

#[test]
fn a_missing_database_file_fails_after_the_retries() {
    let dir = temp_dir("missing");
    let c = connector(
        json!({"connectionString": "jdbc:sqlite:nope.db", "sql": "SELECT 1 AS id",
               "idField": "id", "connectionRetries": 2, "connectionRetryPause": 1}),
        Some(&dir),
    )
    .unwrap();
    let err = read_all(&c).unwrap_err().to_string();
    assert!(
        err.contains("nope.db")
            && err.contains("after 3 attempt(s)")
            && err.contains("no such file"),
        "{err}"
    );
    assert!(
        !dir.join("nope.db").exists(),
        "a missing database must not be created"
    );
}

#[test]
fn sqlite_rows_are_streamed_while_the_statement_is_open() {
    let dir = temp_dir("stream");
    let db = dir.join("big.db");
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE big (id INTEGER PRIMARY KEY, body TEXT);
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
         INSERT INTO big SELECT i, 'row ' || i FROM n;",
    )
    .unwrap();
    drop(conn);
    let c = connector(
        json!({"connectionString": "jdbc:sqlite:big.db", "sql": "SELECT * FROM big ORDER BY id",
               "idField": "id"}),
        Some(&dir),
    )
    .unwrap();
    let writer = Connection::open(&db).unwrap();
    writer.busy_timeout(std::time::Duration::ZERO).unwrap();
    let mut seen = 0u64;
    let mut locked_at_first = None;
    c.read(&mut |row| {
        let Row::Doc(doc) = row else {
            panic!("unexpected failed row {row:?}")
        };
        seen += 1;
        assert_eq!(doc.id(), seen.to_string());
        if seen == 1 {
            // While the statement is still being stepped its read lock blocks writers; a
            // connector that had collected the rows would have released it already.
            locked_at_first = Some(writer.execute("DELETE FROM big WHERE id = 1", []).is_err());
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 200_000);
    assert_eq!(locked_at_first, Some(true));
    assert_eq!(
        writer.execute("DELETE FROM big WHERE id = 1", []).unwrap(),
        1
    );
}

#[test]
fn runs_through_the_runner_with_children_nested_in_the_parent() {
    let dir = temp_dir("runner");
    sqlite_db(&dir);
    let config = json!({
        "connectors": [{"name": "people", "class": "com.kmwllc.lucille.connector.jdbc.DatabaseConnector",
            "driver": "org.sqlite.JDBC", "connectionString": "jdbc:sqlite:test.db",
            "jdbcUser": "", "jdbcPassword": "",
            "sql": "SELECT id, \"Name\" FROM people ORDER BY id", "idField": "id",
            "otherSQLs": ["SELECT pid, tag FROM tags ORDER BY pid"], "otherJoinFields": ["pid"],
            "pipeline": "p", "docIdPrefix": "person-"}],
        "pipelines": [{"name": "p", "stages": []}]
    });
    let opts = RunOptions {
        mode: RunMode::Test,
        ..Default::default()
    };
    let r = run(&config, Some(&dir), &opts).unwrap();
    assert!(r.ok, "{}", r.summary);
    let (docs, _) = test_history(&r);
    assert_eq!(
        docs.iter().map(|d| d.id().to_string()).collect::<Vec<_>>(),
        ["person-1", "person-2", "person-3"]
    );
    assert_eq!(docs[1].children().len(), 2);

    let broken = json!({"connectors": [{"name": "people", "class": "DatabaseConnector",
        "connectionString": "jdbc:sqlite:test.db", "sql": "SELECT x FROM nowhere", "idField": "id"}]});
    let r = run(&broken, Some(&dir), &opts).unwrap();
    assert!(!r.ok);
    assert!(r.summary.contains("nowhere"), "{}", r.summary);
}

// ----- PostgreSQL (scripts/services/postgres.sh) -----

fn postgres_url() -> Option<String> {
    crate::test_service::test_service(
        "LUCILLE_TEST_POSTGRES_URL",
        "source scripts/services/postgres.sh",
    )
}

fn pg_client(url: &str) -> ::postgres::Client {
    ::postgres::Client::connect(url, ::postgres::NoTls).unwrap()
}

/// A schema of its own per test, so tests can run in parallel.
fn pg_schema(client: &mut ::postgres::Client, name: &str) {
    client
        .batch_execute(&format!(
            "DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name};"
        ))
        .unwrap();
}

/// The JDBC form of the test URL with the credentials as jdbcUser / jdbcPassword.
fn jdbc_form(url: &str) -> (String, String, String) {
    let config: ::postgres::Config = url.parse().unwrap();
    let host = match &config.get_hosts()[0] {
        ::postgres::config::Host::Tcp(h) => h.clone(),
        ::postgres::config::Host::Unix(p) => p.display().to_string(),
    };
    let jdbc = format!(
        "jdbc:postgresql://{host}:{}/{}",
        config.get_ports()[0],
        config.get_dbname().unwrap()
    );
    let password = String::from_utf8(config.get_password().unwrap_or_default().to_vec()).unwrap();
    (
        jdbc,
        config.get_user().unwrap_or_default().to_string(),
        password,
    )
}

#[test]
fn postgres_types_become_json() {
    let Some(url) = postgres_url() else { return };
    let mut client = pg_client(&url);
    pg_schema(&mut client, "lt_types");
    client
        .batch_execute(
            r#"
            CREATE TYPE lt_types.mood AS ENUM ('happy', 'sad');
            CREATE TABLE lt_types.t (id int PRIMARY KEY, big bigint, small smallint,
                amount numeric(12,2), huge numeric, r real, d double precision, txt text,
                vc varchar(10), flag boolean, day date, at timestamp, atz timestamptz,
                raw bytea, "MixedCase" text, u uuid, j jsonb, iv interval, tags text[],
                nums int[], mood lt_types.mood, forever timestamptz);
            SET TIME ZONE 'America/New_York';
            INSERT INTO lt_types.t VALUES
              (1, 9007199254740993, -3, 12.50, 12345678901234567890.123, 0.1, 2.5, 'héllo', 'v',
               true, '2024-02-29', '2024-02-29 13:45:07.25', '2024-02-29 08:00:00-05', '\x00ff10',
               'M', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": [1, 2]}', '1 day',
               '{"a", "b c"}', '{1, NULL, 3}', 'sad', 'infinity'),
              (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
               NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
            "#,
        )
        .unwrap();
    let (jdbc, user, password) = jdbc_form(&url);
    let c = connector(
        json!({"driver": "org.postgresql.Driver", "connectionString": jdbc, "jdbcUser": user,
               "jdbcPassword": password, "sql": "SELECT * FROM lt_types.t ORDER BY id",
               "idField": "id"}),
        None,
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    assert_eq!(
        docs.iter().map(fields).collect::<Vec<_>>(),
        vec![
            json!({"id": "1", "big": 9007199254740993_i64, "small": -3, "amount": 12.5,
                   "huge": "12345678901234567890.123", "r": 0.1, "d": 2.5, "txt": "héllo",
                   "vc": "v", "flag": true, "day": "2024-02-29", "at": "2024-02-29T13:45:07.250",
                   "atz": "2024-02-29T13:00:00Z", "raw": "AP8Q", "mixedcase": "M",
                   "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "j": {"k": [1, 2]},
                   "tags": ["a", "b c"], "nums": [1, null, 3], "mood": "sad",
                   "forever": "infinity"}),
            json!({"id": "2"}),
        ]
    );
}

#[test]
fn postgres_reads_fetch_size_rows_at_a_time() {
    let Some(url) = postgres_url() else { return };
    let mut client = pg_client(&url);
    pg_schema(&mut client, "lt_stream");
    client
        .batch_execute("CREATE SEQUENCE lt_stream.produced;")
        .unwrap();
    let c = connector(
        json!({"connectionString": url, "fetchSize": 10, "idField": "id",
               "sql": "SELECT nextval('lt_stream.produced') AS id, repeat('x', 100) AS body FROM generate_series(1, 5000)"}),
        None,
    )
    .unwrap();
    let mut seen = 0;
    let mut produced_at_first = None;
    c.read(&mut |row| {
        let Row::Doc(doc) = row else {
            panic!("unexpected failed row {row:?}")
        };
        seen += 1;
        assert_eq!(doc.id(), seen.to_string());
        if seen == 1 {
            // The sequence advances as the server produces rows: one fetch, not the result.
            let n: i64 = client
                .query_one("SELECT last_value FROM lt_stream.produced", &[])
                .unwrap()
                .get(0);
            produced_at_first = Some(n);
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 5000);
    assert_eq!(produced_at_first, Some(10));
}

// ----- Shared bodies: the same cases on PostgreSQL and on MariaDB -----

/// Runs a query and returns its first column as text.
type Query = dyn FnMut(&str) -> Vec<String>;

/// A real server a shared test body runs on: how to reach it from a config, and a client of
/// the test's own to set up tables and read them back.
struct Server {
    /// `driver` / `connectionString` / `jdbcUser` / `jdbcPassword`.
    keys: Map<String, Value>,
    /// Table names of one test: a schema on PostgreSQL (`lt_x.`), a prefix on MariaDB
    /// (`lt_x_`), so tests can run in parallel.
    ns: String,
    exec: Box<dyn FnMut(&str)>,
    strings: Box<Query>,
    /// Words every "no such table" error of this server has.
    missing_table: [&'static str; 2],
    /// A word of this server's wrong-password error.
    bad_password: &'static str,
    /// Column types by the names the shared bodies use.
    types: fn(&str) -> &'static str,
    /// A bytes literal from hex digits.
    hex: fn(&str) -> String,
    /// Sets the session time zone to UTC-5 (a TIMESTAMP's reader must give UTC back).
    utc_minus_5: &'static str,
}

impl Server {
    fn config(&self, extra: Value) -> Value {
        let mut m = self.keys.clone();
        m.extend(object(extra));
        Value::Object(m)
    }
    fn t(&self, name: &str) -> String {
        format!("{}{name}", self.ns)
    }
}

fn postgres_server(ns: &str) -> Option<Server> {
    let url = postgres_url()?;
    let mut client = pg_client(&url);
    pg_schema(&mut client, ns);
    let client = std::rc::Rc::new(std::cell::RefCell::new(client));
    let c2 = client.clone();
    Some(Server {
        keys: object(json!({"connectionString": url})),
        ns: format!("{ns}."),
        exec: Box::new(move |sql| client.borrow_mut().batch_execute(sql).unwrap()),
        strings: Box::new(move |sql| {
            c2.borrow_mut()
                .query(sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        }),
        missing_table: ["does not exist", "42P01"],
        bad_password: "password",
        types: |name| match name {
            "float4" => "real",
            "bytes" => "bytea",
            "datetime" => "timestamp",
            "timestamp" => "timestamptz",
            _ => "text",
        },
        hex: |h| format!("'\\x{h}'"),
        utc_minus_5: "SET TIME ZONE 'America/New_York'",
    })
}

fn mariadb_url() -> Option<String> {
    crate::test_service::test_service(
        "LUCILLE_TEST_MARIADB_URL",
        "source scripts/services/mariadb.sh",
    )
}

fn mariadb_server(ns: &str) -> Option<Server> {
    use ::mysql::prelude::Queryable;
    let url = mariadb_url()?;
    let opts = ::mysql::Opts::from_url(&url).unwrap();
    // The JDBC form, credentials as jdbcUser / jdbcPassword, as a Lucille config has them.
    let jdbc = format!(
        "jdbc:mysql://{}:{}/{}?useSSL=false&serverTimezone=UTC",
        opts.get_ip_or_hostname(),
        opts.get_tcp_port(),
        opts.get_db_name().unwrap_or_default()
    );
    let keys = object(
        json!({"driver": "com.mysql.cj.jdbc.Driver", "connectionString": jdbc,
        "jdbcUser": opts.get_user().unwrap_or_default(),
        "jdbcPassword": opts.get_pass().unwrap_or_default()}),
    );
    let client =
        ::mysql::Conn::new(::mysql::OptsBuilder::from_opts(opts).prefer_socket(false)).unwrap();
    let client = std::rc::Rc::new(std::cell::RefCell::new(client));
    let c2 = client.clone();
    Some(Server {
        keys,
        ns: format!("{ns}_"),
        exec: Box::new(move |sql| client.borrow_mut().query_drop(sql).unwrap()),
        strings: Box::new(move |sql| c2.borrow_mut().query(sql).unwrap()),
        missing_table: ["doesn't exist", "1146"],
        bad_password: "Access denied",
        types: |name| match name {
            "float4" => "float",
            "bytes" => "varbinary(20)",
            "datetime" => "datetime(3)",
            "timestamp" => "timestamp NULL",
            _ => "text",
        },
        hex: |h| format!("x'{h}'"),
        utc_minus_5: "SET time_zone = '-05:00'",
    })
}

/// The types both servers have, read as the same JSON.
fn shared_types_become_json(mut s: Server) {
    let (t, ty) = (s.t("types"), s.types);
    (s.exec)(&format!(
        "DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (id int PRIMARY KEY, big bigint,
            small smallint, amount decimal(12,2), huge decimal(30,3), r {}, d double precision,
            txt varchar(20), flag boolean, day date, at {}, atz {}, raw {});
         {};
         INSERT INTO {t} VALUES
           (1, 9007199254740993, -3, 12.50, 12345678901234567890.123, 0.1, 2.5, 'héllo', true,
            '2024-02-29', '2024-02-29 13:45:07.25', '2024-02-29 08:00:00', {}),
           (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);",
        ty("float4"),
        ty("datetime"),
        ty("timestamp"),
        ty("bytes"),
        s.utc_minus_5,
        (s.hex)("00ff10"),
    ));
    let c = connector(
        s.config(json!({"sql": format!("SELECT * FROM {t} ORDER BY id"), "idField": "id"})),
        None,
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    assert_eq!(
        docs.iter().map(fields).collect::<Vec<_>>(),
        vec![
            json!({"id": "1", "big": 9007199254740993_i64, "small": -3, "amount": 12.5,
                   "huge": "12345678901234567890.123", "r": 0.1, "d": 2.5, "txt": "héllo",
                   "flag": true, "day": "2024-02-29", "at": "2024-02-29T13:45:07.250",
                   "atz": "2024-02-29T13:00:00Z", "raw": "AP8Q"}),
            json!({"id": "2"}),
        ]
    );
}

/// otherSQLs become children, preSQL runs before and postSQL after, SQL and connection
/// errors name what failed.
fn shared_other_sqls_pre_and_post_sql_and_errors(mut s: Server) {
    let (p, ch, log) = (s.t("p"), s.t("c"), s.t("log"));
    for sql in [
        format!("DROP TABLE IF EXISTS {p}, {ch}, {log}"),
        format!("CREATE TABLE {p} (id varchar(10) PRIMARY KEY, name text)"),
        format!("INSERT INTO {p} VALUES ('a', 'A'), ('b', 'B'), ('c', 'C')"),
        format!("CREATE TABLE {ch} (pid varchar(10), n int)"),
        format!("INSERT INTO {ch} VALUES ('a', 1), ('a', 2), ('c', 3), ('d', 4)"),
        format!("CREATE TABLE {log} (what varchar(10))"),
    ] {
        (s.exec)(&sql);
    }
    let c = connector(
        s.config(json!({"fetchSize": 1, "idField": "id",
               "preSQL": format!("INSERT INTO {log} VALUES ('pre')"),
               "sql": format!("SELECT * FROM {p} ORDER BY id"),
               "postSQL": format!("INSERT INTO {log} VALUES ('post')"),
               "otherSQLs": [format!("SELECT * FROM {ch} ORDER BY pid, n")],
               "otherJoinFields": ["pid"]})),
        None,
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    let children: Vec<Vec<Value>> = docs
        .iter()
        .map(|d| d.children().iter().map(fields).collect())
        .collect();
    assert_eq!(
        children,
        vec![
            vec![
                json!({"id": "0", "pid": "a", "n": 1}),
                json!({"id": "1", "pid": "a", "n": 2})
            ],
            vec![],
            vec![json!({"id": "0", "pid": "c", "n": 3})],
        ]
    );
    assert_eq!(docs[1].get_str("name"), Some("B"));
    let logged = (s.strings)(&format!("SELECT what FROM {log}"));
    assert_eq!(logged, ["pre", "post"]);

    let missing = s.t("nothing");
    let bad = connector(
        s.config(json!({"idField": "id", "sql": format!("SELECT * FROM {missing}")})),
        None,
    )
    .unwrap();
    let err = read_all(&bad).unwrap_err().to_string();
    assert!(
        err.contains(&missing) && s.missing_table.iter().all(|w| err.contains(w)),
        "{err}"
    );
    let wrong_password = connector(
        s.config(
            json!({"jdbcPassword": "wrong", "idField": "id", "sql": "SELECT 1 AS id",
               "connectionRetries": 1, "connectionRetryPause": 1}),
        ),
        None,
    )
    .unwrap();
    let err = read_all(&wrong_password).unwrap_err().to_string();
    assert!(
        err.contains("after 2 attempt(s)") && err.contains(s.bad_password),
        "{err}"
    );
}

/// QueryDatabase lookups: each input type binds, several rows come back, values decode as
/// the connector's, NULLs are null, a statement with the wrong parameter count fails.
fn shared_lookups(mut s: Server) {
    let (a, ty) = (s.t("animal"), s.types);
    (s.exec)(&format!("DROP TABLE IF EXISTS {a}"));
    (s.exec)(&format!(
        "CREATE TABLE {a} (id bigint, name varchar(10), weight smallint, born date,
            fed {}, price decimal(6,2), tame boolean, score double precision)",
        ty("datetime")
    ));
    (s.exec)(&format!(
        "INSERT INTO {a} VALUES (1, 'Matt', 80, '2001-07-30', '2024-01-02 03:04:05', 9.99, true, 0.5),
            (1, 'Blaze', 4, '2024-05-30', NULL, NULL, false, NULL), (2, 'Sonny', NULL, NULL, NULL, 1.5, NULL, 2.5)"
    ));
    let settings = connector(s.config(json!({"sql": "SELECT 1", "idField": "id"})), None)
        .unwrap()
        .settings;
    let sql = format!(
        "SELECT name, weight, born, fed, price, tame FROM {a} WHERE id = ? AND name <> ? ORDER BY name"
    );
    let mut lookup =
        lookup::Lookup::open(&settings.query.target, 0, Duration::from_millis(1), &sql).unwrap();
    let found = lookup
        .query(&[lookup::Param::Long(1), lookup::Param::Str("x".into())])
        .unwrap();
    assert_eq!(
        found.columns,
        ["name", "weight", "born", "fed", "price", "tame"]
    );
    assert_eq!(
        found.rows,
        vec![
            vec![
                json!("Blaze"),
                json!(4),
                json!("2024-05-30"),
                Value::Null,
                Value::Null,
                json!(false)
            ],
            vec![
                json!("Matt"),
                json!(80),
                json!("2001-07-30"),
                json!("2024-01-02T03:04:05"),
                json!(9.99),
                json!(true)
            ],
        ]
    );
    let by_date = format!("SELECT name FROM {a} WHERE born = ? AND tame = ? AND score = ?");
    let mut lookup = lookup::Lookup::open(
        &settings.query.target,
        0,
        Duration::from_millis(1),
        &by_date,
    )
    .unwrap();
    let found = lookup
        .query(&[
            lookup::Param::Date(chrono::NaiveDate::from_ymd_opt(2001, 7, 30).unwrap()),
            lookup::Param::Bool(true),
            lookup::Param::Double(0.5),
        ])
        .unwrap();
    assert_eq!(found.rows, vec![vec![json!("Matt")]]);
    let found = lookup
        .query(&[
            lookup::Param::Date(chrono::NaiveDate::from_ymd_opt(2001, 7, 31).unwrap()),
            lookup::Param::Bool(true),
            lookup::Param::Double(0.5),
        ])
        .unwrap();
    assert!(found.rows.is_empty());
    let err = match lookup.query(&[lookup::Param::Int(1)]) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("one parameter for three"),
    };
    assert!(err.contains("takes 3 parameter(s)"), "{err}");
    let err = match lookup::Lookup::open(
        &settings.query.target,
        0,
        Duration::from_millis(1),
        &format!("SELEKT name FROM {a}"),
    ) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("prepared a bad statement"),
    };
    assert!(err.contains("SELEKT"), "{err}");
}

#[test]
fn postgres_shared_types_become_json() {
    if let Some(s) = postgres_server("lt_stypes") {
        shared_types_become_json(s);
    }
}

#[test]
fn mariadb_types_become_json() {
    if let Some(s) = mariadb_server("lt_stypes") {
        shared_types_become_json(s);
    }
}

#[test]
fn postgres_other_sqls_pre_and_post_sql_and_errors() {
    if let Some(s) = postgres_server("lt_join") {
        shared_other_sqls_pre_and_post_sql_and_errors(s);
    }
}

#[test]
fn mariadb_other_sqls_pre_and_post_sql_and_errors() {
    if let Some(s) = mariadb_server("lt_join") {
        shared_other_sqls_pre_and_post_sql_and_errors(s);
    }
}

#[test]
fn postgres_lookups() {
    if let Some(s) = postgres_server("lt_lookup") {
        shared_lookups(s);
    }
}

#[test]
fn mariadb_lookups() {
    if let Some(s) = mariadb_server("lt_lookup") {
        shared_lookups(s);
    }
}

#[test]
fn mariadb_specific_types() {
    let Some(mut s) = mariadb_server("lt_mtypes") else {
        return;
    };
    let t = s.t("t");
    (s.exec)(&format!(
        "DROP TABLE IF EXISTS {t}; CREATE TABLE {t} (id int PRIMARY KEY,
            ub bigint unsigned, y year, b1 bit(1), b9 bit(9), tm time, e enum('x', 'y'),
            st set('p', 'q'), bl blob, tx mediumtext, ch char(3), fl float, zero datetime);
         SET SESSION sql_mode = '';
         INSERT INTO {t} VALUES (1, 18446744073709551615, 2024, b'1', b'100000001',
            '-838:59:59', 'y', 'p,q', x'0001', 'long', 'abc', -1.5, '0000-00-00 00:00:00');"
    ));
    let c = connector(
        s.config(json!({"sql": format!("SELECT * FROM {t}"), "idField": "id"})),
        None,
    )
    .unwrap();
    let docs = read_all(&c).unwrap();
    assert_eq!(
        fields(&docs[0]),
        json!({"id": "1", "ub": 18446744073709551615_u64, "y": 2024, "b1": true, "b9": 257,
               "tm": "-838:59:59", "e": "y", "st": "p,q", "bl": "AAE=", "tx": "long",
               "ch": "abc", "fl": -1.5, "zero": "0000-00-00 00:00:00"})
    );
    // Rows are read off the socket, not collected: 100000 rows pass through.
    let c = connector(
        s.config(json!({"idField": "id",
            "sql": "SELECT seq AS id, repeat('x', 100) AS body FROM seq_1_to_100000"})),
        None,
    )
    .unwrap();
    let mut seen = 0u64;
    c.read(&mut |row| {
        let Row::Doc(doc) = row else {
            panic!("unexpected failed row {row:?}")
        };
        seen += 1;
        assert_eq!(doc.id(), seen.to_string());
        Ok(())
    })
    .unwrap();
    assert_eq!(seen, 100_000);

    // A failure on the first row of a large result returns at once: the connector interrupts
    // the server's query instead of reading the rest of it.
    let c = connector(
        s.config(json!({"idField": "id",
            "sql": "SELECT seq AS id, repeat('x', 100) AS body FROM seq_1_to_50000000"})),
        None,
    )
    .unwrap();
    let mut calls = 0;
    let err = c
        .read(&mut |_| {
            calls += 1;
            Err(ConnectorError::new("the run was stopped"))
        })
        .unwrap_err();
    assert_eq!(
        (calls, err.to_string().as_str()),
        (1, "the run was stopped")
    );
}

#[test]
fn a_row_over_max_document_bytes_fails_with_its_row_number() {
    let dir = temp_dir("maxbytes");
    let path = dir.join("big.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT);
         INSERT INTO t VALUES (1, 'small'), (2, '{}'), (3, 'fine');",
        "b".repeat(2000)
    ))
    .unwrap();
    let c = connector(
        json!({"driver": "org.sqlite.JDBC", "connectionString": "jdbc:sqlite:big.db",
               "sql": "SELECT * FROM t ORDER BY id", "idField": "id", "maxDocumentBytes": 500}),
        Some(&dir),
    )
    .unwrap();
    let (docs, failed) = read_rows(&c).unwrap();
    assert_eq!(docs.iter().map(|d| d.id()).collect::<Vec<_>>(), ["1", "3"]);
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert_eq!(failed[0].0, "2");
    assert!(
        failed[0]
            .1
            .starts_with("row 2 of the SQL \"SELECT * FROM t ORDER BY id\": the record is larger than maxDocumentBytes (500)"),
        "{}",
        failed[0].1
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `changeTokenColumn`: each row's token (with its joined rows) is offered before its
/// document is built; rows found unchanged are never built, the others come hashed.
#[test]
fn a_change_token_is_checked_before_the_document_is_built() {
    let dir = temp_dir("token");
    sqlite_db(&dir);
    let c = connector(
        json!({"driver": "org.sqlite.JDBC", "connectionString": "jdbc:sqlite:test.db",
               "sql": "SELECT * FROM people ORDER BY id", "idField": "id",
               "docIdPrefix": "p-", "skipUnchanged": true, "changeTokenColumn": "CODE",
               "otherSQLs": ["SELECT * FROM tags ORDER BY pid"], "otherJoinFields": ["pid"]}),
        Some(&dir),
    )
    .unwrap();
    let hashes = |skip: &[&str]| {
        let (mut asked, mut emitted) = (Vec::new(), Vec::new());
        c.read_unchanged(
            &mut |id, hash| {
                asked.push((id.to_string(), hash));
                Ok(skip.contains(&id))
            },
            &mut |row| {
                emitted.push(match row {
                    Row::Hashed(d, h) => (d.id().to_string(), Some(h), d.children().len()),
                    Row::Doc(d) => (d.id().to_string(), None, d.children().len()),
                    Row::Failed { id, reason } => panic!("{id}: {reason}"),
                });
                Ok(())
            },
        )
        .unwrap();
        (asked, emitted)
    };
    let (asked, emitted) = hashes(&["p-2"]);
    // Asked by the prefixed id; p-2 is not built.
    assert_eq!(
        asked.iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(),
        ["p-1", "p-2", "p-3"]
    );
    assert_eq!(
        emitted,
        vec![
            ("p-1".to_string(), Some(asked[0].1), 1),
            ("p-3".to_string(), Some(asked[2].1), 0)
        ]
    );
    // The same rows hash the same; a changed child changes its parent's hash, a changed
    // token its row's, and a field beside the token does not.
    let db = Connection::open(dir.join("test.db")).unwrap();
    db.execute_batch(
        "UPDATE tags SET tag = 'w' WHERE pid = 2; UPDATE people SET code = 'c4' WHERE id = 3; \
         UPDATE people SET \"Name\" = 'Annie' WHERE id = 1;",
    )
    .unwrap();
    let (again, _) = hashes(&[]);
    assert_eq!(again[0], asked[0]);
    assert_ne!(again[1].1, asked[1].1);
    assert_ne!(again[2].1, asked[2].1);
    // A NULL token: the row is compared by its fields (the publisher hashes the document).
    db.execute("UPDATE people SET code = NULL WHERE id = 1", [])
        .unwrap();
    let (asked, emitted) = hashes(&[]);
    assert_eq!(asked.len(), 2);
    assert_eq!(emitted[0], ("p-1".to_string(), None, 1));
}

#[test]
fn a_change_token_without_skip_unchanged_is_an_error() {
    let dir = temp_dir("token-alone");
    sqlite_db(&dir);
    let Err(e) = connector(
        json!({"driver": "org.sqlite.JDBC", "connectionString": "jdbc:sqlite:test.db",
               "sql": "SELECT * FROM people", "idField": "id", "changeTokenColumn": "code"}),
        Some(&dir),
    ) else {
        panic!("accepted")
    };
    let text = e.to_string();
    assert!(
        text.contains("connectors[0].changeTokenColumn") && text.contains("skipUnchanged: true"),
        "{text}"
    );
}
