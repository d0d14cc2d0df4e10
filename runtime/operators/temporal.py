"""The pending updates of a temporal filter: a ``Linear`` whose steps filter on
``mz_now()`` gives each output row an insertion at the start of its validity and a retraction
at its end (``lowering.linear_steps``), times that may lie beyond the step. Those updates
wait in the operator's ``pending`` arrangement and are released by the step whose
``(lower, upper]`` holds their time, as the clock passes; released updates are dropped from
the arrangement when that step commits.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    TIME,
    Leaf,
    advance_times,
    at_time,
    held,
    stored,
    union_all,
)
from matview.runtime.lowering.checked import split_arrow_errors, split_errors
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import Delta, Operator, StepContext, kept_in_driver
from matview.runtime.settings import active
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


class PendingUpdates(Operator):
    """An operator (a ``Linear`` with a temporal filter) whose output updates at times
    beyond the step's ``upper`` wait in ``pending`` (state: a trace of them, held as Arrow
    when small) and are released by the step whose ``(lower, upper]`` holds their time. A
    step's new pending updates are staged in ``_staged`` (with their first and last time,
    and the step's ``upper``) until it commits."""

    # ``LinearOp``'s: its pending arrangement and what its steps are
    pending: Trace | None
    _staged: tuple[Leaf | None, int, int, int] | None
    checks: bool
    _fallible: bool
    _apply: Callable[[DataFrame], DataFrame]

    def _compute_temporal(self, ctx: StepContext, delta: Delta | None) -> Delta | None:
        """Release the pending updates due in ``(lower, upper]``, and split this step's
        output into the updates due now and those that must wait (staged until commit): a
        small step within the refresh's one job (``_due_now``), else by a Spark job of its
        own. A ``collapsed`` step's updates due now are at ``upper``. In a step whose plans
        are kept (``kept_in_driver``) the output is computed first (in the driver, with no
        job) and split in Arrow, its due rows bound into a slot: a split in the plan would
        compare times with the step's ``upper``, a value the kept plans would have to take
        at each run (ArrowCollect runs no plan with subqueries again)."""
        assert self.pending is not None
        parts: list[DataFrame] = []
        rows = 0
        count: int | None = 0
        at = ctx.upper if ctx.collapsed else None
        released, released_count = (None, 0) if ctx.first else self.read_bound(
            ctx, "released", self.pending, after=ctx.lower, upto=ctx.upper, at=at)
        if released is not None:
            parts.append(released)
            rows += self.pending.rows_between(ctx.lower, ctx.upper)
            count = released_count
        self._staged = (None, 0, 0, ctx.upper)
        if delta is not None:
            out = self._apply(delta.df)
            if (ctx.small and ctx.job is not None and delta.leafy and not self._fallible
                    and not kept_in_driver(ctx)):
                parts.append(self._due_now(ctx, out))
                rows += delta.rows or 0
                count = None
            elif ctx.small:  # split in Arrow (kept plans: computed in the driver, no job)
                table = to_arrow(out)
                if self.checks:
                    table, failed = split_arrow_errors(table)
                    if failed.num_rows:
                        self.errors = Delta(None, failed.num_rows,
                                            stored(ctx.spark, failed), failed.num_rows)
                now_rows = table.filter(pc.less_equal(table[TIME], ctx.upper))
                if at is not None:
                    now_rows = at_time(now_rows, at)
                if now_rows.num_rows:  # kept in the driver, where they are
                    leaf = stored(ctx.spark, now_rows, local_rows=active().small_step_rows)
                    parts.append(self.leaf_frame(ctx, "due", leaf))
                    rows += leaf.rows
                    count = None if count is None else count + leaf.rows
                self._wait(ctx, table.filter(pc.greater(table[TIME], ctx.upper)))
            elif (kept := held(out)) is not None:  # files in the executors (one job)
                leaf_df = kept.df
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
                    due_now = leaf_df.where(due)
                    parts.append(due_now if at is None else advance_times(due_now, at))
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
        fetched into the driver when at most ``pending_held_rows`` (one job), where each
        step cuts the updates it releases in Arrow and binds them into its plans; else
        held in Spark."""
        if rows > active().pending_held_rows:
            return Leaf(later, rows)
        return stored(ctx.spark, to_arrow(later), local_rows=active().pending_held_rows)

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
        upper = F.lit(ctx.upper).cast("bigint")
        later, due = out.where(col(TIME) > upper), out.where(col(TIME) <= upper)
        ctx.job.want(later, lambda rows: self._wait(ctx, rows))
        return due.withColumn(TIME, upper) if ctx.collapsed else due

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

    def arrangement_local_rows(self, what: str) -> int:
        return active().pending_held_rows

    def commit(self) -> None:
        if self._staged is not None and self.pending is not None:
            future, first, last, upto = self._staged
            self.pending.discard(upto)
            self.pending.append(future, first, last)
        self._staged = None

    def abandon(self) -> None:
        self._staged = None
