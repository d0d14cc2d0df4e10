"""Progress of long statements (``matview/progress.py``): a rich bar of the running Spark
jobs' tasks on a terminal once a statement runs long, nothing otherwise (issue 17, item 4)."""

from __future__ import annotations

import io
import threading

from pyspark.sql import SparkSession
from rich.console import Console

import matview
from matview.progress import Reporter


def reporting(con: matview.Connection, terminal: bool, delay: float) -> io.StringIO:
    """Make ``con`` report progress into a buffer (a terminal or not) after ``delay`` s."""
    out = io.StringIO()
    engine = con._engine_for_use()
    engine.progress = Reporter(engine.spark, Console(file=out, force_terminal=terminal,
                                                     width=120), delay=delay)
    return out


def test_a_long_statement_shows_its_spark_tasks(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    out = reporting(con, terminal=True, delay=0.0)
    con.insert("t", spark.range(2_000_000).selectExpr("cast(id % 1000 as int) AS a"))
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT a, count(*) FROM t GROUP BY a")
    shown = out.getvalue()
    assert "CREATE MATERIALIZED VIEW v" in shown and "Spark tasks" in shown
    assert con.execute("SELECT count(*) FROM v").fetchall() == [(1000,)]


def test_silent_off_a_terminal_for_short_statements_and_when_asked(
        spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    out = reporting(con, terminal=False, delay=0.0)
    before = threading.active_count()
    con.execute("CREATE TABLE t (a INT)")
    con.execute("INSERT INTO t VALUES (1)")
    assert out.getvalue() == "" and threading.active_count() == before
    out = reporting(con, terminal=True, delay=5.0)  # a terminal, but a quick statement
    con.execute("SELECT * FROM t")
    assert out.getvalue() == ""
    quiet = matview.connect(clock=0, spark=spark, progress=False)
    assert quiet._engine_for_use().progress is None
