"""Casts of values (``CAST(value AS type)``) with PostgreSQL's semantics, in the reference
interpreter's representations of values (``evaluate``): numbers round half away from zero
(double precision: to even) and check their type's range, text is read as each type reads
its input and values print as PostgreSQL prints them; a TIME as a TIMESTAMP is that time
on 1970-01-01, a TIME as an INTERVAL its microseconds, a TIMETZ without its offset its time of
day, a TIME or TIMESTAMPTZ as a TIMETZ at the offset of the session zone (UTC).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, time
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

from matview.ir import bytea, intervals, jsonb, times, timestamps, timetz, uuids
from matview.ir.eval_error import EvalError
from matview.ir.types import (
    INT_RANGE,
    INTEGER_KINDS,
    TIMESTAMP_KINDS,
    Kind,
    SqlType,
)

DECIMAL_CONTEXT = Context(prec=80)
"""The context of NUMERIC arithmetic: wide enough that sums and products of NUMERIC(38)
values are exact."""

_TRUE_WORDS = frozenset({"t", "true", "yes", "on", "1"})
_FALSE_WORDS = frozenset({"f", "false", "no", "off", "0"})
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")
_FLOAT_WORDS = {
    "nan": math.nan,
    "infinity": math.inf, "+infinity": math.inf, "inf": math.inf, "+inf": math.inf,
    "-infinity": -math.inf, "-inf": -math.inf,
}


def check_range(value: object, sql_type: SqlType) -> None:
    """Raise ``EvalError`` when ``value`` overflows the INT or BIGINT ``sql_type``."""
    if not isinstance(value, int) or sql_type.kind not in INTEGER_KINDS:
        return
    low, high = INT_RANGE[sql_type.kind]
    if not low <= value <= high:
        raise EvalError(f"{_integer_name(sql_type)} out of range")


def _integer_name(sql_type: SqlType) -> str:
    return "integer" if sql_type.kind is Kind.INT else "bigint"


def cast_value(value: object, to: SqlType) -> object:
    """``CAST(value AS to)`` as PostgreSQL computes it; NULL casts to NULL.

    Raises ``EvalError`` when the value does not fit ``to`` or cannot be cast to it.
    """
    if value is None:
        return None
    kind = to.kind
    if kind in INTEGER_KINDS:
        return _to_integer(value, to)
    if kind is Kind.DOUBLE:
        return _to_double(value, to)
    if kind is Kind.NUMERIC:
        return _to_numeric(value, to)
    if kind is Kind.TEXT:
        return _to_text(value, to)
    if kind is Kind.BOOLEAN:
        return _to_boolean(value, to)
    if kind is Kind.DATE:
        if isinstance(value, datetime):
            return timestamps.conform(value, Kind.TIMESTAMP).date()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            return timestamps.parse(value, to).date()
    if kind in TIMESTAMP_KINDS:
        if isinstance(value, time | times.EndOfDay):  # a TIME on 1970-01-01 (``times``)
            return timestamps.conform(times.on_epoch(value), kind)
        if isinstance(value, date):
            return timestamps.conform(value, kind)
        if isinstance(value, str):
            return timestamps.conform(timestamps.parse(value, to), kind)
    if kind is Kind.TIME:
        return _to_time(value, to)
    if kind is Kind.TIMETZ:
        return _to_timetz(value, to)
    if kind is Kind.INTERVAL and isinstance(value, time | times.EndOfDay):
        return intervals.Interval(0, 0, times.micros(value))
    if kind is Kind.INTERVAL and isinstance(value, intervals.Interval):
        return value
    if kind is Kind.JSONB and isinstance(value, str):
        try:
            return jsonb.canonical(value)
        except jsonb.JsonError as error:
            raise EvalError(str(error)) from None
    if kind is Kind.UUID and isinstance(value, str):
        return uuids.canonical(value)
    if kind is Kind.BYTEA and isinstance(value, str | bytes):
        return bytea.parse(value) if isinstance(value, str) else value
    if kind is Kind.INTERVAL and isinstance(value, str):
        try:
            return intervals.parse(value)
        except intervals.IntervalError as error:
            raise EvalError(str(error)) from None
    if kind is Kind.ARRAY and isinstance(value, tuple | list):
        assert to.element is not None
        return tuple(cast_value(v, to.element) for v in value)
    raise _cannot_cast(value, to)


def _to_time(value: object, to: SqlType) -> times.TimeOfDay:
    if isinstance(value, intervals.Interval):  # its time field's time of day
        return times.of_micros(value.micros % times.MICROS_PER_DAY)
    if isinstance(value, timetz.TimeTz):  # its time of day
        return times.of_micros(value.micros)
    if isinstance(value, time | times.EndOfDay):
        return value
    if isinstance(value, str):
        return times.parse(value)
    if isinstance(value, datetime):
        return timestamps.conform(value, Kind.TIMESTAMP).time()
    raise _cannot_cast(value, to)


def _to_timetz(value: object, to: SqlType) -> timetz.TimeTz:
    if isinstance(value, timetz.TimeTz):
        return value
    if isinstance(value, time | times.EndOfDay):  # at the session zone's offset, UTC's
        return timetz.TimeTz.of(times.micros(value), 0)
    if isinstance(value, str):
        return timetz.parse(value)
    if isinstance(value, datetime):  # its time of day in UTC
        return timetz.of_timestamp(value)
    raise _cannot_cast(value, to)


def _cannot_cast(value: object, to: SqlType) -> EvalError:
    if isinstance(value, bool):
        source = "boolean"
    elif isinstance(value, int):
        source = "int"
    elif isinstance(value, float):
        source = "double"
    elif isinstance(value, Decimal):
        source = "numeric"
    elif isinstance(value, str):
        source = "text"
    elif isinstance(value, datetime):
        source = "timestamp"
    elif isinstance(value, date):
        source = "date"
    else:
        source = type(value).__name__
    return EvalError(f"cannot cast type {source} to {to}")


def _invalid_text(value: str, type_name: str) -> EvalError:
    return EvalError(f'invalid input syntax for type {type_name}: "{value}"')


def _to_integer(value: object, to: SqlType) -> int:
    if isinstance(value, bool):
        raise _cannot_cast(value, to)
    if isinstance(value, int):
        result = value
    elif isinstance(value, str):
        text = value.strip()
        if not _INTEGER_TEXT.fullmatch(text):
            raise _invalid_text(value, _integer_name(to))
        result = int(text)
    elif isinstance(value, float | Decimal):
        exact = Decimal(value)
        if not exact.is_finite():
            raise EvalError(f"{_integer_name(to)} out of range")
        result = int(exact.to_integral_value(rounding=ROUND_HALF_UP))
    else:
        raise _cannot_cast(value, to)
    check_range(result, to)
    return result


def _to_double(value: object, to: SqlType) -> float:
    if isinstance(value, bool):
        raise _cannot_cast(value, to)
    if isinstance(value, int | float | Decimal):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _FLOAT_WORDS:
            return _FLOAT_WORDS[text.lower()]
        if not _NUMBER_TEXT.fullmatch(text):
            raise _invalid_text(value, "double precision")
        result = float(text)
        if math.isinf(result):
            raise EvalError(f'"{text}" is out of range for type double precision')
        return result
    raise _cannot_cast(value, to)


def _to_numeric(value: object, to: SqlType) -> Decimal:
    if isinstance(value, bool):
        raise _cannot_cast(value, to)
    if isinstance(value, int | Decimal):
        number = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise EvalError(f"cannot cast double {value} to {to}")
        number = Decimal(repr(value))
    elif isinstance(value, str):
        text = value.strip()
        if not _NUMBER_TEXT.fullmatch(text):
            raise _invalid_text(value, "numeric")
        number = Decimal(text)
    else:
        raise _cannot_cast(value, to)
    if to.scale is not None:
        try:
            number = number.quantize(Decimal(1).scaleb(-to.scale), rounding=ROUND_HALF_UP,
                                     context=DECIMAL_CONTEXT)
        except InvalidOperation:
            raise EvalError("numeric field overflow") from None
    integer_digits = None if to.precision is None else to.precision - (to.scale or 0)
    if integer_digits is not None and abs(number) >= Decimal(1).scaleb(integer_digits):
        raise EvalError("numeric field overflow")
    return number


def _to_text(value: object, to: SqlType) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return timestamps.text_of(value)
    if isinstance(value, time | times.EndOfDay):
        return times.text_of(value)
    if isinstance(value, timetz.TimeTz):
        return timetz.text_of(value)
    if isinstance(value, date | int | str):
        return str(value)
    if isinstance(value, bytes):
        return bytea.text_of(value)
    if isinstance(value, intervals.Interval):
        return intervals.render(value)
    raise _cannot_cast(value, to)


def _float_text(value: float) -> str:
    """PostgreSQL's output of a double: the shortest digits that read back as ``value``, in
    positional notation when the decimal exponent is in [-4, 15), else as ``1.5e+20``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    shortest = Decimal(repr(value)).normalize()
    exponent = shortest.adjusted()
    if -4 <= exponent < 15:
        return format(shortest, "f")
    mantissa = format(shortest, "e").split("e")[0]
    return f"{mantissa}e{exponent:+03d}"


def _to_boolean(value: object, to: SqlType) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        raise _invalid_text(value, "boolean")
    raise _cannot_cast(value, to)

