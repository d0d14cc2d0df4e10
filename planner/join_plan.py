"""Choose how each join runs: a delta query with one lookup order per input.

    Join(I, E)  =>  Join(I, E, delta[order_0, .., order_n-1])

Path i starts at input i and repeatedly looks up the lowest-numbered input that shares an
equivalence class with the inputs bound so far (so every lookup is keyed), falling back to a
cross product only when no input is connected. Choosing the plan does not change the
join's meaning.
"""

from __future__ import annotations

from dataclasses import replace

from matview.ir.joins import JoinPlan
from matview.ir.relation import Join, Relation
from matview.ir.scalar import columns_used
from matview.ir.walk import bottom_up


def _order(join: Join, start: int) -> tuple[int, ...]:
    classes = [{join.input_of(c) for m in cls for c in columns_used(m)}
               for cls in join.equivalences]
    bound, order = {start}, []
    remaining = [j for j in range(len(join.inputs)) if j != start]
    while remaining:
        connected = [j for j in remaining if any(j in cls and cls & bound for cls in classes)]
        nxt = connected[0] if connected else remaining[0]
        order.append(nxt)
        bound.add(nxt)
        remaining.remove(nxt)
    return tuple(order)


def _plan(plan: Relation) -> Relation:
    if not isinstance(plan, Join):
        return plan
    orders = tuple(_order(plan, i) for i in range(len(plan.inputs)))
    return replace(plan, plan=JoinPlan("delta", orders))


def join_plan(plan: Relation) -> Relation:
    """Every join given a delta plan: per input, an order of lookups into the others."""
    return bottom_up(plan, _plan)
