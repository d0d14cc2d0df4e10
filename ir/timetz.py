"""TIMETZ (``time with time zone``): a time of day (00:00:00 to 24:00:00, as TIME) and a UTC
offset, as PostgreSQL stores it.

PostgreSQL orders two of them by their times in UTC (the time of day less the offset, not
wrapped around midnight: ``'01:00+02'`` is before ``'00:00+00'``), then by their zones
(seconds west of UTC, the negated offset: of ``'10:00+02'`` and ``'09:00+01'``, equal in
UTC, the first is less), and calls two equal only when both agree (``timetz_cmp``). A
``TimeTz`` holds exactly those two numbers, ``key`` (the UTC time in microseconds) and
``zone``, so that its order and equality are PostgreSQL's; Spark, Arrow and Parquet hold
the struct ``<key: bigint, zone: int>``, whose own order (sort, ``min``/``max``,
``greatest``) and equality (GROUP BY, DISTINCT, joins) are then PostgreSQL's too.

Text is ``HH:MM[:SS[.ffffff]]`` then an offset (``+02``, ``-05:30``, ``+0530``, ``Z``; none:
the session time zone's, UTC's) of at most 15:59:59, and prints as ``10:00:00+02``. A
TIME converts to one at offset 0 (the session zone), a TIMESTAMPTZ to its time of day in
UTC; one converts to the TIME of its time of day. ``± interval`` moves the time of day
(wrapping around midnight; the offset stays). The Python API gives a ``datetime.time``
with its offset as ``tzinfo`` (24:00:00 is a ``DataError``, as psycopg's loader has it)
and takes one (naive: at offset 0) or text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any

from matview.ir import times
from matview.ir.eval_error import EvalError
from matview.ir.intervals import Interval
from matview.ir.types import NUMERIC_MAX, TIMETZ, Kind, SqlType

MICROS = 1_000_000
MAX_OFFSET = 16 * 3600 - 1
"""The largest offset PostgreSQL takes (15:59:59), in seconds."""

_OFFSET = r"(?:[zZ]|([+-])([0-9]{1,2})(?::?([0-9]{2}))?(?::?([0-9]{2}))?)"
_TEXT = re.compile(rf"{times.CLOCK}\s*{_OFFSET}?")
_SPARK_TEXT = rf"^\s*{times.SPARK_CLOCK}\s*{_OFFSET}?\s*$"
"""``_TEXT`` for Spark: the clock's groups 1 to 6 (``times.SPARK_CLOCK``), the offset's
sign, hours, minutes and seconds groups 7 to 10."""
_NAME = "time with time zone"


@dataclass(frozen=True, order=True)
class TimeTz:
    """A TIMETZ value: ``key`` its time in UTC, in microseconds (its time of day less its
    offset), and ``zone`` its zone in seconds west of UTC (the offset negated), in
    PostgreSQL's order."""

    key: int
    zone: int

    @staticmethod
    def of(micros: int, offset: int) -> TimeTz:
        """The time of day ``micros`` microseconds after midnight at UTC offset ``offset``
        (seconds east)."""
        return TimeTz(micros - offset * MICROS, -offset)

    @property
    def micros(self) -> int:
        """Its time of day, in microseconds since midnight."""
        return self.key - self.zone * MICROS

    @property
    def offset(self) -> int:
        """Its UTC offset, in seconds east."""
        return -self.zone


def offset_seconds(sign: str | None, fields: tuple[str | None, ...], text: str) -> int:
    """The offset that ``sign`` and the hours, minutes and seconds ``fields`` spell (no sign:
    0, UTC's); the error ``time zone displacement out of range`` past 15:59:59."""
    if sign is None:
        return 0
    hours, minutes, seconds = (int(f or 0) for f in fields)
    if hours > 15 or minutes > 59 or seconds > 59:
        raise EvalError(f'time zone displacement out of range: "{text}"')
    total = (hours * 60 + minutes) * 60 + seconds
    return -total if sign == "-" else total


def parse(text: str) -> TimeTz:
    """The TIMETZ ``text`` spells; ``EvalError`` when it spells none."""
    found = _TEXT.fullmatch(text.strip())
    if found is None:
        raise EvalError(f'invalid input syntax for type {_NAME}: "{text}"')
    groups = found.groups()
    offset = offset_seconds(groups[4], groups[5:], text)
    return TimeTz.of(times.clock_micros(groups[:4], text), offset)


def offset_text(offset: int) -> str:
    """PostgreSQL's text of a UTC offset: ``+02``, ``-05:30``, ``+05:30:15``."""
    hours, rest = divmod(abs(offset), 3600)
    minutes, seconds = divmod(rest, 60)
    text = f"{'-' if offset < 0 else '+'}{hours:02d}"
    if minutes or seconds:
        text += f":{minutes:02d}"
    return text + (f":{seconds:02d}" if seconds else "")


def text_of(value: TimeTz) -> str:
    """PostgreSQL's text of ``value``: its time of day (``times.text_of``), then its offset."""
    return times.text_of(times.of_micros(value.micros)) + offset_text(value.offset)


def python_value(value: TimeTz) -> time:
    """The API's value of ``value``: a ``datetime.time`` with its offset as ``tzinfo``
    (24:00:00 an ``EvalError``, see ``times.python_value``)."""
    return times.python_value(value.micros).replace(
        tzinfo=timezone(timedelta(seconds=value.offset)))


def of_python(value: object) -> TimeTz:
    """The TIMETZ an API value spells: a ``TimeTz``, a ``datetime.time`` (at its offset, a
    naive one at UTC's) or text; ``EvalError`` for anything else."""
    if isinstance(value, TimeTz):
        return value
    if isinstance(value, time):
        offset = value.utcoffset()
        seconds = 0 if offset is None else int(offset.total_seconds())
        if abs(seconds) > MAX_OFFSET:
            raise EvalError(f'time zone displacement out of range: "{value}"')
        return TimeTz.of(times.micros(value.replace(tzinfo=None)), seconds)
    if isinstance(value, str):
        return parse(value)
    raise EvalError(f"{value!r} is not a time with time zone")


def of_timestamp(value: datetime) -> TimeTz:
    """A TIMESTAMPTZ's (or TIMESTAMP's) time of day in UTC, at offset 0."""
    moment = value.astimezone(UTC) if value.tzinfo else value
    return TimeTz.of(times.micros(moment.time()), 0)


def arrow_value(value: TimeTz) -> dict[str, int]:
    """``value`` as its Arrow struct."""
    return {"key": value.key, "zone": value.zone}


def of_arrow(value: dict[str, Any]) -> TimeTz:
    """The TIMETZ an Arrow struct holds."""
    return TimeTz(value["key"], value["zone"])


# --- Spark --------------------------------------------------------------------------------

def spark_struct(F: Any, micros: Any, zone: Any) -> Any:
    """The struct of the time of day ``micros`` in zone ``zone`` (seconds west), Spark
    columns (NULL when either is)."""
    micros, zone = micros.cast("bigint"), zone.cast("int")
    key = micros + zone.cast("bigint") * MICROS
    return F.when(key.isNotNull(), F.struct(key.alias("key"), zone.alias("zone")))


def spark_literal(F: Any, value: TimeTz) -> Any:
    """A TIMETZ constant as its struct."""
    return F.struct(F.lit(value.key).cast("bigint").alias("key"),
                    F.lit(value.zone).cast("int").alias("zone"))


def spark_micros(F: Any, value: Any) -> Any:
    """The time of day (microseconds since midnight) of a TIMETZ struct."""
    return value["key"] - value["zone"].cast("bigint") * MICROS


def spark_parse(F: Any, text: Any) -> Any:
    """The struct of the TIMETZ Spark column ``text`` spells (NULL where it spells none)."""
    micros, fits = times.spark_clock(F, text, _SPARK_TEXT)
    offset, offset_fits = _spark_offset(F, text)
    return F.when(F.regexp_like(text, F.lit(_SPARK_TEXT)) & fits & offset_fits,
                  spark_struct(F, micros, -offset))


def _spark_offset(F: Any, text: Any) -> tuple[Any, Any]:
    """The offset (seconds east) ``text`` ends with, and whether it is in range."""
    def group(i: int) -> Any:
        return F.coalesce(F.regexp_extract(text, _SPARK_TEXT, i).try_cast("int"), F.lit(0))
    size = (group(8) * 60 + group(9)) * 60 + group(10)
    offset = F.when(F.regexp_extract(text, _SPARK_TEXT, 7) == "-", -size).otherwise(size)
    return offset, (group(8) <= 15) & (group(9) <= 59) & (group(10) <= 59)


def spark_parse_error(F: Any, text: Any) -> Any:
    """The message of the error of ``text`` read as a TIMETZ (where ``spark_parse`` gives
    NULL): ``parse``'s."""
    _, offset_fits = _spark_offset(F, text)
    formed = F.regexp_like(text, F.lit(_SPARK_TEXT))
    return F.when(formed & ~offset_fits, F.concat(
        F.lit('time zone displacement out of range: "'), text, F.lit('"'))).otherwise(
        times.spark_read_error(F, text, formed, _NAME))


def spark_text(F: Any, value: Any) -> Any:
    """Spark's PostgreSQL text of a TIMETZ struct (``text_of``)."""
    zone = value["zone"]
    size = F.abs(zone)
    hours, minutes, seconds = (size / 3600).cast("int"), (size % 3600 / 60).cast("int"), size % 60
    offset = F.concat(
        F.when(zone <= 0, F.lit("+")).otherwise(F.lit("-")), F.format_string("%02d", hours),
        F.when((minutes != 0) | (seconds != 0), F.format_string(":%02d", minutes))
        .otherwise(F.lit("")),
        F.when(seconds != 0, F.format_string(":%02d", seconds)).otherwise(F.lit("")))
    return F.when(value.isNotNull(), F.concat(times.spark_text(F, spark_micros(F, value)),
                                              offset))


# --- the IR's TIMETZ functions (registered by ``functions``) ------------------------------

def _shift_type(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (Kind.TIMETZ, Kind.NULL) or types[1].kind not in (
            Kind.INTERVAL, Kind.NULL):
        raise TypeError(f"operator does not accept {types[0]} and {types[1]}")
    return TIMETZ


def _field_type(field: str) -> Callable[[list[SqlType]], SqlType]:
    def returns(types: list[SqlType]) -> SqlType:
        if types[0].kind not in (Kind.TIMETZ, Kind.NULL):
            raise TypeError(f'unit "{field}" not supported for type {types[0]}')
        return SqlType(Kind.NUMERIC, 38, 6) if field == "epoch" else NUMERIC_MAX
    return returns


def _shifted(value: TimeTz, by: Interval) -> TimeTz:
    """``value`` moved by the time part of ``by`` around the clock (PostgreSQL's
    ``timetz_pl_interval``: days and months change nothing)."""
    return TimeTz.of((value.micros + by.micros) % times.MICROS_PER_DAY, value.offset)


def _spark_shifted(F: Any, value: Any, by: Any) -> Any:
    micros = F.pmod(spark_micros(F, value) + by["micros"], F.lit(times.MICROS_PER_DAY))
    return spark_struct(F, micros, value["zone"])


def _truncated(value: int, by: int) -> int:
    """``value / by`` truncated toward zero, as C divides."""
    return abs(value) // by * (1 if value >= 0 else -1)


def _remainder(value: int, by: int) -> int:
    """``value % by`` as C computes it (with ``value``'s sign)."""
    return value - by * _truncated(value, by)


def _spark_truncated(x: Any, by: int) -> Any:
    return ((x - x % by) / by).cast("bigint")  # Spark's % keeps the dividend's sign, as C's


FIELDS: dict[str, tuple[Callable[[TimeTz], Decimal], Callable[[Any, Any], Any]]] = {
    "epoch": (lambda v: Decimal(v.key).scaleb(-6),
              lambda F, v: (v["key"].cast("decimal(38,0)") / MICROS).cast("decimal(38,6)")),
    "timezone": (lambda v: Decimal(v.offset), lambda F, v: -v["zone"]),
    "timezone_hour": (lambda v: Decimal(_truncated(v.offset, 3600)),
                      lambda F, v: _spark_truncated(-v["zone"], 3600)),
    "timezone_minute": (lambda v: Decimal(_remainder(_truncated(v.offset, 60), 60)),
                        lambda F, v: _spark_truncated(-v["zone"], 60) % 60),
}
"""``extract`` of a TIMETZ's own fields, as PostgreSQL computes them: ``epoch`` its seconds
in UTC (not wrapped around midnight), ``timezone`` its offset in seconds, and its hours and
minutes (each truncated toward zero, with the offset's sign); the fields of its time of
day are those of the TIME (``datetime_fields``)."""


FUNCTIONS: list[tuple[str, Callable[..., SqlType], Callable[..., Any], Callable[..., Any],
                      tuple[int, int]]] = [
    ("timetz_shift", _shift_type, _shifted, _spark_shifted, (2, 2)),
    *[(f"timetz_extract_{field}", _field_type(field), python, spark, (1, 1))
      for field, (python, spark) in FIELDS.items()],
]
"""The TIMETZ functions: name, type rule, Python meaning, Spark lowering and arity.
``timetz_shift`` adds an interval (``timetz - interval`` adds its negation);
``timetz_extract_<field>`` is ``extract(field FROM timetz)``."""
