"""A join producing more rows in one step than ``max_join_rows`` fails with an error naming
the join, before running when its size is known (cross products), else while it runs (per
partition of its output: a step starting from more changes than the limit is no runaway); the
connection goes on working and the failed statement changed nothing (a view whose refresh
fails so reports it on every read until its inputs shrink, or it is dropped)."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import matview


def _numbers(n: int) -> pa.Table:
    return pa.table({"a": pa.array(range(n), pa.int32())})


def test_an_exploding_cross_join_fails_at_once(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE l (a INT)")
    con.execute("CREATE TABLE r (a INT)")
    con.insert("l", _numbers(10_000))
    con.insert("r", _numbers(10_000))
    started = time.monotonic()
    with pytest.raises(matview.DataError, match=r"Join %\d+ would produce up to 100,000,000"):
        con.execute("CREATE MATERIALIZED VIEW boom AS SELECT l.a, r.a AS b FROM l, r")
    assert time.monotonic() - started < 60  # refused from the sizes, not after running
    with pytest.raises(matview.ProgrammingError):
        con.execute("SELECT * FROM boom")  # nothing was created
    assert con.execute("SELECT count(*) FROM l").fetchall() == [(10_000,)]


def test_a_skewed_join_is_counted_while_it_runs(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark, max_join_rows=1_000)
    con.execute("CREATE TABLE l (k INT, a INT)")
    con.execute("CREATE TABLE r (k INT, b INT)")
    con.execute("CREATE MATERIALIZED VIEW j AS SELECT l.a, r.b FROM l JOIN r ON l.k = r.k")
    con.insert("l", [(1, i) for i in range(40)])
    con.insert("r", [(1, i) for i in range(40)])  # 1,600 joined rows, all on key 1
    for _ in range(2):  # the failed step changed nothing: it fails again the same way
        with pytest.raises(matview.DataError, match=r"Join %\d+ produced more than 1000 rows"):
            con.execute("SELECT count(*) FROM j")
        assert con.execute("SELECT count(*) FROM r").fetchall() == [(40,)]
    con.execute("DROP MATERIALIZED VIEW j")


def test_a_join_of_more_changes_than_the_limit_is_no_runaway(spark: SparkSession) -> None:
    """A view's first step over a table larger than ``max_join_rows`` starts from all its
    rows; joined by key, no partition produces more than the limit, so it builds."""
    con = matview.connect(clock=0, spark=spark, max_join_rows=1_000,
                          settings={"small_step_rows": 100})  # not one partition
    con.execute("CREATE TABLE l (k INT, a INT)")
    con.execute("CREATE TABLE r (k INT, b INT)")
    con.insert("r", [(i, -i) for i in range(1_800)])
    con.insert("l", spark.range(1_800).selectExpr("CAST(id AS INT) AS k",
                                                  "CAST(id AS INT) AS a").repartition(6))
    con.execute("CREATE MATERIALIZED VIEW j AS SELECT l.a, r.b FROM l JOIN r ON l.k = r.k")
    assert con.execute("SELECT count(*), sum(a + b) FROM j").fetchall() == [(1_800, 0)]


def test_max_join_rows_must_be_positive() -> None:
    with pytest.raises(matview.ProgrammingError, match="max_join_rows"):
        matview.connect(max_join_rows=0)
