"""The source operator reading a stored collection: a table's or materialized view's shared
trace (``Get``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import advance_times, union_all
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext, templated
from matview.runtime.settings import active
from pyspark.sql import DataFrame
from pyspark.sql.utils import is_remote


@dataclass
class GetOp(Operator):
    """Reads a table's or materialized view's trace: the delta is the trace's updates in
    ``(lower, upper]``; on the first step the snapshot at ``as_of``. A materialized view's
    errors (its trace's ``errors``) are read likewise, as this operator's errors. No state
    of its own. ``name`` is the stored collection's."""

    kind: ClassVar[str] = "Get"

    trace: Trace | None = None
    name: str = ""

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
        if ctx.first:
            df, count = trace.read_counted(upto=ctx.upper)
            return None if df is None else Delta(advance_times(df, ctx.as_of), rows,
                                                 count=count)
        df, count = self.read_bound(ctx, what, trace, after=ctx.lower, upto=ctx.upper)
        return None if df is None else Delta(df, rows, count=count)

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
        return None if ctx.first else self.trace.values(ctx.lower, ctx.upper, f"c{column}")

    def arrange(self, column: int) -> None:
        assert self.trace is not None
        self.trace.arrange(f"c{column}")

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        assert self.trace is not None
        name = f"c{column}"
        found = None if ctx.first else self.trace.matching(ctx.lower, name, values)
        if found is None:
            return None
        table, frames, whole = found.table, [], bool(found.wholes)
        if found.reads or whole:
            if fetched(ctx, found.expected, whole):
                table, in_driver = found.fetch()
                self.trace.file_reads = self.trace.file_reads.direct(in_driver)
            else:
                frames = found.frames()
        held = [] if table is None or not table.num_rows else [
            self.bound(ctx, ("matching", column), table)]

        def values_of(c: int) -> pa.Array | None:
            if not frames:
                if table is None:  # none found: of other columns, nothing is known
                    return values[:0] if c == column else None
                return pc.unique(table[f"c{c}"])
            return values if c == column and not whole else None

        return Matched(union_all(held + frames), found.rows, values_of)


def fetched(ctx: StepContext, rows: int, whole: bool) -> bool:
    """Whether a keyed read of batches held in files, of about ``rows`` rows (as expected,
    ``KeyedRead.expected``), is fetched into the driver (``KeyedRead.fetch``: read by the
    driver from the files, else one Spark job of its own, a small plan, a filtered scan)
    and bound into a slot: in a ``templated`` step of a classic
    session, when it reads no batch whole and its rows would fit a slot
    (``slot_max_rows``). The step's plans are then the ones built the step before over the
    same slots, run again with no planning (the pages a step reads have new keys: a plan
    reading them is planned anew, 0.3-0.4 s of Spark's optimizer and analyzer for W1's
    refresh), and run in the driver when they have no exchange."""
    return templated(ctx) and not is_remote() and not whole \
        and rows <= active().slot_max_rows
