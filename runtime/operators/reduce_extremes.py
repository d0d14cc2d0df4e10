"""The min/max-like aggregates of a reduce (``min``, ``max`` and aggregates of values in
order, ``Maintenance.EXTREME``): they cannot be updated from a previous value when rows are
deleted, so the input's (key, argument) pairs are arranged (``ReduceState.values``) and each
interesting (key, time) of a step takes its aggregate over the pairs valid then: the
arranged ones (at ``NEVER``) and the step's changes up to that time.
"""

from __future__ import annotations

from matview.ir.aggregates import maintained
from matview.runtime.arrangements.updates import DIFF, TIME, key_match, lookup, union_all
from matview.runtime.lowering.aggregates import extreme_aggregate
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import StepContext
from matview.runtime.operators.reduce_state import NEVER, ReduceState
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


class ReduceExtremes(ReduceState):
    """The min/max-like aggregates of a reduce, from its (key, argument) arrangement."""

    def _extreme_values(self, ctx: StepContext, prepared: DataFrame | None,
                        times: DataFrame, old: DataFrame | None) -> DataFrame | None:
        """min/max at each (key, time) of ``times``, from the arranged (key, argument) pairs
        read (``old``, None on the first step) and the step's changes."""
        args = self._value_columns()
        parts = [] if prepared is None else [prepared.select(*self._keys, *args, TIME, DIFF)]
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
        return extreme_aggregate(aggregate, self.types[len(self._keys) + j], col(f"a{j}"),
                                 [col(f"o{j}_{i}") for i in range(len(aggregate.order_by))])
