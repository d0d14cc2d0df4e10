"""Choose how each join runs: a delta query with one lookup order per input.

    Join(I, E)  =>  Join(I, E, delta[order_0, .., order_n-1])

Path i starts at input i and repeatedly looks up the lowest-numbered input that shares an
equivalence class with the inputs bound so far (so every lookup is keyed), falling back to a
cross product only when no input is connected. When other connected inputs share with that
one an equivalence class none of the bound inputs reads (the next attribute: a cycle in the
join graph, as in a triangle), they are looked up together as one group, worst-case
optimally (seed 003): per path row, the input with the fewest matches proposes the
attribute and the others validate it (``physical.Extension``), so no row is proposed that
a binary order would have to build and then drop. The rule is the cost estimate: the
counts choose, per row, the order a binary plan would have had to fix for every row.
Choosing the plan does not change the join's meaning.
"""

from __future__ import annotations

from dataclasses import replace

from matview.ir.joins import JoinPlan, PathStep
from matview.ir.relation import Join, Relation
from matview.ir.scalar import columns_used
from matview.ir.walk import bottom_up


def _order(join: Join, start: int) -> tuple[PathStep, ...]:
    classes = [{join.input_of(c) for m in cls for c in columns_used(m)}
               for cls in join.equivalences]
    bound, order = {start}, []
    remaining = [j for j in range(len(join.inputs)) if j != start]
    while remaining:
        connected = [j for j in remaining if any(j in cls and cls & bound for cls in classes)]
        nxt = connected[0] if connected else remaining[0]
        group = [nxt, *[j for j in connected[1:]
                        if any({nxt, j} <= cls and not cls & bound for cls in classes)]]
        order.append(nxt if len(group) == 1 else tuple(group))
        bound.update(group)
        remaining = [j for j in remaining if j not in group]
    return tuple(order)


def _plan(plan: Relation) -> Relation:
    if not isinstance(plan, Join):
        return plan
    orders = tuple(_order(plan, i) for i in range(len(plan.inputs)))
    return replace(plan, plan=JoinPlan("delta", orders))


def join_plan(plan: Relation) -> Relation:
    """Every join given a delta plan: per input, an order of lookups into the others (some
    of them in groups extending the path by counts)."""
    return bottom_up(plan, _plan)
