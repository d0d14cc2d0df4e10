"""TIME (``time without time zone``): a time of day to the microsecond.

Python values (the reference interpreter's, and the API's) are ``datetime.time``; Spark and
Arrow hold microseconds since midnight (a BIGINT), converted at the edges (``micros``,
``of_micros``). Arithmetic goes through casts (``evaluate.cast_value``, the Spark lowering's
``compile_cast``): a time as a TIMESTAMP is that time on 1970-01-01, so ``time ± interval``
is the time of day of that timestamp shifted (wrapping around midnight, days and months
changing nothing) and ``extract`` reads its fields; ``date + time`` adds the time as an
INTERVAL. Text is read and printed here, in Python and in Spark.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time
from typing import Any

from matview.ir.eval_error import EvalError

MICROS_PER_DAY = 86_400_000_000
EPOCH = date(1970, 1, 1)
"""The day a TIME is placed on to add intervals to it or read its fields."""

_TEXT = re.compile(r"([0-9]{1,2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?")
_SPARK_TEXT = r"^\s*([0-9]{1,2}):([0-9]{2})(:([0-9]{2})(\.([0-9]{1,6}))?)?\s*$"


def micros(value: time) -> int:
    """Microseconds since midnight of ``value``."""
    return ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond


def of_micros(value: int) -> time:
    """The time ``value`` microseconds after midnight."""
    seconds, fraction = divmod(value, 1_000_000)
    return time(seconds // 3600, seconds // 60 % 60, seconds % 60, fraction)


def parse(text: str) -> time:
    """PostgreSQL's ``HH:MM[:SS[.ffffff]]`` (before 24:00, which PostgreSQL also has);
    ``EvalError`` when ``text`` is no time."""
    found = _TEXT.fullmatch(text.strip())
    hour, minute, second, fraction = (found.groups() if found else ("99", "0", "0", None))
    value = (int(hour) * 60 + int(minute)) * 60 + int(second or 0)
    if found is None or int(minute) > 59 or int(second or 0) > 59 or value >= 86_400:
        raise EvalError(f'invalid input syntax for type time without time zone: "{text}"')
    return of_micros(value * 1_000_000 + int((fraction or "").ljust(6, "0")))


def text_of(value: time) -> str:
    """PostgreSQL's text of a time: ``HH:MM:SS`` and the fraction without trailing zeros."""
    text = value.isoformat()
    return text.rstrip("0") if value.microsecond else text


def on_epoch(value: time) -> datetime:
    """``value`` on 1970-01-01, as a TIMESTAMP."""
    return datetime.combine(EPOCH, value)


def spark_parse(F: Any, text: Any) -> Any:
    """Spark's microseconds of the time ``text`` spells (NULL where it spells none)."""
    def group(i: int) -> Any:
        return F.regexp_extract(text, _SPARK_TEXT, i).try_cast("bigint")
    fraction = F.rpad(F.regexp_extract(text, _SPARK_TEXT, 6), 6, "0").try_cast("bigint")
    value = (((group(1) * 60 + group(2)) * 60 + F.coalesce(group(4), F.lit(0))) * 1_000_000
             + F.coalesce(fraction, F.lit(0)))
    fits = (F.regexp_like(text, F.lit(_SPARK_TEXT)) & (group(2) <= 59)
            & (F.coalesce(group(4), F.lit(0)) <= 59) & (value < MICROS_PER_DAY))
    return F.when(fits, value)


def spark_text(F: Any, value: Any) -> Any:
    """Spark's PostgreSQL text of the time ``value`` microseconds after midnight."""
    clock = F.date_format(F.timestamp_micros(value), "HH:mm:ss")
    fraction = F.regexp_replace(F.lpad(F.pmod(value, F.lit(1_000_000)).cast("string"), 6, "0"),
                                "0+$", "")
    return F.when(value.isNotNull(), F.concat(clock, F.when(fraction != "", F.concat(
        F.lit("."), fraction)).otherwise(F.lit(""))))
