"""The ordinary operators run inside a recursive query's loop (``runtime.recursion.let_rec``)
over times (transaction, round): the body's joins, linear operators and unions are the
operators of ``runtime.operators``, made once per loop (``body_operator``), reading the
loop's collections through ``LoopInput``s as they read an operator's output outside a loop.

In round r (the step's ``StepContext`` of the round, ``LetRecOp.round_context``) an input's
changes (``delta``) are the collection's differences of round r and its history
(``history``) its differences of earlier steps, of every round, and of this step, of the
rounds before r; a join's inputs (``rounds``) carry each update's ``ROUND`` relative to r
(0 for the changes, so a round's plans are those of the rounds before:
``runtime.templates``). A linear operator and a union map the round's changes alone, which
is exact for product-ordered times (they commute with taking the differences of a round).
Read by key (``history_matching``), the earlier steps' differences are cut from the
driver's batches by the values the operator knows (``reads.committed``); the values a
column of the changes may hold are the loop's (``reads.column_values``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.relation import Join, Linear, Relation, Union
from matview.runtime.arrangements.updates import ROUND, union_all
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext
from matview.runtime.operators.join import JoinOp
from matview.runtime.operators.linear import LinearOp
from matview.runtime.operators.union import UnionOp
from matview.runtime.recursion.reads import column_values, committed, new_between
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


@dataclass(eq=False)
class LoopInput(Operator):
    """Collection ``node`` of ``loop``'s body as the input of an operator run in its rounds
    (the module docstring)."""

    kind = "LoopInput"
    loop: LetRecOp | None = None
    node: Relation | None = None
    rounds: bool = True
    """Whether its changes carry their ``ROUND`` (a join's input: its history holds many)."""

    @property
    def _loop(self) -> LetRecOp:
        assert self.loop is not None
        return self.loop

    def compute(self, ctx: StepContext) -> Delta | None:
        loop, r = self._loop, self._loop.round
        df = loop.at(self.node, r)
        if df is None or not self.rounds:
            return None if df is None else Delta(df, None)
        return Delta(self.planned("changes", (df,), lambda: df.withColumn(
            ROUND, F.lit(0).cast("bigint"))), None)

    def history(self, ctx: StepContext) -> DataFrame | None:
        loop, r = self._loop, self._loop.round
        frames = tuple(df for df in (
            committed(loop, self.node, 0, None, rounds=True, base=r),
            new_between(loop, self.node, 0, r - 1, rounds=True, base=r)) if df is not None)
        return self.planned("history", frames, lambda: union_all(list(frames)))

    def step_values(self, ctx: StepContext, column: int) -> pa.Array | None:
        loop = self._loop
        return column_values(loop, self.node, loop.round, loop.round, column)

    def history_matching(self, ctx: StepContext, column: int, values: pa.Array
                         ) -> Matched | None:
        """The earlier steps' differences whose ``column`` holds one of ``values``, cut
        from the driver's batches, and this step's of the rounds before."""
        loop, r = self._loop, self._loop.round
        cuts: list[pa.Table | None] = []
        old = committed(loop, self.node, 0, None, rounds=True, base=r, cuts=cuts,
                        key=(column, values))
        new = new_between(loop, self.node, 0, r - 1, rounds=True, base=r)
        frames = tuple(df for df in (old, new) if df is not None)
        frame = self.planned("matching", frames, lambda: union_all(list(frames)))
        rows = sum(cut.num_rows for cut in cuts if cut is not None)

        def held(c: int) -> pa.Array | None:
            """The values column ``c`` of the rows read may hold."""
            arrays = [cut[f"c{c}"].combine_chunks() for cut in cuts if cut is not None]
            if new is not None:
                found = column_values(loop, self.node, 0, r - 1, c)
                if found is None:
                    return None
                arrays.append(found)
            if not arrays:
                return pa.array([], pa.int64())
            return pc.unique(pa.chunked_array([a.cast(arrays[0].type) for a in arrays]))

        return Matched(frame, rows, held)


def body_operator(loop: LetRecOp, node: Join | Linear | Union) -> Operator:
    """The ordinary operator running ``node`` of ``loop``'s body in its rounds (made once),
    a join on the delta paths of the loop's plan (``physical.LoopJoin``)."""
    def make() -> Operator:
        def read(child: Relation, rounds: bool = False) -> LoopInput:
            return LoopInput(child.types, loop=loop, node=child, rounds=rounds)

        op: Operator
        if isinstance(node, Join):
            assert loop.plan is not None
            op = JoinOp(node.types, inputs=tuple(read(c, rounds=True) for c in node.inputs),
                        predicates=node.predicates, rounds=True, max_rows=loop.max_join_rows,
                        paths=loop.plan.loop_join(node).implementation.paths,
                        label=f"Join in LetRec %{loop.plan.id}")
        elif isinstance(node, Linear):
            op = LinearOp(node.types, input=read(node.input), steps=node.steps,
                          limit=loop.limit)
        else:
            op = UnionOp(node.types, inputs=tuple(read(c) for c in node.inputs))
        for each in (op, *op.children()):
            each.run_in_loop()
        return op
    return loop.built(("operator", node), make)
