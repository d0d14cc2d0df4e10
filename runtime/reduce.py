"""GROUP BY on Spark, touching only the groups whose input changed (seed 002).

The state is the reduce's own output arranged by key, each row carrying hidden accumulators
after the visible columns: the group's row count, and for every ``count``/``sum`` aggregate
its count of non-null values (and for ``sum`` the running sum). For ``min``/``max`` the
input's (key, argument) pairs are arranged too, since those aggregates cannot be updated
from a previous value when rows are deleted.

A step groups the input delta by (key, time). For every touched key, its interesting times
are the distinct times of its changes in the batch; at each one the new accumulators are the
previous output's plus the running sum of the changes up to that time (a window ordered by
time), min/max are recomputed from the arranged pairs valid at that time, and the output
retracts the row of the previous time and inserts the new one. A batch spanning many times
thus gives exactly the per-time output of stepping one time at a time.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from matview.ir.relation import Aggregate
from matview.ir.scalar import Scalar
from matview.ir.types import SqlType
from matview.runtime.expressions import compile_scalar
from matview.runtime.operator import Delta, Operator, StepContext
from matview.runtime.trace import Trace
from matview.runtime.types import spark_type
from matview.runtime.updates import DIFF, TIME, Leaf, consolidate, data_columns, materialize
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

NEVER = -(2**63)


def _key_match(left: list[str], right: list[str]) -> Column:
    """Null-safe equality of key columns (GROUP BY puts NULLs in one group)."""
    return functools.reduce(Column.__and__,
                            [F.col(a).eqNullSafe(F.col(b)) for a, b in zip(left, right)],
                            F.lit(True))


@dataclass
class ReduceOp(Operator):
    """``Reduce``: see the module docstring. ``output`` arranges the output with hidden
    accumulators; ``values`` arranges (key, min/max arguments) when there are min/max."""

    input: Operator | None = None
    group_key: tuple[Scalar, ...] = ()
    aggregates: tuple[Aggregate, ...] = ()
    output: Trace | None = None
    values: Trace | None = None
    _staged: list[tuple[Trace, Leaf | None, int, int]] = field(default_factory=list, init=False)

    # Layout of an output row: keys k0.., visible aggregates v0.., then hidden ``cnt`` and the
    # accumulators ``n{j}`` (non-null count) and ``s{j}`` (sum) of count/sum aggregates.
    @property
    def _keys(self) -> list[str]:
        return [f"k{i}" for i in range(len(self.group_key))]

    def _accumulated(self) -> list[int]:
        return [j for j, a in enumerate(self.aggregates) if a.func in ("count", "sum")
                and a.expr is not None]

    def _extremes(self) -> list[int]:
        return [j for j, a in enumerate(self.aggregates) if a.func in ("min", "max")]

    def hidden_names(self) -> list[str]:
        names = ["cnt"]
        for j in self._accumulated():
            names.append(f"n{j}")
            if self.aggregates[j].func == "sum":
                names.append(f"s{j}")
        return names

    def full_names(self) -> list[str]:
        visible = [f"v{j}" for j in range(len(self.aggregates))]
        return self._keys + visible + self.hidden_names()

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

    def _prepared(self, df: DataFrame) -> DataFrame:
        """The input batch as keys ``k*``, aggregate arguments ``a*``, time and diff."""
        assert self.input is not None
        types, refs = self.input.types, [F.col(c) for c in data_columns(df)]
        keys = [compile_scalar(k, refs, types).alias(n) for k, n in zip(self.group_key,
                                                                          self._keys)]
        args = [compile_scalar(a.expr, refs, types).alias(f"a{j}")
                for j, a in enumerate(self.aggregates) if a.expr is not None]
        return df.select(*keys, *args, TIME, DIFF)

    def _changes(self, prepared: DataFrame, single_time: bool) -> DataFrame:
        """Per (key, time): the changes of the row count and accumulators, then their running
        sums over the key's times (``c*`` columns); with a single time, the changes are
        their own running sums."""
        sums = [F.sum(DIFF).alias("dcnt")]
        for j in self._accumulated():
            present = F.col(f"a{j}").isNotNull()
            sums.append(F.sum(F.when(present, F.col(DIFF)).otherwise(0)).alias(f"dn{j}"))
            if self.aggregates[j].func == "sum":
                weighted = F.col(f"a{j}").cast(spark_type(self._sum_type(j))) * F.col(DIFF)
                sums.append(F.sum(F.when(present, weighted)).alias(f"ds{j}"))
        per_time = prepared.groupBy(*self._keys, TIME).agg(*sums)
        if single_time:
            totals = [F.coalesce(F.col(c), F.lit(0)).alias("c" + c[1:])
                      for c in per_time.columns if c.startswith("d")]
            return per_time.select(*self._keys, TIME, *totals)
        running = Window.partitionBy(*self._keys).orderBy(TIME).rowsBetween(
            Window.unboundedPreceding, Window.currentRow)
        out = [F.col(k) for k in self._keys] + [F.col(TIME)]
        out.append(F.sum("dcnt").over(running).alias("ccnt"))
        for j in self._accumulated():
            out.append(F.sum(f"dn{j}").over(running).alias(f"cn{j}"))
            if self.aggregates[j].func == "sum":
                out.append(F.sum(F.coalesce(F.col(f"ds{j}"), F.lit(0)))
                           .over(running).alias(f"cs{j}"))
        return per_time.select(*out)

    def _default_row(self, ctx: StepContext) -> DataFrame:
        """The global aggregate's row over no input: count 0, every other aggregate NULL."""
        values: list[Column] = []
        for j, agg in enumerate(self.aggregates):
            value = F.lit(0) if agg.func == "count" else F.lit(None)
            values.append(value.cast(spark_type(self.types[j])).alias(f"v{j}"))
        hidden = [F.lit(0).cast("bigint").alias(n) if n[0] in "cn"
                  else F.lit(0).cast(spark_type(self._sum_type(int(n[1:])))).alias(n)
                  for n in self.hidden_names()]
        return ctx.spark.range(1).select(*values, *hidden)

    def _previous(self, ctx: StepContext, touched: DataFrame) -> DataFrame | None:
        """The current output rows (``o_*`` columns) of the touched keys."""
        assert self.output is not None
        if not self.group_key and ctx.first:
            old: DataFrame | None = self._default_row(ctx)
        else:
            old = None if ctx.first else self.output.read(upto=ctx.lower)
            if old is None:
                return None
            names = self.full_names()
            old = old.select(*[F.col(f"c{i}").alias(n) for i, n in enumerate(names)], DIFF)
            if self.group_key:
                keys = touched.select(*[F.col(k).alias(f"t_{k}") for k in self._keys])
                keys = F.broadcast(keys) if ctx.small else keys
                old = old.join(keys, _key_match(self._keys, [f"t_{k}" for k in self._keys]),
                               "left_semi")
            old = (old.groupBy(*names).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) > 0)
                   .drop(DIFF))
        return old.select(*[F.col(n).alias(f"o_{n}") for n in old.columns])

    def _extreme_values(self, ctx: StepContext, prepared: DataFrame,
                        times: DataFrame) -> DataFrame:
        """min/max at each touched (key, time), from the arranged (key, argument) pairs."""
        assert self.values is not None
        args = [f"a{j}" for j in self._extremes()]
        delta = prepared.select(*self._keys, *args, TIME, DIFF)
        parts = [delta]
        old = None if ctx.first else self.values.read(upto=ctx.lower)
        if old is not None:
            old = old.select(*self._keys, *args, DIFF)
            if self.group_key:
                keys = times.select(*[F.col(k).alias(f"t_{k}") for k in self._keys]).distinct()
                old = old.join(F.broadcast(keys) if ctx.small else keys,
                               _key_match(self._keys, [f"t_{k}" for k in self._keys]),
                               "left_semi")
            old = old.groupBy(*self._keys, *args).agg(F.sum(DIFF).alias(DIFF))
            parts.insert(0, old.select(*self._keys, *args, F.lit(NEVER).alias(TIME), DIFF))
        candidates = functools.reduce(DataFrame.unionByName, parts)
        at = times.select(*[F.col(k).alias(f"x_{k}") for k in self._keys],
                          F.col(TIME).alias("x_time"))
        valid = candidates.join(
            at, _key_match(self._keys, [f"x_{k}" for k in self._keys])
            & (F.col(TIME) <= F.col("x_time")), "inner")
        counted = (valid.groupBy(*[f"x_{k}" for k in self._keys], "x_time", *args)
                   .agg(F.sum(DIFF).alias("m")).where(F.col("m") > 0))
        extremes = [(F.min if self.aggregates[j].func == "min" else F.max)(f"a{j}").alias(f"e{j}")
                    for j in self._extremes()]
        return counted.groupBy(*[f"x_{k}" for k in self._keys], "x_time").agg(*extremes)

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None and self.output is not None
        self._staged = []
        source = self.input.delta(ctx)
        first_global = not self.group_key and ctx.first
        if source is None and not first_global:
            return None
        rows: list[DataFrame] = []
        prepared = None if source is None else self._prepared(source.df)
        if prepared is not None and self._extremes():
            # computed once: it feeds both the changes and the (key, argument) arrangement
            leaf = materialize(ctx.spark, prepared, ctx.small)
            prepared = None if leaf is None else leaf.df
            if leaf is not None:
                assert self.values is not None
                pairs = leaf.df.select(*self._keys, *[f"a{j}" for j in self._extremes()],
                                       TIME, DIFF)
                self._staged.append((self.values, Leaf(pairs, leaf.rows), *self._range(ctx)))
        if prepared is not None:
            rows.append(self._updates(ctx, prepared))
        if not rows and not first_global:
            return None
        if first_global:
            default = self._default_row(ctx)
            rows.append(default.select(*default.columns, F.lit(ctx.as_of).alias(TIME),
                                       F.lit(1).cast("bigint").alias(DIFF)))
        full = functools.reduce(DataFrame.unionByName, rows)
        full = full.select(*[F.col(n).alias(f"c{i}") for i, n in
                             enumerate(self.full_names())], TIME, DIFF)
        leaf = materialize(ctx.spark, consolidate(full), ctx.small)
        self._staged.append((self.output, leaf, *self._range(ctx)))
        if leaf is None:
            return None
        visible = leaf.df.select(*[f"c{i}" for i in range(self.arity)], TIME, DIFF)
        return Delta(visible, leaf.rows)

    @staticmethod
    def _range(ctx: StepContext) -> tuple[int, int]:
        return (ctx.as_of if ctx.first else ctx.lower + 1, ctx.upper)

    def _updates(self, ctx: StepContext, prepared: DataFrame) -> DataFrame:
        """Retractions of the previous rows and insertions of the new rows at every
        interesting time of every touched key."""
        changes = self._changes(prepared, ctx.single_time)
        previous = self._previous(ctx, changes)
        if previous is not None:
            keys = [f"o_{k}" for k in self._keys]
            joined = changes.join(F.broadcast(previous) if ctx.small else previous,
                                  _key_match(self._keys, keys), "left")
        else:
            absent = [F.lit(None).cast(t).alias(f"o_{n}") for n, t in
                      zip(self.full_names(), self._full_types()) if n not in self._keys]
            joined = changes.select("*", *absent)
        if self._extremes():
            extremes = self._extreme_values(ctx, prepared, changes)
            joined = joined.join(
                extremes, _key_match(self._keys, [f"x_{k}" for k in self._keys])
                & (F.col(TIME) == F.col("x_time")), "left")

        def old(name: str) -> Column:
            return F.col(f"o_{name}")

        new: dict[str, Column] = {k: F.col(k) for k in self._keys}
        new["cnt"] = F.coalesce(old("cnt"), F.lit(0)) + F.col("ccnt")
        for j in self._accumulated():
            new[f"n{j}"] = F.coalesce(old(f"n{j}"), F.lit(0)) + F.col(f"cn{j}")
            if self.aggregates[j].func == "sum":
                total = F.coalesce(old(f"s{j}"), F.lit(0)) + F.col(f"cs{j}")
                new[f"s{j}"] = total.cast(spark_type(self._sum_type(j)))
        for j, agg in enumerate(self.aggregates):
            if agg.func == "count":
                value = new["cnt"] if agg.expr is None else new[f"n{j}"]
            elif agg.func == "sum":
                value = F.when(new[f"n{j}"] > 0, new[f"s{j}"])
            else:
                value = F.col(f"e{j}")
            new[f"v{j}"] = value.cast(spark_type(self.types[len(self._keys) + j]))
        names, types = self.full_names(), self._full_types()
        new_row = F.struct(*[new[n].cast(t).alias(n) for n, t in zip(names, types)])
        old_row = F.struct(*[(F.col(n) if n in self._keys else old(n)).cast(t).alias(n)
                             for n, t in zip(names, types)])
        staged = joined.select(*self._keys, TIME, new_row.alias("new"), old_row.alias("old"))
        if ctx.single_time:
            paired = staged.select(TIME, F.col("new"), F.col("old").alias("prev"))
        else:
            by_time = Window.partitionBy(*self._keys).orderBy(TIME)
            first = F.lag(TIME).over(by_time).isNull()
            paired = staged.select(TIME, F.col("new"), F.when(first, F.col("old")).otherwise(
                F.lag("new").over(by_time)).alias("prev"))
        if self.group_key:
            exists_new = F.col("new.cnt") > 0
            exists_prev = F.coalesce(F.col("prev.cnt") > 0, F.lit(False))
        else:
            exists_new = exists_prev = F.lit(True)
        update = F.explode(F.array(
            F.struct(F.col("prev").alias("row"), F.lit(-1).cast("bigint").alias("d"),
                     exists_prev.alias("keep")),
            F.struct(F.col("new").alias("row"), F.lit(1).cast("bigint").alias("d"),
                     exists_new.alias("keep"))))
        exploded = paired.select(F.col(TIME), update.alias("u")).where(F.col("u.keep"))
        return exploded.select(*[F.col(f"u.row.{n}").alias(n) for n in names],
                               F.col(TIME), F.col("u.d").alias(DIFF))

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.output is not None
        if ctx.first:
            return None
        df = self.output.read(upto=ctx.lower)
        return None if df is None else df.select(*[f"c{i}" for i in range(self.arity)],
                                                 TIME, DIFF)

    def commit(self) -> None:
        for trace, leaf, lower, upper in self._staged:
            trace.append(leaf, lower, upper)
        self._staged = []

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
