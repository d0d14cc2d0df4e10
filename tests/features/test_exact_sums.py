"""Sums are exact NUMERICs, as in PostgreSQL. Sums of BIGINTs, kept in three BIGINT limbs of
21 bits (``ReduceLayout``: ``l{j}_0..2``, ``reduce_accumulators.limbs``), are exact past
BIGINT's range: against DuckDB (whose sum of BIGINTs is a 128-bit integer), at the extremes
of BIGINT and at the limbs' edges, over inserts and deletes, in small steps, in large steps,
and in one step of several transactions read by a subscriber (each time's sums running over
the limbs). Sums of NUMERICs keep every decimal of their scale, also past 6 (which Spark's
product of a NUMERIC(38, s) and a diff rounds to: ``reduce_accumulators.times_diff``)."""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview

BIG = 2**63 - 1
EDGES = [BIG, -BIG - 1, BIG - 1, 2**42, 2**42 - 1, -(2**42), 2**21, 2**21 - 1, -(2**21),
         -1, 0, 1, None]
"""BIGINT's extremes and the limbs' edges (2^21, 2^42), both signs."""

QUERIES = {"g": "SELECT k, sum(x) AS s, count(x) AS n, sum(x) FILTER (WHERE x < 0) AS neg "
                "FROM t GROUP BY k",
           "total": "SELECT sum(x) AS s, sum(DISTINCT x) AS d FROM t"}


def _exact(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Rows with each sum as an int (a Decimal of scale 0 from matview, an int from DuckDB)."""
    return sorted(tuple(int(v) if isinstance(v, Decimal) else v for v in row) for row in rows)


def test_the_layout_keeps_bigint_sums_in_limbs(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (k INT, x BIGINT, y INT)")
    plan = con.explain("SELECT k, sum(x), sum(y) FROM t GROUP BY k", stage="physical")
    assert "hidden=(cnt, n0, l0_0, l0_1, l0_2, n1, s1)" in plan


@pytest.mark.parametrize("step", ["small", "large"])
def test_bigint_sums_equal_duckdb_at_the_edges(
        spark: SparkSession, runtime_settings: Callable[..., None], step: str) -> None:
    if step == "large":
        runtime_settings(small_step_rows=0)
    rng = random.Random(7)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    db = duckdb.connect()
    for target in (con, db):
        target.execute("CREATE TABLE t (k INT, x BIGINT)")
    live: list[tuple[int, int | None]] = []
    for name, sql in QUERIES.items():
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    for _ in range(6):
        added = [(rng.randrange(3), rng.choice(EDGES)) for _ in range(rng.randrange(1, 8))]
        gone = rng.sample(live, min(len(live), rng.randrange(4)))
        with con.transaction():
            con.insert("t", added)
            if gone:
                con.delete("t", gone)
        db.executemany("INSERT INTO t VALUES (?, ?)", added)
        for row in gone:
            db.execute("DELETE FROM t WHERE rowid = (SELECT min(rowid) FROM t WHERE k = ? "
                       "AND x IS NOT DISTINCT FROM ?)", row)
            live.remove(row)
        live += added
        for name, sql in QUERIES.items():
            assert _exact(con.execute(f"SELECT * FROM {name}").fetchall()) == _exact(
                db.execute(sql).fetchall()), name


def test_a_step_of_several_transactions_gives_each_times_sums(spark: SparkSession) -> None:
    """Three transactions in one step, read by a subscriber: the sums at each time, each
    beyond BIGINT's range and back, as three steps give them."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (k INT, x BIGINT)")
    con.execute("CREATE MATERIALIZED VIEW g AS SELECT k, sum(x) AS s FROM t GROUP BY k")
    sub = con.subscribe("g")
    sub.fetch()
    writes = [[(1, BIG), (1, BIG)], [(1, BIG), (2, -BIG - 1)], [(2, -BIG - 1), (1, -1)]]
    times = []
    for rows in writes:
        con.advance_time(con.now + 1)
        con.insert("t", rows)
        times.append(con.now)
    seen: dict[int, dict[int, int]] = {}
    for time, diff, k, s in sub.fetch():
        seen.setdefault(time, {})
        if diff > 0:
            seen[time][k] = int(s)
    assert [seen[t] for t in times] == [{1: 2 * BIG}, {1: 3 * BIG, 2: -BIG - 1},
                                        {1: 3 * BIG - 1, 2: 2 * (-BIG - 1)}]


@pytest.mark.parametrize("step", ["small", "large"])
def test_numeric_sums_keep_every_decimal(
        spark: SparkSession, runtime_settings: Callable[..., None], step: str) -> None:
    """NUMERIC(10,8) with duplicate rows (a diff of 2 in one step) and NUMERIC(20,10) sums,
    inserted and deleted, equal DuckDB's to the last decimal."""
    if step == "large":
        runtime_settings(small_step_rows=0)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    db = duckdb.connect()
    for target in (con, db):
        target.execute("CREATE TABLE t (k INT, u NUMERIC(10,8), w NUMERIC(20,10))")
    sql = "SELECT k, sum(u) AS u, sum(w) AS w FROM t GROUP BY k"
    con.execute(f"CREATE MATERIALIZED VIEW s AS {sql}")
    writes = [
        [(1, Decimal("12.34567891"), Decimal("1234567890.0123456789")),
         (1, Decimal("12.34567891"), None), (2, Decimal("-0.00000001"), None)],
        [(1, Decimal("0.00000003"), Decimal("-0.0000000001")),
         (2, Decimal("99.99999999"), Decimal("9999999999.9999999999"))],
    ]
    for rows in writes:
        con.insert("t", rows)
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        assert sorted(con.execute("SELECT * FROM s").fetchall()) == sorted(
            db.execute(sql).fetchall())
    con.delete("t", [(1, Decimal("12.34567891"), None)])
    db.execute("DELETE FROM t WHERE k = 1 AND u = 12.34567891 AND w IS NULL")
    assert sorted(con.execute("SELECT * FROM s").fetchall()) == sorted(db.execute(sql).fetchall())
