"""Literal constants: numbers, strings, booleans, NULL, intervals and blobs, typed as in
PostgreSQL.

Integers are INT when they fit 32 bits, else BIGINT, else NUMERIC; decimals are NUMERIC with
the written precision and scale; numbers with an exponent are DOUBLE.
"""

from __future__ import annotations

import re
from decimal import Decimal

from matview.ir import bytea, intervals
from matview.ir.eval_error import EvalError
from matview.ir.scalar import Lit
from matview.ir.types import (
    BOOLEAN,
    BYTEA,
    DOUBLE,
    INT_RANGE,
    INTERVAL,
    NULLTYPE,
    TEXT,
    Kind,
    SqlType,
)
from matview.sql.coerce import TypedScalar
from matview.sql.datatypes import MAX_PRECISION
from matview.sql.errors import InvalidValueError, SqlTypeError, UnsupportedError
from sqlglot import exp


def literal(node: exp.Literal | exp.Boolean | exp.Null, negative: bool = False) -> TypedScalar:
    """The typed constant ``node`` denotes (negated when ``negative``, for ``-<number>``)."""
    if isinstance(node, exp.Null):
        return TypedScalar(Lit(None, NULLTYPE), NULLTYPE)
    if isinstance(node, exp.Boolean):
        return TypedScalar(Lit(node.this, BOOLEAN), BOOLEAN)
    if node.is_string:
        if "\x00" in node.this:
            raise InvalidValueError.at('invalid byte sequence for encoding "UTF8": 0x00', node)
        return TypedScalar(Lit(node.this, TEXT), TEXT)
    return _number(node, negative)


def _number(node: exp.Literal, negative: bool) -> TypedScalar:
    text = node.this
    sign = -1 if negative else 1
    if re.fullmatch(r"\d+", text):
        value = sign * int(text)
        for kind in (Kind.INT, Kind.BIGINT):
            low, high = INT_RANGE[kind]
            if low <= value <= high:
                return TypedScalar(Lit(value, SqlType(kind)), SqlType(kind))
    if "e" in text.lower():
        return TypedScalar(Lit(sign * float(text), DOUBLE), DOUBLE)
    value = sign * Decimal(text)
    digits = value.as_tuple()
    scale = max(0, -int(digits.exponent))
    precision = max(len(digits.digits), scale, 1)
    if precision > MAX_PRECISION:
        raise SqlTypeError.at(f"numeric literal {text} is out of range", node)
    numeric = SqlType(Kind.NUMERIC, precision, scale)
    return TypedScalar(Lit(value, numeric), numeric)


def interval(node: exp.Interval) -> TypedScalar:
    """``INTERVAL '5 minutes'`` (or sqlglot's ``INTERVAL '5' MINUTE``) as a constant."""
    value, unit = node.this, node.args.get("unit")
    if not isinstance(value, exp.Literal) or (unit is not None and not isinstance(unit, exp.Var)):
        raise UnsupportedError.at(
            f"{node.sql(dialect='postgres')} is not supported: write INTERVAL '<n> <unit> ...'",
            node)
    text = value.name if unit is None else f"{value.name} {unit.name}"
    try:
        parsed = intervals.parse(text)
    except intervals.IntervalError as error:
        raise SqlTypeError.at(str(error), node) from None
    return TypedScalar(Lit(parsed, INTERVAL), INTERVAL)


def blob(node: exp.HexString) -> TypedScalar:
    """The blob literal ``x'0a'``: a BYTEA constant of the bytes its hexadecimal digits spell
    (as DuckDB and SQLite read it; PostgreSQL reads a bit string, a type matview lacks)."""
    try:
        value = bytea.decode_hex(node.this)
    except EvalError as error:
        raise InvalidValueError.at(str(error), node) from None
    return TypedScalar(Lit(value, BYTEA), BYTEA)
