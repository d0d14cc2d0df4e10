"""Window functions inside a recursive query's loop (``runtime.recursion.let_rec``), round by
round.

A window is a group-wise operator whose groups are its partitions: with G(t, r) a
partition's rows with their window values over its contents at (t, r) (as outside a loop,
``lowering.window_values``: each row once per copy, in the call's total order), its
output's difference at (t, r) is the two-dimensional difference of G (``corners``). At
round r, the candidates are the partitions with a difference at round r, at the new times
their input changed at in rounds <= r; each candidate corner's contents are read by
partition key and valued as one partition, its rows counted with the corner's sign."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir.relation import Window
from matview.runtime.arrangements.updates import DIFF, ROUND, TIME, key_match, lookup, union_all
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.lowering.window_values import window_value
from matview.runtime.recursion.corners import (
    AT,
    COPIES,
    ROUNDS,
    SIGN,
    UPTO,
    corners_of,
    round_inputs,
    within_corner,
)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


def window_round(op: LetRecOp, node: Window, r: int) -> DataFrame | None:
    """Round ``r`` of ``node``: every candidate partition and new time, the
    two-dimensional difference of its valued rows (the module docstring)."""
    key = node.partition_by[0] if node.partition_by else None
    read = round_inputs(op, node.input, r, key)
    if read is None:
        return None
    changed, old, now, new = read
    return op.planned(("window", node, r > 0), (changed, old, now, new),
                      lambda: _windowed(op, node, r > 0, changed, old, now, new))


def _windowed(op: LetRecOp, node: Window, later: bool, changed: DataFrame,
              old: DataFrame | None, now: DataFrame | None, new: DataFrame) -> DataFrame:
    """The plan of a round of ``node``: ``changed`` its input's new differences of every
    round so far, ``now`` those of the round, ``old`` and ``new`` its committed and new
    differences with ``ROUND`` relative to the round (0; the round is ``later`` than the
    first when some precede it)."""
    names = column_names(node.input.arity)
    keys = [names[c] for c in node.partition_by]
    away = [f"x_{k}" for k in keys]
    small = op.step.small and not op.step.first

    def one(df: DataFrame) -> DataFrame:
        """``df`` in one partition in a small step, where grouping it needs no shuffle."""
        return df.coalesce(1) if small else df

    at_r = union_all([df for df in (now, None if old is None else
                                    old.where(col(ROUND) == 0).drop(ROUND)) if df is not None])
    assert at_r is not None
    touched = one(at_r).select(*keys).distinct()
    candidates = lookup(one(changed).select(*keys, TIME).distinct(),
                        touched.select(*[col(k).alias(x) for k, x in zip(keys, away)]),
                        key_match(keys, away), "left_semi", small)
    corners = corners_of(candidates, keys, later)
    contents = union_all([df for df in (old, new) if df is not None])
    assert contents is not None
    seen = lookup(contents, corners, key_match(keys, away) & within_corner(), "inner", small,
                  build="right")
    corner = [*away, AT, UPTO, ROUNDS, SIGN]
    copies = seen.groupBy(*corner, *names).agg(F.sum(DIFF).alias(COPIES)).where(
        col(COPIES) > 0)
    rows = copies.select(*corner, *names, F.explode(
        F.sequence(F.lit(1).cast("bigint"), col(COPIES))).alias("_copy"))
    arity = len(names)
    partition = [col(c) for c in corner]
    valued = rows.select(*names, *[
        window_value(call, node.input.types, partition)
        .cast(spark_type(node.types[arity + i])).alias(f"c{arity + i}")
        for i, call in enumerate(node.calls)], AT, SIGN)
    shown = column_names(node.arity)
    return (valued.groupBy(*shown, AT).agg(F.sum(SIGN).cast("bigint").alias(DIFF))
            .where(col(DIFF) != 0).select(*shown, col(AT).alias(TIME), DIFF))
