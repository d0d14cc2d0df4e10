"""Walking sqlglot syntax trees without recursion (generated SQL nests thousands deep)."""

from __future__ import annotations

from collections.abc import Iterator

from sqlglot import exp


def outside_queries(node: exp.Expr) -> Iterator[exp.Expr]:
    """``node`` and its descendants in pre-order, not looking into subqueries below it."""
    for sub in node.walk(bfs=False, prune=lambda n: isinstance(n, exp.Query) and n is not node):
        if not (isinstance(sub, exp.Query) and sub is not node):
            yield sub


def chain(node: exp.Expr, kind: type[exp.Expr]) -> list[exp.Expr]:
    """The operands, left to right, of the chain of binary ``kind`` nodes (AND, OR) that
    ``node`` heads, looking through parentheses; ``[node]`` when it is no ``kind``."""
    operands, stack = [], [node]
    while stack:
        top = stack.pop()
        inner = top
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if type(inner) is kind:
            stack.extend((inner.expression, inner.this))
        else:
            operands.append(top)
    return operands
