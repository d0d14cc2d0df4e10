"""A group-wise operator (a reduce, a TopK, a window) inside a recursive query's loop
(``runtime.recursion.let_rec``), round by round, on the ordinary operator.

With G(t, r) the operator's output over its input's contents at time t and round r (the
sum of the input's differences at ``(t', r') <= (t, r)``, product order), its output's
difference at (t, r) is the two-dimensional difference

    G(t, r) - G(t-1, r) - G(t, r-1) + G(t-1, r-1) = D_r(t) - D_{r-1}(t),

where D_r(t) = G(t, r) - G(t-1, r) are the changes the ordinary operator computes over the
contents at rounds <= r: its history the earlier steps' differences of those rounds, its
changes this step's (``scope.LoopContents``; the operator has no arrangements: its input's
history is its state). And D_{r-1}(t) is the sum of the output's differences at (t, r')
for r' < r, which the step computed in its rounds before. So round r is the ordinary
operator over the contents at rounds <= r, less the operator's output of the rounds before.

A group's output changes at round r only if its input has a difference at round r (of
this step, or of an earlier step at a time before): both terms are restricted to those
groups (``LoopContents.touched``), and a round in which the input has no difference
computes nothing. Expressions of a reduce that may fail on a row are checked on the
round's differences alone (a linear operator computing them, ``_checked``), so a row's
error is counted once, as outside a loop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir.relation import Linear, Reduce, TopK, Window
from matview.ir.scalar import may_fail
from matview.ir.steps import Map, Project
from matview.runtime.arrangements.updates import DIFF, TIME, union_all
from matview.runtime.lowering.types import col, column_names
from matview.runtime.recursion.scope import LoopContents, body_operator, group_column
from pyspark.sql import DataFrame

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


def group_round(op: LetRecOp, node: Reduce | TopK | Window, r: int) -> DataFrame | None:
    """Round ``r`` of ``node``'s output differences (not consolidated; the module
    docstring), or None when its input has no difference of round ``r``."""
    operator = body_operator(op, node)
    contents = operator.children()[0]
    assert isinstance(contents, LoopContents)
    born = isinstance(node, Reduce) and not node.group_key and op.step.first and r == 0
    if not born and not contents.changes_at_round():
        return None
    checked = _checked(node)
    if checked is not None:
        op.round_delta(checked)
    delta = operator.delta(op.round_context)
    keyed = group_column(node)
    earlier = contents.between(node, r - 1, None if keyed is None else keyed[1])
    now = None if delta is None else delta.df
    if now is None and earlier is None:
        return None
    names = column_names(len(node.types))
    return op.planned(("group round", node), (now, earlier), lambda: union_all(
        [df for df in (now, None if earlier is None else _negated(earlier, names))
         if df is not None]))


def _negated(df: DataFrame, names: list[str]) -> DataFrame:
    """The updates ``df`` with their diffs negated."""
    return df.select(*names, TIME, (-col(DIFF)).alias(DIFF))


def _checked(node: Reduce | TopK | Window) -> Linear | None:
    """A linear operator computing the expressions of reduce ``node`` that may fail on a
    row (its keys' and its aggregates'), whose errors are the reduce's; None when none
    may."""
    if not isinstance(node, Reduce):
        return None
    scalars = tuple(e for e in (*node.group_key, *[e for a in node.aggregates
                                                   for e in a.scalars()]) if may_fail(e))
    if not scalars:
        return None
    arity = node.input.arity
    return Linear(node.input, (Map(scalars),
                               Project(tuple(range(arity, arity + len(scalars))))))
