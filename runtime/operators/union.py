"""The union operator: the sum of its inputs' updates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.updates import union_all
from matview.runtime.operators.base import Delta, Operator, StepContext
from pyspark.sql import DataFrame


@dataclass
class UnionOp(Operator):
    """``Union``: the sum of its inputs' deltas and histories. Stateless."""

    kind: ClassVar[str] = "Union"

    inputs: tuple[Operator, ...] = ()

    def compute(self, ctx: StepContext) -> Delta | None:
        parts = [(i, d) for i, d in enumerate(op.delta(ctx) for op in self.inputs)
                 if d is not None]
        if not parts:
            return None
        frames = tuple(self.frame_of(ctx, ("delta", i), p) for i, p in parts)
        df = self.planned("delta", frames, lambda: union_all(frames))
        assert df is not None
        sizes = [p.rows for _, p in parts]
        counts = [p.count for _, p in parts]
        return Delta(df, None if None in sizes else sum(s for s in sizes if s is not None),
                     count=None if None in counts else sum(c for c in counts if c is not None))

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        """The values of ``column`` in the deltas of the inputs that changed, when the
        driver knows each input's."""
        found = [op.step_values(ctx, column) for op in self.inputs
                 if op.delta(ctx) is not None]
        if any(v is None for v in found):
            return None
        return pc.unique(pa.concat_arrays(found)) if found else None

    def history(self, ctx: StepContext) -> DataFrame | None:
        frames = tuple(f for f in (op.history(ctx) for op in self.inputs) if f is not None)
        return self.planned("history", frames, lambda: union_all(frames))

    def history_rows(self, ctx: StepContext) -> int | None:
        sizes = [op.history_rows(ctx) for op in self.inputs]
        return None if None in sizes else sum(r for r in sizes if r is not None)

    def children(self) -> tuple[Operator, ...]:
        return self.inputs
