"""Flatten nested joins into one n-ary join.

    Join([.., Join([B1..Bk], E2, P2), ..], E1, P1)
        =>  Join([.., B1..Bk, ..], E1 ∪ shift(E2), P1 ∪ shift(P2))

The concatenated row of the inner join sits at the same positions in the outer row, so
the outer equivalences and predicates are unchanged and the inner ones shift by the inner
join's offset. The outer join's plan, which numbers its old inputs, is dropped.
"""

from __future__ import annotations

from matview.ir.relation import Join, Relation
from matview.ir.scalar import remap
from matview.ir.walk import bottom_up


def _flatten(plan: Relation) -> Relation:
    if not isinstance(plan, Join) or not any(isinstance(i, Join) for i in plan.inputs):
        return plan
    inputs: list[Relation] = []
    equivalences = list(plan.equivalences)
    predicates = list(plan.predicates)
    for offset, child in zip(plan.offsets(), plan.inputs):
        if isinstance(child, Join):
            inputs.extend(child.inputs)
            equivalences.extend(
                tuple(remap(e, lambda i, o=offset: i + o) for e in cls)
                for cls in child.equivalences)
            predicates.extend(remap(p, lambda i, o=offset: i + o) for p in child.predicates)
        else:
            inputs.append(child)
    return Join(tuple(inputs), tuple(equivalences), predicates=tuple(predicates))


def flatten_joins(plan: Relation) -> Relation:
    """Every join of joins made one multiway join, with all of their predicates."""
    return bottom_up(plan, _flatten)
