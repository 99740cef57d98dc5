"""QueryDatabase: per-document SQL lookups through a whole run, on SQLite (always) and on the
real PostgreSQL and MariaDB servers of scripts/services/postgres.sh and mariadb.sh."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import lucille
from services import service_env


def lookup_config(connection: str, driver: str) -> dict[str, Any]:
    return {
        "connectors": [{"name": "seq", "class": "SequenceConnector", "numDocs": 4, "pipeline": "p"}],
        "pipelines": [{"name": "p", "stages": [
            # The sequence ids are "0".."3": look each up as an integer key.
            {"class": "CopyFields", "fieldMapping": {"id": "animal"}},
            {"class": "com.kmwllc.lucille.stage.QueryDatabase", "driver": driver,
             "connectionString": connection, "jdbcUser": "", "jdbcPassword": "",
             "sql": "SELECT name, weight FROM animal WHERE id = ? ORDER BY name",
             "keyFields": ["animal"], "inputTypes": ["Long"],
             "fieldMapping": {"name": "names", "weight": "weights"}},
        ]}],
    }


def check(result: lucille.RunResult) -> None:
    docs = {d.id: d.to_dict() for d in result.documents}
    failed = {i: m for i, kind, m in result.events if kind == "FAIL"}
    # "0" matches no row: nothing added; "1" two rows: multi-valued; "3": a NULL weight left out.
    assert "names" not in docs["0"]
    assert docs["1"]["names"] == ["Blaze", "Matt"] and docs["1"]["weights"] == [4, 80]
    assert docs["2"]["names"] == "Sonny" and docs["2"]["weights"] == 5
    assert docs["3"]["names"] == "Tiger" and "weights" not in docs["3"]
    assert not failed, failed


def test_sqlite_lookups_in_a_run(tmp_path: Path) -> None:
    db = tmp_path / "zoo.db"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE animal(id INT, name TEXT, weight INT);"
        "INSERT INTO animal VALUES (1, 'Matt', 80), (1, 'Blaze', 4), (2, 'Sonny', 5), (3, 'Tiger', NULL);"
    )
    conn.commit()
    conn.close()
    result = lucille.run(config=lookup_config(f"jdbc:sqlite:{db}", "org.sqlite.JDBC"), mode="test")
    check(result)


def test_postgres_lookups_in_a_run() -> None:
    url = service_env("LUCILLE_TEST_POSTGRES_URL", "postgres.sh")
    subprocess.run(
        ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", url, "-c",
         "DROP TABLE IF EXISTS animal; CREATE TABLE animal(id INT, name TEXT, weight SMALLINT);"
         "INSERT INTO animal VALUES (1, 'Matt', 80), (1, 'Blaze', 4), (2, 'Sonny', 5), (3, 'Tiger', NULL);"],
        check=True,
    )
    # inputTypes says Long; the column is INT: the parameter is sent as the column's type, as a
    # JDBC driver converts setLong for an int parameter.
    result = lucille.run(config=lookup_config(url, "org.postgresql.Driver"), mode="test")
    check(result)


def test_mariadb_lookups_in_a_run() -> None:
    url = service_env("LUCILLE_TEST_MARIADB_URL", "mariadb.sh")
    creds, rest = url.split("://", 1)[1].split("@", 1)
    user, password = creds.split(":", 1)
    location, database = rest.split("/", 1)
    host, port = location.split(":", 1)
    subprocess.run(
        ["mariadb", "--no-defaults", f"-u{user}", f"-p{password}", f"-h{host}", f"-P{port}", database,
         "-e", "DROP TABLE IF EXISTS animal; CREATE TABLE animal(id INT, name TEXT, weight SMALLINT);"
         "INSERT INTO animal VALUES (1, 'Matt', 80), (1, 'Blaze', 4), (2, 'Sonny', 5), (3, 'Tiger', NULL);"],
        check=True,
    )
    config = lookup_config(f"jdbc:mysql://{location}/{database}", "com.mysql.cj.jdbc.Driver")
    stage = config["pipelines"][0]["stages"][1]
    stage["jdbcUser"], stage["jdbcPassword"] = user, password
    check(lucille.run(config=config, mode="test"))


def test_an_unreachable_database_fails_every_document_with_the_reason(tmp_path: Path) -> None:
    config = lookup_config(f"jdbc:sqlite:{tmp_path / 'missing.db'}", "org.sqlite.JDBC")
    config["pipelines"][0]["stages"][1]["connectionRetryPause"] = 1
    result = lucille.run(config=config, mode="test")
    failed = [m for _, kind, m in result.events if kind == "FAIL"]
    assert len(failed) == 4, result.summary
    assert all(m is not None and "missing.db" in m for m in failed), json.dumps(failed)
