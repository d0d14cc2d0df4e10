"""The registry of scalar functions: each is declared once with its type rule, its Python
meaning (used by the reference interpreter) and its Spark lowering.

The Spark lowering is a function ``spark(F, *columns) -> Column`` that receives the
``pyspark.sql.functions`` module as ``F``, so this module never imports Spark.
SQL NULL propagates through every function unless its Python meaning handles ``None`` itself
(``handles_null``); AND/OR follow three-valued logic.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from matview.ir import jsonb
from matview.ir.intervals import Interval, shift
from matview.ir.types import (
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    INTEGER_KINDS,
    JSONB,
    MZ_TIMESTAMP,
    NULLTYPE,
    TEXT,
    TIMESTAMP,
    Kind,
    SqlType,
    array_of,
    common_type,
)


class EvalError(Exception):
    """A scalar expression failed on a value (division by zero, overflow, bad cast)."""


@dataclass(frozen=True)
class Function:
    """A registered scalar function.

    ``symbol`` is set for operators printed infix (or prefix when ``arity`` is 1);
    ``returns`` maps argument types to the result type and raises ``TypeError`` when the
    arguments do not fit.
    """

    name: str
    returns: Callable[[list[SqlType]], SqlType]
    python: Callable[..., Any]
    spark: Callable[..., Any]
    arity: tuple[int, int]
    symbol: str | None = None
    handles_null: bool = False
    typed_spark: Callable[..., Any] | None = None
    """When set, the Spark lowering ``typed_spark(F, arg_types, *columns)`` replaces ``spark``."""
    may_fail: bool = False
    """Whether some argument values make it raise (overflow, division by zero, bad input)."""
    costly: bool = False
    """Whether its cost is unbounded in its input (pattern matching can backtrack without
    end): it runs only in Spark, never evaluated in the driver while planning."""


REGISTRY: dict[str, Function] = {}


def register(fn: Function) -> Function:
    REGISTRY[fn.name] = fn
    return fn


def lookup(name: str) -> Function:
    if name not in REGISTRY:
        raise KeyError(f"unknown function {name}")
    return REGISTRY[name]


def by_symbol(symbol: str, arity: int) -> Function:
    for fn in REGISTRY.values():
        if fn.symbol == symbol and fn.arity[0] <= arity <= fn.arity[1]:
            return fn
    raise KeyError(f"unknown operator {symbol}")


def _numeric(types: list[SqlType]) -> SqlType:
    for t in types:
        if not (t.is_numeric or t.kind is Kind.NULL):
            raise TypeError(f"operator does not accept {t}")
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return INT if result.kind is Kind.NULL else result


def _product(types: list[SqlType]) -> SqlType:
    """A product's type: as PostgreSQL, a NUMERIC product keeps every digit, its scale the
    sum of the operands' scales (precision capped at 38)."""
    result = _numeric(types)
    if result.kind is not Kind.NUMERIC:
        return result
    digits = [(t.precision or 38, t.scale or 0) if t.kind is Kind.NUMERIC
              else (10 if t.kind is Kind.INT else 19, 0) for t in types]
    scale = min(38, sum(s for _, s in digits))
    return SqlType(Kind.NUMERIC, min(38, max(sum(p for p, _ in digits), scale + 1)), scale)


def _comparable(types: list[SqlType]) -> SqlType:
    common_type(types[0], types[1])
    return BOOLEAN


def _boolean(types: list[SqlType]) -> SqlType:
    for t in types:
        if t.kind not in (Kind.BOOLEAN, Kind.NULL):
            raise TypeError(f"argument of boolean operator must be boolean, not {t}")
    return BOOLEAN


def _text(types: list[SqlType]) -> SqlType:
    return TEXT


def _same(types: list[SqlType]) -> SqlType:
    return _numeric(types[:1])


def _common(types: list[SqlType]) -> SqlType:
    result = types[0]
    for t in types[1:]:
        result = common_type(result, t)
    return result


def _int_divide(a: int, b: int) -> int:
    if b == 0:
        raise EvalError("division by zero")
    quotient = abs(a) // abs(b)
    return quotient if (a >= 0) == (b >= 0) else -quotient


def _divide(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool):
        return _int_divide(a, b)
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, Decimal) or isinstance(b, Decimal):
        return Decimal(a) / Decimal(b)
    return a / b


def _modulo(a: Any, b: Any) -> Any:
    if b == 0:
        raise EvalError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        return a - b * _int_divide(a, b)
    if isinstance(a, Decimal) and isinstance(b, Decimal):
        return a % b  # Decimal's remainder takes the dividend's sign, as SQL's
    return math.fmod(a, b)


def _spark_divide(F: Any, types: list[SqlType], a: Any, b: Any) -> Any:
    return F.call_function("div", a, b) if _is_integral(types) else a / b


_JSON_VALUES = (Kind.BOOLEAN, Kind.TEXT, Kind.NUMERIC, Kind.DOUBLE, Kind.NULL, *INTEGER_KINDS)
"""The types ``to_jsonb`` takes (``jsonb.of_scalar``; a JSONB value is itself)."""


def _to_jsonb_type(types: list[SqlType]) -> SqlType:
    if types[0].kind not in _JSON_VALUES:
        raise TypeError(f"function to_jsonb({types[0]}) does not exist")
    return JSONB


def _spark_to_jsonb(F: Any, types: list[SqlType], a: Any) -> Any:
    """``jsonb.of_scalar`` on Spark: a number's text read as JSON and printed (Spark's
    VARIANT gives the canonical form), a string quoted by Spark's JSON writer (its array of
    one element, without the brackets)."""
    t = types[0]
    if t.kind is Kind.BOOLEAN:
        return F.when(a, F.lit("true")).when(~a, F.lit("false"))
    if t.kind is Kind.TEXT:
        quoted = F.to_json(F.array(a))
        return F.when(a.isNotNull(), quoted.substr(F.lit(2), F.length(quoted) - 2))
    if t.kind is Kind.NULL:
        return F.lit(None).cast("string")
    if t.kind in INTEGER_KINDS:
        return a.cast("string")
    number = F.to_json(F.parse_json(a.cast("string")))
    if t.kind is Kind.NUMERIC:
        return number
    return (F.when(F.isnan(a), F.lit('"NaN"')).when(a == float("inf"), F.lit('"Infinity"'))
            .when(a == float("-inf"), F.lit('"-Infinity"')).otherwise(number))


def _like(text: str, pattern: str) -> bool:
    regex = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise EvalError("LIKE pattern must not end with escape character")
            regex.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        regex.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(regex), text, re.DOTALL) is not None


def _and(*values: Any) -> Any:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(*values: Any) -> Any:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def _round(x: Any, digits: int = 0) -> Any:
    """Round half away from zero to ``digits`` decimal places (negative: tens, hundreds...)."""
    if isinstance(x, float) and not math.isfinite(x):
        return x
    exact = Decimal(repr(x)) if isinstance(x, float) else Decimal(x)
    if exact.adjusted() - digits > 60:
        return x  # no digit at that place: already a whole number of that unit
    rounded = exact.quantize(Decimal(1).scaleb(-digits), ROUND_HALF_UP)
    if isinstance(x, float):
        return float(rounded)
    return int(rounded) if isinstance(x, int) else rounded


def _substr(s: str, start: int, length: int | None = None) -> str:
    """PostgreSQL's ``substring(s FROM start FOR length)``: the characters at positions
    ``start`` to ``start + length - 1`` (counted from 1) that ``s`` has, so a start below 1
    shortens the result; without ``length``, to the end. A negative length is an error."""
    if length is not None and length < 0:
        raise EvalError("negative substring length not allowed")
    end = None if length is None else start + length - 1
    begin = max(start, 1) - 1
    return s[begin:] if end is None else s[begin:max(end, 0)]


def _spark_substr(F: Any, s: Any, start: Any, length: Any = None) -> Any:
    """``_substr`` in Spark, whose ``substr`` counts a start below 1 from the end of the
    text: the start is raised to 1 and the length shortened to match (computed as BIGINT,
    so ``start + length`` cannot overflow; a negative length gives '' here, its error is
    ``runtime.checked``'s)."""
    first = F.when(start < 1, F.lit(1)).otherwise(start)
    if length is None:
        return F.substr(s, first)
    count = start.cast("bigint") + length - first
    return F.substr(s, first, F.when(count < 0, F.lit(0)).otherwise(count).cast("int"))


def _strpos(s: str, sub: str) -> int:
    """``strpos(s, sub)``, ``position(sub IN s)``: where ``sub`` first starts in ``s``,
    counted from 1 (0 when it is not there, 1 when it is empty)."""
    return s.find(sub) + 1


def _is_integral(types: Sequence[SqlType]) -> bool:
    return all(t.kind in INTEGER_KINDS + (Kind.NULL,) for t in types)


def _additive(types: list[SqlType]) -> SqlType:
    """``+``/``-``: numbers; a TIMESTAMP or DATE shifted by an INTERVAL (it second), a
    TIMESTAMP (as PostgreSQL: a date plus an interval is a timestamp); a DATE shifted by an
    INT number of days (it second), a DATE."""
    kinds = [t.kind for t in types]
    if Kind.INTERVAL in kinds:
        if kinds[0] in (Kind.TIMESTAMP, Kind.DATE, Kind.NULL) and kinds[1] is Kind.INTERVAL:
            return TIMESTAMP
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    if Kind.DATE in kinds:
        if kinds[0] is Kind.DATE and kinds[1] in (Kind.INT, Kind.NULL):
            return DATE
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return _numeric(types)


def _shifted(moment: date, by: Interval | int) -> date:
    """``moment`` moved by the interval ``by`` (see ``intervals.shift``: months first, the
    day clamped to the month's length) or by ``by`` days; out of the representable years
    (1 to 9999) it is an error, as PostgreSQL's beyond its own range."""
    try:
        return shift(moment, by) if isinstance(by, Interval) else moment + timedelta(days=by)
    except (OverflowError, ValueError):
        kind = "date" if isinstance(by, int) else "timestamp"
        raise EvalError(f"{kind} out of range") from None


def _add(a: Any, b: Any) -> Any:
    return _shifted(a, b) if isinstance(a, date) else a + b


def _sub(a: Any, b: Any) -> Any:
    return _shifted(a, -b) if isinstance(a, date) else a - b


def _spark_additive(operator: Callable[[Any, Any], Any], on_dates: str) -> Callable[..., Any]:
    """A Spark ``+``/``-`` whose DATE and INT operands add days with ``on_dates``
    (``date_add``/``date_sub``); other operands take ``operator``."""
    def lowering(F: Any, types: list[SqlType], a: Any, b: Any) -> Any:
        if types[0].kind is Kind.DATE and types[1].kind is not Kind.INTERVAL:
            return getattr(F, on_dates)(a, b)
        return operator(a, b)
    return lowering


register(Function("add", _additive, _add, lambda F, a, b: a + b, (2, 2), "+",
                  typed_spark=_spark_additive(lambda a, b: a + b, "date_add"), may_fail=True))
register(Function("sub", _additive, _sub, lambda F, a, b: a - b, (2, 2), "-",
                  typed_spark=_spark_additive(lambda a, b: a - b, "date_sub"), may_fail=True))


def _two_dates(types: list[SqlType]) -> SqlType:
    """``days_between(a, b)`` is ``a - b`` of two dates: the number of days from ``b`` to
    ``a``, an INT (a function apart from ``sub``, whose integer results are sums checked for
    overflow)."""
    if any(t.kind not in (Kind.DATE, Kind.NULL) for t in types):
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return INT


register(Function("days_between", _two_dates, lambda a, b: (a - b).days,
                  lambda F, a, b: F.datediff(a, b), (2, 2)))
register(Function("mul", _product, lambda a, b: a * b, lambda F, a, b: a * b, (2, 2), "*",
                  may_fail=True))

register(Function("div", _numeric, _divide, lambda F, a, b: a / b, (2, 2), "/",
                  typed_spark=_spark_divide, may_fail=True))
def _real(types: list[SqlType]) -> SqlType:
    _numeric(types)
    return DOUBLE


# The square root of a non-negative number, for stddev (ir/aggregates.py). SQL's sqrt() is not
# bound: Spark answers NaN for a negative argument where PostgreSQL raises an error.
register(Function("sqrt", _real, math.sqrt, lambda F, a: F.sqrt(a), (1, 1)))
register(Function("mod", _numeric, _modulo, lambda F, a, b: a % b, (2, 2), "%", may_fail=True))
register(Function("neg", _same, lambda a: -a, lambda F, a: -a, (1, 1), "-", may_fail=True))

for _name, _symbol, _py, _sp in (
    ("eq", "=", lambda a, b: a == b, lambda F, a, b: a == b),
    ("ne", "<>", lambda a, b: a != b, lambda F, a, b: a != b),
    ("lt", "<", lambda a, b: a < b, lambda F, a, b: a < b),
    ("le", "<=", lambda a, b: a <= b, lambda F, a, b: a <= b),
    ("gt", ">", lambda a, b: a > b, lambda F, a, b: a > b),
    ("ge", ">=", lambda a, b: a >= b, lambda F, a, b: a >= b),
):
    register(Function(_name, _comparable, _py, _sp, (2, 2), _symbol))

register(Function("and", _boolean, _and, lambda F, a, b: a & b, (2, 2), "AND", True))
register(Function("or", _boolean, _or, lambda F, a, b: a | b, (2, 2), "OR", True))
register(Function("not", _boolean, lambda a: not a, lambda F, a: ~a, (1, 1), "NOT"))
register(Function("is_null", lambda t: BOOLEAN, lambda a: a is None,
                  lambda F, a: a.isNull(), (1, 1), handles_null=True))
register(Function("like", lambda t: BOOLEAN, _like, lambda F, a, b: F.like(a, b), (2, 2), "LIKE",
                  may_fail=True, costly=True))
register(Function("concat", _text, lambda a, b: a + b,
                  lambda F, a, b: F.concat(a, b), (2, 2), "||"))
register(Function("lower", _text, str.lower, lambda F, a: F.lower(a), (1, 1)))
register(Function("upper", _text, str.upper, lambda F, a: F.upper(a), (1, 1)))
register(Function("length", lambda t: INT, len, lambda F, a: F.char_length(a), (1, 1)))
register(Function("substr", _text, _substr, _spark_substr, (2, 3), may_fail=True))
register(Function("strpos", lambda t: INT, _strpos, lambda F, s, sub: F.instr(s, sub), (2, 2)))
register(Function("to_jsonb", _to_jsonb_type, jsonb.of_scalar, lambda F, a: a,
                  (1, 1), typed_spark=_spark_to_jsonb))
register(Function("abs", _same, abs, lambda F, a: F.abs(a), (1, 1), may_fail=True))
register(Function("round", _same, _round,
                  lambda F, a, d=None: F.round(a) if d is None else F.round(a, d), (1, 2),
                  may_fail=True))
register(Function("coalesce", _common,
                  lambda *a: next((v for v in a if v is not None), None),
                  lambda F, *a: F.coalesce(*a), (1, 10_000), handles_null=True))
register(Function("nullif", lambda t: t[0], lambda a, b: None if a == b else a,
                  lambda F, a, b: F.nullif(a, b), (2, 2), handles_null=True))

MORE_THAN_ONE_ROW = "more than one row returned by a subquery used as an expression"


def _single_row(rows: int | None, value: object) -> object:
    """``single_row(n, v)``: a scalar subquery's value ``v`` given its number of rows ``n``
    (see ``ir.decorrelate``): ``v``, or the error of a subquery returning several rows
    when ``n > 1``. Not callable from SQL."""
    if rows is not None and rows > 1:
        raise EvalError(MORE_THAN_ONE_ROW)
    return value


register(Function("single_row", lambda t: t[1], _single_row, lambda F, rows, value: value,
                  (2, 2), handles_null=True, may_fail=True))


WHOLE_NUMERIC = SqlType(Kind.NUMERIC, 38, 0)
"""PostgreSQL's (unconstrained) ``numeric`` holding whole numbers, as matview types it."""
MICROS_NUMERIC = SqlType(Kind.NUMERIC, 38, 6)
"""PostgreSQL's ``numeric`` holding a number of seconds to the microsecond."""
_EPOCH = datetime(1970, 1, 1)


def _seconds(moment: datetime) -> Decimal:
    return Decimal(moment.second * 1_000_000 + moment.microsecond).scaleb(-6)


def _epoch(moment: date) -> Decimal | int:
    """Seconds since 1970-01-01 00:00 (the midnight that starts a date)."""
    if isinstance(moment, datetime):
        return Decimal((moment - _EPOCH) // timedelta(microseconds=1)).scaleb(-6)
    return (moment - _EPOCH.date()).days * 86_400


def _spark_epoch(F: Any, moment: Any) -> Any:
    return F.unix_micros(moment.cast("timestamp")).cast("decimal(38,0)") / 1_000_000


@dataclass(frozen=True)
class _Field:
    """A field ``extract`` reads: its value in Python (of a ``date`` or ``datetime``) and in
    Spark, whether dates have it, and whether it counts seconds to the microsecond."""

    python: Callable[[Any], Any]
    spark: Callable[[Any, Any], Any]
    of_dates: bool = True
    fractional: bool = False


EXTRACT_FIELDS = {
    "year": _Field(lambda v: v.year, lambda F, v: F.year(v)),
    "quarter": _Field(lambda v: (v.month + 2) // 3, lambda F, v: F.quarter(v)),
    "month": _Field(lambda v: v.month, lambda F, v: F.month(v)),
    "day": _Field(lambda v: v.day, lambda F, v: F.dayofmonth(v)),
    "dow": _Field(lambda v: v.isoweekday() % 7, lambda F, v: F.dayofweek(v) - 1),
    "doy": _Field(lambda v: v.timetuple().tm_yday, lambda F, v: F.dayofyear(v)),
    "hour": _Field(lambda v: v.hour, lambda F, v: F.hour(v), of_dates=False),
    "minute": _Field(lambda v: v.minute, lambda F, v: F.minute(v), of_dates=False),
    "second": _Field(_seconds, lambda F, v: F.extract(F.lit("SECOND"), v), of_dates=False,
                     fractional=True),
    "epoch": _Field(_epoch, _spark_epoch, fractional=True),
}
"""``extract(field FROM x)`` as PostgreSQL computes it: ``dow`` counts from Sunday (0),
``second`` includes the fraction, ``epoch`` counts seconds since 1970-01-01 00:00; each is
the function ``extract_<field>`` of one DATE or TIMESTAMP argument. The result is
PostgreSQL's numeric: NUMERIC(38,6) for ``second`` and a timestamp's ``epoch``, else
NUMERIC(38,0); time fields of a date are an error, as in PostgreSQL."""


def _extract_type(field: str, spec: _Field) -> Callable[[list[SqlType]], SqlType]:
    def returns(types: list[SqlType]) -> SqlType:
        kinds = (Kind.TIMESTAMP, Kind.NULL) + ((Kind.DATE,) if spec.of_dates else ())
        if types[0].kind not in kinds:
            raise TypeError(f'unit "{field}" not supported for type {types[0]}')
        return MICROS_NUMERIC if spec.fractional and types[0].kind is not Kind.DATE else (
            WHOLE_NUMERIC)
    return returns


for _field, _spec in EXTRACT_FIELDS.items():
    register(Function(f"extract_{_field}", _extract_type(_field, _spec), _spec.python,
                      _spec.spark, (1, 1)))


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


TRUNCATIONS: dict[str, Callable[[datetime], datetime]] = {
    "year": lambda v: _midnight(v).replace(month=1, day=1),
    "quarter": lambda v: _midnight(v).replace(month=v.month - (v.month - 1) % 3, day=1),
    "month": lambda v: _midnight(v).replace(day=1),
    "week": lambda v: _midnight(v) - timedelta(days=v.weekday()),
    "day": _midnight,
    "hour": lambda v: v.replace(minute=0, second=0, microsecond=0),
    "minute": lambda v: v.replace(second=0, microsecond=0),
    "second": lambda v: v.replace(microsecond=0),
}
"""``date_trunc('unit', ts)``: the TIMESTAMP ``ts`` with the fields below the unit at their
first value (a week starts on Monday); each is the function ``date_trunc_<unit>``."""


def _timestamp(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (Kind.TIMESTAMP, Kind.NULL):
        raise TypeError(f"function date_trunc does not accept {types[0]}")
    return TIMESTAMP


def _spark_truncation(unit: str) -> Callable[[Any, Any], Any]:
    return lambda F, v: F.date_trunc(unit, v)


for _unit, _truncate in TRUNCATIONS.items():
    register(Function(f"date_trunc_{_unit}", _timestamp, _truncate, _spark_truncation(_unit),
                      (1, 1)))


def _not_evaluable(*args: Any) -> Any:
    raise EvalError("mz_now() can only be evaluated in a temporal filter")


register(Function("mz_now", lambda t: MZ_TIMESTAMP, _not_evaluable, _not_evaluable, (0, 0),
                  handles_null=True))


def _array_type(types: list[SqlType]) -> SqlType:
    element = NULLTYPE
    for t in types:
        element = common_type(element, t)
    return array_of(element)


register(Function("array", _array_type, lambda *a: tuple(a), lambda F, *a: F.array(*a),
                  (0, 10_000), handles_null=True))
