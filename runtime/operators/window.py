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
same rows, and its retraction cancels exactly what was inserted. ``range`` frames and the
ranking functions that read peers order by the ORDER BY alone; a value function over a
``range`` frame takes its row from a ``rows`` frame of the same rows (``_value``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from matview.ir import windows
from matview.ir.scalar import Col
from matview.ir.sort_keys import total_order
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
from matview.runtime.lowering.ordering import spark_order
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.operators.base import ArrangedWhenLookedUp, Delta, Operator, StepContext
from matview.runtime.operators.reduce_state import NEVER
from pyspark.sql import Column, DataFrame
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec

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
        assert self.input is not None and self.values is not None
        leaf = self.arranged_changes(ctx, self.input, self.values)
        if leaf is None:
            return None
        names, keys = self._names, self._keys
        changes = leaf.df.select(*names, TIME, DIFF)
        touched = changes.select(*keys, TIME).distinct()
        parts = [changes]
        old = None if ctx.first else self.values.read(upto=ctx.lower)
        if old is not None:
            if keys:
                partitions = touched.select(*[col(k).alias(f"t_{k}") for k in keys])
                old = lookup(old, partitions, key_match(keys, [f"t_{k}" for k in keys]),
                             "left_semi", ctx.small)
            parts.insert(0, old.groupBy(*names).agg(F.sum(DIFF).alias(DIFF))
                         .select(*names, F.lit(NEVER).alias(TIME), DIFF))
            touched = touched.unionByName(
                touched.select(*keys, F.lit(NEVER).alias(TIME)).distinct())
        out = consolidate(self._output(ctx, union_all(parts), touched))
        result = materialize(ctx.spark, out, ctx.small)
        if self.output is not None:
            self.stage(self.output, result, ctx)
        return None if result is None else Delta(None, result.rows, result, count=result.rows)

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
        computed = [self._value(call, partition).cast(spark_type(self.types[arity + i]))
                    .alias(f"c{arity + i}") for i, call in enumerate(self.calls)]
        valued = rows.select(*names, *computed, _AT, _NEXT)
        change = F.explode(F.array(
            F.struct(col(_AT).alias(TIME), F.lit(1).cast("bigint").alias(DIFF)),
            F.struct(col(_NEXT).alias(TIME), F.lit(-1).cast("bigint").alias(DIFF))))
        shown = column_names(self.arity)
        return (valued.select(*shown, change.alias("_change"))
                .select(*shown, col("_change")[TIME].alias(TIME),
                        col("_change")[DIFF].alias(DIFF))
                .where(col(TIME).isNotNull() & (col(TIME) != F.lit(NEVER))))

    def _value(self, call: WindowCall, partition: list[Column]) -> Column:
        """``call``'s value at each row of its partition (``partition``: its columns)."""
        names = self._names
        fn = windows.lookup(call.func)
        ordered = SparkWindow.partitionBy(*partition).orderBy(
            *spark_order(names, total_order(call.order_by, len(names))))
        peers = spark_order(names, call.order_by) or [F.lit(0)]
        by_peers = SparkWindow.partitionBy(*partition).orderBy(*peers)
        arg = col(names[call.args[0].index]) if call.args and isinstance(
            call.args[0], Col) else None
        if fn.kind is windows.Kind.RANKING:
            if call.func == "row_number":
                return F.row_number().over(ordered)
            if call.func == "ntile":
                buckets = windows.constant(call.args[0])
                return F.lit(None) if buckets is None else F.ntile(buckets).over(ordered)
            ranking = {"rank": F.rank, "dense_rank": F.dense_rank,
                       "percent_rank": F.percent_rank, "cume_dist": F.cume_dist}
            return ranking[call.func]().over(by_peers)
        if fn.kind is windows.Kind.OFFSET:
            offset = windows.constant(call.args[1]) if len(call.args) > 1 else 1
            default = windows.constant(call.args[2]) if len(call.args) > 2 else None
            shift = F.lag if call.func == "lag" else F.lead
            return shift(arg, offset, default).over(ordered)
        frame = call.frame
        if fn.kind is windows.Kind.AGGREGATE:
            spec = self._framed(ordered, by_peers, call)
            if arg is None:
                return F.count(F.lit(1)).over(spec)
            if call.func == "sum":
                arg = arg.cast(spark_type(call.type(self.input.types)))  # type: ignore[union-attr]
            return F.call_function(call.func, arg).over(spec)
        assert arg is not None
        if frame.units == "rows":
            spec = self._framed(ordered, by_peers, call)
            if call.func == "nth_value":
                return F.nth_value(arg, windows.constant(call.args[1])).over(spec)
            return (F.first if call.func == "first_value" else F.last)(arg, False).over(spec)
        return self._value_over_range(call, arg, partition, by_peers)

    def _value_over_range(self, call: WindowCall, arg: Column, partition: list[Column],
                          by_peers: WindowSpec) -> Column:
        """A value function over a ``range`` frame: the frame is the partition's rows from
        its first row or the current row's first peer, to its last row or the current
        row's last peer; its rows in the total order are the partition's (or the peers')
        rows in that order."""
        names, frame = self._names, call.frame
        order = spark_order(names, total_order(call.order_by, len(names)))
        whole = SparkWindow.partitionBy(*partition).orderBy(*order).rowsBetween(
            SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
        peer_keys = [col(names[c]) for c, _, _ in call.order_by]
        among_peers = SparkWindow.partitionBy(*partition, *peer_keys).orderBy(
            *order).rowsBetween(SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
        if call.func == "first_value":
            return F.first(arg, False).over(whole if frame.start is None else among_peers)
        if call.func == "last_value":
            return F.last(arg, False).over(whole if frame.end is None else among_peers)
        assert frame.start is None, "nth_value over a range frame starts at the partition's"
        position = windows.constant(call.args[1])
        value = F.nth_value(arg, position).over(whole)
        if frame.end is None:
            return value
        upto = by_peers.rangeBetween(SparkWindow.unboundedPreceding, SparkWindow.currentRow)
        return F.when(F.count(F.lit(1)).over(upto) >= position, value)

    @staticmethod
    def _framed(ordered: WindowSpec, by_peers: WindowSpec, call: WindowCall) -> WindowSpec:
        """The window of ``call``'s frame: positions in the total order, or peers."""
        frame = call.frame
        start = SparkWindow.unboundedPreceding if frame.start is None else frame.start
        end = SparkWindow.unboundedFollowing if frame.end is None else frame.end
        if frame.units == "rows":
            return ordered.rowsBetween(start, end)
        return by_peers.rangeBetween(start, end)

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
