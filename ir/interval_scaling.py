"""An interval times or divided by a number: PostgreSQL's ``interval * float8`` and
``interval / float8`` (``interval_mul``, ``interval_div``), in Python and in Spark.

The number is a DOUBLE PRECISION (SQL's integers and NUMERICs are cast to it, as PostgreSQL
casts them). Each field is scaled in double arithmetic: months and days keep the whole part
of their product (truncated toward zero); the fraction of the months cascades into days at
30 days a month, rounded to the microsecond (of a day), its whole days added to the days;
what remains of a day (the days' fraction and the months' days' fraction) cascades into
seconds at 24 hours a day, rounded to the microsecond; whole days among those seconds move
to the days; the microseconds are the product of the microseconds plus those seconds,
rounded to the nearest (half to even). Nothing cascades up: ``'1 mon' / 2`` is
``'15 days'``, ``'1 day' * 1.5`` is ``'1 day 12:00:00'``.

Dividing by zero fails with ``division by zero``; a field out of its range (months and days
32-bit, microseconds 64-bit) with ``interval out of range``, as does a factor that is NaN or
an infinite factor (PostgreSQL gives an infinite interval there, which matview does not
have). Python's floats and Spark's doubles are IEEE doubles, so the two agree to the bit.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from matview.ir.eval_error import EvalError
from matview.ir.interval_values import DAYS_PER_MONTH, spark_bound, spark_struct
from matview.ir.intervals import Interval
from matview.ir.types import INTEGER_KINDS, INTERVAL, Kind, SqlType

SECONDS_PER_DAY = 86_400
INT32, INT64 = 2 ** 31, 2 ** 63
"""The bounds of a 32-bit and a 64-bit field: a value fits when ``-bound <= x < bound``."""
OUT_OF_RANGE = "interval out of range"
DIVISION_BY_ZERO = "division by zero"

Operation = Callable[[Any, Any], Any]


def _scaled_type(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (Kind.INTERVAL, Kind.NULL) or types[1].kind not in (
            *INTEGER_KINDS, Kind.NUMERIC, Kind.DOUBLE, Kind.NULL):
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return INTERVAL


# --- Python -----------------------------------------------------------------------------

def _whole(value: float, bound: int) -> int:
    """``value`` truncated toward zero; out of range when it does not fit ``bound``."""
    if not -bound <= value < bound:  # NaN fits nothing
        raise EvalError(OUT_OF_RANGE)
    return int(value)


def _fitting(value: int, bound: int) -> int:
    """``value``; out of range when it does not fit ``bound``."""
    if not -bound <= value < bound:
        raise EvalError(OUT_OF_RANGE)
    return value


def _to_microsecond(value: float) -> float:
    """``value`` rounded to its sixth decimal (half to even)."""
    return round(value * 1e6) / 1e6


def _python(operation: Operation) -> Callable[[Interval, Any], Interval]:
    """The meaning of ``interval operation factor`` (the module docstring)."""
    def meaning(value: Interval, factor: Any) -> Interval:
        factor = float(factor)
        if operation is operator.truediv and factor == 0:
            raise EvalError(DIVISION_BY_ZERO)
        months_exact = operation(float(value.months), factor)
        days_exact = operation(float(value.days), factor)
        months, days = _whole(months_exact, INT32), _whole(days_exact, INT32)
        month_days = _to_microsecond((months_exact - months) * DAYS_PER_MONTH)
        seconds = _to_microsecond((days_exact - days + month_days - int(month_days))
                                  * SECONDS_PER_DAY)
        carried = int(seconds / SECONDS_PER_DAY) if abs(seconds) >= SECONDS_PER_DAY else 0
        days = _fitting(_fitting(days + carried, INT32) + int(month_days), INT32)
        micros = operation(float(value.micros), factor) + (
            seconds - carried * SECONDS_PER_DAY) * 1e6
        if not -INT64 <= micros < INT64:
            raise EvalError(OUT_OF_RANGE)
        return Interval(months, days, round(micros))
    return meaning


# --- Spark ---------------------------------------------------------------------------

def _spark_whole(F: Any, value: Any, bound: int, to: str) -> Any:
    """``_whole`` in Spark: NULL where out of range (NaN is above every double in Spark)."""
    return F.when((value >= float(-bound)) & (value < float(bound)), value).cast(to)


def _spark_fitting(F: Any, value: Any) -> Any:
    return F.when((value >= -INT32) & (value < INT32), value)


def _spark_to_microsecond(F: Any, value: Any) -> Any:
    return F.rint(value * 1e6) / 1e6


def spark_scaled(F: Any, value: Any, factor: Any, divide: bool) -> tuple[Any, Any]:
    """``value`` (an interval's struct) times ``factor``, or divided by it, as ``_python``
    computes it, in stages each bound once (``interval_values.spark_bound``): the result,
    NULL where it fails, and the message of the failure where it does (NULL elsewhere)."""
    factor = factor.cast("double")
    by = F.when(factor != 0, factor) if divide else factor  # Spark's x / 0 raises

    def exact(s: Any) -> Any:
        def scaled(field: str) -> Any:
            field_value = s["v"][field].cast("double")
            return field_value / s["f"] if divide else field_value * s["f"]
        return F.struct(*(scaled(f).alias(f) for f in ("months", "days", "micros")))

    def truncated(e: Any) -> Any:
        months = _spark_whole(F, e["months"], INT32, "int")
        return F.struct(months.alias("months"),
                        _spark_whole(F, e["days"], INT32, "int").alias("days"),
                        _spark_to_microsecond(F, (e["months"] - months) * DAYS_PER_MONTH
                                              ).alias("month_days"),
                        e["days"].alias("exact_days"), e["micros"].alias("exact_micros"))

    def cascaded(t: Any) -> Any:
        whole_month_days = t["month_days"].cast("int")
        seconds = _spark_to_microsecond(F, (t["exact_days"] - t["days"] + t["month_days"]
                                            - whole_month_days) * SECONDS_PER_DAY)
        return F.struct(t["months"].alias("months"), t["days"].alias("days"),
                        whole_month_days.alias("month_days"), seconds.alias("seconds"),
                        t["exact_micros"].alias("exact_micros"))

    def carried(u: Any) -> Any:
        seconds = u["seconds"]
        whole_days = F.when(F.abs(seconds) >= SECONDS_PER_DAY,
                            (seconds / SECONDS_PER_DAY).cast("int")).otherwise(0)
        micros = F.rint(u["exact_micros"] + (seconds - whole_days * SECONDS_PER_DAY) * 1e6)
        return F.struct(u["months"].alias("months"), _spark_fitting(F, _spark_fitting(
            F, u["days"].cast("bigint") + whole_days) + u["month_days"]).alias("days"),
            _spark_whole(F, micros, INT64, "bigint").alias("micros"))

    stages = F.struct(value.alias("v"), by.alias("f"))
    for stage in (exact, truncated, cascaded, carried):
        stages = spark_bound(F, stages, stage)
    result = spark_bound(F, stages,
                         lambda r: spark_struct(F, r["months"], r["days"], r["micros"]))
    present = value.isNotNull() & factor.isNotNull()
    error = F.when(present & result.isNull(), F.lit(OUT_OF_RANGE))
    if divide:
        error = F.when(present & (factor == 0), F.lit(DIVISION_BY_ZERO)).otherwise(error)
    return result, error


def _spark(divide: bool) -> Callable[..., Any]:
    """The lowering that raises where ``spark_scaled`` fails."""
    def lowering(F: Any, value: Any, factor: Any) -> Any:
        result, error = spark_scaled(F, value, factor, divide)
        return F.when(error.isNull(), result).otherwise(F.raise_error(error))
    return lowering


FUNCTIONS: list[tuple[str, Callable[..., SqlType], Callable[..., Any], Callable[..., Any],
                      tuple[int, int]]] = [
    ("interval_mul", _scaled_type, _python(operator.mul), _spark(False), (2, 2)),
    ("interval_div", _scaled_type, _python(operator.truediv), _spark(True), (2, 2)),
]
"""``interval * number`` and ``interval / number``, as ``interval_values.FUNCTIONS``."""
