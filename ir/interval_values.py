"""INTERVAL values in columns, in Python and in Spark.

A stored interval keeps its months, days and microseconds apart (``intervals.Interval``),
as PostgreSQL does. Spark, Arrow and Parquet hold it as a struct
``<key: decimal(38,0), months: int, days: int, micros: bigint>`` (Spark's calendar interval
can be neither stored nor ordered). ``key`` is its length in microseconds with 30-day months
and 24-hour days, PostgreSQL's order of intervals: ``'1 month' = '30 days'``. Put first, it
makes the struct's own order (Spark's sort, ``min``/``max``, ``greatest``) PostgreSQL's,
equal lengths ordered by their fields, as ``Interval``'s order does in Python. SQL's ``=``
and ``<`` compare keys (``interval_key``), GROUP BY, DISTINCT and UNION group by them
(``sql.interval_keys``); a collection's rows are told apart by all their fields.

The Python API gives an interval as a ``datetime.timedelta`` of its length (months as 30
days, as psycopg does), a ``PgInterval`` that keeps the fields for PostgreSQL's text.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from typing import Any

from matview.ir.eval_error import EvalError
from matview.ir.intervals import Interval, IntervalError, parse, render
from matview.ir.times import MICROS_PER_DAY
from matview.ir.types import BIGINT, INTEGER_KINDS, INTERVAL, NUMERIC_MAX, Kind, SqlType

DAYS_PER_MONTH = 30
YEAR_SECONDS = 31_557_600
"""A year's seconds in an interval's ``epoch``: 365.25 days, as PostgreSQL counts them."""


class PgInterval(timedelta):
    """An interval as the API gives it: a ``timedelta`` of its length (months of 30 days),
    keeping its fields (``interval``) for its PostgreSQL text (``str``)."""

    interval: Interval

    def __str__(self) -> str:
        return render(self.interval)

    def __reduce__(self) -> tuple[Any, tuple[Interval]]:
        return python_value, (self.interval,)


def python_value(value: Interval) -> PgInterval:
    """The API's value of ``value``."""
    result = PgInterval(days=value.months * DAYS_PER_MONTH + value.days,
                        microseconds=value.micros)
    result.interval = value
    return result


def of_python(value: object) -> Interval:
    """The interval an API value spells: an ``Interval``, a ``timedelta`` (days and
    microseconds) or PostgreSQL's interval text; ``EvalError`` for anything else."""
    if isinstance(value, PgInterval):
        return value.interval
    if isinstance(value, Interval):
        return value
    if isinstance(value, timedelta):
        return Interval(0, value.days, value.seconds * 1_000_000 + value.microseconds)
    if isinstance(value, str):
        try:
            return parse(value)
        except IntervalError as error:
            raise EvalError(str(error)) from None
    raise EvalError(f"{value!r} is not an interval")


def arrow_value(value: Interval) -> dict[str, int]:
    """``value`` as its Arrow struct."""
    return {"key": value.length, "months": value.months, "days": value.days,
            "micros": value.micros}


def of_arrow(value: dict[str, Any]) -> Interval:
    """The interval an Arrow struct holds."""
    return Interval(value["months"], value["days"], value["micros"])


# --- the IR's interval functions (registered by ``functions``) --------------------------

def _one_interval(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (Kind.INTERVAL, Kind.NULL):
        raise TypeError(f"function does not accept {types[0]}")
    return INTERVAL


def _two_intervals(types: list[SqlType]) -> SqlType:
    if any(t.kind not in (Kind.INTERVAL, Kind.NULL) for t in types):
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return INTERVAL


def _key_type(types: list[SqlType]) -> SqlType:
    _one_interval(types)
    return NUMERIC_MAX


def _fields_type(types: list[SqlType]) -> SqlType:
    if any(t.kind not in (Kind.NUMERIC, Kind.NULL) + INTEGER_KINDS for t in types):
        raise TypeError(f"function does not accept {', '.join(map(str, types))}")
    return INTERVAL


def _field_type(types: list[SqlType]) -> SqlType:
    _one_interval(types)
    return BIGINT


def _of_fields(months: Any, days: Any, micros: Any) -> Interval:
    return _checked(Interval(int(months), int(days), int(micros)))


def _checked(value: Interval) -> Interval:
    """``value``, or PostgreSQL's error when a field leaves its range."""
    if not (-2**31 <= value.months < 2**31 and -2**31 <= value.days < 2**31
            and -2**63 <= value.micros < 2**63):
        raise EvalError("interval out of range")
    return value


def spark_struct(F: Any, months: Any, days: Any, micros: Any) -> Any:
    """The struct of the interval of Spark columns ``months``, ``days`` and ``micros``
    (NULL when one of them is)."""
    months, days, micros = months.cast("int"), days.cast("int"), micros.cast("bigint")
    total = ((months.cast("decimal(38,0)") * DAYS_PER_MONTH + days) * MICROS_PER_DAY
             + micros).cast("decimal(38,0)")
    return F.when(total.isNotNull(), F.struct(total.alias("key"), months.alias("months"),
                                               days.alias("days"), micros.alias("micros")))


def spark_literal(F: Any, value: Interval) -> Any:
    """An interval constant as its struct."""
    return F.struct(F.lit(Decimal(value.length)).cast("decimal(38,0)").alias("key"),
                    F.lit(value.months).cast("int").alias("months"),
                    F.lit(value.days).cast("int").alias("days"),
                    F.lit(value.micros).cast("bigint").alias("micros"))


def _fields(value: Any) -> tuple[Any, Any, Any]:
    return value["months"], value["days"], value["micros"]


def spark_calendar(F: Any, value: Any) -> Any:
    """An interval's struct as Spark's calendar interval (to shift a timestamp)."""
    months, days, micros = _fields(value)
    seconds = (micros.cast("decimal(38,0)") / 1_000_000).cast("decimal(18,6)")
    return F.make_interval(F.lit(0), months, F.lit(0), days, F.lit(0), F.lit(0), seconds)


def spark_bound(F: Any, value: Any, body: Callable[[Any], Any]) -> Any:
    """``body(v)`` with ``v`` bound to the Spark column ``value`` once (a lambda over a
    one-element array): ``body`` may read ``v`` many times without copying ``value``'s
    expression, so lowerings that read an interval's fields several times stay as large as
    their own steps however large their argument is."""
    return F.transform(F.array(value), body)[0]


def _combined(operator: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def lowering(F: Any, a: Any, b: Any) -> Any:
        return spark_bound(F, F.struct(a.alias("a"), b.alias("b")), lambda p: spark_struct(
            F, *(operator(x, y) for x, y in zip(_fields(p["a"]), _fields(p["b"])))))
    return lowering


def _spark_neg(F: Any, a: Any) -> Any:
    return spark_struct(F, *(-x for x in _fields(a)))


def _python_add(a: Interval, b: Interval) -> Interval:
    return _checked(Interval(a.months + b.months, a.days + b.days, a.micros + b.micros))


def _python_sub(a: Interval, b: Interval) -> Interval:
    return _checked(Interval(a.months - b.months, a.days - b.days, a.micros - b.micros))


def _truncated(value: int, by: int) -> int:
    """``value / by`` truncated toward zero, as C divides."""
    return abs(value) // by * (1 if value >= 0 else -1)


def _field_values(value: Interval) -> dict[str, Decimal]:
    """PostgreSQL's ``extract`` fields of an interval: years and months of its months, its
    days, hours, minutes and seconds (with the fraction) of its time, each with the sign of
    its part; ``epoch`` its seconds with 365.25-day years and 30-day months."""
    years, micros = _truncated(value.months, 12), value.micros
    hours = _truncated(micros, 3_600_000_000)
    minutes = _truncated(micros - hours * 3_600_000_000, 60_000_000)
    seconds = micros - hours * 3_600_000_000 - minutes * 60_000_000
    whole = (years * YEAR_SECONDS + ((value.months - 12 * years) * DAYS_PER_MONTH + value.days)
             * 86_400) * 1_000_000
    return {"year": Decimal(years), "month": Decimal(value.months - 12 * years),
            "day": Decimal(value.days), "hour": Decimal(hours), "minute": Decimal(minutes),
            "second": Decimal(seconds).scaleb(-6), "epoch": Decimal(whole + micros).scaleb(-6)}


def _spark_fields(F: Any, value: Any) -> dict[str, Any]:
    """``_field_values`` in Spark."""
    def truncated(x: Any, by: int) -> Any:
        return ((x - x % by).cast("decimal(38,0)") / by).cast("decimal(38,0)")

    months, days, micros = (x.cast("decimal(38,0)") for x in _fields(value))
    years, time = truncated(months, 12), micros % 3_600_000_000
    whole = (years * YEAR_SECONDS + ((months % 12) * DAYS_PER_MONTH + days) * 86_400) * 1_000_000
    return {"year": years, "month": months % 12, "day": days,
            "hour": truncated(micros, 3_600_000_000), "minute": truncated(time, 60_000_000),
            "second": ((micros % 60_000_000) / 1_000_000).cast("decimal(38,6)"),
            "epoch": ((whole + micros) / 1_000_000).cast("decimal(38,6)")}


_UNIT_MICROS = {"hour": 3_600_000_000, "minute": 60_000_000, "second": 1_000_000}
TRUNCATED = ("year", "quarter", "month", "day", "hour", "minute", "second")
"""The units ``date_trunc`` truncates an interval to (``interval_trunc_<unit>``)."""


def _truncation(value: Interval, unit: str) -> Interval:
    """``date_trunc(unit, value)`` as PostgreSQL's ``interval_trunc``: the fields below
    ``unit`` of its years, months (of the year), days, hours, minutes and seconds zeroed,
    each field keeping the sign of its part (divisions truncate toward zero)."""
    years = _truncated(value.months, 12)
    months = {"year": 12 * years, "quarter": 12 * years + 3 * _truncated(
        value.months - 12 * years, 3)}.get(unit, value.months)
    days = value.days if unit in ("day", *_UNIT_MICROS) else 0
    step = _UNIT_MICROS.get(unit)
    micros = 0 if step is None else _truncated(value.micros, step) * step
    return Interval(months, days, micros)


def _spark_truncation(F: Any, value: Any, unit: str) -> Any:
    """``_truncation`` in Spark (its ``%`` keeps the dividend's sign, as C's)."""
    months, days, micros = _fields(value)
    years = months - months % 12
    months = {"year": years, "quarter": years + (months % 12 - months % 12 % 3)}.get(
        unit, months)
    step = _UNIT_MICROS.get(unit)
    return spark_struct(F, months, days if unit in ("day", *_UNIT_MICROS) else F.lit(0),
                        F.lit(0) if step is None else micros - micros % step)


EXTRACTED = ("year", "month", "day", "hour", "minute", "second", "epoch")
"""The fields ``extract`` reads from an interval (``interval_extract_<field>``)."""


def _extracted_type(field: str) -> Callable[[list[SqlType]], SqlType]:
    def returns(types: list[SqlType]) -> SqlType:
        _one_interval(types)
        return SqlType(Kind.NUMERIC, 38, 6 if field in ("second", "epoch") else 0)
    return returns


FUNCTIONS: list[tuple[str, Callable[..., SqlType], Callable[..., Any], Callable[..., Any],
                      tuple[int, int]]] = [
    ("interval_key", _key_type, lambda a: Decimal(a.length), lambda F, a: a["key"], (1, 1)),
    ("interval_add", _two_intervals, _python_add, _combined(lambda x, y: x + y), (2, 2)),
    ("interval_sub", _two_intervals, _python_sub, _combined(lambda x, y: x - y), (2, 2)),
    ("interval_neg", _one_interval, lambda a: _checked(-a), _spark_neg, (1, 1)),
    ("interval_of", _fields_type, _of_fields, spark_struct, (3, 3)),
    *[(f"interval_{field}", _field_type, lambda a, _f=field: getattr(a, _f),
       lambda F, a, _f=field: a[_f].cast("bigint"), (1, 1))
      for field in ("months", "days", "micros")],
    *[(f"interval_extract_{field}", _extracted_type(field),
       lambda a, _f=field: _field_values(a)[_f],
       lambda F, a, _f=field: _spark_fields(F, a)[_f], (1, 1)) for field in EXTRACTED],
    *[(f"interval_trunc_{unit}", _one_interval, lambda a, _u=unit: _truncation(a, _u),
       lambda F, a, _u=unit: _spark_truncation(F, a, _u), (1, 1)) for unit in TRUNCATED],
]
"""The interval functions: name, type rule, Python meaning, Spark lowering and arity.
``interval_key`` is the NUMERIC length SQL compares; ``interval_of`` makes one of its fields
(``interval_months``...), as ``sum`` adds them; ``interval_extract_<field>`` is
``extract(field FROM interval)``, ``interval_trunc_<unit>`` ``date_trunc('unit', interval)``.
``interval_scaling`` has ``interval * number`` and ``interval / number``."""



def spark_text(F: Any, value: Any) -> Any:
    """Spark's PostgreSQL text of an interval's struct (``intervals.render``)."""
    return spark_bound(F, value, lambda v: _spark_text(F, v))


def _spark_text(F: Any, value: Any) -> Any:
    months, days, micros = _fields(value)
    years, months = ((months - months % 12) / 12).cast("int"), months % 12
    parts, before = [], F.lit(False)
    for count, unit in ((years, "year"), (months, "mon"), (days, "day")):
        parts.append(F.when(count != 0, F.concat(
            F.when(before & (count > 0), F.lit("+")).otherwise(F.lit("")), count.cast("string"),
            F.lit(f" {unit}"), F.when(count != 1, F.lit("s")).otherwise(F.lit("")))))
        before = F.when(count != 0, count < 0).otherwise(before)
    size = F.abs(micros)
    seconds = ((size - size % 1_000_000).cast("decimal(20,0)") / 1_000_000).cast("bigint")
    fraction = F.regexp_replace(F.lpad((size % 1_000_000).cast("string"), 6, "0"), "0+$", "")
    clock = F.concat(
        F.when(micros < 0, F.lit("-")).when(before, F.lit("+")).otherwise(F.lit("")),
        F.format_string("%02d:%02d:%02d", ((seconds - seconds % 3600) / 3600).cast("bigint"),
                        (seconds % 3600 / 60).cast("int"), seconds % 60),
        F.when(fraction != "", F.concat(F.lit("."), fraction)).otherwise(F.lit("")))
    zero = (years == 0) & (months == 0) & (days == 0)
    parts.append(F.when((micros != 0) | zero, clock))
    return F.when(value.isNotNull(), F.concat_ws(" ", *parts))
