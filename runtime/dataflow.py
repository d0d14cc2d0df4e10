"""A running dataflow: the operators of one plan, stepped from frontier to frontier.

``Dataflow.prepare(upper)`` computes the plan's output delta for the times in
``(frontier, upper]``; the returned ``PendingStep`` (``runtime.step``) applies the operators'
staged state only when ``commit`` is called, so a step that fails midway changes nothing. The
operators are built from the plan by ``runtime.render``.

``Dataflow.analyze()`` reports, per operator, what it did over the committed steps of the
dataflow's life (``OperatorStats``) and the size of the arrangements it reads or owns.
"""

from __future__ import annotations

from collections.abc import Callable

from matview.ir import physical
from matview.ir.eval_error import EvalError
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import DIFF, TIME, union_all
from matview.runtime.lowering.checked import ERR
from matview.runtime.lowering.types import col
from matview.runtime.operator_recompute import Recomputed, adopt, chosen, recompute
from matview.runtime.operators.base import Delta, Operator, StepContext
from matview.runtime.operators.get import GetOp
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS
from matview.runtime.operators.linear import LinearOp
from matview.runtime.operators.metering import ArrangementStats, OperatorStats, drain_listeners
from matview.runtime.recursion.let_rec import LetRecOp
from matview.runtime.refresh import RefreshPolicy
from matview.runtime.render import build, operators
from matview.runtime.settings import active
from matview.runtime.spark.one_job import OneJob
from matview.runtime.step import PendingStep
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote

LARGE_INPUT = 10
"""A rehearsal (``Dataflow.rehearse``) of a new view changes the inputs holding at least a
tenth of the largest input's rows: the facts of a warehouse change, its dimensions seldom
(TPC-H's refreshes write ``lineitem`` and ``orders``; W1's both its tables at 1M orders,
its orders alone at 10M)."""


def _union(root: Operator, deltas: list[Delta]) -> Delta | None:
    """The sum of ``deltas`` (None when there are none); its size is bounded when theirs are.
    A single delta is itself (a batch stays one, held where it is); the union of the same
    frames is made once (kept by the ``root`` operator: ``Operator.planned``)."""
    if len(deltas) == 1:
        return deltas[0]
    frames = tuple(d.df for d in deltas)
    df = root.planned("errors", frames, lambda: union_all(list(frames)))
    if df is None:
        return None
    sizes = [d.rows for d in deltas]
    return Delta(df, None if None in sizes else sum(r for r in sizes if r is not None))


class Dataflow:
    """The operators of physical ``plan``, reading stored collections through ``trace_of``, whose
    output is correct from time ``as_of`` on (the first step reads every input's snapshot).
    ``measure=False`` turns the operators' meters off (``analyze`` then reports zeros);
    ``max_join_rows`` is the most rows a join may produce in one step; ``policy`` chooses
    how a materialized view's steps run (``runtime.refresh``)."""

    def __init__(self, plan: physical.Operator, spark: SparkSession,
                 trace_of: Callable[[str], Trace], as_of: int,
                 limit: int = DEFAULT_ROW_LIMIT, measure: bool = True,
                 max_join_rows: int = DEFAULT_JOIN_ROWS,
                 policy: RefreshPolicy | None = None) -> None:
        self.plan = plan
        self.policy = policy or RefreshPolicy()
        self.spark = spark
        self.as_of = as_of
        self.frontier = as_of - 1
        self.warm = False
        """Whether a rehearsal or an incremental step has built its plans
        (``refresh.Measured.warming``)."""
        self.changed: frozenset[str] = frozenset()
        """The sources whose changes the last step (not the first) read, or its
        predecessor's last step (``Controller.dataflow``'s ``after``): what a rehearsal
        changes when the dataflow is resumed or replanned (``rehearse``)."""
        self.reads = physical.reads(plan)
        self.arrivals = physical.reads_arrival_times(plan)
        """Whether an operator reads when rows arrived: no step collapses its times."""
        self.root = build(plan, spark, trace_of, limit, max_join_rows)
        self._trace_of, self._limits = trace_of, (limit, max_join_rows)
        self._merged: dict[T.StructType, tuple[list[Column], list[Column]]] = {}
        self._by_id = {node.id: op for node, op in zip(physical.operators(plan),
                                                       operators(self.root))}
        self._owned = self._arranged()
        """Each arrangement the plan's operators own, with its trace."""
        self._recomputing: list[Recomputed] = []
        """The operators the last step prepared recomputes (``runtime.operator_recompute``)."""
        for op in operators(self.root):
            op.meter.enabled = measure

    def _arranged(self) -> list[tuple[physical.Arrangement, Trace]]:
        """Each arrangement the plan's operators own, with the trace holding it."""
        return [(arrangement, getattr(self._by_id[node.id], arrangement.what))
                for node in physical.operators(self.plan) for arrangement in node.state()]

    def merged_columns(self, schema: T.StructType) -> tuple[list[Column], list[Column]]:
        """The columns that put output rows of ``schema`` and errors (``c0``: the message)
        in one batch of rows with ``_err`` (NULL for rows, NULL rows for errors): made once
        per output schema."""
        if schema not in self._merged:
            names = [f.name for f in schema.fields if f.name not in (TIME, DIFF)]
            self._merged[schema] = (
                [*[col(n) for n in names], F.lit(None).cast("string").alias(ERR), col(TIME),
                 col(DIFF)],
                [*[F.lit(None).cast(schema[n].dataType).alias(n) for n in names],
                 col("c0").alias(ERR), col(TIME), col(DIFF)])
        return self._merged[schema]

    @property
    def first(self) -> bool:
        """Whether the next step is the first (it reads every input's snapshot)."""
        return self.frontier < self.as_of

    def _pending(self, upper: int
                 ) -> tuple[StepContext, int, set[tuple[int, int]], frozenset[str]]:
        """For a step to ``upper``: its context before sizes are known, the update rows it
        reads from its sources (a bound), the time ranges of the batches they are in and
        the sources it reads updates from."""
        probe = StepContext(self.spark, self.frontier, upper, self.as_of, True)
        sources = self.sources()
        rows = [op.pending_rows(probe) for op in sources]
        return (probe, sum(rows), {r for op in sources for r in op.pending_times(probe)},
                frozenset(op.name for op, n in zip(sources, rows) if n))

    def inputs(self, upper: int) -> tuple[int, int, int | None]:
        """For a step to ``upper``: how many update rows it reads from its sources (a
        bound), how many they hold up to ``upper``, and the one time its changes have
        (None: several, or a temporal filter may change the output at others)."""
        _, changed, times, _ = self._pending(upper)
        held = sum(op.trace.rows_between(None, upper) for op in self.sources()
                   if op.trace is not None)
        if self.temporal() or len(times) != 1:
            return changed, held, None
        (lo, hi), = times
        return changed, held, lo if lo == hi else None

    def sources(self) -> list[GetOp]:
        return [op for op in operators(self.root) if isinstance(op, GetOp)]

    def state(self) -> list[Trace]:
        """The traces this dataflow owns (not the shared traces of its sources): one per
        arrangement its physical plan's operators declare (``physical.Operator.state``)."""
        return [trace for _, trace in self._owned]

    def arrangements(self) -> dict[str, Trace]:
        """The traces this dataflow owns by arrangement name (``%i.output``...)."""
        return {arrangement.name: trace for arrangement, trace in self._owned}

    def loops(self) -> list[LetRecOp]:
        """The recursive queries' loops it runs, whose state is held beside its
        arrangements (``runtime.recursion.state``)."""
        return [op for op in operators(self.root) if isinstance(op, LetRecOp)]

    def temporal(self) -> list[LinearOp]:
        """The operators holding future updates (those with a temporal filter)."""
        return [op for op in operators(self.root) if isinstance(op, LinearOp) and op.temporal]

    def next_time(self) -> int | None:
        """The earliest time at which an update waits in a temporal operator (None: none)."""
        times = [t for t in (op.next_time() for op in self.temporal()) if t is not None]
        return min(times, default=None)

    def reread(self, at: int) -> PendingStep:
        """A kept read's step (``Controller.read_once``): this dataflow's first step again,
        its contents at ``at`` (every update at its ``as_of``, ``READ_TIME``, the same at
        every read, so that no plan kept names a read's time), never committed; the
        snapshots the driver holds are bound into slots (``StepContext.reread``), so that a
        read of the same shape as one of the last few runs their plans again, building
        none."""
        self.frontier = self.as_of - 1
        return self.prepare(at, reread=True)

    def prepare(self, upper: int, job: OneJob | None = None, collapse: bool = False,
                reread: bool = False) -> PendingStep:
        """Compute the output updates with times in ``(frontier, upper]``, consolidated.

        A step runs when a source changed in that range or a temporal operator holds
        updates due in it. All input updates share one time on the first step, when every
        source change has one time and no temporal operator may release or emit updates at
        other times, or when ``collapse``: no reader sees the times before ``upper`` (nor
        does an operator: ``arrivals``), so the step's updates are advanced to it
        (``StepContext.collapsed``). ``job``: where its operators ask for the results they
        keep, a refresh's one job shared with other dataflows (by default the step's own,
        run when it is ``materialized``); ``reread``: a kept read's (``reread``)."""
        self._abandon()
        collapse = collapse and not self.arrivals
        for op in operators(self.root):
            op.meter.harvest()
        probe, pending, times, changed = self._pending(upper)
        temporal = self.temporal()
        waiting = sum(op.pending.rows for op in temporal if op.pending is not None)
        due = self.next_time()
        single = collapse or (len(times) <= 1 and all(lo == hi for lo, hi in times)
                              and (probe.first or not temporal))
        job = job or OneJob()
        ctx = StepContext(self.spark, self.frontier, upper, self.as_of,
                          pending + waiting <= active().small_step_rows, single, job,
                          collapse and not probe.first, rows=pending + waiting, reread=reread)
        if not ctx.first and pending == 0 and (due is None or due > upper):
            return PendingStep(self, None, ctx.lower, upper, True)
        if not ctx.first:
            self.changed = changed
            at = upper if ctx.collapsed else min(lo for lo, _ in times) \
                if ctx.single_time and times else None
            if at is not None and not ctx.small and not reread and self.policy.per_operator:
                self._recompute(probe, ctx, at)
        return self._computed(ctx)

    def _recompute(self, probe: StepContext, ctx: StepContext, at: int) -> None:
        """Recompute-and-diff the operators whose inputs changed beyond the bound in step
        ``ctx`` (``probe``: its context before sizes are known), every update at ``at``
        (``runtime.operator_recompute``)."""
        for node, label in chosen(self.plan, self._by_id, probe,
                                  active().operator_recompute_change):
            self._recomputing.append(recompute(node, self._by_id, ctx, at, self._fresh,
                                               label))

    @property
    def recomputed(self) -> tuple[str, ...]:
        """What the last step prepared recomputed, per operator, and why."""
        return tuple(r.label for r in self._recomputing)

    def _fresh(self, node: physical.Operator, as_of: int) -> Dataflow:
        """A dataflow of ``node``'s subplan whose first step reads the snapshots at
        ``as_of``, counting no rows."""
        limit, max_join_rows = self._limits
        return Dataflow(node, self.spark, self._trace_of, as_of, limit, False, max_join_rows)

    def adopt(self) -> None:
        """At commit: the operators the step recomputed take their fresh arrangements."""
        for recomputed in self._recomputing:
            adopt(recomputed, self._by_id)
        if self._recomputing:
            self._owned = self._arranged()

    def _computed(self, ctx: StepContext) -> PendingStep:
        """The step ``ctx`` describes: the root's output delta and its operators' errors."""
        delta = self.root.delta(ctx)
        errors = [op.errors for op in operators(self.root) if op.errors is not None]
        return PendingStep(self, delta, ctx.lower, ctx.upper, ctx.small,
                           _union(self.root, errors), ctx.job, ctx.reread)

    def _abandon(self) -> None:
        """Forget what the operators staged in a step that will not commit."""
        self._recomputing = []
        for op in operators(self.root):
            op.abandon()
            op.meter.abandon()

    def rehearse(self) -> None:
        """Build the slots and Spark plans of a small step ahead of it: a step to ``frontier + 1``
        whose sources the last step changed (``changed``: of a dataflow resumed, or taking
        over a view), else its large inputs (``LARGE_INPUT``), read ``rehearsal_rows``
        random rows of theirs as its change, the others none (``StepContext.rehearsal``),
        computed by its one job, then abandoned, as a failed step is: nothing it computed is
        kept. A view's first small step builds its plans (0.8 s of W1's, 20 times a later
        one's); a later small step changing the same inputs, whose batches fit the same
        slots (few sizes: ``templates.slot_for``), reuses them, so such a view's first step
        costs what its tenth does. Not for a loop (its rounds depend on the data), in a
        Spark Connect session (no kept plans), nor for a view whose inputs are small
        (``rehearsal_min_rows``): a rehearsal costs about what building the plans does
        (0.5-0.8 s for a join under a GROUP BY over 3,000 rows, whose CREATE takes 0.7 s
        without it: ``bench small``), which a view over small inputs, often stepped in
        shapes the rehearsal does not foresee, would pay at CREATE for little."""
        settings = active()
        if self.first or self.loops() or is_remote() or not settings.rehearsal_rows:
            return
        held = {op.name: op.trace.rows for op in self.sources() if op.trace is not None}
        largest = max(held.values(), default=0)
        if largest < settings.rehearsal_min_rows:
            return
        large = (self.changed & held.keys()) or frozenset(
            name for name, rows in held.items() if rows and rows * LARGE_INPUT >= largest)
        job = OneJob()
        ctx = StepContext(self.spark, self.frontier, self.frontier + 1, self.as_of, True,
                          True, job, True, rehearsal=large)
        try:
            self._computed(ctx).materialized()
            self.warm = True
        except (EvalError, CapturedException):
            pass  # its rows failed the step (a row limit): the first real step builds them
        finally:
            self._abandon()

    def analyze(self) -> list[OperatorStats]:
        """What every operator did over the committed steps so far, in ``operators`` order
        (inputs before consumers: entry i is the plan's operator ``%i``), with the sizes of
        the arrangements it reads (a ``Get``'s stored collection, "shared") or owns
        ("owned", named ``%i.output``, ``%i.values``, ``%i.pending`` or ``%i.prefix``). Runs
        no Spark job; it first lets Spark deliver the row counts of the jobs that have run
        (see ``OperatorStats`` for what is counted)."""
        drain_listeners(self.spark)
        ops = list(operators(self.root))
        for op in ops:
            op.meter.harvest()
        out: list[OperatorStats] = []
        for i, op in enumerate(ops):
            arrangements: list[ArrangementStats] = []
            if isinstance(op, GetOp):
                assert op.trace is not None
                arrangements.append(_stats(op.name, "shared", op.trace))
            arrangements += [_stats(a.name, "owned", trace)
                             for a, trace in self._owned if a.owner == i]
            rows_in = op.meter.rows if isinstance(op, GetOp) else sum(
                child.meter.rows for child in op.children())
            out.append(OperatorStats(op.kind, op.meter.steps, rows_in, op.meter.rows,
                                     op.meter.seconds, tuple(arrangements)))
        return out

    def compact(self, since: int) -> None:
        for trace in self.state():
            trace.compact(since)


def _stats(name: str, role: str, trace: Trace) -> ArrangementStats:
    """The size of ``trace``, an arrangement ``name`` an operator reads or owns (``role``)."""
    return ArrangementStats(name, role, trace.rows, trace.bytes, len(trace.batches),
                            trace.held, tuple(trace.keys), trace.file_reads)
