"""Count indexes: a collection's rows counted by one of its columns, kept as an arrangement
of their own beside the collection's trace and shared by every reader of it (seed 003's
*count* indexes).

The count index of a trace by column ``c`` is the arrangement of the projection π_c of its
updates: a trace of one column, ``c0`` (the key), in which a key's multiplicity up to a time
is the number of the collection's rows holding it then. It follows the trace batch by batch
(each batch's projection, consolidated: one update per key and time; ``follow``) and
compacts with it, so that, compacted, it holds one row per live key however many rows hold
that key. A worst-case optimal join's *count* reads a path row's counts from it (a join by
the key with ``counts``) instead of aggregating the input's rows at every step that counts.

It is derived state: made from the trace's batches when a reader first asks for it (in
Arrow from the driver's copies of them, else one Spark job; after a restart too), never
written to a durable store. Its batches stay in the driver up to ``table_copy_rows`` rows,
as a table's copies do (a row per key and time: far fewer than the rows they count).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from matview.runtime.arrangements.consolidation import consolidate, consolidated_arrow
from matview.runtime.arrangements.spine import in_driver
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    held,
    normalized,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.types import col
from matview.runtime.settings import active
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.arrangements.trace import Trace

KEY = "c0"
"""The key's column in a count index."""

COUNT = "_n"
"""A key's count in what ``counts`` returns."""


def count_index(trace: Trace, column: str) -> Trace:
    """The count index of ``trace`` by ``column``: made at the first call from the batches
    it holds, then kept in step with it (``Trace.append`` and ``Trace.compact``)."""
    if column not in trace.counts:
        index = type(trace)(trace.spark, 1, local_rows=active().table_copy_rows, key=KEY)
        if trace.batches:
            tables = in_driver(trace.batches)
            table = None if tables is None else pa.concat_tables(
                [t.select([column, TIME, DIFF]) for t in tables], promote_options="permissive")
            leaf = _counted(trace, column, table, lambda: union_all(
                [b.leaf.df for b in trace.batches]), trace.rows)
            index.append(leaf, min(b.lower for b in trace.batches), trace.upper)
        index.compact(trace.since)
        trace.counts[column] = index
    return trace.counts[column]


def follow(trace: Trace, leaf: Leaf, lower: int, upper: int) -> None:
    """Add to each count index of ``trace`` the projection of ``leaf``, a batch of updates
    in ``[lower, upper]`` just added to it (for a batch held only in Spark, one job each)."""
    for column, index in trace.counts.items():
        index.append(_counted(trace, column, leaf.in_driver, lambda: leaf.df, leaf.rows),
                     lower, upper)


_summed: weakref.WeakKeyDictionary[DataFrame, DataFrame] = weakref.WeakKeyDictionary()
"""``counts``' plan by the read it sums: the index's read is kept until its batches change
(``Trace.read``), so every path and view counting by it in a step gets one plan."""


def counts(index: Trace, upto: int) -> DataFrame | None:
    """The keys of ``index`` counted up to ``upto``: columns ``c0`` and ``_n`` (the rows
    holding the key), keys counted zero left out; None when it holds nothing."""
    df = index.read(upto=upto)
    if df is None:
        return None
    if df not in _summed:
        summed = df.groupBy(KEY).agg(F.sum(DIFF).alias(COUNT))
        _summed[df] = summed.where(col(COUNT) != 0)
    return _summed[df]


def _counted(trace: Trace, column: str, table: pa.Table | None,
             frame: Callable[[], DataFrame | None], rows: int) -> Leaf | None:
    """The projection on ``column`` of some of ``trace``'s updates (``rows`` of them),
    consolidated, as a batch of its count index: in Arrow from ``table`` when the driver
    holds them there and Arrow groups by the column (not lists or maps), else in Spark from
    ``frame()`` (one job), fetched into the driver when it may be held there (at most
    ``table_copy_rows`` rows), else held in the executors."""
    most = active().table_copy_rows
    kind = None if table is None else table.schema.field(column).type
    if table is not None and (not pa.types.is_nested(kind) or pa.types.is_struct(kind)):
        projected = table.select([column, TIME, DIFF]).rename_columns([KEY, TIME, DIFF])
        return stored_or_none(trace.spark, consolidated_arrow(projected), most, KEY)
    df = frame()
    if df is None:
        return None
    summed = consolidate(df.select(col(column).alias(KEY), col(TIME), col(DIFF)))
    if rows > most:
        return held(summed, KEY)
    return stored_or_none(trace.spark, normalized(to_arrow(summed)), most, KEY)
