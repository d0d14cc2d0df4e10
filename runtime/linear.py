"""The general linear operator on Spark: a ``Linear`` node's steps as one select/filter
pipeline of native Column expressions over each update batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir.relation import Filter, Map, Project, Step, step_types
from matview.ir.scalar import conjoin, may_fail
from matview.ir.types import SqlType
from matview.runtime.expressions import compile_scalar
from matview.runtime.operator import Delta, Operator, StepContext
from matview.runtime.types import col, column_names
from matview.runtime.updates import DIFF, TIME, union_all
from pyspark.sql import Column, DataFrame


def apply_steps(df: DataFrame, steps: Sequence[Step], types: Sequence[SqlType]) -> DataFrame:
    """Apply linear ``steps`` to update batch ``df`` whose data columns have ``types``.

    Maps and projections become one ``select`` each and filters a ``where``; Spark's
    optimizer collapses them into a single projection/filter pipeline.
    """
    types = tuple(types)
    for step in steps:
        names = column_names(len(types))
        current = [col(n) for n in names]
        if isinstance(step, Map):
            new_types = step_types(step, types)
            exprs: list[Column] = []
            for i, expr in enumerate(step.exprs):
                exprs.append(compile_scalar(expr, current + exprs, new_types[:len(types) + i]))
            named = [e.alias(f"c{len(types) + i}") for i, e in enumerate(exprs)]
            df = df.select(*current, *named, TIME, DIFF)
        elif isinstance(step, Filter):
            df = df.where(compile_scalar(conjoin(step.predicates), current, types))
        elif isinstance(step, Project):
            df = df.select(*[current[i].alias(f"c{j}") for j, i in enumerate(step.outputs)],
                           TIME, DIFF)
        types = step_types(step, types)
    return df


@dataclass
class LinearOp(Operator):
    """``Linear``: stateless; its delta and its history are its input's, transformed."""

    input: Operator | None = None
    steps: tuple[Step, ...] = ()

    def _apply(self, df: DataFrame) -> DataFrame:
        assert self.input is not None
        return apply_steps(df, self.steps, self.input.types)

    def compute(self, ctx: StepContext) -> Delta | None:
        assert self.input is not None
        delta = self.input.delta(ctx)
        if delta is None:
            return None
        # a step that may raise must run within this step, so that it fails the step
        return Delta(self._apply(delta.df), None if self._fallible else delta.rows)

    @property
    def _fallible(self) -> bool:
        exprs = [e for s in self.steps if isinstance(s, Map) for e in s.exprs] + [
            p for s in self.steps if isinstance(s, Filter) for p in s.predicates]
        return any(may_fail(e) for e in exprs)

    def history(self, ctx: StepContext) -> DataFrame | None:
        assert self.input is not None
        df = self.input.history(ctx)
        return None if df is None else self._apply(df)

    def require_history(self) -> None:
        assert self.input is not None
        self.input.require_history()

    def children(self) -> tuple[Operator, ...]:
        assert self.input is not None
        return (self.input,)


@dataclass
class UnionOp(Operator):
    """``Union``: the sum of its inputs' deltas and histories. Stateless."""

    inputs: tuple[Operator, ...] = ()

    def compute(self, ctx: StepContext) -> Delta | None:
        parts = [d for d in (op.delta(ctx) for op in self.inputs) if d is not None]
        if not parts:
            return None
        df = union_all([p.df for p in parts])
        assert df is not None
        sizes = [p.rows for p in parts]
        return Delta(df, None if None in sizes else sum(s for s in sizes if s is not None))

    def history(self, ctx: StepContext) -> DataFrame | None:
        return union_all([f for f in (op.history(ctx) for op in self.inputs) if f is not None])

    def require_history(self) -> None:
        for op in self.inputs:
            op.require_history()

    def children(self) -> tuple[Operator, ...]:
        return self.inputs
