"""Peeks: reading a collection's contents (a query's result, a stored collection's rows, a
subscription's changes) out of Spark into Arrow.

A read never shows a row with negative multiplicity, which no SQL row can have: the job
that computes the rows fails at such a row (``NEGATIVE_ROWS``) instead of hiding it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.functions import EvalError
from matview.ir.sort_keys import SortKey
from matview.ir.types import SqlType
from matview.runtime.arrangements.consolidation import consolidate, consolidated_arrow
from matview.runtime.arrangements.spine import in_driver
from matview.runtime.arrangements.trace import NegativeRows, Trace
from matview.runtime.arrangements.updates import DIFF, TIME, union_all
from matview.runtime.lowering.checked import ERR
from matview.runtime.lowering.ordering import arrow_order, spark_order
from matview.runtime.lowering.types import column_names, update_schema
from matview.runtime.spark.jvm_plans import to_arrow
from matview.runtime.time import MIN_TIME
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

NEGATIVE_ROWS = ("the result holds a row with negative multiplicity, which no SQL row can "
                 "have (repeat_row with a negative count retracted more copies than there "
                 "were)")

Ordering = tuple[SortKey, ...]
"""Sort keys: (column, descending, nulls first)."""

Kept = Callable[[object, tuple[object, ...], Callable[[], DataFrame]], DataFrame]
"""Where a read's plan is made: ``(key, inputs, make)`` to a plan (``PendingStep.kept``)."""


def refusing_negative(updates: DataFrame) -> DataFrame:
    """``updates`` (consolidated) whose computation fails with ``NEGATIVE_ROWS`` at a row of
    negative multiplicity."""
    return updates.withColumn(DIFF, _checked_diff())


def _made(key: object, inputs: tuple[object, ...], make: Callable[[], DataFrame]
          ) -> DataFrame:
    return make()


def rows(updates: DataFrame | None, types: Sequence[SqlType], order_by: Ordering = (),
         offset: int | None = None, limit: int | None = None,
         errors: DataFrame | None = None, kept: Kept = _made) -> pa.Table:
    """The rows of consolidated ``updates`` (None: none) with columns of ``types``, each as
    many times as its multiplicity, sorted by ``order_by``, then ``offset`` and ``limit``
    applied: one Spark job. ``errors``: the messages of the errors the query's evaluation
    holds (``Controller.read_once``), computed in the same job; one of them is raised
    (``EvalError``) instead of the rows. ``kept``: where the plan collected is made (a kept
    read's ``PendingStep.kept``, made once for the same frames)."""
    names = column_names(len(types))
    if updates is None:
        schema = update_schema(types)
        if errors is not None:
            failed = errors
            _raise_first(to_arrow(kept("first error", (failed,), lambda: failed.limit(1))))
        return pa.table([pa.array([], f.type) for f in list(schema)[:len(types)]], names=names)
    shape = ("peek", tuple(types), order_by, offset, limit)
    if errors is None:
        return to_arrow(kept(shape, (updates,), lambda: _sorted(updates, types, order_by,
                                                                offset, limit)))
    table = to_arrow(kept(shape, (updates, errors), lambda: _with_errors(
        _sorted(updates, types, order_by, offset, limit), errors)), nullable=True)
    _raise_first(table.filter(pc.is_valid(table[ERR])).select([ERR]))
    return table.filter(pc.is_null(table[ERR])).drop_columns([ERR])


def _sorted(updates: DataFrame, types: Sequence[SqlType], order_by: Ordering,
            offset: int | None, limit: int | None) -> DataFrame:
    """``rows``' rows of ``updates``, each as many times as its multiplicity, sorted, then
    ``offset`` and ``limit`` applied (a plan)."""
    names = column_names(len(types))
    copies = F.explode(F.array_repeat(F.lit(1), _checked_diff().cast("int")))
    out = updates.select(*names, copies.alias("_copy"))
    if order_by:
        out = out.orderBy(*spark_order(names, order_by, types))
    if offset:
        out = out.offset(offset)
    if limit is not None:
        out = out.limit(limit)
    return out.select(*names)


def _with_errors(out: DataFrame, errors: DataFrame) -> DataFrame:
    """The rows of ``out`` with ``_err`` NULL, and a row of ``errors``' first message."""
    names = out.columns
    fields = {f.name: f.dataType for f in out.schema.fields}
    return out.select(*names, F.lit(None).cast("string").alias(ERR)).unionByName(
        errors.limit(1).select(*[F.lit(None).cast(fields[n]).alias(n) for n in names],
                               F.col("c0").alias(ERR)))  # the error's row


def _raise_first(messages: pa.Table) -> None:
    """Raise the first error message of one-column ``messages``, if it holds one."""
    if messages.num_rows:
        raise EvalError(str(messages.column(0)[0].as_py()))


def held_rows(trace: Trace, name: str, now: int, order_by: Ordering = ()) -> pa.Table | None:
    """The rows of stored collection ``name`` at ``now``, sorted by ``order_by``, when all its
    updates are held in the driver (consolidated and sorted there, no Spark job); None
    otherwise."""
    try:
        table = trace.held_rows(now)
    except NegativeRows as error:
        raise EvalError(f"{name}: {NEGATIVE_ROWS} (multiplicity {error.args[0]})") from None
    if table is None or not order_by:
        return table
    return table.take(arrow_order(table, column_names(trace.arity), order_by))


def check_errors(trace: Trace, name: str, now: int) -> None:
    """Raise the evaluation error materialized view ``name`` (``trace``) holds at ``now``, if
    it holds one."""
    found = None if trace.errors is None else trace.errors.any_row(now)
    if found is not None:
        raise EvalError(f'materialized view "{name}" holds an error: {found[0]}')


def changes(trace: Trace, arity: int, after: int, upper: int,
            snapshot: int | None = None) -> pa.Table | None:
    """The updates of ``trace`` at times in ``(after, upper]`` (with, when ``snapshot`` is a
    time, its contents at that time dated ``snapshot`` first), consolidated per time, as
    ``(time, diff, *columns)`` sorted by time then row (one Spark job, none when the
    driver holds them: ``_held_changes``); None when the trace holds no batch in that
    range."""
    names = column_names(arity)
    held = _held_changes(trace, names, after, upper, snapshot)
    if held is not None:
        return held or None
    parts = []
    if snapshot is not None:
        snap = trace.read(upto=snapshot)
        if snap is not None:
            parts.append(snap.withColumn(TIME, F.lit(snapshot).cast("bigint")))
    later = trace.read(after=after, upto=upper)
    if later is not None:
        parts.append(later)
    df = union_all(parts)
    if df is None:
        return None
    return to_arrow(consolidate(df).orderBy(TIME, *names).select(TIME, DIFF, *names))


def _held_changes(trace: Trace, names: list[str], after: int, upper: int,
                  snapshot: int | None) -> pa.Table | Literal[False] | None:
    """``changes`` computed in Arrow when the driver holds every batch they read (False:
    there is none), as ``held_rows`` reads a collection; None when it does not."""
    def cut(low: int | None, high: int) -> list[pa.Table] | None:
        tables = in_driver([b for b in trace.batches
                            if b.lower <= high and (low is None or b.upper > low)])
        return None if tables is None else [t.filter(pc.and_(
            pc.less_equal(t[TIME], high),
            pc.greater(t[TIME], MIN_TIME if low is None else low))) for t in tables]

    later = cut(after, upper)
    before = [] if snapshot is None else cut(None, snapshot)
    if later is None or before is None:
        return None
    if not later and not before:
        return False
    parts = [t.select([*names, TIME, DIFF]) for t in later]
    if before:
        contents = consolidated_arrow(pa.concat_tables(
            before, promote_options="permissive").select([*names, DIFF]))
        parts.insert(0, contents.append_column(TIME, pa.repeat(
            pa.scalar(snapshot, pa.int64()), contents.num_rows)).select([*names, TIME, DIFF]))
    table = consolidated_arrow(pa.concat_tables(parts, promote_options="permissive"))
    order = arrow_order(table, [TIME, *names],
                        [(i, False, True) for i in range(len(names) + 1)])
    return table.take(order).select([TIME, DIFF, *names])


def _checked_diff() -> Column:
    """``_diff``, failing the job at a negative one."""
    diff = F.col(DIFF)
    failed = F.raise_error(F.concat(F.lit(NEGATIVE_ROWS + " (multiplicity "),
                                    diff.cast("string"), F.lit(")")))
    return F.when(diff < 0, failed).otherwise(diff)

