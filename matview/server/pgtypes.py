"""PostgreSQL types of matview's SQL types: OIDs and type modifiers for RowDescription, values
in PostgreSQL's text output format, and parameter and COPY values read from text."""

from __future__ import annotations

import datetime
import decimal
import math
import re
import struct
import uuid
from dataclasses import dataclass

from matview.ir import bytea, interval_values, times, timetz
from matview.ir.eval_error import EvalError
from matview.ir.intervals import Interval

TEXT_OID = 25
UNKNOWN_OID = 705


@dataclass(frozen=True)
class PgType:
    """A PostgreSQL type: its name as ``format_type`` prints it, OID, size, and the OID of
    its array type."""

    name: str
    oid: int
    size: int
    array_oid: int


TYPES = {
    "boolean": PgType("boolean", 16, 1, 1000),
    "int": PgType("integer", 23, 4, 1007),
    "bigint": PgType("bigint", 20, 8, 1016),
    "double": PgType("double precision", 701, 8, 1022),
    "numeric": PgType("numeric", 1700, -1, 1231),
    "text": PgType("text", 25, -1, 1009),
    "date": PgType("date", 1082, 4, 1182),
    "timestamp": PgType("timestamp without time zone", 1114, 8, 1115),
    "timestamptz": PgType("timestamp with time zone", 1184, 8, 1185),
    "time": PgType("time without time zone", 1083, 8, 1183),
    "timetz": PgType("time with time zone", 1266, 12, 1270),
    "interval": PgType("interval", 1186, 16, 1187),
    "jsonb": PgType("jsonb", 3802, -1, 3807),
    "uuid": PgType("uuid", 2950, 16, 2951),
    "bytea": PgType("bytea", 17, -1, 1001),
    "mz_timestamp": PgType("numeric", 1700, -1, 1231),
    "null": PgType("text", 25, -1, 1009),
}
"""By matview type name (``str(SqlType)`` without precision, scale or ``[]``). SUBSCRIBE's
``mz_timestamp`` column is ``numeric``, as in Materialize."""

_NUMERIC = re.compile(r"numeric\((\d+),(\d+)\)")


def column_type(type_name: str) -> tuple[int, int, int, str]:
    """The OID, size, type modifier and ``format_type`` text of matview type ``type_name``
    (as ``Cursor.description`` gives it: ``int``, ``numeric(10,2)``, ``text[]``)."""
    element, array = (type_name[:-2], True) if type_name.endswith("[]") else (type_name, False)
    modifier, shown = -1, None
    found = _NUMERIC.fullmatch(element)
    if found:
        precision, scale = int(found.group(1)), int(found.group(2))
        modifier, shown = ((precision << 16) | scale) + 4, f"numeric({precision},{scale})"
        element = "numeric"
    pg = TYPES.get(element, TYPES["text"])
    shown = shown or pg.name
    if array:
        return pg.array_oid, -1, modifier, shown + "[]"
    return pg.oid, pg.size, modifier, shown


# --- output -----------------------------------------------------------------------------

def float_text(value: float) -> str:
    """A float8 as PostgreSQL prints it (shortest exact digits; exponent form below 1e-4
    and from 1e15 on, like ``%g`` with 15 digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    power = len(digits) + int(exponent) - 1  # of the first digit
    if -4 <= power < 15:
        body = format(decimal.Decimal(repr(value)).copy_abs().normalize(), "f")
    else:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return ("-" if sign else "") + body


def _interval_text(value: object) -> str:
    """An interval (``timedelta`` or Arrow's month-day-nano) in PostgreSQL's style."""
    if isinstance(value, datetime.timedelta):
        months, days, micros = 0, value.days, value.seconds * 1_000_000 + value.microseconds
    else:
        months, days = int(value.months), int(value.days)  # type: ignore[attr-defined]
        micros = int(value.nanoseconds) // 1000  # type: ignore[attr-defined]
    parts = []
    years, months = divmod(months, 12) if months >= 0 else (-((-months) // 12), -((-months) % 12))
    for count, unit in ((years, "year"), (months, "mon"), (days, "day")):
        if count:
            parts.append(f"{count} {unit}{'' if abs(count) == 1 else 's'}")
    if micros or not parts:
        sign = "-" if micros < 0 else ""
        seconds, fraction = divmod(abs(micros), 1_000_000)
        clock = f"{sign}{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        parts.append(clock + (f".{fraction:06d}".rstrip("0") if fraction else ""))
    return " ".join(parts)


def _array_element(value: object) -> str:
    """An array element as array output quotes it."""
    if value is None:
        return "NULL"
    text = text_of(value)
    if text == "" or re.search(r'[{},"\\\s]', text) or text.upper() == "NULL":
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def text_of(value: object) -> str:
    """A non-NULL value in PostgreSQL's text output format."""
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        return float_text(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, datetime.datetime):  # a TIMESTAMPTZ's in UTC, the session zone
        text = value.replace(tzinfo=None).isoformat(sep=" ")
        text = text.rstrip("0") if value.microsecond else text
        return text + ("+00" if value.tzinfo is not None else "")
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, datetime.time) and value.tzinfo is not None:
        return timetz.text_of(timetz.of_python(value))
    if isinstance(value, datetime.time | times.EndOfDay):
        return times.text_of(value)
    if isinstance(value, timetz.TimeTz):
        return timetz.text_of(value)
    if isinstance(value, bytes):
        return bytea.text_of(value)
    if isinstance(value, (list, tuple)):
        return "{" + ",".join(_array_element(v) for v in value) + "}"
    if isinstance(value, interval_values.PgInterval):  # an INTERVAL column's
        return str(value)
    if isinstance(value, datetime.timedelta) or hasattr(value, "nanoseconds"):
        return _interval_text(value)
    return str(value)


def encode(value: object) -> bytes | None:
    """A value as a DataRow field in text format (None: NULL)."""
    return None if value is None else text_of(value).encode()


# --- input ------------------------------------------------------------------------------

class InvalidText(ValueError):
    """Text that is not a value of the type it is read as (SQLSTATE 22P02)."""


_TRUE = {"t", "true", "y", "yes", "on", "1"}
_FALSE = {"f", "false", "n", "no", "off", "0"}


def _boolean(text: str) -> bool:
    """A boolean from PostgreSQL's spellings (t, true, yes, on, 1 ...)."""
    key = text.strip().lower()
    if key in _TRUE:
        return True
    if key in _FALSE:
        return False
    raise InvalidText(f'invalid input syntax for type boolean: "{text}"')


_READERS = {
    "boolean": _boolean, "int": int, "bigint": int, "double": float,
    "numeric": decimal.Decimal, "date": datetime.date.fromisoformat,
    "timestamp": datetime.datetime.fromisoformat,
    "timestamptz": lambda text: _instant(datetime.datetime.fromisoformat(text)),
    "time": times.parse, "timetz": timetz.parse,
}
"""Text readers by matview type name; any other type is kept as text."""
_OID_NAMES = {16: "boolean", 21: "int", 23: "int", 20: "bigint", 700: "double", 701: "double",
              1700: "numeric", 1082: "date", 1114: "timestamp", 1184: "timestamptz", 1083: "time",
              1266: "timetz"}


def from_text(text: str, type_name: str) -> object:
    """``text`` read as a value of matview type ``type_name`` (``int``, ``numeric(10,2)``,
    ``int[]`` ...); ``InvalidText`` when it is not one."""
    if type_name.endswith("[]"):
        return [None if e is None else from_text(e, type_name[:-2]) for e in _array_items(text)]
    reader = _READERS.get(type_name.split("(")[0])
    if reader is None:
        return text
    try:
        return reader(text.strip())
    except (ValueError, ArithmeticError, EvalError) as error:
        raise InvalidText(f'invalid input syntax for type {type_name}: "{text}"') from error


def _array_items(text: str) -> list[str | None]:
    """The elements of a one-dimensional array literal ``{a,"b c",NULL}``."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        raise InvalidText(f'malformed array literal: "{text}"')
    items: list[str | None] = []
    for match in re.finditer(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^,{}"]*?))\s*(?:,|$)', body[1:-1]):
        if match.end() == match.start():
            break
        quoted, bare = match.group(1), match.group(2)
        if quoted is not None:
            items.append(re.sub(r"\\(.)", r"\1", quoted))
        else:
            items.append(None if bare.upper() == "NULL" else bare)
    return items


def parameter(data: bytes | None, oid: int, binary: bool) -> object:
    """A Bind parameter's value: text format read by its declared type (unknown or text
    types stay text, a bytea's is read as bytes), binary format for integers, floats,
    booleans, text, numeric, date, timestamp, time, timetz, interval, json, jsonb, bytea,
    uuid and one-dimensional arrays of those (psycopg sends dates, times and bytes in
    binary)."""
    if data is None:
        return None
    if not binary and oid == 17:
        try:
            return bytea.parse(data.decode())
        except EvalError as error:
            raise InvalidText(str(error)) from None
    if not binary:
        return from_text(data.decode(), _OID_NAMES.get(oid, "text"))
    layouts = {21: "!h", 23: "!i", 20: "!q", 700: "!f", 701: "!d", 1082: "!i", 1114: "!q",
               1184: "!q", 1083: "!q", 1266: "!qi"}
    if oid in layouts and struct.calcsize(layouts[oid]) == len(data):
        value, *zone = struct.unpack(layouts[oid], data)
        if oid == 1266:  # microseconds since midnight, then seconds west of UTC
            return timetz.TimeTz.of(value, -zone[0])
        if oid == 1082:
            return _EPOCH.date() + datetime.timedelta(days=value)
        if oid == 1184:
            return _instant(_EPOCH + datetime.timedelta(microseconds=value))
        if oid == 1083:  # microseconds since midnight
            return times.of_micros(value)
        return _EPOCH + datetime.timedelta(microseconds=value) if oid == 1114 else value
    if oid == 16 and len(data) == 1:
        return data != b"\0"
    if oid == 17:
        return data
    if oid == 2950 and len(data) == 16:
        return uuid.UUID(bytes=data)
    if oid == 1700 and len(data) >= 8:
        return _binary_numeric(data)
    if oid == 1186 and len(data) == 16:  # microseconds, days, months
        micros, days, months = struct.unpack("!qii", data)
        return interval_values.python_value(Interval(months, days, micros))
    if oid in (114, 3802):  # json; jsonb: a version byte, then the text
        return data[1:].decode() if oid == 3802 and data[:1] == b"\x01" else data.decode()
    if oid in _ARRAY_ELEMENTS and len(data) >= 12:
        return _binary_array(data)
    if oid in (0, 25, 1043, UNKNOWN_OID):
        return data.decode()
    raise InvalidText(f"binary format of parameters of type {oid} is not supported; "
                      "send it in text format")


_ARRAY_ELEMENTS = {1005: 21, 1007: 23, 1016: 20, 1021: 700, 1022: 701, 1231: 1700,
                   1009: 25, 1015: 1043, 1000: 16, 1182: 1082, 1115: 1114, 1185: 1184,
                   1183: 1083, 2951: 2950, 1001: 17}
"""The element type of each array type whose binary parameters are read."""


def _binary_array(data: bytes) -> list[object]:
    """A one-dimensional array in PostgreSQL's binary format: dimensions, a NULL flag, the
    element type, each dimension's length and lower bound, then each element's length (-1:
    NULL) and value."""
    dimensions, _, element = struct.unpack("!iiI", data[:12])
    if dimensions == 0:
        return []
    if dimensions != 1:
        raise InvalidText("multidimensional arrays are not supported")
    count = struct.unpack("!i", data[12:16])[0]
    values, at = [], 20
    for _ in range(count):
        size = struct.unpack("!i", data[at:at + 4])[0]
        at += 4
        values.append(None if size < 0 else parameter(data[at:at + size], element, True))
        at += max(size, 0)
    return values


_EPOCH = datetime.datetime(2000, 1, 1)
"""PostgreSQL's epoch of dates and times in binary format (a TIMESTAMP WITH TIME ZONE's
is UTC: matview's timestamps are UTC)."""


def _instant(moment: datetime.datetime) -> datetime.datetime:
    """A TIMESTAMPTZ's value: ``moment`` in UTC (a naive one is read in UTC, the session
    time zone)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC)


def _binary_numeric(data: bytes) -> decimal.Decimal:
    """A NUMERIC in PostgreSQL's binary format: its number of base-10000 digits, the weight
    of the first, the sign, the display scale, then the digits."""
    count, weight, sign, scale = struct.unpack("!hhHh", data[:8])
    if sign == 0xC000:
        return decimal.Decimal("NaN")
    if sign not in (0, 0x4000) or len(data) != 8 + 2 * count:
        raise InvalidText("invalid binary NUMERIC parameter")
    digits = "".join(f"{d:04d}" for d in struct.unpack(f"!{count}h", data[8:])) or "0"
    value = decimal.Decimal((1 if sign else 0, tuple(map(int, digits)),
                             4 * (weight + 1 - count)))
    with decimal.localcontext(decimal.Context(prec=1000)):
        return value.quantize(decimal.Decimal(1).scaleb(-scale))
