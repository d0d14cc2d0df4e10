"""Window functions on Spark, computed again only over the partitions a step touches
(``Window``).

A step's input changes name the partitions they touch and the times at which they touch
each one (its interesting times, seed 002). The contents of a touched partition at each of
its times are its arranged rows before the step (``values``, restricted to the touched
partition keys by a semi-join) plus the step's changes up to that time; the partition's
contents just before the step are its snapshot at ``NEVER``. Spark's window functions,
partitioned by (partition key, time), give every row of every such snapshot its values;
each snapshot's output is inserted at its time and retracted at the partition's next
interesting time (the snapshot at ``NEVER`` is only retracted, at the first), so a step
spanning many times gives exactly the per-time output of stepping one time at a time.

The order of each call is its ORDER BY then every other column (``total_order``), so the
values are deterministic: a partition's output computed again from the same rows is the
same rows, and its retraction cancels exactly what was inserted (``lowering.window_values``).

Without its ``values`` arrangement (a window inside a recursive query's loop, which holds its
input's differences with their rounds: ``runtime.recursion.group_wise``) the arranged rows
are its input's history, and its changes a plan the loop's round computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from matview.ir.window_call import WindowCall
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    key_match,
    lookup,
    materialize,
    union_all,
)
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.lowering.window_values import window_value
from matview.runtime.operators.base import ArrangedWhenLookedUp, Delta, Operator, StepContext
from matview.runtime.operators.keyed_state import large, read_touched
from matview.runtime.operators.reduce_state import NEVER
from pyspark.sql import DataFrame
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F

_AT, _NEXT, _COPIES = "_at", "_next", "_copies"
"""A snapshot's time, the partition's next interesting time, a row's copies in it."""


@dataclass
class WindowOp(ArrangedWhenLookedUp, Operator):
    """``Window``: see the module docstring. ``values`` arranges the input's rows;
    ``output`` its own output, only when a consumer looks it up."""

    kind: ClassVar[str] = "Window"
    arranges: ClassVar[tuple[str, ...]] = ("values", "output")

    input: Operator | None = None
    partition_by: tuple[int, ...] = ()
    calls: tuple[WindowCall, ...] = ()
    values: Trace | None = None
    output: Trace | None = None

    @property
    def _names(self) -> list[str]:
        """The input's columns."""
        assert self.input is not None
        return column_names(self.input.arity)

    @property
    def _keys(self) -> list[str]:
        return [self._names[c] for c in self.partition_by]

    def arrangement_arity(self, what: str) -> int:
        """``values``: the input's columns; ``output``: its own."""
        assert self.input is not None
        return self.input.arity if what == "values" else self.arity

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        if self.values is None:  # its input's history is the arranged rows
            changes = self.input.delta(ctx)
            if changes is None:
                return None
            history = None if ctx.first else self.input.history(ctx)
            frame = self.frame_of(ctx, "delta", changes)
            return Delta(self.planned("output", (frame, history, ctx.small),
                                      lambda: self._updates(ctx, frame, history)), None)
        leaf = self.arranged_changes(ctx, self.input, self.values)
        if leaf is None:
            return None
        new = self.leaf_frame(ctx, "changes", leaf)
        old = None if ctx.first else self._arranged(ctx)
        out = self.planned("output", (new, old, ctx.small),
                           lambda: consolidate(self._updates(ctx, new, old)))
        result = materialize(ctx.spark, out, ctx.small)
        if self.output is not None:
            self.stage(self.output, result, ctx)
        return None if result is None else Delta(None, result.rows, result, count=result.rows)

    def _arranged(self, ctx: StepContext) -> DataFrame | None:
        """The arranged rows a step reads (``keyed_state.read_touched``): the touched
        partitions', by the first partition column, once they are ``large``; else all."""
        assert self.input is not None and self.values is not None
        source = self.input
        keyed = bool(self.partition_by) and large(self.values)
        return read_touched(self, ctx, self.values, "values",
                            f"c{self.partition_by[0]}" if keyed else None,
                            lambda: source.step_values(ctx, self.partition_by[0]))

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        """A partition column's values in the step's output are those of its input's
        changes (the touched partitions); of other columns the driver knows none."""
        assert self.input is not None
        return self.input.step_values(ctx, column) if column in self.partition_by else None

    def attach(self, what: str, trace: Trace) -> None:
        """Hold arrangement ``what`` in ``trace``; ``values`` is arranged by the first
        partition column: past ``whole_state_rows`` a step reads the touched partitions'
        rows by it (``keyed_state.read_touched``)."""
        super().attach(what, trace)
        if what == "values" and self.partition_by:
            trace.arrange(f"c{self.partition_by[0]}")

    def _updates(self, ctx: StepContext, new: DataFrame, old: DataFrame | None) -> DataFrame:
        """The plan of the step's output updates from the input's changes
        ``new`` and its arranged rows ``old`` (None on the first step): made once per shape
        of step (``planned``), over slots in a templated step."""
        names, keys = self._names, self._keys
        changes = new.select(*names, TIME, DIFF)
        if ctx.small:  # read in one partition: the distinct times need no shuffle
            changes = changes.coalesce(1)
        touched = changes.select(*keys, TIME).distinct()
        parts = [changes]
        if old is not None:
            if keys:
                partitions = touched.select(*[col(k).alias(f"t_{k}") for k in keys])
                old = lookup(old, partitions, key_match(keys, [f"t_{k}" for k in keys]),
                             "left_semi", ctx.small)
            parts.insert(0, old.groupBy(*names).agg(F.sum(DIFF).alias(DIFF))
                         .select(*names, F.lit(NEVER).alias(TIME), DIFF))
            touched = touched.unionByName(
                touched.select(*keys, F.lit(NEVER).alias(TIME)).distinct())
        if ctx.small:  # the times' window below in one partition: no shuffle
            touched = touched.coalesce(1)
        return self._output(ctx, union_all(parts), touched)

    def _output(self, ctx: StepContext, candidates: DataFrame | None,
                touched: DataFrame) -> DataFrame:
        """The output updates: each touched partition's snapshot at each of its times
        (``touched``: partition key and time), inserted then and retracted at the next."""
        assert candidates is not None
        names, keys = self._names, self._keys
        at = touched.select(
            *[col(k).alias(f"x_{k}") for k in keys], col(TIME).alias(_AT),
            F.lead(TIME).over(SparkWindow.partitionBy(*keys).orderBy(TIME)).alias(_NEXT))
        seen = lookup(candidates, at, key_match(keys, [f"x_{k}" for k in keys])
                      & (col(TIME) <= col(_AT)), "inner", ctx.small)
        snapshots = (seen.groupBy(_AT, _NEXT, *names).agg(F.sum(DIFF).alias(_COPIES))
                     .where(col(_COPIES) > 0))
        rows = snapshots.select(_AT, _NEXT, *names, F.explode(
            F.sequence(F.lit(1).cast("bigint"), col(_COPIES))).alias(_COPIES))
        partition = [*[col(k) for k in keys], col(_AT)]
        arity = len(names)
        assert self.input is not None
        computed = [window_value(call, self.input.types, partition)
                    .cast(spark_type(self.types[arity + i])).alias(f"c{arity + i}")
                    for i, call in enumerate(self.calls)]
        valued = rows.select(*names, *computed, _AT, _NEXT)
        change = F.explode(F.array(
            F.struct(col(_AT).alias(TIME), F.lit(1).cast("bigint").alias(DIFF)),
            F.struct(col(_NEXT).alias(TIME), F.lit(-1).cast("bigint").alias(DIFF))))
        shown = column_names(self.arity)
        return (valued.select(*shown, change.alias("_change"))
                .select(*shown, col("_change")[TIME].alias(TIME),
                        col("_change")[DIFF].alias(DIFF))
                .where(col(TIME).isNotNull() & (col(TIME) != F.lit(NEVER))))

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
