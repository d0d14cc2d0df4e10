"""Typed expressions and the implicit conversions between them.

String literals behave like PostgreSQL's literals of unknown type: next to an operand of a
known type they are cast to that type (``date_col = '2024-01-01'``). A string literal cast to
INTERVAL, JSONB, UUID, BYTEA or an array type is read at once into a constant
(``'5 minutes'::interval``, ``'{"a": 1}'::jsonb``, ``'\\xff'::bytea``, ``'{1,2}'::int[]``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from matview.ir import intervals, jsonb
from matview.ir.casts import cast_value
from matview.ir.functions import EvalError, lookup
from matview.ir.plans import compute
from matview.ir.relation import Relation
from matview.ir.scalar import Call, Cast, Col, Lit, Scalar, type_of
from matview.ir.types import (
    BIGINT,
    INTEGER_KINDS,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    TIMESTAMP_KINDS,
    Kind,
    SqlType,
    common_type,
)
from matview.sql.errors import SqlTypeError, UnsupportedError
from sqlglot import exp

_READ_AT_ONCE = (Kind.INTERVAL, Kind.JSONB, Kind.UUID, Kind.BYTEA, Kind.ARRAY)
"""Types string literals are read into at binding time."""


class TypedScalar(NamedTuple):
    """A bound scalar expression and its SQL type."""

    expr: Scalar
    type: SqlType


def is_string_literal(value: TypedScalar) -> bool:
    """Whether ``value`` is a string literal, whose type adapts to its context."""
    return isinstance(value.expr, Lit) and value.type == TEXT


def cast(value: TypedScalar, to: SqlType, node: exp.Expr | None = None) -> TypedScalar:
    """``value`` converted to ``to`` (unchanged when it already has that type). A string
    literal cast to a type of ``_READ_AT_ONCE`` is read into a constant; when its text is
    no such value, the error is raised at ``node`` (without ``node``, the cast is kept and
    fails when evaluated)."""
    if value.type == to or to.kind is Kind.NULL:
        return value
    if isinstance(value.expr, Lit) and value.expr.value is None:
        return TypedScalar(Lit(None, to), to)
    if is_string_literal(value) and to.kind in _READ_AT_ONCE:
        assert isinstance(value.expr, Lit) and isinstance(value.expr.value, str)
        try:
            return read_literal(value.expr.value, to)
        except ValueError as error:
            if node is not None:
                raise SqlTypeError.at(str(error), node) from None
    return TypedScalar(Cast(value.expr, to), to)


def read_literal(text: str, to: SqlType) -> TypedScalar:
    """The constant of type ``to`` (INTERVAL, JSONB, UUID, BYTEA or an array type) spelled
    ``text``; raises ``ValueError`` when ``text`` spells none. Arrays become ``array(...)``
    calls of constants (the IR has no array literals)."""
    if to.kind is Kind.INTERVAL:
        return TypedScalar(Lit(intervals.parse(text), to), to)
    if to.kind is Kind.JSONB:
        return TypedScalar(Lit(jsonb.canonical(text), to), to)
    if to.kind in (Kind.UUID, Kind.BYTEA):
        try:
            return TypedScalar(Lit(cast_value(text, to), to), to)
        except EvalError as error:
            raise ValueError(str(error)) from None
    assert to.kind is Kind.ARRAY and to.element is not None
    elements = []
    for item in array_items(text):
        if item is None:
            elements.append(Lit(None, to.element))
            continue
        if to.element.kind in _READ_AT_ONCE:
            elements.append(read_literal(item, to.element).expr)
            continue
        try:
            elements.append(Lit(cast_value(item, to.element), to.element))
        except EvalError as error:
            raise ValueError(str(error)) from None
    array: Scalar = Call("array", tuple(elements))
    if type_of(array, ()) != to:
        array = Cast(array, to)
    return TypedScalar(array, to)


def array_items(text: str) -> list[str | None]:
    """The elements of PostgreSQL's array text ``{a,"b c",NULL}`` (None for NULL)."""
    body = text.strip()
    if len(body) < 2 or body[0] != "{" or body[-1] != "}":
        raise ValueError(f'malformed array literal: "{text}"')
    body = body[1:-1]
    if not body.strip():
        return []
    items: list[str | None] = []
    at = 0
    while True:
        while at < len(body) and body[at].isspace():
            at += 1
        if at < len(body) and body[at] == '"':
            chars, at = [], at + 1
            while at < len(body) and body[at] != '"':
                if body[at] == "\\":
                    at += 1
                if at < len(body):
                    chars.append(body[at])
                at += 1
            if at >= len(body):
                raise ValueError(f'malformed array literal: "{text}"')
            items.append("".join(chars))
            at += 1
            while at < len(body) and body[at].isspace():
                at += 1
        else:
            end = body.find(",", at)
            end = len(body) if end < 0 else end
            word = body[at:end].strip()
            if not word or any(c in word for c in '{}"'):
                raise ValueError(f'malformed array literal: "{text}"')
            items.append(None if word.upper() == "NULL" else word)
            at = end
        if at == len(body):
            return items
        if body[at] != ",":
            raise ValueError(f'malformed array literal: "{text}"')
        at += 1


def _explicitly_castable(source: SqlType, target: SqlType) -> bool:
    kinds = {source.kind, target.kind}
    if source.kind is Kind.ARRAY and target.kind is Kind.ARRAY:
        assert source.element is not None and target.element is not None
        return _explicitly_castable(source.element, target.element)
    if Kind.ARRAY in kinds:
        return source.kind in (Kind.NULL, Kind.TEXT)
    if kinds in ({Kind.TIME, Kind.INTERVAL}, {Kind.TIME, Kind.TIMETZ}):
        return True
    if source.kind is Kind.TIMESTAMPTZ and target.kind is Kind.TIMETZ:  # its time in UTC
        return True
    if kinds & {Kind.INTERVAL, Kind.JSONB, Kind.UUID, Kind.BYTEA}:
        return source.kind in (Kind.NULL, Kind.TEXT, target.kind) or target.kind is Kind.TEXT
    if Kind.MZ_TIMESTAMP in kinds:  # mz_now()'s value, in a one-shot query
        return source.kind is Kind.MZ_TIMESTAMP and (
            target.kind in (Kind.TEXT, Kind.NUMERIC, Kind.DATE) + TIMESTAMP_KINDS
            + INTEGER_KINDS)
    if source.kind is Kind.NULL or Kind.TEXT in kinds or source.kind is target.kind:
        return True
    if source.is_numeric and target.is_numeric or kinds <= {Kind.DATE, *TIMESTAMP_KINDS}:
        return True
    if source.kind in TIMESTAMP_KINDS and target.kind is Kind.TIME:  # its time of day
        return True
    return kinds == {Kind.BOOLEAN, Kind.INT}


def explicit_cast(value: TypedScalar, to: SqlType, node: exp.Expr) -> TypedScalar:
    """``CAST(value AS to)``, rejecting conversions PostgreSQL does not have."""
    text_to_array = to.kind is Kind.ARRAY and value.type == TEXT and not is_string_literal(value)
    if text_to_array or not _explicitly_castable(value.type, to):
        raise SqlTypeError.at(f"cannot cast type {value.type} to {to}", node)
    if to.kind is Kind.INTERVAL and value.type == TEXT and not is_string_literal(value):
        raise UnsupportedError.at("casting text to interval is supported for constants only "
                                  "('1 day'::interval)", node)
    return cast(value, to, node)


def assignment_cast(value: TypedScalar, to: SqlType, column: str, node: exp.Expr) -> TypedScalar:
    """``value`` stored into ``column`` of type ``to`` (INSERT, UPDATE): converts between
    numeric types, between dates and timestamps, and anything to text."""
    if value.type.kind is Kind.NULL or is_string_literal(value) or to == TEXT:
        return cast(value, to, node)
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
    if target.kind is Kind.MZ_TIMESTAMP:  # mz_now() read as a moment, or in milliseconds
        target = TIMESTAMP if any(is_string_literal(v) for v in operands) else BIGINT
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


def cast_columns(plan: Relation, types: Sequence[SqlType]) -> Relation:
    """``plan`` with its columns cast to ``types``."""
    exprs = [cast(TypedScalar(Col(i), t), to).expr
             for i, (t, to) in enumerate(zip(plan.types, types, strict=True))]
    return compute(plan, exprs)
