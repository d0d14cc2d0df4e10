"""A join inside a recursive query's loop (``runtime.recursion.let_rec``), round by round.

An n-ary join is a chain of binary ones, each prefix stored (``state.Prefix``). Round r of
the binary join of a prefix with the next input is every pair of differences with at least
one new time and ``max(r_left, r_right) = r``, at time ``max(t_left, t_right)``: four kinds
of pairs, each the new differences of one side joined with the other side's, whose
committed ones are cut from the driver's batches by the key values of the new ones
(``reads.column_values``) when the join's equalities pair a bare column of each side. The
sources of each side's rows are kept (``LetRecOp.sides``): the values a column of the join's
round may hold are known from them before its plan runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from matview.ir.scalar import Call, Col, Scalar, columns_used, conjoin
from matview.runtime.arrangements.updates import DIFF, TIME, lookup, union_all
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col, column_names
from matview.runtime.recursion.reads import between, column_values, committed, new_between
from matview.runtime.recursion.state import Node, Prefix, Source
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


def join_round(op: LetRecOp, link: Prefix, r: int) -> DataFrame | None:
    """Round ``r`` of the binary join of ``link``'s first inputs but one with its last:
    the pairs with a new time and ``max(r_left, r_right) = r``."""
    join = link.join
    left: Node = join.inputs[0] if link.inputs == 2 else Prefix(join, link.inputs - 1)
    right = join.inputs[link.inputs - 1]
    if link.inputs == 1:
        df = op.at(left, r)
        return None if df is None else op.planned(
            ("where", link), (df,), lambda: df.where(_condition(op, link)))
    keys = _key_columns(link)
    width = len(link.types) - right.arity

    def cut(by: Node, lo: int, hi: int, side: int) -> tuple[int, pa.Array] | None:
        """The key values of ``by``'s new differences of rounds ``lo..hi``, to read
        the other side's (column ``keys[side]``) by."""
        if keys is None:
            return None
        values = column_values(op, by, lo, hi, keys[1 - side] - (width if side == 0 else 0))
        return None if values is None else (keys[side] - (width if side == 1 else 0),
                                             values)

    # each pair: the new side (node, rounds), the other side (node, rounds, whether its
    # committed differences are read too), whether the new side is the left one
    pairs = [
        ((left, r, r), (right, 0, r, True), True),
        ((right, 0, r), (left, r, r, False), False),
        ((right, r, r), (left, 0, r - 1, True), False),
        ((left, 0, r - 1), (right, r, r, False), True),
    ]
    sides: tuple[list[Source], list[Source]] = ([], [])
    op.sides[(link, r)] = sides
    frames = []
    for (new, lo, hi), (other, olo, ohi, both), new_left in pairs:
        changed = new_between(op, new, lo, hi)
        if changed is None:
            continue
        side = 1 if new_left else 0
        key = cut(new, lo, hi, side)
        cuts: list[pa.Table | None] = []
        found = (between(op, other, olo, ohi, key=key, cuts=cuts) if both else
                 committed(op, other, olo, ohi, key=key, cuts=cuts))
        if found is None:
            continue
        sides[1 - side].append((new, lo, hi))
        sides[side].extend([(other, olo, ohi)] if both else [])
        sides[side].extend(cuts)
        lhs, rhs = (changed, found) if new_left else (found, changed)
        frames.append(op.planned(("pairs", link, len(frames)), (lhs, rhs),
                                 lambda lhs=lhs, rhs=rhs: _pairs(op, link, lhs, rhs)))
    return op.planned(("join", link), tuple(frames), lambda: union_all(frames))


def _pairs(op: LetRecOp, link: Prefix, lhs: DataFrame, rhs: DataFrame) -> DataFrame:
    """The joined rows of differences ``lhs`` and ``rhs`` under ``link``'s conditions,
    at the later of their times with the product of their diffs."""
    arity = len(link.types)
    width = arity - link.join.inputs[link.inputs - 1].arity
    right = rhs.select(*[col(f"c{i}").alias(f"c{width + i}") for i in range(arity - width)],
                       col(TIME).alias("_t2"), col(DIFF).alias("_d2"))
    joined = lookup(lhs, right, _condition(op, link), "inner",
                    op.step.small and not op.step.first)
    return joined.select(*column_names(arity), F.greatest(col(TIME), col("_t2")).alias(TIME),
                         (col(DIFF) * col("_d2")).alias(DIFF))


def _condition(op: LetRecOp, link: Prefix) -> Column:
    """The join's equalities and predicates over its first ``link.inputs`` inputs, compiled
    at the first step that asks for them (``_compiled_condition``)."""
    return op.built(("condition", link), lambda: _compiled_condition(link))


def _compiled_condition(link: Prefix) -> Column:
    """The join's equalities and predicates over its first ``link.inputs`` inputs."""
    join = link.join
    arity = len(link.types)
    columns = [col(c) for c in column_names(arity)]
    within = [e for cls in join.equivalences for e in _equalities(cls, arity)]
    within += [p for p in join.predicates if all(c < arity for c in columns_used(p))]
    if not within:
        return F.lit(True)
    return compile_scalar(conjoin(within), columns, list(join.types[:arity]))


def _key_columns(link: Prefix) -> tuple[int, int] | None:
    """A column of ``link``'s first inputs but one and a column of its last input that the
    join's equalities make equal (None when no such pair of bare columns exists)."""
    arity = len(link.types)
    width = arity - link.join.inputs[link.inputs - 1].arity
    for cls in link.join.equivalences:
        lefts = [e.index for e in cls if isinstance(e, Col) and e.index < width]
        rights = [e.index for e in cls if isinstance(e, Col) and width <= e.index < arity]
        if lefts and rights:
            return lefts[0], rights[0]
    return None


def _equalities(cls: tuple[Scalar, ...], arity: int) -> Iterator[Scalar]:
    """The equalities of equivalence class ``cls`` between members that read only the
    first ``arity`` columns."""
    members = [e for e in cls if all(c < arity for c in columns_used(e))]
    for a, b in zip(members, members[1:]):
        yield Call("eq", (a, b))
