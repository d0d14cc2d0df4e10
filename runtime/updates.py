"""Update batches on Spark: DataFrames of columns ``c0..c{n-1}``, ``_time``, ``_diff``.

This module owns the two things every operator does to batches: consolidating them and
materializing them into leaves (plans with no lineage), which is where lineage is cut.
"""

from __future__ import annotations

from dataclasses import dataclass

from matview.runtime.types import column_names
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

TIME = "_time"
DIFF = "_diff"

SMALL_BATCH_ROWS = 200_000
"""Deltas up to this size are materialized through Arrow in the driver (one job, and the
rows are then at hand for reads and SUBSCRIBE); larger ones with a local checkpoint."""


def data_columns(df: DataFrame) -> list[str]:
    """The data column names of update batch ``df`` (all but ``_time`` and ``_diff``)."""
    return [c for c in df.columns if c not in (TIME, DIFF)]


def cols(df: DataFrame) -> list[Column]:
    return [F.col(c) for c in data_columns(df)]


def consolidate(df: DataFrame) -> DataFrame:
    """Sum the diffs of equal (row, time) pairs and drop those that cancel."""
    return (df.groupBy(*data_columns(df), TIME).agg(F.sum(DIFF).alias(DIFF))
            .where(F.col(DIFF) != 0))


def advance_times(df: DataFrame, since: int) -> DataFrame:
    """Advance every time before ``since`` to ``since`` (compaction; seed 004)."""
    return df.withColumn(TIME, F.greatest(F.col(TIME), F.lit(since).cast("bigint")))


def renamed(df: DataFrame, arity: int) -> DataFrame:
    """``df``'s first ``arity`` columns renamed positionally to ``c0..``, then time, diff."""
    names = column_names(arity)
    return df.select(*[F.col(old).alias(new) for old, new in zip(df.columns[:arity], names)],
                     F.col(TIME), F.col(DIFF))


@dataclass(frozen=True)
class Leaf:
    """A materialized batch: ``df`` is a leaf plan (local rows or a checkpoint) of ``rows``
    update rows."""

    df: DataFrame
    rows: int


def materialize(spark: SparkSession, df: DataFrame, small: bool) -> Leaf | None:
    """Compute ``df`` once and return it as a leaf; ``None`` when it is empty.

    ``small`` deltas go through Arrow (one job); others are checkpointed in the executors
    (one job, and one more to count them).
    """
    if small:
        table = df.toArrow()
        if table.num_rows == 0:
            return None
        return Leaf(spark.createDataFrame(table), table.num_rows)
    leaf = df.localCheckpoint(eager=True)
    rows = leaf.count()
    return Leaf(leaf, rows) if rows else None
