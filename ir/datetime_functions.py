"""The fields of dates and timestamps that ``extract`` reads and ``date_trunc`` truncates
to: each field's Python meaning, Spark lowering and type rule, from which ``ir/functions.py``
registers the functions ``extract_<field>`` and ``date_trunc_<unit>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from matview.ir.types import TIMESTAMP, TIMESTAMP_KINDS, Kind, SqlType

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
        since = moment.replace(tzinfo=None) - _EPOCH  # a TIMESTAMPTZ's fields are UTC's
        return Decimal(since // timedelta(microseconds=1)).scaleb(-6)
    return (moment - _EPOCH.date()).days * 86_400


def _spark_epoch(F: Any, moment: Any) -> Any:
    return F.unix_micros(moment.cast("timestamp")).cast("decimal(38,0)") / 1_000_000


@dataclass(frozen=True)
class ExtractField:
    """A field ``extract`` reads: its value in Python (of a ``date`` or ``datetime``) and in
    Spark, whether dates have it, and whether it counts seconds to the microsecond."""

    python: Callable[[Any], Any]
    spark: Callable[[Any, Any], Any]
    of_dates: bool = True
    fractional: bool = False


EXTRACT_FIELDS = {
    "year": ExtractField(lambda v: v.year, lambda F, v: F.year(v)),
    "quarter": ExtractField(lambda v: (v.month + 2) // 3, lambda F, v: F.quarter(v)),
    "month": ExtractField(lambda v: v.month, lambda F, v: F.month(v)),
    "day": ExtractField(lambda v: v.day, lambda F, v: F.dayofmonth(v)),
    "dow": ExtractField(lambda v: v.isoweekday() % 7, lambda F, v: F.dayofweek(v) - 1),
    "doy": ExtractField(lambda v: v.timetuple().tm_yday, lambda F, v: F.dayofyear(v)),
    "hour": ExtractField(lambda v: v.hour, lambda F, v: F.hour(v), of_dates=False),
    "minute": ExtractField(lambda v: v.minute, lambda F, v: F.minute(v), of_dates=False),
    "second": ExtractField(_seconds, lambda F, v: F.extract(F.lit("SECOND"), v), of_dates=False,
                     fractional=True),
    "epoch": ExtractField(_epoch, _spark_epoch, fractional=True),
}
"""``extract(field FROM x)`` as PostgreSQL computes it: ``dow`` counts from Sunday (0),
``second`` includes the fraction, ``epoch`` counts seconds since 1970-01-01 00:00; each is
the function ``extract_<field>`` of one DATE, TIMESTAMP or TIMESTAMPTZ argument (a
TIMESTAMPTZ's fields are those in the session time zone, UTC). The result is
PostgreSQL's numeric: NUMERIC(38,6) for ``second`` and a timestamp's ``epoch``, else
NUMERIC(38,0); time fields of a date are an error, as in PostgreSQL."""


def extract_type(field: str, spec: ExtractField) -> Callable[[list[SqlType]], SqlType]:
    def returns(types: list[SqlType]) -> SqlType:
        kinds = (*TIMESTAMP_KINDS, Kind.NULL) + ((Kind.DATE,) if spec.of_dates else ())
        if types[0].kind not in kinds:
            raise TypeError(f'unit "{field}" not supported for type {types[0]}')
        return MICROS_NUMERIC if spec.fractional and types[0].kind is not Kind.DATE else (
            WHOLE_NUMERIC)
    return returns


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
first value (a week starts on Monday); each is the function ``date_trunc_<unit>``. A
TIMESTAMPTZ is truncated in the session time zone (UTC) and stays a TIMESTAMPTZ."""


def truncation_type(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (*TIMESTAMP_KINDS, Kind.NULL):
        raise TypeError(f"function date_trunc does not accept {types[0]}")
    return types[0] if types[0].kind is Kind.TIMESTAMPTZ else TIMESTAMP


def spark_truncation(unit: str) -> Callable[[Any, Any], Any]:
    return lambda F, v: F.date_trunc(unit, v)
