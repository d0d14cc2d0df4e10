"""Delta joins on Spark (seeds 001 and 003), run as the physical plan's ``DeltaJoin`` says.

Path i starts from input i's changes, filtered by the path's equalities and closure, and
looks the other inputs up in the order of its stages. Each looked-up input j is its history
(updates up to the step's ``lower``, all older than any change of the step) plus its own
changes of this step, of which path i sees those at the times the stage names (``<= t``
when ``j < i`` and ``< t`` when ``j > i``: the Alt/Neu order, under which changes at the
same time are counted exactly once), where the stage's stream key equals its lookup key and
its other equalities hold; then the stage's closure filters the joined rows. Keys, times,
equalities and predicates all come from the plan (``planner.lower``): this module derives
none of them. A group of stages the plan extends by counts (``physical.Extension``) runs
worst-case optimally in a step that is not small (``join_extension``; a small step runs it
in its first order, in the driver). The output update of a path has the changing update's
time and the product of the diffs. No intermediate state is kept.

Inside a recursive query's loop (``rounds``) the same paths run over times (transaction,
round), product-ordered (``runtime.recursion``): in round r an input's changes are its
differences of round r, its history its differences of earlier steps at every round and of
this step at earlier rounds (newer times than ``lower`` among them). Path i sees the
changes of round r of the inputs before it and not of those after it (Alt/Neu by input
order, so a pair of round r counts once; no time comparison, which the history's new
times would fail), and its output update has the least upper bound of its updates' times:
the latest time and the latest round (``ROUND``), a round after r when a looked-up
difference of an earlier step is of a later round. So each pair of differences with a
difference of this step is joined once, in the round of the later of them.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa
from matview.ir import physical
from matview.ir.functions import EvalError
from matview.ir.scalar import Scalar, may_fail
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    ROUND,
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
from matview.runtime.lowering.types import arrow_type, col
from matview.runtime.operators.base import ArrangedWhenLookedUp, Delta, Operator, StepContext
from matview.runtime.operators.join_extension import by_counts, extend, index_counts
from matview.runtime.operators.join_reads import (
    Values,
    keyed_histories,
    output_values,
    unkeyed_rows,
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


_PathInputs = tuple[int, DataFrame, tuple[DataFrame | None, ...], tuple[DataFrame | None, ...],
                    tuple[bool, ...], tuple[bool, ...], tuple[tuple[DataFrame | None, ...], ...]]
"""What a path of a step is built from (``JoinOp._output``)."""

_TIMES: dict[str, Callable[[Column, Column], Column]] = {"<=": operator.le, "<": operator.lt}
"""A stage's time comparison: the looked-up update's time against the change's."""


@dataclass(frozen=True)
class CompiledStage:
    """What ``JoinOp`` compiled one stage of a delta path from (the start of the path:
    ``time`` None, no keys): a record, kept in ``JoinOp.compiled``, by which a test checks
    that the runtime ran the keys, times, equalities and predicates the plan names."""

    stream_key: tuple[Scalar, ...]
    key: tuple[Scalar, ...]
    time: str | None
    equalities: tuple[physical.Equality, ...]
    closure: tuple[Scalar, ...]


_Stage = tuple[Column | None, list[Checked]]
"""A compiled stage: its lookup condition (at the path's start, the filter of its
equalities, None when it has none) and the checks of its closure."""


@dataclass
class JoinOp(ArrangedWhenLookedUp, Operator):
    """``Join`` executed as a delta query; keeps an arrangement of its own output only when a
    consumer needs the join's history (it holds the joined rows that passed ``predicates``).

    A step producing more than ``max_rows`` rows fails: before running when the paths'
    cross products of known sizes say so (a path's own changes, however many, are not a
    runaway: a view's first step over a large table starts from all of it), else while
    running, per partition of its output (``_counted``).

    ``paths`` are the plan's delta paths, run as they say: each of ``predicates`` is
    evaluated in the closure of the stage the plan places it in."""

    kind: ClassVar[str] = "Join"
    arranges: ClassVar[tuple[str, ...]] = ("output",)

    inputs: tuple[Operator, ...] = ()
    predicates: tuple[Scalar, ...] = ()
    paths: tuple[physical.DeltaPath, ...] = ()
    """Per input i, path i (the plan's ``DeltaJoin``)."""
    compiled: dict[tuple[int, int | None], CompiledStage] = field(default_factory=dict)
    """What each stage of each path was compiled from, by (path, input looked up; None:
    the path's start)."""
    keep_history: bool = False
    rounds: bool = False
    """Whether it runs inside a recursive query's loop, over times (transaction, round) (the
    module docstring): its inputs' updates and its output's have a ``ROUND``."""
    output: Trace | None = None
    max_rows: int = DEFAULT_JOIN_ROWS
    label: str = "Join"
    """How errors name it (the dataflow numbers it as EXPLAIN PHYSICAL does: ``Join %3``)."""
    _known: tuple[StepContext, list[dict[int, Values]]] | None = field(
        default=None, init=False, repr=False)
    """The step whose paths ran, and per path the values known of its inputs' columns."""

    def _prefixed(self, df: DataFrame, index: int) -> DataFrame:
        """Input ``index``'s batch with columns ``j{index}_c{k}``, ``_t{index}``,
        ``_d{index}`` (and ``_r{index}`` inside a loop)."""
        return select(df, self.built(("rename", index), lambda: columns(
            df.sparkSession,
            *[col(f"c{k}").alias(f"j{index}_c{k}") for k in range(self.inputs[index].arity)],
            col(TIME).alias(f"_t{index}"), col(DIFF).alias(f"_d{index}"),
            *([col(ROUND).alias(f"_r{index}")] if self.rounds else []))))

    def _column_refs(self) -> list[Column]:
        return [col(f"j{i}_c{k}") for i, op in enumerate(self.inputs) for k in range(op.arity)]

    def stages(self, i: int) -> list[_Stage]:
        """Path ``i`` compiled: its start, then each of its lookups (made once)."""
        def make() -> list[_Stage]:
            path = self.paths[i]
            return [self._stage(i, None, CompiledStage((), (), None, path.equalities,
                                                       path.closure)),
                    *[self._stage(i, s.input, CompiledStage(s.stream_key, s.key, s.time,
                                                            s.equalities, s.closure))
                      for s in path.lookups]]
        return self.built(("stages", i), make)

    def extension_stages(self, i: int, n: int) -> list[list[_Stage]]:
        """The stages of each order of path ``i``'s extension ``n`` compiled (made once; not
        recorded in ``compiled``, where the path's own stages, its first order, are)."""
        def make() -> list[list[_Stage]]:
            return [[self._stage(i, s.input, CompiledStage(s.stream_key, s.key, s.time,
                                                           s.equalities, s.closure), False)
                     for s in order] for order in self.paths[i].extensions[n].orders]
        return self.built(("extension", i, n), make)

    def _stage(self, i: int, j: int | None, stage: CompiledStage,
               record: bool = True) -> _Stage:
        """The condition and checks of path ``i``'s stage looking input ``j`` up (``j``
        None: its start), compiled from ``stage`` and recorded in ``compiled``: the stream
        key over the path's columns equals the lookup key over input ``j``'s, the other
        equalities hold and the looked-up update's time compares with the change's as
        ``stage.time`` says (inside a loop by input order alone: the module docstring)."""
        if record:
            self.compiled[(i, j)] = stage
        refs = self._column_refs()
        equal = [self._compile(a, refs) == self._compile(b, refs) for a, b in stage.equalities]
        if j is not None:
            own = [col(f"j{j}_c{k}") for k in range(self.inputs[j].arity)]
            equal = [compile_scalar(s, refs, self.types)
                     == compile_scalar(k, own, self.inputs[j].types)
                     for s, k in zip(stage.stream_key, stage.key, strict=True)] + equal
        checks = [compile_checked(p, refs, self.types) for p in stage.closure]
        if stage.time is not None and not self.rounds:
            assert j is not None
            equal = [_TIMES[stage.time](col(f"_t{j}"), col(f"_t{i}")), *equal]
        if equal:
            return functools.reduce(Column.__and__, equal), checks
        return (None if stage.time is None else F.lit(True)), checks  # a lookup: all pairs

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

    def _compile(self, expr: Scalar, refs: list[Column]) -> Column:
        return compile_scalar(expr, refs, self.types)

    @property
    def checks(self) -> bool:
        """Whether its predicates may fail on some row (it has an error output: the joined
        rows on which a predicate fails, a bilinear function of the inputs like the join)."""
        return any(may_fail(p) for p in self.predicates)

    def _path(self, small: bool, i: int, start: DataFrame, others: list[DataFrame | None],
              large: tuple[bool, ...], counted: tuple[bool, ...],
              counts: tuple[tuple[DataFrame | None, ...], ...]) -> DataFrame | None:
        (own, checks), *stages = self.stages(i)
        found: DataFrame | None = self._prefixed(start, i)
        assert found is not None
        if self.checks:
            found = found.withColumn(ERR, F.lit(None).cast("string"))
        if own is not None:
            found = found.where(own)
        if checks:
            found = self._filter(found, checks)
        bound, k, lookups = frozenset({i}), 0, self.paths[i].lookups
        extensions = {e.first: n for n, e in enumerate(self.paths[i].extensions) if counted[n]}
        while k < len(lookups) and found is not None:
            if k in extensions:
                n = extensions[k]
                found, k = self._extended(small, i, n, found, bound, others, counts[n],
                                          large), \
                    k + len(self.paths[i].extensions[n].orders)
            else:
                found, k = self._joined(small, i, found, lookups[k], stages[k], bound,
                                        others, large), k + 1
            bound = bound | {lk.input for lk in lookups[:k]}
        if found is None:
            return None
        return select(found, self.built(("output", i), lambda: columns(
            found.sparkSession, *self._new_output(i))))

    def _joined(self, small: bool, i: int, path: DataFrame, stage: physical.Lookup,
                compiled: _Stage, bound: frozenset[int], others: list[DataFrame | None],
                large: tuple[bool, ...]) -> DataFrame | None:
        """Path ``i``'s rows (of the inputs ``bound``) joined by ``stage`` (``compiled``)
        with what the path reads of its input (None: that input holds nothing)."""
        (condition, checks), j, other = compiled, stage.input, others[stage.input]
        if other is None:
            return None
        other = self._prefixed(other, j)
        assert condition is not None
        path = lookup(path, other, condition, "inner", small, build="left", large=large[j])
        path = select(path, self._times_diffs(path.sparkSession, bound | {j}, i, j))
        return self._filter(path, checks) if checks else path

    def _extended(self, small: bool, i: int, n: int, path: DataFrame, bound: frozenset[int],
                  others: list[DataFrame | None], counts: tuple[DataFrame | None, ...],
                  large: tuple[bool, ...]) -> DataFrame | None:
        """Path ``i``'s rows extended by its extension ``n`` (``join_extension.extend``)."""
        extension, stages = self.paths[i].extensions[n], self.extension_stages(i, n)
        refs = self._column_refs()
        return extend(path, extension, bound, small, others, counts,
                      lambda s: [self._compile(e, refs) for e in s.stream_key],
                      lambda j, k: compile_scalar(k, [col(f"c{c}") for c in range(
                          self.inputs[j].arity)], self.inputs[j].types),
                      lambda rows, m, s, seen: self._joined(
                          small, i, rows, extension.orders[m][s], stages[m][s], seen,
                          others, large))

    def _times_diffs(self, spark: SparkSession, bound: frozenset[int], i: int,
                     j: int) -> Columns:
        """Path ``i``'s columns once input ``j`` joined ``bound``: those of the inputs
        ``bound`` (and ``_err``), the diff the product of ``_d{i}`` and ``_d{j}`` (made
        once)."""
        def make() -> Columns:
            kept = [name for k in sorted(bound) for name in (
                *[f"j{k}_c{c}" for c in range(self.inputs[k].arity)], f"_t{k}",
                *([f"_r{k}"] if self.rounds else []), *([] if k == i else [f"_d{k}"]))]
            return columns(spark, *kept, *([ERR] if self.checks else []),
                           (col(f"_d{i}") * col(f"_d{j}")).alias(f"_d{i}"))
        return self.built(("times_diffs", bound, i, j), make)

    def _new_output(self, i: int) -> list[Column]:
        names = [f"j{k}_c{c}" for k, op in enumerate(self.inputs) for c in range(op.arity)]
        failed = [described(col(ERR), [col(n) for n in names]).alias(ERR)] if self.checks \
            else []
        ins = range(len(self.inputs))
        times = [_latest([col(f"_r{k}") for k in ins]).alias(ROUND),
                 _latest([col(f"_t{k}") for k in ins]).alias(TIME)] if self.rounds else [
                 col(f"_t{i}").alias(TIME)]
        return [*[col(n).alias(f"c{x}") for x, n in enumerate(names)], *failed, *times,
                col(f"_d{i}").alias(DIFF)]

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        """Values column ``column`` of the step's output may hold (``output_values``)."""
        if self._known is None or self._known[0] is not ctx:
            return None
        return output_values(self.inputs, self._known[1], column,
                             arrow_type(self.types[column]))

    def _alt_neu(self, ctx: StepContext) -> bool:
        """Whether a path sees the changes of the inputs before its own only (all changes
        of the step share one time, or, inside a loop, one round)."""
        return ctx.single_time or self.rounds

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
            estimate = unkeyed_rows(self.inputs, self.paths[i], ctx, deltas)
            if estimate is not None and estimate > self.max_rows:
                raise RowLimitExceeded(self._too_many(f"would produce up to {estimate:,}, more "
                                                      "than"))
        histories: dict[int, DataFrame | None] = {}
        known = [op.history_rows(ctx) for op in self.inputs]  # None: unknown without a job
        paths: list[_PathInputs] = []
        self._known = (ctx, [])
        frames = [None if d is None else self.frame_of(ctx, ("delta", i), d)
                  for i, d in enumerate(deltas)]
        for i, start in enumerate(deltas):
            if start is None:
                continue
            sizes, olds = list(known), {}
            read, values = keyed_histories(self.inputs, self.paths[i], ctx, deltas,
                                           self._alt_neu(ctx))
            self._known[1].append(values)
            for j, matched in read.items():
                olds[j], sizes[j] = matched.frame, matched.rows
            for j in self.paths[i].order:
                if j not in olds:
                    if j not in histories:
                        histories[j] = self.inputs[j].history(ctx)
                    olds[j] = histories[j]
            # what path i sees of an input j it looks up: its history, plus its changes of
            # this step unless all changes share one time (or are of one round) and j comes
            # later (Alt/Neu: those are at `< t`)
            seen = tuple(None if delta is None or j not in olds or (
                self._alt_neu(ctx) and j > i) else frames[j] for j, delta in enumerate(deltas))
            large = tuple((size or 0) > active().large_lookup_rows for size in sizes)
            counted = by_counts(self.paths[i], ctx.small, sizes, deltas)
            paths.append((i, frames[i], tuple(olds.get(j) for j in range(len(deltas))), seen,
                          large, counted, index_counts(self.inputs, self.paths[i], ctx,
                                                       counted)))
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
        inputs it looks up as large, which extensions it runs by counts and their count
        indexes' counts), and the rows on which a predicate failed (None when none can)."""
        made = [self._path(small, i, start, [union_all([p for p in (old, new) if p is not None])
                                             for old, new in zip(olds, seen)], large, counted,
                           counts) for i, start, olds, seen, large, counted, counts in paths]
        out = union_all([p for p in made if p is not None])
        if out is None:
            return None, None
        out = self._counted(out)
        if self.checks:
            return split_errors(out)
        return out, None

    def children(self) -> tuple[Operator, ...]:
        return self.inputs


def _latest(times: list[Column]) -> Column:
    """The latest of ``times`` (one coordinate of a least upper bound)."""
    return times[0] if len(times) == 1 else F.greatest(*times)
