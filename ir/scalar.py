"""Scalar expressions: matview's own small expression tree.

Expressions are evaluated against one input row; ``Col(i)`` is the row's i-th column. Types are
not stored in the tree except where they cannot be derived (literals, casts): ``type_of``
derives them from the input's column types and the function registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from matview.ir.types import BOOLEAN, NULLTYPE, SqlType, common_type


class Scalar:
    """Base class of scalar expressions."""


@dataclass(frozen=True)
class Col(Scalar):
    """The value of column ``index`` of the input row (printed ``#index``)."""

    index: int


@dataclass(frozen=True)
class Lit(Scalar):
    """A constant ``value`` of ``type``; ``None`` is SQL NULL."""

    value: object
    type: SqlType


@dataclass(frozen=True)
class Call(Scalar):
    """An application of the registered function ``func`` to ``args`` (see ``functions``)."""

    func: str
    args: tuple[Scalar, ...]


@dataclass(frozen=True)
class Case(Scalar):
    """``CASE WHEN c1 THEN v1 ... ELSE default END``: the first ``v`` whose ``c`` is TRUE."""

    whens: tuple[tuple[Scalar, Scalar], ...]
    default: Scalar


@dataclass(frozen=True)
class Cast(Scalar):
    """``CAST(expr AS to)``: converts, raising on values that do not fit (as PostgreSQL)."""

    expr: Scalar
    to: SqlType


TRUE = Lit(True, BOOLEAN)
NULL = Lit(None, NULLTYPE)


def type_of(expr: Scalar, input_types: Sequence[SqlType]) -> SqlType:
    """The SQL type of ``expr`` over rows whose columns have ``input_types``."""
    from matview.ir.functions import lookup

    if isinstance(expr, Col):
        return input_types[expr.index]
    if isinstance(expr, Lit):
        return expr.type
    if isinstance(expr, Cast):
        return expr.to
    if isinstance(expr, Case):
        result = type_of(expr.default, input_types)
        for _, value in expr.whens:
            result = common_type(result, type_of(value, input_types))
        return result
    if isinstance(expr, Call):
        return lookup(expr.func).returns([type_of(a, input_types) for a in expr.args])
    raise TypeError(f"not a scalar expression: {expr!r}")


def children(expr: Scalar) -> tuple[Scalar, ...]:
    """The direct sub-expressions of ``expr``."""
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Case):
        return tuple(x for pair in expr.whens for x in pair) + (expr.default,)
    if isinstance(expr, Cast):
        return (expr.expr,)
    return ()


def columns_used(expr: Scalar) -> set[int]:
    """The column indexes ``expr`` reads."""
    if isinstance(expr, Col):
        return {expr.index}
    used: set[int] = set()
    for child in children(expr):
        used |= columns_used(child)
    return used


def transform(expr: Scalar, fn: Callable[[Scalar], Scalar]) -> Scalar:
    """Rebuild ``expr`` bottom-up, replacing every node ``n`` by ``fn(n)``."""
    if isinstance(expr, Call):
        expr = Call(expr.func, tuple(transform(a, fn) for a in expr.args))
    elif isinstance(expr, Case):
        expr = Case(tuple((transform(c, fn), transform(v, fn)) for c, v in expr.whens),
                    transform(expr.default, fn))
    elif isinstance(expr, Cast):
        expr = Cast(transform(expr.expr, fn), expr.to)
    return fn(expr)


def remap(expr: Scalar, mapping: Callable[[int], Scalar | int]) -> Scalar:
    """``expr`` with every ``Col(i)`` replaced by ``mapping(i)`` (an index or an expression)."""

    def replace(node: Scalar) -> Scalar:
        if isinstance(node, Col):
            target = mapping(node.index)
            return Col(target) if isinstance(target, int) else target
        return node

    return transform(expr, replace)


def may_fail(expr: Scalar) -> bool:
    """Whether evaluating ``expr`` can raise for some row (casts and fallible functions)."""
    from matview.ir.functions import lookup

    if isinstance(expr, Cast) or (isinstance(expr, Call) and lookup(expr.func).may_fail):
        return True
    return any(may_fail(child) for child in children(expr))


def conjuncts(expr: Scalar) -> list[Scalar]:
    """The operands of a chain of ANDs (``[expr]`` when it is no AND)."""
    if isinstance(expr, Call) and expr.func == "and":
        return [c for arg in expr.args for c in conjuncts(arg)]
    return [expr]


def conjoin(preds: Sequence[Scalar]) -> Scalar:
    """The AND of ``preds`` (TRUE when empty)."""
    return balanced("and", preds) if preds else TRUE


def balanced(func: str, args: Sequence[Scalar]) -> Scalar:
    """``args`` combined by the associative binary ``func`` (AND, OR) as a balanced tree,
    so that a chain of thousands stays a few levels deep; up to three it is the left-deep
    chain SQL writes: ``(a AND b) AND c``."""
    if len(args) == 1:
        return args[0]
    middle = (len(args) + 1) // 2
    return Call(func, (balanced(func, args[:middle]), balanced(func, args[middle:])))
