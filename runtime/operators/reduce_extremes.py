"""The min/max-like aggregates of a reduce (``min``, ``max`` and aggregates of values in
order, ``Maintenance.EXTREME``): they cannot be updated from a previous value when rows are
deleted, so the input's (key, argument) pairs are arranged (``ReduceState.values``) and each
interesting (key, time) of a step takes its aggregate over the pairs valid then: the
arranged ones (at ``NEVER``) and the step's changes up to that time.
"""

from __future__ import annotations

from matview.ir.aggregates import maintained
from matview.ir.types import Kind
from matview.runtime.arrangements.updates import DIFF, TIME, key_match, lookup, union_all
from matview.runtime.lowering.aggregates import extreme_value, ordered_value
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import StepContext
from matview.runtime.operators.reduce_state import NEVER, ReduceState
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


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


class ReduceExtremes(ReduceState):
    """The min/max-like aggregates of a reduce, from its (key, argument) arrangement."""

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

