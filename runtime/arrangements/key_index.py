"""Rows of a driver-held Arrow batch by the values of one column.

Reading an arrangement by key (a join's other side by the join key, a reduce's groups by
their key) cuts the driver's batches of it to the rows holding the keys of a step's changes.
A hash lookup scans the whole batch: 10 ms for a million rows, every round of a recursive
view's step. A batch of at least ``indexed_rows`` rows (a setting) is cut through an index
instead: its
row numbers sorted by the column (made once per batch and column, about 0.2 s a million
rows), where each value's rows are found by binary search (0.15 ms for 300 values in a
million rows), so a cut costs in proportion to the keys and rows it finds, not to the
batch. Integer columns are indexed; others are scanned.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.settings import active


@dataclass(frozen=True)
class KeyIndex:
    """A table's rows sorted by one of its columns: ``order`` the row numbers, NULLs last;
    ``keys`` the column's values in that order, NULLs left out."""

    order: np.ndarray
    keys: np.ndarray

    @staticmethod
    def of(table: pa.Table, column: str) -> KeyIndex:
        """The index of ``table`` by ``column``; a column in order already, with no NULLs
        (a batch read from files arranged by it), is its own: no sort (1M rows: 3 ms, where
        sorting took 0.1 s)."""
        values = table[column]
        if not values.null_count and len(values):
            keys = values.to_numpy()
            if bool(np.all(keys[1:] >= keys[:-1])):
                return KeyIndex(np.arange(len(keys)), keys)
        order = pc.sort_indices(values).to_numpy()  # NULLs last
        present = len(values) - values.null_count
        return KeyIndex(order, values.take(order[:present]).to_numpy())

    def rows(self, table: pa.Table, values: pa.Array) -> pa.Table:
        """The rows of ``table`` (the indexed one) holding one of ``values`` (NULL among
        them included), in key order."""
        found = self.order[positions(self.keys, pc.unique(values.drop_null()).to_numpy())]
        if values.null_count:
            found = np.concatenate([found, self.order[len(self.keys):]])
        return table.take(found)


def positions(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """The positions in ``keys`` (sorted) of those equal to one of ``wanted`` (distinct):
    each one's run found by binary search, so in time of the values and rows found."""
    lo = np.searchsorted(keys, wanted, "left")
    counts = np.searchsorted(keys, wanted, "right") - lo
    starts = np.repeat(lo - np.cumsum(counts) + counts, counts)
    return starts + np.arange(counts.sum())


_indexes: dict[tuple[int, str], KeyIndex] = {}
"""Indexes by batch (its id, while it lives) and column."""


def index(table: pa.Table, column: str) -> KeyIndex | None:
    """The index of ``table`` by ``column``, made at the first call (kept while the batch
    lives); None when the batch is not indexed: smaller than ``indexed_rows``, or the
    column holds no integers. A reader that will look a batch up by a column asks for it
    beforehand (``Trace.arrange``), so that a dataflow's first step does not make it."""
    if table.num_rows < active().indexed_rows or not pa.types.is_integer(
            table.schema.field(column).type):
        return None
    key = (id(table), column)
    if key not in _indexes:
        _indexes[key] = KeyIndex.of(table, column)
        weakref.finalize(table, _indexes.pop, key, None)
    return _indexes[key]


def holding(table: pa.Table, column: str, values: pa.Array) -> pa.Table:
    """The rows of ``table`` whose ``column`` holds one of ``values`` (NULL among them
    included): through the batch's index when it has one (``index``), else by a hash
    lookup over it."""
    values = values.cast(table.schema.field(column).type)
    indexed = index(table, column)
    if indexed is None:
        return table.filter(pc.is_in(table[column], value_set=values, skip_nulls=False))
    return indexed.rows(table, values)


def distinct_values(arrays: list[pa.Array], empty: pa.DataType | None = None) -> pa.Array:
    """The distinct values of one column read from several batches, as one array of the
    first one's type (of type ``empty``, BIGINT by default, when there are none): the keys
    a cut by key (``holding``) is made with."""
    if not arrays:
        return pa.array([], empty or pa.int64())
    return pc.unique(pa.chunked_array([a.cast(arrays[0].type) for a in arrays]))
