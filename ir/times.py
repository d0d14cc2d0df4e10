"""TIME (``time without time zone``): a time of day to the microsecond, from 00:00:00 to
24:00:00 inclusive, as PostgreSQL has it (``'24:00:00'`` is the end of a day: it sorts after
23:59:59.999999 and is equal to nothing else).

The reference interpreter's values are ``datetime.time``, and ``END_OF_DAY`` for 24:00:00,
which ``datetime.time`` cannot hold; Spark and Arrow hold microseconds since midnight (a
BIGINT, 86_400_000_000 at 24:00:00), converted at the edges (``micros``, ``of_micros``).
The Python API gives a ``datetime.time``, and a ``DataError`` for 24:00:00 as psycopg's
loader does (``python_value``).

Arithmetic goes through casts (``casts.cast_value``, the Spark lowering's
``compile_cast``): a time as a TIMESTAMP is that time on 1970-01-01 (24:00:00 the next
midnight), so ``time ± interval`` is the time of day of that timestamp shifted (wrapping
around midnight, days and months changing nothing); a time as an INTERVAL is its
microseconds, so ``time - time`` is the difference of two intervals and ``extract`` and
``date_trunc`` read and truncate an interval's fields; ``date + time`` adds the time as an
INTERVAL. Text is read and printed here, in Python and in Spark: ``HH:MM[:SS[.ffffff]]``,
each field in its range (a second of 60 allowed, as PostgreSQL allows a leap second) and
the whole at most 24:00:00, else the error ``date/time field value out of range``.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta
from typing import Any

from matview.ir.eval_error import EvalError

MICROS_PER_DAY = 86_400_000_000
EPOCH = date(1970, 1, 1)
"""The day a TIME is placed on to add intervals to it or read its fields."""

CLOCK = r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?"
"""A time of day's text: hours, minutes, seconds and their fraction (groups 1 to 4)."""
SPARK_CLOCK = r"([0-9]{1,2}):([0-9]{2})(:([0-9]{2})(\.([0-9]{1,6}))?)?"
"""``CLOCK`` for Spark's ``regexp_extract``: its fields are groups 1, 2, 4 and 6."""
_TEXT = re.compile(CLOCK)
_SPARK_TEXT = rf"^\s*{SPARK_CLOCK}\s*$"


class EndOfDay:
    """TIME ``'24:00:00'`` in the reference interpreter (``END_OF_DAY``): after every
    ``datetime.time``, equal only to itself."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EndOfDay)

    def __hash__(self) -> int:
        return hash(MICROS_PER_DAY)

    def __lt__(self, other: object) -> bool:
        if isinstance(other, time | EndOfDay):
            return False
        return NotImplemented

    def __le__(self, other: object) -> bool:
        if isinstance(other, time | EndOfDay):
            return isinstance(other, EndOfDay)
        return NotImplemented

    def __gt__(self, other: object) -> bool:
        if isinstance(other, time | EndOfDay):
            return isinstance(other, time)
        return NotImplemented

    def __ge__(self, other: object) -> bool:
        if isinstance(other, time | EndOfDay):
            return True
        return NotImplemented

    def __repr__(self) -> str:
        return "END_OF_DAY"

    def __reduce__(self) -> str:
        return "END_OF_DAY"


END_OF_DAY = EndOfDay()
TimeOfDay = time | EndOfDay
"""A TIME value of the reference interpreter."""


def micros(value: TimeOfDay) -> int:
    """Microseconds since midnight of ``value``."""
    if isinstance(value, EndOfDay):
        return MICROS_PER_DAY
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def of_micros(value: int) -> TimeOfDay:
    """The time ``value`` microseconds after midnight (0 to ``MICROS_PER_DAY``)."""
    if value == MICROS_PER_DAY:
        return END_OF_DAY
    seconds, fraction = divmod(value, 1_000_000)
    return time(seconds // 3600, seconds // 60 % 60, seconds % 60, fraction)


def clock_micros(fields: tuple[str | None, ...], text: str) -> int:
    """Microseconds since midnight of the fields of ``CLOCK`` that ``text`` holds; the
    error ``date/time field value out of range`` when one leaves its range or the whole
    passes 24:00:00."""
    hour, minute, second, fraction = (int(fields[0] or 0), int(fields[1] or 0),
                                      int(fields[2] or 0), fields[3])
    value = ((hour * 60 + minute) * 60 + second) * 1_000_000 + int((fraction or "").ljust(6, "0"))
    if hour > 24 or minute > 59 or second > 60 or value > MICROS_PER_DAY:
        raise EvalError(f'date/time field value out of range: "{text}"')
    return value


def parse(text: str) -> TimeOfDay:
    """PostgreSQL's ``HH:MM[:SS[.ffffff]]``, up to 24:00:00; ``EvalError`` when ``text`` is
    no time (see ``clock_micros``)."""
    found = _TEXT.fullmatch(text.strip())
    if found is None:
        raise EvalError(f'invalid input syntax for type time without time zone: "{text}"')
    return of_micros(clock_micros(found.groups(), text))


def text_of(value: TimeOfDay) -> str:
    """PostgreSQL's text of a time: ``HH:MM:SS`` and the fraction without trailing zeros."""
    if isinstance(value, EndOfDay):
        return "24:00:00"
    text = value.isoformat()
    return text.rstrip("0") if value.microsecond else text


def python_value(value: int) -> time:
    """The API's value of the time ``value`` microseconds after midnight: 24:00:00, which
    ``datetime.time`` cannot hold, is a ``DataError`` (``EvalError`` here) as in psycopg,
    whose loader refuses it too."""
    if value >= MICROS_PER_DAY:
        raise EvalError("time 24:00:00 cannot be a Python datetime.time (hour must be in "
                        "0..23): read it as text (::text)")
    result = of_micros(value)
    assert isinstance(result, time)
    return result


def on_epoch(value: TimeOfDay) -> datetime:
    """``value`` on 1970-01-01, as a TIMESTAMP (24:00:00: 1970-01-02's midnight)."""
    return datetime.combine(EPOCH, time()) + timedelta(microseconds=micros(value))


def spark_clock(F: Any, text: Any, pattern: str) -> tuple[Any, Any]:
    """The microseconds since midnight of the ``SPARK_CLOCK`` that ``pattern`` (a Java regular
    expression) finds at its start in Spark column ``text``, and whether its fields are in
    range (``clock_micros``'s rule)."""
    def group(i: int) -> Any:
        return F.coalesce(F.regexp_extract(text, pattern, i).try_cast("bigint"), F.lit(0))
    fraction = F.rpad(F.regexp_extract(text, pattern, 6), 6, "0").try_cast("bigint")
    value = (((group(1) * 60 + group(2)) * 60 + group(4)) * 1_000_000
             + F.coalesce(fraction, F.lit(0)))
    fits = ((group(1) <= 24) & (group(2) <= 59) & (group(4) <= 60)
            & (value <= MICROS_PER_DAY))
    return value, fits


def spark_parse(F: Any, text: Any) -> Any:
    """Spark's microseconds of the time ``text`` spells (NULL where it spells none)."""
    value, fits = spark_clock(F, text, _SPARK_TEXT)
    return F.when(F.regexp_like(text, F.lit(_SPARK_TEXT)) & fits, value)


def spark_parse_error(F: Any, text: Any) -> Any:
    """The message of the error of ``text`` read as a time (where ``spark_parse`` gives
    NULL): out of range when it has a time's form, else invalid."""
    return spark_read_error(F, text, F.regexp_like(text, F.lit(_SPARK_TEXT)),
                            "time without time zone")


def spark_read_error(F: Any, text: Any, formed: Any, name: str) -> Any:
    """The message of the error of ``text`` read as type ``name`` (a time, or a time with a
    time zone): out of range where it is ``formed``, else invalid."""
    return F.when(formed, F.concat(F.lit('date/time field value out of range: "'), text,
                                   F.lit('"'))).otherwise(F.concat(
        F.lit(f'invalid input syntax for type {name}: "'), text, F.lit('"')))


def spark_text(F: Any, value: Any) -> Any:
    """Spark's PostgreSQL text of the time ``value`` microseconds after midnight."""
    clock = F.date_format(F.timestamp_micros(value), "HH:mm:ss")
    fraction = F.regexp_replace(F.lpad(F.pmod(value, F.lit(1_000_000)).cast("string"), 6, "0"),
                                "0+$", "")
    text = F.concat(clock, F.when(fraction != "", F.concat(F.lit("."), fraction))
                    .otherwise(F.lit("")))
    return F.when(value == MICROS_PER_DAY, F.lit("24:00:00")).when(value.isNotNull(), text)
