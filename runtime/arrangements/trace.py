"""Arrangements: spines of immutable, materialized update batches (seed 004).

A trace holds the updates of one collection as a list of leaf batches, each with the time
range it covers. Readers ask for the updates up to a time (the collection's history) or in
a half-open range of times (a delta), or by key (``matching``). ``compact`` advances times
before ``since`` and merges batches (the spine and its merge policy: ``arrangements.spine``),
so the number of batches stays logarithmic in the updates held and each read plans over a
bounded union of leaves.

Small batches are held in the driver as Arrow, larger ones in the executors as Parquet files
arranged by the trace's ``keys`` (``arrangements.batch_files``): a table's first column, and
every column its readers look it up by, so that a keyed read of a large batch reads only the
pages of its keys (``matching``). A table's trace also
keeps a driver copy of its Spark batches, up to ``table_copy_rows`` update rows: a write's
check that no multiplicity goes negative, a read of the whole table and a merge of its
batches then run in Arrow, with no Spark job (the rows a write retracts are found among the
held ones by ``arrangements.retractions``). A materialized view's trace keeps one of the
Spark batches a large step appends (``view_copy_rows``), so that it is read in Arrow too.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.batch_files import PAGE_ROWS, FileReads, keyable
from matview.runtime.arrangements.consolidation import consolidated_arrow
from matview.runtime.arrangements.count_index import follow
from matview.runtime.arrangements.key_index import holding, index
from matview.runtime.arrangements.keyed_reads import FileRead, KeyedRead
from matview.runtime.arrangements.spine import Batch, in_driver, merged, to_merge
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    any_row,
    nested,
    normalized,
    union_all,
)
from matview.runtime.lowering.types import col
from matview.runtime.settings import active
from matview.runtime.spark.arrow_frames import arrow_frame
from matview.runtime.spark.jvm_plans import to_arrow
from matview.runtime.time import MAX_TIME, MIN_TIME
from pyspark.sql import DataFrame, SparkSession


def keyed(leaf: Leaf) -> bool:
    """Whether a batch held in files is read by key (more than ``keyed_read_rows`` rows: a
    smaller one is read whole, by Spark)."""
    return leaf.rows > active().keyed_read_rows


class NegativeRows(ValueError):
    """A collection holds a row with negative multiplicity (the argument), which a read
    cannot show."""


class Trace:
    """The arranged updates of one collection, shared by every reader of the collection."""

    def __init__(self, spark: SparkSession, arity: int, copy_rows: int = 0,
                 local_rows: int | None = None, key: str | None = None) -> None:
        self.spark = spark
        self.arity = arity
        self.keys: list[str] = [] if key is None else [key]
        """The columns its batches held in the executors are arranged by (the first as they
        are written; ``batch_files``): a table's first column (what its writes are checked
        by), and every column a reader looked the trace up by (``matching``)."""
        self.local_rows = active().driver_batch_rows if local_rows is None else local_rows
        """Batches merged in the driver stay there up to this many rows (``stored``)."""
        self.copy_rows = copy_rows
        """Update rows of batches held in Spark that the trace also keeps in the driver
        (``Leaf.copy``), at most: a table's trace checks writes against them in Arrow,
        without a Spark job (``RuntimeSettings.table_copy_rows``); other traces keep none."""
        self.batches: list[Batch] = []
        self.since = MIN_TIME
        self.errors: Trace | None = None
        """A materialized view's evaluation errors, as a trace of one text column (the
        message) beside its rows; None for collections that cannot have errors (tables)."""
        self.file_reads = FileReads()
        """What its keyed reads and write checks read of its batches held in files."""
        self._reads: dict[tuple[int | None, int | None], tuple[DataFrame | None, int | None]] = {}
        """Reads since the batches last changed: every dataflow reading this trace in one
        refresh asks for the same ranges, and building a plan from Arrow costs a JVM call."""
        self.counts: dict[str, Trace] = {}
        """Its count indexes, by column (``arrangements.count_index``)."""

    @property
    def rows(self) -> int:
        """Update rows held (the state size, before consolidation across batches); an upper
        bound when a batch's size is (``Leaf.exact`` False: a view's output kept as a lazy
        filter, a Spark batch cut by ``discard``)."""
        return sum(b.leaf.rows for b in self.batches)

    @property
    def bytes(self) -> int:
        """Bytes held: exact (Arrow ``nbytes``) for the batches held in the driver; for the
        batches held in Spark an estimate, their rows times Spark's default size of a row of
        their schema (``updates.default_size``). Runs no Spark job."""
        return sum(b.leaf.size() for b in self.batches)

    @property
    def held(self) -> str:
        """Where its batches are: ``driver`` (every one as Arrow), ``executors`` (in files
        or checkpoints, none copied to the driver), ``both``, or ``none`` (no batch)."""
        places = {"driver" if b.leaf.table is not None else
                  "both" if b.leaf.copy is not None else "executors" for b in self.batches}
        if not places:
            return "none"
        return places.pop() if len(places) == 1 else "both"

    def rows_between(self, after: int | None, upto: int) -> int:
        """Update rows of the batches a ``read(after, upto)`` reads (an upper bound on the
        rows it returns)."""
        return sum(b.leaf.rows for b in self.batches
                   if (after is None or b.upper > after) and b.lower <= upto)

    @property
    def upper(self) -> int:
        """The largest time any held update may have."""
        return max((b.upper for b in self.batches), default=self.since)

    def append(self, leaf: Leaf | None, lower: int, upper: int) -> None:
        """Add a batch of updates with times in ``[lower, upper]`` (its driver copy only
        while the trace's copies stay within ``copy_rows``; held in files, arranged by each
        of the trace's ``keys``: one Spark job per copy it lacks), and its projections to
        the count indexes (``count_index.follow``)."""
        self._add(leaf, lower, upper)
        if leaf is not None:
            follow(self, leaf, lower, upper)

    def _add(self, leaf: Leaf | None, lower: int, upper: int) -> None:
        if leaf is not None:
            if leaf.copy is not None and self._copied() + leaf.rows > self.copy_rows:
                leaf = dataclasses.replace(leaf, copy=None)
            self.batches.append(Batch(leaf, lower, upper))
            self._reads = {}
            if leaf.in_driver is None:
                for key in self.keys:
                    self._arrange_batch(leaf, key)

    def overlaid(self, leaves: list[Leaf], at: int) -> Trace:
        """A copy holding this trace's batches and ``leaves`` at time ``at`` (what an open
        transaction's reads see of a table it wrote); this trace is unchanged."""
        seen = copy.copy(self)
        seen.keys, seen._reads, seen.counts = list(self.keys), {}, {}
        seen.batches = [*self.batches, *(Batch(leaf, at, at) for leaf in leaves)]
        return seen

    def arrange(self, column: str) -> None:
        """Arrange the batches held in files by ``column`` too (one Spark job for each
        lacking that copy), and every later one (``keys``): a reader will look the trace up
        by it (``matching``). The batches the driver holds are indexed by it now
        (``key_index.index``), not at the reader's first step."""
        if column not in self.keys:
            self.keys.append(column)
        for batch in self.batches:
            if batch.leaf.in_driver is None:
                self._arrange_batch(batch.leaf, column)
            elif column in batch.leaf.in_driver.column_names:
                index(batch.leaf.in_driver, column)

    @classmethod
    def _arrange_batch(cls, leaf: Leaf, column: str) -> None:
        if keyed(leaf) and cls.arranged(leaf, column):
            assert leaf.files is not None
            leaf.files.arranged(column)

    def with_copy(self, leaf: Leaf | None) -> Leaf | None:
        """``leaf``, a batch about to be appended, with a driver copy of its rows fetched
        (one Spark job) when it is held only in Spark, holds no ``nested`` values and the
        trace's copies have room for it (``copy_rows``); else as it is."""
        if (leaf is None or leaf.in_driver is not None
                or self._copied() + leaf.rows > self.copy_rows or nested(leaf.df.schema)):
            return leaf
        return dataclasses.replace(leaf, copy=normalized(to_arrow(leaf.df)))

    def _copied(self) -> int:
        return sum(b.leaf.rows for b in self.batches if b.leaf.copy is not None)

    def read(self, after: int | None = None, upto: int | None = None) -> DataFrame | None:
        """The updates with ``after < time <= upto`` (either bound may be absent), or None.
        The batches held in the driver are cut to the range and concatenated in Arrow, so
        they reach Spark as one local relation (no job to broadcast, one scan)."""
        return self.read_counted(after, upto)[0]

    def read_counted(self, after: int | None = None, upto: int | None = None
                     ) -> tuple[DataFrame | None, int | None]:
        """``read``, and the exact number of update rows it returns when that is known
        without a Spark job (every batch it reads from Spark is read whole and its size is
        exact; batches held in the driver are cut in Arrow), else None."""
        if (after, upto) not in self._reads:
            self._reads[(after, upto)] = self._read(after, upto)
        return self._reads[(after, upto)]

    def _read(self, after: int | None, upto: int | None) -> tuple[DataFrame | None, int | None]:
        local, frames, count = self.read_parts(after, upto)
        if local is not None:
            frames.insert(0, arrow_frame(self.spark, local))
        df = union_all(frames)
        return df, (None if df is None else count)

    def read_parts(self, after: int | None = None, upto: int | None = None
                   ) -> tuple[pa.Table | None, list[DataFrame], int | None]:
        """What ``read`` unites: the updates of the batches held in the driver, cut and
        concatenated in Arrow (None: none), the plans of those held in Spark, and the exact
        number of update rows of both when known without a Spark job."""
        tables, frames = [], []
        count: int | None = 0
        for batch in self.batches:
            if (after is not None and batch.upper <= after) or (
                upto is not None and batch.lower > upto
            ):
                continue
            low = after is not None and batch.lower <= after
            high = upto is not None and batch.upper > upto
            table = batch.leaf.table
            if table is not None:
                if low or high:
                    times = table[TIME]
                    keep = pc.and_(pc.greater(times, after if low else MIN_TIME),
                                   pc.less_equal(times, upto if high else MAX_TIME))
                    table = table.filter(keep)
                tables.append(table)
                if count is not None:
                    count += table.num_rows
                continue
            df = batch.leaf.df
            if low:
                df = df.where(col(TIME) > after)
            if high:
                df = df.where(col(TIME) <= upto)
            frames.append(df)
            count = None if count is None or low or high or not batch.leaf.exact \
                else count + batch.leaf.rows
        local = pa.concat_tables(tables, promote_options="permissive") if tables else None
        return (local if local is not None and local.num_rows else None), frames, count

    def values(self, after: int, upto: int, column: str) -> pa.Array | None:
        """The distinct values of ``column`` in the batches holding the updates with
        ``after < time <= upto`` (a superset of those updates' values), when the driver
        holds those batches; else None."""
        tables = in_driver([b for b in self.batches
                                  if b.upper > after and b.lower <= upto])
        if not tables:
            return None
        return pc.unique(pa.chunked_array([t[column] for t in tables]))

    def matching(self, upto: int, column: str, values: pa.Array) -> KeyedRead | None:
        """The updates with time ``<= upto`` whose ``column`` holds one of ``values`` (and
        maybe others): a keyed read of the arrangement, whose plans hold only those rows. Of
        the batches held in the driver (or their copies) they are found in Arrow
        (``key_index.holding``); of those held in files, reads of their copies arranged by
        ``column`` (``FileRead``: by the driver or Spark, ``KeyedRead.fetch``; the trace
        is arranged by ``column`` now, one Spark job for each batch lacking the copy),
        save batches of at most
        ``keyed_read_rows`` rows (a setting), read whole. None when some batch is held
        otherwise (a checkpoint, a filtered plan) or ``column`` is of neither integers nor
        text."""
        batches = [b for b in self.batches if b.lower <= upto]
        spilled = [b.leaf for b in batches if b.leaf.in_driver is None]
        if any(not self.arranged(leaf, column) for leaf in spilled):
            return None
        if any(keyed(leaf) for leaf in spilled):
            self.arrange(column)
        found, reads, wholes, rows, expected = [], [], [], 0, 0
        for batch in batches:
            late, leaf, files = batch.upper > upto, batch.leaf, batch.leaf.files
            if leaf.in_driver is not None:
                table = holding(leaf.in_driver, column, values)  # its own: its index kept
            elif files is not None and keyed(leaf):
                part = files.read_by_key(column, values)
                self.file_reads = self.file_reads.read(part, leaf.rows)
                table = part.remembered
                if table is None:
                    if part.keys:
                        reads.append(FileRead(files, column, part.values,
                                              upto if late else None))
                        rows += min(leaf.rows, part.keys * PAGE_ROWS)
                        expected += files.expected_rows(column, part.keys)
                    continue
            else:  # a small batch in files: read whole
                self.file_reads = self.file_reads.plus(leaf.rows, None)
                wholes.append(leaf.df.where(col(TIME) <= upto) if late else leaf.df)
                rows, expected = rows + leaf.rows, expected + leaf.rows
                continue
            if late:
                table = table.filter(pc.less_equal(table[TIME], upto))
            found.append(table)
            rows += table.num_rows
            expected += table.num_rows
        local = pa.concat_tables(found, promote_options="permissive") if found else None
        return KeyedRead(local, reads, wholes, rows, expected)

    @staticmethod
    def arranged(leaf: Leaf, column: str) -> bool:
        """Whether ``leaf``, held in files, can be read by ``column`` (``matching``)."""
        return leaf.files is not None and leaf.exact and keyable(leaf.files.schema, column)

    def held_contents(self, upto: int) -> pa.Table | None:
        """The collection's contents at ``upto``: each row once, with its multiplicity as
        ``_diff`` (none 0), computed in Arrow when every batch it needs is held in the
        driver; None otherwise, or when it holds no batch."""
        tables = in_driver([b for b in self.batches if b.lower <= upto])
        if not tables:
            return None
        table = pa.concat_tables(tables, promote_options="permissive")
        if any(b.upper > upto for b in self.batches):
            table = table.filter(pc.less_equal(table[TIME], upto))
        return consolidated_arrow(table.drop_columns([TIME]))

    def held_rows(self, upto: int) -> pa.Table | None:
        """The collection's rows at ``upto`` (each repeated by its multiplicity), computed in
        Arrow when every batch it needs is held in the driver; None otherwise. Raises
        ``NegativeRows`` when a row's multiplicity is negative."""
        summed = self.held_contents(upto)
        if summed is None:
            return None
        counts = summed[DIFF].to_numpy(zero_copy_only=False)
        if len(counts) and counts.min() < 0:
            raise NegativeRows(int(counts.min()))
        keep = np.repeat(np.arange(len(counts)), np.maximum(counts, 0))
        return summed.drop_columns([DIFF]).take(pa.array(keep, pa.int64()))

    def any_row(self, upto: int) -> tuple[object, ...] | None:
        """A row the collection holds at ``upto``, or None: in Arrow when every batch is
        held in the driver, else with one Spark job."""
        held = self.held_rows(upto)
        if held is not None:
            return tuple(held.slice(0, 1).to_pylist()[0].values()) if held.num_rows else None
        df = self.read(upto=upto)
        return None if df is None else any_row(df)

    def sample(self, upto: int, rows: int) -> pa.Table | None:
        """At most ``rows`` of the updates with time ``<= upto``, as Arrow: drawn at random
        (the same each time) from the newest batch the driver holds, else the first a Spark
        job finds; None when there are none. A rehearsal stands them in for a step's change
        (``Dataflow.rehearse``)."""
        for batch in reversed([b for b in self.batches if b.lower <= upto]):
            held = batch.leaf.in_driver
            if held is not None:
                if batch.upper > upto:
                    held = held.filter(pc.less_equal(held[TIME], upto))
                if held.num_rows:
                    drawn = np.random.default_rng(0).choice(held.num_rows, replace=False,
                                                            size=min(rows, held.num_rows))
                    return held.take(pa.array(np.sort(drawn)))
        df = self.read(upto=upto)
        table = None if df is None else normalized(to_arrow(df.limit(rows)))
        return table if table is not None and table.num_rows else None

    def discard(self, upto: int) -> None:
        """Forget every update with time ``<= upto`` (a temporal operator's released updates:
        they are in its output now). Batches held in the driver are cut in Arrow; others
        keep their leaf behind a filter, their row count an upper bound."""
        kept: list[Batch] = []
        for batch in self.batches:
            if batch.upper <= upto:
                continue
            if batch.lower > upto:
                kept.append(batch)
                continue
            table = batch.leaf.table
            if table is not None:
                table = table.filter(pc.greater(table[TIME], upto))
                if table.num_rows:
                    kept.append(Batch(Leaf(None, table.num_rows, table, self.spark), upto + 1,
                                      batch.upper))
                continue
            leaf = Leaf(batch.leaf.df.where(col(TIME) > upto), batch.leaf.rows, exact=False)
            kept.append(Batch(leaf, upto + 1, batch.upper))
        if len(kept) != len(self.batches) or any(a is not b for a, b in zip(kept, self.batches)):
            self.batches, self._reads, self.counts = kept, {}, {}

    def compact(self, since: int) -> None:
        """Allow times before ``since`` to be forgotten, and merge batches (``spine.to_merge``)
        into one consolidated batch. Batches held in the driver merge there, with no Spark
        job."""
        self.since = max(self.since, since)
        for derived in [*self.counts.values(), *[e for e in [self.errors] if e is not None]]:
            derived.compact(since)
        merging_range = to_merge(self.batches, self.since)
        if merging_range is None:
            return
        start, end = merging_range
        merging = self.batches[start:end]
        leaf = merged(self.spark, merging, self.since, self.local_rows,
                      self.keys[0] if self.keys else None)
        lower = max(min(b.lower for b in merging), self.since)
        kept = self.batches[end:]
        self.batches = self.batches[:start]
        self._reads = {}
        self._add(leaf, lower, max(max(b.upper for b in merging), lower))
        self.batches += kept

