"""The lowering of a ``Linear`` node's steps to Spark: one select / filter / explode
pipeline of native Column expressions over each update batch (``linear_logic`` states the
meaning this lowering implements).

- ``Map`` and ``Project`` are selects, the plain predicates of a ``Filter`` a ``where``.
- ``FlatMap`` builds each table function's rows as an ARRAY column (its registered Spark
  lowering) and explodes it (``posexplode`` for ordinality); several calls are zipped with
  ``arrays_zip`` (a NULL array counting as empty), so the longest decides the row count and
  the others are padded with NULLs.
- ``Repeat`` multiplies ``_diff`` by the count and drops rows where it is NULL or 0.
- A step calling a ``volatile`` function (``gen_random_uuid()``) first makes each row of
  diff ``d`` that many rows of diff ±1 (``_each_copy``), so that every copy gets its own
  value, and a Map of one is one select per expression, so that an expression reading
  another's column reads its value rather than computing it again.
- The temporal predicates of a ``Filter`` give each row its validity ``[lower, upper)``
  (``linear_logic.validity``), carried as hidden columns through the later steps (a second
  temporal filter narrows them); at the end one explode turns each row into
  ``(r, max(t, lower), +d)`` and, when it has an upper bound, ``(r, max(t, upper), -d)``.

Spark's optimizer collapses the selects and filters, so a whole ``Linear`` runs as one
projection/filter/generate pipeline with no Python evaluation.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeVar

from matview.ir import table_functions
from matview.ir.linear_logic import is_temporal, temporal_parts
from matview.ir.relation import Step, step_types
from matview.ir.scalar import Call, Scalar, conjoin, type_of, volatile
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, step_scalars
from matview.ir.types import INTEGER_KINDS, TIMESTAMP_KINDS, Kind, SqlType
from matview.runtime.arrangements.updates import DIFF, TIME
from matview.runtime.lowering.checked import ERR, compile_checked, described, first_error
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.spark.jvm_plans import Columns, columns, select
from matview.runtime.time import MAX_TIME
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

LOWER = "_lower"
UPPER = "_upper"
"""Hidden columns of the validity bounds of rows past a temporal filter (NULL: no bound)."""


class Pipeline:
    """A batch transformation recorded as the ``select``, ``where`` and ``withColumn`` calls
    ``apply_steps`` makes, then replayed on each step's batch: the Column expressions of a
    ``Linear`` are built once, not at every step (in a classic session each is a JVM call)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[object, ...]]] = []
        self._selects: dict[int, Columns] = {}
        """The column lists of the recorded selects (by call), made once (``jvm_plans``)."""

    def select(self, *columns: Column) -> Pipeline:
        self.calls.append(("select", columns))
        return self

    def where(self, condition: Column) -> Pipeline:
        self.calls.append(("where", (condition,)))
        return self

    def withColumn(self, name: str, value: Column) -> Pipeline:  # noqa: N802 - DataFrame's name
        self.calls.append(("withColumn", (name, value)))
        return self

    def __call__(self, df: DataFrame) -> DataFrame:
        """``df`` transformed by the recorded calls."""
        for at, (method, args) in enumerate(self.calls):
            if method == "select":
                if at not in self._selects:
                    self._selects[at] = columns(df.sparkSession, *args)  # type: ignore[arg-type]
                df = select(df, self._selects[at])
            else:
                df = getattr(df, method)(*args)
        return df


Batch = TypeVar("Batch", DataFrame, Pipeline)
"""What ``apply_steps`` transforms: an update batch, or a ``Pipeline`` recording the calls."""


def apply_steps(df: Batch, steps: Sequence[Step], types: Sequence[SqlType],
                limit: int = table_functions.DEFAULT_ROW_LIMIT,
                errors: bool = False) -> Batch:
    """Apply linear ``steps`` to update batch ``df`` whose data columns have ``types``;
    ``limit`` is the most rows a table function may produce for one input row.

    The result's times are the output times of ``join_function``: with a temporal filter
    they may lie beyond the batch's times (future insertions and retractions).

    With ``errors`` the result has a column ``_err``: the message of the first evaluation
    error of the row and an example row (``checked``), NULL for rows that evaluated. A row
    that failed passes every later step unchanged (filters keep it, table functions give it
    one row, ``repeat_row`` keeps its diff, temporal filters its time), so that its error
    reaches the output once, with the row's time and diff."""
    types = tuple(types)
    bounded = False
    if errors:
        df = df.withColumn(ERR, F.lit(None).cast("string"))
    for step in [part for whole in steps for part in _volatile_parts(whole)]:
        current = [col(n) for n in column_names(len(types))]
        keep = ([col(LOWER), col(UPPER)] if bounded else []) + [col(TIME), col(DIFF)]
        if errors:
            keep.insert(-2, col(ERR))
        if any(volatile(e) for e in step_scalars(step)):
            df = df.select(*current, *keep[:-1], _each_copy().alias(DIFF))
        if isinstance(step, Map):
            new_types = step_types(step, types)
            exprs: list[Column] = []
            failed: list[Column | None] = []
            for i, expr in enumerate(step.exprs):
                known = new_types[:len(types) + i]
                if errors:
                    checked = compile_checked(expr, current + exprs, known)
                    exprs.append(checked.value)
                    failed.append(checked.error)
                else:
                    exprs.append(compile_scalar(expr, current + exprs, known))
            named = [e.alias(f"c{len(types) + i}") for i, e in enumerate(exprs)]
            df = df.select(*current, *named, *_with_error(keep, current, failed))
        elif isinstance(step, Filter):
            plain = [p for p in step.predicates if not is_temporal(p)]
            if plain and errors:
                checked = compile_checked(conjoin(plain), current, types)
                if checked.error is not None:
                    df = df.select(*current, *_with_error(keep, current, [checked.error]))
                df = df.where(F.coalesce(checked.value, F.lit(False)) | col(ERR).isNotNull())
            elif plain:
                df = df.where(compile_scalar(conjoin(plain), current, types))
            temporal = [temporal_parts(p) for p in step.predicates if is_temporal(p)]
            if temporal:
                df = _bound(df, temporal, current, types, bounded, errors)
                bounded = True
        elif isinstance(step, Project):
            df = df.select(*[current[i].alias(f"c{j}") for j, i in enumerate(step.outputs)],
                           *keep)
        elif isinstance(step, Repeat):
            if errors:
                checked = compile_checked(step.count, current, types)
                df = df.select(*current, *_with_error(keep, current, [checked.error]))
                count = checked.value.cast("bigint")
                diff = F.when(col(ERR).isNull(), col(DIFF) * count).otherwise(col(DIFF))
            else:
                diff = col(DIFF) * compile_scalar(step.count, current, types).cast("bigint")
            df = df.select(*current, *keep[:-1], diff.alias(DIFF))
            df = df.where(col(DIFF) != 0)
        elif isinstance(step, FlatMap):
            df = _flat_map(df, step, current, types, keep, limit, errors)
        else:
            raise TypeError(f"not a linear step: {step!r}")
        types = step_types(step, types)
    if bounded:
        current = [col(n) for n in column_names(len(types))]
        failed = col(ERR).isNotNull() if errors else F.lit(False)
        start = F.when(failed, col(TIME)).otherwise(F.greatest(col(TIME), col(LOWER)))
        insert = F.struct(start.alias(TIME), col(DIFF).alias(DIFF))
        retract = F.struct(F.greatest(col(TIME), col(UPPER)).alias(TIME),
                           (-col(DIFF)).alias(DIFF))
        updates = F.when(col(UPPER).isNull() | failed, F.array(insert)).otherwise(
            F.array(insert, retract))
        df = df.select(*current, *([col(ERR)] if errors else []), F.inline(updates))
    return df


def _volatile_parts(step: Step) -> list[Step]:
    """``step``, a Map calling a ``volatile`` function as one Map per expression."""
    if isinstance(step, Map) and any(volatile(e) for e in step.exprs):
        return [Map((e,)) for e in step.exprs]
    return [step]


def _each_copy() -> Column:
    """A row's diff ``d`` as ``|d|`` diffs of its sign, exploded: that many rows."""
    return F.explode(F.array_repeat(F.signum(col(DIFF)).cast("bigint"),
                                    F.abs(col(DIFF)).cast("int")))


def _with_error(keep: list[Column], row: list[Column],
                failed: list[Column | None]) -> list[Column]:
    """``keep`` (the hidden columns carried by a step) with ``_err`` set to the row's first
    error: the one it already had, else the first of this step's ``failed``, followed by
    the row it was evaluated on."""
    new = first_error(failed)
    if new is None:
        return keep
    error = F.coalesce(col(ERR), described(new, row))
    return [error.alias(ERR) if c is col(ERR) else c for c in keep]


def _bound(df: Batch, temporal: list[tuple[str, Scalar]], current: list[Column],
           types: tuple[SqlType, ...], bounded: bool, errors: bool) -> Batch:
    """Narrow (or set) the hidden bounds by the temporal predicates ``mz_now() OP e``, and
    drop the rows with a NULL bound or an empty validity, as ``linear_logic.validity``
    (with ``errors``, rows that failed are kept)."""
    lows: list[Column] = [col(LOWER)] if bounded else []
    highs: list[Column] = [col(UPPER)] if bounded else []
    checks: list[Column] = []
    for op, expr in temporal:
        kind = type_of(expr, types).kind
        value = compile_scalar(expr, current, types)
        checks.append(value.isNotNull())
        if kind in (Kind.DATE, *TIMESTAMP_KINDS):
            micros = F.unix_micros(value.cast("timestamp"))
            rest = F.pmod(micros, F.lit(1000))
            floor = F.call_function("div", micros - rest, F.lit(1000))
            ceil = floor + F.when(rest == 0, F.lit(0)).otherwise(F.lit(1))
        elif kind in INTEGER_KINDS + (Kind.NULL, Kind.MZ_TIMESTAMP):
            floor = ceil = value.cast("bigint")
        else:
            raise TypeError(f"mz_now() cannot be compared with {type_of(expr, types)}")
        below_top = floor < F.lit(MAX_TIME)
        if op in ("ge", "eq"):
            lows.append(ceil)
        if op == "gt":
            checks.append(below_top)  # valid from past the largest time: never
            lows.append(F.when(below_top, floor + 1))
        if op in ("le", "eq"):
            highs.append(F.when(below_top, floor + 1))  # past the largest time: no bound
        if op == "lt":
            highs.append(ceil)
    null = F.lit(None).cast("bigint")
    lower = null if not lows else lows[0] if len(lows) == 1 else F.greatest(*lows)
    upper = null if not highs else highs[0] if len(highs) == 1 else F.least(*highs)
    ok = functools.reduce(Column.__and__, checks)
    hidden = [col(ERR)] if errors else []
    df = df.select(*current, lower.alias(LOWER), upper.alias(UPPER), ok.alias("_ok"),
                   *hidden, col(TIME), col(DIFF))
    valid = col("_ok") & (col(LOWER).isNull() | col(UPPER).isNull()
                          | (col(LOWER) < col(UPPER)))
    df = df.where(valid | col(ERR).isNotNull() if errors else valid)
    return df.select(*current, col(LOWER), col(UPPER), *hidden, col(TIME), col(DIFF))


def _array_type(out: tuple[SqlType, ...]) -> T.DataType:
    """The Spark type of a table function's rows: scalars for one column, else structs."""
    if len(out) == 1:
        return T.ArrayType(spark_type(out[0]))
    return T.ArrayType(T.StructType([T.StructField(f"c{i}", spark_type(t))
                                     for i, t in enumerate(out)]))


def _rows_array(call: Call, current: list[Column], types: tuple[SqlType, ...],
                limit: int) -> tuple[Column, tuple[SqlType, ...], Column | None]:
    """Call ``call``'s rows on each input row as an ARRAY column, their column types, and
    the error of its arguments (None when they cannot fail)."""
    fn = table_functions.lookup(call.func)
    arg_types = [type_of(a, types) for a in call.args]
    args = [compile_checked(a, current, types) for a in call.args]
    out = table_functions.output_types(call, types)
    array = fn.spark(F, arg_types, limit, table_functions.literal_values(call),
                     *[a.value for a in args])
    return array.cast(_array_type(out)), out, first_error([a.error for a in args])


def _flat_map(df: Batch, step: FlatMap, current: list[Column],
              types: tuple[SqlType, ...], keep: list[Column], limit: int,
              errors: bool) -> Batch:
    """Explode the rows of ``step``'s calls (with ``errors``, a row whose arguments failed
    gives one row of NULLs carrying its error)."""
    arrays = [_rows_array(c, current, types, limit) for c in step.calls]
    if errors:
        df = df.select(*current, *_with_error(keep, current, [a[2] for a in arrays]))
        failed = col(ERR).isNotNull()
        arrays = [(F.when(failed, F.array(F.lit(None)).cast(_array_type(out))).otherwise(a),
                   out, None) for a, out, _ in arrays]
    if not arrays:
        return df.where(col(ERR).isNotNull() if errors else F.lit(False))
    if len(arrays) == 1:
        array = arrays[0][0]
        elements = [(col("_e"), arrays[0][1])]
    else:
        # NULL arrays count as empty, so the longest array decides the number of rows
        df = df.select(*current, *keep, *[F.coalesce(a, F.array().cast(_array_type(out)))
                                          .alias(f"_a{k}")
                                          for k, (a, out, _) in enumerate(arrays)])
        array = F.arrays_zip(*[col(f"_a{k}") for k in range(len(arrays))])
        elements = [(col("_e")[f"_a{k}"], out) for k, (_, out, _) in enumerate(arrays)]
    if step.ordinality:
        df = df.select(*current, *keep, F.posexplode(array).alias("_pos", "_e"))
    else:
        df = df.select(*current, *keep, F.explode(array).alias("_e"))
    added: list[Column] = []
    for element, out in elements:
        if len(out) == 1:
            added.append(element)
        else:
            added.extend(element[f"c{i}"] for i in range(len(out)))
    if step.ordinality:
        added.append((col("_pos") + 1).cast("bigint"))
    n = len(types)
    return df.select(*current, *[c.alias(f"c{n + i}") for i, c in enumerate(added)], *keep)
