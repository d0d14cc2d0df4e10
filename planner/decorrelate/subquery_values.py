"""Every remaining subquery in an expression, computed as a column joined to the rows it is
evaluated on.

For a Linear step ``f`` (filter, map, ...) holding a subquery ``Q`` (over a plan ``S``
holding no subquery once this transform has run on it, innermost first), evaluated on the
rows of ``R`` (the Linear's input and the steps before ``f``), with ``A = apply(D, S)``
(``domain``) and ``⟕`` the LEFT JOIN of ``sql.outer_joins``:

    Linear(R, [f(Q), g...])  =  Linear(R ++ v, [f(#n), project away #n, g...])

where ``n`` is ``R``'s arity and ``R ++ v`` appends ``Q``'s value ``v``:

- ``EXISTS S``: ``R ⟕_{c = d} Map(δ_d(A); TRUE)``, ``v = coalesce(marker, FALSE)``;
- ``(S)``: ``R ⟕_{c = d} A`` (``S`` has at most one row per ``d``), ``v`` its column;
- ``x IN S``: see ``domain.in_value`` (found, and the counts of rows and NULLs of ``S``).

Each Map is first split into one Map per expression, so that ``#n`` shifts nothing.
"""

from __future__ import annotations

from matview.ir.relation import (
    Linear,
    Map,
    Project,
    Relation,
    Step,
    step_scalars,
    step_types,
)
from matview.ir.scalar import Col, Exists, InSubquery, Scalar, ScalarSubquery, transform
from matview.ir.subquery import map_own_scalars, map_step, own_scalars, subqueries, with_rel
from matview.planner.decorrelate.domain import decorrelated, exists_value, in_value, scalar_value
from matview.planner.decorrelate.semi_joins import semi_joins
from matview.planner.walk import bottom_up
from matview.sql.plans import linear


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
        found = next((q for e in step_scalars(step) for q in subqueries(e)), None)
        if found is None:
            continue
        outer = linear(rel.input, steps[:k])
        n = outer.arity
        extended, value = _value(outer, found)
        with_value = Linear(extended, (Map((value,)), Project((*range(n), extended.arity))))
        replaced = map_step(step, lambda e, q=found, at=n: transform(
            e, lambda x: Col(at) if x == q else x))
        arity = len(step_types(replaced, with_value.types))
        keep = Project(tuple(i for i in range(arity) if i != n))
        return _rule(Linear(with_value, (replaced, keep, *steps[k + 1:])))
    return rel


def _inside(node: Scalar) -> Scalar:
    """A subquery whose plan is decorrelated."""
    if isinstance(node, (Exists, InSubquery, ScalarSubquery)):
        return with_rel(node, subquery_values(semi_joins(node.rel)))
    return node


def _split(step: Step) -> list[Step]:
    """``step``, a Map holding a subquery as one Map per expression."""
    if isinstance(step, Map) and any(next(subqueries(e), None) for e in step.exprs):
        return [Map((e,)) for e in step.exprs]
    return [step]


def _value(outer: Relation, query: Exists | InSubquery | ScalarSubquery
           ) -> tuple[Relation, Scalar]:
    """``outer`` extended with columns, and the expression over its rows that is the value
    of ``query`` on each row of ``outer``."""
    applied = decorrelated(query.rel, outer)
    if isinstance(query, Exists):
        return exists_value(outer, applied)
    if isinstance(query, ScalarSubquery):
        return scalar_value(outer, applied)
    return in_value(outer, applied, query.expr)
