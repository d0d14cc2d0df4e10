"""Column defaults (``sql.constraints.default_value``): ``DEFAULT expr`` in CREATE TABLE,
used by an INSERT that omits the column or writes ``DEFAULT``, by ``INSERT ... DEFAULT
VALUES`` and by ``UPDATE ... SET c = DEFAULT``, as DuckDB does; kept by SHOW CREATE TABLE
and a durable database."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import DataError, NotSupportedError, ProgrammingError

TABLE = ("CREATE TABLE t (k INT PRIMARY KEY, a INT DEFAULT -1, b TEXT DEFAULT 'x' NOT NULL, "
         "c NUMERIC(5, 2) DEFAULT 1.5, d INT, e DATE DEFAULT DATE '2020-01-02')")
WRITES = ["INSERT INTO t (k) VALUES (1)",
          "INSERT INTO t VALUES (2, DEFAULT, DEFAULT, 3, 4, DEFAULT)",
          "INSERT INTO t (k, d) SELECT 3, 9",
          "INSERT INTO t (d, k) VALUES (5, 4), (6, 5)",
          "UPDATE t SET a = DEFAULT, c = 7 WHERE k = 2",
          "INSERT INTO t (k, a) VALUES (6, 0) ON CONFLICT (k) DO UPDATE SET a = DEFAULT",
          "INSERT INTO t (k, a) VALUES (6, 0) ON CONFLICT (k) DO UPDATE SET a = 10"]


def test_defaults_equal_duckdbs(spark: SparkSession, tmp_path: Path) -> None:
    oracle = duckdb.connect()
    with matview.connect(tmp_path / "db", spark=spark) as con:
        for db in (con, oracle):
            db.execute(TABLE)
            for sql in WRITES:
                db.execute(sql)
        assert sorted(con.execute("SELECT * FROM t").fetchall()) == \
            sorted(oracle.execute("SELECT * FROM t").fetchall())
        con.execute("CREATE TABLE u (x INT DEFAULT 5, y TEXT DEFAULT 'q' || 'r', z INT)")
        con.execute("INSERT INTO u DEFAULT VALUES")
        assert con.execute("SELECT * FROM u").fetchall() == [(5, "qr", None)]
    with matview.connect(tmp_path / "db", spark=spark) as con:  # kept by a durable database
        assert "b text DEFAULT 'x' NOT NULL" in con.execute("SHOW CREATE TABLE t").fetchall()[0][1]
        con.execute("INSERT INTO t (k) VALUES (7)")
        assert con.execute("SELECT a, b, e FROM t WHERE k = 7").fetchall() == [
            (-1, "x", oracle.execute("SELECT DATE '2020-01-02'").fetchone()[0])]


def test_defaults_are_checked_at_create_and_run_at_each_insert(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    refusals = [
        ("CREATE TABLE w (a INT DEFAULT b)", ProgrammingError,
         "cannot use column reference in DEFAULT expression"),
        ("CREATE TABLE w (a INT DEFAULT 'zz')", ProgrammingError,
         'invalid input syntax for type integer: "zz"'),
        ("CREATE TABLE w (a INT DEFAULT (SELECT 1))", NotSupportedError,
         "cannot use subquery in DEFAULT expression"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message):
            con.execute(sql)
    assert con.execute("SHOW TABLES").fetchall() == []
    con.execute("CREATE TABLE w (a INT DEFAULT 1 / 0, b INT)")  # evaluated at each INSERT
    with pytest.raises(DataError, match="division by zero"):
        con.execute("INSERT INTO w (b) VALUES (1)")
    con.execute("INSERT INTO w VALUES (2, 2)")
    assert con.execute("SELECT * FROM w").fetchall() == [(2, 2)]
