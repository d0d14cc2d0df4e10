"""A write's check against its table's constraints: no NULL in a ``NOT NULL`` column, no two
rows sharing a unique key (``PRIMARY KEY``, ``UNIQUE``), checked before anything is
appended or staged (``transactions``), so a write that would break one changes nothing
(PostgreSQL checks them at each statement, as here).

Only the keys the write inserts are looked at: the rows holding them are summed with the
write's and the transaction's staged batches. A write held in the driver finds the held
rows of its keys by the key's first column (in Arrow for batches the driver holds, by key
in the copies of batches held in files arranged by it, which a table with keys always
is; ``retractions.held_updates``); a larger write is checked in one Spark job.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.retractions import held_updates
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import DIFF, Leaf, union_all
from matview.runtime.lowering.types import col, column_names
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


class ConstraintViolation(Exception):
    """A write breaks a constraint of its table (PostgreSQL's SQLSTATE class 23)."""


@dataclass(frozen=True)
class Constraints:
    """What writes to table ``table`` (columns ``names``) must keep: no NULL in the columns
    at ``not_null``; per unique key, ``(name, column positions)``, no two rows holding equal
    values in all of them (a row with NULL in one is exempt)."""

    table: str
    names: tuple[str, ...]
    not_null: tuple[int, ...] = ()
    unique: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def check(self, trace: Trace, leaf: Leaf, staged: Sequence[Leaf]) -> None:
        """Raise ``ConstraintViolation`` unless adding batch ``leaf`` to ``trace``'s updates
        and the ``staged`` batches keeps every constraint."""
        found = null_in(leaf, self.not_null)
        if found is not None:
            raise ConstraintViolation(
                f'null value in column "{self.names[found]}" of relation '
                f'"{self.table}" violates not-null constraint')
        for name, columns in self.unique:
            values = duplicated(trace, leaf, columns, staged)
            if values is not None:
                listed = ", ".join(self.names[i] for i in columns)
                raise ConstraintViolation(
                    f'duplicate key value violates unique constraint "{name}": Key '
                    f"({listed})=({shown(values)}) already exists.")


def null_in(leaf: Leaf, columns: Sequence[int]) -> int | None:
    """The first of ``columns`` (positions) that a row ``leaf`` inserts holds NULL in, or
    None (held in Spark: one Spark job)."""
    updates = leaf.in_driver
    found = _inserted_null(leaf.df if updates is None else updates,
                           [f"c{i}" for i in columns])
    return None if found is None else int(found[1:])


def duplicated(trace: Trace, leaf: Leaf, columns: Sequence[int], staged: Sequence[Leaf] = ()
               ) -> tuple[object, ...] | None:
    """Values of ``columns`` (positions) that more than one row holds once batch ``leaf``
    is added to ``trace``'s updates and the ``staged`` batches, among those it inserts
    (with no NULL), or None."""
    keys = [f"c{i}" for i in columns]
    updates = leaf.in_driver
    if updates is not None:
        return _duplicate_in_driver(trace, updates, staged, keys)
    return _duplicate_in_spark(trace, leaf.df, staged, keys)


def shown(values: Sequence[object]) -> str:
    """Key values as PostgreSQL shows them in a message: ``1, NULL, x``."""
    return ", ".join("NULL" if v is None else str(v) for v in values)


def _inserted_null(updates: pa.Table | DataFrame, columns: list[str]) -> str | None:
    """The first of ``columns`` that a row ``updates`` insert holds NULL in, or None (a
    DataFrame: one Spark job)."""
    if not columns:
        return None
    if isinstance(updates, pa.Table):
        inserted = updates.filter(pc.greater(updates[DIFF], 0))
        return next((c for c in columns if inserted[c].null_count), None)
    nulls = functools.reduce(Column.__or__, [col(c).isNull() for c in columns])
    found = updates.where((col(DIFF) > 0) & nulls).select(*columns).limit(1).collect()
    return None if not found else next(c for c in columns if found[0][c] is None)


def _valid(rows: pa.Table, keys: list[str]) -> pa.ChunkedArray:
    """Whether each of ``rows`` holds no NULL in ``keys``."""
    mask = pc.is_valid(rows[keys[0]])
    for key in keys[1:]:
        mask = pc.and_(mask, pc.is_valid(rows[key]))
    return mask


def _inserted(updates: pa.Table, keys: list[str]) -> pa.Table:
    """The rows ``updates`` insert with no NULL in ``keys``."""
    return updates.filter(pc.and_(pc.greater(updates[DIFF], 0), _valid(updates, keys)))


def _duplicate_in_driver(trace: Trace, updates: pa.Table, staged: Sequence[Leaf],
                         keys: list[str]) -> tuple[object, ...] | None:
    """Values of ``keys`` more than one row holds once Arrow ``updates`` are added, among
    those they insert, or None."""
    names = column_names(trace.arity)
    inserted = _inserted(updates.select([*names, DIFF]), keys)
    if inserted.num_rows == 0:
        return None
    first = keys[0]
    values = pc.unique(inserted[first])
    parts = held_updates(trace, staged, inserted.select(names), first, [first])
    parts.append(updates.select([*names, DIFF]))
    rows = pa.concat_tables([p.cast(parts[-1].schema) for p in parts])
    rows = rows.filter(pc.and_(pc.is_in(rows[first], value_set=values), _valid(rows, keys)))
    summed = rows.group_by(keys, use_threads=False).aggregate([(DIFF, "sum")])
    over = summed.filter(pc.greater(summed[f"{DIFF}_sum"], 1))
    return tuple(over.slice(0, 1).to_pylist()[0][k] for k in keys) if over.num_rows else None


def _duplicate_in_spark(trace: Trace, updates: DataFrame, staged: Sequence[Leaf],
                        keys: list[str]) -> tuple[object, ...] | None:
    """Values of ``keys`` more than one row holds once ``updates`` are added, among those
    they insert, or None: one Spark job over the rows of those keys."""
    names = column_names(trace.arity)
    frames = [leaf.df.select(*names, DIFF)
              for leaf in [b.leaf for b in trace.batches] + list(staged)]
    both = union_all([*frames, updates.select(*names, DIFF)])
    assert both is not None
    touched = updates.where(col(DIFF) > 0).select(*keys).distinct()
    found = (both.join(touched, keys, "left_semi").groupBy(*keys)
             .agg(F.sum(DIFF).alias(DIFF)).where(col(DIFF) > 1).limit(1).collect())
    return tuple(found[0][k] for k in keys) if found else None
