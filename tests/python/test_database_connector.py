"""DatabaseConnector through lucille.run: SQLite (always), PostgreSQL (scripts/services/postgres.sh)
and MariaDB (scripts/services/mariadb.sh)."""

import json
import sqlite3
import subprocess
import sys
import textwrap

import pytest

import lucille
from services import service_env
from pathlib import Path


def make_sqlite(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE movies (id INTEGER PRIMARY KEY, Title TEXT, rating REAL, seen BOOLEAN,
                             poster BLOB, notes TEXT);
        INSERT INTO movies VALUES (1, 'Alien', 8.5, 1, x'89504E47', NULL),
                                  (2, 'Brazil', 7.9, 0, NULL, 'odd'),
                                  (3, 'Heat', NULL, NULL, NULL, NULL);
        CREATE TABLE cast_members (movie_id INTEGER, actor TEXT);
        INSERT INTO cast_members VALUES (1, 'Weaver'), (1, 'Hurt'), (3, 'Pacino');
        CREATE TABLE audit (what TEXT);
        """
    )
    conn.commit()
    conn.close()


def test_sqlite_rows_become_documents_with_children(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "movies.db")
    conf = tmp_path / "db.conf"
    # A relative database path is read from the config file's folder.
    conf.write_text(
        textwrap.dedent(
            """
            connectors: [{
              name: "movies", class: "com.kmwllc.lucille.connector.jdbc.DatabaseConnector",
              driver: "org.sqlite.JDBC", connectionString: "jdbc:sqlite:movies.db",
              jdbcUser: "", jdbcPassword: "",
              sql: "SELECT * FROM movies ORDER BY id", idField: "id", docIdPrefix: "m-",
              ignoreColumns: ["NOTES"],
              otherSQLs: ["SELECT movie_id, actor FROM cast_members ORDER BY movie_id"],
              otherJoinFields: ["movie_id"],
              preSQL: "INSERT INTO audit VALUES ('start')",
              postSQL: "INSERT INTO audit VALUES ('done')",
              pipeline: "main"
            }]
            pipelines: [{ name: "main", stages: [] }]
            """
        )
    )
    result = lucille.run(str(conf), mode="test")
    assert result.status == "Success", result.summary
    assert (result.published, result.succeeded, result.failed) == (3, 3, 0)
    docs = result.documents
    assert [d.id for d in docs] == ["m-1", "m-2", "m-3"]
    alien = docs[0]
    assert alien.get("title") == "Alien"
    assert alien.get("rating") == 8.5
    assert alien.get("seen") is True
    assert alien.get("poster") == "iVBORw=="
    assert not alien.has("notes")
    assert [(c.id, c.get("actor")) for c in alien.children()] == [("0", "Weaver"), ("1", "Hurt")]
    assert docs[1].get("seen") is False and not docs[1].children()
    heat = docs[2]
    assert heat.field_names() == ["title"]
    conn = sqlite3.connect(tmp_path / "movies.db")
    assert [r[0] for r in conn.execute("SELECT what FROM audit ORDER BY rowid")] == ["start", "done"]


def test_bad_sql_fails_the_run_with_the_sql_named(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "movies.db")
    result = lucille.run(
        config={
            "connectors": [
                {
                    "name": "movies",
                    "class": "DatabaseConnector",
                    "connectionString": str(tmp_path / "movies.db"),
                    "driver": "org.sqlite.JDBC",
                    "sql": "SELECT * FROM no_such_table",
                    "idField": "id",
                }
            ]
        },
        mode="test",
    )
    assert result.status == "Failure"
    assert "no_such_table" in result.summary


def test_config_errors_are_reported_together(tmp_path: Path) -> None:
    with pytest.raises(lucille.ConfigError) as e:
        lucille.run(
            config={
                "connectors": [
                    {
                        "name": "db",
                        "class": "DatabaseConnector",
                        "driver": "oracle.jdbc.OracleDriver",
                        "connectionString": "jdbc:oracle:thin:@h:1521:x",
                        "sql": "SELECT 1",
                        "idField": "id",
                        "otherSQLs": ["SELECT 2"],
                    }
                ]
            },
            mode="test",
        )
    text = str(e.value)
    assert "unknown driver" in text and "otherJoinFields" in text


def postgres_url() -> str:
    return service_env("LUCILLE_TEST_POSTGRES_URL", "postgres.sh")


def psql(url: str, sql: str) -> None:

    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c", sql], check=True)


def test_postgres_rows_and_children(tmp_path: Path) -> None:
    url = postgres_url()
    psql(
        url,
        """
        DROP SCHEMA IF EXISTS lt_py CASCADE; CREATE SCHEMA lt_py;
        CREATE TABLE lt_py.product (sku text PRIMARY KEY, price numeric(8,2), stock int,
                                    added date, updated timestamptz, active boolean);
        INSERT INTO lt_py.product VALUES
          ('A-1', 9.99, 3, '2024-01-02', '2024-01-02 03:04:05+00', true),
          ('B-2', NULL, 0, NULL, NULL, false);
        CREATE TABLE lt_py.review (sku text, stars int);
        INSERT INTO lt_py.review VALUES ('A-1', 5), ('A-1', 4), ('B-2', 1);
        """,
    )
    # The JDBC form with credentials as jdbcUser / jdbcPassword, as a Lucille config has them.
    rest = url.split("://", 1)[1]
    creds, location = rest.split("@", 1)
    user, password = creds.split(":", 1)
    result = lucille.run(
        config={
            "connectors": [
                {
                    "name": "products",
                    "class": "DatabaseConnector",
                    "driver": "org.postgresql.Driver",
                    "connectionString": f"jdbc:postgresql://{location}",
                    "jdbcUser": user,
                    "jdbcPassword": password,
                    "fetchSize": 1,
                    "sql": "SELECT * FROM lt_py.product ORDER BY sku",
                    "idField": "SKU",
                    "otherSQLs": ["SELECT * FROM lt_py.review ORDER BY sku, stars DESC"],
                    "otherJoinFields": ["sku"],
                }
            ]
        },
        mode="test",
    )
    assert result.status == "Success", result.summary
    a, b = result.documents
    assert a.id == "A-1"
    assert a.to_dict()["price"] == 9.99
    assert (a.get("stock"), a.get("added"), a.get("updated"), a.get("active")) == (
        3,
        "2024-01-02",
        "2024-01-02T03:04:05Z",
        True,
    )
    assert [c.get("stars") for c in a.children()] == [5, 4]
    assert b.id == "B-2" and not b.has("price") and b.get("stock") == 0
    assert [c.get("stars") for c in b.children()] == [1]


# ----- MariaDB (scripts/services/mariadb.sh): the MySQL / MariaDB driver -----


def mariadb_url() -> str:
    return service_env("LUCILLE_TEST_MARIADB_URL", "mariadb.sh")


def mariadb_parts(url: str) -> tuple[str, str, str, str, str]:
    """(user, password, host, port, database) of mysql://user:password@host:port/database."""
    creds, rest = url.split("://", 1)[1].split("@", 1)
    user, password = creds.split(":", 1)
    location, database = rest.split("/", 1)
    host, port = location.split(":", 1)
    return user, password, host, port, database


def mariadb_sql(url: str, sql: str) -> None:
    user, password, host, port, database = mariadb_parts(url)
    subprocess.run(
        ["mariadb", "--no-defaults", f"-u{user}", f"-p{password}", f"-h{host}", f"-P{port}", database,
         "-e", sql],
        check=True,
    )


def test_mariadb_rows_and_children_through_the_cli(tmp_path: Path) -> None:
    url = mariadb_url()
    mariadb_sql(
        url,
        """
        DROP TABLE IF EXISTS lt_py_product, lt_py_review;
        CREATE TABLE lt_py_product (sku varchar(10) PRIMARY KEY, price decimal(8,2), stock int,
                                    added date, updated timestamp NULL, active boolean, note text);
        INSERT INTO lt_py_product VALUES
          ('A-1', 9.99, 3, '2024-01-02', '2024-01-02 03:04:05', true, 'héllo'),
          ('B-2', NULL, 0, NULL, NULL, false, NULL);
        CREATE TABLE lt_py_review (sku varchar(10), stars int);
        INSERT INTO lt_py_review VALUES ('A-1', 5), ('A-1', 4), ('B-2', 1);
        """,
    )
    user, password, host, port, database = mariadb_parts(url)
    out = tmp_path / "out.jsonl"
    conf = tmp_path / "mariadb.conf"
    conf.write_text(
        textwrap.dedent(
            f"""
            connectors: [{{
              name: "products", class: "com.kmwllc.lucille.connector.jdbc.DatabaseConnector",
              driver: "org.mariadb.jdbc.Driver",
              connectionString: "jdbc:mariadb://{host}:{port}/{database}?useSSL=false",
              jdbcUser: "{user}", jdbcPassword: "{password}",
              sql: "SELECT * FROM lt_py_product ORDER BY sku", idField: "SKU",
              otherSQLs: ["SELECT * FROM lt_py_review ORDER BY sku, stars DESC"],
              otherJoinFields: ["sku"], pipeline: "main"
            }}]
            pipelines: [{{ name: "main", stages: [] }}]
            indexer {{ type: "jsonl" }}
            jsonl {{ path: "{out}" }}
            """
        )
    )
    r = subprocess.run([sys.executable, "-m", "lucille.cli", "run", str(conf)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    docs = [json.loads(line) for line in out.read_text().splitlines()]
    a, b = sorted(docs, key=lambda d: str(d["id"]))
    assert {k: v for k, v in a.items() if k != "___children"} == {
        "id": "A-1", "sku": "A-1", "price": 9.99, "stock": 3, "added": "2024-01-02",
        "updated": "2024-01-02T03:04:05Z", "active": True, "note": "héllo",
    }
    assert {k: v for k, v in b.items() if k != "___children"} == {
        "id": "B-2", "sku": "B-2", "stock": 0, "active": False,
    }
    # The jsonl indexer writes parents only: the children, read on their own connection, as the
    # API sees them.
    result = lucille.run(str(conf), mode="test")
    assert result.status == "Success", result.summary
    a_doc, b_doc = result.documents
    assert [c.get("stars") for c in a_doc.children()] == [5, 4]
    assert [c.get("stars") for c in b_doc.children()] == [1]


def test_mariadb_errors_name_the_sql_and_the_server_error() -> None:
    url = mariadb_url()
    user, password, host, port, database = mariadb_parts(url)
    result = lucille.run(
        config={
            "connectors": [
                {
                    "name": "products",
                    "class": "DatabaseConnector",
                    "connectionString": f"jdbc:mysql://{host}:{port}/{database}",
                    "jdbcUser": user,
                    "jdbcPassword": password,
                    "sql": "SELECT * FROM lt_py_no_such_table",
                    "idField": "id",
                }
            ]
        },
        mode="test",
    )
    assert result.status == "Failure"
    assert "lt_py_no_such_table" in result.summary and "1146" in result.summary, result.summary
