"""INTERVAL values: a number of months, days and microseconds, kept apart as PostgreSQL does
(a month is not a fixed number of days, nor a day of hours across a DST change).

Text forms follow PostgreSQL's input: unit phrases ``'1 year 2 months 3 days 4 hours'``
(singular, plural and the usual abbreviations), an optional ``hh:mm[:ss[.ffffff]]`` clock part
and a leading ``-`` on any number. ``render`` prints PostgreSQL's output form
(``1 year 2 mons 3 days 04:05:06.5``), which ``parse`` reads back.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MICROS = {"microsecond": 1, "millisecond": 1000, "second": 1_000_000, "minute": 60_000_000,
          "hour": 3_600_000_000}
_UNITS = {
    "us": "microsecond", "usec": "microsecond", "usecs": "microsecond",
    "microsecond": "microsecond", "microseconds": "microsecond",
    "ms": "millisecond", "msec": "millisecond", "msecs": "millisecond",
    "millisecond": "millisecond", "milliseconds": "millisecond",
    "s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
    "m": "minute", "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "d": "day", "day": "day", "days": "day",
    "w": "week", "week": "week", "weeks": "week",
    "mon": "month", "mons": "month", "month": "month", "months": "month",
    "y": "year", "yr": "year", "yrs": "year", "year": "year", "years": "year",
}
_TOKEN = re.compile(
    r"\s*(?:(?P<clock>[+-]?\d+:\d{1,2}(?::\d{1,2}(?:\.\d{1,6})?)?)"
    r"|(?P<number>[+-]?\d+(?:\.\d+)?)\s*(?P<unit>[a-z]+))", re.IGNORECASE)


def unit_name(word: str) -> str | None:
    """The unit ``word`` names (case-insensitive: ``'Mins'`` is ``'minute'``), as interval
    text spells units and as PostgreSQL reads the units of ``extract`` and ``date_trunc``;
    None when it names none of these."""
    return _UNITS.get(word.lower())


class IntervalError(ValueError):
    """Text that is no interval."""


@dataclass(frozen=True, order=False)
class Interval:
    """``months`` months plus ``days`` days plus ``micros`` microseconds. Intervals are
    ordered by ``length`` (PostgreSQL's order), then by their fields; equal when their
    fields are."""

    months: int = 0
    days: int = 0
    micros: int = 0

    def __neg__(self) -> Interval:
        return Interval(-self.months, -self.days, -self.micros)

    def scaled(self, factor: int) -> Interval:
        return Interval(self.months * factor, self.days * factor, self.micros * factor)

    @property
    def length(self) -> int:
        """Microseconds with 30-day months and 24-hour days, by which PostgreSQL compares
        intervals: ``'1 month'`` is as long as ``'30 days'``."""
        return (self.months * 30 + self.days) * 86_400_000_000 + self.micros

    def _order(self) -> tuple[int, int, int, int]:
        return (self.length, self.months, self.days, self.micros)

    def __lt__(self, other: Interval) -> bool:
        return self._order() < other._order()

    def __le__(self, other: Interval) -> bool:
        return self._order() <= other._order()

    def __gt__(self, other: Interval) -> bool:
        return self._order() > other._order()

    def __ge__(self, other: Interval) -> bool:
        return self._order() >= other._order()

    @property
    def is_zero(self) -> bool:
        return not (self.months or self.days or self.micros)

    @property
    def fixed_micros(self) -> int | None:
        """The length in microseconds when the interval has no months or days, else None."""
        return None if self.months or self.days else self.micros


def parse(text: str) -> Interval:
    """The interval ``text`` spells; raises ``IntervalError`` when it spells none."""
    months = days = micros = 0
    at, source = 0, text.strip()
    if not source:
        raise IntervalError(f'invalid input syntax for type interval: "{text}"')
    while at < len(source):
        match = _TOKEN.match(source, at)
        if match is None:
            raise IntervalError(f'invalid input syntax for type interval: "{text}"')
        at = match.end()
        if match.group("clock"):
            micros += _clock(match.group("clock"))
            continue
        number, unit = match.group("number"), unit_name(match.group("unit"))
        if unit is None:
            raise IntervalError(f'invalid input syntax for type interval: "{text}"')
        if unit in MICROS:
            micros += round(float(number) * MICROS[unit]) if "." in number else (
                int(number) * MICROS[unit])
        elif "." in number:
            raise IntervalError(f'fractional {unit}s are not supported in interval "{text}"')
        elif unit == "day":
            days += int(number)
        elif unit == "week":
            days += 7 * int(number)
        elif unit == "month":
            months += int(number)
        else:
            months += 12 * int(number)
    return Interval(months, days, micros)


def _clock(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    parts = text.lstrip("+-").split(":")
    hours, minutes = int(parts[0]), int(parts[1])
    seconds = float(parts[2]) if len(parts) > 2 else 0.0
    return sign * (hours * MICROS["hour"] + minutes * MICROS["minute"]
                   + round(seconds * MICROS["second"]))


def render(value: Interval) -> str:
    """PostgreSQL's output form of ``value``: ``1 year 2 mons 3 days 04:05:06.5``; a part
    after a negative one has its sign, ``-1 days +02:00:00``."""
    parts, before = [], False
    years = abs(value.months) // 12 * (1 if value.months >= 0 else -1)
    for count, unit in ((years, "year"), (value.months - 12 * years, "mon"),
                        (value.days, "day")):
        if count:
            parts.append(f"{'+' if before and count > 0 else ''}{count} {unit}"
                         f"{'s' if count != 1 else ''}")
            before = count < 0
    if value.micros or not parts:
        total = abs(value.micros)
        hours, rest = divmod(total, MICROS["hour"])
        minutes, rest = divmod(rest, MICROS["minute"])
        seconds, fraction = divmod(rest, MICROS["second"])
        clock = f"{hours:02d}:{minutes:02d}:{seconds:02d}"
        if fraction:
            clock += f".{fraction:06d}".rstrip("0")
        parts.append(("-" if value.micros < 0 else "+" if before else "") + clock)
    return " ".join(parts)


def shift(moment: datetime | date, by: Interval) -> datetime:
    """``moment + by`` as PostgreSQL adds: months first (the day clamped to the month's
    length), then days, then microseconds."""
    if not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    if by.months:
        month_index = moment.year * 12 + moment.month - 1 + by.months
        year, month = divmod(month_index, 12)
        day = min(moment.day, calendar.monthrange(year, month + 1)[1])
        moment = moment.replace(year=year, month=month + 1, day=day)
    return moment + timedelta(days=by.days, microseconds=by.micros)
