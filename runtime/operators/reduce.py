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
(a semi-join on the materialized delta) unless it is small enough to be read whole; a small
step whose changes' values of the key's first plain column the driver knows reads only the
state's rows holding them, by key (``ReduceState._state_read``), and runs in one partition,
so it needs no shuffle.

Without its arrangements (a reduce inside a recursive query's loop, which holds its input's
differences with their rounds: ``runtime.recursion.group_wise``) its state is its input's
history, each row contributing at ``NEVER``; its changes are then a plan the loop's round
computes.

The state and the layout of its rows are ``reduce_state``'s, the accumulators' contributions
``reduce_accumulators``', the min/max-like aggregates ``reduce_extremes``'.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from matview.ir.physical import ReduceLayout
from matview.ir.relation import Aggregate
from matview.ir.scalar import Scalar, may_fail
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
    stored_or_none,
    union_all,
)
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
from matview.runtime.operators.reduce_accumulators import ReduceAccumulators, joined
from matview.runtime.operators.reduce_extremes import ReduceExtremes
from matview.runtime.operators.reduce_state import NEVER
from matview.runtime.spark.jvm_plans import aggregate, columns
from matview.runtime.spark.one_job import OneJob
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


@dataclass
class ReduceOp(ReduceAccumulators, ReduceExtremes):
    """``Reduce``: see the module docstring. ``output`` arranges the output with hidden
    accumulators; ``values`` arranges (key, min/max arguments) when there are min/max."""

    kind: ClassVar[str] = "Reduce"
    arranges: ClassVar[tuple[str, ...]] = ("output", "values")

    input: Operator | None = None
    group_key: tuple[Scalar, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    output: Trace | None = None
    values: Trace | None = None
    layout: ReduceLayout = ReduceLayout((), (), ("cnt",))
    """The plan's layout (``physical.ReduceLayout``). ``deferred``: its output reaches the
    dataflow's only through Linears that rearrange columns, which pick them from the batch
    the refresh's one job returns (``later``): any other reader would compute the plan of
    its output again."""

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

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        source = self.input.delta(ctx)
        first_global = not self.group_key and ctx.first
        if source is None and not first_global:
            return None
        if self.output is None:
            return self._over_history(ctx, source)
        prepared = None if source is None else self._prepared(
            self.frame_of(ctx, "delta", source))
        narrow = source is not None and source.leafy
        if prepared is not None and not (ctx.small and narrow) and (
                self._extremes() or self._restricted(ctx) or self.checks):
            # computed once: it feeds the changes, the semi-join on the touched keys, the
            # (key, argument) arrangement and the errors (which would otherwise compute the
            # input a second time, in the job that keeps them)
            leaf = materialize(ctx.spark, prepared, ctx.small)
            if leaf is not None and self.checks:
                if leaf.table is None:
                    ok, failed = split_errors(leaf.df)
                    self.errors = Delta(failed, leaf.rows)
                    leaf = Leaf(ok, leaf.rows, exact=False)
                else:  # split in Arrow: the errors stay a batch in the driver
                    table, errors = split_arrow_errors(leaf.table)
                    if errors.num_rows:
                        self.errors = Delta(None, errors.num_rows, stored(ctx.spark, errors),
                                            count=errors.num_rows)
                    leaf = Leaf(None, leaf.rows, table, ctx.spark, exact=False)
            prepared = None if leaf is None else self.leaf_frame(ctx, "prepared", leaf)
            if leaf is not None and self._extremes():
                assert self.values is not None
                args = [*self._keys, *self._value_columns(), TIME, DIFF]
                pairs = Leaf(self.selected(leaf.df, "pairs", lambda: args), leaf.rows) \
                    if leaf.table is None else Leaf(None, leaf.rows, leaf.table.select(args),
                                                    ctx.spark)
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
        pairs = None if ctx.first or self.values is None else self.values.read(upto=ctx.lower)
        leaf = materialize(ctx.spark, consolidate(self._full(ctx, prepared, old, pairs)),
                           ctx.small)
        return self._output(ctx, leaf)

    def _over_history(self, ctx: StepContext, source: Delta | None) -> Delta:
        """The step's output changes (not consolidated) of a reduce without arrangements,
        as a plan: its input's history (``Operator.history``) is the state, each row
        contributing at ``NEVER``, as the stored output's accumulators do (and the
        min/max values its ``values`` would arrange)."""
        assert self.input is not None
        history = None if ctx.first else self.input.history(ctx)
        changes = None if source is None else self.frame_of(ctx, "delta", source)

        def plan() -> DataFrame:
            parts = [] if changes is None else [self._prepared(changes)]
            if history is not None:
                prepared = self._prepared(history)
                parts.append(self.selected(prepared, "at never", lambda: [
                    F.lit(NEVER).cast("bigint").alias(TIME) if name == TIME else col(name)
                    for name in prepared.columns]))
            full = self._full(ctx, union_all(parts), None, None)
            return self.selected(full, "shown", lambda: self._shown)

        return Delta(self.planned("over history", (
            changes, history, ctx.first, ctx.small, ctx.single_time), plan), None)

    def _full(self, ctx: StepContext, prepared: DataFrame | None, old: DataFrame | None,
              pairs: DataFrame | None) -> DataFrame:
        """The step's output updates with their hidden accumulators, as ``c*`` (``old``:
        the stored state the step reads, ``pairs`` the arranged (key, argument) pairs of
        its min/max; None on the first step)."""
        return self.selected(self._updates(ctx, prepared, old, pairs), "full", lambda: [
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
        ``layout.deferred``, they are computed by a job of their own, now, and the output delta is
        that batch."""
        assert ctx.job is not None and (self.values is not None or not pairs)
        job = ctx.job if self.layout.deferred else OneJob()
        old = self._state_read(ctx)
        arranged = None if ctx.first or self.values is None else self.read_bound(
            ctx, "values", self.values, upto=ctx.lower)[0]

        def plans() -> tuple[DataFrame, DataFrame]:
            full = self._full(ctx, prepared, old, arranged)
            return consolidate(full), self.selected(full, "shown", lambda: self._shown)

        kept, visible = self.planned("one job", (
            prepared, old, arranged, ctx.first, ctx.small, ctx.single_time,
            self._restricted(ctx)), plans)
        shown: list[Leaf | None] = [None]
        out: list[Delta | None] = [None]

        def then(table: pa.Table) -> None:
            out[0] = self._output(ctx, stored_or_none(ctx.spark, table))
            shown[0] = None if out[0] is None else out[0].leaf or Leaf(out[0].df, out[0].rows)

        if pairs:
            assert prepared is not None
            keyed = [*self._keys, *self._value_columns(), TIME, DIFF]
            arranged = self.planned("pairs consolidated", (prepared,), lambda: consolidate(
                self.selected(prepared, "pairs", lambda: keyed), small=True))
            job.want(arranged, lambda table: self.stage(
                self.values, stored_or_none(ctx.spark, table), ctx))
        job.want(kept, then)
        if job is not ctx.job:  # its readers want the batch now
            job.run()
            return out[0]
        return Delta(visible, None, later=lambda: shown[0])

    def _updates(self, ctx: StepContext, prepared: DataFrame | None, old: DataFrame | None,
                 pairs: DataFrame | None) -> DataFrame:
        """Retractions of the previous rows and insertions of the new rows at every
        interesting time of every touched key (on a single-time first step, with no stored
        row to retract, the insertions alone: a smaller plan, built and planned sooner)."""
        parts = self._contributions(ctx, prepared, old)
        hidden = self.hidden_names()
        first = ctx.first and ctx.single_time  # no stored row (none at NEVER), one time
        single = ctx.single_time and not self._extremes()
        if single:
            sums = self._single_time_sums + ([] if first else self._previous_sums)
            keys, head, rest = self.built(("single time sums", first), lambda: (
                columns(ctx.spark, *self._keys), sums[0], columns(ctx.spark, *sums[1:])))
            rows = aggregate(parts, keys, head, rest)
            rows = rows if first else rows.where(self._later)
        else:
            per_time = parts.groupBy(*self._keys, TIME).agg(
                *[F.sum(n).alias(n) for n in hidden])
            extremes = self._extreme_values(ctx, prepared, per_time, pairs) \
                if self._extremes() else None
            if extremes is not None:
                per_time = lookup(
                    per_time, extremes, key_match(self._keys, [f"x_{k}" for k in self._keys])
                    & (col(TIME) == col("x_time")), "left", ctx.small)
            elif self._extremes():  # nothing to take them from: all NULL
                per_time = per_time.select("*", *[
                    F.lit(None).cast(spark_type(self.types[len(self._keys) + j])).alias(f"e{j}")
                    for j in self._extremes()])
            rows = per_time if first else self._running(per_time)
        if first:  # nothing to retract: each key's new row, when it exists
            exists, inserted = self._inserted
            return self.selected(rows if exists is None else rows.where(exists), "inserted",
                                 lambda: inserted)
        update, outputs = self._emitted(single)
        exploded = self.selected(rows, ("exploded", single), lambda: [col(TIME), update])
        return self.selected(exploded.where(self._kept), ("emitted", single), lambda: outputs)

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
        new, prev = self._typed(""), self._typed("p_")
        new_row, prev_row = F.struct(*new), F.struct(*prev)
        if self.group_key:
            exists_new, exists_prev = self._exists(""), has_prev & self._exists("p_")
        else:
            exists_new, exists_prev = F.lit(True), has_prev
        update = F.explode(F.array(
            F.struct(prev_row.alias("row"), F.lit(-1).cast("bigint").alias("d"),
                     exists_prev.alias("keep")),
            F.struct(new_row.alias("row"), F.lit(1).cast("bigint").alias("d"),
                     exists_new.alias("keep"))))
        return update.alias("u"), [*[col(f"u.row.{n}").alias(n) for n in self.full_names()],
                                   col(TIME), col("u.d").alias(DIFF)]

    @functools.cached_property
    def _inserted(self) -> tuple[Column | None, list[Column]]:
        """A first step's output: no row existed before it, so each (key, time) inserts its
        new row when it exists (the filter; None: always, a global aggregate's row). The
        first step's sums (``_updates``) have no ``p_*`` columns (built once)."""
        return (self._exists("") if self.group_key else None,
                [*self._typed(""), col(TIME), F.lit(1).cast("bigint").alias(DIFF)])

    def _typed(self, prefix: str) -> list[Column]:
        """The output row of the accumulators named with ``prefix`` (``_row``), each column
        cast to its type and named."""
        row = self._row(prefix)
        return [row[n].cast(t).alias(n) for n, t in zip(self.full_names(), self._full_types())]

    def _exists(self, prefix: str) -> Column:
        """Whether the group of the accumulators named with ``prefix`` holds rows."""
        return F.coalesce(col(f"{prefix}cnt"), F.lit(0)) > 0

    def _row(self, prefix: str) -> dict[str, Column]:
        """An output row (keys, visible aggregates, accumulators) from the accumulator (and
        extreme) columns named with ``prefix``."""
        def acc(name: str) -> Column:
            return F.coalesce(col(prefix + name), F.lit(0))

        row: dict[str, Column] = {k: col(k) for k in self._keys}
        for j, agg in enumerate(self.aggregates):
            if j in self.layout.extremes:
                value = col(f"{prefix}e{j}")
            elif f"s{j}" in self.layout.hidden:
                value = F.when(acc(f"n{j}") > 0, acc(f"s{j}"))
            elif f"l{j}_0" in self.layout.hidden:
                value = F.when(acc(f"n{j}") > 0, joined(
                    [acc(f"l{j}_{i}") for i in range(3)], self._sum_spark(j)))
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
        df = self.read_bound(ctx, "history", self.output, upto=ctx.lower)[0]
        return None if df is None else self.selected(df, "history", lambda: self._shown)

    def history_rows(self, ctx: StepContext) -> int | None:
        assert self.output is not None
        return 0 if ctx.first else self.output.rows_between(None, ctx.lower)

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
