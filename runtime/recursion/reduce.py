"""A reduce inside a recursive query's loop (``runtime.recursion.let_rec``), round by round.

A reduce's output for group k can change only at joins of its input's times: at round r,
the groups with a difference at round r whose input changed at a new time t at some round
<= r, at those times t. With G(t, r) the reduce of the group's contents at (t, r), its
difference at (t, r) is ``G(t, r) - G(t-1, r) - G(t, r-1) + G(t-1, r-1)`` (``corners.CORNERS``).
The contents are read by group key: the committed differences of the groups the new ones
touch, cut from the driver's batches (``reads.committed``). Counts and sums by a key are
window sums over each group's rows ordered by time (``_summed``); other aggregates, or a
reduce with no group key, joins each candidate's corners with the contents (``_reduced``).
In a small step the rows are grouped in one partition, so the round's job has no shuffle."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa
from matview.ir.aggregates import maintained
from matview.ir.relation import Reduce
from matview.ir.scalar import Col
from matview.runtime.arrangements.updates import DIFF, ROUND, TIME, key_match, lookup, union_all
from matview.runtime.lowering.aggregates import extreme_aggregate
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.recursion.corners import (
    AT,
    COPIES,
    CORNERS,
    ROUNDS,
    SIGN,
    UPTO,
    before_round,
    corners_of,
    within_corner,
)
from matview.runtime.recursion.reads import column_values, committed, new_between
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


_NEW = "_new"
"""Whether a row of a reduce's contents is a difference at a new time."""


def reduce_round(op: LetRecOp, node: Reduce, r: int) -> DataFrame | None:
    """Round ``r`` of ``node``: every candidate group and new time, its two-dimensional
    difference of the reduce of its contents (the module docstring)."""
    source = node.input
    new = new_between(op, source, 0, r, rounds=True, base=r)
    born = not node.group_key and op.step.first and r == 0
    if new is None and not born:
        return None
    column = next((k.index for k in node.group_key if isinstance(k, Col)), None)
    values = None if column is None else column_values(op, source, 0, r, column)
    cuts: list[pa.Table | None] = []
    old = committed(op, source, 0, r, rounds=True, base=r, cuts=cuts,
                    key=None if column is None or values is None else (column, values))
    if not born and not op.has(source, r) and (old is None or before_round(cuts)):
        return None  # no group has a difference of round r: none changes at it
    if node.group_key and all(a.func in ("count", "sum") for a in node.aggregates):
        assert new is not None
        return op.planned(("reduce", node, r > 0), (old, new),
                          lambda: _summed(op, node, r > 0, old, new))
    changed = new_between(op, source, 0, r)
    now = op.at(source, r)
    return op.planned(("reduce", node, r > 0, born), (changed, old, now, new),
                      lambda: _reduced(op, node, r > 0, changed, old, now, new, born))


def _summed(op: LetRecOp, node: Reduce, later: bool, old: DataFrame | None,
            new: DataFrame) -> DataFrame:
    """The plan of a round of ``node`` whose aggregates are counts and sums, reading its
    contents once. ``old`` and ``new`` are its input's committed and new differences
    with ``ROUND`` relative to the round (0 the round's own; it is ``later`` than the
    first when some precede it). With the rows of group k ordered by time, the contents
    of corner ``(t - dt, -dr)`` of candidate time t are the rows up to ``t - dt``
    (a window frame over time; its peers share it) with ``ROUND <= -dr``, so every
    corner's count and sums are window sums over the group, and the candidates are
    the new rows' times of the groups holding a row of the round (a window maximum
    over the group). Each candidate's corners with rows are output with their signs,
    once (a distinct)."""
    prepared = _prepared(op, node)
    keys = [f"k{i}" for i in range(len(node.group_key))]
    tagged = [df.withColumn(_NEW, F.lit(is_new)) for df, is_new in ((old, False), (new, True))
              if df is not None]
    rows = prepared(union_all(tagged))  # type: ignore[arg-type]
    if op.step.small and not op.step.first:
        rows = rows.coalesce(1)  # grouped in one partition: no shuffle
    by_time = Window.partitionBy(*keys).orderBy(TIME)
    frames = {0: by_time.rangeBetween(Window.unboundedPreceding, Window.currentRow),
              1: by_time.rangeBetween(Window.unboundedPreceding, -1)}
    whole = by_time.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    out = [spark_type(a.type(node.input.types)) for a in node.aggregates]

    def summed(dt: int, dr: int, weight: Column) -> Column:
        """The sum of ``weight`` over the contents of corner ``(t - dt, -dr)``."""
        return F.sum(F.when(col(ROUND) <= -dr, weight)).over(frames[dt])

    def corner(dt: int, dr: int, sign: int) -> Column:
        aggregates = []
        for i, agg in enumerate(node.aggregates):
            value = col(f"v{i}")
            if agg.expr is None:
                aggregates.append(summed(dt, dr, col(DIFF)).cast(out[i]))
            elif agg.func == "count":
                aggregates.append(summed(dt, dr, F.when(value.isNotNull(), col(DIFF)))
                                  .cast(out[i]))
            else:  # sum: NULL when no copy of a value is left
                aggregates.append(F.when(
                    summed(dt, dr, F.when(value.isNotNull(), col(DIFF))) > 0,
                    summed(dt, dr, value.cast(out[i]) * col(DIFF))).cast(out[i]))
        return F.struct(summed(dt, dr, col(DIFF)).alias("_n"),
                        *[a.alias(f"a{i}") for i, a in enumerate(aggregates)],
                        F.lit(sign).cast("bigint").alias(SIGN))

    corners = [corner(dt, dr, sign) for dt, dr, sign in CORNERS if later or dr == 0]
    touched = F.max((col(ROUND) == 0).cast("int")).over(whole)
    candidates = (rows.select(*keys, col(TIME).alias(AT), col(_NEW), touched.alias("_k"),
                              *[c.alias(f"_c{j}") for j, c in enumerate(corners)])
                  .where(col(_NEW) & (col("_k") > 0)).drop(_NEW, "_k").distinct())
    return (candidates.select(*keys, AT, F.inline(F.array(*[
                col(f"_c{j}") for j in range(len(corners))])))
            .where(col("_n") > 0)
            .select(*[col(k).alias(f"c{i}") for i, k in enumerate(keys)],
                    *[col(f"a{i}").alias(f"c{len(keys) + i}")
                      for i in range(len(node.aggregates))],
                    col(AT).alias(TIME), col(SIGN).alias(DIFF)))


def _reduced(op: LetRecOp, node: Reduce, later: bool, changed: DataFrame | None,
             old: DataFrame | None, now: DataFrame | None, new: DataFrame | None,
             born: bool) -> DataFrame:
    """The plan of a round of ``node`` with an aggregate other than count and sum or no
    group key (``reduce_round``; counts and sums by a key are ``_summed``): the candidates
    (group and new time) joined with the contents of each of their corners, each corner's
    aggregates those of the reduce outside a loop (``lowering.aggregates``). ``changed``
    is its input's new differences of every round so far, ``now`` those of the round,
    ``old`` and ``new`` its committed and new differences with ``ROUND`` relative to the
    round (0; the round is ``later`` than the first when some precede it).

    Without a group key the reduce has one row at every time from the first step's on,
    also over no rows (count 0, other aggregates NULL): a corner's contents are joined
    outer, a corner before that time has no row, and the row is ``born`` at round 0 of the
    first step, whatever its input."""
    prepared = _prepared(op, node)
    keys = [f"k{i}" for i in range(len(node.group_key))]
    at_r = [df for df in (now, None if old is None else
                          old.where(col(ROUND) == 0).drop(ROUND)) if df is not None]
    small = op.step.small and not op.step.first

    def one(df: DataFrame) -> DataFrame:
        """``df`` in one partition in a small step, where grouping it needs no shuffle."""
        return df.coalesce(1) if small else df

    times = []
    if changed is not None and at_r:
        touched = one(prepared(union_all(at_r))).select(*keys).distinct()  # type: ignore[arg-type]
        times.append(lookup(one(prepared(changed)).select(*keys, TIME).distinct(),
                            touched.select(*[col(k).alias(f"x_{k}") for k in keys]),
                            key_match(keys, [f"x_{k}" for k in keys]), "left_semi", small))
    if born:
        times.append(op.step.spark.range(1).select(
            F.lit(op.step.as_of).cast("bigint").alias(TIME)))
    candidates = union_all(times)
    assert candidates is not None
    corners = corners_of(candidates, keys, later)
    contents = union_all([df for df in (old, new) if df is not None])
    corner = [*[f"x_{k}" for k in keys], AT, UPTO, ROUNDS, SIGN]
    if contents is None:  # the born row over no rows: count 0, other aggregates NULL
        groups = corners.select(*corner, F.lit(0).alias("_n"), *[
            F.lit(0 if a.func == "count" else None).cast(spark_type(t)).alias(f"a{i}")
            for i, (a, t) in enumerate(zip(node.aggregates, node.types[len(keys):]))])
    else:
        rows = prepared(contents)
        within = key_match(keys, [f"x_{k}" for k in keys]) & within_corner()
        seen = lookup(rows, corners, within, "inner", small, build="right") if keys else \
            lookup(rows, corners, within, "right", small, build="left")
        # a row's copies, consolidated (0 counts for nothing; an empty corner: NULL)
        copies = seen.groupBy(*corner, *_values(node)).agg(F.sum(DIFF).alias(COPIES))
        if any(maintained(a.func).ordered for a in node.aggregates):  # a row per occurrence
            copies = copies.select(*corner, *_values(node), F.explode_outer(F.when(
                col(COPIES) > 0, F.sequence(F.lit(1).cast("bigint"), col(COPIES)))
            ).alias("_one"))
            copies = copies.select(*corner, *_values(node), F.when(
                col("_one").isNotNull(), F.lit(1).cast("bigint")).alias(COPIES))
        groups = copies.groupBy(*corner).agg(
            F.coalesce(F.sum(COPIES), F.lit(0).cast("bigint")).alias("_n"),
            *[_aggregate(node, i).alias(f"a{i}") for i in range(len(node.aggregates))])
    exists = col("_n") > 0 if keys else col(UPTO) >= op.step.as_of
    return groups.where(exists).select(
        *[col(f"x_{k}").alias(f"c{i}") for i, k in enumerate(keys)],
        *[col(f"a{i}").alias(f"c{len(keys) + i}") for i in range(len(node.aggregates))],
        col(AT).alias(TIME), col(SIGN).cast("bigint").alias(DIFF))


def _values(node: Reduce) -> list[str]:
    """The prepared columns of ``node``'s aggregates: each argument ``v{i}`` and the ORDER
    BY keys ``o{i}_{j}`` of an aggregate of values in order."""
    return [*[f"v{i}" for i, a in enumerate(node.aggregates) if a.expr is not None],
            *[f"o{i}_{j}" for i, a in enumerate(node.aggregates)
              for j in range(len(a.order_by))]]


def _prepared(op: LetRecOp, node: Reduce) -> Callable[[DataFrame], DataFrame]:
    """The input rows of ``node`` as group key ``k{i}`` and aggregate arguments
    ``v{i}`` (with time, diff and any round)."""
    types = node.input.types

    def compiled() -> list[Column]:
        columns = [col(c) for c in column_names(len(types))]
        return [*[compile_scalar(k, columns, types).alias(f"k{i}")
                  for i, k in enumerate(node.group_key)],
                *[compile_scalar(a.expr, columns, types).alias(f"v{i}")
                  for i, a in enumerate(node.aggregates) if a.expr is not None],
                *[compile_scalar(e, columns, types).alias(f"o{i}_{j}")
                  for i, a in enumerate(node.aggregates) for j, (e, _, _) in enumerate(a.order_by)]]

    def prepare(df: DataFrame) -> DataFrame:
        rest = [c for c in (TIME, DIFF, ROUND, _NEW) if c in df.columns]
        return df.select(*op.built(("prepared", node), compiled), *rest)

    return prepare


def _aggregate(node: Reduce, i: int) -> Column:
    """Aggregate ``i`` of a corner's rows, each with its ``_copies`` (NULL on the row of
    NULLs of a corner with no rows)."""
    agg = node.aggregates[i]
    out = node.types[len(node.group_key) + i]
    spark_out = spark_type(out)
    copies = col(COPIES)
    if agg.expr is None:
        return F.coalesce(F.sum(copies), F.lit(0)).cast(spark_out)
    value = col(f"v{i}")
    if agg.func == "count":
        return F.sum(F.when(value.isNotNull(), copies).otherwise(0)).cast(spark_out)
    if agg.func == "sum":  # NULL when no copy of a value is left
        return F.when(F.sum(F.when(value.isNotNull(), copies)) > 0,
                      F.sum(value.cast(spark_out) * copies)).cast(spark_out)
    return extreme_aggregate(agg, out, F.when(copies > 0, value),
                             [col(f"o{i}_{j}") for j in range(len(agg.order_by))]).cast(spark_out)
