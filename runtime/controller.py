"""The controller of a catalog's dataflows: it runs plans once (ad hoc reads, the sources of
writes), starts the dataflow of each materialized view with its output trace, steps them to
a time, and compacts what no reader needs any more.

A materialized view's trace holds its rows (the batches a large step computes in Spark are
copied to the driver too, ``VIEW_COPY_ROWS``, so that reads run in Arrow); ``trace.errors``
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
from matview.runtime.dataflow import Dataflow
from matview.runtime.join import DEFAULT_JOIN_ROWS
from matview.runtime.refresh import Measured, RefreshPolicy
from matview.runtime.trace import VIEW_COPY_ROWS, Trace
from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Limits:
    """Resource limits of every dataflow: the most rows a table function may produce for one
    input row, and the most rows a join may produce in one step."""

    table_function_rows: int = DEFAULT_ROW_LIMIT
    join_rows: int = DEFAULT_JOIN_ROWS


class Stored(Protocol):
    """A stored collection as the controller sees it: its trace, and for a materialized view
    the dataflow maintaining it (None for a table)."""

    trace: Trace | None
    dataflow: Dataflow | None


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

    def dataflow(self, plan: physical.Operator, as_of: int,
                 policy: RefreshPolicy | None = None) -> Dataflow:
        """A dataflow of physical ``plan`` whose first step starts from the snapshot at
        ``as_of`` (``policy``: a view's, which outlives the dataflows it recomputes with)."""
        return Dataflow(plan, self.spark, self.trace_of, as_of=as_of,
                        limit=self.limits.table_function_rows,
                        max_join_rows=self.limits.join_rows,
                        policy=policy or RefreshPolicy(self.setting))

    def run_once(self, plan: physical.Operator, now: int) -> DataFrame | None:
        """Physical ``plan``'s contents at ``now``, as consolidated updates (None: empty),
        computed lazily by a dataflow run once; an error the plan's evaluation holds is
        raised (``EvalError``)."""
        step = self.dataflow(plan, now).prepare(now)
        error = step.error()
        if error is not None:
            raise EvalError(error)
        return step.output

    def start(self, plan: physical.Operator, arity: int, now: int) -> tuple[Dataflow, Trace]:
        """The dataflow of a materialized view of physical ``plan`` (``arity`` columns) and
        its output trace, holding the view's contents (and errors) at ``now``."""
        flow = self.dataflow(plan, now)
        trace = Trace(self.spark, arity, copy_rows=VIEW_COPY_ROWS)
        trace.errors = Trace(self.spark, 1)
        return self.step(flow, trace, now), trace

    def step(self, flow: Dataflow, trace: Trace, now: int, subscribed: bool = False
             ) -> Dataflow:
        """Step ``flow`` from its frontier to ``now``, appending its output and errors to
        ``trace`` (nothing when the step fails), incrementally or by recompute-and-diff as
        its policy chooses; returns the dataflow that maintains the view from now on (a
        recompute's fresh one), whose change is at the one time of the inputs' changes
        (else at ``now``). ``subscribed``: a subscription reads the view, or a view over
        it, and must see each time apart."""
        if flow.frontier >= now:
            return flow
        started = time.perf_counter()
        changed, held, at = flow.inputs(now)
        choice = flow.policy.choose(changed, held, flow.first, subscribed and at is None)
        lower = flow.frontier
        if choice.strategy == "recompute" and not flow.first:
            flow = self.dataflow(flow.plan, now, flow.policy)
            step = flow.prepare(now).less(trace, lower, now if at is None else at)
        else:
            step = flow.prepare(now)
        leaf, failed = step.materialized()
        if not step.small:  # a batch held in Spark: copied to the driver, where reads run
            leaf = trace.with_copy(leaf)
        step.commit()
        assert trace.errors is not None
        trace.append(leaf, lower + 1, now)
        trace.errors.append(failed, lower + 1, now)
        flow.policy.record(choice, Measured(changed, held, time.perf_counter() - started))
        return flow

    def refresh(self, order: Sequence[str], stored: Mapping[str, Stored], now: int,
                cursors: Iterable[tuple[str, int]] = (),
                dependents: Callable[[str], Iterable[str]] = lambda name: ()) -> None:
        """Step the materialized views among ``order`` (dependency order: a view after what
        it reads) to ``now``, then compact every collection of ``stored``. ``cursors`` are
        the open subscriptions ``(name, time read up to)``: a view that one of them reads,
        directly or through the views over it (``dependents``), keeps each time apart."""
        read = {name for name, _ in cursors}
        for name in order:
            view = stored[name]
            if view.dataflow is not None and view.trace is not None:
                subscribed = bool(read) and not read.isdisjoint([name, *dependents(name)])
                view.dataflow = self.step(view.dataflow, view.trace, now, subscribed)
        self.compact([v.dataflow for v in stored.values() if v.dataflow is not None],
                     {n: v.trace for n, v in stored.items() if v.trace is not None}, now,
                     cursors)

    @staticmethod
    def compact(flows: Iterable[Dataflow], traces: Mapping[str, Trace], now: int,
                cursors: Iterable[tuple[str, int]] = ()) -> None:
        """Let each trace forget history before the earliest time still read: by a dataflow
        reading it (its frontier), by a cursor ``(name, time read up to)``, else ``now``;
        merge its batches; compact each dataflow's own state up to its frontier."""
        since = dict.fromkeys(traces, now)
        for flow in flows:
            flow.compact(flow.frontier)
            for name in flow.reads:
                since[name] = min(since[name], flow.frontier)
        for name, at in cursors:
            if name in since:
                since[name] = min(since[name], at)
        for name, trace in traces.items():
            trace.compact(since[name])
