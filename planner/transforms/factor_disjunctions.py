"""Pull the conjuncts that every branch of an OR shares out of it.

    (c1 AND .. AND ck AND r1) OR .. OR (c1 AND .. AND ck AND rn)
        =>  c1, .., ck, (r1 OR .. OR rn)        (the OR dropped when some ri is empty: TRUE)

in a Filter step's predicates and a Join's predicates. AND distributes over OR in SQL's
three-valued logic as in two-valued logic, so the filter keeps the same rows; the shared
conjuncts then stand alone, where later transforms can use them: an equality between two
join inputs becomes a join key (TPC-H Q19's ``p_partkey = l_partkey`` repeated in each
branch) instead of leaving a cross product filtered afterwards.
"""

from __future__ import annotations

from dataclasses import replace

from matview.ir.relation import Join, Linear, Relation
from matview.ir.scalar import Call, Scalar, balanced, conjoin, conjuncts
from matview.ir.steps import Filter, Step
from matview.ir.walk import bottom_up


def _disjuncts(expr: Scalar) -> list[Scalar]:
    """The operands of a chain of ORs (``[expr]`` when it is no OR)."""
    if isinstance(expr, Call) and expr.func == "or":
        return [d for arg in expr.args for d in _disjuncts(arg)]
    return [expr]


def _factored(pred: Scalar) -> list[Scalar]:
    branches = [conjuncts(d) for d in _disjuncts(pred)]
    if len(branches) < 2:
        return [pred]
    shared = [c for c in dict.fromkeys(branches[0]) if all(c in b for b in branches[1:])]
    if not shared:
        return [pred]
    rests = [[c for c in b if c not in shared] for b in branches]
    if any(not rest for rest in rests):
        return shared
    return [*shared, balanced("or", [conjoin(rest) for rest in rests])]


def _predicates(preds: tuple[Scalar, ...]) -> tuple[Scalar, ...]:
    return tuple(dict.fromkeys(c for p in preds for c in _factored(p)))


def _step(step: Step) -> Step:
    return Filter(_predicates(step.predicates)) if isinstance(step, Filter) else step


def _factor(plan: Relation) -> Relation:
    if isinstance(plan, Linear):
        return replace(plan, steps=tuple(_step(s) for s in plan.steps))
    if isinstance(plan, Join) and plan.predicates:
        return replace(plan, predicates=_predicates(plan.predicates))
    return plan


def factor_disjunctions(plan: Relation) -> Relation:
    """Every OR predicate with conjuncts common to all its branches factored."""
    return bottom_up(plan, _factor)
