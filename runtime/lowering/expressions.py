"""Compiling scalar expressions to native Spark Column expressions (no Python UDFs)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import time

from matview.ir import bytea, interval_values, times, timetz, uuids
from matview.ir.functions import lookup
from matview.ir.intervals import Interval
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar, type_of
from matview.ir.types import INTEGER_KINDS, TIMESTAMP, Kind, SqlType
from matview.runtime.lowering.types import spark_type
from pyspark.sql import Column
from pyspark.sql import functions as F


def compile_scalar(expr: Scalar, columns: Sequence[Column], types: Sequence[SqlType]) -> Column:
    """``expr`` as a Column over input columns ``columns`` of types ``types``."""
    if isinstance(expr, Col):
        return columns[expr.index]
    if isinstance(expr, Lit):
        if isinstance(expr.value, Interval):
            return interval_values.spark_literal(F, expr.value)
        if isinstance(expr.value, timetz.TimeTz):
            return timetz.spark_literal(F, expr.value)
        if isinstance(expr.value, time | times.EndOfDay):
            return F.lit(times.micros(expr.value)).cast("bigint")
        return F.lit(expr.value).cast(spark_type(expr.type))
    if isinstance(expr, Cast):
        value = compile_scalar(expr.expr, columns, types)
        return compile_cast(value, type_of(expr.expr, types), expr.to)
    if isinstance(expr, Case):
        result = None
        for cond, value in expr.whens:
            c, v = compile_scalar(cond, columns, types), compile_scalar(value, columns, types)
            result = F.when(c, v) if result is None else result.when(c, v)
        assert result is not None
        return result.otherwise(compile_scalar(expr.default, columns, types))
    if isinstance(expr, Call):
        args = [compile_scalar(a, columns, types) for a in expr.args]
        return compile_call(expr.func, args, [type_of(a, types) for a in expr.args])
    raise TypeError(f"cannot compile {expr!r}")


def compile_call(func: str, args: list[Column], arg_types: list[SqlType]) -> Column:
    """The registered function ``func`` applied to compiled ``args`` of ``arg_types``."""
    fn = lookup(func)
    result_type = fn.returns(arg_types)
    if func in ("add", "sub") and arg_types[1].kind is Kind.INTERVAL:
        # a DATE shifted by an interval is a TIMESTAMP (PostgreSQL), not a DATE (Spark);
        # Spark shifts by a calendar interval as PostgreSQL: months, then days, then time
        args = [args[0].cast(spark_type(TIMESTAMP)), interval_values.spark_calendar(F, args[1])]
    if func == "array":
        assert result_type.element is not None
        element = spark_type(result_type.element)
        args = [a.cast(element) for a in args]
    if fn.typed_spark is not None:
        out = fn.typed_spark(F, arg_types, *args)
    else:
        out = fn.spark(F, *args)
    if result_type.is_numeric or result_type.kind is Kind.ARRAY:
        return out.cast(spark_type(result_type))
    return out


def compile_cast(value: Column, source: SqlType, to: SqlType, safe: bool = False) -> Column:
    """PostgreSQL's cast: numbers round to the nearest integer (numeric half away from zero,
    double half to even) instead of truncating as Spark does; text to JSONB or UUID parses and
    prints the canonical form, text to BYTEA reads PostgreSQL's input formats and BYTEA to
    text prints the hex format; a TIMESTAMPTZ's text ends with the session zone's offset
    (``+00``); arrays cast element by element. ``safe`` gives NULL instead of
    raising where the cast fails (Spark's ``try_cast``)."""
    if to.kind is Kind.ARRAY and source.kind is Kind.ARRAY:
        assert to.element is not None and source.element is not None
        element_from, element_to = source.element, to.element
        return F.transform(value, lambda x: compile_cast(x, element_from, element_to, safe)
                           ).cast(spark_type(to))
    if to.kind is Kind.JSONB:
        if source.kind is Kind.JSONB:
            return value
        parse = F.try_parse_json if safe else F.parse_json
        return F.to_json(parse(value.cast("string")))
    if source.kind is Kind.JSONB and to.kind is Kind.TEXT:
        return value
    if to.kind in (Kind.UUID, Kind.BYTEA) and source.kind is not to.kind:
        return _read(value.cast("string"), to, safe)
    if source.kind is Kind.UUID and to.kind is Kind.TEXT:
        return value
    if source.kind is Kind.BYTEA and to.kind is Kind.TEXT:
        return bytea.spark_text(F, value)
    if Kind.TIMETZ in (source.kind, to.kind) and source.kind is not to.kind:
        return _timetz_cast(value, source, to, safe)
    if Kind.TIME in (source.kind, to.kind) and source.kind is not to.kind:
        return _time_cast(value, source, to, safe)
    if source.kind is Kind.INTERVAL and to.kind is Kind.TEXT:
        return interval_values.spark_text(F, value)
    if to.kind in INTEGER_KINDS and source.kind is Kind.NUMERIC:
        value = F.round(value, 0)
    elif to.kind in INTEGER_KINDS and source.kind is Kind.DOUBLE:
        value = F.bround(value, 0)
    elif to.kind is Kind.TEXT and source.kind is Kind.BOOLEAN:
        return F.when(value, F.lit("true")).when(~value, F.lit("false"))
    elif to.kind is Kind.TEXT and source.kind is Kind.TIMESTAMPTZ:
        return F.concat(value.cast("string"), F.lit("+00"))  # the session zone is UTC
    elif to.kind is Kind.TIMESTAMP and source.kind is Kind.TEXT:
        # a TIMESTAMP's text is read ignoring a UTC offset (Spark's timestamp applies it)
        value = value.try_cast("timestamp_ntz") if safe else value.cast("timestamp_ntz")
    return value.try_cast(spark_type(to)) if safe else value.cast(spark_type(to))


def _time_cast(value: Column, source: SqlType, to: SqlType, safe: bool) -> Column:
    """A cast to or from TIME, held as microseconds since midnight (``ir/times.py``)."""
    if source.kind is Kind.TIME:
        if to.kind is Kind.TEXT:
            return times.spark_text(F, value)
        if to.kind is Kind.INTERVAL:
            return interval_values.spark_struct(F, F.lit(0), F.lit(0), value)
        return F.timestamp_micros(value)  # a TIMESTAMP: the time on 1970-01-01
    if source.kind is Kind.INTERVAL:  # its time field's time of day, as PostgreSQL
        return F.pmod(value["micros"], F.lit(times.MICROS_PER_DAY))
    if source.kind is not Kind.TEXT:  # a timestamp's time of day
        return _time_of_day(value)
    return _parsed(value, times.spark_parse(F, value), to, safe)


def _timetz_cast(value: Column, source: SqlType, to: SqlType, safe: bool) -> Column:
    """A cast to or from TIMETZ, held as the struct of ``ir/timetz.py``: a TIME or a
    TIMESTAMPTZ's time of day in UTC at offset 0, a TIMETZ's time of day as a TIME."""
    if source.kind is Kind.TIMETZ:
        if to.kind is Kind.TEXT:
            return timetz.spark_text(F, value)
        return timetz.spark_micros(F, value)
    if source.kind is Kind.TIME:
        return timetz.spark_struct(F, value, F.lit(0))
    if source.kind is not Kind.TEXT:
        return timetz.spark_struct(F, _time_of_day(value), F.lit(0))
    return _parsed(value, timetz.spark_parse(F, value), to, safe)


def _time_of_day(value: Column) -> Column:
    """The time of day in UTC (microseconds since midnight) of a timestamp."""
    return F.pmod(F.unix_micros(value.cast("timestamp")), F.lit(times.MICROS_PER_DAY))


def _parsed(text: Column, parsed: Column, to: SqlType, safe: bool) -> Column:
    """``parsed``, ``text`` read as a TIME or TIMETZ: where it reads none NULL when
    ``safe``, else the error ``read_error``."""
    if safe:
        return parsed
    return F.when(text.isNotNull() & parsed.isNull(), F.raise_error(read_error(text, to))
                  ).otherwise(parsed)


def _read(text: Column, to: SqlType, safe: bool) -> Column:
    """``text`` read as a UUID or BYTEA: NULL where it spells none when ``safe``, else the
    error ``read_error``."""
    read = uuids.spark_canonical if to.kind is Kind.UUID else bytea.spark_parse
    return read(F, text) if safe else bytea.strict(read, lambda F, t: read_error(t, to))(F, text)


def read_error(text: Column, to: SqlType) -> Column:
    """The message of the error of ``text`` read as a UUID, BYTEA, TIME or TIMETZ (where it
    fails)."""
    if to.kind is Kind.BYTEA:
        return bytea.spark_parse_error(F, text)
    if to.kind is Kind.TIME:
        return times.spark_parse_error(F, text)
    if to.kind is Kind.TIMETZ:
        return timetz.spark_parse_error(F, text)
    return F.concat(F.lit('invalid input syntax for type uuid: "'), text, F.lit('"'))
