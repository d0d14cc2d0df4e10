"""The controller of a catalog's dataflows: it runs plans once (ad hoc reads, the sources of
writes), starts the dataflow of each materialized view with its output trace, schedules the
refreshes (which views step to a time, in which order), steps them, and compacts what no
reader needs any more.

Views step together: the small steps of every view a refresh brings up to date compute
what they keep (their output, their errors, their operators' new state) in one Spark job
(``runtime.one_job``) and commit once it has run; a view reading another waits for the
job of the views before it.

A materialized view's trace holds its rows (the batches a large step computes in Spark are
copied to the driver too, up to ``view_copy_rows``, so that reads run in Arrow);
``trace.errors``
holds its evaluation errors as rows (errors are data: a retraction cancels the error it
caused). A step's outputs are
appended only after the whole step succeeded, so a failed step changes no state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from matview.ir import physical
from matview.ir.functions import EvalError
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.runtime.arrangements.trace import Trace
from matview.runtime.dataflow import Dataflow
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS
from matview.runtime.refresh import Choice, Measured, RefreshPolicy
from matview.runtime.settings import active
from matview.runtime.spark.one_job import OneJob
from matview.runtime.step import PendingStep
from matview.runtime.time import READ_TIME
from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Limits:
    """Resource limits of every dataflow: the most rows a table function may produce for one
    input row, and the most rows a join may produce in one step."""

    table_function_rows: int = DEFAULT_ROW_LIMIT
    join_rows: int = DEFAULT_JOIN_ROWS


@dataclass(frozen=True)
class _Stepping:
    """A view's step begun: the dataflow stepping (a recompute's fresh one), its output
    trace, the pending step and the refresh policy's choice with the sizes it chose from,
    the frontier it steps from, the time it steps to, and the seconds spent so far."""

    flow: Dataflow
    trace: Trace
    step: PendingStep
    choice: Choice
    changed: int
    held: int
    lower: int
    now: int
    seconds: float


class Stored(Protocol):
    """A stored collection as the controller sees it: its trace, and for a materialized view
    the dataflow maintaining it (None for a table)."""

    trace: Trace | None
    dataflow: Dataflow | None


class Views(Protocol):
    """A catalog as the controller schedules its refreshes: its stored collections by name,
    and the dependencies between its objects (``matview.catalog.LiveCatalog``)."""

    @property
    def entries(self) -> Mapping[str, Stored]: ...

    def upstream(self, names: set[str]) -> list[str]: ...

    def dependents(self, name: str) -> list[str]: ...

    def of_kind(self, kind: str) -> list[str]: ...


class Controller:
    """Runs the physical plans of one catalog on one SparkSession; ``trace_of`` finds the
    trace of a stored collection by name; ``refresh`` is how views step (``auto``,
    ``incremental`` or ``recompute``: ``runtime.refresh``)."""

    def __init__(self, spark: SparkSession, trace_of: Callable[[str], Trace],
                 limits: Limits, refresh: str = "auto") -> None:
        self.spark = spark
        self.trace_of = trace_of
        self.limits = limits
        self.setting = refresh
        self._reads: dict[tuple[physical.Operator, tuple[Trace, ...]], Dataflow] = {}
        """The dataflows of the last reads kept (``read_once``), by plan and the stored
        collections it reads (a collection dropped and made again is another)."""

    def dataflow(self, plan: physical.Operator, as_of: int, after: Dataflow | None = None,
                 trace_of: Callable[[str], Trace] | None = None, measure: bool = True
                 ) -> Dataflow:
        """A dataflow of physical ``plan`` whose first step starts from the snapshot at
        ``as_of`` (``after``: the dataflow of the view it takes over from, whose refresh
        policy outlives the dataflows the view recomputes with, and whose last step's
        changed sources it rehearses: ``Dataflow.changed``; ``trace_of``: where it finds
        stored collections, the catalog's by default; ``measure``: whether its operators
        count their rows, ``Dataflow``)."""
        flow = Dataflow(plan, self.spark, trace_of or self.trace_of, as_of=as_of,
                        limit=self.limits.table_function_rows, measure=measure,
                        max_join_rows=self.limits.join_rows,
                        policy=after.policy if after is not None else RefreshPolicy(
                            self.setting, "an as-of join's rows depend on when each row "
                            "arrived: no recompute" if physical.reads_arrival_times(plan)
                            else None))
        if after is not None:
            flow.changed = after.changed
        return flow

    def run_once(self, plan: physical.Operator, now: int,
                 trace_of: Callable[[str], Trace] | None = None) -> DataFrame | None:
        """Physical ``plan``'s contents at ``now``, as consolidated updates (None: empty),
        computed lazily by a dataflow run once (``read_once``); an error the plan's
        evaluation holds is raised (``EvalError``), found by a job of its own."""
        step = self._once(plan, now, trace_of)
        error = step.error()
        if error is not None:
            raise EvalError(error)
        return step.output

    def read_once(self, plan: physical.Operator, now: int,
                  trace_of: Callable[[str], Trace] | None = None, kept: bool = False
                  ) -> PendingStep:
        """The step holding ``run_once``'s contents (``output``) and the messages of the
        errors the plan's evaluation holds, unchecked (``failures``: each once, a lazy plan;
        None when it can hold none): for a reader that computes both in one job and reads
        nothing else of it (``peek.rows``). ``kept``: the dataflow is kept for the reads of
        the same plan over the same stored collections that follow (``reads_kept``), which
        run its plans again over their snapshots (``Dataflow.reread``: every update at
        ``READ_TIME``); not for a read through ``trace_of`` (a transaction's, an index's),
        of a recursive query (its rounds depend on the data) nor of when rows arrived (an as-of
        join on transaction time)."""
        if not kept or trace_of is not None or any(
                isinstance(op, physical.LetRec | physical.AsOfJoin)
                for op in physical.operators(plan)):
            return self._once(plan, now, trace_of)
        key = (plan, tuple(self.trace_of(name) for name in sorted(physical.reads(plan))))
        flow = self._reads.pop(key, None) or self.dataflow(plan, READ_TIME, measure=False)
        self._reads[key] = flow  # the most recent last
        while len(self._reads) > active().reads_kept:
            del self._reads[next(iter(self._reads))]
        return flow.reread(now)

    def forget_reads(self) -> None:
        """Keep no read (``read_once``): a statement may drop what they read."""
        self._reads.clear()

    def _once(self, plan: physical.Operator, now: int,
              trace_of: Callable[[str], Trace] | None) -> PendingStep:
        """The step to ``now`` of a dataflow of ``plan`` run once, reading stored collections
        through ``trace_of`` (by default the catalog's), whose operators count no rows (no
        reader asks: observing them would keep its plan from being computed in the
        driver)."""
        return self.dataflow(plan, now, trace_of=trace_of, measure=False).prepare(now)

    def start(self, plan: physical.Operator, arity: int, now: int) -> tuple[Dataflow, Trace]:
        """The dataflow of a materialized view of physical ``plan`` (``arity`` columns) and
        its output trace, holding the view's contents (and errors) at ``now``, its small
        steps' plans built by a rehearsal (``Dataflow.rehearse``)."""
        flow, trace = self.begun(plan, arity, now)
        flow = self.step(flow, trace, now)
        flow.rehearse()
        return flow, trace

    def begun(self, plan: physical.Operator, arity: int, as_of: int
              ) -> tuple[Dataflow, Trace]:
        """``start`` before its first step: the dataflow, its output trace empty (a
        durable database's views fill them with their saved state: ``matview.durability``)."""
        trace = Trace(self.spark, arity, copy_rows=active().view_copy_rows)
        trace.since = as_of  # it holds nothing of earlier times
        trace.errors = Trace(self.spark, 1)
        return self.dataflow(plan, as_of), trace

    def step(self, flow: Dataflow, trace: Trace, now: int, subscribed: bool = False
             ) -> Dataflow:
        """Step ``flow`` from its frontier to ``now``, appending its output and errors to
        ``trace`` (nothing when the step fails), incrementally or by recompute-and-diff as
        its policy chooses; returns the dataflow that maintains the view from now on (a
        recompute's fresh one), whose change is at the one time of the inputs' changes
        (else at ``now``). ``subscribed``: a subscription reads the view, or a view over
        it, and must see each time apart."""
        job = OneJob()
        stepping = self._begin(flow, trace, now, subscribed, job)
        if stepping is None:
            return flow
        job.run()
        return self._end(stepping)

    def replan(self, flow: Dataflow, trace: Trace, plan: physical.Operator, now: int
               ) -> Dataflow:
        """A dataflow of ``plan`` taking over from ``flow`` the view it maintains into
        ``trace``: another plan of the same rows (a relation it reads was altered:
        ``matview.alter``), started at ``now`` as a recompute's fresh dataflow, whose rows
        are diffed with the view's (nothing changes when they are equal), and rehearsed
        (``Dataflow.rehearse``) changing the sources ``flow``'s last step changed."""
        job = OneJob()
        fresh = self.dataflow(plan, now, after=flow)
        step = fresh.prepare(now, job).less(trace, flow.frontier, now)
        step.want()
        job.run()
        fresh = self._end(_Stepping(fresh, trace, step, Choice("recompute", "replanned"), 0, 0,
                                    flow.frontier, now, 0.0))
        fresh.rehearse()
        return fresh

    def _begin(self, flow: Dataflow, trace: Trace, now: int, subscribed: bool,
               job: OneJob) -> _Stepping | None:
        """``step`` up to its job: the step computed as plans, its results wanted from
        ``job`` (None: nothing to step)."""
        if flow.frontier >= now:
            return None
        started = time.perf_counter()
        changed, held, at = flow.inputs(now)
        choice = flow.policy.choose(changed, held, flow.first, subscribed and at is None)
        lower = flow.frontier
        if choice.strategy == "recompute" and not flow.first:
            flow = self.dataflow(flow.plan, now, after=flow)
            step = flow.prepare(now, job).less(trace, lower, now if at is None else at)
        else:  # none reading the times between: all at ``now``
            step = flow.prepare(now, job, collapse=not subscribed)
        step.want()
        return _Stepping(flow, trace, step, choice, changed, held, lower, now,
                         time.perf_counter() - started)

    def _end(self, stepping: _Stepping, shared: float = 0.0) -> Dataflow:
        """``step`` after its job ran (``shared``: this step's share of the job's time)."""
        started = time.perf_counter()
        flow, trace, step = stepping.flow, stepping.trace, stepping.step
        leaf, failed = step.materialized()
        if not step.small:  # a batch held in Spark: copied to the driver, where reads run
            leaf = trace.with_copy(leaf)
        step.commit()
        assert trace.errors is not None
        trace.append(leaf, stepping.lower + 1, stepping.now)
        trace.errors.append(failed, stepping.lower + 1, stepping.now)
        seconds = stepping.seconds + shared + time.perf_counter() - started
        warming = stepping.choice.strategy == "incremental" and stepping.changed > 0 \
            and not flow.warm
        flow.warm = flow.warm or warming
        flow.policy.record(stepping.choice, Measured(stepping.changed, stepping.held, seconds,
                                                     warming, flow.recomputed), stepping.now)
        return flow

    def refresh(self, names: set[str], views: Views, now: int,
                cursors: Sequence[tuple[str, int]] = ()) -> None:
        """Step every materialized view of ``views`` that ``names`` depend on (and they) to
        ``now``, in dependency order, then compact. Every other materialized view steps with
        them, in the same Spark job, as a database maintaining its views at each commit
        would; when one of those fails to step, the views ``names`` need step alone, and only
        their own failure is raised. A read of tables alone steps no view (their changes
        wait, to step together with later ones). ``cursors``: as ``_step_views``."""
        needed = views.upstream(names)
        every = needed if all(views.entries[n].dataflow is None for n in needed) else (
            views.upstream(set(views.of_kind("materialized view")) | names))
        for order in (every, needed) if every != needed else (needed,):
            try:
                self._step_views(order, views, now, cursors)
                return
            except Exception:
                if order is needed:
                    raise

    def _step_views(self, order: Sequence[str], views: Views, now: int,
                    cursors: Sequence[tuple[str, int]]) -> None:
        """Step the materialized views among ``order`` (dependency order: a view after what
        it reads) to ``now``, then compact every collection of ``views``. ``cursors`` are
        the open subscriptions ``(name, time read up to)``: a view that one of them reads,
        directly or through the views over it, keeps each time apart, as every view does
        while the ``retain_history`` setting keeps history for AS OF.

        Views step together: their small steps' results come back in one Spark job
        (``runtime.one_job``), and they commit together once it has run. A view reading
        another that steps in the same refresh waits for it (the job of the views before
        runs first). When any step fails, none of the views stepping with it commits."""
        stored, read = views.entries, {name for name, _ in cursors}
        together: list[tuple[str, _Stepping]] = []
        job = OneJob()
        for name in order:
            view = stored[name]
            if view.dataflow is None or view.trace is None:
                continue
            if not view.dataflow.reads.isdisjoint(n for n, _ in together):
                self._finish(together, job, stored)
                together, job = [], OneJob()
            # a view read by a subscription, or keeping history for AS OF, keeps each time
            subscribed = active().retain_history > 0 or (
                bool(read) and not read.isdisjoint([name, *views.dependents(name)]))
            stepping = self._begin(view.dataflow, view.trace, now, subscribed, job)
            if stepping is not None:
                together.append((name, stepping))
        self._finish(together, job, stored)
        self.compact([v.dataflow for v in stored.values() if v.dataflow is not None],
                     {n: v.trace for n, v in stored.items() if v.trace is not None}, now,
                     cursors)

    def _finish(self, together: list[tuple[str, _Stepping]], job: OneJob,
                stored: Mapping[str, Stored]) -> None:
        """Run the job of the steps ``together`` and commit them."""
        started = time.perf_counter()
        job.run()
        shared = (time.perf_counter() - started) / max(len(together), 1)
        for name, stepping in together:
            stored[name].dataflow = self._end(stepping, shared)

    @staticmethod
    def compact(flows: Iterable[Dataflow], traces: Mapping[str, Trace], now: int,
                cursors: Iterable[tuple[str, int]] = ()) -> None:
        """Let each trace forget history before the earliest time still read: by a dataflow
        reading it (its frontier), by a cursor ``(name, time read up to)``, else ``now``,
        and before that the ``retain_history`` setting's history for AS OF; merge its
        batches; compact each dataflow's own state up to its frontier."""
        since = dict.fromkeys(traces, now - active().retain_history)
        for flow in flows:
            flow.compact(flow.frontier)
            for name in flow.reads:
                since[name] = min(since[name], flow.frontier)
        for name, at in cursors:
            if name in since:
                since[name] = min(since[name], at)
        for name, trace in traces.items():
            trace.compact(since[name])
