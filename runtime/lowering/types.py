"""Mapping matview's SQL types to Spark and Arrow types, and naming columns."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import time

import pyarrow as pa
from matview.ir import interval_values, times, timetz
from matview.ir.intervals import Interval
from matview.ir.types import Kind, SqlType
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote

INTERVAL_STRUCT = T.StructType([
    T.StructField("key", T.DecimalType(38, 0)), T.StructField("months", T.IntegerType()),
    T.StructField("days", T.IntegerType()), T.StructField("micros", T.LongType())])
"""An INTERVAL's Spark type (``interval_values``)."""
ARROW_INTERVAL = pa.struct([("key", pa.decimal128(38, 0)), ("months", pa.int32()),
                            ("days", pa.int32()), ("micros", pa.int64())])
"""An INTERVAL's Arrow type."""
TIMETZ_STRUCT = T.StructType([T.StructField("key", T.LongType()),
                              T.StructField("zone", T.IntegerType())])
"""A TIMETZ's Spark type (``timetz``: its time in UTC, then its zone)."""
ARROW_TIMETZ = pa.struct([("key", pa.int64()), ("zone", pa.int32())])
"""A TIMETZ's Arrow type."""


def spark_type(t: SqlType) -> T.DataType:
    """The Spark type storing values of ``t``: JSONB and UUID as their canonical text, ARRAY as an
    ArrayType, INTERVAL as the struct of ``interval_values`` (its ordering key, months, days
    and microseconds), TIMESTAMP and TIMESTAMPTZ alike as a TimestampType (the session's
    time zone is UTC, so a TIMESTAMP's fields are those of its instant in UTC), TIME as
    microseconds since midnight, TIMETZ as the struct of ``timetz``."""
    if t.kind is Kind.NUMERIC:
        return T.DecimalType(t.precision or 38, t.scale or 0)
    if t.kind is Kind.ARRAY:
        assert t.element is not None
        return T.ArrayType(spark_type(t.element))
    return {
        Kind.BOOLEAN: T.BooleanType(), Kind.INT: T.IntegerType(), Kind.BIGINT: T.LongType(),
        Kind.DOUBLE: T.DoubleType(), Kind.TEXT: T.StringType(), Kind.DATE: T.DateType(),
        Kind.TIMESTAMP: T.TimestampType(), Kind.TIMESTAMPTZ: T.TimestampType(),
        Kind.TIME: T.LongType(), Kind.TIMETZ: TIMETZ_STRUCT,
        Kind.NULL: T.StringType(),
        Kind.JSONB: T.StringType(), Kind.INTERVAL: INTERVAL_STRUCT,
        Kind.UUID: T.StringType(), Kind.BYTEA: T.BinaryType(),
        Kind.MZ_TIMESTAMP: T.LongType(),
    }[t.kind]


def arrow_type(t: SqlType) -> pa.DataType:
    """The Arrow type carrying values of ``t`` across the Python/JVM boundary; a
    TIMESTAMPTZ's is a TIMESTAMP's, the instant's fields in UTC (an aware ``datetime``
    converts to them)."""
    if t.kind is Kind.NUMERIC:
        return pa.decimal128(t.precision or 38, t.scale or 0)
    if t.kind is Kind.ARRAY:
        assert t.element is not None
        return pa.list_(arrow_type(t.element))
    return {
        Kind.BOOLEAN: pa.bool_(), Kind.INT: pa.int32(), Kind.BIGINT: pa.int64(),
        Kind.DOUBLE: pa.float64(), Kind.TEXT: pa.string(), Kind.DATE: pa.date32(),
        Kind.TIMESTAMP: pa.timestamp("us"), Kind.TIMESTAMPTZ: pa.timestamp("us"),
        Kind.TIME: pa.int64(), Kind.TIMETZ: ARROW_TIMETZ, Kind.INTERVAL: ARROW_INTERVAL,
        Kind.NULL: pa.string(), Kind.JSONB: pa.string(), Kind.UUID: pa.string(),
        Kind.BYTEA: pa.binary(),
        Kind.MZ_TIMESTAMP: pa.int64(),
    }[t.kind]


def arrow_values(values: Sequence[object]) -> list[object]:
    """Python values (the reference interpreter's) as their column's Arrow type holds them:
    a ``datetime.time`` or ``times.END_OF_DAY`` (TIME) as its microseconds since midnight,
    an ``Interval`` and a ``TimeTz`` as their structs, also in an array."""
    return [times.micros(v) if isinstance(v, time | times.EndOfDay) else
            interval_values.arrow_value(v) if isinstance(v, Interval) else
            timetz.arrow_value(v) if isinstance(v, timetz.TimeTz) else
            arrow_values(v) if isinstance(v, tuple | list) else v for v in values]


@functools.cache
def _column(name: str, remote: bool) -> Column:
    return F.col(name)


def col(name: str) -> Column:
    """``F.col(name)``, made once per name: in a classic session every Column function is a
    JVM call, and a step's plans name the same columns hundreds of times."""
    return _column(name, is_remote())


def column_names(arity: int) -> list[str]:
    """The positional column names of an update batch with ``arity`` data columns."""
    return [f"c{i}" for i in range(arity)]


def update_schema(types: Sequence[SqlType]) -> pa.Schema:
    """The Arrow schema of an update batch: data columns ``c0..``, then ``_time``, ``_diff``."""
    fields = [pa.field(name, arrow_type(t)) for name, t in zip(column_names(len(types)), types)]
    return pa.schema(fields + [pa.field("_time", pa.int64()), pa.field("_diff", pa.int64())])
