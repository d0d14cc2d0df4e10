"""``to_char(x, 'pattern')`` of a DATE or TIMESTAMP: PostgreSQL's template patterns, each
the function ``to_char_<name>`` of one argument (TEXT) with its Python meaning and Spark
lowering, registered by ``ir/functions.py``; ``split`` cuts a pattern into them and the
literal text between them, which the binder joins with ``||`` (``sql/calls.py``).

The patterns: ``YYYY``, ``YY``, ``MM``, ``DDD`` (day of the year), ``DD``, ``HH24``,
``HH12`` and ``HH``, ``MI``, ``SS``, ``MS`` (milliseconds), ``US`` (microseconds), ``Q``
(quarter), in either case; ``AM``/``PM`` (``am``/``pm``: lower case), ``Mon``/``MON``/``mon``
and ``Dy``/``DY``/``dy`` (abbreviated month and weekday names, in the case written). Text
in double quotes is copied, as is every character that is no letter; PostgreSQL's other
patterns and modifiers (``Month``, ``Day``, ``FM``, ``TH``...) and any other letter are
refused (PostgreSQL would copy an unknown letter).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from matview.ir.types import TEXT, TIMESTAMP_KINDS, Kind, SqlType

_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_DAYS = "Mon Tue Wed Thu Fri Sat Sun".split()


def _moment(value: date) -> datetime:
    return value if isinstance(value, datetime) else datetime(value.year, value.month,
                                                              value.day)


def _format(spark_pattern: str, case: str = "") -> Callable[[Any, Any], Any]:
    """Spark's ``date_format`` with ``spark_pattern``, upper- or lower-cased by ``case``."""
    def formatted(F: Any, value: Any) -> Any:
        text = F.date_format(value, spark_pattern)
        return F.upper(text) if case == "upper" else F.lower(text) if case == "lower" else text
    return formatted


@dataclass(frozen=True)
class Pattern:
    """A template pattern: as written, whether its case matters, and its meanings."""

    written: str
    exact_case: bool
    python: Callable[[datetime], str]
    spark: Callable[[Any, Any], Any]


def _hour12(v: datetime) -> str:
    return f"{(v.hour - 1) % 12 + 1:02d}"


def _meridiem(v: datetime) -> str:
    return "PM" if v.hour >= 12 else "AM"


_CASES: dict[str, Callable[[str], str]] = {
    "title": lambda text: text, "upper": str.upper, "lower": str.lower}


def _cased(name: str, title: str, python: Callable[[datetime], str], spark_pattern: str,
           cases: tuple[str, ...] = ("title", "upper", "lower")) -> dict[str, Pattern]:
    """A name pattern (written ``title``) in each of ``cases``: its text in that case
    (``python`` gives the title case), as Spark's ``date_format`` gives it, re-cased."""
    return {f"{name}_{case}": Pattern(_CASES[case](title), True,
                                      lambda v, case=case: _CASES[case](python(v)),
                                      _format(spark_pattern, case))
            for case in cases}


PATTERNS: dict[str, Pattern] = {
    "yyyy": Pattern("YYYY", False, lambda v: f"{v.year:04d}", _format("yyyy")),
    "yy": Pattern("YY", False, lambda v: f"{v.year % 100:02d}", _format("yy")),
    "mm": Pattern("MM", False, lambda v: f"{v.month:02d}", _format("MM")),
    "ddd": Pattern("DDD", False, lambda v: f"{v.timetuple().tm_yday:03d}", _format("DDD")),
    "dd": Pattern("DD", False, lambda v: f"{v.day:02d}", _format("dd")),
    "hh24": Pattern("HH24", False, lambda v: f"{v.hour:02d}", _format("HH")),
    "hh12": Pattern("HH12", False, _hour12, _format("hh")),
    "hh": Pattern("HH", False, _hour12, _format("hh")),
    "mi": Pattern("MI", False, lambda v: f"{v.minute:02d}", _format("mm")),
    "ss": Pattern("SS", False, lambda v: f"{v.second:02d}", _format("ss")),
    "ms": Pattern("MS", False, lambda v: f"{v.microsecond // 1000:03d}", _format("SSS")),
    "us": Pattern("US", False, lambda v: f"{v.microsecond:06d}", _format("SSSSSS")),
    "q": Pattern("Q", False, lambda v: str((v.month - 1) // 3 + 1),
                 lambda F, v: F.quarter(v).cast("string")),
    **_cased("am", "AM", _meridiem, "a", ("upper", "lower")),
    **_cased("pm", "PM", _meridiem, "a", ("upper", "lower")),
    **_cased("mon", "Mon", lambda v: _MONTHS[v.month - 1], "MMM"),
    **_cased("dy", "Dy", lambda v: _DAYS[v.weekday()], "EEE"),
}
"""Each pattern by the name of its function (``to_char_<name>``). Where one written form
starts another (``HH`` and ``HH24``, ``DD`` and ``DDD``), ``split`` tries the longest first."""

_BY_LENGTH = sorted(PATTERNS.items(), key=lambda item: -len(item[1].written))

_NOT_BUILT = ("MONTH", "SSSSS", "SSSS", "IYYY", "A.M.", "P.M.", "B.C.", "A.D.", "DAY", "IYY",
              "FM", "FX", "TH", "SP", "IW", "ID", "WW", "CC", "TZ", "OF", "BC", "AD", "RM",
              "FF")
"""PostgreSQL's patterns (and modifiers) matview does not have, which must not be read as
ones it has (``Month`` as ``Mon`` then ``th``), longest first."""


def returns(types: list[SqlType]) -> SqlType:
    """The type rule of every ``to_char_<name>``: TEXT of a DATE, TIMESTAMP or TIMESTAMPTZ
    (in the session time zone, UTC)."""
    if types[0].kind not in (Kind.DATE, Kind.NULL, *TIMESTAMP_KINDS):
        raise TypeError(f"function to_char({types[0]}, text) is not supported")
    return TEXT


def python_meaning(name: str) -> Callable[[date], str]:
    pattern = PATTERNS[name]
    return lambda value: pattern.python(_moment(value))


def split(template: str) -> list[tuple[str, str]]:
    """``template`` as ("pattern", name) and ("text", literal) parts; raises ``ValueError``
    naming a letter that starts no pattern."""
    parts: list[tuple[str, str]] = []
    at = 0
    while at < len(template):
        rest = template[at:]
        if rest[0] == '"':
            end = rest.find('"', 1)
            if end < 0:
                raise ValueError('unterminated quoted text in to_char\'s pattern')
            parts.append(("text", rest[1:end]))
            at += end + 1
            continue
        missing = next((p for p in _NOT_BUILT if rest.upper().startswith(p)), None)
        if missing is not None:
            raise ValueError(f'to_char\'s pattern "{rest[:len(missing)]}" is not supported')
        found = next((name for name, p in _BY_LENGTH if (
            rest.startswith(p.written) if p.exact_case
            else rest.upper().startswith(p.written))), None)
        if found is not None:
            parts.append(("pattern", found))
            at += len(PATTERNS[found].written)
        elif rest[0].isalpha():
            raise ValueError(f'to_char\'s pattern has "{rest[0]}", which starts no pattern '
                             "matview has; quote text to copy it")
        else:
            parts.append(("text", rest[0]))
            at += 1
    return parts
