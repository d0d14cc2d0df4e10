"""ORDER BY ... LIMIT ... OFFSET inside a recursive query's loop (``runtime.recursion.let_rec``),
round by round.

A TopK is a group-wise operator with one group, its whole input: with G(t, r) the rows at
positions offset+1 .. offset+limit of its input's contents at (t, r) (ranked as outside a
loop: by its keys, ties broken by every other column, ``sort_keys.total_order``; a row of
multiplicity m takes m positions), its output's difference at (t, r) is the two-dimensional
difference of G (``corners``). At round r, when its input has a difference of round r,
the candidates are the new times its input changed at in rounds <= r; each candidate's
corners rank their contents (one window per corner, each row repeated once per position it
takes, at most offset + limit times) and keep the positions of the output, counted with the
corner's sign."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir.relation import TopK
from matview.ir.sort_keys import total_order
from matview.runtime.arrangements.updates import DIFF, TIME, lookup, union_all
from matview.runtime.lowering.ordering import spark_order
from matview.runtime.lowering.types import col, column_names
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
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp

_POSITION = "_position"
"""A row copy's position in its corner's contents."""


def top_k_round(op: LetRecOp, node: TopK, r: int) -> DataFrame | None:
    """Round ``r`` of ``node``: at every candidate time, the two-dimensional difference of
    its output rows (the module docstring)."""
    read = round_inputs(op, node.input, r, None)
    if read is None:
        return None  # no difference of round r: the output does not change at it
    changed, old, _, new = read
    return op.planned(("top_k", node, r > 0), (changed, old, new),
                      lambda: _ranked(op, node, r > 0, changed, old, new))


def _ranked(op: LetRecOp, node: TopK, later: bool, changed: DataFrame,
            old: DataFrame | None, new: DataFrame) -> DataFrame:
    """The plan of a round of ``node``: ``changed`` its input's new differences of every
    round so far (their times the candidates), ``old`` and ``new`` its committed and new
    differences with ``ROUND`` relative to the round (0; the round is ``later`` than the
    first when some precede it)."""
    names = column_names(node.input.arity)
    small = op.step.small and not op.step.first
    candidates = changed.select(TIME)
    corners = corners_of(candidates.coalesce(1) if small else candidates, [], later)
    contents = union_all([df for df in (old, new) if df is not None])
    assert contents is not None
    seen = lookup(contents, corners, within_corner(), "inner", small, build="right")
    corner = [AT, UPTO, ROUNDS, SIGN]
    copies = seen.groupBy(*corner, *names).agg(F.sum(DIFF).alias(COPIES)).where(
        col(COPIES) > 0)
    depth = None if node.limit is None else node.offset + node.limit
    if depth is not None:  # a row takes no position after offset + limit that counts
        copies = copies.withColumn(COPIES, F.least(col(COPIES), F.lit(depth).cast("bigint")))
    each = copies.select(*corner, *names, F.explode(
        F.sequence(F.lit(1).cast("bigint"), col(COPIES))).alias("_copy"))
    order = spark_order(names, total_order(node.order_by, node.input.arity))
    ranked = each.withColumn(_POSITION, F.row_number().over(
        Window.partitionBy(*corner).orderBy(*order)))
    kept = col(_POSITION) > node.offset
    if depth is not None:
        kept = kept & (col(_POSITION) <= depth)
    return (ranked.where(kept).groupBy(AT, *names).agg(F.sum(SIGN).cast("bigint").alias(DIFF))
            .where(col(DIFF) != 0).select(*names, col(AT).alias(TIME), DIFF))
