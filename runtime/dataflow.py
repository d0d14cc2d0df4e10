"""A running dataflow: the operators of one plan, stepped from frontier to frontier.

``Dataflow.prepare(upper)`` computes the plan's output delta for the times in
``(frontier, upper]``; the returned ``PendingStep`` applies the operators' staged state only
when ``commit`` is called, so a step that fails midway changes nothing.

``Dataflow.analyze()`` reports, per operator, what it did over the committed steps of the
dataflow's life (``OperatorStats``) and the size of the arrangements it reads or owns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa
from matview.ir import physical
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    SMALL_BATCH_ROWS,
    TIME,
    Leaf,
    any_row,
    consolidate,
    materialize,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.checked import ERR, split_arrow_errors, split_errors
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import (
    ArrangementStats,
    Delta,
    Operator,
    OperatorStats,
    StepContext,
)
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS, JoinOp
from matview.runtime.operators.linear import LinearOp, UnionOp
from matview.runtime.operators.reduce import ReduceOp
from matview.runtime.operators.sources import ConstantOp, GetOp
from matview.runtime.operators.top_k import TopKOp
from matview.runtime.operators.window import WindowOp
from matview.runtime.recursion.let_rec import LetRecOp
from matview.runtime.refresh import RefreshPolicy
from matview.runtime.spark.one_job import OneJob
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote


class PlanError(ValueError):
    """The plan cannot be run (a node the runtime does not execute)."""


def build(node: physical.Operator, spark: SparkSession, trace_of: Callable[[str], Trace],
          limit: int = DEFAULT_ROW_LIMIT, max_join_rows: int = DEFAULT_JOIN_ROWS) -> Operator:
    """The operator tree running physical plan ``node``, each operator given a trace for
    every arrangement the plan says it owns; ``trace_of`` finds the trace of a stored name,
    ``limit`` is the most rows a table function may produce for one input row,
    ``max_join_rows`` the most rows a join may produce in one step."""
    inputs = tuple(build(child, spark, trace_of, limit, max_join_rows) for child in node.inputs)
    op = _operator(node, inputs, trace_of, limit, max_join_rows)
    for arrangement in node.state():
        assert hasattr(op, arrangement.what), f"{op.kind} cannot own {arrangement.what}"
        setattr(op, arrangement.what, Trace(
            spark, op.arrangement_arity(arrangement.what),
            local_rows=op.arrangement_local_rows(arrangement.what)))
    return op


def _operator(node: physical.Operator, inputs: tuple[Operator, ...],
              trace_of: Callable[[str], Trace], limit: int, max_join_rows: int) -> Operator:
    rel = node.relation
    if isinstance(node, physical.Get):
        return GetOp(rel.types, trace=trace_of(node.relation.name), name=node.relation.name)
    if isinstance(node, physical.Constant):
        return ConstantOp(rel.types, rows=node.relation.rows)
    if isinstance(node, physical.Linear):
        return LinearOp(rel.types, input=inputs[0], steps=node.relation.steps, limit=limit)
    if isinstance(node, physical.Union):
        return UnionOp(rel.types, inputs=inputs)
    if isinstance(node, physical.Join):
        return JoinOp(rel.types, inputs=inputs, paths=node.implementation.paths,
                      predicates=node.relation.predicates,
                      keep_history=node.output is not None, max_rows=max_join_rows,
                      label=f"Join %{node.id}")
    if isinstance(node, physical.Reduce):
        return ReduceOp(rel.types, input=inputs[0], group_key=node.relation.group_key,
                        aggregates=node.relation.aggregates)
    if isinstance(node, physical.TopK):
        return TopKOp(rel.types, input=inputs[0], order_by=node.relation.order_by,
                      limit=node.relation.limit, offset=node.relation.offset)
    if isinstance(node, physical.Window):
        return WindowOp(rel.types, input=inputs[0], partition_by=node.relation.partition_by,
                        calls=node.relation.calls)
    if isinstance(node, physical.LetRec):
        return LetRecOp(rel.types, inputs=inputs, loop=node.relation,
                        invariants=tuple(child.relation for child in node.inputs), limit=limit)
    raise PlanError(f"the runtime cannot execute {node.kind}")


def operators(root: Operator) -> Iterator[Operator]:
    """Every operator under ``root`` (inputs before consumers)."""
    for child in root.children():
        yield from operators(child)
    yield root


@dataclass
class PendingStep:
    """A computed step whose state changes wait for ``commit``: its output ``delta`` and
    the ``errors`` its operators found (updates of one text column, the message). ``job``
    is where its operators asked for the results they keep (``runtime.one_job``)."""

    dataflow: Dataflow
    delta: Delta | None
    lower: int
    upper: int
    small: bool
    errors: Delta | None = None
    job: OneJob | None = None
    _asked: bool = False
    _got: dict[str, Leaf | None] = field(default_factory=dict)
    """What the job returned: the batch of ``rows``, of ``errors``."""

    @property
    def output(self) -> DataFrame | None:
        """The step's output updates, consolidated (a lazy plan)."""
        return None if self.delta is None else consolidate(self.delta.df)

    def error(self) -> str | None:
        """An error the step's output holds once consolidated (one Spark job), or None."""
        if self.errors is None:
            return None
        found = any_row(self.errors.df)
        return None if found is None else str(found[0])

    def want(self) -> None:
        """Ask the step's job (a small step's) for the output updates and the errors the
        driver does not hold yet: when both, as one batch of rows with ``_err`` (NULL for
        rows, NULL rows for errors). Asks once."""
        if self._asked or not self.small or self.job is None:
            return
        self._asked = True
        spark = self.dataflow.spark
        rows, errors = not _held(self.delta), not _held(self.errors)
        if rows and errors:
            assert self.errors is not None
            self.job.want(self._consolidated(
                "merged", (None if self.delta is None else self.delta.df, self.errors.df),
                self._merged), self._split)
        elif rows:
            assert self.delta is not None
            delta = self.delta.df
            self.job.want(self._consolidated("rows", (delta,), lambda: delta),
                          lambda table: self._got.update(rows=stored_or_none(spark, table)))
        elif errors:
            assert self.errors is not None
            failed = self.errors.df
            self.job.want(self._consolidated("errors", (failed,), lambda: failed),
                          lambda table: self._got.update(errors=stored_or_none(spark, table)))

    def _consolidated(self, what: str, inputs: tuple[DataFrame | None, ...],
                      make: Callable[[], DataFrame]) -> DataFrame:
        """``consolidate(make())``, made once for the same ``inputs`` (kept by the root
        operator, ``Operator.planned``): a step of the same shape as a recent one wants the
        same frame."""
        return self.dataflow.root.planned(("consolidated", what), inputs,
                                          lambda: consolidate(make()))

    def _merged(self) -> DataFrame:
        """The output updates and the errors as one batch of rows with ``_err``."""
        assert self.errors is not None
        errors = self.errors.df
        if self.delta is None:
            return errors.select(col("c0").alias(ERR), TIME, DIFF)
        rows = self.delta.df
        row_columns, error_columns = self.dataflow.merged_columns(rows.schema)
        return rows.select(*row_columns).unionByName(errors.select(*error_columns))

    def _split(self, table: pa.Table) -> None:
        """Keep the rows and errors of a ``_merged`` batch held in the driver."""
        ok, failed = split_arrow_errors(table)
        spark = self.dataflow.spark
        self._got.update(rows=None if self.delta is None else stored_or_none(spark, ok),
                         errors=stored_or_none(spark, failed))

    def materialized(self) -> tuple[Leaf | None, Leaf | None]:
        """The output updates and the errors as batches to keep. A small step's come from
        its one job (``want``), which also computes every result its operators keep, or are
        already held in the driver. A large step's updates are kept as they are when their
        plans are narrow over leaves (readers consolidate), else computed (with its errors
        when it has some); its errors are computed apart (such steps are few) and, being
        few as a rule, kept in the driver, where every read of the view checks them without
        a job."""
        self.want()
        if self.job is not None:
            self.job.run()
        if self._asked:
            return (self._got["rows"] if "rows" in self._got else _held_leaf(self.delta),
                    self._got["errors"] if "errors" in self._got else _held_leaf(self.errors))
        spark = self.dataflow.spark
        if self.errors is None or (_narrow(self.delta) and _narrow(self.errors)):
            errors = None if self.errors is None else materialize(
                spark, consolidate(self.errors.df), small=False)
            return _leaf_of(self.delta, spark, self.small), errors
        if self.delta is None:
            return None, materialize(spark, consolidate(self.errors.df), small=False)
        leaf = materialize(spark, consolidate(self._merged()), small=False)
        if leaf is None:
            return None, None
        if leaf.table is not None:
            self._split(leaf.table)
            return self._got["rows"], self._got["errors"]
        rows, errors = split_errors(leaf.df)
        return (Leaf(rows, leaf.rows, exact=False),
                materialize(spark, consolidate(errors), small=False))

    def less(self, trace: Trace, upto: int, at: int) -> PendingStep:
        """Recompute-and-diff: this step (a first step, the contents at ``upper``) less
        ``trace``'s contents (rows and errors) up to ``upto``, all at time ``at``: the
        change of a view whose trace held its contents at ``upto``. Committing it commits
        this step's dataflow."""
        assert trace.errors is not None
        return PendingStep(self.dataflow, _less(self.delta, trace, upto, at), upto,
                           self.upper, False, _less(self.errors, trace.errors, upto, at),
                           self.job)

    def commit(self) -> None:
        """Apply the state the step's operators staged (running its job first, if nothing
        has: the results they keep come from it)."""
        if self.job is not None:
            self.job.run()
        for op in operators(self.dataflow.root):
            op.commit()
            op.meter.commit()
        self.dataflow.frontier = self.upper


def _less(delta: Delta | None, trace: Trace, upto: int, at: int) -> Delta | None:
    """``delta`` less ``trace``'s updates up to ``upto``, every update at ``at``."""
    held = trace.read(upto=upto)
    frames = [] if delta is None else [delta.df]
    if held is not None:
        frames.append(held.withColumn(DIFF, -col(DIFF)))
    frames = [df.withColumn(TIME, F.lit(at).cast("bigint")) for df in frames]
    df = union_all(frames)
    return None if df is None else Delta(df, None)


def _read_toward_output(root: Operator) -> Iterator[Operator]:
    """``root`` and the operators whose output reaches ``root``'s through Linears that
    only rearrange columns (which pick them in Arrow from the batch the driver holds)."""
    yield root
    if isinstance(root, LinearOp) and root.rearranges:
        assert root.input is not None
        yield from _read_toward_output(root.input)


def _held(delta: Delta | None) -> bool:
    """Whether the driver holds ``delta``'s rows (none; a batch or its copy; ``later``)."""
    return delta is None or delta.later is not None or (
        delta.leaf is not None and delta.leaf.in_driver is not None)


def _held_leaf(delta: Delta | None) -> Leaf | None:
    """The batch of a delta the driver holds (``_held``)."""
    if delta is None:
        return None
    if delta.later is not None:
        return delta.later()
    assert delta.leaf is not None
    return delta.leaf


def _narrow(delta: Delta | None) -> bool:
    """Whether ``delta`` can be kept as it is (no delta, a batch, or narrow over leaves)."""
    return delta is None or delta.leaf is not None or delta.rows is not None


def _leaf_of(delta: Delta | None, spark: SparkSession, small: bool) -> Leaf | None:
    """``delta`` as a batch to keep (see ``PendingStep.materialized``)."""
    if delta is None:
        return None
    if delta.leaf is not None:
        return delta.leaf
    if delta.rows is not None:
        return Leaf(delta.df, delta.rows, exact=delta.count == delta.rows)
    return materialize(spark, consolidate(delta.df), small)


def _union(deltas: list[Delta]) -> Delta | None:
    """The sum of ``deltas`` (None when there are none); its size is bounded when theirs are.
    A single delta is itself (a batch stays one, held where it is)."""
    if len(deltas) == 1:
        return deltas[0]
    df = union_all([d.df for d in deltas])
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
        self.reads = physical.reads(plan)
        self.root = build(plan, spark, trace_of, limit, max_join_rows)
        self._merged: dict[T.StructType, tuple[list[Column], list[Column]]] = {}
        for op in _read_toward_output(self.root):
            if isinstance(op, ReduceOp):
                op.deferred = True
        self._owned = [(arrangement, getattr(op, arrangement.what))
                       for node, op in zip(physical.operators(plan), operators(self.root))
                       for arrangement in node.state()]
        """Each arrangement the plan's operators own, with its trace."""
        for op in operators(self.root):
            op.meter.enabled = measure

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

    def _pending(self, upper: int) -> tuple[StepContext, int, set[tuple[int, int]]]:
        """For a step to ``upper``: its context before sizes are known, the update rows it
        reads from its sources (a bound) and the time ranges of the batches they are in."""
        probe = StepContext(self.spark, self.frontier, upper, self.as_of, True)
        sources = self.sources()
        return (probe, sum(op.pending_rows(probe) for op in sources),
                {r for op in sources for r in op.pending_times(probe)})

    def inputs(self, upper: int) -> tuple[int, int, int | None]:
        """For a step to ``upper``: how many update rows it reads from its sources (a
        bound), how many they hold up to ``upper``, and the one time its changes have
        (None: several, or a temporal filter may change the output at others)."""
        _, changed, times = self._pending(upper)
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

    def temporal(self) -> list[LinearOp]:
        """The operators holding future updates (those with a temporal filter)."""
        return [op for op in operators(self.root) if isinstance(op, LinearOp) and op.temporal]

    def next_time(self) -> int | None:
        """The earliest time at which an update waits in a temporal operator (None: none)."""
        times = [t for t in (op.next_time() for op in self.temporal()) if t is not None]
        return min(times, default=None)

    def prepare(self, upper: int, job: OneJob | None = None) -> PendingStep:
        """Compute the output updates with times in ``(frontier, upper]``, consolidated.

        A step runs when a source changed in that range or a temporal operator holds
        updates due in it. All input updates share one time only on the first step, or
        when every source change has one time and no temporal operator may release or
        emit updates at other times. ``job``: where its operators ask for the results they
        keep, a refresh's one job shared with other dataflows (by default the step's own,
        run when it is ``materialized``)."""
        for op in operators(self.root):
            op.abandon()
            op.meter.abandon()
            op.meter.harvest()
        probe, pending, times = self._pending(upper)
        temporal = self.temporal()
        waiting = sum(op.pending.rows for op in temporal if op.pending is not None)
        due = self.next_time()
        single = (len(times) <= 1 and all(lo == hi for lo, hi in times)
                  and (probe.first or not temporal))
        job = job or OneJob()
        ctx = StepContext(self.spark, self.frontier, upper, self.as_of,
                          pending + waiting <= SMALL_BATCH_ROWS, single, job)
        if not ctx.first and pending == 0 and (due is None or due > upper):
            return PendingStep(self, None, ctx.lower, upper, True)
        delta = self.root.delta(ctx)
        errors = [op.errors for op in operators(self.root) if op.errors is not None]
        return PendingStep(self, delta, ctx.lower, upper, ctx.small, _union(errors), job)

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
                arrangements.append(ArrangementStats(op.name, "shared", op.trace.rows,
                                                     op.trace.bytes))
            arrangements += [ArrangementStats(a.name, "owned", trace.rows, trace.bytes)
                             for a, trace in self._owned if a.owner == i]
            rows_in = op.meter.rows if isinstance(op, GetOp) else sum(
                child.meter.rows for child in op.children())
            out.append(OperatorStats(op.kind, op.meter.steps, rows_in, op.meter.rows,
                                     op.meter.seconds, tuple(arrangements)))
        return out

    def compact(self, since: int) -> None:
        for trace in self.state():
            trace.compact(since)


def drain_listeners(spark: SparkSession) -> None:
    """Wait until Spark's listener bus has delivered the events of the jobs that have run:
    an observation's count arrives through it, after the job's action returned. (Spark
    Connect clients receive the counts with the results instead: nothing to wait for.)"""
    jsc = getattr(spark.sparkContext, "_jsc", None) if not is_remote() else None
    if jsc is None:
        return
    try:
        jsc.sc().listenerBus().waitUntilEmpty()
    except Exception:  # an internal method: counting what has arrived is still right
        pass
