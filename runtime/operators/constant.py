"""The source operator of a constant collection (``Constant``): its rows, given in the
plan."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pyarrow as pa
from matview.runtime.lowering.types import arrow_values, update_schema
from matview.runtime.operators.base import Delta, Operator, StepContext
from matview.runtime.spark.arrow_frames import arrow_frame
from pyspark.sql import DataFrame


@dataclass
class ConstantOp(Operator):
    """A constant collection: all its rows at ``as_of`` on the first step, nothing after."""

    kind: ClassVar[str] = "Constant"

    rows: tuple[tuple[tuple[object, ...], int], ...] = ()

    def _frame(self, ctx: StepContext, time: int) -> DataFrame | None:
        """Its rows at ``time``, a local frame made once per time (every step of a
        dataflow reads them at its ``as_of``: the plans over them are kept)."""
        if not self.rows:
            return None

        def made() -> DataFrame:
            schema = update_schema(self.types)
            columns = list(zip(*[values + (time, diff) for values, diff in self.rows]))
            return arrow_frame(ctx.spark, pa.table(
                [pa.array(arrow_values(c), type=f.type) for c, f in zip(columns, schema)],
                schema=schema))

        return self.built(("rows", time), made)

    def compute(self, ctx: StepContext) -> Delta | None:
        if not ctx.first:
            return None
        df = self._frame(ctx, ctx.as_of)
        return None if df is None else Delta(df, len(self.rows), count=len(self.rows))

    def history(self, ctx: StepContext) -> DataFrame | None:
        return None if ctx.first else self._frame(ctx, ctx.as_of)

    def history_rows(self, ctx: StepContext) -> int | None:
        return 0 if ctx.first else len(self.rows)
