"""A subscription's changes read in the driver (``peek.changes``): when the driver holds every
batch a fetch reads, the changes are consolidated per time and sorted in Arrow, with no Spark
job; they are the rows, in the order, that Spark computes when the batches are held in the
executors' files instead."""

from __future__ import annotations

import random

import pytest
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.support.oracle.harness import IN_FILES

VIEW = ("SELECT k % 3 AS g, s, count(*) AS n, sum(x) AS total, max(v) AS top FROM t "
        "GROUP BY k % 3, s")


def _statements(rng: random.Random) -> list[str]:
    """Random writes of rows with NULLs, NaN, repeated strings and negative numbers."""
    out = []
    for _ in range(8):
        rows = ", ".join(
            f"({rng.randrange(-4, 6)}, {rng.choice(['NULL', repr('a'), repr('b'), repr('')])}, "
            f"{rng.choice(['NULL', 'CAST(' + repr('NaN') + ' AS DOUBLE)', '-1.5', '2.25'])}, "
            f"{rng.choice(['NULL', str(rng.randrange(-9, 9))])})" for _ in range(rng.randint(1, 4)))
        out.append(f"INSERT INTO t VALUES {rows}")
        out.append(f"DELETE FROM t WHERE k = {rng.randrange(-4, 6)}")
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_changes_held_in_the_driver_equal_sparks(spark: SparkSession,
                                                 peek_collects: list[DataFrame], seed: int) -> None:
    """The same writes on two databases, one holding its batches in the driver, one in the
    executors' files: after each, a subscription to the view (and one to the table) fetches
    the same rows in the same order from both, the driver's with no collect through Spark
    (its view already up to date), the files' through Spark."""
    statements = _statements(random.Random(seed))
    cons = [matview.connect(clock=0, spark=spark, refresh="incremental", settings=settings)
            for settings in ({}, IN_FILES)]
    for con in cons:
        con.execute("CREATE TABLE t (k INT, s TEXT, v DOUBLE, x INT)")
        con.execute(f"CREATE MATERIALIZED VIEW m AS {VIEW}")
    subscriptions = [(con.subscribe("m"), con.subscribe("t")) for con in cons]
    through_spark = 0
    for statement in ["SELECT 1", *statements]:
        fetched, collected = [], []
        for con, pair in zip(cons, subscriptions, strict=True):
            con.execute(statement)
            con.execute("SELECT count(*) FROM m").fetchall()  # the view brought up to date
            peek_collects.clear()
            fetched.append([sub.fetch() for sub in pair])
            collected.append(len(peek_collects))
        held, spilled = fetched
        assert repr(held) == repr(spilled), statement  # NaN != NaN: compared as text
        assert collected[0] == 0, statement
        through_spark += collected[1]
    assert through_spark >= len(statements) // 4  # (a batch of one row stays in the driver)
    for con in cons:
        con.close()
