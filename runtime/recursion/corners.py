"""The two-dimensional difference of a group-wise operator inside a recursive query's loop
(``runtime.recursion.let_rec``): a reduce's or a TopK's.

With G(t, r) the operator's output over a group's contents at time t and round r (the sum
of its input's differences at ``(t', r') <= (t, r)`` in the product order), its output's
difference at (t, r) is ``G(t, r) - G(t-1, r) - G(t, r-1) + G(t-1, r-1)`` (``CORNERS``):
the sum of the differences at times ``<= (t, r)`` is then G(t, r). A group's output can
change only at the times its input changed at, joined with the rounds: at round r, the
candidates are the groups with a difference at round r, at the new times their input
changed at in some round <= r. Each candidate's corners are rows ``(key, AT, UPTO,
ROUNDS, SIGN)``: the contents at ``(UPTO, ROUNDS)`` (ROUNDS relative to the round being
computed) counted with ``SIGN``, for the difference at time ``AT``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.relation import Relation
from matview.runtime.arrangements.updates import ROUND, TIME
from matview.runtime.lowering.types import col
from matview.runtime.recursion.reads import column_values, committed, new_between
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp

AT, UPTO, ROUNDS, SIGN, COPIES = "_at", "_upto", "_rounds", "_sign", "_copies"
"""A candidate time, the time and round bounding a corner's contents, the corner's sign
in the two-dimensional difference, a row's copies in the contents."""
CORNERS = ((0, 0, 1), (1, 0, -1), (0, 1, -1), (1, 1, 1))
"""The corners ``(dt, dr, sign)`` of the two-dimensional difference at ``(t, r)``: the
contents at ``(t - dt, r - dr)``, counted with ``sign``."""


def corners_of(candidates: DataFrame, keys: Sequence[str], later: bool) -> DataFrame:
    """The corners of ``candidates`` (group ``keys`` and time), the keys renamed
    ``x_<key>``; a round ``later`` than the first has the corners of the round before."""
    return candidates.distinct().select(*keys, col(TIME).alias(AT), F.inline(F.array(*[
        F.struct((col(TIME) - dt).alias(UPTO), F.lit(-dr).cast("bigint").alias(ROUNDS),
                 F.lit(sign).alias(SIGN))
        for dt, dr, sign in CORNERS if later or dr == 0]))).select(
            *[col(k).alias(f"x_{k}") for k in keys], AT, UPTO, ROUNDS, SIGN)


def within_corner() -> Column:
    """A content row (time, ``ROUND``) belongs to the contents of the corner it is joined
    with."""
    return (col(TIME) <= col(UPTO)) & (col(ROUND) <= col(ROUNDS))


def before_round(cuts: list[pa.Table | None]) -> bool:
    """Whether the committed differences read (``cuts``, their ``ROUND`` relative to the
    round being computed) all precede that round; False when some were not read in the
    driver."""
    return all(cut is not None and pc.max(cut[ROUND]).as_py() < 0 for cut in cuts)


RoundInputs = tuple[DataFrame, DataFrame | None, DataFrame | None, DataFrame]
"""A group-wise operator's input in a round: its new differences of every round so far,
its committed differences, its new differences of the round, and its new differences of
every round so far (the last two with ``ROUND`` relative to the round)."""


def round_inputs(op: LetRecOp, source: Relation, r: int, column: int | None
                 ) -> RoundInputs | None:
    """What round ``r`` of a group-wise operator over ``source`` reads: ``(changed, old,
    now, new)`` (``RoundInputs``; ``old`` cut by the groups' key ``column`` when the driver
    knows its values); None when no group has a difference of round ``r``, so none
    changes at it."""
    new = new_between(op, source, 0, r, rounds=True, base=r)
    if new is None:
        return None
    values = None if column is None else column_values(op, source, 0, r, column)
    cuts: list[pa.Table | None] = []
    old = committed(op, source, 0, r, rounds=True, base=r, cuts=cuts,
                    key=None if column is None or values is None else (column, values))
    if not op.has(source, r) and (old is None or before_round(cuts)):
        return None
    changed = new_between(op, source, 0, r)
    assert changed is not None
    return changed, old, op.at(source, r), new
