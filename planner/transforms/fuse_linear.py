"""Fuse stacked linear operators.

    Linear(Linear(X, s1), s2)  =>  Linear(X, s1 ++ s2)
    Linear(X, [])              =>  X

Sound because ``join_function`` composes: the logic of the outer operator applied to each
output of the inner one is the concatenated step list (seed 000).
"""

from __future__ import annotations

from matview.ir.relation import Linear, Relation
from matview.ir.walk import bottom_up


def _fuse(plan: Relation) -> Relation:
    if isinstance(plan, Linear):
        if isinstance(plan.input, Linear):
            plan = Linear(plan.input.input, plan.input.steps + plan.steps)
        if not plan.steps:
            return plan.input
    return plan


def fuse_linear(plan: Relation) -> Relation:
    """Every chain of Linear operators fused into one."""
    return bottom_up(plan, _fuse)
