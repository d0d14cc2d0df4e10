"""A subscription's changes read in the driver (``peek.changes``): when the driver holds every
batch a fetch reads, the changes are consolidated per time and sorted in Arrow, with no Spark
job; they are the rows, in the order, that Spark computes when the batches are held in the
executors' files instead."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from matview.runtime.io import peek
from pyspark.sql import DataFrame, SparkSession

import matview

FILES = {"driver_batch_rows": 1, "fetched_batch_rows": 0, "table_copy_rows": 0,
         "view_copy_rows": 0, "keyed_read_rows": 0, "driver_merge_rows": 0}
"""Settings holding every batch of more than one row in the executors' files, read by key
from them."""

VIEW = ("SELECT k % 3 AS g, s, count(*) AS n, sum(x) AS total, max(v) AS top FROM t "
        "GROUP BY k % 3, s")


@pytest.fixture
def collects(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[DataFrame]]:
    """The frames ``peek`` collects through Spark, in order."""
    frames: list[DataFrame] = []
    collect = peek.to_arrow

    def spied(df: DataFrame, nullable: bool = False):  # type: ignore[no-untyped-def]
        frames.append(df)
        return collect(df, nullable)

    monkeypatch.setattr(peek, "to_arrow", spied)
    yield frames


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
                                                 collects: list[DataFrame], seed: int) -> None:
    """The same writes on two databases, one holding its batches in the driver, one in the
    executors' files: after each, a subscription to the view (and one to the table) fetches
    the same rows in the same order from both, the driver's with no collect through Spark
    (its view already up to date), the files' through Spark."""
    statements = _statements(random.Random(seed))
    cons = [matview.connect(clock=0, spark=spark, refresh="incremental", settings=settings)
            for settings in ({}, FILES)]
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
            collects.clear()
            fetched.append([sub.fetch() for sub in pair])
            collected.append(len(collects))
        held, spilled = fetched
        assert repr(held) == repr(spilled), statement  # NaN != NaN: compared as text
        assert collected[0] == 0, statement
        through_spark += collected[1]
    assert through_spark >= len(statements) // 4  # (a batch of one row stays in the driver)
    for con in cons:
        con.close()
