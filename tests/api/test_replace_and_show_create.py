"""``CREATE OR REPLACE [MATERIALIZED] VIEW`` and ``SHOW CREATE TABLE | VIEW | MATERIALIZED
VIEW``: a replaced materialized view is maintained by its new dataflow from the next write
on (a reader in another thread never finds it missing); a view keeps its columns as
PostgreSQL requires; what other objects read, or what the new definition reads, is not
replaced; the statements SHOW CREATE prints create the same objects again."""

from __future__ import annotations

import threading

import pytest
from pyspark.sql import SparkSession

import matview


def _connect(spark: SparkSession) -> matview.Connection:
    con = matview.connect(clock=0, spark=spark)
    con.execute('CREATE TABLE t (k INT, "Label" TEXT, price NUMERIC(12, 2), tags INT[])')
    con.execute("INSERT INTO t VALUES (1, 'a', 1.50, ARRAY[1]), (2, 'b', 2.25, NULL), "
                "(2, 'c', NULL, ARRAY[2, 3])")
    return con


def test_a_materialized_view_is_replaced_while_readers_read_it(spark: SparkSession) -> None:
    con = _connect(spark)
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, count(*) AS n FROM t GROUP BY k")
    missing: list[Exception] = []
    done = threading.Event()

    def read() -> None:
        reader = con.cursor()
        while not done.is_set():
            try:
                reader.execute("SELECT count(*) FROM m").fetchall()
            except matview.Error as error:
                missing.append(error)

    thread = threading.Thread(target=read)
    thread.start()
    try:
        con.execute("CREATE OR REPLACE MATERIALIZED VIEW m AS "
                    "SELECT k, sum(price) AS total, max(\"Label\") AS top FROM t GROUP BY k")
    finally:
        done.set()
        thread.join()
    assert missing == []
    assert sorted(con.execute("SELECT * FROM m").fetchall()) == [
        (1, 1.5, "a"), (2, 2.25, "c")]
    con.execute("INSERT INTO t VALUES (1, 'z', 1.00, NULL)")
    assert sorted(con.execute("SELECT * FROM m").fetchall()) == [
        (1, 2.5, "z"), (2, 2.25, "c")]
    assert con.execute("SHOW MATERIALIZED VIEWS").fetchall() == [("m",)]


def test_a_view_is_replaced_keeping_its_columns(spark: SparkSession) -> None:
    con = _connect(spark)
    con.execute("CREATE VIEW v AS SELECT k, \"Label\" FROM t")
    con.execute("CREATE OR REPLACE VIEW v AS SELECT k, \"Label\", price FROM t WHERE k = 2")
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [
        (2, "b", 2.25), (2, "c", None)]
    for query, message in [
            ("SELECT k FROM t", "cannot drop columns from view"),
            ('SELECT k AS key, "Label", price FROM t',
             'cannot change name of view column "k" to "key"'),
            ('SELECT k::bigint AS k, "Label", price FROM t',
             'cannot change data type of view column "k" from int to bigint')]:
        with pytest.raises(matview.ProgrammingError, match=message):
            con.execute(f"CREATE OR REPLACE VIEW v AS {query}")
    con.execute("CREATE OR REPLACE VIEW fresh AS SELECT 1 AS one")  # none to replace
    con.execute("CREATE MATERIALIZED VIEW above AS SELECT count(*) AS n FROM v")
    refused = [
        ("CREATE OR REPLACE VIEW v AS SELECT k, \"Label\", price FROM t",
         'cannot replace view "v" because other objects depend on it: above'),
        ("CREATE OR REPLACE MATERIALIZED VIEW v AS SELECT 1",
         '"v" is a view, not a materialized view'),
        ("CREATE OR REPLACE VIEW t AS SELECT 1", '"t" is a table, not a view'),
        ("CREATE OR REPLACE MATERIALIZED VIEW above AS SELECT count(*) AS n FROM above",
         'cannot replace materialized view "above": its new definition reads it'),
    ]
    for sql, message in refused:
        with pytest.raises(matview.ProgrammingError, match=message):
            con.execute(sql)
    assert con.execute("SELECT * FROM above").fetchall() == [(2,)]


def test_show_create_prints_statements_that_create_the_same_objects(
        spark: SparkSession) -> None:
    con = _connect(spark)
    con.execute("CREATE VIEW v (key, label) AS SELECT k, \"Label\" FROM t WHERE k > 1")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, count(*) AS n FROM t GROUP BY k "
                "ORDER BY n DESC LIMIT 1")
    shown = {name: con.execute(f"SHOW CREATE {kind} {name}").fetchall()
             for kind, name in (("TABLE", "t"), ("VIEW", "v"), ("MATERIALIZED VIEW", "m"))}
    assert shown["t"] == [
        ("t", 'CREATE TABLE t (k int, "Label" text, price numeric(12,2), tags int[])')]
    assert shown["v"] == [
        ("v", 'CREATE VIEW v (key, label) AS SELECT k, "Label" FROM t WHERE k > 1')]
    assert shown["m"] == [
        ("m", "CREATE MATERIALIZED VIEW m (k, n) AS SELECT k, COUNT(*) AS n FROM t "
              "GROUP BY k ORDER BY n DESC LIMIT 1")]
    other = matview.connect(clock=0, spark=spark)
    for name in ("t", "v", "m"):
        other.execute(shown[name][0][1])
    other.execute("INSERT INTO t SELECT * FROM (VALUES (3, 'x', 1.00, NULL::int[])) AS r")
    assert other.execute("SHOW COLUMNS FROM t").fetchall() == \
        con.execute("SHOW COLUMNS FROM t").fetchall()
    assert other.execute("SELECT * FROM v").fetchall() == [(3, "x")]
    assert other.execute("SELECT * FROM m").fetchall() == [(3, 1)]
    with pytest.raises(matview.ProgrammingError, match='"v" is a view, not a table'):
        con.execute("SHOW CREATE TABLE v")
    with pytest.raises(matview.ProgrammingError, match='view "nope" does not exist'):
        con.execute("SHOW CREATE VIEW nope")
