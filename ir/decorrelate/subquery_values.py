"""Every remaining subquery in an expression, computed from columns joined to the rows it is
evaluated on.

For a Linear step ``f`` (filter, map, ...) holding subqueries ``Q₁ ... Qₘ`` (each over a
plan ``S`` holding no subquery once this transform has run on it; an ``IN`` whose operand
holds a subquery waits for the next round), evaluated on the rows of ``R`` (the Linear's
input and the steps before ``f``), with ``A = apply(D, S)`` (``domain``, ``D`` taken from
``R``) and ``⟕`` the LEFT JOIN of ``ir.outer_joins``:

    Linear(R, [f(Q₁ ... Qₘ), g...])  =  Linear(R ++ X, [f(v₁ ... vₘ), project X away, g...])

where ``R ++ X`` appends to each row of ``R`` (each once) the columns ``X`` each ``Qᵢ``
needs, and ``vᵢ`` is the expression over them that is ``Qᵢ``'s value. It stays inside
``f``, so that it is evaluated where ``Qᵢ`` was (in the branch of a CASE it takes):

- ``EXISTS S``: ``R ⟕_{c = d} Map(δ_d(A); TRUE)``, ``v = coalesce(marker, FALSE)``;
- ``(S)``: ``R ⟕_{c = d} A`` (``S`` has at most one row per ``d``; ``⋈`` when exactly one),
  ``v`` its column; else the count of its rows too, ``v`` failing when it is above 1
  (``domain.scalar_value``);
- ``x IN S``: see ``domain.in_value`` (found, and the counts of rows and NULLs of ``S``).

Each Map is first split into one Map per expression, so that its outputs shift by ``X``
alone, and the conjuncts of a Filter without subqueries are applied first (they narrow the
domain: TPC-H Q17's ``p_partkey = l_partkey`` makes its correlated average a keyed join).
"""

from __future__ import annotations

from matview.ir.decorrelate.domain import decorrelated
from matview.ir.decorrelate.semi_joins import semi_joins
from matview.ir.decorrelate.values import exists_value, in_value, scalar_value
from matview.ir.plans import linear
from matview.ir.relation import Linear, Relation
from matview.ir.scalar import (
    Exists,
    InSubquery,
    Scalar,
    ScalarSubquery,
    conjuncts,
    transform,
)
from matview.ir.steps import Filter, Map, Project, Step, step_scalars, step_types
from matview.ir.subquery import map_own_scalars, map_step, own_scalars, subqueries, with_rel
from matview.ir.walk import bottom_up


def subquery_values(plan: Relation) -> Relation:
    """``plan`` without subqueries in expressions."""
    return bottom_up(plan, _rule)


def _rule(rel: Relation) -> Relation:
    if not any(next(subqueries(e), None) is not None for e in own_scalars(rel)):
        return rel
    if not isinstance(rel, Linear):
        raise TypeError(f"subqueries are decorrelated in Linear steps only, not in {rel!r}")
    rel = map_own_scalars(rel, lambda e: transform(e, _inside))
    steps = [part for step in rel.steps for part in _split(step)]
    for k, step in enumerate(steps):
        found = list(dict.fromkeys(q for e in step_scalars(step) for q in subqueries(e)
                                   if not isinstance(q, InSubquery)
                                   or next(subqueries(q.expr), None) is None))
        if not found:
            continue
        outer = linear(rel.input, steps[:k])
        extended, values = outer, dict[Scalar, Scalar]()
        for query in found:
            extended, values[query] = _value(outer, extended, query)
        replaced = map_step(step, lambda e, v=values: transform(e, lambda x: v.get(x, x)))
        n, added = outer.arity, extended.arity - outer.arity
        arity = len(step_types(replaced, extended.types))
        keep = Project((*range(n), *range(n + added, arity)))
        return _rule(Linear(extended, (replaced, keep, *steps[k + 1:])))
    return rel


def _inside(node: Scalar) -> Scalar:
    """A subquery whose plan is decorrelated."""
    if isinstance(node, (Exists, InSubquery, ScalarSubquery)):
        return with_rel(node, subquery_values(semi_joins(node.rel)))
    return node


def _split(step: Step) -> list[Step]:
    """``step``, a Map holding a subquery as one Map per expression, a Filter holding one as
    a Filter of its conjuncts without subqueries followed by one of the others (so that a
    subquery is evaluated only on the rows those keep: their keys are its domain)."""
    if isinstance(step, Map) and any(next(subqueries(e), None) for e in step.exprs):
        return [Map((e,)) for e in step.exprs]
    if isinstance(step, Filter):
        preds = [c for p in step.predicates for c in conjuncts(p)]
        plain = tuple(p for p in preds if next(subqueries(p), None) is None)
        if plain and len(plain) < len(preds):
            return [Filter(plain), Filter(tuple(p for p in preds if p not in plain))]
    return [step]


def _value(outer: Relation, extended: Relation, query: Exists | InSubquery | ScalarSubquery
           ) -> tuple[Relation, Scalar]:
    """``extended`` (``outer`` with columns appended, each row of ``outer`` once) extended
    with more columns, and the expression over its rows that is the value of ``query`` on
    each row of ``outer``; the domain is taken from ``outer``."""
    applied = decorrelated(query.rel, outer)
    if isinstance(query, Exists):
        return exists_value(extended, applied)
    if isinstance(query, ScalarSubquery):
        return scalar_value(extended, applied)
    return in_value(extended, applied, query.expr)
