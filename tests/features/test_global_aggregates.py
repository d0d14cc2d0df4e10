"""Global aggregates (no GROUP BY) have exactly one row, also over no input rows: ``count``
is 0 there and the other aggregates NULL. Randomized against DuckDB: filters keeping none,
some or all rows; one-shot queries, views created before the data and views created after
it, all checked after every transaction."""

from __future__ import annotations

import random

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import rows_match
from tests.support.seeds import seeds

AGGREGATES = "count(*), count(y), sum(x), min(x), max(y), avg(x)"


def _query(threshold: int) -> str:
    return f"SELECT {AGGREGATES} FROM t WHERE x > {threshold}"


def test_global_aggregate_over_a_filter_that_keeps_nothing(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT, y INT)")
    con.execute("INSERT INTO t VALUES (1, 1), (2, NULL)")
    empty = (0, 0, None, None, None, None)
    assert con.execute(_query(10)).fetchall() == [empty]
    con.execute(f"CREATE MATERIALIZED VIEW g AS {_query(10)}")
    assert con.execute("SELECT * FROM g").fetchall() == [empty]
    con.execute("INSERT INTO t VALUES (11, 5)")
    assert con.execute("SELECT * FROM g").fetchall() == [(1, 1, 11, 11, 5, 11.0)]
    con.execute("DELETE FROM t WHERE x = 11")
    assert con.execute("SELECT * FROM g").fetchall() == [empty]


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_global_aggregates_match_duckdb(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    con = matview.connect(clock=0, spark=spark)
    duck = duckdb.connect()
    for engine in (con, duck):
        engine.execute("CREATE TABLE t (x INT, y INT)")
    # thresholds keeping all rows (x >= 0), some, and none (x <= 20)
    thresholds = [-1, rng.randint(3, 15), 20]
    for i, c in enumerate(thresholds):
        con.execute(f"CREATE MATERIALIZED VIEW early{i} AS {_query(c)}")
    log: list[str] = []

    def write(sql: str) -> None:
        con.execute(sql)
        duck.execute(sql)
        log.append(sql)

    def check() -> None:
        for i, c in enumerate(thresholds):
            expected = duck.execute(_query(c)).fetchall()
            for source in (_query(c), f"SELECT * FROM early{i}", f"SELECT * FROM late{i}"):
                actual = con.execute(source).fetchall()
                assert len(actual) == 1 and rows_match(actual[0], expected[0]), (
                    f"seed {seed}: {source} gave {actual}, DuckDB {expected} after {log}")

    values = ", ".join(f"({rng.randint(0, 20)}, {rng.choice(['NULL', rng.randint(0, 9)])})"
                       for _ in range(rng.randint(2, 6)))
    write(f"INSERT INTO t VALUES {values}")
    for i, c in enumerate(thresholds):
        con.execute(f"CREATE MATERIALIZED VIEW late{i} AS {_query(c)}")
    check()
    for _ in range(6):
        present = [r[0] for r in duck.execute("SELECT x FROM t").fetchall()]
        if present and rng.random() < 0.5:
            write(f"DELETE FROM t WHERE x = {rng.choice(present)}")
        else:
            write(f"INSERT INTO t VALUES ({rng.randint(0, 20)}, {rng.randint(0, 9)})")
        check()
