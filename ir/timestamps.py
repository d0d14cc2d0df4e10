"""Timestamps in the reference interpreter: a TIMESTAMP is a naive ``datetime``, a TIMESTAMPTZ
an aware one in UTC (matview's session time zone is always UTC, so a TIMESTAMP converts to the
instant whose UTC fields it holds, and back). ISO text is read as either; a UTC offset in it
(``+02``, ``-03:30``, ``Z``) places a TIMESTAMPTZ's instant and is ignored by a DATE or
TIMESTAMP, as PostgreSQL does."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta, timezone

from matview.ir.eval_error import EvalError
from matview.ir.types import Kind, SqlType

_TEXT = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[ T]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:\.([0-9]{1,6}))?)?)?"
    r" ?(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?"
)


def conform(value: date, kind: Kind) -> datetime:
    """``value`` (a date, at its midnight, or a datetime) as a TIMESTAMP (``kind``: the UTC
    fields, naive) or a TIMESTAMPTZ (an instant in UTC)."""
    if not isinstance(value, datetime):
        value = datetime(value.year, value.month, value.day)
    if kind is Kind.TIMESTAMPTZ:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


def parse(text: str, to: SqlType) -> datetime:
    """The ISO date or timestamp ``text`` (``2024-01-31``, ``2024-01-31 12:00:00.5+02``)
    read for ``to`` (DATE, TIMESTAMP or TIMESTAMPTZ: aware only when ``to`` is TIMESTAMPTZ
    and ``text`` has an offset; see ``conform``); ``EvalError`` when it is none."""
    match = _TEXT.fullmatch(text.strip())
    if match is None:
        name = "timestamp with time zone" if to.kind is Kind.TIMESTAMPTZ else str(to)
        raise EvalError(f'invalid input syntax for type {name}: "{text}"')
    *fields, fraction, offset = match.groups()
    year, month, day, hour, minute, second = (int(f or 0) for f in fields)
    micros = int(fraction.ljust(6, "0")) if fraction else 0
    zone = None
    if offset is not None and to.kind is Kind.TIMESTAMPTZ:
        digits = offset.replace(":", "").lstrip("+-Z")
        minutes = int(digits[:2] or 0) * 60 + int(digits[2:] or 0)
        zone = timezone(timedelta(minutes=-minutes if offset[0] == "-" else minutes))
    try:
        moment = datetime(year, month, day, hour, minute, second, micros, zone)
    except ValueError:
        raise EvalError(f'date/time field value out of range: "{text}"') from None
    return moment


def text_of(value: datetime) -> str:
    """PostgreSQL's text of a TIMESTAMP (naive ``value``) or a TIMESTAMPTZ (in UTC, with
    the ``+00`` offset): the fraction of a second without trailing zeros."""
    text = value.replace(tzinfo=None).isoformat(sep=" ")
    text = text.rstrip("0") if value.microsecond else text
    return text + ("+00" if value.tzinfo else "")
