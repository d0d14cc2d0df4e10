"""GROUP BY on Spark, touching only the groups whose input changed (seed 002).

The state is the reduce's own output arranged by key, each row carrying hidden accumulators
after the visible columns: the group's row count, and for every ``count``/``sum`` aggregate
its count of non-null values (and for ``sum`` the running sum). For ``min``/``max`` the
input's (key, argument) pairs are arranged too, since those aggregates cannot be updated
from a previous value when rows are deleted.

Accumulators are additive, so the state enters a step as changes too: every stored output
row contributes its accumulators times its diff at time ``NEVER`` (before any time), and
the input delta contributes each row's count, non-null flag and weighted value at its own
time. Summed per (key, time) and then running over each key's times (one window ordered by
time), they give the accumulators after every interesting time of every touched key; the
row before is the one of the previous interesting time (``NEVER``: the stored row). The
output retracts the previous row and inserts the new one at each interesting time, so a
batch spanning many times gives exactly the per-time output of stepping one time at a time;
with a single time the window is not needed. The state is restricted to the touched keys
(a semi-join on the materialized delta) unless it is small enough to be read whole, and a
small step runs in one partition, so it needs no shuffle.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from matview.ir.aggregate_call import Aggregate
from matview.ir.aggregates import Maintenance, maintained
from matview.ir.scalar import Scalar, may_fail
from matview.ir.types import Kind, SqlType
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    LOCAL_LEAF_ROWS,
    TIME,
    Leaf,
    key_match,
    lookup,
    materialize,
    stored,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.aggregates import extreme_value, ordered_value
from matview.runtime.lowering.checked import (
    ERR,
    compile_checked,
    described,
    first_error,
    split_arrow_errors,
    split_errors,
)
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.operators.base import Delta, Operator, StepContext
from matview.runtime.spark.jvm_plans import aggregate, columns
from matview.runtime.spark.one_job import OneJob
from matview.runtime.time import MIN_TIME
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

NEVER = MIN_TIME
"""The time given to the stored state's contributions: before every real time."""


def _compared(a: Column, b: Column, directions: list[tuple[bool, bool]]) -> Column:
    """-1, 0 or 1 as struct ``a`` sorts before, with or after ``b`` by their fields
    ``k0, k1, ...``, each (descending, nulls first) as ``directions`` say."""
    result: Column = F.lit(0)
    for i, (descending, nulls_first) in reversed(list(enumerate(directions))):
        x, y = a[f"k{i}"], b[f"k{i}"]
        result = (F.when(x.isNull() & y.isNull(), result)
                  .when(x.isNull(), F.lit(-1 if nulls_first else 1))
                  .when(y.isNull(), F.lit(1 if nulls_first else -1))
                  .when(x < y, F.lit(1 if descending else -1))
                  .when(x > y, F.lit(-1 if descending else 1))
                  .otherwise(result))
    return result


@dataclass
class ReduceOp(Operator):
    """``Reduce``: see the module docstring. ``output`` arranges the output with hidden
    accumulators; ``values`` arranges (key, min/max arguments) when there are min/max."""

    kind: ClassVar[str] = "Reduce"

    input: Operator | None = None
    group_key: tuple[Scalar, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    output: Trace | None = None
    values: Trace | None = None
    deferred: bool = False
    """Whether its output reaches the dataflow's only through Linears that rearrange
    columns, which pick them from the batch the refresh's one job returns (``later``): any
    other reader would compute the plan of its output again."""

    # Layout of an output row: keys k0.., visible aggregates v0.., then hidden ``cnt`` and the
    # accumulators ``n{j}`` (non-null count) and ``s{j}`` (sum) of count/sum aggregates.
    @property
    def _keys(self) -> list[str]:
        return [f"k{i}" for i in range(len(self.group_key))]

    def _accumulated(self) -> list[int]:
        return [j for j, a in enumerate(self.aggregates)
                if maintained(a.func).maintenance is Maintenance.SUMMED and a.expr is not None]

    def _extremes(self) -> list[int]:
        return [j for j, a in enumerate(self.aggregates)
                if maintained(a.func).maintenance is Maintenance.EXTREME]

    def _value_columns(self) -> list[str]:
        """The arranged values of the min/max-like aggregates: each one's argument ``a{j}``
        and, for an aggregate of values in order, its ORDER BY's ``o{j}_{i}``."""
        return [name for j in self._extremes() for name in (
            f"a{j}", *[f"o{j}_{i}" for i in range(len(self.aggregates[j].order_by))])]

    def hidden_names(self) -> list[str]:
        names = ["cnt"]
        for j in self._accumulated():
            names.append(f"n{j}")
            if maintained(self.aggregates[j].func).sums_values:
                names.append(f"s{j}")
        return names

    def full_names(self) -> list[str]:
        visible = [f"v{j}" for j in range(len(self.aggregates))]
        return self._keys + visible + self.hidden_names()

    def arrangement_arity(self, what: str) -> int:
        """``output``: its rows with their hidden accumulators; ``values``: the group key and
        the argument of each min/max aggregate."""
        if what == "values":
            return len(self.group_key) + len(self._value_columns())
        return len(self.full_names())

    def _full_types(self) -> list[T.DataType]:
        """The Spark types of ``full_names``."""
        out = [spark_type(t) for t in self.types]
        for name in self.hidden_names():
            sums = name.startswith("s")
            out.append(spark_type(self._sum_type(int(name[1:]))) if sums else T.LongType())
        return out

    def _sum_type(self, j: int) -> SqlType:
        assert self.input is not None
        return self.aggregates[j].type(self.input.types)

    @property
    def checks(self) -> bool:
        """Whether its keys or arguments may fail on some row (it has an error output)."""
        return any(may_fail(e) for e in self.group_key) or any(
            may_fail(e) for a in self.aggregates for e in a.scalars())

    def _prepared(self, df: DataFrame) -> DataFrame:
        """The input batch as keys ``k*``, aggregate arguments ``a*``, time and diff (and
        each row's evaluation error ``_err`` when they may fail)."""
        return self.selected(df, "prepared", lambda: self._preparation)

    @functools.cached_property
    def _preparation(self) -> list[Column]:
        """The columns of ``_prepared`` over the input's columns ``c*`` (built once)."""
        assert self.input is not None
        types, refs = self.input.types, [col(c) for c in column_names(self.input.arity)]
        keys = [compile_checked(k, refs, types) for k in self.group_key]
        args = [compile_checked(a.expr, refs, types) for a in self.aggregates
                if a.expr is not None]
        ordered = [compile_checked(e, refs, types) for a in self.aggregates
                   for e, _, _ in a.order_by]
        names = self._keys + [f"a{j}" for j, a in enumerate(self.aggregates)
                              if a.expr is not None] + [
            f"o{j}_{i}" for j, a in enumerate(self.aggregates) for i in range(len(a.order_by))]
        args += ordered
        error = first_error([e.error for e in keys + args])
        failed = [] if error is None else [described(error, refs).alias(ERR)]
        return [*[e.value.alias(n) for e, n in zip(keys + args, names)], *failed,
                col(TIME), col(DIFF)]

    def _extreme_values(self, ctx: StepContext, prepared: DataFrame | None,
                        times: DataFrame) -> DataFrame | None:
        """min/max at each (key, time) of ``times``, from the arranged (key, argument) pairs
        and the step's changes."""
        assert self.values is not None
        args = self._value_columns()
        parts = [] if prepared is None else [prepared.select(*self._keys, *args, TIME, DIFF)]
        old = None if ctx.first else self.values.read(upto=ctx.lower)
        if old is not None:
            old = old.select(*self._keys, *args, DIFF)
            if self.group_key:
                keys = times.select(*[col(k).alias(f"t_{k}") for k in self._keys])
                old = lookup(old, keys, key_match(self._keys, [f"t_{k}" for k in self._keys]),
                             "left_semi", ctx.small)
            old = old.groupBy(*self._keys, *args).agg(F.sum(DIFF).alias(DIFF))
            parts.insert(0, old.select(*self._keys, *args, F.lit(NEVER).alias(TIME), DIFF))
        candidates = union_all(parts)
        if candidates is None:
            return None
        at = times.select(*[col(k).alias(f"x_{k}") for k in self._keys],
                          col(TIME).alias("x_time"))
        valid = lookup(candidates, at, key_match(self._keys, [f"x_{k}" for k in self._keys])
                       & (col(TIME) <= col("x_time")), "inner", ctx.small)
        counted = (valid.groupBy(*[f"x_{k}" for k in self._keys], "x_time", *args)
                   .agg(F.sum(DIFF).alias("m")).where(col("m") > 0))
        if any(maintained(self.aggregates[j].func).ordered for j in self._extremes()):
            counted = counted.select(*counted.columns, F.explode(  # one row per occurrence
                F.sequence(F.lit(1).cast("bigint"), col("m"))).alias("copy"))
        extremes = [self._extreme(j).alias(f"e{j}") for j in self._extremes()]
        return counted.groupBy(*[f"x_{k}" for k in self._keys], "x_time").agg(*extremes)

    def _extreme(self, j: int) -> Column:
        """The Spark aggregate of min/max-like aggregate ``j`` over a group's rows (each
        row once per occurrence for an aggregate of values in order)."""
        aggregate = self.aggregates[j]
        fn = maintained(aggregate.func)
        if not fn.ordered:
            return extreme_value(fn.name, col(f"a{j}"))
        value = col(f"a{j}")
        tie = value[0] if self.types[len(self._keys) + j].kind is Kind.ARRAY else value
        keys = [col(f"o{j}_{i}") for i in range(len(aggregate.order_by))] + [tie]
        directions = [(d, n) for _, d, n in aggregate.order_by] + [(False, False)]
        entries = F.collect_list(F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)],
                                          value.alias("v")))
        present = F.filter(entries, lambda e: e["v"].isNotNull())
        ordered = F.array_sort(present, lambda a, b: _compared(a, b, directions))
        return ordered_value(fn.name, F.transform(ordered, lambda e: e["v"]),
                             aggregate.separator)

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None and self.output is not None
        source = self.input.delta(ctx)
        first_global = not self.group_key and ctx.first
        if source is None and not first_global:
            return None
        prepared = None if source is None else self._prepared(source.df)
        narrow = source is not None and source.leafy
        if prepared is not None and not (ctx.small and narrow) and (
                self._extremes() or self._restricted(ctx) or self.checks):
            # computed once: it feeds the changes, the semi-join on the touched keys, the
            # (key, argument) arrangement and the errors (which would otherwise compute the
            # input a second time, in the job that keeps them)
            leaf = materialize(ctx.spark, prepared, ctx.small)
            if leaf is not None and self.checks:
                ok, failed = split_errors(leaf.df)
                table = leaf.table
                if table is None:
                    self.errors = Delta(failed, leaf.rows)
                else:  # split in Arrow: the errors stay a batch in the driver
                    table, errors = split_arrow_errors(table)
                    if errors.num_rows:
                        self.errors = Delta(None, errors.num_rows, stored(ctx.spark, errors),
                                            count=errors.num_rows)
                leaf = Leaf(ok, leaf.rows, table, exact=False)
            prepared = None if leaf is None else leaf.df
            if leaf is not None and self._extremes():
                assert self.values is not None
                args = [*self._keys, *self._value_columns(), TIME, DIFF]
                pairs = Leaf(self.selected(leaf.df, "pairs", lambda: args), leaf.rows,
                             None if leaf.table is None else leaf.table.select(args))
                self.stage(self.values, pairs, ctx)
            narrow = False
        elif prepared is not None and self.checks:
            prepared, failed = self.planned("split", (prepared,), lambda: split_errors(prepared))
            self.errors = Delta(failed, None if source is None else source.rows)
        if prepared is None and not first_global:
            return None
        if ctx.small and ctx.job is not None:
            return self._in_one_job(ctx, prepared, narrow and bool(self._extremes()))
        old = None if ctx.first else self.output.read(upto=ctx.lower)
        leaf = materialize(ctx.spark, consolidate(self._full(ctx, prepared, old)), ctx.small)
        return self._output(ctx, leaf)

    def _full(self, ctx: StepContext, prepared: DataFrame | None, old: DataFrame | None
              ) -> DataFrame:
        """The step's output updates with their hidden accumulators, as ``c*`` (``old``:
        the stored state the step reads, None on the first step)."""
        return self.selected(self._updates(ctx, prepared, old), "full", lambda: [
            *[col(n).alias(f"c{i}") for i, n in enumerate(self.full_names())], TIME, DIFF])

    def _output(self, ctx: StepContext, leaf: Leaf | None) -> Delta | None:
        """Stage ``leaf`` (the step's consolidated ``_full`` updates) as the new state; the
        step's output delta is its visible columns."""
        self.stage(self.output, leaf, ctx)
        if leaf is None:
            return None
        shown = self._shown
        if leaf.table is not None:
            return Delta(None, leaf.rows, Leaf(None, leaf.rows, leaf.table.select(shown),
                                               ctx.spark), count=leaf.rows)
        visible = self.selected(leaf.df, "shown", lambda: shown)
        if leaf.copy is not None:  # a batch held in Spark, copied in the driver: both kept
            return Delta(None, leaf.rows, Leaf(visible, leaf.rows, copy=leaf.copy.select(shown)),
                         count=leaf.rows)
        return Delta(visible, leaf.rows, count=leaf.rows)

    @property
    def _shown(self) -> list[str]:
        """The columns of an output row that the reduce's readers see."""
        return [f"c{i}" for i in range(self.arity)] + [TIME, DIFF]

    def _in_one_job(self, ctx: StepContext, prepared: DataFrame | None,
                    pairs: bool) -> Delta | None:
        """A small step: its new state (the consolidated ``_full`` updates) and, when
        ``pairs``, the (key, argument) pairs of min/max taken from the ``prepared`` input
        are wanted from the refresh's one job (``runtime.one_job``) and staged once it has
        run. The output delta is the updates' visible columns: a plan its readers compute
        in that same job (the input, narrow over batches already computed or materialized
        above, is read again by each), or, ``later``, the batch the job returned. Unless
        ``deferred``, they are computed by a job of their own, now, and the output delta is
        that batch."""
        assert ctx.job is not None and (self.values is not None or not pairs)
        job = ctx.job if self.deferred else OneJob()
        old = None if ctx.first else self.read_bound(ctx, "state", self.output,
                                                     upto=ctx.lower)[0]

        def plans() -> tuple[DataFrame, DataFrame]:
            full = self._full(ctx, prepared, old)
            return consolidate(full), self.selected(full, "shown", lambda: self._shown)

        # min/max also read their (key, argument) arrangement: those plans are made anew
        kept, visible = plans() if self._extremes() else self.planned("one job", (
            prepared, old, ctx.first, ctx.small, ctx.single_time, self._restricted(ctx)),
            plans)
        shown: list[Leaf | None] = [None]
        out: list[Delta | None] = [None]

        def then(table: pa.Table) -> None:
            out[0] = self._output(ctx, stored_or_none(ctx.spark, table))
            shown[0] = None if out[0] is None else out[0].leaf or Leaf(out[0].df, out[0].rows)

        if pairs:
            assert prepared is not None
            keyed = [*self._keys, *self._value_columns(), TIME, DIFF]
            job.want(consolidate(self.selected(prepared, "pairs", lambda: keyed)),
                     lambda table: self.stage(self.values, stored_or_none(ctx.spark, table),
                                              ctx))
        job.want(kept, then)
        if job is not ctx.job:  # its readers want the batch now
            job.run()
            return out[0]
        return Delta(visible, None, later=lambda: shown[0])

    def _restricted(self, ctx: StepContext) -> bool:
        """Whether the step reads the state of the touched keys only (a semi-join), rather
        than the whole state, which it does when the state is held in the driver and small."""
        assert self.output is not None
        if not self.group_key or ctx.first:
            return False
        batches = self.output.batches
        return (any(b.leaf.table is None for b in batches)
                or sum(b.leaf.rows for b in batches) > LOCAL_LEAF_ROWS)

    def _contributions(self, ctx: StepContext, prepared: DataFrame | None,
                       old: DataFrame | None) -> DataFrame:
        """The input delta's and the stored state's contributions to the accumulators:
        keys, time, then one column per hidden accumulator (see the module docstring)."""
        assert self.output is not None
        parts = []
        if prepared is not None:
            parts.append(self.selected(prepared, "delta contributions", lambda: [
                *self._keys, TIME, *self._delta_contributions]))
        if not self.group_key and ctx.first:
            # the first step of a global aggregate: its row exists even over no input rows
            zero = [F.lit(0).cast("bigint").alias(n) if n[0] in "cn"
                    else F.lit(None).cast(self._sum_spark(int(n[1:]))).alias(n)
                    for n in self.hidden_names()]
            parts.append(ctx.spark.range(1).select(F.lit(ctx.as_of).cast("bigint").alias(TIME),
                                                       *zero))
        if old is not None:
            names = self.full_names()
            old = self.selected(old, "state", lambda: [
                *[col(f"c{i}").alias(n) for i, n in enumerate(names)], DIFF])
            if self._restricted(ctx):
                assert prepared is not None
                keys = self.selected(prepared, "touched keys", lambda: [
                    col(k).alias(f"t_{k}") for k in self._keys])
                touched = self.built("touched", lambda: key_match(
                    self._keys, [f"t_{k}" for k in self._keys]))
                old = lookup(old, keys, touched, "left_semi", ctx.small)
            parts.append(self.selected(old, "state contributions", lambda: [
                *self._keys, F.lit(NEVER).alias(TIME), *self._state_contributions]))
        out = union_all(parts)
        assert out is not None
        return out.coalesce(1) if ctx.small else out

    @functools.cached_property
    def _delta_contributions(self) -> list[Column]:
        """The accumulator columns an input row contributes (built once: the operator's
        Spark expressions are the same every step)."""
        delta = [col(DIFF).alias("cnt")]
        for j in self._accumulated():
            present = col(f"a{j}").isNotNull()
            delta.append(F.when(present, col(DIFF)).otherwise(0).alias(f"n{j}"))
            if maintained(self.aggregates[j].func).sums_values:
                weighted = col(f"a{j}").cast(self._sum_spark(j)) * col(DIFF)
                delta.append(F.when(present, weighted).alias(f"s{j}"))
        return delta

    @functools.cached_property
    def _single_time_sums(self) -> list[Column]:
        """A single-time step's aggregation per key: the time, the accumulators summed over
        the state and the changes, over the state alone (``p_*``), and whether there was a
        previous row (built once)."""
        is_state = col(TIME) == NEVER
        hidden = self.hidden_names()
        return [F.max(TIME).alias(TIME), *[F.sum(n).alias(n) for n in hidden],
                *[F.sum(F.when(is_state, col(n))).alias(f"p_{n}") for n in hidden],
                F.max(F.when(is_state, F.lit(1))).alias("p_exists")]

    @functools.cached_property
    def _state_contributions(self) -> list[Column]:
        """The accumulator columns a stored output row contributes (built once)."""
        return [(col(n) * col(DIFF)).alias(n) for n in self.hidden_names()]

    def _sum_spark(self, j: int) -> T.DataType:
        return spark_type(self._sum_type(j))

    def _updates(self, ctx: StepContext, prepared: DataFrame | None, old: DataFrame | None
                 ) -> DataFrame:
        """Retractions of the previous rows and insertions of the new rows at every
        interesting time of every touched key."""
        parts = self._contributions(ctx, prepared, old)
        hidden = self.hidden_names()
        single = ctx.single_time and not self._extremes()
        if single:
            keys, first, rest = self.built("single time sums", lambda: (
                columns(ctx.spark, *self._keys), self._single_time_sums[0],
                columns(ctx.spark, *self._single_time_sums[1:])))
            rows = aggregate(parts, keys, first, rest).where(self._later)
        else:
            per_time = parts.groupBy(*self._keys, TIME).agg(
                *[F.sum(n).alias(n) for n in hidden])
            extremes = self._extreme_values(ctx, prepared, per_time) if self._extremes() \
                else None
            if extremes is not None:
                per_time = lookup(
                    per_time, extremes, key_match(self._keys, [f"x_{k}" for k in self._keys])
                    & (col(TIME) == col("x_time")), "left", ctx.small)
            elif self._extremes():  # nothing to take them from: all NULL
                per_time = per_time.select("*", *[
                    F.lit(None).cast(spark_type(self.types[len(self._keys) + j])).alias(f"e{j}")
                    for j in self._extremes()])
            by_time = Window.partitionBy(*self._keys).orderBy(TIME)
            running = by_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)
            carried = hidden + [f"e{j}" for j in self._extremes()]
            accumulated = per_time.select(
                *self._keys, TIME, *[F.sum(n).over(running).alias(n) for n in hidden],
                *[col(f"e{j}") for j in self._extremes()])
            rows = accumulated.select(
                *self._keys, TIME, *carried,
                *[F.lag(n).over(by_time).alias(f"p_{n}") for n in carried],
                F.lag(TIME).over(by_time).isNotNull().alias("p_exists"),
            ).where(self._later)
        update, outputs = self._emitted(single)
        exploded = self.selected(rows, ("exploded", single), lambda: [col(TIME), update])
        return self.selected(exploded.where(self._kept), ("emitted", single), lambda: outputs)

    @functools.cached_property
    def _later(self) -> Column:
        """The rows at real times (not the stored state's ``NEVER``)."""
        return col(TIME) > NEVER

    @functools.cached_property
    def _kept(self) -> Column:
        return col("u.keep")

    def _emitted(self, single: bool) -> tuple[Column, list[Column]]:
        """The column ``u`` exploding each (key, time) into the retraction of its previous
        row (when there was one and it existed) and the insertion of its new row (when it
        exists), and the output columns selected from it, for a ``single``-time or a windowed
        step."""
        return self.built(("emitted", single), lambda: self._new_emitted(single))

    def _new_emitted(self, single: bool) -> tuple[Column, list[Column]]:
        has_prev = col("p_exists").isNotNull() if single else col("p_exists")
        names, types = self.full_names(), self._full_types()
        new, prev = self._row(""), self._row("p_")
        new_row = F.struct(*[new[n].cast(t).alias(n) for n, t in zip(names, types)])
        prev_row = F.struct(*[prev[n].cast(t).alias(n) for n, t in zip(names, types)])
        if self.group_key:
            exists_new = F.coalesce(new["cnt"] > 0, F.lit(False))
            exists_prev = has_prev & F.coalesce(prev["cnt"] > 0, F.lit(False))
        else:
            exists_new, exists_prev = F.lit(True), has_prev
        update = F.explode(F.array(
            F.struct(prev_row.alias("row"), F.lit(-1).cast("bigint").alias("d"),
                     exists_prev.alias("keep")),
            F.struct(new_row.alias("row"), F.lit(1).cast("bigint").alias("d"),
                     exists_new.alias("keep"))))
        return update.alias("u"), [*[col(f"u.row.{n}").alias(n) for n in names], col(TIME),
                                   col("u.d").alias(DIFF)]

    def _row(self, prefix: str) -> dict[str, Column]:
        """An output row (keys, visible aggregates, accumulators) from the accumulator (and
        extreme) columns named with ``prefix``."""
        def acc(name: str) -> Column:
            return F.coalesce(col(prefix + name), F.lit(0))

        row: dict[str, Column] = {k: col(k) for k in self._keys}
        for j, agg in enumerate(self.aggregates):
            fn = maintained(agg.func)
            if fn.maintenance is Maintenance.EXTREME:
                value = col(f"{prefix}e{j}")
            elif fn.sums_values:
                value = F.when(acc(f"n{j}") > 0, acc(f"s{j}"))
            else:
                value = acc("cnt") if agg.expr is None else acc(f"n{j}")
            row[f"v{j}"] = value.cast(spark_type(self.types[len(self._keys) + j]))
        for name in self.hidden_names():
            row[name] = acc(name)
        return row

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.output is not None
        if ctx.first:
            return None
        df = self.output.read(upto=ctx.lower)
        return None if df is None else df.select(*[f"c{i}" for i in range(self.arity)],
                                                 TIME, DIFF)

    def history_rows(self, ctx: StepContext) -> int | None:
        assert self.output is not None
        return 0 if ctx.first else self.output.rows_between(None, ctx.lower)

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
