"""The accumulable aggregates of a reduce (``count``, ``sum`` and the like,
``Maintenance.SUMMED``) as running accumulators: the group's row count, and each aggregate's
count of non-null values (and, for a sum, its running sum). Accumulators are additive: the
stored state contributes each row's accumulators times its diff at time ``NEVER``, the input
delta each row's count, non-null flag and weighted value at its own time.
"""

from __future__ import annotations

import functools

import pyarrow as pa
from matview.ir.aggregates import maintained
from matview.runtime.arrangements.updates import DIFF, TIME, key_match, lookup, union_all
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import StepContext
from matview.runtime.operators.reduce_state import NEVER, ReduceState
from matview.runtime.spark.arrow_frames import arrow_frame
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

LIMB_BITS = 21
"""A sum of BIGINTs is kept in three BIGINT limbs (``ReduceLayout``): x = l2 * 2^42 + l1 *
2^21 + l0, with l0 and l1 in [0, 2^21) and l2 in [-2^21, 2^21). A limb times a diff below
2^42 fits a BIGINT, and so do the limbs' sums over rows whose diffs add up to less than
2^42 (4.4 trillion); past that a sum fails as an overflow (ANSI), never wraps."""


def limbs(x: Column) -> list[Column]:
    """The limbs l0, l1, l2 of BIGINT ``x`` (arithmetic shifts: x's sign is l2's)."""
    mask = F.lit((1 << LIMB_BITS) - 1).cast("bigint")
    return [x.bitwiseAND(mask), F.shiftright(x, LIMB_BITS).bitwiseAND(mask),
            F.shiftright(x, 2 * LIMB_BITS)]


def joined(sums: list[Column], to: T.DataType) -> Column:
    """The exact sum (of type ``to``, a NUMERIC of 38 digits) of the limbs' sums l0, l1, l2."""
    return sum((part.cast(to) * F.lit(1 << LIMB_BITS * i).cast(to)
                for i, part in enumerate(sums[1:], 1)), sums[0].cast(to))


def times_diff(value: Column, to: T.DataType) -> Column:
    """``value`` times its row's diff, as type ``to``. Spark keeps only 6 decimals of a
    NUMERIC times a BIGINT once the product's digits pass 38 (its precision loss), which a
    NUMERIC(38, s) always does: a diff of 1 or -1 (nearly every update) keeps or negates the
    value instead, and any other multiplies it at its own precision (exact up to 17 digits,
    or at a scale of at most 6) before widening it to ``to``."""
    if not isinstance(to, T.DecimalType):
        return value.cast(to) * col(DIFF)
    return (F.when(col(DIFF) == 1, value.cast(to)).when(col(DIFF) == -1, (-value).cast(to))
            .otherwise((value * col(DIFF).cast(T.DecimalType(20, 0))).cast(to)))


class ReduceAccumulators(ReduceState):
    """The contributions of a step's changes and of the stored state to a reduce's
    accumulators."""

    def _contributions(self, ctx: StepContext, prepared: DataFrame | None,
                       old: DataFrame | None) -> DataFrame:
        """The input delta's and the stored state's contributions to the accumulators:
        keys, time, then one column per hidden accumulator (see the module docstring)."""
        parts = []
        if prepared is not None:
            parts.append(self.selected(prepared, "delta contributions", lambda: [
                *self._keys, TIME, *self._delta_contributions]))
        if not self.group_key and (ctx.first or self.output is None):
            # a global aggregate's row exists even over no input rows: from the first step
            # on, and before every later step (a reduce without arrangements has no
            # stored row: it contributes nothing at ``NEVER``)
            zero = [F.lit(None if n.startswith("s") else 0).cast(self._hidden_type(n)).alias(n)
                    for n in self.hidden_names()]
            at = ctx.as_of if ctx.first else NEVER
            one = self.built("one row", lambda: arrow_frame(  # a local leaf: the plan can
                ctx.spark, pa.table({"one": pa.array([1], pa.int8())})))  # be kept
            parts.append(one.select(F.lit(at).cast("bigint").alias(TIME), *zero))
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
            if f"l{j}_0" in self.layout.hidden:
                delta += [F.when(present, limb * col(DIFF)).otherwise(0).alias(f"l{j}_{i}")
                          for i, limb in enumerate(limbs(col(f"a{j}")))]
            elif maintained(self.aggregates[j].func).sums_values:
                weighted = times_diff(col(f"a{j}"), self._sum_spark(j))
                delta.append(F.when(present, weighted).alias(f"s{j}"))
        return delta

    @functools.cached_property
    def _single_time_sums(self) -> list[Column]:
        """A single-time step's aggregation per key: the time and the accumulators summed
        over the state and the changes (all a first step, which has no state, takes; built
        once)."""
        return [F.max(TIME).alias(TIME), *[F.sum(n).alias(n) for n in self.hidden_names()]]

    @functools.cached_property
    def _previous_sums(self) -> list[Column]:
        """Beside ``_single_time_sums`` in a later step: the accumulators summed over the
        state alone (``p_*``), and whether there was a previous row (built once)."""
        is_state = col(TIME) == NEVER
        return [*[F.sum(F.when(is_state, col(n))).alias(f"p_{n}") for n in self.hidden_names()],
                F.max(F.when(is_state, F.lit(1))).alias("p_exists")]

    @functools.cached_property
    def _later(self) -> Column:
        """The rows at real times (not the stored state's ``NEVER``)."""
        return col(TIME) > NEVER

    @functools.cached_property
    def _state_contributions(self) -> list[Column]:
        """The accumulator columns a stored output row contributes (built once)."""
        return [times_diff(col(n), self._hidden_type(n)).alias(n) for n in self.hidden_names()]

    def _running(self, per_time: DataFrame) -> DataFrame:
        """The accumulators after each of a key's times (sums running over its times, one
        window ordered by time), each beside the previous time's (``p_*``, ``p_exists``),
        at real times (``_later``)."""
        hidden, extremes = self.hidden_names(), [f"e{j}" for j in self._extremes()]
        by_time = Window.partitionBy(*self._keys).orderBy(TIME)
        running = by_time.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        accumulated = per_time.select(
            *self._keys, TIME, *[F.sum(n).over(running).alias(n) for n in hidden],
            *[col(n) for n in extremes])
        return accumulated.select(
            *self._keys, TIME, *hidden, *extremes,
            *[F.lag(n).over(by_time).alias(f"p_{n}") for n in hidden + extremes],
            F.lag(TIME).over(by_time).isNotNull().alias("p_exists"),
        ).where(self._later)
