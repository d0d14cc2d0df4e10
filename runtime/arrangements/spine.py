"""A trace's spine: its batches, each with the time range it covers, and how they merge.

A trace (``arrangements.trace``) holds a collection's updates as a list of leaf batches.
``Trace.compact`` advances times before its frontier ``since`` and merges batches: the ones
up to ``since`` into one consolidated batch when the driver holds them and they are few
rows, else the newest ones geometrically (``merged_tail``), so the number of batches stays
logarithmic in the updates held and each read plans over a bounded union of leaves. A merge
of batches held in the driver runs in Arrow, with no Spark job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.consolidation import consolidate, consolidated_arrow
from matview.runtime.arrangements.updates import (
    TIME,
    Leaf,
    advance_times,
    materialize,
    stored_or_none,
    union_all,
)
from matview.runtime.settings import active
from pyspark.sql import SparkSession


@dataclass(frozen=True)
class Batch:
    """A leaf batch whose updates all have times in ``[lower, upper]``."""

    leaf: Leaf
    lower: int
    upper: int


def in_driver(batches: Sequence[Batch]) -> list[pa.Table] | None:
    """The updates of ``batches`` as Arrow tables when the driver holds all of them
    (as the batch or as its copy), else None."""
    tables = [b.leaf.in_driver for b in batches]
    return None if any(t is None for t in tables) else tables  # type: ignore[misc]


def to_merge(batches: Sequence[Batch], since: int) -> tuple[int, int] | None:
    """The range of ``batches`` to merge, None for none. The batches up to ``since``, when
    there are several, the driver holds them all and they total at most
    ``driver_merge_rows`` rows (a setting): the merge costs no job (a few milliseconds in
    Arrow) and
    keeps a small arrangement (an operator's state) one consolidated batch as of
    ``since``, as small as its contents, so its readers bind the same slot every step;
    later batches stay apart, as their readers look up the values they hold. Else,
    beyond ``max_batches``, the newest batches whose total size reaches the size of the
    batch before them (a geometric merge policy)."""
    done = 0
    while done < len(batches) and batches[done].upper <= since:
        done += 1
    if done > 1:
        held = in_driver(batches[:done])
        if held is not None and sum(t.num_rows for t in held) <= active().driver_merge_rows:
            return 0, done
    start = merged_tail([b.leaf.rows for b in batches])
    return None if start is None else (start, len(batches))


def merged_tail(sizes: list[int]) -> int | None:
    """Where the batches to merge start, of batches of ``sizes`` rows (oldest first): None
    while there are at most ``max_batches``; else the newest ones whose total size reaches
    the size of the batch before them, at least two (a geometric merge policy: a batch's rows
    are merged again only when as many newer ones join them, so a large old batch is not
    consolidated again every few steps)."""
    if len(sizes) <= active().max_batches:
        return None
    start = len(sizes) - 1
    tail = sizes[start]
    while start > 0 and (tail >= sizes[start - 1] or len(sizes) - start < 2):
        start -= 1
        tail += sizes[start]
    return start


def merged(spark: SparkSession, merging: Sequence[Batch], since: int,
           local_rows: int, key: str | None = None) -> Leaf | None:
    """``merging`` as one consolidated batch, its times before ``since`` advanced to
    ``since``: in Arrow when the driver holds them all (kept there up to ``local_rows``
    rows), else in Spark; held in the executors, it is arranged by ``key``."""
    tail = sum(b.leaf.rows for b in merging)
    tables = in_driver(merging)
    if tables is not None:
        table = pa.concat_tables(tables, promote_options="permissive")
        times = pc.max_element_wise(table[TIME], pa.scalar(since, pa.int64()))
        table = table.set_column(table.column_names.index(TIME), TIME, times)
        table = consolidated_arrow(table)
        return stored_or_none(spark, table, local_rows, key)
    frames = union_all([b.leaf.df for b in merging])
    assert frames is not None
    frames = consolidate(advance_times(frames, since))
    return materialize(spark, frames, small=tail <= active().small_step_rows, key=key,
                       most=tail)
