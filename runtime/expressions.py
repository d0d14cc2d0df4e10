"""Compiling scalar expressions to native Spark Column expressions (no Python UDFs)."""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.functions import lookup
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar, type_of
from matview.ir.types import INTEGER_KINDS, Kind, SqlType
from matview.runtime.types import spark_type
from pyspark.sql import Column
from pyspark.sql import functions as F


def compile_scalar(expr: Scalar, columns: Sequence[Column], types: Sequence[SqlType]) -> Column:
    """``expr`` as a Column over input columns ``columns`` of types ``types``."""
    if isinstance(expr, Col):
        return columns[expr.index]
    if isinstance(expr, Lit):
        return F.lit(expr.value).cast(spark_type(expr.type))
    if isinstance(expr, Cast):
        return _cast(compile_scalar(expr.expr, columns, types), type_of(expr.expr, types), expr.to)
    if isinstance(expr, Case):
        result = None
        for cond, value in expr.whens:
            c, v = compile_scalar(cond, columns, types), compile_scalar(value, columns, types)
            result = F.when(c, v) if result is None else result.when(c, v)
        assert result is not None
        return result.otherwise(compile_scalar(expr.default, columns, types))
    if isinstance(expr, Call):
        fn = lookup(expr.func)
        args = [compile_scalar(a, columns, types) for a in expr.args]
        arg_types = [type_of(a, types) for a in expr.args]
        if fn.typed_spark is not None:
            out = fn.typed_spark(F, arg_types, *args)
        else:
            out = fn.spark(F, *args)
        result_type = fn.returns(arg_types)
        return out.cast(spark_type(result_type)) if result_type.is_numeric else out
    raise TypeError(f"cannot compile {expr!r}")


def _cast(value: Column, source: SqlType, to: SqlType) -> Column:
    """PostgreSQL's cast: numbers round to the nearest integer (numeric half away from zero,
    double half to even) instead of truncating as Spark does."""
    if to.kind in INTEGER_KINDS and source.kind is Kind.NUMERIC:
        value = F.round(value, 0)
    elif to.kind in INTEGER_KINDS and source.kind is Kind.DOUBLE:
        value = F.bround(value, 0)
    elif to.kind is Kind.TEXT and source.kind is Kind.BOOLEAN:
        return F.when(value, F.lit("true")).when(~value, F.lit("false"))
    return value.cast(spark_type(to))
