"""What the operators of a dataflow did: their meters and the statistics read from them.

Every operator keeps a ``Meter`` of what it did over the committed steps of its life
(``Dataflow.analyze`` reports it as ``OperatorStats``): steps, output rows and time. Counting
output rows adds no Spark job: a delta whose exact size is known without one (``Delta.count``)
is counted as it is; any other is observed (``DataFrame.observe``) and its count read, without
waiting, once the job that computed it has run, which may be after the step committed (a
dataflow's output kept as it is is computed by its readers). A small step reusing its plans
(``runtime.templates``) observes by a name of the operator's, whose count the step's job
reads (``jvm_plans.RowCounts``): PySpark's ``Observation`` serves one query only.
``drain_listeners`` lets Spark deliver the counts of the jobs that have run.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from matview.runtime.arrangements.batch_files import FileReads
from matview.runtime.arrangements.updates import Leaf, row_count
from matview.runtime.settings import active
from matview.runtime.spark.jvm_plans import row_counts
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql.utils import is_remote

if TYPE_CHECKING:
    from matview.runtime.operators.base import Delta


@dataclass(frozen=True)
class ArrangementStats:
    """The size of one arrangement (``Trace``) an operator reads or owns, now.

    ``role`` is "shared" for a stored collection's trace read by a ``Get`` (``name`` is the
    collection's), "owned" for the dataflow's own state (``name`` is ``%<id>.<attribute>``:
    output, values, pending or prefix). ``rows`` counts the update rows held (``Trace.rows``),
    ``bytes`` their size (``Trace.bytes``: exact for batches held in the driver as Arrow,
    estimated from the schema for batches held in Spark), ``batches`` their number,
    ``held`` where they are (``Trace.held``: driver, executors or both), ``keys`` the
    columns its batches held in the executors are arranged by (``Trace.keys``) and
    ``reads`` what lookups and write checks read of those over its life
    (``Trace.file_reads``)."""

    name: str
    role: str
    rows: int
    bytes: int
    batches: int = 0
    held: str = "none"
    keys: tuple[str, ...] = ()
    reads: FileReads = FileReads()


@dataclass(frozen=True)
class OperatorStats:
    """What one operator of a dataflow did over the committed steps of its life.

    ``kind`` is the IR node it runs. ``steps`` counts the committed steps in which it
    computed a delta. ``rows_out`` is the exact number of update rows of its output deltas
    as produced (before any consumer consolidates them), summed over those steps;
    ``rows_in`` is the sum of its inputs' ``rows_out`` (for a ``Get``, its own: the rows it
    read; a ``Constant`` reads none). A delta that no Spark job has computed yet (a
    dataflow's output kept as it is, until a reader reads it) is counted once one has; one
    that Spark's optimizer left out of the job that used it (proved empty, or joined with
    nothing) counts 0.

    ``seconds`` is the wall-clock time spent in its own ``compute``, less the time spent
    computing its inputs' deltas (reading their history is its own time). It holds the
    Spark jobs the operator runs itself (materializing its state or its output, which also
    computes the lazy plans of the deltas its inputs gave it), but not the job computing
    the dataflow's final output when that is left lazy: it is charged to whoever triggers
    it (the engine's materialization after the step, a reader, nobody if never read)."""

    kind: str
    steps: int
    rows_in: int
    rows_out: int
    seconds: float
    arrangements: tuple[ArrangementStats, ...] = ()


class _Nesting(threading.local):
    """Per thread, the time spent in the nested ``compute`` calls of the computes running."""

    def __init__(self) -> None:
        self.stack: list[float] = []


_nesting = _Nesting()



def _observed(obs: Any) -> int | None:
    """The row count of ``obs`` once the first job whose plan held its frame has run, else
    None (never waits). When that job's optimized plan left the frame out (Spark proved the
    frame empty, or that a join would drop all of it), its metrics row is empty: no rows
    were computed, and it counts 0."""
    jo = getattr(obs, "_jo", None)
    if jo is not None:  # classic session: the JVM Observation's future
        future = jo.future()
        if not future.isCompleted():
            return None
        try:
            row = future.value().get().get()
            return int(row.getLong(0)) if row.length() else 0
        except Exception:  # the future failed: its job failed, having counted nothing
            return 0
    result = getattr(obs, "_result", None)  # Spark Connect: filled in by the client
    return int(result["rows"]) if result else None


@dataclass
class Meter:
    """The counters behind ``OperatorStats``; a step's figures are staged while it runs and
    added only by ``commit`` (an abandoned step counts nothing)."""

    enabled: bool = True
    steps: int = 0
    rows: int = 0
    seconds: float = 0.0
    _staged: tuple[float, int, Any] | None = None
    _waiting: list[Any] = field(default_factory=list)
    _later: Callable[[], Leaf | None] | None = None
    """The staged step's ``Delta.later``: its rows are counted from that batch."""

    def stage(self, seconds: float, delta: Delta | None,
              named: Callable[[DataFrame], tuple[DataFrame, str]] | None = None
              ) -> Delta | None:
        """Record a step's compute; returns ``delta`` as consumers must use it (observed
        when its size is not known: by ``named``, when given, a frame observed by a name
        whose count the step's job reads, ``jvm_plans.RowCounts``)."""
        known, obs = 0, None
        if delta is not None and delta.later is not None:  # counted from its batch
            self._staged = (seconds, 0, None)
            self._later = delta.later
            return delta
        if delta is not None:
            count = delta.count
            if count is None and delta.leaf is not None and delta.leaf.exact:
                count = delta.leaf.rows
            if count is not None:
                known = count
            elif named is not None:
                frame, name = named(delta.df)
                row_counts.expect(name, self)
                self._staged = (seconds, 0, name)
                return replace(delta, frame=frame, leaf=None)
            else:
                obs = Observation()
                delta = replace(delta, frame=delta.df.observe(obs, row_count()), leaf=None)
        self._staged = (seconds, known, obs)
        return delta

    def measure(self, compute: Callable[[], Delta | None],
                named: Callable[[DataFrame], tuple[DataFrame, str]] | None = None
                ) -> Delta | None:
        """``compute()``, staged (``stage``) timed less the time of the nested computes it
        runs (its inputs')."""
        stack = _nesting.stack
        start = time.perf_counter()
        stack.append(0.0)
        try:
            out = compute()
            return self.stage(time.perf_counter() - start - stack[-1], out, named)
        finally:
            stack.pop()
            if stack:  # all of it, counting included, is the consumer's inputs' time
                stack[-1] += time.perf_counter() - start

    def commit(self) -> None:
        if self._staged is not None:
            seconds, known, obs = self._staged
            self.steps += 1
            self.seconds += seconds
            self.rows += known
            if self._later is not None:  # the delta's batch, its step's job having run
                batch = self._later()
                self.rows += 0 if batch is None else batch.rows
            if isinstance(obs, str):  # observed by name: counted by the step's job
                self.rows += row_counts.take(obs)
            elif obs is not None:
                self._waiting.append(obs)
                del self._waiting[:-active().max_waiting]
            self._staged = self._later = None
        self.harvest()

    def abandon(self) -> None:
        if self._staged is not None and isinstance(self._staged[2], str):
            row_counts.take(self._staged[2])
        self._staged = self._later = None

    def harvest(self) -> None:
        """Count the observed deltas of committed steps whose job has run."""
        if not self._waiting:
            return
        waiting = []
        for obs in self._waiting:
            rows = _observed(obs)
            if rows is None:
                waiting.append(obs)
            else:
                self.rows += rows
        self._waiting = waiting


_observations = itertools.count()
"""Numbers the names by which operators observe their output's row count."""


def observation_name() -> str:
    """A new name by which an operator observes its output's row count."""
    return f"matview_rows_{next(_observations)}"


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
