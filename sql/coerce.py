"""Typed expressions and the implicit conversions between them.

String literals behave like PostgreSQL's literals of unknown type: next to an operand of a
known type they are cast to that type (``date_col = '2024-01-01'``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from matview.ir.functions import lookup
from matview.ir.scalar import Call, Cast, Lit, Scalar
from matview.ir.types import INTEGER_KINDS, NULLTYPE, TEXT, Kind, SqlType, common_type
from matview.sql.errors import SqlTypeError
from sqlglot import exp


class TypedScalar(NamedTuple):
    """A bound scalar expression and its SQL type."""

    expr: Scalar
    type: SqlType


def is_string_literal(value: TypedScalar) -> bool:
    """Whether ``value`` is a string literal, whose type adapts to its context."""
    return isinstance(value.expr, Lit) and value.type == TEXT


def cast(value: TypedScalar, to: SqlType) -> TypedScalar:
    """``value`` converted to ``to`` (unchanged when it already has that type)."""
    if value.type == to or to.kind is Kind.NULL:
        return value
    if isinstance(value.expr, Lit) and value.expr.value is None:
        return TypedScalar(Lit(None, to), to)
    return TypedScalar(Cast(value.expr, to), to)


def _explicitly_castable(source: SqlType, target: SqlType) -> bool:
    kinds = {source.kind, target.kind}
    if source.kind is Kind.NULL or Kind.TEXT in kinds or source.kind is target.kind:
        return True
    if source.is_numeric and target.is_numeric or kinds == {Kind.DATE, Kind.TIMESTAMP}:
        return True
    return kinds == {Kind.BOOLEAN, Kind.INT}


def explicit_cast(value: TypedScalar, to: SqlType, node: exp.Expr) -> TypedScalar:
    """``CAST(value AS to)``, rejecting conversions PostgreSQL does not have."""
    if not _explicitly_castable(value.type, to):
        raise SqlTypeError.at(f"cannot cast type {value.type} to {to}", node)
    return cast(value, to)


def assignment_cast(value: TypedScalar, to: SqlType, column: str, node: exp.Expr) -> TypedScalar:
    """``value`` stored into ``column`` of type ``to`` (INSERT, UPDATE): converts between
    numeric types, between dates and timestamps, and anything to text."""
    if value.type.kind is Kind.NULL or is_string_literal(value) or to == TEXT:
        return cast(value, to)
    try:
        common_type(value.type, to)
    except TypeError:
        raise SqlTypeError.at(
            f'column "{column}" is of type {to} but expression is of type {value.type}', node
        ) from None
    return cast(value, to)


def unify(
    operands: Sequence[TypedScalar], node: exp.Expr, mismatch: Callable[[SqlType, SqlType], str]
) -> list[TypedScalar]:
    """``operands`` cast to their common type; ``mismatch(a, b)`` is the error message when two
    types have none."""
    target = NULLTYPE
    for value in operands:
        if is_string_literal(value):
            continue
        try:
            target = common_type(target, value.type)
        except TypeError:
            raise SqlTypeError.at(mismatch(target, value.type), node) from None
    if target.kind is Kind.NULL and any(is_string_literal(v) for v in operands):
        target = TEXT
    return [cast(value, target) for value in operands]


def call(
    func: str, args: Sequence[TypedScalar], node: exp.Expr, error: str | None = None
) -> TypedScalar:
    """The registered function ``func`` applied to ``args``, typed by the registry; a type
    error says ``error`` (default: the registry's message)."""
    try:
        result = lookup(func).returns([a.type for a in args])
    except TypeError as problem:
        raise SqlTypeError.at(error or str(problem), node) from None
    return TypedScalar(Call(func, tuple(a.expr for a in args)), result)


def coerce(value: TypedScalar, target: SqlType) -> TypedScalar | None:
    """``value`` as type ``target`` where an argument of that type is needed: NULL, string
    literals and (to an integer type) integers are cast; other types give None."""
    if value.type == target:
        return value
    integers = value.type.kind in INTEGER_KINDS and target.kind in INTEGER_KINDS
    if value.type.kind is Kind.NULL or is_string_literal(value) or integers:
        return cast(value, target)
    return None


def require(value: TypedScalar, target: SqlType, what: str, node: exp.Expr) -> TypedScalar:
    """``value`` as type ``target`` (see ``coerce``), which ``what`` needs."""
    result = coerce(value, target)
    if result is None:
        raise SqlTypeError.at(f"{what} must be type {target}, not type {value.type}", node)
    return result
