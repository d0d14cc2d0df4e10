"""ORDER BY ... LIMIT ... OFFSET on Spark, kept up to date from the changes (``TopK``).

Rows are ranked by the keys, ties broken by every other column (``sort_keys.total_order``),
a row of multiplicity m taking m positions. With k = offset + limit (offset when there is no
limit), the operator keeps the *prefix* W: the first distinct rows of its input, each with
its whole multiplicity, at least k positions of them unless W is the whole input (so W
with fewer than k positions is the whole input). Whatever ranks after W's last row is at a
position after k, so the first k positions are W's.

Each time of a step, in order, changes W in the driver (Arrow, ``ordering.arrow_order``):
changes to rows ranked at or before W's last row are applied to W, the others are dropped
(they stay after position k), and W is cut back to the rows starting before position 2k.
Only when deletions leave W with fewer than k positions, while it may not have been the
whole input, is W read again: the first 2k distinct rows of the input's contents at that
time (its arrangement ``values`` up to the step's lower frontier and the step's changes up
to that time), in Arrow when both are held in the driver, else with one Spark job (a sorted
``limit``). The output changes by the rows entering and leaving positions offset+1 ..
offset+limit of W; with no limit, the output is the input less its first ``offset``
positions, so it changes by the input's changes less the changes of those positions.

So a small step that inserts rows, or deletes rows after W or no more of W's rows than
its positions beyond k, reads neither the input's arrangement nor Spark: it runs the one
job that computes its input changes, if they are not held in the driver already (none
when its input is a Reduce). A step whose changes are not held in the driver (too large)
reads W again from Spark at each of its times (one job each, and one listing the times).

Without its arrangements (a TopK inside a recursive query's loop, which holds its input's
differences with their rounds: ``runtime.recursion.group_wise``) the input's contents before
the step are its input's history, and W as of the lower frontier is read from them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.sort_keys import SortKey, total_order
from matview.runtime.arrangements.consolidation import consolidate, consolidated_arrow, grouped
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    materialize,
    normalized,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.ordering import arrow_order, spark_order
from matview.runtime.lowering.types import col, column_names, update_schema
from matview.runtime.operators.base import ArrangedWhenLookedUp, Delta, Operator, StepContext
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

_IN_PREFIX = "_in_prefix"
"""A column marking the rows of the prefix among the changes they are summed with."""


@dataclass
class TopKOp(ArrangedWhenLookedUp, Operator):
    """``TopK``: see the module docstring. ``values`` arranges the input's updates,
    ``prefix`` the prefix W, ``output`` its output when a consumer looks it up."""

    kind: ClassVar[str] = "TopK"
    arranges: ClassVar[tuple[str, ...]] = ("values", "prefix", "output")

    input: Operator | None = None
    order_by: tuple[SortKey, ...] = ()
    limit: int | None = None
    offset: int = 0
    values: Trace | None = None
    prefix: Trace | None = None
    output: Trace | None = None

    @property
    def _depth(self) -> int:
        """k: the positions the output depends on."""
        return self.offset + (self.limit or 0)

    @property
    def _names(self) -> list[str]:
        return column_names(self.arity)

    @property
    def _order(self) -> tuple[SortKey, ...]:
        return total_order(self.order_by, self.arity)

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        if self.values is None:
            delta = self.input.delta(ctx)
            leaf = None if delta is None else delta.leaf or materialize(
                ctx.spark, consolidate(delta.df, ctx.small), ctx.small)
        else:
            leaf = self.arranged_changes(ctx, self.input, self.values)
        if leaf is None:
            return None
        changes = leaf.in_driver
        if changes is not None:
            times = pc.unique(changes[TIME]).to_pylist()
        elif ctx.first:
            times = [ctx.as_of]
        else:
            times = [row[0] for row in leaf.df.select(TIME).distinct().collect()]
        names = self._names
        prefix = self._prefix(ctx)
        prefix_parts: list[pa.Table] = []
        output_parts: list[pa.Table] = []
        for at in sorted(times):
            now = None if changes is None else consolidated_arrow(
                changes.filter(pc.equal(changes[TIME], at)).drop_columns([TIME]))
            new = None if now is None else self._advanced(prefix, now)
            if new is None:
                new = self._read(ctx, leaf, at)
            prefix_parts.append(_at(_less(new, prefix), at))
            if self.limit is None:
                output_parts.append(_at(_less(self._window(prefix, 0, self.offset),
                                              self._window(new, 0, self.offset)), at))
            else:
                stop = self.offset + self.limit
                output_parts.append(_at(_less(self._window(new, self.offset, stop),
                                              self._window(prefix, self.offset, stop)), at))
            prefix = new
        if self.prefix is not None:
            self.stage(self.prefix, _stored(ctx, prefix_parts), ctx)
        output = _stored(ctx, output_parts)
        if self.limit is None:  # the input's changes pass, less those of the first rows
            if changes is not None:
                output = _stored(ctx, [changes.select([*names, TIME, DIFF]),
                                       *([] if output is None else [output.in_driver])])
            else:
                df = union_all([leaf.df.select(*names, TIME, DIFF),
                                *([] if output is None else [output.df])])
                assert df is not None
                if self.output is None:
                    return Delta(df, None)
                output = materialize(ctx.spark, consolidate(df), ctx.small)
        if self.output is not None:
            self.stage(self.output, output, ctx)
        if output is None:
            return None
        return Delta(None, output.rows, output, count=output.rows)

    def _prefix(self, ctx: StepContext) -> pa.Table:
        """W as of the step's lower frontier, sorted (columns ``c*`` and ``_diff``); read
        from the input's contents then without the ``prefix`` arrangement."""
        if self.prefix is None:
            return self._read(ctx, None, ctx.lower)
        names = self._names
        if ctx.first or not self.prefix.batches:
            return self._empty()
        held = self.prefix.held_contents(ctx.lower)
        if held is None:  # held in Spark: a large k
            df = self.prefix.read(upto=ctx.lower)
            assert df is not None
            held = normalized(to_arrow(df.groupBy(*names).agg(F.sum(DIFF).alias(DIFF))
                                       .where(col(DIFF) != 0)))
        return self._sorted(held)

    def _empty(self) -> pa.Table:
        """No rows (data columns and ``_diff``)."""
        return update_schema(self.types).empty_table().drop_columns([TIME])

    def _sorted(self, rows: pa.Table) -> pa.Table:
        """``rows`` (data columns and ``_diff``) sorted by the total order."""
        return rows.take(arrow_order(rows, self._names, self._order, total=True)).combine_chunks()

    def _advanced(self, prefix: pa.Table, changes: pa.Table) -> pa.Table | None:
        """W after ``changes`` (data columns and ``_diff``, at one time), or None when
        deletions left it with fewer than k positions and it may not be the whole input."""
        depth = self._depth
        whole = _positions(prefix) < depth
        marked = pa.concat_tables([
            prefix.append_column(_IN_PREFIX, pa.array([True] * prefix.num_rows, pa.bool_())),
            changes.append_column(_IN_PREFIX, pa.array([False] * changes.num_rows, pa.bool_())),
        ], promote_options="permissive")
        summed = grouped(marked, self._names, [(DIFF, "sum"), (_IN_PREFIX, "any")])
        summed = self._sorted(summed.rename_columns([*self._names, DIFF, _IN_PREFIX]))
        if not whole:  # rows after W's last row stay after position k: dropped
            inside = summed[_IN_PREFIX].to_numpy(zero_copy_only=False)
            last = int(inside.nonzero()[0].max()) + 1 if inside.any() else 0
            summed = summed.slice(0, last)
        kept = summed.filter(pc.greater(summed[DIFF], 0)).drop_columns([_IN_PREFIX])
        if not whole and _positions(kept) < depth:
            return None
        return self._cut(kept)

    def _cut(self, rows: pa.Table) -> pa.Table:
        """Sorted ``rows`` less those starting at or after position 2k."""
        ends = pc.cumulative_sum(rows[DIFF])
        starts = pc.subtract(ends, rows[DIFF])
        return rows.filter(pc.less(starts, 2 * self._depth))

    def _read(self, ctx: StepContext, leaf: Leaf | None, at: int) -> pa.Table:
        """W read again: the first distinct rows of the input's contents at time ``at``
        (as of the lower frontier, ``_history``, and the step's changes ``leaf`` up to
        ``at``) up to position 2k, in Arrow when both are held in the driver, else in one
        Spark job."""
        names, depth = self._names, 2 * self._depth
        if depth == 0:
            return self._empty()
        changes = None if leaf is None else leaf.in_driver
        held, history = self._history(ctx)
        if history is None and (leaf is None or changes is not None):
            parts = [self._empty()]
            if changes is not None:
                parts.append(changes.filter(pc.less_equal(changes[TIME], at))
                             .drop_columns([TIME]))
            if held is not None:
                parts.append(held.select([*names, DIFF]))
            contents = consolidated_arrow(pa.concat_tables(parts, promote_options="permissive"))
            return self._cut(self._sorted(contents.filter(pc.greater(contents[DIFF], 0))))
        frames = [] if leaf is None else [leaf.df.where(col(TIME) <= at).select(*names, DIFF)]
        if history is not None:
            frames.append(history.select(*names, DIFF))
        contents = union_all(frames)
        assert contents is not None
        first = (contents.groupBy(*names).agg(F.sum(DIFF).alias(DIFF)).where(col(DIFF) > 0)
                 .orderBy(*spark_order(names, self._order, self.types, total=True)).limit(depth))
        return self._cut(self._sorted(normalized(to_arrow(first))))

    def _history(self, ctx: StepContext) -> tuple[pa.Table | None, DataFrame | None]:
        """The input's contents as of the step's lower frontier: held in the driver (a
        table of data columns and ``_diff``), or a frame of updates; (None, None) when
        there are none. Without the ``values`` arrangement, its input's history."""
        assert self.input is not None
        if ctx.first:
            return None, None
        if self.values is None:
            return None, self.input.history(ctx)
        if not self.values.batches:
            return None, None
        held = self.values.held_contents(ctx.lower)
        return (held, None) if held is not None else (None, self.values.read(upto=ctx.lower))

    def _window(self, rows: pa.Table, start: int, stop: int) -> pa.Table:
        """The rows of sorted ``rows`` at positions ``start`` .. ``stop - 1`` (from 0), each
        with the number of its positions there."""
        ends = pc.cumulative_sum(rows[DIFF])
        starts = pc.subtract(ends, rows[DIFF])
        taken = pc.subtract(pc.min_element_wise(ends, stop),
                            pc.max_element_wise(starts, start))
        out = rows.set_column(rows.column_names.index(DIFF), DIFF, taken)
        return out.filter(pc.greater(taken, 0))

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)


def _positions(rows: pa.Table) -> int:
    """The positions ``rows`` take: the sum of their multiplicities."""
    return int(pc.sum(rows[DIFF]).as_py() or 0)


def _less(a: pa.Table, b: pa.Table) -> pa.Table:
    """The rows of ``a`` less those of ``b`` (data columns and ``_diff``), consolidated."""
    negated = b.set_column(b.column_names.index(DIFF), DIFF, pc.negate(b[DIFF]))
    return consolidated_arrow(pa.concat_tables([a, negated], promote_options="permissive"))


def _at(rows: pa.Table, at: int) -> pa.Table:
    """``rows`` (data columns and ``_diff``) as updates at time ``at``."""
    times = pa.array([at] * rows.num_rows, pa.int64())
    return rows.add_column(rows.num_columns - 1, TIME, times)


def _stored(ctx: StepContext, parts: list[pa.Table]) -> Leaf | None:
    """The updates ``parts`` as one consolidated batch held in the driver; None if empty."""
    table = consolidated_arrow(pa.concat_tables(parts, promote_options="permissive"))
    return stored_or_none(ctx.spark, table)
