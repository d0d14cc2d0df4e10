"""Top-level ``[NOT] EXISTS`` and ``IN`` conjuncts of a filter as semi- and anti-joins.

For a Linear ``σ_{p ∧ q}(R)`` whose conjunct ``p`` is a subquery test (its plan ``S``
holding no further subquery once this transform has run on it), with ``A = apply(D, S)``
the rows ``d ++ s`` of ``domain``:

    σ_{EXISTS S ∧ q}(R)        =  σ_q(π_R(R ⋈_{c = d} δ_d(A)))                  (semi-join)
    σ_{NOT EXISTS S ∧ q}(R)    =  σ_q(R ⊎ −π_R(R ⋈_{c = d} δ_d(A)))             (anti-join)
    σ_{x IN S ∧ q}(R)          =  σ_q(π_R(R ⋈_{c = d, x = s} δ_{d, s}(A)))

``δ`` (a ``Reduce`` without aggregates) makes each key once, so each copy of a row of ``R``
matches once; ``−`` is ``Repeat(-1)``, as in ``ir.outer_joins``. A NULL ``x`` or ``s``
matches nothing, which is what a filter makes of ``x IN S`` when it is NULL. The other
conjuncts without subqueries are applied to ``R`` first. ``NOT IN`` (NULL when ``S`` holds
a NULL) and tests elsewhere are left to ``subquery_values``.
"""

from __future__ import annotations

from matview.ir.decorrelate.domain import decorrelated
from matview.ir.decorrelate.values import semi_join
from matview.ir.plans import linear
from matview.ir.relation import Linear, Relation, Union
from matview.ir.scalar import (
    Call,
    Exists,
    InSubquery,
    Lit,
    Scalar,
    ScalarSubquery,
    conjuncts,
    transform,
)
from matview.ir.steps import Filter, Repeat
from matview.ir.subquery import has_subquery, map_own_scalars, subqueries, with_rel
from matview.ir.types import INT
from matview.ir.walk import bottom_up


def semi_joins(plan: Relation) -> Relation:
    """``plan`` with its top-level subquery tests as semi- and anti-joins (and those of the
    subqueries' own plans)."""
    return bottom_up(plan, _rule)


def _rule(rel: Relation) -> Relation:
    rel = map_own_scalars(rel, lambda e: transform(e, _inside))
    if not isinstance(rel, Linear):
        return rel
    for k, step in enumerate(rel.steps):
        if not isinstance(step, Filter):
            continue
        preds = [c for p in step.predicates for c in conjuncts(p)]
        at = next((i for i, p in enumerate(preds) if _test(p) is not None), None)
        if at is None:
            continue
        test = preds[at]
        plain = [p for p in preds if next(subqueries(p), None) is None]
        others = [p for i, p in enumerate(preds)
                  if i != at and next(subqueries(p), None) is not None]
        outer = linear(rel.input, [*rel.steps[:k], *([Filter(tuple(plain))] if plain else [])])
        joined = _joined(outer, test)
        rest = [Filter(tuple(others))] if others else []
        return _rule(linear(joined, [*rest, *rel.steps[k + 1:]]))
    return rel


def _inside(node: Scalar) -> Scalar:
    """A subquery with this transform applied to its plan."""
    if isinstance(node, (Exists, InSubquery, ScalarSubquery)):
        return with_rel(node, semi_joins(node.rel))
    return node


def _test(pred: Scalar) -> tuple[Exists | InSubquery, bool] | None:
    """``(test, negated)`` when ``pred`` is ``EXISTS``, ``NOT EXISTS`` or ``x IN`` over a plan
    without subqueries (and ``x`` without any)."""
    negated = isinstance(pred, Call) and pred.func == "not"
    inner = pred.args[0] if isinstance(pred, Call) and negated else pred
    if isinstance(inner, InSubquery) and (negated or next(subqueries(inner.expr), None)):
        return None
    if not isinstance(inner, (Exists, InSubquery)) or has_subquery(inner.rel):
        return None
    return inner, negated


def _joined(outer: Relation, pred: Scalar) -> Relation:
    """The rows of ``outer`` on which the subquery test ``pred`` holds."""
    found = _test(pred)
    assert found is not None
    test, negated = found
    applied = decorrelated(test.rel, outer)
    if isinstance(test, InSubquery):
        return semi_join(outer, applied, [(test.expr, 0)])
    semi = semi_join(outer, applied)
    if not negated:
        return semi
    return Union((outer, Linear(semi, (Repeat(Lit(-1, INT)),))))
