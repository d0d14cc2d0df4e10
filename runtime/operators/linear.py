"""The general linear operator on Spark: a ``Linear`` node's steps as one select / filter /
explode pipeline of native Column expressions over each update batch (``linear_logic`` states
the meaning this lowering implements).

- ``Map`` and ``Project`` are selects, the plain predicates of a ``Filter`` a ``where``.
- ``FlatMap`` builds each table function's rows as an ARRAY column (its registered Spark
  lowering) and explodes it (``posexplode`` for ordinality); several calls are zipped with
  ``arrays_zip`` (a NULL array counting as empty), so the longest decides the row count and
  the others are padded with NULLs.
- ``Repeat`` multiplies ``_diff`` by the count and drops rows where it is NULL or 0.
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
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir import table_functions
from matview.ir.linear_logic import TOP, is_temporal, is_temporal_steps, temporal_parts
from matview.ir.scalar import Call, Col, Scalar, conjoin, may_fail, type_of
from matview.ir.steps import (
    Filter,
    FlatMap,
    Map,
    Project,
    Repeat,
    Step,
    input_column,
    step_scalars,
    step_types,
)
from matview.ir.types import INTEGER_KINDS, Kind, SqlType
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import DIFF, TIME, Leaf, stored, union_all
from matview.runtime.lowering.checked import (
    ERR,
    compile_checked,
    described,
    first_error,
    split_arrow_errors,
    split_errors,
)
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext
from matview.runtime.spark.jvm_plans import Columns, checkpointed, columns, select, to_arrow
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

LOWER = "_lower"
UPPER = "_upper"
"""Hidden columns of the validity bounds of rows past a temporal filter (NULL: no bound)."""
PENDING_HELD_ROWS = 1_000_000
"""A large step's updates that wait for a temporal filter's ``upper`` are held in the driver
up to this many rows (the window's rows: a minute of events, say), so that each step releases
its due updates by an Arrow cut and not by a filter over a Spark batch, a new plan every
step."""


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
    for step in steps:
        current = [col(n) for n in column_names(len(types))]
        keep = ([col(LOWER), col(UPPER)] if bounded else []) + [col(TIME), col(DIFF)]
        if errors:
            keep.insert(-2, col(ERR))
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
        if kind in (Kind.TIMESTAMP, Kind.DATE):
            micros = F.unix_micros(value.cast("timestamp"))
            rest = F.pmod(micros, F.lit(1000))
            floor = F.call_function("div", micros - rest, F.lit(1000))
            ceil = floor + F.when(rest == 0, F.lit(0)).otherwise(F.lit(1))
        elif kind in INTEGER_KINDS + (Kind.NULL, Kind.MZ_TIMESTAMP):
            floor = ceil = value.cast("bigint")
        else:
            raise TypeError(f"mz_now() cannot be compared with {type_of(expr, types)}")
        below_top = floor < F.lit(TOP)
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


@dataclass
class LinearOp(Operator):
    """``Linear``: its delta is the input's delta transformed by ``apply_steps``.

    Without a temporal filter it is stateless and its history is its input's, transformed.
    With one, the output updates whose time lies beyond the step's ``upper`` (future
    insertions and retractions) wait in ``pending`` (state: a trace of them, held as Arrow
    when small) and are released by the step whose ``(lower, upper]`` holds their time;
    released updates are dropped from the state when the step commits. Its history is the
    input's history transformed, keeping the times ``<= lower``.
    """

    kind: ClassVar[str] = "Linear"

    input: Operator | None = None
    steps: tuple[Step, ...] = ()
    limit: int = table_functions.DEFAULT_ROW_LIMIT
    pending: Trace | None = None
    _staged: tuple[Leaf | None, int, int, int] | None = field(default=None, init=False)

    @property
    def temporal(self) -> bool:
        return is_temporal_steps(self.steps)

    @property
    def checks(self) -> bool:
        """Whether its steps may fail on some row, so that it has an error output."""
        return any(may_fail(e) for s in self.steps for e in step_scalars(s))

    @functools.cached_property
    def _pipeline(self) -> Pipeline:
        """``apply_steps`` of this operator, recorded at its first step."""
        assert self.input is not None
        return apply_steps(Pipeline(), self.steps, self.input.types, self.limit, self.checks)

    def _apply(self, df: DataFrame, role: object = "delta") -> DataFrame:
        """The steps over ``df``, built once for the same frame in the same ``role`` (what
        ``df`` is of the input: its changes, its history, ...; ``Operator.planned``)."""
        return self.planned(("apply", role), (df,), lambda: self._pipeline(df))

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        delta = self.input.delta(ctx)
        if self.temporal:
            return self._compute_temporal(ctx, delta)
        if delta is None:
            return None
        held = None if delta.leaf is None else delta.leaf.in_driver
        if held is not None and self._copied_columns is not None:
            return self._rearranged(ctx, delta, held)
        if delta.later is not None and self._copied_columns is not None:
            later = delta.later

            def picked() -> Leaf | None:
                batch = later()
                if batch is None or batch.in_driver is None:
                    return None if batch is None else Leaf(self._apply(batch.df, "batch"),
                                                           batch.rows)
                return self._rearranged(ctx, Delta(None, batch.rows, batch, count=batch.rows),
                                        batch.in_driver).leaf

            return Delta(self._apply(delta.df), None, later=picked)
        out = self._apply(delta.df)
        rows = None if self._fallible else delta.rows
        if self.checks:
            out, failed = self.planned("split", (out,), lambda: split_errors(out))
            self.errors = Delta(failed, rows)
        # a step that may raise must run within this step, so that it fails the step
        return Delta(out, rows, count=delta.count if self._keeps_rows else None)

    @property
    def rearranges(self) -> bool:
        """Whether its steps only rearrange columns (``_copied_columns``)."""
        return self._copied_columns is not None

    @functools.cached_property
    def _copied_columns(self) -> tuple[int, ...] | None:
        """The input column each output column copies when the steps only rearrange
        columns (projections, maps of plain columns); else None."""
        assert self.input is not None
        if not all(isinstance(s, Project) or (isinstance(s, Map) and all(
                isinstance(e, Col) for e in s.exprs)) for s in self.steps):
            return None
        sources = [input_column(self.steps, self.input.types, c) for c in range(self.arity)]
        return None if None in sources else tuple(c for c in sources if c is not None)

    def _rearranged(self, ctx: StepContext, delta: Delta, held: pa.Table) -> Delta:
        """The output of steps that only rearrange columns, over a batch the driver holds
        (``held``: the batch, or its copy): its columns picked in Arrow, so the output
        stays a batch in the driver (or keeps a copy there) and needs no Spark job."""
        assert delta.leaf is not None
        picked = self._picked(held)
        leaf = delta.leaf
        if leaf.table is not None:
            return Delta(None, picked.num_rows, Leaf(None, picked.num_rows, picked, ctx.spark),
                         count=picked.num_rows)
        kept = Leaf(self._apply(leaf.df, "batch"), leaf.rows, exact=leaf.exact, copy=picked)
        return Delta(None, leaf.rows, kept, count=delta.count)

    def _picked(self, held: pa.Table) -> pa.Table:
        """The output columns of steps that only rearrange columns, picked in Arrow from
        input rows the driver holds."""
        assert self._copied_columns is not None
        names = held.column_names
        picked = held.select([names.index(f"c{c}") for c in self._copied_columns]
                             + [names.index(TIME), names.index(DIFF)])
        return picked.rename_columns([*column_names(self.arity), TIME, DIFF])

    def _compute_temporal(self, ctx: StepContext, delta: Delta | None) -> Delta | None:
        """Release the pending updates due in ``(lower, upper]``, and split this step's
        output into the updates due now and those that must wait (staged until commit): a
        small step within the refresh's one job (``_due_now``), else by a Spark job of its
        own."""
        assert self.pending is not None
        parts: list[DataFrame] = []
        rows = 0
        count: int | None = 0
        released, released_count = (None, 0) if ctx.first else self.read_bound(
            ctx, "released", self.pending, after=ctx.lower, upto=ctx.upper)
        if released is not None:
            parts.append(released)
            rows += self.pending.rows_between(ctx.lower, ctx.upper)
            count = released_count
        self._staged = (None, 0, 0, ctx.upper)
        if delta is not None:
            out = self._apply(delta.df)
            if ctx.small and ctx.job is not None and delta.leafy and not self._fallible:
                parts.append(self._due_now(ctx, out))
                rows += delta.rows or 0
                count = None
            elif ctx.small:
                table = to_arrow(out)
                if self.checks:
                    table, failed = split_arrow_errors(table)
                    if failed.num_rows:
                        self.errors = Delta(None, failed.num_rows,
                                            stored(ctx.spark, failed), failed.num_rows)
                now_rows = table.filter(pc.less_equal(table[TIME], ctx.upper))
                if now_rows.num_rows:
                    leaf = stored(ctx.spark, now_rows)
                    parts.append(leaf.df)
                    rows += leaf.rows
                    count = None if count is None else count + leaf.rows
                self._wait(ctx, table.filter(pc.greater(table[TIME], ctx.upper)))
            else:
                leaf_df = checkpointed(out)
                if self.checks:
                    leaf_df, failed_df = split_errors(leaf_df)
                    self.errors = Delta(failed_df, None)
                due = col(TIME) <= ctx.upper
                stats = leaf_df.agg(
                    F.count(F.when(due, 1)).alias("now"), F.count(F.when(~due, 1)).alias("later"),
                    F.min(F.when(~due, col(TIME))).alias("first"), F.max(TIME).alias("last"),
                ).first()
                assert stats is not None
                if stats["now"]:
                    parts.append(leaf_df.where(due))
                    rows += stats["now"]
                    count = None if count is None else count + stats["now"]
                if stats["later"]:
                    self._staged = (self._later_leaf(ctx, leaf_df.where(~due), stats["later"]),
                                    stats["first"], stats["last"], ctx.upper)
        df = self.planned("temporal", tuple(parts), lambda: union_all(parts))
        return None if df is None else Delta(df, rows, count=count)

    @staticmethod
    def _later_leaf(ctx: StepContext, later: DataFrame, rows: int) -> Leaf:
        """A large step's updates that must wait, as a batch of the pending arrangement:
        fetched into the driver when at most ``PENDING_HELD_ROWS`` (one job), where each
        step cuts the updates it releases in Arrow and binds them into its plans; else
        held in Spark."""
        if rows > PENDING_HELD_ROWS:
            return Leaf(later, rows)
        return stored(ctx.spark, to_arrow(later), local_rows=PENDING_HELD_ROWS)

    def _due_now(self, ctx: StepContext, out: DataFrame) -> DataFrame:
        """A small step's output ``out`` split without a job of its own: the updates due by
        ``upper`` stay a plan, read by this step's readers; those that must wait, and the
        errors, are wanted from the step's one job and staged when it has run. ``out`` is
        narrow over batches the driver holds, so the plans that read it in that job each
        read those batches again rather than an earlier job's work."""
        assert ctx.job is not None
        if self.checks:
            out, failed = self.planned("split", (out,), lambda: split_errors(out))
            self.errors = Delta(failed, None)
        upper = self.clock(ctx)[1]
        later, due = self.planned("due", (out, upper), lambda: (
            out.where(col(TIME) > upper), out.where(col(TIME) <= upper)))
        ctx.job.want(later, lambda rows: self._wait(ctx, rows))
        return due

    def _wait(self, ctx: StepContext, later: pa.Table) -> None:
        """Stage ``later``, this step's updates due after ``upper``, for the pending
        arrangement (nothing when there are none)."""
        if later.num_rows:
            bounds = pc.min_max(later[TIME]).as_py()
            self._staged = (stored(ctx.spark, later), bounds["min"], bounds["max"], ctx.upper)

    def next_time(self) -> int | None:
        """The earliest time of a pending update (None when none wait)."""
        if self.pending is None or not self.pending.batches:
            return None
        return min(b.lower for b in self.pending.batches)

    @property
    def _keeps_rows(self) -> bool:
        """Whether every input row gives exactly one output row (maps and projections)."""
        return all(isinstance(s, Map | Project) for s in self.steps)

    @property
    def _fallible(self) -> bool:
        """Whether its steps may raise (a table function or a repeat asked for too many or
        for impossible rows); expressions that may fail do not raise: their errors are
        data (``runtime.checked``)."""
        return any(isinstance(s, FlatMap | Repeat) for s in self.steps)

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.input is not None
        return self._history_of(ctx, self.input.history(ctx), "history")

    def _history_of(self, ctx: StepContext, df: DataFrame | None, role: object
                    ) -> DataFrame | None:
        """The steps applied to ``df``, some history of the input (``role``: which)."""
        if df is None:
            return None
        out = self._apply(df, role)
        if self.checks:
            out = self.planned(("split", role), (out,), lambda: split_errors(out)[0])
        return out.where(col(TIME) <= ctx.lower) if self.temporal else out

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        assert self.input is not None
        if self.temporal:  # its delta also holds pending updates the input no longer has
            return None
        source = input_column(self.steps, self.input.types, column)
        return None if source is None else self.input.step_values(ctx, source)

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        assert self.input is not None
        if any(isinstance(s, FlatMap) for s in self.steps):  # its rows are not bounded
            return None
        source = input_column(self.steps, self.input.types, column)
        found = None if source is None else self.input.history_matching(ctx, source, values)
        if found is None:
            return None
        types = self.input.types

        def values_of(c: int) -> pa.Array | None:
            copied = input_column(self.steps, types, c)
            return None if copied is None else found.values(copied)

        return Matched(self._history_of(ctx, found.frame, ("matching", column)),
                       2 * found.rows if self.temporal else found.rows, values_of)

    def history_rows(self, ctx: StepContext) -> int | None:
        assert self.input is not None
        rows = self.input.history_rows(ctx)
        if rows is None or any(isinstance(s, FlatMap) for s in self.steps):
            return None
        return 2 * rows if self.temporal else rows  # an insertion and a retraction each

    def arrangement_local_rows(self, what: str) -> int:
        return PENDING_HELD_ROWS

    def commit(self) -> None:
        if self._staged is not None and self.pending is not None:
            future, first, last, upto = self._staged
            self.pending.discard(upto)
            self.pending.append(future, first, last)
        self._staged = None

    def abandon(self) -> None:
        self._staged = None

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)


@dataclass
class UnionOp(Operator):
    """``Union``: the sum of its inputs' deltas and histories. Stateless."""

    kind: ClassVar[str] = "Union"

    inputs: tuple[Operator, ...] = ()

    def compute(self, ctx: StepContext) -> Delta | None:
        parts = [d for d in (op.delta(ctx) for op in self.inputs) if d is not None]
        if not parts:
            return None
        df = union_all([p.df for p in parts])
        assert df is not None
        sizes = [p.rows for p in parts]
        counts = [p.count for p in parts]
        return Delta(df, None if None in sizes else sum(s for s in sizes if s is not None),
                     count=None if None in counts else sum(c for c in counts if c is not None))

    def history(self, ctx: StepContext) -> DataFrame | None:
        return union_all([f for f in (op.history(ctx) for op in self.inputs) if f is not None])

    def history_rows(self, ctx: StepContext) -> int | None:
        sizes = [op.history_rows(ctx) for op in self.inputs]
        return None if None in sizes else sum(r for r in sizes if r is not None)

    def children(self) -> tuple[Operator, ...]:
        return self.inputs
