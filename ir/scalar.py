"""Scalar expressions: matview's own small expression tree.

Expressions are evaluated against one input row; ``Col(i)`` is the row's i-th column. Types are
not stored in the tree except where they cannot be derived (literals, casts): ``type_of``
derives them from the input's column types and the function registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matview.ir.types import BOOLEAN, NULLTYPE, SqlType, common_type

if TYPE_CHECKING:
    from matview.ir.relation import Relation


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


@dataclass(frozen=True)
class Outer(Scalar):
    """A correlated reference (printed ``^#index::type``, one ``^`` per ``level``): column
    ``index`` of the row that the subquery ``level`` subquery boundaries out is evaluated on.
    Inside the plan of a subquery expression (``Exists``, ``InSubquery``, ``ScalarSubquery``)
    evaluated on row ``r``, ``Outer(1, i, t)`` is ``r[i]``; within a subquery nested in that
    plan the same column is ``Outer(2, i, t)``. ``type`` is the column's type. Only the RAW
    plan holds them: decorrelation replaces them with columns. ``level`` 0 never appears in
    a plan; decorrelation uses it for a column of the domain it joins in."""

    level: int
    index: int
    type: SqlType


@dataclass(frozen=True)
class Exists(Scalar):
    """``EXISTS (rel)``: TRUE when ``rel``, evaluated for the current row (its ``Outer``
    references read it), has a row; FALSE otherwise (never NULL)."""

    rel: Relation


@dataclass(frozen=True)
class InSubquery(Scalar):
    """``expr IN (rel)``, ``rel`` having one column of ``expr``'s type: TRUE when some row of
    ``rel`` equals ``expr``; else NULL when ``rel`` is not empty and ``expr`` is NULL or
    ``rel`` holds a NULL; else FALSE (so ``NOT IN`` an empty set is TRUE, as in SQL)."""

    expr: Scalar
    rel: Relation


@dataclass(frozen=True)
class ScalarSubquery(Scalar):
    """``(rel)`` as a value: the one column of ``rel``'s only row, NULL when ``rel`` is
    empty; an evaluation error ("more than one row returned by a subquery used as an
    expression") when it has several."""

    rel: Relation


Subquery = Exists | InSubquery | ScalarSubquery
"""The scalar nodes that hold a relation."""

TRUE = Lit(True, BOOLEAN)
FALSE = Lit(False, BOOLEAN)
NULL = Lit(None, NULLTYPE)


def type_of(expr: Scalar, input_types: Sequence[SqlType]) -> SqlType:
    """The SQL type of ``expr`` over rows whose columns have ``input_types``."""
    if isinstance(expr, Col):
        return input_types[expr.index]
    if isinstance(expr, Lit):
        return expr.type
    if isinstance(expr, Cast):
        return expr.to
    if isinstance(expr, Outer):
        return expr.type
    if isinstance(expr, (Exists, InSubquery)):
        return BOOLEAN
    if isinstance(expr, ScalarSubquery):
        return expr.rel.types[0]
    if isinstance(expr, Case):
        result = type_of(expr.default, input_types)
        for _, value in expr.whens:
            result = common_type(result, type_of(value, input_types))
        return result
    if isinstance(expr, Call):
        return _call_type(expr, input_types)
    raise TypeError(f"not a scalar expression: {expr!r}")


_CALL_TYPES: dict[int, tuple[Call, tuple[SqlType, ...], SqlType]] = {}
"""The types of the calls typed lately, by node (the node held, so its id names it while
the entry lives), with the input types each was typed for."""

CALL_TYPES_KEPT = 1 << 16
"""The most calls ``_CALL_TYPES`` holds (emptied when full)."""


def _call_type(expr: Call, input_types: Sequence[SqlType]) -> SqlType:
    """``type_of`` a call, remembered per node and input types: a call's type walks its
    whole subtree, so the reference interpreter, asking it at every call of every row,
    computed O(n log n) types per row of a tree of n calls (an ``IN`` list of 10,000
    items, a balanced tree of ORs: 18 s to bind, plan and interpret, 5.7 s remembered)."""
    from matview.ir.functions import lookup

    types = input_types if isinstance(input_types, tuple) else tuple(input_types)
    known = _CALL_TYPES.get(id(expr))
    if known is not None and known[0] is expr and known[1] == types:
        return known[2]
    if len(_CALL_TYPES) >= CALL_TYPES_KEPT:
        _CALL_TYPES.clear()
    result = lookup(expr.func).returns([type_of(a, types) for a in expr.args])
    _CALL_TYPES[id(expr)] = (expr, types, result)
    return result


def children(expr: Scalar) -> tuple[Scalar, ...]:
    """The direct sub-expressions of ``expr``."""
    if isinstance(expr, Call):
        return expr.args
    if isinstance(expr, Case):
        return tuple(x for pair in expr.whens for x in pair) + (expr.default,)
    if isinstance(expr, (Cast, InSubquery)):
        return (expr.expr,)
    return ()


def columns_used(expr: Scalar) -> set[int]:
    """The column indexes ``expr`` reads (not counting a subquery's ``Outer`` references:
    decorrelation removes subqueries before any transform that needs them)."""
    if isinstance(expr, Col):
        return {expr.index}
    used: set[int] = set()
    for child in children(expr):
        used |= columns_used(child)
    return used


def transform(expr: Scalar, fn: Callable[[Scalar], Scalar],
              keep: Callable[[Scalar], bool] = lambda node: False) -> Scalar:
    """Rebuild ``expr`` bottom-up, replacing every node ``n`` by ``fn(n)``, except the
    nodes ``keep`` holds (and those under them), kept as they are."""
    if keep(expr):
        return expr
    if isinstance(expr, Call):
        expr = Call(expr.func, tuple(transform(a, fn, keep) for a in expr.args))
    elif isinstance(expr, Case):
        expr = Case(tuple((transform(c, fn, keep), transform(v, fn, keep))
                          for c, v in expr.whens), transform(expr.default, fn, keep))
    elif isinstance(expr, Cast):
        expr = Cast(transform(expr.expr, fn, keep), expr.to)
    elif isinstance(expr, InSubquery):
        expr = InSubquery(transform(expr.expr, fn, keep), expr.rel)
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


def volatile(expr: Scalar) -> bool:
    """Whether ``expr`` calls a function that gives a new value each time
    (``gen_random_uuid()``): evaluated once per row, never once for all."""
    from matview.ir.functions import lookup

    if isinstance(expr, Call) and lookup(expr.func).volatile:
        return True
    return any(volatile(child) for child in children(expr))


def conjuncts(expr: Scalar) -> list[Scalar]:
    """The operands of a chain of ANDs (``[expr]`` when it is no AND)."""
    if isinstance(expr, Call) and expr.func == "and":
        return [c for arg in expr.args for c in conjuncts(arg)]
    return [expr]


def not_null(expr: Scalar) -> Scalar:
    """``expr IS NOT NULL``."""
    return Call("not", (Call("is_null", (expr,)),))


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
