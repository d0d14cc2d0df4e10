"""A join inside a recursive query's loop (``runtime.recursion.let_rec``): the ordinary join
operator (``operators.join.JoinOp``) over times (transaction, round), its inputs the loop's
collections, its delta paths the plan's (``scope.body_operator``).

In round r it joins each input's differences of round r with the others' of earlier rounds
and earlier steps (and of round r for the inputs before it), so every pair with a
difference of this step is joined once, in the round of the later of its two, at the least
upper bound of their times. A pair whose other difference is of an earlier step and of a
later round r' > r changes the join's output at round r': those rows (``ROUND`` relative to
r above 0, possible only while an input holds differences of an earlier step at a round
after r) are computed by the round's job and filed in the driver by round (``filed``); the
join's differences of round r are its rows of round r and those filed for r."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.relation import Join
from matview.runtime.arrangements.consolidation import consolidated_arrow
from matview.runtime.arrangements.updates import ROUND, normalized, union_all
from matview.runtime.lowering.types import col
from matview.runtime.recursion.reads import unwound
from pyspark.sql import DataFrame

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


def join_round(op: LetRecOp, node: Join, r: int) -> DataFrame | None:
    """``node``'s differences of round ``r``: its rows of round r computed now, and those
    filed for r by earlier rounds; its rows of later rounds are left to the round's job,
    which files them (``file_later``)."""
    out = op.round_delta(node)
    now = None
    if out is not None and _later_possible(op, node, r):
        now = op.planned(("now", node, True), (out,),
                         lambda: out.where(col(ROUND) == 0).drop(ROUND))
        op.later[node] = op.planned(("later", node), (out,), lambda: out.where(col(ROUND) > 0))
    elif out is not None:  # every row is of round r
        now = op.planned(("now", node, False), (out,), lambda: out.drop(ROUND))
    filed = op.filed.get(node, {}).get(r)
    held = None if filed is None else op.bound(op.step, ("filed", node), filed)
    frames = tuple(df for df in (now, held) if df is not None)
    return op.planned(("join", node), frames, lambda: union_all(list(frames)))


def _later_possible(op: LetRecOp, node: Join, r: int) -> bool:
    """Whether a path of ``node`` starting from differences of round ``r`` looks up an
    input holding differences of an earlier step at a round after ``r`` (only then can
    its output change at a later round)."""
    if op.step.first:
        return False
    later = [op.rounds.get(source, 0) - 1 + shift > r
             for source, shift in (unwound(op, child) for child in node.inputs)]
    return any(op.has(child, r) and any(later[:i] + later[i + 1:])
               for i, child in enumerate(node.inputs))


def file_later(op: LetRecOp, node: Join, r: int, table: pa.Table) -> None:
    """File ``node``'s rows of rounds after ``r`` (``table``: ``ROUND`` relative to r),
    consolidated, by round, for the rounds to come."""
    filed = op.filed.setdefault(node, {})
    rounds = table[ROUND]
    for later in pc.unique(rounds).to_pylist():
        rows = consolidated_arrow(normalized(
            table.filter(pc.equal(rounds, later)).drop_columns([ROUND])))
        if rows.num_rows:
            at = r + later
            filed[at] = rows if at not in filed else consolidated_arrow(
                pa.concat_tables([filed[at], rows]))

