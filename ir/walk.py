"""Bottom-up rewriting of relational plans, shared by the planner's transforms and the
decorrelation (``ir.decorrelate``)."""

from __future__ import annotations

from collections.abc import Callable

from matview.ir.relation import Relation, inputs_of, with_inputs


def bottom_up(plan: Relation, rule: Callable[[Relation], Relation]) -> Relation:
    """Rewrite the inputs of ``plan`` first, then ``plan`` itself, with ``rule``."""
    children = inputs_of(plan)
    if children:
        plan = with_inputs(plan, [bottom_up(child, rule) for child in children])
    return rule(plan)
