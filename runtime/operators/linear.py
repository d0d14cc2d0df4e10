"""The general linear operator on Spark: a ``Linear`` node's delta is its input's delta
transformed by its steps, lowered once to a pipeline of native Column expressions
(``lowering.linear_steps``) that is replayed on each step's batch. Steps that only rearrange
columns pick them in Arrow from a batch the driver holds; a temporal filter's future updates
wait in its pending arrangement (``operators.temporal``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa
from matview.ir import table_functions
from matview.ir.linear_logic import is_temporal_steps
from matview.ir.scalar import may_fail
from matview.ir.steps import (
    FlatMap,
    Map,
    Project,
    Repeat,
    Step,
    input_column,
    step_scalars,
)
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import DIFF, TIME, Leaf
from matview.runtime.lowering.checked import split_errors
from matview.runtime.lowering.linear_steps import Pipeline, apply_steps
from matview.runtime.lowering.types import col, column_names
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext
from matview.runtime.operators.temporal import PendingUpdates
from pyspark.sql import DataFrame


@dataclass
class LinearOp(PendingUpdates):
    """``Linear``: its delta is the input's delta transformed by ``apply_steps``.

    Without a temporal filter it is stateless and its history is its input's, transformed.
    With one, the output updates whose time lies beyond the step's ``upper`` (future
    insertions and retractions) wait in ``pending`` (``PendingUpdates``: a trace of them,
    held as Arrow when small) and are released by the step whose ``(lower, upper]`` holds
    their time; released updates are dropped from the state when the step commits. Its
    history is the input's history transformed, keeping the times ``<= lower``.
    """

    kind: ClassVar[str] = "Linear"
    arranges: ClassVar[tuple[str, ...]] = ("pending",)

    input: Operator | None = None
    steps: tuple[Step, ...] = ()
    limit: int = table_functions.DEFAULT_ROW_LIMIT
    pending: Trace | None = None
    copies: tuple[int, ...] | None = None
    """The input column each output column copies when the steps only rearrange columns
    (the plan's ``physical.Linear.copies``): picked in Arrow from a batch the driver holds."""
    _staged: tuple[Leaf | None, int, int, int] | None = field(default=None, init=False)

    @property
    def temporal(self) -> bool:
        return is_temporal_steps(self.steps)

    @property
    def checks(self) -> bool:
        """Whether its steps may fail on some row, so that it has an error output."""
        return any(may_fail(e) for s in self.steps for e in step_scalars(s))

    @functools.cached_property
    def _pipeline(self) -> Pipeline:
        """``apply_steps`` of this operator, recorded at its first step."""
        assert self.input is not None
        return apply_steps(Pipeline(), self.steps, self.input.types, self.limit, self.checks)

    def _apply(self, df: DataFrame, role: object = "delta") -> DataFrame:
        """The steps over ``df``, built once for the same frame in the same ``role`` (what
        ``df`` is of the input: its changes, its history, ...; ``Operator.planned``)."""
        return self.planned(("apply", role), (df,), lambda: self._pipeline(df))

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        delta = self.input.delta(ctx)
        if self.temporal:
            return self._compute_temporal(ctx, delta)
        if delta is None:
            return None
        held = None if delta.leaf is None else delta.leaf.in_driver
        if held is not None and self.copies is not None:
            return self._rearranged(ctx, delta, held)
        if delta.later is not None and self.copies is not None:
            later = delta.later

            def picked() -> Leaf | None:
                batch = later()
                if batch is None or batch.in_driver is None:
                    return None if batch is None else Leaf(self._apply(batch.df, "batch"),
                                                           batch.rows)
                return self._rearranged(ctx, Delta(None, batch.rows, batch, count=batch.rows),
                                        batch.in_driver).leaf

            return Delta(self._apply(delta.df), None, later=picked)
        out = self._apply(self.frame_of(ctx, "delta", delta))
        rows = None if self._fallible else delta.rows
        if self.checks:
            out, failed = self.planned("split", (out,), lambda: split_errors(out))
            self.errors = Delta(failed, rows)
        # a step that may raise must run within this step, so that it fails the step
        return Delta(out, rows, count=delta.count if self._keeps_rows else None)

    def _rearranged(self, ctx: StepContext, delta: Delta, held: pa.Table) -> Delta:
        """The output of steps that only rearrange columns, over a batch the driver holds
        (``held``: the batch, or its copy): its columns picked in Arrow, so the output
        stays a batch in the driver (or keeps a copy there) and needs no Spark job."""
        assert delta.leaf is not None
        picked = self._picked(held)
        leaf = delta.leaf
        if leaf.table is not None:
            return Delta(None, picked.num_rows, Leaf(None, picked.num_rows, picked, ctx.spark),
                         count=picked.num_rows)
        kept = Leaf(self._apply(leaf.df, "batch"), leaf.rows, exact=leaf.exact, copy=picked)
        return Delta(None, leaf.rows, kept, count=delta.count)

    def _picked(self, held: pa.Table) -> pa.Table:
        """The output columns of steps that only rearrange columns, picked in Arrow from
        input rows the driver holds."""
        assert self.copies is not None
        names = held.column_names
        picked = held.select([names.index(f"c{c}") for c in self.copies]
                             + [names.index(TIME), names.index(DIFF)])
        return picked.rename_columns([*column_names(self.arity), TIME, DIFF])

    @property
    def _keeps_rows(self) -> bool:
        """Whether every input row gives exactly one output row (maps and projections)."""
        return all(isinstance(s, Map | Project) for s in self.steps)

    @property
    def _fallible(self) -> bool:
        """Whether its steps may raise (a table function or a repeat asked for too many or
        for impossible rows); expressions that may fail do not raise: their errors are
        data (``runtime.checked``)."""
        return any(isinstance(s, FlatMap | Repeat) for s in self.steps)

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.input is not None
        return self._history_of(ctx, self.input.history(ctx), "history")

    def _history_of(self, ctx: StepContext, df: DataFrame | None, role: object
                    ) -> DataFrame | None:
        """The steps applied to ``df``, some history of the input (``role``: which)."""
        if df is None:
            return None
        out = self._apply(df, role)
        if self.checks:
            out = self.planned(("split", role), (out,), lambda: split_errors(out)[0])
        return out.where(col(TIME) <= ctx.lower) if self.temporal else out

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        assert self.input is not None
        if self.temporal:  # its delta also holds pending updates the input no longer has
            return None
        source = input_column(self.steps, self.input.types, column)
        return None if source is None else self.input.step_values(ctx, source)

    def arrange(self, column: int) -> None:
        assert self.input is not None
        source = input_column(self.steps, self.input.types, column)
        if source is not None and not any(isinstance(s, FlatMap) for s in self.steps):
            self.input.arrange(source)

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        assert self.input is not None
        if any(isinstance(s, FlatMap) for s in self.steps):  # its rows are not bounded
            return None
        source = input_column(self.steps, self.input.types, column)
        found = None if source is None else self.input.history_matching(ctx, source, values)
        if found is None:
            return None
        types = self.input.types

        def values_of(c: int) -> pa.Array | None:
            copied = input_column(self.steps, types, c)
            return None if copied is None else found.values(copied)

        return Matched(self._history_of(ctx, found.frame, ("matching", column)),
                       2 * found.rows if self.temporal else found.rows, values_of)

    def history_rows(self, ctx: StepContext) -> int | None:
        assert self.input is not None
        rows = self.input.history_rows(ctx)
        if rows is None or any(isinstance(s, FlatMap) for s in self.steps):
            return None
        return 2 * rows if self.temporal else rows  # an insertion and a retraction each

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)
