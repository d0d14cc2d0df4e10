"""matview's materialized views against DuckDB as an oracle.

Randomized: for each seed (``MATVIEW_ORACLE_SEEDS`` of them, from
``MATVIEW_ORACLE_FIRST_SEED``), every query shape of ``oracle.queries`` is a materialized
view over the same tables. After every operation of the seed's workload, each view reading
the table it wrote (every view, after ``advance_time``, and at the end) must hold exactly
what DuckDB computes for its query from scratch. Views whose inputs did not change are left
unread until they do: they then catch up over several transactions in one dataflow step,
and skipping them halves the cost of a seed (each read of a changed view is a dataflow step
of several Spark jobs).

Deterministic: specific tricky cases with the expected contents written out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from matview.runtime.settings import IN_EXECUTORS
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import canonical
from tests.support.oracle.harness import (
    IN_FILES,
    KEYED_HISTORIES,
    check_views,
    oracle_seeds,
    sampled,
)
from tests.support.oracle.queries import QUERIES
from tests.support.oracle.workload import Row


@pytest.mark.slow
@pytest.mark.parametrize("seed", oracle_seeds())
def test_views_match_duckdb_after_every_operation(spark: SparkSession, seed: int) -> None:
    check_views(spark, seed)


@pytest.mark.slow
def test_views_match_duckdb_stepping_incrementally_with_every_lookup_broadcast(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """Every step incremental (never recomputed, which ``auto`` may choose), and a small
    step's lookup into an arrangement of more than ``large_lookup_rows`` rows broadcasting
    its own side instead of reading the arrangement in one partition: with the threshold
    below every size, every lookup does, and the views are the same (half the queries,
    interleaved; the other half is stepped by recomputing in ``test_subscribe``)."""
    runtime_settings(large_lookup_rows=-1)
    check_views(spark, oracle_seeds()[0] + 1, "incremental", sampled(QUERIES, 0, 2))


@pytest.mark.slow
def test_views_match_duckdb_with_every_collection_held_in_the_executors(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """Every batch of every table, view and operator's state held in the executors as
    Parquet files arranged by key, none in the driver, and read by key (``IN_EXECUTORS``):
    the views are the same (an eighth of the queries, interleaved: every step writes
    files)."""
    runtime_settings(**IN_EXECUTORS)
    check_views(spark, oracle_seeds()[0] + 2, queries=sampled(QUERIES, 1, 8))


@pytest.mark.slow
def test_views_match_duckdb_with_histories_held_in_files_and_read_by_key(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """A step's changes held in the driver and the histories they look up in files, read by
    key (the path of a large table's small step, ``KEYED_HISTORIES``): a join's keyed read
    of the files is fetched into the driver and bound into a slot (``get.fetched``), a
    write's check reads the retracted rows' keys; the views are the same (a twelfth of the
    queries, interleaved; all of them passed, in eighths, when it was written)."""
    runtime_settings(**KEYED_HISTORIES)
    check_views(spark, oracle_seeds()[0] + 3, queries=sampled(QUERIES, 2, 12))


@pytest.mark.slow
def test_views_match_duckdb_with_every_view_rehearsed_at_create(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """Every view rehearses a small step at CREATE (``Dataflow.rehearse``, which views over
    inputs this small skip by default: ``rehearsal_min_rows``), whose computed state is all
    abandoned: the views are the same (a quarter of the queries, interleaved)."""
    runtime_settings(rehearsal_min_rows=0)
    check_views(spark, oracle_seeds()[0] + 4, queries=sampled(QUERIES, 3, 4))


@pytest.mark.slow
def test_views_created_midway_over_indexed_tables_match_duckdb(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """Seed 004's import: views created halfway through a seed's operations, over tables
    indexed by their join columns, start from their inputs' live arrangements as they are
    then (compacted; every batch in Spark's files, with copies arranged by each index's
    key) and step on; they equal DuckDB as views built from the first rows do (a tenth of
    the queries, interleaved)."""
    runtime_settings(**IN_FILES)
    check_views(spark, oracle_seeds()[0] + 5, queries=sampled(QUERIES, 0, 10), midway=True)


# --- deterministic cases ------------------------------------------------------------------


def _connect(spark: SparkSession, *ddl: str) -> matview.Connection:
    con = matview.connect(clock=0, spark=spark)
    for statement in ddl:
        con.execute(statement)
    return con


def _view(con: matview.Connection, name: str) -> list[Row]:
    return canonical(con.execute(f"SELECT * FROM {name}").fetchall())


def _assert_view(con: matview.Connection, name: str, expected: Sequence[Row]) -> None:
    assert _view(con, name) == canonical(expected)


def test_update_moving_a_join_key(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE c (id INT, region TEXT)",
                   "CREATE TABLE o (id INT, cust INT, amount INT)")
    con.execute("INSERT INTO c VALUES (1, 'north'), (2, 'south')")
    con.execute("INSERT INTO o VALUES (10, 1, 5), (11, 1, 7), (12, 2, 1)")
    con.execute("CREATE MATERIALIZED VIEW j AS "
                "SELECT c.region, o.id, o.amount FROM c JOIN o ON c.id = o.cust")
    con.execute("CREATE MATERIALIZED VIEW g AS SELECT c.region, sum(o.amount) "
                "FROM c JOIN o ON c.id = o.cust GROUP BY c.region")
    _assert_view(con, "j", [("north", 10, 5), ("north", 11, 7), ("south", 12, 1)])
    con.execute("UPDATE o SET cust = 2 WHERE id = 11")
    _assert_view(con, "j", [("north", 10, 5), ("south", 11, 7), ("south", 12, 1)])
    _assert_view(con, "g", [("north", 5), ("south", 8)])
    con.execute("UPDATE c SET id = 3 WHERE region = 'north'")
    _assert_view(con, "j", [("south", 11, 7), ("south", 12, 1)])
    _assert_view(con, "g", [("south", 8)])


def test_deleting_every_row_of_a_group_removes_the_group(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE t (k TEXT, v INT)")
    con.execute("INSERT INTO t VALUES ('a', 1), ('a', 2), ('b', 3)")
    con.execute("CREATE MATERIALIZED VIEW g AS "
                "SELECT k, count(*), sum(v), min(v), max(v) FROM t GROUP BY k")
    _assert_view(con, "g", [("a", 2, 3, 1, 2), ("b", 1, 3, 3, 3)])
    con.execute("DELETE FROM t WHERE k = 'a'")
    _assert_view(con, "g", [("b", 1, 3, 3, 3)])
    con.execute("INSERT INTO t VALUES ('a', 9)")
    _assert_view(con, "g", [("a", 1, 9, 9, 9), ("b", 1, 3, 3, 3)])


def test_min_and_max_after_deleting_the_extremes(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE t (k TEXT, v INT)")
    con.insert("t", [("a", 1), ("a", 5), ("a", 9), ("a", 9), ("b", 4)])
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, min(v), max(v) FROM t GROUP BY k")
    _assert_view(con, "m", [("a", 1, 9), ("b", 4, 4)])
    con.delete("t", [("a", 9)])  # one of two copies of the maximum
    _assert_view(con, "m", [("a", 1, 9), ("b", 4, 4)])
    con.delete("t", [("a", 9)])
    _assert_view(con, "m", [("a", 1, 5), ("b", 4, 4)])
    con.execute("DELETE FROM t WHERE v = 1")
    _assert_view(con, "m", [("a", 5, 5), ("b", 4, 4)])
    con.execute("UPDATE t SET v = 0 WHERE k = 'b'")
    _assert_view(con, "m", [("a", 5, 5), ("b", 0, 0)])


def test_global_aggregate_of_an_emptied_table(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE t (v INT)")
    con.execute("INSERT INTO t VALUES (3), (NULL), (4)")
    con.execute("CREATE MATERIALIZED VIEW s AS "
                "SELECT count(*), count(v), sum(v), min(v), max(v) FROM t")
    _assert_view(con, "s", [(3, 2, 7, 3, 4)])
    con.execute("DELETE FROM t WHERE v IS NOT NULL")
    _assert_view(con, "s", [(1, 0, None, None, None)])
    con.delete("t", [(None,)])
    _assert_view(con, "s", [(0, 0, None, None, None)])
    con.insert("t", [(8,)])
    _assert_view(con, "s", [(1, 1, 8, 8, 8)])


def test_writes_after_a_read_at_the_same_clock_reading_are_seen(spark: SparkSession) -> None:
    """A view read (or created) at the clock's current time, then a write: the write's time
    must come after the read, or the view never sees it."""
    con = _connect(spark, "CREATE TABLE t (v INT)")
    con.execute("CREATE MATERIALIZED VIEW s AS SELECT count(*), sum(v) FROM t")
    _assert_view(con, "s", [(0, None)])
    con.execute("INSERT INTO t VALUES (3), (4)")
    _assert_view(con, "s", [(2, 7)])
    con.advance_time(con.now + 100)
    _assert_view(con, "s", [(2, 7)])
    con.execute("INSERT INTO t VALUES (5)")
    _assert_view(con, "s", [(3, 12)])
    con.execute("INSERT INTO t VALUES (6)")
    _assert_view(con, "s", [(4, 18)])


def test_null_join_keys_never_match(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE l (k INT, x TEXT)", "CREATE TABLE r (k INT, y TEXT)")
    con.execute("INSERT INTO l VALUES (NULL, 'l-null'), (1, 'l-one')")
    con.execute("INSERT INTO r VALUES (NULL, 'r-null'), (2, 'r-two')")
    con.execute("CREATE MATERIALIZED VIEW j AS SELECT l.x, r.y FROM l JOIN r ON l.k = r.k")
    con.execute("CREATE MATERIALIZED VIEW w AS SELECT l.x, r.y FROM l, r WHERE l.k = r.k")
    _assert_view(con, "j", [])
    _assert_view(con, "w", [])
    con.execute("INSERT INTO r VALUES (NULL, 'r-null-2'), (1, 'r-one')")
    _assert_view(con, "j", [("l-one", "r-one")])
    con.execute("UPDATE l SET k = 2 WHERE k IS NULL")
    _assert_view(con, "j", [("l-null", "r-two"), ("l-one", "r-one")])
    _assert_view(con, "w", [("l-null", "r-two"), ("l-one", "r-one")])


def test_duplicate_rows_keep_their_multiplicity(spark: SparkSession) -> None:
    con = _connect(spark, "CREATE TABLE t (a INT, b TEXT)")
    con.insert("t", [(1, "x"), (1, "x"), (1, "x"), (2, "y")])
    con.execute("CREATE MATERIALIZED VIEW f AS SELECT a, b FROM t WHERE a < 5")
    con.execute("CREATE MATERIALIZED VIEW d AS SELECT DISTINCT a, b FROM t")
    con.execute("CREATE MATERIALIZED VIEW c AS SELECT b, count(*) FROM t GROUP BY b")
    con.execute("CREATE MATERIALIZED VIEW u AS SELECT a FROM t UNION ALL SELECT a FROM t")
    _assert_view(con, "f", [(1, "x")] * 3 + [(2, "y")])
    _assert_view(con, "d", [(1, "x"), (2, "y")])
    _assert_view(con, "c", [("x", 3), ("y", 1)])
    _assert_view(con, "u", [(1,)] * 6 + [(2,)] * 2)
    con.delete("t", [(1, "x")])
    _assert_view(con, "f", [(1, "x")] * 2 + [(2, "y")])
    _assert_view(con, "d", [(1, "x"), (2, "y")])
    _assert_view(con, "c", [("x", 2), ("y", 1)])
    con.execute("INSERT INTO t VALUES (2, 'y')")
    con.delete("t", [(1, "x"), (1, "x")])
    _assert_view(con, "f", [(2, "y")] * 2)
    _assert_view(con, "d", [(2, "y")])
    _assert_view(con, "c", [("y", 2)])
    _assert_view(con, "u", [(2,)] * 4)
