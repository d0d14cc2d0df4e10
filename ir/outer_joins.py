"""Outer joins lowered to operators the dataflow already maintains (the inner ``Join``,
``Reduce``, ``Union`` and ``Linear``), so their delta rules need nothing new.

With ``J = σ_p(L × R)``, the inner join on the ON condition ``p``:

    L ⟕_p R  =  J ⊎ pad_R(unmatched(L))
    L ⟖_p R  =  J ⊎ pad_L(unmatched(R))
    L ⟗_p R  =  J ⊎ pad_R(unmatched(L)) ⊎ pad_L(unmatched(R))

``pad_R(X)`` appends a NULL of each column type of ``R`` to every row of ``X``; ``pad_L``
puts NULLs for ``L``'s columns before it. ``unmatched(L)`` is the rows of ``L``, with their
multiplicity, that ``p`` matches with no row of ``R`` (``unmatched(R)`` is its mirror image).
It is built one of two ways.

Keyed, when every conjunct of ``p`` is an equality ``k_L = k_R`` of an expression of ``L``
and one of ``R``, or reads one side only (``p_L``, ``p_R``; a conjunct reading no column,
as ``ON FALSE``, counts as ``L``'s):

    unmatched(L)  =  L ⊎ −π_L(σ_{p_L}(L) ⋈_{k_L = k} δ_k(σ_{p_R}(R)))

``δ_k`` is a ``Reduce`` grouped by ``k_R`` without aggregates: each key of ``R`` once, so
the semi-join yields each copy of a row of ``L`` that has a match exactly once, and ``−`` is
``Repeat(-1)``. A NULL in ``k_L`` matches nothing (the join's ``=`` is SQL's), so such a row
stays unmatched. Without equalities ``δ`` groups by the constant TRUE: one row when
``σ_{p_R}(R)`` has any. State: one row per distinct key of ``R``.

General, for any other condition (``l.x < r.y``, OR, a predicate over both sides):

    unmatched(L)  =  π_L Repeat(n) σ_{m = 0} Reduce_{L's columns; n = count(*), m = count(b)}(
                         Map(L; b = NULL) ⊎ Map(π_L(J); b = 1))

GROUP BY puts NULLs together, so each row of ``L`` meets its own copies in ``π_L(J)``
whatever NULLs it holds: ``m`` counts its matches, and where there are none ``n`` counts
its copies in ``L``. State: one row per distinct row of ``L``.

A LEFT JOIN whose right side is a table function reading ``L`` (``LEFT JOIN LATERAL
unnest(l.arr) AS u ON ...``) has no ``R`` apart from ``L``: its ``J`` is ``σ_p`` of the
function's expansion of ``L``, and ``unmatched(L)`` takes the general form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from matview.ir.aggregate_call import Aggregate
from matview.ir.linear_logic import is_temporal
from matview.ir.plans import compute, linear
from matview.ir.relation import Join, Linear, Reduce, Relation, Union
from matview.ir.scalar import (
    TRUE,
    Call,
    Col,
    Lit,
    Outer,
    Scalar,
    columns_used,
    conjuncts,
    remap,
    transform,
)
from matview.ir.steps import Filter, Project, Repeat
from matview.ir.subquery import outer_columns, rewrite_outer, subqueries, with_rel
from matview.ir.types import BIGINT, INT, SqlType


@dataclass(frozen=True)
class _Keyed:
    """An ON condition split as ``k_L = k_R AND p_L AND p_R``: ``left_keys[i] =
    right_keys[i]`` for each ``i``, then the conjuncts reading one side only; each part over
    the columns of its own side."""

    left_keys: tuple[Scalar, ...]
    right_keys: tuple[Scalar, ...]
    left_filter: tuple[Scalar, ...]
    right_filter: tuple[Scalar, ...]

    def mirrored(self) -> _Keyed:
        return _Keyed(self.right_keys, self.left_keys, self.right_filter, self.left_filter)


def outer_join(side: str, left: Relation, right: Relation, on: Sequence[Scalar]) -> Relation:
    """``left`` ``side`` JOIN ``right`` ON the conjunction of ``on`` (predicates over the
    columns of ``left`` followed by those of ``right``; none: ON TRUE)."""
    pair = Join((left, right), ())
    keyed = _keyed(on, left.arity)
    parts = [linear(pair, [Filter(tuple(on))] if on else [])]
    if side in ("LEFT", "FULL"):
        unmatched = (_keyed_unmatched(left, right, keyed) if keyed is not None else
                     _general_unmatched(left, pair, on, range(left.arity)))
        parts.append(_padded(unmatched, (), right.types))
    if side in ("RIGHT", "FULL"):
        unmatched = (_keyed_unmatched(right, left, keyed.mirrored()) if keyed is not None else
                     _general_unmatched(right, pair, on, range(left.arity, pair.arity)))
        parts.append(_padded(unmatched, left.types, ()))
    return Union(tuple(parts))


def lateral_left_join(left: Relation, expanded: Relation, on: Sequence[Scalar]) -> Relation:
    """``left`` LEFT JOIN a table function of its rows ON ``on``: ``expanded`` is ``left``
    with the function's columns appended (each row once per row of the function)."""
    unmatched = _general_unmatched(left, expanded, on, range(left.arity))
    return Union((linear(expanded, [Filter(tuple(on))] if on else []),
                  _padded(unmatched, (), expanded.types[left.arity:])))


def _keyed(on: Sequence[Scalar], arity: int) -> _Keyed | None:
    """``on`` split into keys and one-side filters (see ``_Keyed``), the left side being the
    first ``arity`` columns; None when a conjunct is none of those."""
    left_keys: list[Scalar] = []
    right_keys: list[Scalar] = []
    left_filter: list[Scalar] = []
    right_filter: list[Scalar] = []
    for pred in (c for p in on for c in conjuncts(p)):
        sides = sides_read(pred, arity)
        pair = key_pair(pred, arity)
        if pair is not None:
            left_keys.append(pair[0])
            right_keys.append(right_side(pair[1], arity))
        elif sides <= {0}:
            left_filter.append(pred)
        elif sides == {1}:
            right_filter.append(right_side(pred, arity))
        else:
            return None
    return _Keyed(tuple(left_keys), tuple(right_keys), tuple(left_filter), tuple(right_filter))


def sides_read(expr: Scalar, arity: int) -> set[int]:
    """The sides ``expr`` reads: 0 for the left (columns below ``arity``), 1 for the right;
    its subqueries read the columns their correlated references name."""
    read = [*columns_used(expr), *(c for s in subqueries(expr) for c in outer_columns(s.rel))]
    return {int(c >= arity) for c in read}


def key_pair(pred: Scalar, arity: int) -> tuple[Scalar, Scalar] | None:
    """``(k_L, k_R)`` when ``pred`` is ``k_L = k_R`` (either way round) with each operand
    reading its own side only."""
    if not (isinstance(pred, Call) and pred.func == "eq") or is_temporal(pred):
        return None
    first, second = pred.args
    sides = (sides_read(first, arity), sides_read(second, arity))
    if sides == ({0}, {1}):
        return first, second
    if sides == ({1}, {0}):
        return second, first
    return None


def right_side(expr: Scalar, arity: int) -> Scalar:
    """``expr`` over the concatenated row, rewritten over the right side's own columns (also
    its subqueries' correlated references to that row)."""
    def shifted(ref: Outer, depth: int) -> Scalar:
        return replace(ref, index=ref.index - arity) if ref.level == depth + 1 else ref

    def node(n: Scalar) -> Scalar:
        if n in found:
            return with_rel(n, rewrite_outer(n.rel, shifted))  # type: ignore[arg-type]
        return n

    found = list(subqueries(expr))
    return remap(transform(expr, node) if found else expr, lambda c: c - arity)


def _keyed_unmatched(keep: Relation, other: Relation, keyed: _Keyed) -> Relation:
    """The rows of ``keep`` (the left side of ``keyed``) that match no row of ``other``:
    ``keep ⊎ −π_keep(σ(keep) ⋈ δ_k(σ(other)))``."""
    arity = keep.arity
    distinct = Reduce(linear(other, [Filter(keyed.right_filter)] if keyed.right_filter else []),
                      keyed.right_keys or (TRUE,), ())
    semi = Join((linear(keep, [Filter(keyed.left_filter)] if keyed.left_filter else []),
                 distinct),
                tuple((key, Col(arity + i)) for i, key in enumerate(keyed.left_keys)))
    return Union((keep, Linear(semi, (Project(tuple(range(arity))), Repeat(Lit(-1, INT))))))


def _general_unmatched(keep: Relation, source: Relation, on: Sequence[Scalar],
                       columns: Sequence[int]) -> Relation:
    """The rows of ``keep`` that match nothing, given that ``columns`` of ``σ_on(source)``
    are the rows of ``keep`` once per match: each distinct row's rows ``n`` and matches ``m``
    counted, those with ``m = 0`` (so ``n`` copies in ``keep``) repeated ``n`` times."""
    arity = keep.arity
    own = compute(keep, [*(Col(i) for i in range(arity)), Lit(None, INT)])
    matches = compute(source, [*(Col(c) for c in columns), Lit(1, INT)], on)
    counted = Reduce(Union((own, matches)), tuple(Col(i) for i in range(arity)),
                     (Aggregate("count", None), Aggregate("count", Col(arity))))
    return Linear(counted, (Filter((Call("eq", (Col(arity + 1), Lit(0, BIGINT))),)),
                            Repeat(Col(arity)), Project(tuple(range(arity)))))


def _padded(rel: Relation, before: Sequence[SqlType], after: Sequence[SqlType]) -> Relation:
    """The rows of ``rel`` with a NULL of each of the types ``before`` put before them and
    one of each of ``after`` after them."""
    nulls = [Lit(None, t) for t in before], [Lit(None, t) for t in after]
    return compute(rel, [*nulls[0], *(Col(i) for i in range(rel.arity)), *nulls[1]])
