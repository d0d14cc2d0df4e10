"""Kept reads (``Controller.read_once``, ``Dataflow.reread``): a SELECT run again over the same
stored collections runs the plans the last one built, over the snapshots the driver holds
bound into slots. From its second run on it makes no DataFrame call and collects the same
frame, in the driver, while its rows follow every write (DuckDB computes them from scratch)
and its errors come and go with the rows that cause them."""

from __future__ import annotations

import duckdb
import pytest
from matview.runtime.spark import jvm_plans
from pyspark.sql import DataFrame, SparkSession

import matview
from matview.errors import DataError
from tests.support.dataframe_calls import dataframe_calls
from tests.support.oracle.harness import IN_FILES

DDL = ("CREATE TABLE a (k INT, v INT)", "CREATE TABLE b (k INT, w TEXT)")

QUERIES = {
    "global aggregate": "SELECT count(*), sum(v) FROM a WHERE v > 5",
    "group by": "SELECT k, count(*) AS n, max(v) AS m FROM a GROUP BY k",
    "join": "SELECT a.v, b.w FROM a JOIN b ON a.k = b.k WHERE a.v < 30",
    "except": "SELECT k FROM a EXCEPT SELECT k FROM b WHERE k < 4",
    "constant": "SELECT * FROM (VALUES (1), (2), (3)) t(x) UNION ALL SELECT k FROM a "
                "WHERE v = 3",
    "ordered limit": "SELECT v, k FROM a ORDER BY v DESC, k LIMIT 4",
}


def _both(con: matview.Connection, db: duckdb.DuckDBPyConnection, sql: str) -> None:
    for side in (con, db):
        side.execute(sql)


def _rows(rows: list[tuple[object, ...]], ordered: bool) -> list[tuple[object, ...]]:
    out = [tuple(r) for r in rows]
    return out if ordered else sorted(out, key=repr)


WRITES = ["INSERT INTO a VALUES (3, 100), (6, 3)", "DELETE FROM a WHERE v < 4",
          "INSERT INTO b VALUES (3, 'w')", "DELETE FROM b WHERE k = 1",
          "UPDATE a SET v = v + 1 WHERE k = 2", "INSERT INTO a VALUES (9, 3)"]


def _filled(spark: SparkSession, **settings: int
            ) -> tuple[matview.Connection, duckdb.DuckDBPyConnection]:
    con = matview.connect(clock=0, spark=spark, settings=settings)
    db = duckdb.connect()
    for statement in DDL:
        _both(con, db, statement)
    con.insert("a", [(i % 7, i) for i in range(40)])
    db.executemany("INSERT INTO a VALUES (?, ?)", [(i % 7, i) for i in range(40)])
    _both(con, db, "INSERT INTO b VALUES (1, 'x'), (2, 'y'), (5, 'z')")
    return con, db


def test_reads_of_batches_in_files_equal_duckdb(spark: SparkSession) -> None:
    """With every batch held in the executors' files (read as frames, not bound into
    slots), each query read again after each write equals DuckDB's answer: the rows of
    every batch are at the read's one time, the later ones' retractions cancelling the
    earlier ones' rows."""
    con, db = _filled(spark, **IN_FILES)
    for write in WRITES:
        _both(con, db, write)
        for sql in QUERIES.values():
            ordered = "ORDER BY" in sql
            assert _rows(con.execute(sql).fetchall(), ordered) == _rows(
                db.execute(sql).fetchall(), ordered), (write, sql)
    con.close()


@pytest.mark.parametrize("name", QUERIES)
def test_a_read_run_again_reuses_its_plans(spark: SparkSession, peek_collects: list[DataFrame],
                                           name: str) -> None:
    """After each of six writes (inserts and deletes on both tables, the sizes kept in
    one slot's room), the query equals DuckDB's answer; from the second read on it calls
    no DataFrame method and collects the frame the read before collected, its kept plan
    run again (in the driver, without a job, unless it limits its rows)."""
    sql = QUERIES[name]
    con, db = _filled(spark)
    previous: DataFrame | None = None
    for i, write in enumerate(["SELECT 1", *WRITES]):
        _both(con, db, write)
        peek_collects.clear()
        with dataframe_calls() as called:
            got = con.execute(sql).fetchall()
        ordered = "ORDER BY" in sql
        assert _rows(got, ordered) == _rows(db.execute(sql).fetchall(), ordered), (i, write)
        (frame,) = peek_collects
        if i >= 1:
            assert called == [], (i, called)
            assert frame is previous, i
            kept = jvm_plans._prepared.get(frame)
            assert kept, i  # its physical plan run again
            # in the driver, but for a LIMIT (a plan Spark shuffles: ``ArrowCollect``)
            assert (kept[2] is not None) == ("LIMIT" not in sql), i
        previous = frame
    con.close()


def test_a_kept_read_raises_the_errors_its_rows_cause(spark: SparkSession) -> None:
    """A division by zero appears in a repeated read once a row with a zero divisor is
    inserted, and leaves it once that row is deleted."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE a (k INT, v INT)")
    con.insert("a", [(i, i + 1) for i in range(10)])
    sql = "SELECT k, 100 / v AS q FROM a WHERE k < 3"
    assert sorted(con.execute(sql).fetchall()) == [(0, 100), (1, 50), (2, 33)]
    con.execute("INSERT INTO a VALUES (1, 0)")
    with pytest.raises(DataError, match="division by zero"):
        con.execute(sql).fetchall()
    con.execute("DELETE FROM a WHERE v = 0")
    assert sorted(con.execute(sql).fetchall()) == [(0, 100), (1, 50), (2, 33)]
    con.close()


def test_a_kept_read_follows_the_collection_its_name_denotes(spark: SparkSession) -> None:
    """A table dropped and created again under its name is another stored collection: the
    read kept over the old one is not run over it; an ``AS OF`` read of an earlier time,
    after a read now, reads that time's rows."""
    con = matview.connect(clock=0, spark=spark, settings={"retain_history": 1 << 40})
    sql = "SELECT k, sum(v) FROM a GROUP BY k"
    con.execute("CREATE TABLE a (k INT, v INT)")
    con.execute("INSERT INTO a VALUES (1, 10), (2, 20)")
    then = con.execute("SELECT mz_now()").fetchall()[0][0]
    con.execute("INSERT INTO a VALUES (1, 5)")
    assert sorted(con.execute(sql).fetchall()) == [(1, 15), (2, 20)]
    assert sorted(con.execute(f"{sql} AS OF {then}").fetchall()) == [(1, 10), (2, 20)]
    assert sorted(con.execute(sql).fetchall()) == [(1, 15), (2, 20)]
    con.execute("DROP TABLE a")
    con.execute("CREATE TABLE a (k INT, v INT)")
    con.execute("INSERT INTO a VALUES (3, 7)")
    assert con.execute(sql).fetchall() == [(3, 7)]
    con.close()


def test_reads_kept_bounds_the_reads_whose_plans_are_kept(spark: SparkSession) -> None:
    """With ``reads_kept = 1``, two queries read in turn each build their plans again (a
    DataFrame call each time); with the default both are kept."""
    queries = ["SELECT k FROM a WHERE v > 1", "SELECT v FROM a WHERE k = 2"]
    for kept, builds in ((1, True), (16, False)):
        con = matview.connect(clock=0, spark=spark, settings={"reads_kept": kept})
        con.execute("CREATE TABLE a (k INT, v INT)")
        con.execute("INSERT INTO a VALUES (1, 1), (2, 2)")
        for sql in queries:
            con.execute(sql).fetchall()
        for sql in queries:
            with dataframe_calls() as called:
                con.execute(sql).fetchall()
            assert bool(called) == builds, (kept, sql, called)
        con.close()
