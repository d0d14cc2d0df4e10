"""The as-of join on transaction time (``AsOfJoin``, seed 001) on Spark: differentiate, half
join, integrate.

A step's left changes, consolidated, are its differences. Each carries ``_as``, the time at
which it reads the right input: an insertion its own time; a retraction the time of its
key's latest insertion earlier in the same step (``unique``, the left input's unique key:
one row per key at a time), when there is one. The changes with an ``_as`` are half-joined
with the right input's updates (its history and its changes of the step) at times ``<=
_as`` where the keys are equal and the predicates hold; the right updates of one pair
summed (earlier ones may cancel), the pairs that remain are the change's output, at the
change's time with the product of the diffs. With ``outer`` a change matching none is
padded with NULLs. A retraction without an ``_as`` (its row arrived in an earlier step)
emits the negation, at its time, of its row joined with the right rows its key got: the
operator's ``matches`` arrangement (each output row's left key and right columns, no copy
of the left row), read by the key's first column (integrate: its output is the sum of its
differences). Right's changes alone emit nothing, but are computed every step (their
operators' state advances) and, arranged by the right input, serve later steps.

The first step's changes (every row at ``as_of``, batches that cancel among them) and a
step's insertions alone are half-joined as they come (linear); changes that may hold
retractions are consolidated first. A small step's output is computed once (Arrow) and
``matches`` cut from it in the driver; a large step's output is a plan its consumer
computes, of which only ``matches`` is written (the output too when a consumer looks it
up).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.scalar import Col, Scalar
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    key_match,
    lookup,
    materialize,
    stored,
    union_all,
)
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.operators.base import ArrangedWhenLookedUp, Delta, Operator, StepContext
from matview.runtime.operators.keyed_state import read_touched
from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F

_AS, _RIGHT_DIFF = "_as", "_rdiff"
"""The time a left change reads the right input at; the right updates' summed diff."""


@dataclass
class AsOfJoinOp(ArrangedWhenLookedUp, Operator):
    """``AsOfJoin``: see the module docstring. ``matches`` arranges the left key and right
    columns of its output rows; ``output`` its output, only when a consumer looks it up."""

    kind: ClassVar[str] = "AsOfJoin"
    arranges: ClassVar[tuple[str, ...]] = ("matches", "output")

    left: Operator | None = None
    right: Operator | None = None
    left_keys: tuple[Scalar, ...] = ()
    right_keys: tuple[Scalar, ...] = ()
    predicates: tuple[Scalar, ...] = ()
    outer: bool = False
    unique: tuple[int, ...] = ()
    matches: Trace | None = None
    output: Trace | None = None

    def attach(self, what: str, trace: Trace) -> None:
        """Hold ``what``; ``matches`` arranged by its first column, the unique key's first
        (a retraction's read)."""
        super().attach(what, trace)
        if what == "matches":
            trace.arrange("c0")

    def arrangement_arity(self, what: str) -> int:
        """``matches``: the unique key's columns and the right input's; ``output``: its
        own."""
        assert self.right is not None
        return len(self.unique) + self.right.arity if what == "matches" else self.arity

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.left is not None and self.right is not None and self.matches is not None
        right_changes = self.right.delta(ctx)
        changes = self.left.delta(ctx)
        if changes is None:
            return None
        retracts = _retracts(changes) and not ctx.first  # the first: all at as_of, linear
        stamp = retracts and not (ctx.single_time or ctx.collapsed)  # one may follow
        left = self.frame_of(ctx, "left", changes)
        rights = [part for part in (
            self._right_history(ctx),
            None if right_changes is None else self.frame_of(ctx, "right", right_changes))
            if part is not None]
        old = self._old(ctx) if retracts else None
        out = self.planned("output", (left, *rights, old, retracts, stamp, ctx.small),
                           lambda: self._output(ctx, left, union_all(rights), old, retracts,
                                                stamp))
        if out is not None and not ctx.small and self.output is None:
            # a large step's output is a plan its consumer computes; only matches is written
            self.stage(self.matches, materialize(ctx.spark, self._narrowed(out), False), ctx)
            return Delta(out, None)
        result = None if out is None else materialize(ctx.spark, out, ctx.small)
        if self.output is not None:
            self.stage(self.output, result, ctx)
        self.stage(self.matches, None if result is None else self._matched(ctx, result), ctx)
        return None if result is None else Delta(None, result.rows, result, count=result.rows)

    def _right_history(self, ctx: StepContext) -> DataFrame | None:
        """The right input's updates up to ``lower``: read by its first key column the
        values the left changes hold in it, when the driver knows them and the right input
        can be read so (a stored collection, arranged by it from the first step on); else
        all of them."""
        assert self.left is not None and self.right is not None
        pair = next(((k, r) for k, r in zip(self.left_keys, self.right_keys, strict=True)
                     if isinstance(k, Col) and isinstance(r, Col)), None)
        if ctx.first:
            if pair is not None:
                self.right.arrange(pair[1].index)
            return None
        values = None if pair is None else self.left.step_values(ctx, pair[0].index)
        found = None if values is None or pair is None else self.right.history_matching(
            ctx, pair[1].index, values)
        return self.right.history(ctx) if found is None else found.frame

    def _old(self, ctx: StepContext) -> DataFrame | None:
        """Its ``matches`` up to ``lower`` that the step's retractions may read: the rows
        of their keys, by the key's first column, when the driver knows its values."""
        assert self.left is not None and self.matches is not None
        source, first = self.left, self.unique[0]
        return read_touched(self, ctx, self.matches, "matches", "c0",
                            lambda: source.step_values(ctx, first))

    def _matched(self, ctx: StepContext, result: Leaf) -> Leaf | None:
        """The step's output batch ``result`` as ``matches`` holds it (``_narrowed``; in
        Arrow when the driver holds it)."""
        if result.table is None:
            return materialize(ctx.spark, self._narrowed(result.df), ctx.small)
        kept, names = self._kept()
        return stored(ctx.spark, result.table.select(kept).rename_columns(names))

    def _narrowed(self, out: DataFrame) -> DataFrame:
        """Output updates ``out`` as ``matches`` holds them: each row's unique key
        columns, then its right columns."""
        kept, names = self._kept()
        return out.select(*[col(c).alias(n) for c, n in zip(kept, names, strict=True)])

    def _kept(self) -> tuple[list[str], list[str]]:
        """The output columns ``matches`` keeps, then time and diff, and their names there."""
        assert self.left is not None and self.right is not None
        width = self.left.arity
        kept = [*[f"c{c}" for c in self.unique],
                *[f"c{width + j}" for j in range(self.right.arity)]]
        return [*kept, TIME, DIFF], [*column_names(len(kept)), TIME, DIFF]

    def _output(self, ctx: StepContext, changes: DataFrame, rights: DataFrame | None,
                old: DataFrame | None, retracts: bool, stamp: bool) -> DataFrame | None:
        """The plan of the step's output: the left ``changes`` (each with its ``_as``, by
        a window over its key's times when ``stamp``) half-joined with ``rights``, and
        the retractions without an ``_as`` negating their rows of ``old``. Without
        ``retracts`` (no retraction known, or the first step, whose changes are all at
        ``as_of``: linear) every change is half-joined at its time, as it comes; else the
        changes are consolidated first (an insertion and a retraction of a row at one
        time cancel, rather than read two different things)."""
        assert self.left is not None
        names = column_names(self.left.arity)
        left = changes.select(*names, TIME, DIFF)
        if not retracts:
            return self._half_join(ctx, left.withColumn(_AS, col(TIME)), rights)
        left = consolidate(left, ctx.small)
        inserted = col(DIFF) > 0
        if stamp:
            earlier = SparkWindow.partitionBy(*[names[c] for c in self.unique]).orderBy(
                TIME).rangeBetween(SparkWindow.unboundedPreceding, -1)
            stamped = left.withColumn(_AS, F.when(inserted, col(TIME)).otherwise(
                F.max(F.when(inserted, col(TIME))).over(earlier)))
        else:
            stamped = left.withColumn(_AS, F.when(inserted, col(TIME)))
        parts = [self._half_join(ctx, stamped.where(col(_AS).isNotNull()), rights)]
        if old is not None:
            parts.append(self._integrated(ctx, stamped.where(col(_AS).isNull()), old))
        out = union_all([p for p in parts if p is not None])
        return None if out is None else consolidate(out, ctx.small)

    def _half_join(self, ctx: StepContext, probe: DataFrame,
                   rights: DataFrame | None) -> DataFrame | None:
        """The output of the changes ``probe`` (each with its ``_as``): their pairs with
        the right updates ``rights`` up to ``_as`` (and, ``outer``, the changes without)."""
        assert self.left is not None and self.right is not None
        width, arity = self.left.arity, self.right.arity
        names, others = column_names(width), [f"r{j}" for j in range(arity)]
        shown = column_names(self.arity)
        matched = None
        if rights is not None:
            renamed = rights.select(*[col(f"c{j}").alias(others[j]) for j in range(arity)],
                                    col(TIME).alias("_rtime"), col(DIFF).alias(_RIGHT_DIFF))
            joined = lookup(probe, renamed, self._condition(names, others), "inner", ctx.small)
            summed = joined.groupBy(*names, TIME, DIFF, _AS, *others).agg(
                F.sum(_RIGHT_DIFF).alias(_RIGHT_DIFF)).where(col(_RIGHT_DIFF) != 0)
            matched = summed.select(
                *names, *[col(o).alias(s) for o, s in zip(others, shown[width:], strict=True)],
                col(TIME), (col(DIFF) * col(_RIGHT_DIFF)).alias(DIFF))
        if not self.outer:
            return matched
        unmatched = probe if matched is None else lookup(
            probe, matched.select(*[col(names[c]).alias(f"m{c}") for c in self.unique],
                                  col(TIME).alias("_mtime")).distinct(),
            key_match([names[c] for c in self.unique], [f"m{c}" for c in self.unique])
            & (col(TIME) == col("_mtime")), "left_anti", ctx.small)
        padded = unmatched.select(*names, *[
            F.lit(None).cast(spark_type(t)).alias(s)
            for t, s in zip(self.right.types, shown[width:], strict=True)], TIME, DIFF)
        return union_all([f for f in (matched, padded) if f is not None])

    def _condition(self, names: list[str], others: list[str]) -> Column:
        """The half join's condition: keys equal, right's update not after ``_as``, the
        predicates TRUE (over left's columns then right's)."""
        assert self.left is not None and self.right is not None
        lefts = [col(n) for n in names]
        rights = [col(o) for o in others]
        conds = [compile_scalar(k, lefts, self.left.types)
                 == compile_scalar(r, rights, self.right.types)
                 for k, r in zip(self.left_keys, self.right_keys, strict=True)]
        conds.append(col("_rtime") <= col(_AS))
        conds += [compile_scalar(p, lefts + rights, self.types) for p in self.predicates]
        return functools.reduce(Column.__and__, conds)

    def _integrated(self, ctx: StepContext, gone: DataFrame, old: DataFrame) -> DataFrame:
        """The negation, at each retraction's time, of the retractions ``gone`` (whose rows
        arrived in earlier steps) joined with the right rows their keys got (``old``, of
        ``matches``)."""
        assert self.left is not None
        width, keys = self.left.arity, len(self.unique)
        names, shown = column_names(width), column_names(self.arity)
        got = old.select(*[col(f"c{i}").alias(f"k{i}") for i in range(keys)], *[
            col(f"c{keys + j}").alias(shown[width + j]) for j in range(self.arity - width)],
            col(TIME).alias("_mtime"), col(DIFF).alias("_mdiff"))
        found = lookup(got, gone, key_match([f"k{i}" for i in range(keys)],
                                            [names[c] for c in self.unique]), "inner",
                       ctx.small)
        return found.select(*shown, TIME, (col(DIFF) * col("_mdiff")).alias(DIFF))

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        """A left column's values in the step's output are those of its left changes."""
        assert self.left is not None
        return self.left.step_values(ctx, column) if column < self.left.arity else None

    def children(self) -> tuple[Operator, ...]:
        assert self.left is not None and self.right is not None
        return (self.left, self.right)


def _retracts(delta: Delta) -> bool:
    """Whether ``delta`` may hold retractions (True unless the driver holds its rows)."""
    table = None if delta.leaf is None else delta.leaf.table
    return table is None or (table.num_rows > 0 and pc.min(table[DIFF]).as_py() < 0)
