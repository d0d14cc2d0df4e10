"""Indexes (``matview.indexes``): ``CREATE [DEFAULT] INDEX``, ``DROP INDEX``, ``SHOW
INDEXES``; an index arranges its collection by its key now and at every later step, shared
by the views created before and after it; a SELECT pinning its key reads only those keys;
EXPLAIN names it; a durable database keeps it."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from uuid import UUID

import duckdb
import pytest
from matview.runtime.arrangements.trace import Trace
from pyspark.sql import SparkSession

import matview
from matview.errors import DataError, NotSupportedError, ProgrammingError
from tests.support.oracle.harness import IN_FILES


def test_indexes_are_created_shown_and_dropped(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (a INT, b TEXT, c DOUBLE)")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT b, count(*) AS n FROM t GROUP BY b")
    con.execute("CREATE VIEW v AS SELECT a FROM t")
    con.execute("CREATE INDEX ON t (a)")
    con.execute("CREATE INDEX tb ON t (b, a)")
    con.execute("CREATE DEFAULT INDEX ON m")
    con.execute("CREATE INDEX IF NOT EXISTS tb ON t (a)")  # exists: nothing
    assert con.execute("SHOW INDEXES").fetchall() == [
        ("m_primary_idx", "m", "{b, n}"), ("t_a_idx", "t", "{a}"), ("tb", "t", "{b, a}")]
    assert con.execute("SHOW INDEXES ON m").fetchall() == [("m_primary_idx", "m", "{b, n}")]
    refusals = [
        ("CREATE INDEX tb ON t (a)", ProgrammingError, 'relation "tb" already exists'),
        ("CREATE INDEX m ON t (a)", ProgrammingError, 'relation "m" already exists'),
        ("CREATE INDEX ON t (c)", NotSupportedError, 'only integer, text and uuid keys'),
        ("CREATE INDEX ON t (a + 1)", NotSupportedError, "keys other than columns"),
        ("CREATE INDEX ON t (z)", ProgrammingError, 'column "z" does not exist'),
        ("CREATE INDEX i ON t", ProgrammingError, "an index needs key columns"),
        ("CREATE INDEX ON v (a)", NotSupportedError, "a view that is not materialized"),
        ("CREATE INDEX ON nope (a)", ProgrammingError, 'relation "nope" does not exist'),
        ("CREATE UNIQUE INDEX ON t (a)", NotSupportedError, "UNIQUE is not supported"),
        ("DROP INDEX nope", ProgrammingError, 'index "nope" does not exist'),
        ("SHOW INDEXES ON nope", ProgrammingError, 'relation "nope" does not exist'),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message):
            con.execute(sql)
    con.execute("DROP INDEX tb")
    con.execute("DROP INDEX IF EXISTS tb")
    assert [r[0] for r in con.execute("SHOW INDEXES ON t").fetchall()] == ["t_a_idx"]
    con.execute("DROP VIEW v")
    con.execute("DROP TABLE t CASCADE")  # its indexes go with it, and m's with m
    assert con.execute("SHOW INDEXES").fetchall() == []


def test_an_index_arranges_its_table_now_and_at_every_later_step(
        spark: SparkSession) -> None:
    """The batches held in files get a copy arranged by the key when the index is created
    and as they are written; the views joining by it, created before and after it, read
    that one trace by key and equal DuckDB."""
    con = matview.connect(spark=spark, clock=0, settings=IN_FILES)
    oracle = duckdb.connect()
    ddl = ["CREATE TABLE orders (id INT, cust INT, amount INT)",
           "CREATE TABLE customers (cust INT, region TEXT)"]
    for sql in ddl:
        con.execute(sql)
        oracle.execute(sql)
    view = ("SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM orders o "
            "JOIN customers c ON o.cust = c.cust GROUP BY c.region")
    inserts = ["INSERT INTO customers VALUES (1, 'north'), (2, 'south'), (3, 'north')",
               "INSERT INTO orders VALUES (1, 1, 10), (2, 2, 20), (3, 3, 30), (4, 1, 5)"]
    for sql in inserts:
        con.execute(sql)
        oracle.execute(sql)
    con.execute(f"CREATE MATERIALIZED VIEW before AS {view}")
    con.execute("CREATE INDEX ON orders (cust)")
    trace = _trace(con, "orders")
    assert "c1" in trace.keys
    assert all("c1" in b.leaf.files.copies for b in trace.batches if b.leaf.files)
    con.execute(f"CREATE MATERIALIZED VIEW after AS {view}")
    for i in range(5, 11):
        changes = [f"INSERT INTO orders VALUES ({i}, {i % 3 + 1}, {i * 7}), "
                   f"({i + 100}, {(i + 1) % 3 + 1}, {i})",
                   f"INSERT INTO customers VALUES ({i % 3 + 1}, 'east')"]
        for sql in changes:
            con.execute(sql)
            oracle.execute(sql)
        expected = Counter(oracle.execute(view).fetchall())
        for name in ("before", "after"):
            assert Counter(con.execute(f"SELECT * FROM {name}").fetchall()) == expected
    assert all("c1" in b.leaf.files.copies for b in trace.batches if b.leaf.files)
    engine = con._engine_for_use()
    readers = [op.trace for name in ("before", "after")
               for op in engine.catalog.entries[name].dataflow.sources()  # type: ignore
               if op.name == "orders"]
    assert len(readers) == 2 and all(r is trace for r in readers)  # one arrangement, shared
    assert trace.file_reads.by_key + trace.file_reads.in_driver > 0


def _trace(con: matview.Connection, name: str) -> Trace:
    trace = con._engine_for_use().catalog.entries[name].trace
    assert trace is not None
    return trace


@pytest.mark.parametrize("settings", [{}, IN_FILES], ids=["driver", "files"])
def test_a_select_pinning_an_index_key_reads_only_those_keys(
        spark: SparkSession, settings: dict[str, int]) -> None:
    con = matview.connect(spark=spark, settings=settings)
    con.execute("CREATE TABLE t (a BIGINT, b TEXT, u UUID)")
    con.insert("t", [(i, f"b{i % 7}", UUID(int=i)) for i in range(200)] + [(None, "none", None)])
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT b, count(*) AS n, 100 / (min(a) + 1) AS q "
                "FROM t GROUP BY b")
    queries = {"SELECT b FROM t WHERE a = 42": [("b0",)],
               "SELECT a, b FROM t WHERE a IN (3, 4, 400)": [(3, "b3"), (4, "b4")],
               f"SELECT a FROM t WHERE u = '{str(UUID(int=5)).upper()}'": [(5,)],
               "SELECT a FROM t WHERE b = 'b2' AND a < 20": [(2,), (9,), (16,)],
               "SELECT n FROM m WHERE b = 'b1'": [(29,)],
               "SELECT b FROM t WHERE a = 42 OR a = 7 OR a = 99999999999": [("b0",), ("b0",)]}
    table, view = _trace(con, "t"), _trace(con, "m")
    scans: list[Trace] = []
    for trace in (table, view):  # a read of all of either, from its first time, is a scan
        trace.read_parts = lambda after=None, upto=None, _read=trace.read_parts, _t=trace: (
            scans.append(_t) if after is None else None, _read(after, upto))[1]  # type: ignore
    for sql, rows in queries.items():  # without an index: scans
        assert sorted(con.execute(sql).fetchall()) == rows
    assert len(scans) == len(queries)
    con.execute("CREATE INDEX ON t (a)")
    con.execute("CREATE INDEX ON t (b)")
    con.execute("CREATE INDEX ON t (u)")
    con.execute("CREATE INDEX ON m (b)")
    scans.clear()
    for sql, rows in queries.items():
        assert sorted(con.execute(sql).fetchall()) == rows
    assert scans == []
    con.execute("INSERT INTO t VALUES (-1, 'b0', NULL)")  # m's min(a) + 1 is 0 for b0: 100 / 0
    with pytest.raises(DataError, match="division by zero"):
        con.execute("SELECT count(*) FROM m")  # a scan, after m steps
    scans.clear()
    with pytest.raises(DataError, match="division by zero"):
        con.execute("SELECT n FROM m WHERE b = 'b1'")  # the view's errors are its readers'
    assert scans == []


def test_explain_names_the_indexes_a_plan_reads(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (a INT, b TEXT)")
    con.execute("CREATE TABLE u (a INT)")
    con.execute("CREATE INDEX t_by_a ON t (a)")
    text = con.explain("SELECT t.b FROM t JOIN u ON t.a = u.a", stage="physical")
    used = text[text.index("Used Indexes:"):].splitlines()
    assert [line for line in used if "index" in line.split("(", 1)[-1]] == [
        line for line in used if line.startswith("  - t ")]
    assert "; index t_by_a (a))" in text


def test_a_durable_database_keeps_its_indexes(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path / "db", spark=spark, settings=IN_FILES) as con:
        con.execute("CREATE TABLE t (a INT, b TEXT)")
        con.execute("INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')")
        con.execute("CREATE INDEX ON t (b)")
    with matview.connect(tmp_path / "db", spark=spark, settings=IN_FILES) as con:
        assert con.execute("SHOW INDEXES").fetchall() == [("t_b_idx", "t", "{b}")]
        assert "c1" in _trace(con, "t").keys
        assert con.execute("SELECT a FROM t WHERE b = 'y'").fetchall() == [(2,)]
