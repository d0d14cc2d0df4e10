"""The state of a reduce (``ReduceOp``) and the layout of its rows.

Its output is arranged by key in ``output``, each row carrying hidden accumulators after the
visible columns; its min/max-like aggregates also arrange the input's (key, argument) pairs
in ``values``. The state enters each step as changes at time ``NEVER``, read whole or only
for the keys the step touched: arranged by the group key's first plain column, the rows of
those keys are read by key, by the driver where it can (TPC-H Q10's 38,514 groups of a
7-column key: the touched groups' row groups, no Spark job).
"""

from __future__ import annotations

import pyarrow as pa
from matview.ir.physical import ReduceLayout
from matview.ir.relation import Aggregate
from matview.ir.scalar import Col, Scalar
from matview.ir.types import SqlType
from matview.runtime.arrangements.trace import Trace
from matview.runtime.lowering.types import spark_type
from matview.runtime.operators.base import Operator, StepContext
from matview.runtime.operators.keyed_state import large, read_touched
from matview.runtime.time import MIN_TIME
from pyspark.sql import DataFrame
from pyspark.sql import types as T

NEVER = MIN_TIME
"""The time given to the stored state's contributions: before every real time."""


class ReduceState(Operator):
    """What a reduce arranges: ``output``, its output with hidden accumulators, and
    ``values``, (key, min/max arguments) when there are min/max; and which of it a step
    reads."""

    # ``ReduceOp``'s fields
    input: Operator | None
    group_key: tuple[Scalar, ...]
    aggregates: tuple[Aggregate, ...]
    output: Trace | None
    values: Trace | None
    layout: ReduceLayout

    # Layout of an output row: keys k0.., visible aggregates v0.., then hidden ``cnt`` and the
    # accumulators ``n{j}`` (non-null count) and ``s{j}`` (sum) or ``l{j}_0..2`` (a BIGINT
    # sum's limbs, ``reduce_accumulators.limbs``) of count/sum aggregates.
    @property
    def _keys(self) -> list[str]:
        return [f"k{i}" for i in range(len(self.group_key))]

    def _accumulated(self) -> list[int]:
        return list(self.layout.accumulable)

    def _extremes(self) -> list[int]:
        return list(self.layout.extremes)

    def _value_columns(self) -> list[str]:
        """The arranged values of the min/max-like aggregates: each one's argument ``a{j}``
        and, for an aggregate of values in order, its ORDER BY's ``o{j}_{i}``."""
        return [name for j in self._extremes() for name in (
            f"a{j}", *[f"o{j}_{i}" for i in range(len(self.aggregates[j].order_by))])]

    def hidden_names(self) -> list[str]:
        return list(self.layout.hidden)

    def full_names(self) -> list[str]:
        visible = [f"v{j}" for j in range(len(self.aggregates))]
        return self._keys + visible + self.hidden_names()

    def arrangement_arity(self, what: str) -> int:
        """``output``: its rows with their hidden accumulators; ``values``: the group key and
        the argument of each min/max aggregate."""
        if what == "values":
            return len(self.group_key) + len(self._value_columns())
        return len(self.full_names())

    def _full_types(self) -> list[T.DataType]:
        """The Spark types of ``full_names``."""
        return [spark_type(t) for t in self.types] + [
            self._hidden_type(name) for name in self.hidden_names()]

    def _hidden_type(self, name: str) -> T.DataType:
        """The Spark type of hidden column ``name``: a sum ``s{j}`` has the sum's type, the
        counts and a BIGINT sum's limbs are BIGINTs."""
        return self._sum_spark(int(name[1:])) if name.startswith("s") else T.LongType()

    def _sum_type(self, j: int) -> SqlType:
        assert self.input is not None
        return self.aggregates[j].type(self.input.types)

    def _sum_spark(self, j: int) -> T.DataType:
        return spark_type(self._sum_type(j))

    def _restricted(self, ctx: StepContext) -> bool:
        """Whether the step reads the state of the touched keys only (a semi-join), rather
        than the whole state, which it does when the state is held in the driver and small
        (``keyed_state.large``)."""
        assert self.output is not None
        return bool(self.group_key) and not ctx.first and large(self.output)

    def _state_read(self, ctx: StepContext) -> DataFrame | None:
        """The stored state a step reads (None on the first step): when it reads the
        touched keys' only (``_restricted``), the state's rows holding a value the group
        key's first plain column takes in the step's changes, read by key where the driver
        knows them (``keyed_state.read_touched``); else all of it."""
        assert self.output is not None and self.input is not None
        if ctx.first:
            return None
        j = self._state_key()
        column = f"c{j}" if j is not None and self._restricted(ctx) else None

        def values() -> pa.Array | None:
            key = self.group_key[j]  # type: ignore[index]
            assert self.input is not None and isinstance(key, Col)
            return self.input.step_values(ctx, key.index)

        return read_touched(self, ctx, self.output, "state", column, values)

    def _state_key(self) -> int | None:
        """The group key's first plain column (its place in the key), which the state is
        arranged and read by key by (``_state_read``); None when it has none."""
        return next((j for j, key in enumerate(self.group_key) if isinstance(key, Col)), None)

    def attach(self, what: str, trace: Trace) -> None:
        """Hold arrangement ``what`` in ``trace``; ``output``, the state, is arranged by
        ``_state_key`` (its batches held in files get a copy arranged by it)."""
        super().attach(what, trace)
        j = self._state_key()
        if what == "output" and j is not None:
            trace.arrange(f"c{j}")
