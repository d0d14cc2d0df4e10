"""The source operator reading a stored collection: a table's or materialized view's shared
trace (``Get``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.count_index import count_index, counts
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import at_time
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext
from matview.runtime.operators.keyed_state import read_matching
from matview.runtime.settings import active
from pyspark.sql import DataFrame


@dataclass
class GetOp(Operator):
    """Reads a table's or materialized view's trace: the delta is the trace's updates in
    ``(lower, upper]`` (at ``upper`` in a ``collapsed`` step); on the first step the
    snapshot at ``as_of``. A materialized view's
    errors (its trace's ``errors``) are read likewise, as this operator's errors. No state
    of its own. ``name`` is the stored collection's."""

    kind: ClassVar[str] = "Get"

    trace: Trace | None = None
    name: str = ""
    rehearsed: pa.Table | None = None
    """The rows the last rehearsal read as its change (``_rehearsed``)."""

    @property
    def checks(self) -> bool:
        """Whether it reads a materialized view's errors."""
        return self.trace is not None and self.trace.errors is not None

    def pending_rows(self, ctx: StepContext) -> int:
        """How many update rows the step will read (an upper bound)."""
        assert self.trace is not None
        return self.trace.rows_between(None if ctx.first else ctx.lower, ctx.upper)

    def pending_times(self, ctx: StepContext) -> set[tuple[int, int]]:
        """The time ranges of the batches the step will read (the first step reads one)."""
        assert self.trace is not None
        if ctx.first:
            return {(ctx.as_of, ctx.as_of)}
        return {(max(b.lower, ctx.lower + 1), min(b.upper, ctx.upper))
                for b in self.trace.batches if b.upper > ctx.lower and b.lower <= ctx.upper}

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.trace is not None
        if self.trace.errors is not None:  # a materialized view's errors are its readers'
            self.errors = self._read(self.trace.errors, ctx, "errors")
        return self._read(self.trace, ctx, "rows")

    def _read(self, trace: Trace, ctx: StepContext, what: str) -> Delta | None:
        """``trace``'s updates of the step (on the first step its snapshot at ``as_of``),
        ``what`` naming the slot they are bound into."""
        rows = trace.rows_between(None if ctx.first else ctx.lower, ctx.upper)
        if ctx.rehearsal is not None:
            return self._rehearsed(trace, ctx, what)
        if ctx.first:  # bound into a slot in a kept read's step (``templated``)
            df, count = self.read_bound(ctx, what, trace, upto=ctx.upper, at=ctx.as_of)
        else:
            df, count = self.read_bound(ctx, what, trace, after=ctx.lower, upto=ctx.upper,
                                        at=ctx.upper if ctx.collapsed else None)
        return None if df is None else Delta(df, rows, count=count)

    def _rehearsed(self, trace: Trace, ctx: StepContext, what: str) -> Delta | None:
        """A rehearsal's change (``StepContext.rehearsal``): some of ``trace``'s rows at
        ``upper`` when the rehearsal changes this collection (else none), bound as a small
        step binds its change, so that the plans over them are the ones a real step
        reuses."""
        assert ctx.rehearsal is not None
        sample = trace.sample(ctx.lower, active().rehearsal_rows) \
            if self.name in ctx.rehearsal else None
        if what == "rows":
            self.rehearsed = sample
        if sample is None:
            return None
        changed = at_time(sample, ctx.upper)
        return Delta(self.bound_read(ctx, what, changed, []), changed.num_rows,
                     count=changed.num_rows)

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.trace is not None
        if ctx.first:
            return None
        return self.read_bound(ctx, "history", self.trace, upto=ctx.lower,
                               most=active().history_slot_rows)[0]

    def history_rows(self, ctx: StepContext) -> int | None:
        assert self.trace is not None
        return 0 if ctx.first else self.trace.rows_between(None, ctx.lower)

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        assert self.trace is not None
        if ctx.rehearsal is not None:
            return None if self.rehearsed is None else pc.unique(self.rehearsed[f"c{column}"])
        return None if ctx.first else self.trace.values(ctx.lower, ctx.upper, f"c{column}")

    def key_counts(self, ctx: StepContext, column: int) -> DataFrame | None:
        assert self.trace is not None
        return counts(count_index(self.trace, f"c{column}"), ctx.upper)

    def arrange(self, column: int) -> None:
        assert self.trace is not None
        self.trace.arrange(f"c{column}")

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        assert self.trace is not None
        found = read_matching(self, ctx, self.trace, ("matching", column), f"c{column}",
                              values)
        if found is None:
            return None
        table, spark, whole = found.table, found.spark, found.whole

        def values_of(c: int) -> pa.Array | None:
            if not spark:
                if table is None:  # none found: of other columns, nothing is known
                    return values[:0] if c == column else None
                return pc.unique(table[f"c{c}"])
            return values if c == column and not whole else None

        return Matched(found.frame, found.rows, values_of)
