"""The ordinary operators run inside a recursive query's loop (``runtime.recursion.let_rec``)
over times (transaction, round): the body's joins, linear operators, unions, reduces, TopKs
and windows are the operators of ``runtime.operators``, made once per loop
(``body_operator``), reading the loop's collections through ``LoopInput``s (and a
group-wise operator through ``LoopContents``: ``group_wise``) as they read an operator's
output outside a loop.

In round r (the step's ``StepContext`` of the round, ``LetRecOp.round_context``) an input's
changes (``delta``) are the collection's differences of round r and its history
(``history``) its differences of earlier steps, of every round, and of this step, of the
rounds before r; a join's inputs (``rounds``) carry each update's ``ROUND`` relative to r
(0 for the changes, so a round's plans are those of the rounds before:
``runtime.templates``). A linear operator and a union map the round's changes alone, which
is exact for product-ordered times (they commute with taking the differences of a round).
Read by key (``history_matching``), the earlier steps' differences are cut from the
driver's batches by the values the operator knows (``reads.committed``); the values a
column of the changes may hold are the loop's (``reads.column_values``).

A group-wise operator reads, in round r, the contents at rounds <= r (``LoopContents``: its
changes this step's differences of those rounds, its history the earlier steps') of the
groups with a difference at round r: the rows whose key column holds a value that column
holds in a difference of round r (``touched``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from matview.ir.relation import Join, Linear, Reduce, Relation, TopK, Union, Window
from matview.ir.scalar import Col
from matview.runtime.arrangements.key_index import distinct_values
from matview.runtime.arrangements.updates import ROUND, lookup, union_all
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext
from matview.runtime.operators.join import JoinOp
from matview.runtime.operators.linear import LinearOp
from matview.runtime.operators.reduce import ReduceOp
from matview.runtime.operators.top_k import TopKOp
from matview.runtime.operators.union import UnionOp
from matview.runtime.operators.window import WindowOp
from matview.runtime.recursion.reads import (
    column_values,
    committed,
    held_in_driver,
    new_between,
)
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
            return distinct_values(arrays)

        return Matched(frame, rows, held)


_TOUCHED = "_touched"
"""The key column's values of a round's differences (``LoopContents.touched``)."""


@dataclass(eq=False)
class LoopContents(Operator):
    """Collection ``node`` of ``loop``'s body as the input of a group-wise operator run in
    its rounds (the module docstring): in round r, the contents at rounds <= r of the
    groups whose ``column`` holds a value it holds in a difference of round r (every
    group when ``column`` is None)."""

    kind = "LoopContents"
    loop: LetRecOp | None = None
    node: Relation | None = None
    column: int | None = None
    _reads: tuple[StepContext, dict[str, Any]] | None = None
    """The round (its context) whose ``_round_before`` and ``touched`` were read, and what
    they read (once per round)."""

    @property
    def _loop(self) -> LetRecOp:
        assert self.loop is not None
        return self.loop

    def compute(self, ctx: StepContext) -> Delta | None:
        df = self.between(self.node, self._loop.round, self.column)
        return None if df is None else Delta(df, None)

    def history(self, ctx: StepContext) -> DataFrame | None:
        loop, column = self._loop, self.column
        touched = None if column is None else self.touched_values()
        if column is not None and touched is not None:  # cut by the touched keys
            return committed(loop, self.node, 0, loop.round, key=(column, touched))
        values = None if column is None else column_values(loop, self.node, 0, loop.round,
                                                           column)
        df = committed(loop, self.node, 0, loop.round,
                       key=None if column is None or values is None else (column, values))
        return None if df is None else self.touched_only(df, column)

    def between(self, node: Relation, hi: int, column: int | None) -> DataFrame | None:
        """``node``'s differences of this step's rounds 0..``hi`` in the touched groups (its
        ``column`` holding a touched value): the batches cut in the driver when it knows
        the touched values (the round's own plan holds touched groups only), else by a
        semi-join."""
        loop = self._loop
        touched = None if column is None or self.column is None else self.touched_values()
        if column is not None and touched is not None and held_in_driver(loop, node, 0, hi):
            return new_between(loop, node, 0, hi, key=(column, touched))
        df = new_between(loop, node, 0, hi)
        return None if df is None else self.touched_only(df, column)

    def changes_at_round(self) -> bool:
        """Whether the collection has a difference of the round being computed, of this
        step or (in a group this step changes) an earlier one's."""
        return self._loop.has(self.node, self._loop.round) or \
            self._round_before()[0] is not None

    def _round_before(self) -> tuple[DataFrame | None, pa.Table | None]:
        """The earlier steps' differences of the round being computed, of the groups this
        step changes when the driver knows their keys; and those rows when the driver holds
        them (cut from its batches), else None."""
        loop, r, column = self._loop, self._loop.round, self.column

        def read() -> tuple[DataFrame | None, pa.Table | None]:
            values = None if column is None else column_values(loop, self.node, 0, r, column)
            cuts: list[pa.Table | None] = []
            df = committed(loop, self.node, r, r, cuts=cuts,
                           key=None if column is None or values is None else (column, values))
            return df, cuts[0] if cuts else None

        return self._once("before", read)

    def touched_values(self) -> pa.Array | None:
        """The values ``column`` holds in the round's differences (a superset), when the
        driver knows them (``reads.column_values``, the earlier steps' rows cut)."""
        def read() -> pa.Array | None:
            assert self.column is not None
            loop, c = self._loop, f"c{self.column}"
            now = loop.at(self.node, loop.round)
            before, cut = self._round_before()
            known = None if now is None else column_values(loop, self.node, loop.round,
                                                            loop.round, self.column)
            if (now is not None and known is None) or (before is not None and cut is None):
                return None
            arrays = [a for a in (known, None if cut is None else cut[c].combine_chunks())
                      if a is not None]
            return distinct_values(arrays)

        return self._once("values", read)

    def touched(self) -> DataFrame | None:
        """The values ``column`` holds in the round's differences (None: every group): a
        batch bound into a slot when the driver knows them (``touched_values``), else read
        from the round's plan."""
        return None if self.column is None else self._once("touched", self._touched)

    def _touched(self) -> DataFrame:
        assert self.column is not None
        loop, c = self._loop, f"c{self.column}"
        values = self.touched_values()
        if values is not None:
            return loop.bound(loop.step, ("touched", self.node), pa.table({_TOUCHED: values}))
        frames = tuple(df for df in (loop.at(self.node, loop.round), self._round_before()[0])
                       if df is not None)
        return self.planned("touched", frames, lambda: union_all(
            [df.select(col(c).alias(_TOUCHED)) for df in frames]))

    def _once(self, name: str, read: Callable[[], Any]) -> Any:
        """What ``read`` returns, read once in the round being computed."""
        at = self._loop.round_context
        if self._reads is None or self._reads[0] is not at:
            self._reads = (at, {})
        if name not in self._reads[1]:
            self._reads[1][name] = read()
        return self._reads[1][name]

    def touched_only(self, df: DataFrame, column: int | None) -> DataFrame:
        """The rows of ``df`` (updates) whose ``column`` holds a ``touched`` value (all
        when ``column`` is None)."""
        touched = self.touched()
        if touched is None or column is None:
            return df
        small = self._loop.step.small
        return self.planned(("touched only", column), (df, touched), lambda: lookup(
            df, touched, col(f"c{column}").eqNullSafe(col(_TOUCHED)), "left_semi", small))


def group_column(node: Reduce | TopK | Window) -> tuple[int, int] | None:
    """The input column and the output column holding a part of ``node``'s group key (a
    reduce's first key that is a column, a window's first partition column), which a
    round's reads are restricted by (``LoopContents``); None when there is none (one group,
    or keys that are all expressions)."""
    if isinstance(node, Reduce):
        return next(((key.index, i) for i, key in enumerate(node.group_key)
                     if isinstance(key, Col)), None)
    if isinstance(node, Window) and node.partition_by:
        return node.partition_by[0], node.partition_by[0]
    return None


def body_operator(loop: LetRecOp, node: Relation) -> Operator:
    """The ordinary operator running ``node`` of ``loop``'s body in its rounds (made once),
    a join on the delta paths of the loop's plan (``physical.LoopJoin``), a reduce with its
    layout (``physical.LoopReduce``), a group-wise operator without arrangements over
    ``LoopContents``."""
    def make() -> Operator:
        def read(child: Relation, rounds: bool = False) -> LoopInput:
            return LoopInput(child.types, loop=loop, node=child, rounds=rounds)

        def contents(node: Reduce | TopK | Window) -> LoopContents:
            keyed = group_column(node)
            return LoopContents(node.input.types, loop=loop, node=node.input,
                                column=None if keyed is None else keyed[0])

        assert loop.plan is not None
        op: Operator
        if isinstance(node, Reduce):
            op = ReduceOp(node.types, input=contents(node), group_key=node.group_key,
                          aggregates=node.aggregates,
                          layout=loop.plan.loop_reduce(node).layout)
        elif isinstance(node, TopK):
            op = TopKOp(node.types, input=contents(node), order_by=node.order_by,
                        limit=node.limit, offset=node.offset)
        elif isinstance(node, Window):
            op = WindowOp(node.types, input=contents(node), partition_by=node.partition_by,
                          calls=node.calls)
        elif isinstance(node, Join):
            assert loop.plan is not None
            op = JoinOp(node.types, inputs=tuple(read(c, rounds=True) for c in node.inputs),
                        predicates=node.predicates, rounds=True, max_rows=loop.max_join_rows,
                        paths=loop.plan.loop_join(node).implementation.paths,
                        label=f"Join in LetRec %{loop.plan.id}")
        elif isinstance(node, Linear):
            op = LinearOp(node.types, input=read(node.input), steps=node.steps,
                          limit=loop.limit)
        elif isinstance(node, Union):
            op = UnionOp(node.types, inputs=tuple(read(c) for c in node.inputs))
        else:
            raise TypeError(f"a loop cannot compute {type(node).__name__}")
        for each in (op, *op.children()):
            each.run_in_loop()
        return op
    return loop.built(("operator", node), make)
