"""Delta joins on Spark (seeds 001 and 003).

Path i starts from input i's changes and looks the other inputs up in ``orders[i]`` order.
Each looked-up input j is its history (updates up to the step's ``lower``, all older than
any change of the step) plus its own changes of this step, of which path i sees those with
time ``<= t`` when ``j < i`` and ``< t`` when ``j > i``: the Alt/Neu order, under which
changes at the same time are counted exactly once. The output update of a path has the
changing update's time and the product of the diffs. No intermediate state is kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.functions import EvalError
from matview.ir.joins import input_at, offsets_of
from matview.ir.scalar import Col, Scalar, columns_used, may_fail
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    lookup,
    materialize,
    union_all,
)
from matview.runtime.lowering.checked import (
    ERR,
    Checked,
    compile_checked,
    described,
    first_error,
    split_errors,
)
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import (
    ArrangedWhenLookedUp,
    Delta,
    Matched,
    Operator,
    StepContext,
)
from matview.runtime.settings import active
from matview.runtime.spark.jvm_plans import Columns, columns, select
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DEFAULT_JOIN_ROWS = 25_000_000
"""The most update rows one join may produce in one step unless the connection sets
another (``matview.connect(max_join_rows=...)``): a runaway join fails with an error naming
it instead of exhausting the JVM's memory."""


class RowLimitExceeded(EvalError):
    """A join would produce more rows in one step than its limit."""


_PathInputs = tuple[int, DataFrame, tuple[DataFrame | None, ...],
                    tuple[DataFrame | None, ...], tuple[bool, ...]]
"""What a path of a step is built from (``JoinOp._output``)."""


@dataclass
class JoinOp(ArrangedWhenLookedUp, Operator):
    """``Join`` executed as a delta query; keeps an arrangement of its own output only when a
    consumer needs the join's history (it holds the joined rows that passed ``predicates``).

    A step producing more than ``max_rows`` rows fails: before running when the paths'
    cross products of known sizes say so, else while running (``_counted``).

    Each of ``predicates`` is evaluated in every path right after the lookup that binds the
    last input it reads (on the path's own input when it reads only that one)."""

    kind: ClassVar[str] = "Join"

    inputs: tuple[Operator, ...] = ()
    equivalences: tuple[tuple[Scalar, ...], ...] = ()
    predicates: tuple[Scalar, ...] = ()
    orders: tuple[tuple[int, ...], ...] = ()
    """Per input i, the inputs path i looks up, in order (the plan's ``DeltaJoin``)."""
    keep_history: bool = False
    output: Trace | None = None
    max_rows: int = DEFAULT_JOIN_ROWS
    label: str = "Join"
    """How errors name it (the dataflow numbers it as EXPLAIN PHYSICAL does: ``Join %3``)."""

    def _prefixed(self, df: DataFrame, index: int) -> DataFrame:
        """Input ``index``'s batch with columns ``j{index}_c{k}``, ``_t{index}``,
        ``_d{index}``."""
        return select(df, self.built(("rename", index), lambda: columns(
            df.sparkSession,
            *[col(f"c{k}").alias(f"j{index}_c{k}") for k in range(self.inputs[index].arity)],
            col(TIME).alias(f"_t{index}"), col(DIFF).alias(f"_d{index}"))))

    def _reads(self, expr: Scalar) -> frozenset[int]:
        """The inputs whose columns ``expr`` reads."""
        offsets = offsets_of([op.arity for op in self.inputs])
        return frozenset(input_at(offsets, c) for c in columns_used(expr))

    def _members(self) -> list[list[tuple[Scalar, frozenset[int]]]]:
        """Each equivalence class's members with the set of inputs each one reads."""
        return [[(m, self._reads(m)) for m in cls] for cls in self.equivalences]

    def _column_refs(self) -> list[Column]:
        return [col(f"j{i}_c{k}") for i, op in enumerate(self.inputs) for k in range(op.arity)]

    def _conditions(self, bound: frozenset[int], new: int) -> list[Column]:
        """The equalities that become checkable when input ``new`` joins inputs ``bound``."""
        return self.built(("conditions", bound, new),
                          lambda: self._new_conditions(bound, new))

    def _new_conditions(self, bound: frozenset[int], new: int) -> list[Column]:
        refs, conditions = self._column_refs(), []
        now = bound | {new}
        for cls in self._members():
            before = [m for m, used in cls if used <= bound]
            added = [m for m, used in cls if used <= now and not used <= bound]
            anchor = before[0] if before else (added[0] if added else None)
            for member in added:
                if member is not anchor:
                    conditions.append(self._compile(anchor, refs) == self._compile(member, refs))
        return conditions

    def _checks(self, bound: frozenset[int], new: int | None) -> list[Checked]:
        """The predicates that become checkable when input ``new`` joins inputs ``bound``
        (``new`` None: the predicates reading only the inputs ``bound``), with their errors."""
        return self.built(("checks", bound, new), lambda: self._new_checks(bound, new))

    def _new_checks(self, bound: frozenset[int], new: int | None) -> list[Checked]:
        refs, checks = self._column_refs(), []
        for pred in self.predicates:
            used = self._reads(pred)
            now = bound if new is None else bound | {new}
            if used <= now and (new is None or not used <= bound):
                checks.append(compile_checked(pred, refs, self.types))
        return checks

    def _filter(self, path: DataFrame, checks: list[Checked]) -> DataFrame:
        """``path`` keeping the rows that pass ``checks`` and, when the join's predicates
        may fail, the rows on which one fails, with its error in ``_err``."""
        passed = functools.reduce(Column.__and__, [c.value for c in checks])
        if not self.checks:
            return path.where(passed)
        error = first_error([col(ERR), *[c.error for c in checks]])
        assert error is not None
        path = path.withColumn(ERR, error)
        return path.where(F.coalesce(passed, F.lit(False)) | col(ERR).isNotNull())

    def _compile(self, expr: Scalar | None, refs: list[Column]) -> Column:
        assert expr is not None
        return compile_scalar(expr, refs, self.types)

    @property
    def checks(self) -> bool:
        """Whether its predicates may fail on some row (it has an error output: the joined
        rows on which a predicate fails, a bilinear function of the inputs like the join)."""
        return any(may_fail(p) for p in self.predicates)

    def _path(self, small: bool, i: int, start: DataFrame, others: list[DataFrame | None],
              large: tuple[bool, ...]) -> DataFrame | None:
        path = self._prefixed(start, i)
        if self.checks:
            path = path.withColumn(ERR, F.lit(None).cast("string"))
        own = self._conditions(frozenset(), i)
        if own:
            path = path.where(functools.reduce(Column.__and__, own))
        bound = frozenset({i})
        checks = self._checks(bound, None)
        if checks:
            path = self._filter(path, checks)
        for j in self.orders[i]:
            other = others[j]
            if other is None:
                return None
            other = self._prefixed(other, j)
            path = lookup(path, other, self._lookup_condition(bound, i, j), "inner", small,
                          build="left", large=large[j])
            path = select(path, self._times_diffs(path.sparkSession, bound | {j}, i, j))
            checks = self._checks(bound, j)
            if checks:
                path = self._filter(path, checks)
            bound = bound | {j}
        return select(path, self.built(("output", i), lambda: columns(
            path.sparkSession, *self._new_output(i))))

    def _lookup_condition(self, bound: frozenset[int], i: int, j: int) -> Column:
        """Path ``i``'s condition for looking input ``j`` up once ``bound`` are bound: the
        equalities it makes checkable, and the Alt/Neu order of times (made once)."""
        def make() -> Column:
            seen = (col(f"_t{j}") <= col(f"_t{i}")) if j < i else (
                col(f"_t{j}") < col(f"_t{i}"))
            return functools.reduce(Column.__and__, self._conditions(bound, j), seen)
        return self.built(("lookup", bound, i, j), make)

    def _times_diffs(self, spark: SparkSession, bound: frozenset[int], i: int,
                     j: int) -> Columns:
        """Path ``i``'s columns once input ``j`` joined ``bound``: those of the inputs
        ``bound`` (and ``_err``), the diff the product of ``_d{i}`` and ``_d{j}`` (made
        once)."""
        def make() -> Columns:
            kept = [name for k in sorted(bound) for name in (
                *[f"j{k}_c{c}" for c in range(self.inputs[k].arity)], f"_t{k}",
                *([] if k == i else [f"_d{k}"]))]
            return columns(spark, *kept, *([ERR] if self.checks else []),
                           (col(f"_d{i}") * col(f"_d{j}")).alias(f"_d{i}"))
        return self.built(("times_diffs", bound, i, j), make)

    def _new_output(self, i: int) -> list[Column]:
        names = [f"j{k}_c{c}" for k, op in enumerate(self.inputs) for c in range(op.arity)]
        failed = [described(col(ERR), [col(n) for n in names]).alias(ERR)] if self.checks \
            else []
        return [*[col(n).alias(f"c{x}") for x, n in enumerate(names)], *failed,
                col(f"_t{i}").alias(TIME), col(f"_d{i}").alias(DIFF)]

    def _keyed(self, bound: frozenset[int], new: int) -> bool:
        """Whether an equality links input ``new`` to the inputs ``bound``."""
        now = bound | {new}
        return any(any(used <= bound for _, used in cls)
                   and any(used <= now and not used <= bound for _, used in cls)
                   for cls in self._members())

    def _estimate(self, ctx: StepContext, i: int, deltas: list[Delta | None]) -> int | None:
        """A bound on the rows of path ``i`` up to its first lookup by key (the lookups
        before it are cross products of known sizes), when the sizes are known."""
        start = deltas[i]
        rows = None if start is None else start.rows
        if rows is None:
            return None
        bound = frozenset({i})
        for j in self.orders[i]:
            old, delta = self.inputs[j].history_rows(ctx), deltas[j]
            new = 0 if delta is None else delta.rows
            if self._keyed(bound, j) or old is None or new is None:
                break
            rows *= old + new
            bound = bound | {j}
        return rows

    def _keyed_histories(self, ctx: StepContext, i: int, deltas: list[Delta | None]
                         ) -> dict[int, Matched]:
        """The histories path ``i`` reads by key: an input it looks up whose plain column an
        equivalence class equates with a plain column of an input whose values the driver
        knows (input ``i``'s changes, or an input read by key earlier on the path, with its
        changes when the path sees them) keeps only its rows holding one of those values
        (``history_matching``, a superset of the rows the lookup can match). The other
        inputs are read whole."""
        if ctx.first:
            return {}
        start = self.inputs[i]
        known: dict[int, Callable[[int], pa.Array | None]] = {
            i: lambda c: start.step_values(ctx, c)}
        read: dict[int, Matched] = {}
        for j in self.orders[i]:
            pairs = self.built(("key pairs", j), functools.partial(self._key_pairs, j))
            for k, k_column, j_column in pairs:
                values = known[k](k_column) if k in known else None
                matched = None if values is None else self.inputs[j].history_matching(
                    ctx, j_column, values)
                if matched is not None:
                    read[j] = matched
                    sees = deltas[j] is not None and not (ctx.single_time and j > i)
                    known[j] = self._values_seen(ctx, j, matched, sees)
                    break
        return read

    def _values_seen(self, ctx: StepContext, j: int, matched: Matched, sees: bool
                     ) -> Callable[[int], pa.Array | None]:
        """The values a column of input ``j`` may hold on a path that read its history by
        key (``matched``) and, when it ``sees`` them, its changes of the step."""
        def values(column: int) -> pa.Array | None:
            old = matched.values(column)
            if old is None or not sees:
                return old
            new = self.inputs[j].step_values(ctx, column)
            return None if new is None else pc.unique(
                pa.chunked_array([old, new.cast(old.type)]))
        return values

    def _key_pairs(self, j: int) -> list[tuple[int, int, int]]:
        """``(k, column of k, column of j)`` for each pair of plain columns, of another
        input k and of input ``j`` (each counted within its input), that an equivalence
        class says are equal."""
        offsets = offsets_of([op.arity for op in self.inputs])
        pairs = []
        for cls in self.equivalences:
            plain = [(input_at(offsets, m.index), m.index) for m in cls if isinstance(m, Col)]
            pairs += [(k, at_k - offsets[k], at_j - offsets[j])
                      for k, at_k in plain for owner, at_j in plain if owner == j and k != j]
        return pairs

    def _too_many(self, how: str) -> str:
        return (f"{self.label} {how} {self.max_rows} rows in one step (raise the limit with "
                "matview.connect(max_join_rows=...))")

    def _counted(self, out: DataFrame) -> DataFrame:
        """``out``, failing its job once a partition of it has produced more than
        ``max_rows`` rows (a small step's output is one partition: then exactly)."""
        def make() -> Column:
            produced = F.monotonically_increasing_id().bitwiseAND(F.lit((1 << 33) - 1))
            over = F.raise_error(F.lit(self._too_many("produced more than")))
            return F.when(produced >= self.max_rows, over).otherwise(F.lit(True))
        return out.where(self.built("counted", make))

    def compute(self, ctx: StepContext) -> Delta | None:
        deltas = [op.delta(ctx) for op in self.inputs]
        for i in range(len(deltas)):
            estimate = self._estimate(ctx, i, deltas)
            if estimate is not None and estimate > self.max_rows:
                raise RowLimitExceeded(self._too_many(f"would produce up to {estimate:,}, more "
                                                      "than"))
        histories: dict[int, DataFrame | None] = {}
        known = [op.history_rows(ctx) for op in self.inputs]  # None: unknown without a job
        paths: list[_PathInputs] = []
        for i, start in enumerate(deltas):
            if start is None:
                continue
            sizes, olds = list(known), {}
            for j, matched in self._keyed_histories(ctx, i, deltas).items():
                olds[j], sizes[j] = matched.frame, matched.rows
            for j in self.orders[i]:
                if j not in olds:
                    if j not in histories:
                        histories[j] = self.inputs[j].history(ctx)
                    olds[j] = histories[j]
            # what path i sees of an input j it looks up: its history, plus its changes of
            # this step unless all changes share one time and j comes later (Alt/Neu: those
            # are at `< t`)
            seen = tuple(None if delta is None or j not in olds or (
                ctx.single_time and j > i) else delta.df for j, delta in enumerate(deltas))
            large = tuple((size or 0) > active().large_lookup_rows for size in sizes)
            paths.append((i, start.df, tuple(olds.get(j) for j in range(len(deltas))), seen,
                          large))
        made = tuple(paths)
        out, failed = self.planned("output", (ctx.small, made),
                                   lambda: self._output(ctx.small, made))
        if out is None:
            return None
        if failed is not None:
            self.errors = Delta(failed, None)
        if not self.keep_history:
            return Delta(out, None)
        assert self.output is not None
        leaf = materialize(ctx.spark, consolidate(out), ctx.small)
        self.stage(self.output, leaf, ctx)
        return None if leaf is None else Delta(None, leaf.rows, leaf, count=leaf.rows)

    def _output(self, small: bool, paths: tuple[_PathInputs, ...]
                ) -> tuple[DataFrame | None, DataFrame | None]:
        """The step's output over its ``paths`` (each: the input it starts from, that
        input's changes, what it reads of each input's history and changes, and which
        inputs it looks up as large), and the rows on which a predicate failed (None when
        none can)."""
        made = [self._path(small, i, start, [union_all([p for p in (old, new) if p is not None])
                                             for old, new in zip(olds, seen)], large)
                for i, start, olds, seen, large in paths]
        out = union_all([p for p in made if p is not None])
        if out is None:
            return None, None
        out = self._counted(out)
        if self.checks:
            return split_errors(out)
        return out, None

    def children(self) -> tuple[Operator, ...]:
        return self.inputs
