"""Evaluation of scalar expressions on one row, with SQL semantics (the reference interpreter's
half that works on values).

Values are Python objects: ``None`` is NULL, BOOLEAN is ``bool``, INT and BIGINT are ``int``,
DOUBLE is ``float``, NUMERIC is ``Decimal``, TEXT is ``str``, DATE is ``datetime.date``,
TIMESTAMP is a naive ``datetime.datetime``, TIMESTAMPTZ one in UTC (the session time zone
is always UTC) and TIME a ``datetime.time``. A value read from a column or produced by an
expression is first brought to the representation of its SQL type (an ``int`` in a DOUBLE
column becomes a ``float``), so Python's operators behave as the SQL type demands.

Every argument of a function call is evaluated (there is no short-circuit, so an error is not
hidden by the order of AND's operands); only CASE evaluates lazily, as SQL specifies.

A subquery in an expression is evaluated by running its plan, with its ``Outer`` references
bound to the row, through the function ``subquery_runner`` installs (the reference
interpreter installs itself).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, time
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext

from matview.ir import bytea, intervals, jsonb, times, timestamps, uuids
from matview.ir.functions import EvalError, lookup
from matview.ir.relation import Relation
from matview.ir.scalar import (
    Call,
    Case,
    Cast,
    Col,
    Exists,
    InSubquery,
    Lit,
    Outer,
    Scalar,
    ScalarSubquery,
    type_of,
)
from matview.ir.subquery import enter
from matview.ir.types import (
    INT_RANGE,
    INTEGER_KINDS,
    TIMESTAMP,
    TIMESTAMP_KINDS,
    TIMESTAMPTZ,
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


Runner = Callable[[Relation], Counter[tuple[object, ...]]]
_RUNNER: ContextVar[Runner | None] = ContextVar("subquery_runner", default=None)


@contextmanager
def subquery_runner(run: Runner) -> Iterator[None]:
    """Within the block, a subquery's plan (its references to the row bound) evaluates to
    ``run(plan)``, a multiset of rows."""
    token = _RUNNER.set(run)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def evaluate(expr: Scalar, row: Sequence[object], types: Sequence[SqlType]) -> object:
    """The value of ``expr`` on ``row``, whose columns have ``types``.

    Raises ``EvalError`` when SQL would raise an error (overflow, division by zero, bad cast).
    """
    if isinstance(expr, Col):
        return _conform(row[expr.index], types[expr.index])
    if isinstance(expr, Lit):
        return _conform(expr.value, expr.type)
    if isinstance(expr, Cast):
        return cast_value(evaluate(expr.expr, row, types), expr.to)
    if isinstance(expr, Case):
        chosen = next(
            (value for cond, value in expr.whens if evaluate(cond, row, types) is True),
            expr.default,
        )
        return _conform(evaluate(chosen, row, types), type_of(expr, types))
    if isinstance(expr, Call):
        return _call(expr, row, types)
    if isinstance(expr, (Exists, InSubquery, ScalarSubquery)):
        return _subquery(expr, row, types)
    if isinstance(expr, Outer):
        raise TypeError(f"an outer reference outside its subquery: {expr!r}")
    raise TypeError(f"not a scalar expression: {expr!r}")


def _subquery(expr: Exists | InSubquery | ScalarSubquery, row: Sequence[object],
              types: Sequence[SqlType]) -> object:
    """The value of a subquery on ``row`` (see each node's meaning)."""
    run = _RUNNER.get()
    if run is None:
        raise TypeError("subqueries are evaluated only by the reference interpreter")
    plan = enter(expr.rel, lambda ref: Lit(_conform(row[ref.index], ref.type), ref.type))
    values = [r[0] if r else None for r in run(plan).elements()]
    if isinstance(expr, Exists):
        return bool(values)
    if isinstance(expr, ScalarSubquery):
        if len(values) > 1:
            raise EvalError("more than one row returned by a subquery used as an expression")
        return _conform(values[0], type_of(expr, types)) if values else None
    needle = evaluate(expr.expr, row, types)
    if not values:
        return False
    if needle is None:
        return None
    if any(v is not None and promote([v, needle])[0] == promote([v, needle])[1] for v in values):
        return True
    return None if None in values else False


def _call(expr: Call, row: Sequence[object], types: Sequence[SqlType]) -> object:
    fn = lookup(expr.func)
    args = promote([evaluate(arg, row, types) for arg in expr.args])
    if not fn.handles_null and any(arg is None for arg in args):
        return None
    with localcontext(DECIMAL_CONTEXT):
        result = fn.python(*args)
    result_type = type_of(expr, types)
    _check_range(result, result_type)
    return _conform(result, result_type)


def promote(values: Sequence[object]) -> list[object]:
    """``values`` converted as SQL converts operands to their common type: beside a DOUBLE,
    NUMERIC values become ``float``; beside a TIMESTAMP, DATE values become ``datetime``;
    beside a TIMESTAMPTZ, DATE and TIMESTAMP values become instants in UTC."""
    out = list(values)
    if any(isinstance(v, float) for v in out):
        out = [float(v) if isinstance(v, Decimal) else v for v in out]
    if any(isinstance(v, datetime) for v in out):
        zoned = any(isinstance(v, datetime) and v.tzinfo is not None for v in out)
        out = [_conform(v, TIMESTAMPTZ if zoned else TIMESTAMP) for v in out]
    return out


def _conform(value: object, sql_type: SqlType) -> object:
    """``value`` in the Python representation of ``sql_type``, for the representations that
    widen implicitly (int or Decimal to float, int to Decimal, date to datetime), and a
    timestamp with or without its zone as its type has it (UTC is the session zone)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return tuple(value)
    if sql_type.kind is Kind.DOUBLE and isinstance(value, int | Decimal):
        return float(value)
    if sql_type.kind is Kind.NUMERIC and isinstance(value, int):
        return Decimal(value)
    if sql_type.kind in TIMESTAMP_KINDS and isinstance(value, date):
        return timestamps.conform(value, sql_type.kind)
    return value


def _check_range(value: object, sql_type: SqlType) -> None:
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
            return _conform(value, TIMESTAMP).date()
        if isinstance(value, date):
            return value
        if isinstance(value, str):
            return timestamps.parse(value, to).date()
    if kind in TIMESTAMP_KINDS:
        if isinstance(value, date | time):  # a TIME on 1970-01-01 (``times``)
            return _conform(times.on_epoch(value) if isinstance(value, time) else value, to)
        if isinstance(value, str):
            return _conform(timestamps.parse(value, to), to)
    if kind is Kind.TIME:
        if isinstance(value, intervals.Interval):  # its time field's time of day
            return times.of_micros(value.micros % times.MICROS_PER_DAY)
        if isinstance(value, time | str):
            return times.parse(value) if isinstance(value, str) else value
        if isinstance(value, datetime):
            return _conform(value, TIMESTAMP).time()
    if kind is Kind.INTERVAL and isinstance(value, time | intervals.Interval):
        return intervals.Interval(0, 0, times.micros(value)) if isinstance(value, time) else value
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
    _check_range(result, to)
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
    if isinstance(value, time):
        return times.text_of(value)
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

