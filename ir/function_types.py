"""The type rules of the scalar functions of ``ir/functions.py``: each maps the argument
types of a call to its result type, and raises ``TypeError`` when the arguments do not fit.
"""

from __future__ import annotations

from matview.ir.types import (
    BOOLEAN,
    BYTEA,
    DATE,
    DOUBLE,
    INT,
    INTEGER_KINDS,
    JSONB,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Kind,
    SqlType,
    array_of,
    common_type,
)


def numeric(types: list[SqlType]) -> SqlType:
    for t in types:
        if not (t.is_numeric or t.kind is Kind.NULL):
            raise TypeError(f"operator does not accept {t}")
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return INT if result.kind is Kind.NULL else result


def product(types: list[SqlType]) -> SqlType:
    """A product's type: as PostgreSQL, a NUMERIC product keeps every digit, its scale the
    sum of the operands' scales (precision capped at 38)."""
    result = numeric(types)
    if result.kind is not Kind.NUMERIC:
        return result
    digits = [(t.precision or 38, t.scale or 0) if t.kind is Kind.NUMERIC
              else (10 if t.kind is Kind.INT else 19, 0) for t in types]
    scale = min(38, sum(s for _, s in digits))
    return SqlType(Kind.NUMERIC, min(38, max(sum(p for p, _ in digits), scale + 1)), scale)


def comparable(types: list[SqlType]) -> SqlType:
    common_type(types[0], types[1])
    return BOOLEAN


def boolean(types: list[SqlType]) -> SqlType:
    for t in types:
        if t.kind not in (Kind.BOOLEAN, Kind.NULL):
            raise TypeError(f"argument of boolean operator must be boolean, not {t}")
    return BOOLEAN


def text(types: list[SqlType]) -> SqlType:
    return TEXT


def same(types: list[SqlType]) -> SqlType:
    return numeric(types[:1])


def common(types: list[SqlType]) -> SqlType:
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return result


_JSON_VALUES = (Kind.BOOLEAN, Kind.TEXT, Kind.NUMERIC, Kind.DOUBLE, Kind.NULL, *INTEGER_KINDS)
"""The types ``to_jsonb`` takes (``jsonb.of_scalar``; a JSONB value is itself)."""


def to_jsonb_type(types: list[SqlType]) -> SqlType:
    if types[0].kind not in _JSON_VALUES:
        raise TypeError(f"function to_jsonb({types[0]}) does not exist")
    return JSONB


def additive(types: list[SqlType]) -> SqlType:
    """``+``/``-``: numbers; a TIMESTAMP or DATE shifted by an INTERVAL (it second), a
    TIMESTAMP (as PostgreSQL: a date plus an interval is a timestamp), a TIMESTAMPTZ so
    shifted a TIMESTAMPTZ; a DATE shifted by an INT number of days (it second), a DATE."""
    kinds = [t.kind for t in types]
    if Kind.INTERVAL in kinds:
        if kinds[0] is Kind.TIMESTAMPTZ and kinds[1] is Kind.INTERVAL:
            return TIMESTAMPTZ
        if kinds[0] in (Kind.TIMESTAMP, Kind.DATE, Kind.NULL) and kinds[1] is Kind.INTERVAL:
            return TIMESTAMP
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    if Kind.DATE in kinds:
        if kinds[0] is Kind.DATE and kinds[1] in (Kind.INT, Kind.NULL):
            return DATE
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return numeric(types)


def two_dates(types: list[SqlType]) -> SqlType:
    """``days_between(a, b)`` is ``a - b`` of two dates: the number of days from ``b`` to
    ``a``, an INT (a function apart from ``sub``, whose integer results are sums checked for
    overflow)."""
    if any(t.kind not in (Kind.DATE, Kind.NULL) for t in types):
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return INT


def real(types: list[SqlType]) -> SqlType:
    numeric(types)
    return DOUBLE


def array_type(types: list[SqlType]) -> SqlType:
    element = NULLTYPE
    for t in types:
        element = common_type(element, t)
    return array_of(element)


def _text_or_bytea(types: list[SqlType], result: SqlType) -> SqlType:
    if types[0].kind not in (Kind.TEXT, Kind.BYTEA, Kind.NULL):
        raise TypeError(f"function does not accept {types[0]}")
    return result


def length(types: list[SqlType]) -> SqlType:
    """``length``, ``octet_length``: of a TEXT or a BYTEA, an INT."""
    return _text_or_bytea(types, INT)


def digest(types: list[SqlType]) -> SqlType:
    """``md5``: of a TEXT or a BYTEA, a TEXT."""
    return _text_or_bytea(types, TEXT)


def concatenation(types: list[SqlType]) -> SqlType:
    """``||``: of BYTEA values a BYTEA, else a TEXT (its operands cast to text)."""
    return BYTEA if all(t.kind is Kind.BYTEA for t in types) else TEXT


def encoded(types: list[SqlType]) -> SqlType:
    """``encode(bytea, format)`` (one function per format): a TEXT."""
    if types[0].kind not in (Kind.BYTEA, Kind.NULL):
        raise TypeError(f"function encode({types[0]}, text) does not exist")
    return TEXT


def decoded(types: list[SqlType]) -> SqlType:
    """``decode(text, format)`` (one function per format): a BYTEA."""
    if types[0].kind not in (Kind.TEXT, Kind.NULL):
        raise TypeError(f"function decode({types[0]}, text) does not exist")
    return BYTEA
