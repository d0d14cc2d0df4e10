"""Turn equality filters over a join into join equivalences.

    Linear(Join(I, E), [Filter(P ∧ a = b), S..])  =>  Linear(Join(I, E ⊕ {a, b}), [Filter(P), S..])

when ``a`` and ``b`` read columns of different inputs. ``⊕`` merges equivalence classes that
share a member. SQL ``=`` never matches NULL, and neither does a join equivalence, so the
rewrite keeps the semantics.
"""

from __future__ import annotations

from dataclasses import replace

from matview.ir.relation import Filter, Join, Linear, Relation
from matview.ir.scalar import Call, Scalar, columns_used, conjuncts
from matview.planner.walk import bottom_up


def merge_classes(classes: list[tuple[Scalar, ...]]) -> tuple[tuple[Scalar, ...], ...]:
    """Union equivalence classes that share a member; members stay in first-seen order."""
    merged: list[list[Scalar]] = []
    for cls in classes:
        hits = [m for m in merged if any(x in m for x in cls)]
        target: list[Scalar] = []
        for group in hits:
            target.extend(x for x in group if x not in target)
            merged.remove(group)
        target.extend(x for x in cls if x not in target)
        merged.append(target)
    return tuple(tuple(m) for m in merged)


def _is_cross_input_equality(join: Join, pred: Scalar) -> bool:
    if not (isinstance(pred, Call) and pred.func == "eq"):
        return False
    sides = [{join.input_of(c) for c in columns_used(arg)} for arg in pred.args]
    return all(len(s) == 1 for s in sides) and sides[0] != sides[1]


def _extract(plan: Relation) -> Relation:
    if not (isinstance(plan, Linear) and isinstance(plan.input, Join) and plan.steps
            and isinstance(plan.steps[0], Filter)):
        return plan
    join, first = plan.input, plan.steps[0]
    predicates = [c for p in first.predicates for c in conjuncts(p)]
    equalities = [p for p in predicates if _is_cross_input_equality(join, p)]
    if not equalities:
        return plan
    rest = tuple(p for p in predicates if p not in equalities)
    classes = list(join.equivalences) + [tuple(p.args) for p in equalities]  # type: ignore[attr-defined]
    new_join = replace(join, equivalences=merge_classes(classes))
    steps = ((Filter(rest),) if rest else ()) + plan.steps[1:]
    return Linear(new_join, steps)


def join_equivalences(plan: Relation) -> Relation:
    return bottom_up(plan, _extract)
