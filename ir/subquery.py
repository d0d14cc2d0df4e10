"""Plans holding subqueries in expressions (``scalar.Exists``, ``InSubquery``,
``ScalarSubquery``) and correlated references (``scalar.Outer``): the scalars of an operator,
rewriting them, and rewriting the ``Outer`` references of a subquery's plan.

Only RAW plans hold these nodes; ``ir.decorrelate`` removes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from matview.ir.relation import Join, Linear, Reduce, Relation, inputs_of, with_inputs
from matview.ir.scalar import (
    Call,
    Exists,
    InSubquery,
    Outer,
    Scalar,
    ScalarSubquery,
    Subquery,
    children,
    transform,
)
from matview.ir.steps import Filter, FlatMap, Map, Repeat, Step, step_scalars


def own_scalars(rel: Relation) -> tuple[Scalar, ...]:
    """The scalar expressions of ``rel``'s own operator (not of its inputs)."""
    if isinstance(rel, Linear):
        return tuple(e for step in rel.steps for e in step_scalars(step))
    if isinstance(rel, Join):
        return tuple(e for cls in rel.equivalences for e in cls) + rel.predicates
    if isinstance(rel, Reduce):
        return rel.group_key + tuple(e for a in rel.aggregates for e in a.scalars())
    return ()


def map_step(step: Step, fn: Callable[[Scalar], Scalar]) -> Step:
    """``step`` with each of its scalars ``e`` replaced by ``fn(e)``."""
    if isinstance(step, Map):
        return Map(tuple(fn(e) for e in step.exprs))
    if isinstance(step, Filter):
        return Filter(tuple(fn(e) for e in step.predicates))
    if isinstance(step, FlatMap):
        calls = tuple(fn(c) for c in step.calls)
        assert all(isinstance(c, Call) for c in calls)
        return replace(step, calls=tuple(c for c in calls if isinstance(c, Call)))
    if isinstance(step, Repeat):
        return Repeat(fn(step.count))
    return step


def map_own_scalars(rel: Relation, fn: Callable[[Scalar], Scalar]) -> Relation:
    """``rel`` with each scalar ``e`` of its own operator replaced by ``fn(e)``."""
    if isinstance(rel, Linear):
        return Linear(rel.input, tuple(map_step(s, fn) for s in rel.steps))
    if isinstance(rel, Join):
        return replace(rel, equivalences=tuple(tuple(fn(e) for e in c) for c in rel.equivalences),
                       predicates=tuple(fn(e) for e in rel.predicates))
    if isinstance(rel, Reduce):
        return Reduce(rel.input, tuple(fn(e) for e in rel.group_key),
                      tuple(a.mapped(fn) for a in rel.aggregates))
    return rel


def subqueries(expr: Scalar) -> Iterator[Subquery]:
    """The subquery nodes in ``expr`` (not those inside their plans), innermost first."""
    for child in children(expr):
        yield from subqueries(child)
    if isinstance(expr, (Exists, InSubquery, ScalarSubquery)):
        yield expr


def has_subquery(rel: Relation) -> bool:
    """Whether any operator of ``rel`` holds a subquery in an expression."""
    return any(next(subqueries(e), None) is not None for e in own_scalars(rel)) or any(
        has_subquery(child) for child in inputs_of(rel))


def with_rel(node: Subquery, rel: Relation) -> Subquery:
    """The subquery ``node`` over the plan ``rel``."""
    return replace(node, rel=rel)


def rewrite_outer(rel: Relation, fn: Callable[[Outer, int], Scalar], depth: int = 0) -> Relation:
    """``rel`` with every ``Outer`` reference ``o`` replaced by ``fn(o, d)``, ``d`` the number
    of subquery boundaries between ``rel``'s operators and the reference (0 when an operator
    of ``rel`` holds it, 1 inside a subquery of such an operator...)."""

    def scalar(expr: Scalar) -> Scalar:
        def node(n: Scalar) -> Scalar:
            if isinstance(n, Outer):
                return fn(n, depth)
            if isinstance(n, (Exists, InSubquery, ScalarSubquery)):
                return with_rel(n, rewrite_outer(n.rel, fn, depth + 1))
            return n

        return transform(expr, node)

    inputs = [rewrite_outer(child, fn, depth) for child in inputs_of(rel)]
    return map_own_scalars(with_inputs(rel, inputs) if inputs else rel, scalar)


def outer_columns(rel: Relation) -> list[int]:
    """The columns of the row a subquery with plan ``rel`` is evaluated on that it reads
    (its level-1 references, at any depth), in increasing order."""
    found: set[int] = set()

    def note(ref: Outer, depth: int) -> Scalar:
        if ref.level == depth + 1:
            found.add(ref.index)
        return ref

    rewrite_outer(rel, note)
    return sorted(found)


def enter(rel: Relation, bind: Callable[[Outer], Scalar]) -> Relation:
    """The plan of a subquery moved into the operator that evaluates it: each reference to
    that operator's row becomes ``bind(ref)``, and references further out lose a level."""

    def step_in(ref: Outer, depth: int) -> Scalar:
        if ref.level == depth + 1:
            return bind(ref)
        return Outer(ref.level - 1, ref.index, ref.type) if ref.level > depth + 1 else ref

    return rewrite_outer(rel, step_in)
