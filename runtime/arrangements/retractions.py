"""A write's check that it leaves no row with negative multiplicity, and finding the held
copies of the rows it retracts.

The check (``negative_row``) sums the rows a write retracts with their copies the trace
holds. Copies held in the driver are found in Arrow
by the values of one column (``probe_column``); copies held only in Spark are fetched: of
batches held in files, the pages of the values of the key they are arranged by whose read
is expected to find the fewest rows (a keyed read, ``_held``, made by the driver from the
files where it can, else by a Spark job, which the batch remembers for the views that look
the same keys up next); of others, with one Spark job, a scan
(``found_in_spark``) filtered on those values by SQL text when they are few
(``RuntimeSettings.probe_values``), else by a broadcast semi-join.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.batch_files import holding_test
from matview.runtime.arrangements.key_index import holding
from matview.runtime.arrangements.keyed_reads import FileRead, fetched
from matview.runtime.arrangements.trace import Trace, keyed
from matview.runtime.arrangements.updates import DIFF, Leaf, union_all
from matview.runtime.lowering.types import col, column_names
from matview.runtime.settings import active
from matview.runtime.spark.arrow_frames import arrow_frame
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

_RETRACTED = "_retracted"
"""A column marking the rows an update retracts, while ``negative_row`` sums them."""


def negative_row(trace: Trace, updates: DataFrame | pa.Table,
                 pending: Sequence[Leaf] = ()) -> tuple[object, ...] | None:
    """A row whose multiplicity would be negative if ``updates`` (data columns and
    ``_diff``) were added to the updates ``trace`` holds and to the batches ``pending``, or
    None.

    Updates in the driver (Arrow) are summed in Arrow with the held copies of the rows
    they retract: those of the batches held in the driver (or copied there,
    ``Leaf.copy``), and those of batches held only in Spark (``held_updates``): of batches
    held in files, only the retracted rows' keys in their copies arranged by one of the trace's
    ``keys`` (read by the driver where it can), else found by a scan in one Spark job
    (``found_in_spark``). Other
    updates are summed with every held row in one Spark job."""
    leaves = [b.leaf for b in trace.batches] + list(pending)
    names = column_names(trace.arity)
    if isinstance(updates, pa.Table) and not any(
            pa.types.is_nested(f.type) for f in updates.schema):
        mine = updates.select([*names, DIFF])
        retracted = mine.filter(pc.less(mine[DIFF], 0)).select(names)
        probe = probe_column(retracted) if retracted.num_rows <= active().probe_values else None
        parts = [part.cast(mine.schema) for part in held_updates(trace, pending, retracted,
                                                                 probe)]
        # rows not retracted now may sum below zero (their other copies are not
        # fetched), so a row counts only where it is retracted now
        marked = [t.append_column(_RETRACTED, pa.array(np.zeros(t.num_rows, bool)))
                  for t in parts] + [mine.append_column(_RETRACTED, pc.less(mine[DIFF], 0))]
        summed = pa.concat_tables(marked, promote_options="permissive").group_by(
            names, use_threads=False).aggregate([(DIFF, "sum"), (_RETRACTED, "any")])
        below = summed.filter(pc.and_(pc.less(summed[f"{DIFF}_sum"], 0),
                                      summed[f"{_RETRACTED}_any"]))
        return tuple(below.slice(0, 1).to_pylist()[0][n] for n in names) \
            if below.num_rows else None
    frame = updates if isinstance(updates, DataFrame) else arrow_frame(trace.spark, updates)
    frames = [leaf.df.select(*names, DIFF) for leaf in leaves]
    both = union_all([*frames, frame.select(*names, DIFF)])
    assert both is not None
    found = (both.groupBy(*names).agg(F.sum(DIFF).alias(DIFF)).where(col(DIFF) < 0)
             .select(*names).limit(1).collect())
    return tuple(found[0]) if found else None


def held_updates(trace: Trace, pending: Sequence[Leaf], rows: pa.Table, probe: str | None,
                 keys: Sequence[str] | None = None) -> list[pa.Table]:
    """The updates (data columns and ``_diff``) of ``trace``'s batches and the batches
    ``pending`` that may hold ``rows`` (data columns): of the batches the driver holds,
    those holding ``rows``' values of column ``probe`` (every one when None; the batches'
    own tables, their indexes kept); of the others, ``held_copies`` by one of ``keys``
    (none when ``rows`` is empty)."""
    names = column_names(trace.arity)
    leaves = [b.leaf for b in trace.batches] + list(pending)
    local = [leaf.in_driver for leaf in leaves]
    parts = [t for t in local if t is not None]
    if probe is not None:
        values = pc.unique(rows[probe])
        parts = [holding(part, probe, values) for part in parts]
    parts = [part.select([*names, DIFF]) for part in parts]
    spilled = [leaf for leaf, t in zip(leaves, local, strict=True) if t is None]
    if spilled and rows.num_rows:
        parts.append(held_copies(trace, spilled, rows, probe, keys))
    return parts


def held_copies(trace: Trace, spilled: list[Leaf], retracted: pa.Table, probe: str | None,
                keys: Sequence[str] | None = None) -> pa.Table:
    """The updates (data columns and ``_diff``) of ``spilled`` (batches held only in Spark)
    that may copy ``retracted`` rows (data columns), fetched (``keyed_reads.fetched``): of
    batches read by key (``trace.keyed``), the retracted rows' values of one of ``keys``
    (the trace's keys by default) all of them are arranged by, the one whose read is
    expected to find the fewest rows (``BatchFiles.expected_rows``; ``probe`` among
    equals), remembered by the batch for the views stepping next
    (``BatchFiles.remember``), or picked from what it remembers; the others whole,
    filtered by ``found_in_spark`` (one Spark job)."""
    names = column_names(trace.arity)
    by_key = [leaf for leaf in spilled if keyed(leaf)]
    counts = {k: pc.count_distinct(retracted[k], mode="all").as_py()
              for k in (trace.keys if keys is None else keys)
              if all(Trace.arranged(leaf, k) for leaf in by_key)}

    def expected(k: str) -> tuple[int, bool]:
        return sum(leaf.files.expected_rows(k, counts[k]) for leaf in by_key
                   if leaf.files is not None), k != probe
    key = min(counts, key=expected, default=None)
    values = None if key is None else pc.unique(retracted[key].combine_chunks())
    tables: list[pa.Table] = []
    reads: list[FileRead] = []
    whole: list[DataFrame] = []
    for leaf in spilled:
        files = leaf.files
        if key is not None and values is not None and files is not None and keyed(leaf):
            part = files.read_by_key(key, values)
            trace.file_reads = trace.file_reads.read(part, leaf.rows)
            tables += [] if part.remembered is None else [part.remembered]
            if part.keys:
                reads.append(FileRead(files, key, part.values, None))
            continue
        trace.file_reads = trace.file_reads.plus(leaf.rows, None)
        whole.append(leaf.df.select(*names, DIFF))
    others = union_all(whole)
    found, in_driver = fetched(reads, [] if others is None else [
        found_in_spark(trace.spark, others, retracted, probe)])
    trace.file_reads = trace.file_reads.direct(in_driver)
    parts = [t.select([*names, DIFF]) for t in tables + found]
    return pa.concat_tables(parts, promote_options="permissive") if parts else \
        pa.table({n: pa.array([], pa.null()) for n in [*names, DIFF]})


def found_in_spark(spark: SparkSession, held: DataFrame, retracted: pa.Table,
                   probe: str | None) -> DataFrame:
    """Held update rows that include every row holding the ``retracted`` rows' values of
    column ``probe`` (every copy of them when None; maybe others, which callers do not
    count). When ``probe`` holds integers or text, a filter on its values
    (``batch_files.holding_test``) scans the rows held in one job; otherwise a semi-join with
    the retracted rows (on ``probe``, or on every column) broadcast, which costs a second
    job (the broadcast)."""
    if probe is not None:
        kind = retracted.schema.field(probe).type
        if pa.types.is_integer(kind) or pa.types.is_string(kind):
            test = holding_test(probe, retracted[probe])
            assert test is not None  # the rows retracted are some
            return held.where(test)
    on = retracted.column_names if probe is None else [probe]
    found = arrow_frame(spark, retracted.select(on)).alias("r")
    same = [col(f"h.{n}").eqNullSafe(col(f"r.{n}")) for n in on]
    return held.alias("h").join(F.broadcast(found),
                                functools.reduce(Column.__and__, same), "left_semi")


def probe_column(rows: pa.Table) -> str | None:
    """The column of integers or text with the most distinct values among ``rows``, or None
    when there is no such column."""
    best, distinct = None, 0
    for name in rows.column_names:
        kind = rows.schema.field(name).type
        if pa.types.is_integer(kind) or pa.types.is_string(kind):
            count = pc.count_distinct(rows[name], mode="all").as_py()
            if count > distinct:
                best, distinct = name, count
    return best
