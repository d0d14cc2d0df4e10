"""The contract between the dataflow and its operators.

In each step the dataflow asks every operator for its output delta: the updates with times
in ``(lower, upper]`` (on the first step, the whole snapshot at ``as_of``). Operators that
look up other collections also ask their inputs for ``history``: the input collection's
updates with times ``<= lower``. Operators with state stage their new state during the step
and apply it in ``commit``, which the dataflow calls only once the whole step succeeded.

An operator that evaluates expressions which may fail on some row (division by zero,
overflow, a bad cast) sets ``errors`` in the step: the failing rows leave its output and
become error updates there, which the dataflow gathers into its error output. Every
operator keeps a ``Meter`` of what it did in its committed steps (``operators.metering``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pyarrow as pa
from matview.ir.types import SqlType
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.updates import (
    Leaf,
    advance_times,
    at_time,
    materialize,
    row_count,
    union_all,
)
from matview.runtime.operators.metering import Meter, observation_name
from matview.runtime.settings import active
from matview.runtime.spark.arrow_frames import arrow_frame
from matview.runtime.spark.jvm_plans import columns, select
from matview.runtime.spark.one_job import OneJob
from matview.runtime.spark.templates import Slot, same, slot_for
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.utils import is_remote

if TYPE_CHECKING:
    from matview.runtime.arrangements.trace import Trace


@dataclass(frozen=True)
class StepContext:
    """One step of a dataflow: from frontier ``lower`` to ``upper``."""

    spark: SparkSession
    lower: int
    upper: int
    as_of: int
    small: bool
    """Whether the step's input deltas are small enough to broadcast and pass through Arrow."""
    single_time: bool = False
    """Whether every input update of the step has the same time (no running sums needed)."""
    job: OneJob | None = None
    """Where a small step's operators ask for the results they keep (``runtime.one_job``)."""
    collapsed: bool = False
    """Whether every update of the step is at ``upper``: no reader sees the times between
    ``lower`` and ``upper`` (no subscription, no history kept for AS OF), so the updates its
    sources read and its temporal filters emit are advanced to ``upper`` (``read_bound``'s
    ``at``), as compaction to the read frontier would: one output row per key, not one per
    time."""
    rehearsal: frozenset[str] | None = None
    """The stored collections a rehearsal (``Dataflow.rehearse``) reads some rows of as its
    change, the others none; None: the step is no rehearsal. Nothing a rehearsal computes
    is kept."""
    rows: int | None = None
    """How many update rows the step's sources and temporal operators bring (None: not
    counted)."""
    reread: bool = False
    """Whether the step is a kept read's (``Dataflow.reread``): a first step whose results
    are all read at once, made again over the snapshots of later reads, so that it binds
    the snapshots the driver holds into slots as a later step binds its changes."""

    @property
    def first(self) -> bool:
        """The first step, which reads every input's snapshot at ``as_of`` as its delta."""
        return self.lower < self.as_of

    @property
    def span(self) -> tuple[int, int]:
        """The first and last time of the step's updates: the state batch it adds covers."""
        return (self.as_of if self.first else self.lower + 1, self.upper)


def templated(ctx: StepContext) -> bool:
    """Whether the step binds driver-held batches into slots (``runtime.templates``): a
    small step after the first (or a kept read's), whose results all come back from the
    refresh's one job (the read's collect), so that no plan over a slot outlives it."""
    return ctx.small and ctx.job is not None and (ctx.reread or not ctx.first)


def kept_in_driver(ctx: StepContext) -> bool:
    """Whether the step's plans over slots are kept and computed in the driver, with no job
    (a ``templated`` step of a classic session: ``jvm_plans.to_arrow``), so that an operator
    may collect a plan of its own (its output, to split in Arrow) at no job's cost."""
    return templated(ctx) and not is_remote()


@dataclass(frozen=True)
class Delta:
    """An output delta. ``rows`` is set when its plan is only narrow operators over
    materialized leaves holding at most that many rows, so keeping it as it is costs no
    recomputation of earlier work; None when keeping it needs a materialization. ``leaf``
    is set when the delta is a stored batch itself (then ``frame`` may be left out).
    ``count`` is the exact number of its update rows when that is known without a Spark
    job (a materialized batch, rows cut in Arrow), else None (``rows`` is only a bound)."""

    frame: DataFrame | None
    rows: int | None
    leaf: Leaf | None = None
    count: int | None = None
    later: Callable[[], Leaf | None] | None = None
    """The batch the delta is once the step's one job has run (``runtime.one_job``), kept
    in the driver: the job's result, whose readers may use it instead of ``frame``."""

    @property
    def df(self) -> DataFrame:
        if self.frame is not None:
            return self.frame
        assert self.leaf is not None
        return self.leaf.df

    @property
    def leafy(self) -> bool:
        return self.rows is not None


@dataclass(frozen=True)
class Matched:
    """A keyed read of an operator's history (``Operator.history_matching``): the rows read
    (None: none), about how many (``KeyedRead.rows``: a lookup of them is one task or
    broadcasts its other side), ``values(c)`` a superset of column ``c``'s (None: unknown)."""

    frame: DataFrame | None
    rows: int
    values: Callable[[int], pa.Array | None]


T = TypeVar("T")

@dataclass
class Operator:
    """A node of a running dataflow. ``kind`` names the IR node it runs."""

    kind: ClassVar[str] = ""
    arranges: ClassVar[tuple[str, ...]] = ()
    """The arrangements a plan may give this kind of operator (``attach``): ``output``,
    ``values``, ``prefix`` or ``pending`` (``ir.physical.Arrangement.what``)."""

    types: tuple[SqlType, ...]
    _memo: tuple[StepContext, Delta | None] | None = field(default=None, init=False, repr=False)
    meter: Meter = field(default_factory=Meter, init=False, repr=False, compare=False)
    errors: Delta | None = field(default=None, init=False, repr=False, compare=False)
    """The evaluation errors this operator itself found in the current step, as updates of
    one text column (the message), or None: errors are data (``runtime.checked``)."""
    _built: dict[object, Any] = field(default_factory=dict, init=False, repr=False,
                                      compare=False)
    _planned: dict[object, list[tuple[tuple[object, ...], Any]]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _slots: dict[tuple[object, int], list[Slot]] = field(
        default_factory=dict, init=False, repr=False, compare=False)
    _bound_in: tuple[StepContext, dict[object, int]] | None = field(
        default=None, init=False, repr=False, compare=False)
    """The step binding slots now, and how many batches it bound for each key."""
    in_loop: bool = field(default=False, init=False, repr=False, compare=False)
    """Whether it runs in the rounds of a recursive query's loop (``run_in_loop``)."""
    _appends: list[tuple[Trace, Leaf | None, int, int]] = field(
        default_factory=list, init=False, repr=False, compare=False)
    """The batches the current step adds to the arrangements this operator owns."""

    def planned(self, key: object, inputs: tuple[object, ...], make: Callable[[], T]) -> T:
        """What ``make`` returned when this operator last asked for ``key`` with the same
        ``inputs`` (``templates.same``: frames the same objects), among its last
        ``plans_kept()`` asks for ``key``; else what it returns now. ``make`` builds plans from
        ``inputs`` alone (and what the operator ``built``): over slots (``bound``) a small
        step of the same shape as one of the last few reuses its plans and makes no
        DataFrame call (``runtime.templates``), also when steps of a few shapes alternate
        (a temporal filter's steps with and without new rows)."""
        kept = self._planned.setdefault(key, [])
        for i, (seen, made) in enumerate(kept):
            if same(seen, inputs):
                kept.insert(0, kept.pop(i))
                return made  # type: ignore[no-any-return]
        made = make()
        kept.insert(0, (inputs, made))
        del kept[self.plans_kept():]
        return made

    def bound(self, ctx: StepContext, key: object, table: pa.Table) -> DataFrame:
        """``table`` (a batch the driver holds) as a frame of the step: in a ``templated``
        step, the rows of this operator's slot ``key``, which they replace
        (``templates.Slot``), else a local frame of its own. A step binding several batches
        for ``key`` binds the n-th into slot ``(key, n)``: a step of the same shape binds
        them in the same order."""
        if not templated(ctx):
            return arrow_frame(ctx.spark, table)
        if self._bound_in is None or self._bound_in[0] is not ctx:
            self._bound_in = (ctx, {})
        seen = self._bound_in[1]
        seen[key] = seen.get(key, 0) + 1
        slot = slot_for(self._slots.setdefault((key, seen[key]), []), ctx.spark, table)
        if slot is None:
            return arrow_frame(ctx.spark, table)
        slot.bind(table)
        return slot.frame

    def leaf_frame(self, ctx: StepContext, key: object, leaf: Leaf) -> DataFrame:
        """``leaf`` as a frame of the step: in a ``templated`` step, when the driver holds
        its rows, bound into this operator's slot ``key`` (so the plans over it are kept);
        else its own frame."""
        if templated(ctx) and leaf.table is not None:
            return self.bound(ctx, key, leaf.table)
        return leaf.df

    def frame_of(self, ctx: StepContext, key: object, delta: Delta) -> DataFrame:
        """``delta.df``, but a batch the driver holds (an input's output picked or computed
        in Arrow) bound into slot ``key`` (``leaf_frame``): a frame of its own each step
        would have every plan over it built and planned again."""
        if delta.frame is None and delta.leaf is not None:
            return self.leaf_frame(ctx, key, delta.leaf)
        return delta.df

    def read_bound(self, ctx: StepContext, key: object, trace: Trace,
                   after: int | None = None, upto: int | None = None,
                   most: int | None = None, at: int | None = None
                   ) -> tuple[DataFrame | None, int | None]:
        """``trace.read_counted(after, upto)``, the updates it holds in the driver ``bound``
        into this operator's slot ``key`` when they are at most ``most`` rows (by default
        ``slot_max_rows``; else the trace's own read, which readers of the same range
        share); ``at``: every update's time advanced to it (a ``collapsed`` step's
        ``upper``; in Arrow for the rows bound, so the plans over the slot stay the
        same)."""
        if templated(ctx):
            local, frames, count = trace.read_parts(after, upto)
            if local is None or local.num_rows <= (
                    active().slot_max_rows if most is None else most):
                if at is not None:
                    frames = [advance_times(f, at) for f in frames]
                    local = None if local is None else at_time(local, at)
                df = self.bound_read(ctx, key, local, frames)
                return df, (None if df is None else count)
        df, count = trace.read_counted(after, upto)
        return (df if df is None or at is None else advance_times(df, at)), count

    def bound_read(self, ctx: StepContext, key: object, local: pa.Table | None,
                   frames: list[DataFrame]) -> DataFrame | None:
        """A ``templated`` step's read (``read_bound``): the driver's ``local`` updates
        bound into slot ``key``, united with ``frames`` (None: nothing)."""
        parts = ([] if local is None else [self.bound(ctx, key, local)]) + frames
        return self.planned(("read", key), tuple(parts), lambda: union_all(parts))

    def built(self, key: object, make: Callable[[], T]) -> T:
        """What ``make`` returns, made at the first step asking for ``key``, reused after:
        its Spark expressions are the same every step (in a classic session, JVM calls)."""
        if key not in self._built:
            self._built[key] = make()
        return self._built[key]  # type: ignore[no-any-return]

    def selected(self, df: DataFrame, key: object,
                 make: Callable[[], Sequence[Column | str]]) -> DataFrame:
        """``df.select(*make())``, the column list (``key``) made once and, in a classic
        session, passed to the JVM once (``jvm_plans``)."""
        cols = self.built(("select", key), lambda: columns(df.sparkSession, *make()))
        return self.planned(("select", key), (df,), lambda: select(df, cols))

    @property
    def arity(self) -> int:
        return len(self.types)

    def delta(self, ctx: StepContext) -> Delta | None:
        """The output updates of this step (memoized per step), or None when there are none."""
        if self._memo is None or self._memo[0] is not ctx:
            self.errors = None
            self._memo = (ctx, self._measured(ctx) if self.meter.enabled else self.compute(ctx))
        return self._memo[1]

    def given(self, ctx: StepContext, delta: Delta | None, errors: Delta | None) -> None:
        """Its output in step ``ctx`` is ``delta`` with ``errors``, computed elsewhere (from
        its inputs' snapshots: ``runtime.operator_recompute``); ``compute`` does not run."""
        self._memo, self.errors = (ctx, delta), errors

    def _measured(self, ctx: StepContext) -> Delta | None:
        """``compute``, timed less the time of the nested computes of its inputs."""
        # by name in classic sessions (the collect reads the counts from its query)
        named = self._observed if templated(ctx) and not is_remote() else None
        return self.meter.measure(lambda: self.compute(ctx), named)

    def _observed(self, df: DataFrame) -> tuple[DataFrame, str]:
        """``df`` observing its row count by a name of its own (made once: ``planned``)."""
        name = self.built("rows observed", observation_name)
        return self.planned("observed", (df,), lambda: df.observe(name, row_count())), name

    def compute(self, ctx: StepContext) -> Delta | None:
        raise NotImplementedError

    def history(self, ctx: StepContext) -> DataFrame | None:
        """The output updates with times ``<= ctx.lower`` (None on the first step)."""
        raise NotImplementedError

    def history_rows(self, ctx: StepContext) -> int | None:
        """A bound on the update rows ``history`` returns, when known without a Spark job."""
        return None

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        """Values column ``column`` of the step's delta may hold (a superset) known with no job."""
        return None

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        """``history`` keeping (at least) the rows whose column ``column`` holds one of
        ``values``, read by key from a driver-held arrangement; None: none (read it all)."""
        return None

    @property
    def checks(self) -> bool:
        """Whether it may find errors (``errors``): an expression may fail on some row."""
        return False

    def key_counts(self, ctx: StepContext, column: int) -> DataFrame | None:
        """Its rows up to ``ctx.upper`` counted by ``column`` from a count index
        (``count_index.counts``: ``c0``, ``_n``); None: none (count them)."""
        return None

    def arrange(self, column: int) -> None:
        """Readers will look its history up by ``column`` (``history_matching``): a stored
        collection's batches in files are arranged by it (``Trace.arrange``); no other's."""

    def arrangement_arity(self, what: str) -> int:
        """The columns (besides time and diff) of the arrangement ``what`` it owns."""
        return self.arity

    def arrangement_local_rows(self, what: str) -> int:
        """Most rows a merged batch of its arrangement ``what`` keeps in the driver."""
        return active().driver_batch_rows

    def plans_kept(self) -> int:
        """The plans ``planned`` keeps per key (``plans_kept``; in a loop ``loop_plans_kept``)."""
        return active().loop_plans_kept if self.in_loop else active().plans_kept

    def run_in_loop(self) -> None:
        """Run in a recursive query's rounds (``recursion.scope``): a round sees a few shapes
        of its inputs (keep ``loop_plans_kept`` plans) and is no step (meter nothing)."""
        self.in_loop, self.meter.enabled = True, False

    def arranged_changes(self, ctx: StepContext, source: Operator,
                         trace: Trace) -> Leaf | None:
        """``source``'s changes of the step as one consolidated batch (None: none), added to
        ``trace``, its arrangement of them."""
        delta = source.delta(ctx)
        if delta is None:
            return None
        leaf = delta.leaf or materialize(ctx.spark, consolidate(delta.df, ctx.small), ctx.small)
        if leaf is not None:
            self.stage(trace, leaf, ctx)
        return leaf

    def attach(self, what: str, trace: Trace) -> None:
        """Hold the arrangement ``what`` the plan gives this operator in ``trace``."""
        if what not in self.arranges:
            raise ValueError(f"{self.kind} cannot own an arrangement of its {what}")
        setattr(self, what, trace)

    def stage(self, trace: Trace, leaf: Leaf | None, ctx: StepContext) -> None:
        """Add ``leaf`` to ``trace`` (its own) as the batch of ``ctx.span``, at commit."""
        self._appends.append((trace, leaf, *ctx.span))

    def commit(self) -> None:
        """Apply the state staged in the last step."""
        for trace, leaf, lower, upper in self._appends:
            trace.append(leaf, lower, upper)
        self._appends = []

    def abandon(self) -> None:
        """Forget state staged by a step that was not committed (it failed)."""
        self._appends = []

    def children(self) -> tuple[Operator, ...]:
        return ()


class ArrangedWhenLookedUp(Operator):
    """An operator (a Join, a Window) that arranges its output in ``output`` only when a
    consumer looks it up; its history is read from there (through a slot in a templated
    step: ``read_bound``)."""

    output: Trace | None

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.output is not None, \
            f"{self.kind} history read but the plan does not arrange it"
        return None if ctx.first else self.read_bound(ctx, "history", self.output,
                                                      upto=ctx.lower)[0]

    def history_rows(self, ctx: StepContext) -> int | None:
        if ctx.first:
            return 0
        return None if self.output is None else self.output.rows_between(None, ctx.lower)
