"""Walks of plans: bottom-up rewriting of relational plans, shared by the planner's
transforms and the decorrelation (``ir.decorrelate``), and the post-order of a plan's
distinct nodes, shared by the lowering, the physical plan and the runtime's operators."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from matview.ir.relation import Relation, inputs_of, with_inputs

N = TypeVar("N")


def bottom_up(plan: Relation, rule: Callable[[Relation], Relation]) -> Relation:
    """Rewrite the inputs of ``plan`` first, then ``plan`` itself, with ``rule``."""
    children = inputs_of(plan)
    if children:
        plan = with_inputs(plan, [bottom_up(child, rule) for child in children])
    return rule(plan)


def post_order(root: N, children: Callable[[N], Iterable[N]],
               key: Callable[[N], Hashable] = id) -> list[N]:
    """Every node reachable from ``root`` once, inputs before their consumers (each where the
    walk first reaches it); nodes of equal ``key`` are one node (``id``: the same object)."""
    seen: set[Hashable] = set()
    order: list[N] = []

    def visit(node: N) -> None:
        if key(node) not in seen:
            seen.add(key(node))
            for child in children(node):
                visit(child)
            order.append(node)

    visit(root)
    return order
