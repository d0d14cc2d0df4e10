"""Recursive queries on Spark (``LetRec``): differential dataflow's iteration (seed 002).

Every update inside the loop has a time ``(t, r)``: ``t`` the transaction time, ``r`` the
round (iteration) that produced it, ordered as pairs (product order). A collection's
contents at ``(t, r)`` are the sum of its differences at ``(t', r')`` with ``t' <= t`` and
``r' <= r``. The loop's inputs (the parts of its bindings that read no binding, computed by
ordinary operators outside: ``invariants``) change at round 0; ``Recur`` reads a binding's
differences of round r at round r + 1; so round r of a binding's value is the binding at
iteration r + 1, and its output at time t is the sum over rounds of its differences at t.

A step computes, round by round, the differences at the step's new times ``t`` of every
collection of the loop's bindings, from what it stored of earlier steps (their differences
at older times, with their rounds) and what this step computed at earlier rounds:

- ``Linear`` and ``Union`` are the ordinary operators over the round's differences
  (``scope``);
- a join's output changes at the least upper bound of its inputs' times: it is the
  ordinary join operator over times (transaction, round), joining in round r each input's
  differences of round r with the others' of earlier rounds and steps, its rows of later
  rounds filed for them (``join``);
- a reduce, a TopK and a window are the ordinary operators too: with G(t, r) the
  operator's output over its input's contents at (t, r), its difference at (t, r) is
  ``G(t, r) - G(t-1, r) - G(t, r-1) + G(t-1, r-1) = D_r(t) - D_{r-1}(t)``, D_r the
  operator's changes over the contents at rounds <= r, and D_{r-1} the sum of its output
  of the rounds before: round r runs the operator without arrangements over the contents
  of rounds <= r of the groups with a difference at round r, less its output of the rounds
  before, so every time a step carries is handled in one batch. In a round where no group
  has a difference of round r, no group's output changes: nothing is computed
  (``group_wise``).

The rounds of a step end when a round changes no binding and no stored collection holds
differences of later rounds from earlier steps. A step carrying N transactions runs the
rounds once for all of them, and gives exactly the output per time that N single steps give.
State: the differences of every binding, of every join input and of every reduce's,
TopK's and window's input, each with its round, held in the driver as Arrow batches (the
newest merged when there are more than ``MAX_BATCHES``: ``merged_tail``); within a step, the
output of each round of a reduce, TopK and window too (the rounds after subtract it).
A step reads them by key: a join looks up the other side's stored differences by the
equi-join key values of the new ones, a reduce the contents of the groups its new
differences touch (``pyarrow`` cuts, a local relation to Spark), so a small step's rounds
are small Spark plans over the rows its changes reach, not over the stored state (computed
in the driver: ``ArrowCollect``); a join without an equality between columns reads the whole
state. A small step computes each round's stored differences in one Spark plan (``OneJob``),
consolidated in the driver: the values a round reads by are known before its plan runs, from
what its plans read (``reads.column_values``: the batches of earlier rounds, the rows cut
from the stored state, through projections, unions, joins and group keys). Its rounds have
the same plans: each binds the batches it reads into the slots of the same reads of the
rounds before (``runtime.templates``; rounds named relative to the round being computed)
and builds every plan through ``Operator.planned``, so a round of the same shape as one
before makes no DataFrame call; its reduce reads its inputs in one partition, so the
round's job has no shuffle.

This module steps the rounds (``LetRecOp``); what the loop stores is ``state``, its reads
of stored and new differences ``reads``, the ordinary operators running the body and their
inputs ``scope``, a join's rounds ``join``, a reduce's, TopK's or window's ``group_wise``
(modules of ``runtime.recursion``)."""

from __future__ import annotations

from collections import defaultdict
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import ClassVar

import pyarrow as pa
from matview.ir import physical
from matview.ir.recursion import RecursionLimit, recursion_limit_message
from matview.ir.relation import Join, LetRec, Linear, Recur, Reduce, Relation, TopK, Union, Window
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.ir.types import Kind
from matview.runtime.arrangements.consolidation import consolidate, consolidated_arrow
from matview.runtime.arrangements.updates import (
    Leaf,
    materialize,
    normalized,
    stored,
    stored_or_none,
    union_all,
)
from matview.runtime.operators.base import Delta, Operator, StepContext, templated
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS
from matview.runtime.recursion.group_wise import group_round
from matview.runtime.recursion.join import file_later, join_round
from matview.runtime.recursion.scope import body_operator
from matview.runtime.recursion.state import commit_staged, stored_nodes, with_rounds
from matview.runtime.settings import active, in_loop
from matview.runtime.spark.jvm_objects import jvm_helper
from matview.runtime.spark.one_job import OneJob
from matview.runtime.spark.unsafe_rows import sent_together
from pyspark.sql import DataFrame
from pyspark.sql.utils import is_remote


@dataclass
class LetRecOp(Operator):
    """``LetRec``: see the module docstring. ``inputs`` compute the ``invariants``."""

    kind: ClassVar[str] = "LetRec"
    inputs: tuple[Operator, ...] = ()
    loop: LetRec | None = None
    plan: physical.LetRec | None = None
    """The physical plan: how the body's joins run (``physical.LoopJoin``)."""
    max_join_rows: int = DEFAULT_JOIN_ROWS
    invariants: tuple[Relation, ...] = ()
    limit: int = DEFAULT_ROW_LIMIT
    """The most rows a table function may produce for one input row."""
    batches: dict[Relation, list[pa.Table]] = field(default_factory=dict)
    """Per stored collection, its differences of committed steps: data columns, ``ROUND``,
    time, diff."""
    rounds: dict[Relation, int] = field(default_factory=dict)
    """Per stored collection, the rounds holding its differences of committed steps."""
    _ctx: StepContext | None = None
    _new: dict[Relation, dict[int, DataFrame | None]] = field(default_factory=dict)
    held: dict[Relation, dict[int, Leaf]] = field(default_factory=dict)
    """Per collection, the step's differences of each round computed as a batch."""
    whole: dict[Relation, DataFrame | None] = field(default_factory=dict)
    """Per stored collection, its committed differences as one frame
    (``reads.committed``)."""
    unions: dict[tuple[Relation, int, int, bool, int, int], DataFrame | None] = field(
        default_factory=dict)
    """The round's reads of this step's differences (``reads.new_between``)."""
    _staged: dict[Relation, pa.Table] = field(default_factory=dict)
    filed: dict[Join, dict[int, pa.Table]] = field(default_factory=dict)
    """Per join, the step's rows of rounds not computed yet, by round (``join``)."""
    later: dict[Join, DataFrame] = field(default_factory=dict)
    """Per join, its rows of later rounds computed in the round, to be filed by the round's
    job."""
    errors_found: list[DataFrame] = field(default_factory=list)
    """The round's rows on which an expression of a join or linear operator failed, to be
    kept by the round's job."""
    _errors: list[pa.Table] = field(default_factory=list)
    _round_context: StepContext | None = None
    _pending: dict[Relation, DataFrame] = field(default_factory=dict)
    """The stored collections' differences of the round being computed, to be computed by
    the round's one job."""
    round: int = 0
    """The round being computed."""
    _frames: dict[tuple[Relation, int], DataFrame] = field(default_factory=dict)
    """The round's frames of earlier rounds' batches (``_held_frame``)."""


    def plans_kept(self) -> int:
        """``loop_plans_kept``: a round's join and reduce see a few shapes of their inputs
        each (which join pairs and rounds hold differences, which slot size a batch takes),
        and so do the reads feeding them: with the four plans other operators keep per key,
        steps built some plans again every round."""
        return active().loop_plans_kept
    def children(self) -> tuple[Operator, ...]:
        return self.inputs

    @property
    def _stored(self) -> frozenset[Relation]:
        return self.built("stored", lambda: frozenset(self._order))

    @property
    def _order(self) -> list[Relation]:
        """The stored collections in their stable order (``stored_nodes``)."""
        assert self.loop is not None
        return self.built("order", lambda: stored_nodes(self.loop, frozenset(self.invariants)))

    def state(self) -> list[tuple[list[pa.Table], int]]:
        """What a durable database saves of the loop: per stored collection, in their
        stable order, its committed differences and how many rounds hold them."""
        return [(self.batches.get(node, []), self.rounds.get(node, 0)) for node in self._order]

    def resume(self, state: list[tuple[list[pa.Table], int]]) -> None:
        """Take ``state``, saved (``state``) from a loop of the same plan."""
        assert len(state) == len(self._order), "the loop saved stores other collections"
        for node, (tables, rounds) in zip(self._order, state):
            if tables:
                self.batches[node], self.rounds[node] = list(tables), rounds

    def compute(self, ctx: StepContext) -> Delta | None:
        loop = self.loop
        assert loop is not None
        self._ctx = ctx
        self._new, self.held, self.whole = defaultdict(dict), defaultdict(dict), {}
        self.unions, self._pending, self.filed, self._errors = {}, {}, {}, []
        spark = ctx.spark  # a round's slots get their rows in one JVM call
        with in_loop(), sent_together(spark, jvm_helper(spark, "SlotRows")) \
                if templated(ctx) and not is_remote() else nullcontext():
            self._rounds(loop)
        self._stage()
        if not templated(ctx):  # plans over this step's own leaves: never read again
            self._planned.clear()
        if self._errors:
            table = pa.concat_tables(self._errors)
            self.errors = Delta(None, table.num_rows, stored(ctx.spark, table),
                                count=table.num_rows)
        held = self.held[loop.values[loop.result]]
        if not held:
            return None
        tables = [leaf.in_driver for leaf in held.values()]
        if all(t is not None for t in tables):  # one local relation of the rounds' batches
            leaf = stored(ctx.spark, pa.concat_tables(tables))  # type: ignore[arg-type]
            return Delta(None, leaf.rows, leaf=leaf, count=leaf.rows)  # a frame when read
        df = union_all([leaf.df for leaf in held.values()])
        assert df is not None
        return Delta(df, sum(leaf.rows for leaf in held.values()))

    def _rounds(self, loop: LetRec) -> None:
        """Compute the step's rounds, until one changes no binding and no stored collection
        holds differences of later rounds."""
        later = max(self.rounds.values(), default=0) + 1  # Recur reads a round later
        last = loop.limit if loop.at_limit == "error" else loop.limit - 1
        r = 0
        while r <= last:
            self._begin_round(r)
            for value in loop.values:
                self.at(value, r)
            self._run_round(r)
            changed = [self._new[value][r] is not None for value in loop.values]
            if r == loop.limit and any(changed):
                raise RecursionLimit(recursion_limit_message(loop.names, loop.limit))
            filed = max((at for rounds in self.filed.values() for at in rounds), default=-1)
            if not any(changed) and r + 1 >= later and filed <= r:
                return
            r += 1

    def _begin_round(self, r: int) -> None:
        """Start round ``r``: its plans bind batches into the slots the same plans of
        earlier rounds bound (``Operator.bound``), so a round of the same shape as one
        before reuses its plans (``Operator.planned``) and makes no DataFrame call."""
        self.round, self._frames, self.unions, self._bound_in = r, {}, {}, None
        self._round_context = replace(self.step)  # a context of its own: a round's deltas
        self.later, self.errors_found = {}, []

    def round_delta(self, node: Join | Linear | Union) -> DataFrame | None:
        """The round's output of ``node``'s operator (``scope.body_operator``); the rows on
        which its expressions failed are kept by the round's job (``errors_found``)."""
        op = body_operator(self, node)
        delta = op.delta(self.round_context)
        if op.errors is not None:
            self.errors_found.append(op.errors.df)
        return None if delta is None else delta.df

    def join_values(self, node: Join, column: int) -> pa.Array | None:
        """The values column ``column`` of join ``node``'s rows computed in the round may
        hold, when the driver knows them (``JoinOp.step_values``)."""
        return body_operator(self, node).step_values(self.round_context, column)

    @property
    def round_context(self) -> StepContext:
        """The step's context in the round being computed, in which the ordinary operators
        of the loop's body compute their changes (of this round: ``scope``)."""
        assert self._round_context is not None
        return self._round_context

    def _stage(self) -> None:
        """Stage every stored collection's new differences, with their rounds."""
        self._staged = {}
        for node, leaves in self.held.items():
            if leaves and node in self._stored:
                self._staged[node] = with_rounds(leaves, len(node.types))

    def commit(self) -> None:
        super().commit()
        commit_staged(self.batches, self.rounds, self._staged)
        self._staged = {}

    def abandon(self) -> None:
        super().abandon()
        self._staged = {}

    # ---- the differences of one round ---------------------------------------------------

    def at(self, node: Relation, r: int) -> DataFrame | None:
        """``node``'s differences at the step's new times and round ``r`` (data columns,
        time, diff); a stored collection's are computed once, as a batch, which later
        rounds read as a frame of the round (``_held_frame``)."""
        if not self.has(node, r):
            return None
        leaf = self.held[node].get(r)
        table = None if leaf is None or r == self.round else leaf.in_driver
        return self._new[node][r] if table is None else self._held_frame(node, r, table)

    def _held_frame(self, node: Relation, r: int, table: pa.Table) -> DataFrame:
        """The batch ``table`` of ``node``'s round ``r`` as a frame of the round being
        computed, bound into the slot of the same batch of the rounds before (made once
        per round)."""
        if (node, r) not in self._frames:
            self._frames[(node, r)] = self.bound(self.step, ("held", node, r - self.round),
                                                 table)
        return self._frames[(node, r)]

    def has(self, node: Relation, r: int) -> bool:
        """Whether ``node`` has differences at round ``r`` (computing them when not yet)."""
        seen = self._new[node]
        if r not in seen:
            seen[r] = self._computed(node, r)
        return seen[r] is not None

    def _computed(self, node: Relation, r: int) -> DataFrame | None:
        """``node``'s differences of round ``r``, computed: a stored collection's in the
        round's job (``_run_round``; the plan computing them is returned meanwhile) or as a
        leaf of its own."""
        df = self._compute(node, r)
        if df is not None and (node in self._stored or _group_wise(node)):
            ctx = self.step
            leaf = self._input_leaf(node) if node in self.invariants and ctx.small else None
            if leaf is None and self._fetched() and (ctx.first or node not in self.invariants) \
                    and not any(t.kind is Kind.ARRAY for t in node.types):
                self._pending[node] = df  # computed by the round's job (``_run_round``)
            else:
                if leaf is None:
                    leaf = materialize(ctx.spark, self.planned(
                        ("consolidated", node), (df,), lambda: consolidate(df)),
                        ctx.small and not ctx.first)
                if leaf is None:
                    return None
                self.held[node][r] = leaf
                table = leaf.in_driver if templated(ctx) else None
                df = leaf.df if table is None else self.bound(ctx, ("input", node), table)
        return df

    def _fetched(self) -> bool:
        """Whether the step's stored differences are computed by each round's job into the
        driver: in a small step, a first one (whose rounds may hold a view's whole contents)
        only when its inputs bring at most ``fetched_batch_rows`` rows, a view over few
        rows (its CREATE 1.6x faster than with each round's batch written to files and read
        back); a larger one's rounds go to files (``materialize``)."""
        ctx = self.step
        return ctx.small and (not ctx.first or (
            ctx.rows is not None and ctx.rows <= active().fetched_batch_rows))

    def _input(self, node: Relation) -> Delta | None:
        """The step's changes of the loop input ``node`` (computed outside the loop)."""
        return self.inputs[self.invariants.index(node)].delta(self.step)

    def input_in_driver(self, node: Relation) -> pa.Table | None:
        """The step's changes of the loop input ``node`` when they are a batch the driver
        holds (else None)."""
        delta = self._input(node)
        return None if delta is None or delta.leaf is None else delta.leaf.in_driver

    def _input_leaf(self, node: Relation) -> Leaf | None:
        """The loop input ``node``'s changes of a small step consolidated in the driver,
        when its delta is a batch the driver holds (else None: computed by a Spark job)."""
        table = self.input_in_driver(node)
        if table is None:
            return None
        return stored_or_none(self.step.spark, consolidated_arrow(normalized(table)))

    def _run_round(self, r: int) -> None:
        """Compute the round's stored differences in one Spark job, each consolidated in
        the driver (no shuffle for it) and kept as a batch; with them its joins' rows of
        later rounds (filed: ``join.file_later``) and the rows on which an expression of its
        operators failed (``errors_found``). A first step's differences may be a view's
        whole contents, however few rows its inputs bring (``_fetched``): the job fetches
        at most ``fetched_batch_rows`` of each, and more than that are computed again into
        files (``materialize``)."""
        pending, self._pending = self._pending, {}
        job = OneJob()
        for node, df in self.later.items():
            job.want(df, lambda table, node=node: file_later(self, node, r, table))
        for df in self.errors_found:
            job.want(df, self._errors.append)
        spark, most = self.step.spark, active().fetched_batch_rows if self.step.first else None
        for node, df in pending.items():
            def keep(table: pa.Table, node: Relation = node, df: DataFrame = df) -> None:
                if most is not None and table.num_rows > most:
                    leaf = materialize(spark, consolidate(df), small=False)
                else:
                    leaf = stored_or_none(spark, consolidated_arrow(normalized(table)))
                if leaf is None:
                    self._new[node][r] = None
                else:  # later rounds read the batch (``at``), in files by their frame
                    self.held[node][r] = leaf
                    if leaf.in_driver is None:
                        self._new[node][r] = leaf.df

            job.want(df if most is None else df.limit(most + 1), keep)
        job.run()

    def _compute(self, node: Relation, r: int) -> DataFrame | None:
        assert self.loop is not None
        if node in self.invariants:
            delta = self._input(node)
            return None if r > 0 or delta is None else delta.df
        if isinstance(node, Recur):
            return None if r == 0 else self.at(self.loop.values[node.index], r - 1)
        if isinstance(node, (Linear, Union)):
            return self.round_delta(node)
        if isinstance(node, Join):
            return join_round(self, node, r)
        if isinstance(node, (Reduce, TopK, Window)):
            return group_round(self, node, r)
        raise TypeError(f"a loop cannot compute {type(node).__name__}")

    @property
    def step(self) -> StepContext:
        """The step being computed."""
        assert self._ctx is not None
        return self._ctx


def _group_wise(node: Relation) -> bool:
    """Whether ``node`` is a group-wise operator, whose differences of a round are kept as a
    batch for the rounds after it (``group_wise``), stored in the loop or not."""
    return isinstance(node, (Reduce, TopK, Window))
