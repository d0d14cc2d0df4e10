"""SQL types of matview's data model.

Every column of every collection has one ``SqlType``. Nullability is not tracked: every
column may hold NULL, as in SQL without constraints.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Kind(Enum):
    """The family of a SQL type."""

    BOOLEAN = "boolean"
    INT = "int"
    BIGINT = "bigint"
    DOUBLE = "double"
    NUMERIC = "numeric"
    TEXT = "text"
    DATE = "date"
    TIMESTAMP = "timestamp"
    TIMESTAMPTZ = "timestamptz"
    TIME = "time"
    TIMETZ = "timetz"
    INTERVAL = "interval"
    JSONB = "jsonb"
    UUID = "uuid"
    BYTEA = "bytea"
    ARRAY = "array"
    MZ_TIMESTAMP = "mz_timestamp"
    NULL = "null"


INTEGER_KINDS = (Kind.INT, Kind.BIGINT)
NUMERIC_KINDS = (Kind.INT, Kind.BIGINT, Kind.NUMERIC, Kind.DOUBLE)
TIMESTAMP_KINDS = (Kind.TIMESTAMP, Kind.TIMESTAMPTZ)
"""The kinds of timestamps: without a time zone, and with one (an instant; matview's session
time zone is always UTC, so a TIMESTAMPTZ is read and shown in UTC)."""
INT_RANGE = {Kind.INT: (-(2**31), 2**31 - 1), Kind.BIGINT: (-(2**63), 2**63 - 1)}


@dataclass(frozen=True)
class SqlType:
    """A column type: a kind, with precision and scale for NUMERIC and the element type for
    ARRAY (one-dimensional arrays, ``int[]``).

    INTERVAL values are ``intervals.Interval`` (months, days and microseconds, compared by
    length: ``interval_values``). JSONB values are JSON text in the canonical form of
    ``jsonb.canonical``, UUID values the canonical text of ``uuids.canonical``, BYTEA values
    ``bytes``, TIME values ``datetime.time`` or ``times.END_OF_DAY`` (``'24:00:00'``), TIMETZ
    values ``timetz.TimeTz`` (a time of day and its UTC offset). MZ_TIMESTAMP is
    the type of ``mz_now()``, the logical time in milliseconds since the Unix epoch: it
    compares with TIMESTAMP, TIMESTAMPTZ, DATE and integers (as a timestamp or a bigint,
    their common type), and appears only in temporal filters and in one-shot queries, where
    it is the read's time (``ir.mz_now``).
    """

    kind: Kind
    precision: int | None = None
    scale: int | None = None
    element: SqlType | None = None

    def __str__(self) -> str:
        if self.kind is Kind.NUMERIC and self.precision is not None:
            return f"numeric({self.precision},{self.scale or 0})"
        if self.kind is Kind.ARRAY:
            return f"{self.element}[]"
        return self.kind.value

    @property
    def is_numeric(self) -> bool:
        return self.kind in NUMERIC_KINDS


BOOLEAN = SqlType(Kind.BOOLEAN)
INT = SqlType(Kind.INT)
BIGINT = SqlType(Kind.BIGINT)
DOUBLE = SqlType(Kind.DOUBLE)
TEXT = SqlType(Kind.TEXT)
DATE = SqlType(Kind.DATE)
TIMESTAMP = SqlType(Kind.TIMESTAMP)
TIMESTAMPTZ = SqlType(Kind.TIMESTAMPTZ)
TIME = SqlType(Kind.TIME)
TIMETZ = SqlType(Kind.TIMETZ)
INTERVAL = SqlType(Kind.INTERVAL)
JSONB = SqlType(Kind.JSONB)
UUID = SqlType(Kind.UUID)
BYTEA = SqlType(Kind.BYTEA)
MZ_TIMESTAMP = SqlType(Kind.MZ_TIMESTAMP)
NULLTYPE = SqlType(Kind.NULL)
NUMERIC_MAX = SqlType(Kind.NUMERIC, 38, 0)

_BY_NAME = {
    "boolean": BOOLEAN, "bool": BOOLEAN,
    "int": INT, "integer": INT, "int4": INT,
    "bigint": BIGINT, "int8": BIGINT,
    "double": DOUBLE, "double precision": DOUBLE, "float": DOUBLE, "float8": DOUBLE,
    "text": TEXT, "varchar": TEXT, "string": TEXT, "char": TEXT,
    "date": DATE, "timestamp": TIMESTAMP, "null": NULLTYPE,
    "timestamptz": TIMESTAMPTZ, "timestamp with time zone": TIMESTAMPTZ,
    "time": TIME, "time without time zone": TIME,
    "timetz": TIMETZ, "time with time zone": TIMETZ,
    "interval": INTERVAL, "jsonb": JSONB, "mz_timestamp": MZ_TIMESTAMP,
    "uuid": UUID, "bytea": BYTEA,
}


def array_of(element: SqlType) -> SqlType:
    """The type of one-dimensional arrays of ``element`` values."""
    return SqlType(Kind.ARRAY, element=element)


def type_from_name(name: str, precision: int | None = None, scale: int | None = None) -> SqlType:
    """The type spelled ``name`` (case-insensitive), e.g. ``numeric`` with (12, 2), or
    ``int[]`` (precision and scale then belong to the element type)."""
    key = name.lower().strip()
    if key.endswith("[]"):
        return array_of(type_from_name(key[:-2], precision, scale))
    if key in ("numeric", "decimal"):
        return SqlType(Kind.NUMERIC, precision if precision is not None else 38,
                       scale if scale is not None else 0)
    if key not in _BY_NAME:
        raise ValueError(f"unknown type {name!r}")
    return _BY_NAME[key]


def common_type(a: SqlType, b: SqlType) -> SqlType:
    """The type both ``a`` and ``b`` convert to implicitly (UNION, CASE, COALESCE, comparison)."""
    if a == b or b.kind is Kind.NULL:
        return a
    if a.kind is Kind.NULL:
        return b
    if a.is_numeric and b.is_numeric:
        order = NUMERIC_KINDS
        if Kind.DOUBLE in (a.kind, b.kind):
            return DOUBLE
        if a.kind is Kind.NUMERIC and b.kind is Kind.NUMERIC:
            scale = max(a.scale or 0, b.scale or 0)
            digits = max((a.precision or 38) - (a.scale or 0), (b.precision or 38) - (b.scale or 0))
            return SqlType(Kind.NUMERIC, min(38, digits + scale), scale)
        if Kind.NUMERIC in (a.kind, b.kind):
            num = a if a.kind is Kind.NUMERIC else b
            return SqlType(Kind.NUMERIC, max(num.precision or 38, min(38, 19 + (num.scale or 0))),
                           num.scale)
        return a if order.index(a.kind) >= order.index(b.kind) else b
    if {a.kind, b.kind} == {Kind.DATE, Kind.TIMESTAMP}:
        return TIMESTAMP
    if Kind.TIMESTAMPTZ in (a.kind, b.kind) and {a.kind, b.kind} <= {Kind.DATE, *TIMESTAMP_KINDS}:
        return TIMESTAMPTZ  # PostgreSQL: a timestamp converts to an instant at the session zone
    if {a.kind, b.kind} == {Kind.TIME, Kind.TIMETZ}:
        return TIMETZ  # PostgreSQL: a time converts to a time at the session zone's offset
    if a.kind is Kind.ARRAY and b.kind is Kind.ARRAY:
        assert a.element is not None and b.element is not None
        return array_of(common_type(a.element, b.element))
    if Kind.MZ_TIMESTAMP in (a.kind, b.kind):  # mz_now() compared where it is a value
        other = b if a.kind is Kind.MZ_TIMESTAMP else a
        if other.kind in (Kind.MZ_TIMESTAMP,) + TIMESTAMP_KINDS:
            return other
        if other.kind is Kind.DATE:
            return TIMESTAMP
        if other.kind in INTEGER_KINDS:
            return BIGINT
    raise TypeError(f"types {a} and {b} cannot be matched")
