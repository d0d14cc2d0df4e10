"""Push filters below joins and unions.

    Linear(Join(I1..In, E), [Filter(P ∧ p), S..])
        =>  Linear(Join(I1..Linear(Ik, [Filter(p')])..In, E), [Filter(P), S..])

when ``p`` reads only columns of input ``k`` (``p'`` is ``p`` with those columns renumbered
from the input's offset), and

    Linear(Union(I1..In), [Filter(P), S..])  =>  Linear(Union(Linear(Ii, [Filter(P)])..), S..)

Filters are linear, so filtering each input before the join or union equals filtering after.
Predicates that read no column stay where they are.
"""

from __future__ import annotations

from dataclasses import replace

from matview.ir.relation import Filter, Join, Linear, Relation, Union
from matview.ir.scalar import Scalar, columns_used, conjuncts, remap
from matview.planner.walk import bottom_up


def _split(filter_step: Filter) -> list[Scalar]:
    return [c for p in filter_step.predicates for c in conjuncts(p)]


def _filtered(plan: Relation, preds: list[Scalar]) -> Relation:
    return Linear(plan, (Filter(tuple(preds)),)) if preds else plan


def _push(plan: Relation) -> Relation:
    if not (isinstance(plan, Linear) and plan.steps and isinstance(plan.steps[0], Filter)):
        return plan
    preds, rest = _split(plan.steps[0]), plan.steps[1:]
    target = plan.input
    if isinstance(target, Union):
        inputs = tuple(_filtered(i, preds) for i in target.inputs)
        return Linear(Union(inputs), rest)
    if not isinstance(target, Join):
        return plan
    offsets = target.offsets()
    pushed: list[list[Scalar]] = [[] for _ in target.inputs]
    kept: list[Scalar] = []
    for pred in preds:
        owners = {target.input_of(c) for c in columns_used(pred)}
        if len(owners) == 1:
            k = owners.pop()
            pushed[k].append(remap(pred, lambda i, o=offsets[k]: i - o))
        else:
            kept.append(pred)
    if not any(pushed):
        return plan
    inputs = tuple(_filtered(i, p) for i, p in zip(target.inputs, pushed))
    steps = ((Filter(tuple(kept)),) if kept else ()) + rest
    return Linear(replace(target, inputs=inputs), steps)


def predicate_pushdown(plan: Relation) -> Relation:
    return bottom_up(plan, _push)
