"""Arrangements: spines of immutable, materialized update batches (seed 004).

A trace holds the updates of one collection as a list of leaf batches, each with the time
range it covers. Readers ask for the updates up to a time (the collection's history) or in
a half-open range of times (a delta). ``compact`` advances times before ``since`` and merges
batches geometrically, so the number of batches stays logarithmic in the updates held and
each read plans over a bounded union of leaves.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from matview.runtime.updates import (
    SMALL_BATCH_ROWS,
    TIME,
    Leaf,
    advance_times,
    consolidate,
    materialize,
)
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

MAX_BATCHES = 8
"""Batches a trace keeps before it merges: a merge is a Spark job, so not after every step."""


@dataclass(frozen=True)
class Batch:
    """A leaf batch whose updates all have times in ``[lower, upper]``."""

    leaf: Leaf
    lower: int
    upper: int


class Trace:
    """The arranged updates of one collection, shared by every reader of the collection."""

    def __init__(self, spark: SparkSession, arity: int) -> None:
        self.spark = spark
        self.arity = arity
        self.batches: list[Batch] = []
        self.since = -(2**63)

    @property
    def rows(self) -> int:
        """Update rows held (the state size, before consolidation across batches)."""
        return sum(b.leaf.rows for b in self.batches)

    @property
    def upper(self) -> int:
        """The largest time any held update may have."""
        return max((b.upper for b in self.batches), default=self.since)

    def append(self, leaf: Leaf | None, lower: int, upper: int) -> None:
        """Add a batch of updates with times in ``[lower, upper]``."""
        if leaf is not None:
            self.batches.append(Batch(leaf, lower, upper))

    def read(self, after: int | None = None, upto: int | None = None) -> DataFrame | None:
        """The updates with ``after < time <= upto`` (either bound may be absent), or None."""
        parts = []
        for batch in self.batches:
            if (after is not None and batch.upper <= after) or (
                upto is not None and batch.lower > upto
            ):
                continue
            df = batch.leaf.df
            if after is not None and batch.lower <= after:
                df = df.where(F.col(TIME) > after)
            if upto is not None and batch.upper > upto:
                df = df.where(F.col(TIME) <= upto)
            parts.append(df)
        if not parts:
            return None
        return functools.reduce(DataFrame.unionByName, parts)

    def compact(self, since: int) -> None:
        """Allow times before ``since`` to be forgotten, and merge batches if there are too
        many: the newest batches whose total size reaches the size of the batch before them
        are merged into one consolidated batch (a geometric merge policy)."""
        self.since = max(self.since, since)
        if len(self.batches) <= MAX_BATCHES:
            return
        start = len(self.batches) - 1
        tail = self.batches[start].leaf.rows
        while start > 0 and (tail >= self.batches[start - 1].leaf.rows
                             or len(self.batches) - start < 2):
            start -= 1
            tail += self.batches[start].leaf.rows
        merging = self.batches[start:]
        merged = functools.reduce(DataFrame.unionByName, [b.leaf.df for b in merging])
        merged = consolidate(advance_times(merged, self.since))
        leaf = materialize(self.spark, merged, small=tail <= SMALL_BATCH_ROWS)
        lower = max(min(b.lower for b in merging), self.since)
        self.batches = self.batches[:start]
        self.append(leaf, lower, max(max(b.upper for b in merging), lower))
