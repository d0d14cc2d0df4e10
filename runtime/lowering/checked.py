"""Evaluation errors as data: scalar expressions compiled so that they never raise.

``compile_checked`` compiles an expression into a ``Checked`` pair of Columns: ``value``,
which never raises (it is NULL where the expression fails), and ``error``, the message of
the error where it fails and NULL elsewhere (PostgreSQL's messages: ``division by zero``,
``integer out of range``, ``invalid input syntax for type integer: "x"``...). Operators
route a row whose error is set to their error output instead of their output, so an error
is an update like any other: the retraction of the row that caused it retracts it.

Errors follow PostgreSQL's evaluation where it is lazy: ``CASE`` and ``COALESCE`` fail only
when the failing branch or argument is evaluated. ``AND`` is false when any argument is
false, and ``OR`` true when any is true, whatever the others (as Materialize evaluates
them); otherwise they fail when an argument fails. Every other function fails when an
argument fails, or on its own rule below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir import bytea, interval_scaling
from matview.ir.functions import MORE_THAN_ONE_ROW
from matview.ir.scalar import Call, Case, Cast, Lit, Scalar, may_fail, type_of
from matview.ir.types import INT_RANGE, INTEGER_KINDS, Kind, SqlType
from matview.runtime.arrangements.updates import DIFF, TIME
from matview.runtime.lowering.expressions import (
    compile_call,
    compile_cast,
    compile_scalar,
    read_error,
)
from matview.runtime.lowering.types import col, spark_type
from matview.runtime.spark.jvm_objects import made_once
from matview.runtime.spark.jvm_plans import columns, select
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

ERR = "_err"
"""The hidden column of an update batch holding each row's evaluation error (NULL: none)."""

_TYPE_NAMES = {Kind.INT: "integer", Kind.BIGINT: "bigint", Kind.DOUBLE: "double precision",
               Kind.NUMERIC: "numeric", Kind.BOOLEAN: "boolean", Kind.DATE: "date",
               Kind.TIMESTAMP: "timestamp", Kind.TIMESTAMPTZ: "timestamp with time zone",
               Kind.JSONB: "json", Kind.TEXT: "text"}


@dataclass(frozen=True)
class Checked:
    """A compiled expression: ``value`` never raises; ``error`` is the error message where
    the expression fails (NULL elsewhere), None when the expression cannot fail."""

    value: Column
    error: Column | None


def first_error(errors: Sequence[Column | None]) -> Column | None:
    """The first of ``errors`` that is set, row by row (None when none can be)."""
    present = [e for e in errors if e is not None]
    if not present:
        return None
    return present[0] if len(present) == 1 else F.coalesce(*present)


def described(error: Column, row: Sequence[Column]) -> Column:
    """The message ``error`` followed by the row it was found on: ``msg (row: (1, NULL))``
    (a row of no columns, as a constant query's, is not shown; bytes of a bytea that are no
    UTF-8 show as U+FFFD)."""
    if not row:
        return error
    shown = F.make_valid_utf8(F.concat_ws(", ", *[F.coalesce(c.cast("string"), F.lit("NULL"))
                                                  for c in row]))
    return F.concat(error, F.lit(" (row: ("), shown, F.lit("))"))


def compile_checked(expr: Scalar, columns: Sequence[Column],
                    types: Sequence[SqlType]) -> Checked:
    """``expr`` over ``columns`` of ``types``, with its errors as data (see the module).

    ``value`` is built from the arguments' values alone, each fallible function by its
    variant that gives NULL instead of raising, so it is as large as the plain expression;
    ``error`` reads the values of the arguments of each fallible function it checks."""
    if not may_fail(expr):
        return Checked(compile_scalar(expr, columns, types), None)
    if isinstance(expr, Cast):
        inner = compile_checked(expr.expr, columns, types)
        source = type_of(expr.expr, types)
        value = compile_cast(inner.value, source, expr.to, safe=True)
        own = F.when(inner.value.isNotNull() & value.isNull(), _cast_message(
            inner.value, source, expr.to))
        return Checked(value, first_error([inner.error, own]))
    if isinstance(expr, Case):
        return _case(expr, columns, types)
    assert isinstance(expr, Call), expr
    result = type_of(expr, types)
    if expr.func in _EXACT and result.kind in INTEGER_KINDS + (Kind.NUMERIC,):
        return _arithmetic(expr, columns, types, result)
    args = [compile_checked(a, columns, types) for a in expr.args]
    arg_types = [type_of(a, types) for a in expr.args]
    if expr.func == "coalesce":
        return _coalesce(args, arg_types)
    if expr.func in ("and", "or"):
        return _connective(expr.func, args, arg_types)
    values = [a.value for a in args]
    rule = _RULES.get(expr.func)
    safe, own = (None, None) if rule is None else rule(values, arg_types, result)
    value = compile_call(expr.func, values, arg_types) if safe is None else safe
    return Checked(value, first_error([*(a.error for a in args), own]))


def _arithmetic(expr: Call, columns: Sequence[Column], types: Sequence[SqlType],
                result: SqlType) -> Checked:
    """A tree of ``+``, ``-``, ``*`` and negations of one integer or numeric ``result`` type
    fails where one of its operands (its largest subexpressions of another kind) fails, else
    where an operation's exact result is out of range. Each operation's value is NULL where
    it is out of range (Spark's ``try_`` arithmetic), and NULL propagates through the
    others, so the whole tree's value is NULL with all its operands present exactly where
    one operation is out of range: one test of that value is the error of every operation,
    and the error of a chain of n additions is as large as its value (a test per operation
    would read every partial sum again). Where a row has several errors, an operand's is
    reported before an overflow."""
    operands: dict[Scalar, Checked] = {}

    def value(node: Scalar) -> Column:
        if not (isinstance(node, Call) and node.func in _EXACT
                and type_of(node, types) == result):
            if node not in operands:
                operands[node] = compile_checked(node, columns, types)
            return operands[node].value
        args = [value(a) for a in node.args]
        return _EXACT[node.func](args, spark_type(result))

    whole = value(expr)
    present = [whole.isNull()] + [o.value.isNotNull() for node, o in operands.items()
                                  if not (isinstance(node, Lit) and node.value is not None)]
    overflow = F.when(_balanced_and(present), F.lit(_out_of_range(result)))
    return Checked(whole, first_error([*(o.error for o in operands.values()), overflow]))


def _case(expr: Case, columns: Sequence[Column], types: Sequence[SqlType]) -> Checked:
    """CASE fails where the condition it evaluates fails, or the branch it takes."""
    whens = [(compile_checked(c, columns, types), compile_checked(v, columns, types))
             for c, v in expr.whens]
    default = compile_checked(expr.default, columns, types)
    value = None
    for cond, branch in whens:
        value = (F.when(cond.value, branch.value) if value is None
                 else value.when(cond.value, branch.value))
    assert value is not None
    value = value.otherwise(default.value)
    error = default.error if default.error is not None else F.lit(None).cast("string")
    for cond, branch in reversed(whens):
        taken = branch.error if branch.error is not None else F.lit(None).cast("string")
        chosen = F.when(F.coalesce(cond.value, F.lit(False)), taken).otherwise(error)
        error = chosen if cond.error is None else F.when(cond.error.isNotNull(),
                                                         cond.error).otherwise(chosen)
    return Checked(value, error)


def _coalesce(args: list[Checked], arg_types: list[SqlType]) -> Checked:
    """COALESCE evaluates its arguments in order and stops at the first that is not NULL."""
    error: Column | None = None
    for arg in reversed(args):
        if arg.error is None and error is None:
            continue
        own = arg.error if arg.error is not None else F.lit(None).cast("string")
        rest = error if error is not None else F.lit(None).cast("string")
        error = F.when(own.isNotNull(), own).when(arg.value.isNull(), rest)
    return Checked(compile_call("coalesce", [a.value for a in args], arg_types), error)


def _connective(func: str, args: list[Checked], arg_types: list[SqlType]) -> Checked:
    """AND (OR) is false (true) when an argument is, whatever the others; else it fails
    when an argument fails."""
    decisive = F.lit(func == "or")
    decided = [F.coalesce((a.value == decisive) & (F.lit(True) if a.error is None
                                                     else a.error.isNull()), F.lit(False))
               for a in args]
    failed = first_error([a.error for a in args])
    error = None if failed is None else F.when(~_any(decided), failed)
    return Checked(compile_call(func, [a.value for a in args], arg_types), error)


def _any(flags: Sequence[Column]) -> Column:
    """The OR of ``flags`` as a balanced tree (a chain of thousands stays shallow)."""
    return _balanced(flags, lambda a, b: a | b)


def _out_of_range(result: SqlType) -> str:
    if result.kind is Kind.NUMERIC:
        return "numeric field overflow"
    return f"{_TYPE_NAMES.get(result.kind, str(result))} out of range"


def _cast_message(value: Column, source: SqlType, to: SqlType) -> Column:
    if source.kind is Kind.TEXT and to.kind in (Kind.UUID, Kind.BYTEA, Kind.TIME, Kind.TIMETZ):
        return read_error(value, to)
    if source.kind is Kind.TEXT:
        name = _TYPE_NAMES.get(to.kind, str(to))
        return F.concat(F.lit(f'invalid input syntax for type {name}: "'),
                        value.cast("string"), F.lit('"'))
    if to.kind in INTEGER_KINDS + (Kind.NUMERIC,):
        return F.lit(_out_of_range(to))
    return F.lit(f"cannot cast {source} to {to}")


def _all_present(values: Sequence[Column]) -> Column:
    return _balanced_and([v.isNotNull() for v in values])


def _balanced_and(flags: Sequence[Column]) -> Column:
    """The AND of ``flags`` as a balanced tree (a chain of thousands stays shallow)."""
    return _balanced(flags, lambda a, b: a & b)


def _balanced(flags: Sequence[Column], combine: Callable[[Column, Column], Column]) -> Column:
    if len(flags) == 1:
        return flags[0]
    middle = len(flags) // 2
    return combine(_balanced(flags[:middle], combine), _balanced(flags[middle:], combine))


_Rule = Callable[[list[Column], list[SqlType], SqlType], tuple[Column | None, Column | None]]
"""A fallible function's value that gives NULL instead of raising (None: its plain
lowering, which cannot raise there) and its error message Column (None: none), given the
argument values, argument types and result type."""


_EXACT: dict[str, Callable[[list[Column], T.DataType], Column]] = {
    "add": lambda a, t: F.try_add(*a).try_cast(t),
    "sub": lambda a, t: F.try_subtract(*a).try_cast(t),
    "mul": lambda a, t: F.try_multiply(*a).try_cast(t),
    "neg": lambda a, t: F.try_subtract(F.lit(0).cast(t), a[0]).try_cast(t),
}
"""Integer and numeric arithmetic whose only failure is a result out of range: each
operation's value of its argument values and Spark result type, NULL where out of range."""


def _division(try_fn: str) -> _Rule:
    """``/`` and ``%``: by zero they fail; so does the smallest integer divided by -1.
    Integers divide exactly as decimals, truncated toward zero by the cast back."""
    def rule(args: list[Column], arg_types: list[SqlType],
             result: SqlType) -> tuple[Column | None, Column | None]:
        dividend, divisor = args
        if result.kind in INTEGER_KINDS and try_fn == "try_divide":
            dividend, divisor = (a.cast(T.DecimalType(20, 0)) for a in args)
        value = F.call_function(try_fn, dividend, divisor).try_cast(spark_type(result))
        error = F.when(args[1] == 0, F.lit("division by zero"))
        if result.kind in INTEGER_KINDS + (Kind.NUMERIC,):
            error = error.when(_all_present(args) & value.isNull(),
                               F.lit(_out_of_range(result)))
        return value, error
    return rule


def _absolute(args: list[Column], arg_types: list[SqlType],
              result: SqlType) -> tuple[Column | None, Column | None]:
    """The absolute value of the smallest integer overflows."""
    if result.kind not in INTEGER_KINDS:
        return None, None
    smallest = args[0] == INT_RANGE[result.kind][0]
    return (F.when(~smallest, F.abs(args[0])),
            F.when(smallest, F.lit(_out_of_range(result))))


def _substring(args: list[Column], arg_types: list[SqlType],
               result: SqlType) -> tuple[Column | None, Column | None]:
    if len(args) < 3:
        return None, None
    return None, F.when(args[2] < 0, F.lit("negative substring length not allowed"))


def _split_part(args: list[Column], arg_types: list[SqlType],
                result: SqlType) -> tuple[Column | None, Column | None]:
    """A field position of zero fails (Spark's ``split_part`` raises there)."""
    value = F.when(args[2] != 0, F.split_part(*args))
    return value, F.when(args[2] == 0, F.lit("field position must not be zero"))


def _decoding(text_format: str) -> _Rule:
    """``decode(text, format)`` fails where the text spells no bytes in the format."""
    safe, message = bytea.DECODERS[text_format][1:]

    def rule(args: list[Column], arg_types: list[SqlType],
             result: SqlType) -> tuple[Column | None, Column | None]:
        value = safe(F, args[0])
        return value, F.when(args[0].isNotNull() & value.isNull(), message(F, args[0]))
    return rule


def _interval_scaling(divide: bool) -> _Rule:
    """An interval times or divided by a number fails out of range, or divided by zero."""
    def rule(args: list[Column], arg_types: list[SqlType],
             result: SqlType) -> tuple[Column | None, Column | None]:
        return interval_scaling.spark_scaled(F, *args, divide=divide)
    return rule


def _single_row(args: list[Column], arg_types: list[SqlType],
                result: SqlType) -> tuple[Column | None, Column | None]:
    """A scalar subquery's value fails where the subquery has more than one row."""
    return None, F.when(args[0] > 1, F.lit(MORE_THAN_ONE_ROW))


_RULES: dict[str, _Rule] = {
    "div": _division("try_divide"), "mod": _division("try_mod"), "abs": _absolute,
    "substr": _substring, "split_part": _split_part, "single_row": _single_row,
    "interval_mul": _interval_scaling(False), "interval_div": _interval_scaling(True),
    **{f"decode_{name}": _decoding(name) for name in bytea.DECODERS},
}
"""The other functions whose failures are data (besides ``_EXACT`` arithmetic); a fallible
function without a rule (``round``, ``like``) still raises from Spark when it fails."""


def split_errors(df: DataFrame) -> tuple[DataFrame, DataFrame]:
    """An update batch with ``_err`` (``apply_steps(errors=True)``) as its rows that
    evaluated, and its errors as updates of one text column ``c0``."""
    spark = df.sparkSession
    evaluated, failed, message = made_once(spark, "split_errors", lambda: (
        col(ERR).isNull(), col(ERR).isNotNull(),
        columns(spark, col(ERR).alias("c0"), col(TIME), col(DIFF))))
    return df.where(evaluated).drop(ERR), select(df.where(failed), message)


def split_arrow_errors(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """``split_errors`` of a batch held in the driver, in Arrow."""
    failed = table.filter(pc.is_valid(table[ERR])).select([ERR, TIME, DIFF])
    return (table.filter(pc.is_null(table[ERR])).drop_columns([ERR]),
            failed.rename_columns(["c0", TIME, DIFF]))
