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

- ``Linear`` and ``Union`` map their inputs' differences of the round;
- a join's output changes at the least upper bound of its inputs' times: round r of a
  binary join is every pair of differences with at least one new time and
  ``max(r_left, r_right) = r``, at time ``max(t_left, t_right)`` (an n-ary join is a chain
  of binary ones, each prefix stored);
- a reduce's output for group k can change only at joins of its input's times (its
  interesting times): at round r, the groups with a difference at round r whose input
  changed at a new time t at some round <= r, at those times t. With G(t, r) the reduce
  of the group's contents at (t, r), its difference at (t, r) is
  ``G(t, r) - G(t-1, r) - G(t, r-1) + G(t-1, r-1)`` (the two-dimensional difference over
  the product order), so every time a step carries is handled in one batch. In a round
  where no group has a difference of round r, no group's output changes: nothing is
  computed.

The rounds of a step end when a round changes no binding and no stored collection holds
differences of later rounds from earlier steps. A step carrying N transactions runs the
rounds once for all of them, and gives exactly the output per time that N single steps give.
State: the differences of every binding, of every join input (and each prefix of an n-ary
join) and of every reduce's input, each with its round, held in the driver as Arrow batches
(the newest merged when there are more than ``MAX_BATCHES``: ``merged_tail``). A step reads
them by key: a join looks up the other side's stored differences by the equi-join key
values of the new ones, a reduce the contents of the groups its new differences touch
(``pyarrow`` cuts, a local relation to Spark), so a small step's rounds are small Spark
plans over the rows its changes reach, not over the stored state (computed in the driver:
``ArrowCollect``); a join without an equality between columns reads the whole state. A
small step computes each round's stored differences in one Spark plan (``OneJob``),
consolidated in the driver: the values a round reads by are known before its plan runs,
from what its plans read (``_round_values``: the batches of earlier rounds, the rows cut
from the stored state, through projections, unions, joins and group keys). Its rounds have
the same plans: each binds the batches it reads into the slots of the same reads of the
rounds before (``runtime.templates``; rounds named relative to the round being computed, a
reduce's ``ROUND`` too) and builds every plan through ``Operator.planned``, so a round of
the same shape as one before makes no DataFrame call; its reduce reads its inputs in one
partition, so the round's job has no shuffle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import ClassVar

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.recursion import RecursionLimit, recursion_limit_message
from matview.ir.relation import (
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    Union,
    input_column,
    inputs_of,
)
from matview.ir.scalar import Call, Col, Scalar, columns_used, conjoin
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.ir.types import Kind, SqlType
from matview.runtime.arrangements.key_index import holding
from matview.runtime.arrangements.trace import merged_tail
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    consolidate,
    consolidated_arrow,
    key_match,
    lookup,
    materialize,
    normalized,
    stored,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.expressions import compile_scalar
from matview.runtime.lowering.linear_steps import Pipeline, apply_steps
from matview.runtime.lowering.types import col, column_names, spark_type
from matview.runtime.operators.base import Delta, Operator, StepContext, templated
from matview.runtime.spark.jvm_plans import jvm_helper, to_arrow
from matview.runtime.spark.one_job import OneJob
from matview.runtime.spark.unsafe_rows import sent_together
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.utils import is_remote

ROUND = "_round"
_AT, _UPTO, _ROUNDS, _SIGN, _COPIES = "_at", "_upto", "_rounds", "_sign", "_copies"
"""A reduce's candidate time, the time and round bounding a corner's contents, the
corner's sign in the two-dimensional difference, a row's copies in the contents."""
_NEW = "_new"
"""Whether a row of a reduce's contents is a difference at a new time."""
_CORNERS = ((0, 0, 1), (1, 0, -1), (0, 1, -1), (1, 1, 1))
"""The corners ``(dt, dr, sign)`` of the two-dimensional difference at ``(t, r)``: the
contents at ``(t - dt, r - dr)``, counted with ``sign``."""


@dataclass(frozen=True)
class Prefix:
    """The join of the first ``inputs`` inputs of ``join`` (a link of its binary chain),
    its columns those inputs' concatenated."""

    join: Join
    inputs: int

    @property
    def types(self) -> tuple[SqlType, ...]:
        return tuple(t for rel in self.join.inputs[:self.inputs] for t in rel.types)


Node = Relation | Prefix
_Source = tuple[Node, int, int] | pa.Table | None
"""Where rows of one side of a join's round came from: a collection's new differences of
some rounds, a cut of its committed ones, or None for a read of all of them."""


def stored_nodes(loop: LetRec, invariants: frozenset[Relation]) -> list[Node]:
    """The collections whose differences the loop keeps: its bindings' values, the inputs
    of its joins (and prefixes of n-ary joins) and of its reduces, in a stable order."""
    out: dict[Node, None] = {}

    def visit(rel: Relation) -> None:
        if rel in invariants or isinstance(rel, Recur):
            return
        if isinstance(rel, Join):
            for k in range(2, len(rel.inputs)):
                out.setdefault(Prefix(rel, k))
            for child in rel.inputs:
                out.setdefault(child)
        if isinstance(rel, Reduce):
            out.setdefault(rel.input)
        for child in inputs_of(rel):
            visit(child)

    for value in loop.values:
        out.setdefault(value)
        visit(value)
    return [node for node in out if not isinstance(node, Recur)]


@dataclass
class LetRecOp(Operator):
    """``LetRec``: see the module docstring. ``inputs`` compute the ``invariants``."""

    kind: ClassVar[str] = "LetRec"
    plans_kept: ClassVar[int] = 64
    """A round's join and reduce see a few shapes of their inputs each (which join pairs and
    rounds hold differences, which slot size a batch takes), and so do the reads feeding
    them: with the four plans other operators keep per key, steps built some plans again
    every round."""

    inputs: tuple[Operator, ...] = ()
    loop: LetRec | None = None
    invariants: tuple[Relation, ...] = ()
    limit: int = DEFAULT_ROW_LIMIT
    """The most rows a table function may produce for one input row."""
    batches: dict[Node, list[pa.Table]] = field(default_factory=dict)
    """Per stored collection, its differences of committed steps: data columns, ``ROUND``,
    time, diff."""
    rounds: dict[Node, int] = field(default_factory=dict)
    """Per stored collection, the rounds holding its differences of committed steps."""
    _ctx: StepContext | None = None
    _new: dict[Node, dict[int, DataFrame | None]] = field(default_factory=dict)
    _held: dict[Node, dict[int, Leaf]] = field(default_factory=dict)
    _whole: dict[Node, DataFrame | None] = field(default_factory=dict)
    _unions: dict[tuple[Node, int, int, bool, int, int], DataFrame | None] = field(
        default_factory=dict)
    _staged: dict[Node, pa.Table] = field(default_factory=dict)
    _sides: dict[tuple[Prefix, int], tuple[list[_Source], list[_Source]]] = field(
        default_factory=dict)
    _pending: dict[Node, DataFrame] = field(default_factory=dict)
    """The stored collections' differences of the round being computed, to be computed by
    the round's one job."""
    _round: int = 0
    """The round being computed."""
    _frames: dict[tuple[Node, int], DataFrame] = field(default_factory=dict)
    """The round's frames of earlier rounds' batches (``_held_frame``)."""

    def children(self) -> tuple[Operator, ...]:
        return self.inputs

    @property
    def _stored(self) -> frozenset[Node]:
        assert self.loop is not None
        return self.built("stored", lambda: frozenset(
            stored_nodes(self.loop, frozenset(self.invariants))))

    def compute(self, ctx: StepContext) -> Delta | None:
        loop = self.loop
        assert loop is not None
        self._ctx = ctx
        self._new, self._held, self._whole = defaultdict(dict), defaultdict(dict), {}
        self._unions, self._sides, self._pending = {}, {}, {}
        spark = ctx.spark  # a round's slots get their rows in one JVM call
        with sent_together(spark, jvm_helper(spark, "SlotRows")) \
                if templated(ctx) and not is_remote() else nullcontext():
            self._rounds(loop)
        self._stage()
        if not templated(ctx):  # plans over this step's own leaves: never read again
            self._planned.clear()
        held = self._held[loop.values[loop.result]]
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
                self._at(value, r)
            self._run_round(r)
            changed = [self._new[value][r] is not None for value in loop.values]
            if r == loop.limit and any(changed):
                raise RecursionLimit(recursion_limit_message(loop.names, loop.limit))
            if not any(changed) and r + 1 >= later:
                return
            r += 1

    def _begin_round(self, r: int) -> None:
        """Start round ``r``: its plans bind batches into the slots the same plans of
        earlier rounds bound (``Operator.bound``), so a round of the same shape as one
        before reuses its plans (``Operator.planned``) and makes no DataFrame call."""
        self._round, self._frames, self._unions, self._bound_in = r, {}, {}, None

    def _stage(self) -> None:
        """Stage every stored collection's new differences, with their rounds."""
        self._staged = {}
        for node, leaves in self._held.items():
            if leaves:
                self._staged[node] = _with_rounds(leaves, len(node.types))

    def commit(self) -> None:
        super().commit()
        for node, table in self._staged.items():
            batches = self.batches.setdefault(node, [])
            batches.append(table.combine_chunks())  # one chunk: cut by key in a single take
            start = merged_tail([b.num_rows for b in batches])
            if start is not None:
                batches[start:] = [
                    consolidated_arrow(pa.concat_tables(batches[start:])).combine_chunks()]
            rounds = pc.max(table[ROUND]).as_py()
            self.rounds[node] = max(self.rounds.get(node, 0), rounds + 1)
        self._staged = {}

    def abandon(self) -> None:
        super().abandon()
        self._staged = {}

    # ---- the differences of one round ---------------------------------------------------

    def _at(self, node: Node, r: int) -> DataFrame | None:
        """``node``'s differences at the step's new times and round ``r`` (data columns,
        time, diff); a stored collection's are computed once, as a batch, which later
        rounds read as a frame of the round (``_held_frame``)."""
        if not self._has(node, r):
            return None
        leaf = self._held[node].get(r)
        table = None if leaf is None or r == self._round else leaf.in_driver
        return self._new[node][r] if table is None else self._held_frame(node, r, table)

    def _held_frame(self, node: Node, r: int, table: pa.Table) -> DataFrame:
        """The batch ``table`` of ``node``'s round ``r`` as a frame of the round being
        computed, bound into the slot of the same batch of the rounds before (made once
        per round)."""
        if (node, r) not in self._frames:
            self._frames[(node, r)] = self.bound(self._step, ("held", node, r - self._round),
                                                 table)
        return self._frames[(node, r)]

    def _has(self, node: Node, r: int) -> bool:
        """Whether ``node`` has differences at round ``r`` (computing them when not yet)."""
        seen = self._new[node]
        if r not in seen:
            seen[r] = self._computed(node, r)
        return seen[r] is not None

    def _computed(self, node: Node, r: int) -> DataFrame | None:
        """``node``'s differences of round ``r``, computed: a stored collection's in the
        round's job (``_run_round``; the plan computing them is returned meanwhile) or as a
        leaf of its own."""
        df = self._compute(node, r)
        if node in self._stored and df is not None:
            ctx = self._step
            small = ctx.small and not ctx.first
            if small and node not in self.invariants and \
                    not any(t.kind is Kind.ARRAY for t in node.types):
                self._pending[node] = df  # computed by the round's job (``_run_round``)
            else:
                leaf = self._input_leaf(node) if node in self.invariants and small else None
                if leaf is None:
                    leaf = materialize(ctx.spark, consolidate(df), small)
                if leaf is None:
                    return None
                self._held[node][r] = leaf
                table = leaf.in_driver if templated(ctx) else None
                df = leaf.df if table is None else self.bound(ctx, ("input", node), table)
        return df

    def _input(self, node: Relation) -> Delta | None:
        """The step's changes of the loop input ``node`` (computed outside the loop)."""
        return self.inputs[self.invariants.index(node)].delta(self._step)

    def _input_in_driver(self, node: Relation) -> pa.Table | None:
        """The step's changes of the loop input ``node`` when they are a batch the driver
        holds (else None)."""
        delta = self._input(node)
        return None if delta is None or delta.leaf is None else delta.leaf.in_driver

    def _input_leaf(self, node: Relation) -> Leaf | None:
        """The loop input ``node``'s changes of a small step consolidated in the driver,
        when its delta is a batch the driver holds (else None: computed by a Spark job)."""
        table = self._input_in_driver(node)
        if table is None:
            return None
        return stored_or_none(self._step.spark, consolidated_arrow(normalized(table)))

    def _run_round(self, r: int) -> None:
        """Compute the round's stored differences in one Spark job, each consolidated in
        the driver (no shuffle for it) and kept as a batch."""
        pending, self._pending = self._pending, {}
        if not pending:
            return
        job = OneJob()
        spark = self._step.spark
        for node, df in pending.items():
            def keep(table: pa.Table, node: Node = node) -> None:
                leaf = stored_or_none(spark, consolidated_arrow(normalized(table)))
                if leaf is None:
                    self._new[node][r] = None
                else:  # later rounds read the batch (``_at``)
                    self._held[node][r] = leaf

            job.want(df, keep)
        job.run()

    def _compute(self, node: Node, r: int) -> DataFrame | None:
        assert self.loop is not None
        if node in self.invariants:
            delta = self._input(node)
            return None if r > 0 or delta is None else delta.df
        if isinstance(node, Recur):
            return None if r == 0 else self._at(self.loop.values[node.index], r - 1)
        if isinstance(node, Linear):
            child = self._at(node.input, r)
            return None if child is None else self.planned(
                ("linear", node), (child,), lambda: self.built(("linear", node), lambda: (
                    apply_steps(Pipeline(), node.steps, node.input.types, self.limit)))(child))
        if isinstance(node, Union):
            frames = tuple(df for df in (self._at(c, r) for c in node.inputs) if df is not None)
            return self.planned(("union", node), frames, lambda: union_all(list(frames)))
        if isinstance(node, Prefix):
            return self._join(node, r)
        if isinstance(node, Join):
            return self._join(Prefix(node, len(node.inputs)), r)
        if isinstance(node, Reduce):
            return self._reduce(node, r)
        raise TypeError(f"a loop cannot compute {type(node).__name__}")

    @property
    def _step(self) -> StepContext:
        assert self._ctx is not None
        return self._ctx

    # ---- reading stored differences -----------------------------------------------------

    def _old(self, node: Node, lo: int, hi: int, rounds: bool = False,
             key: tuple[int, pa.Array] | None = None,
             cuts: list[pa.Table | None] | None = None, base: int = 0) -> DataFrame | None:
        """Committed differences of rounds ``lo..hi`` (with ``ROUND`` less ``base`` when
        ``rounds``); with ``key`` (a column and values) only those whose column holds one of
        the values, cut from the driver's batches (a frame of the round, bound into the slot
        of the same read of the rounds before). ``cuts`` receives the rows read when some
        are: the cut, or None for a read of all of them (its values are not known in the
        driver)."""
        assert self.loop is not None
        role = ("old", node, *self._relative(lo, hi), rounds, key is not None and key[0],
                base == self._round)
        shift = 0
        while isinstance(node, Recur):  # a binding's differences, a round later
            node, shift, lo, hi = self.loop.values[node.index], shift + 1, lo - 1, hi - 1
        if hi < max(lo, 0) or lo >= self.rounds.get(node, 0) or self._step.first:
            return None
        names = column_names(len(node.types))
        if key is None:
            df = self._whole_frame(node)
            if df is None:
                return None
            df = df.where((col(ROUND) >= lo) & (col(ROUND) <= hi))
            if cuts is not None:
                cuts.append(None)
        else:
            column, values = key
            tables = []
            for batch in self.batches.get(node, []):
                found = holding(batch, f"c{column}", values)
                tables.append(found.filter(pc.and_(pc.greater_equal(found[ROUND], lo),
                                                   pc.less_equal(found[ROUND], hi))))
            table = pa.concat_tables(tables) if tables else None
            if table is None or not table.num_rows:
                return None
            if shift != base:
                table = table.set_column(table.schema.get_field_index(ROUND), ROUND,
                                         pc.add(table[ROUND], shift - base))
            if cuts is not None:
                cuts.append(table)
            return self.bound(self._step, role,
                              table.select([*names, *([ROUND] if rounds else []), TIME, DIFF]))
        if shift != base:
            df = df.withColumn(ROUND, col(ROUND) + (shift - base))
        return df.select(*names, *([ROUND] if rounds else []), TIME, DIFF)

    def _relative(self, lo: int, hi: int) -> tuple[int | None, int]:
        """Rounds ``lo..hi`` as the rounds before read them in their turn: relative to the
        round being computed, a range from round 0 on from round 0 (None)."""
        return (None if lo <= 0 else lo - self._round), hi - self._round

    def _whole_frame(self, node: Node) -> DataFrame | None:
        """All of ``node``'s committed differences as one frame (made once per step)."""
        if node not in self._whole:
            batches = self.batches.get(node, [])
            self._whole[node] = stored(self._step.spark, pa.concat_tables(batches)).df \
                if batches else None
        return self._whole[node]

    def _values(self, node: Node, lo: int, hi: int, column: int) -> pa.Array | None:
        """The values column ``column`` of ``node``'s new differences of rounds ``lo..hi``
        may hold (a superset), when the driver knows them (else None): a batch's own; for
        the round being computed, what its plan reads (``_round_values``)."""
        assert self.loop is not None
        while isinstance(node, Recur):
            node, lo, hi = self.loop.values[node.index], lo - 1, hi - 1
        arrays = []
        for r in range(max(lo, 0), hi + 1):
            if not self._has(node, r):
                continue
            leaf = self._held[node].get(r)
            if leaf is None:
                found = self._round_values(node, r, column)
            else:
                table = leaf.in_driver
                found = None if table is None else table[f"c{column}"].combine_chunks()
            if found is None:
                return None
            arrays.append(found)
        return pc.unique(_concatenated(arrays))

    def _round_values(self, node: Node, r: int, column: int) -> pa.Array | None:
        """A superset of the values of column ``column`` in ``node``'s differences of
        round ``r``, not computed yet, from what its plan reads (None: not known)."""
        if node in self.invariants:  # the input's delta, when the driver holds it
            table = self._input_in_driver(node)
            return None if table is None else table[f"c{column}"].combine_chunks()
        if isinstance(node, Linear):
            source = input_column(node.steps, node.input.types, column)
            return None if source is None else self._values(node.input, r, r, source)
        if isinstance(node, Union):
            arrays = [self._values(child, r, r, column) for child in node.inputs]
            present = [a for a in arrays if a is not None]
            return _concatenated(present) if len(present) == len(arrays) else None
        if isinstance(node, Join):
            return self._round_values(Prefix(node, len(node.inputs)), r, column)
        if isinstance(node, Prefix):
            width = len(node.types) - node.join.inputs[node.inputs - 1].arity
            side, at = (0, column) if column < width else (1, column - width)
            if node.inputs == 1:
                return self._values(node.join.inputs[0], r, r, column)
            arrays = []
            for source in self._sides[(node, r)][side]:
                if isinstance(source, tuple):
                    found = self._values(*source, at)
                elif source is None:
                    return None
                else:
                    found = source[f"c{at}"].combine_chunks()
                if found is None:
                    return None
                arrays.append(found)
            return _concatenated(arrays)
        if isinstance(node, Reduce) and column < len(node.group_key):
            key = node.group_key[column]
            return self._values(node.input, 0, r, key.index) if isinstance(key, Col) else None
        return None

    def _new_between(self, node: Node, lo: int, hi: int, rounds: bool = False,
                     base: int = 0) -> DataFrame | None:
        """This step's differences of rounds ``lo..hi``, with ``ROUND`` less ``base`` when
        ``rounds``: the round's own (a plan) and one frame of the batches of earlier rounds,
        bound into the slot of the same read of the rounds before (made once per round)."""
        assert self.loop is not None
        shift = 0
        while isinstance(node, Recur):
            node, shift, lo, hi = self.loop.values[node.index], shift + 1, lo - 1, hi - 1
        key = (node, max(lo, 0), hi, rounds, shift, base)
        if key in self._unions:
            return self._unions[key]
        plans: list[tuple[DataFrame, int]] = []
        tables = []
        for r in range(max(lo, 0), hi + 1):
            if not self._has(node, r):
                continue
            leaf = self._held[node].get(r)
            table = None if leaf is None or r == self._round else leaf.in_driver
            if table is not None:
                tables.append(_rounded(table, r + shift - base, len(node.types)) if rounds
                              else table)
                continue
            df = self._at(node, r)
            assert df is not None
            plans.append((df, r + shift - base))
        role = ("new", node, *self._relative(lo, hi), rounds, shift, base == self._round)
        held = [self.bound(self._step, role, pa.concat_tables(tables))] if tables else []

        def union() -> DataFrame | None:
            return union_all([df.withColumn(ROUND, F.lit(at).cast("bigint")) if rounds else df
                              for df, at in plans] + held)

        inputs = (*(df for df, _ in plans), *(at for _, at in plans if rounds), *held)
        self._unions[key] = self.planned(role, inputs, union)
        return self._unions[key]

    def _between(self, node: Node, lo: int, hi: int, rounds: bool = False,
                 key: tuple[int, pa.Array] | None = None,
                 cuts: list[pa.Table | None] | None = None) -> DataFrame | None:
        """All of ``node``'s differences of rounds ``lo..hi`` (committed and new), the
        committed ones cut by ``key``."""
        frames = tuple(df for df in (self._old(node, lo, hi, rounds, key, cuts),
                                     self._new_between(node, lo, hi, rounds))
                       if df is not None)
        return self.planned(("between", node, *self._relative(lo, hi), rounds), frames,
                            lambda: union_all(list(frames)))

    # ---- join ---------------------------------------------------------------------------

    def _join(self, link: Prefix, r: int) -> DataFrame | None:
        """Round ``r`` of the binary join of ``link``'s first inputs but one with its last:
        the pairs with a new time and ``max(r_left, r_right) = r``."""
        join = link.join
        left: Node = join.inputs[0] if link.inputs == 2 else Prefix(join, link.inputs - 1)
        right = join.inputs[link.inputs - 1]
        if link.inputs == 1:
            df = self._at(left, r)
            return None if df is None else self.planned(
                ("where", link), (df,), lambda: df.where(self._condition(link)))
        keys = _key_columns(link)
        width = len(link.types) - right.arity

        def cut(by: Node, lo: int, hi: int, side: int) -> tuple[int, pa.Array] | None:
            """The key values of ``by``'s new differences of rounds ``lo..hi``, to read
            the other side's (column ``keys[side]``) by."""
            if keys is None:
                return None
            values = self._values(by, lo, hi, keys[1 - side] - (width if side == 0 else 0))
            return None if values is None else (keys[side] - (width if side == 1 else 0),
                                                 values)

        # each pair: the new side (node, rounds), the other side (node, rounds, whether its
        # committed differences are read too), whether the new side is the left one
        pairs = [
            ((left, r, r), (right, 0, r, True), True),
            ((right, 0, r), (left, r, r, False), False),
            ((right, r, r), (left, 0, r - 1, True), False),
            ((left, 0, r - 1), (right, r, r, False), True),
        ]
        sides: tuple[list[_Source], list[_Source]] = ([], [])
        self._sides[(link, r)] = sides
        frames = []
        for (new, lo, hi), (other, olo, ohi, both), new_left in pairs:
            changed = self._new_between(new, lo, hi)
            if changed is None:
                continue
            side = 1 if new_left else 0
            key = cut(new, lo, hi, side)
            cuts: list[pa.Table | None] = []
            found = (self._between(other, olo, ohi, key=key, cuts=cuts) if both else
                     self._old(other, olo, ohi, key=key, cuts=cuts))
            if found is None:
                continue
            sides[1 - side].append((new, lo, hi))
            sides[side].extend([(other, olo, ohi)] if both else [])
            sides[side].extend(cuts)
            lhs, rhs = (changed, found) if new_left else (found, changed)
            frames.append(self.planned(("pairs", link, len(frames)), (lhs, rhs),
                                       lambda lhs=lhs, rhs=rhs: self._pairs(link, lhs, rhs)))
        return self.planned(("join", link), tuple(frames), lambda: union_all(frames))

    def _pairs(self, link: Prefix, lhs: DataFrame, rhs: DataFrame) -> DataFrame:
        """The joined rows of differences ``lhs`` and ``rhs`` under ``link``'s conditions,
        at the later of their times with the product of their diffs."""
        arity = len(link.types)
        width = arity - link.join.inputs[link.inputs - 1].arity
        right = rhs.select(*[col(f"c{i}").alias(f"c{width + i}") for i in range(arity - width)],
                           col(TIME).alias("_t2"), col(DIFF).alias("_d2"))
        joined = lookup(lhs, right, self._condition(link), "inner",
                        self._step.small and not self._step.first)
        return joined.select(*column_names(arity), F.greatest(col(TIME), col("_t2")).alias(TIME),
                             (col(DIFF) * col("_d2")).alias(DIFF))

    def _condition(self, link: Prefix) -> Column:
        """The join's equalities and predicates over its first ``link.inputs`` inputs."""
        return self.built(("condition", link), lambda: _condition(link))

    # ---- reduce -------------------------------------------------------------------------

    def _reduce(self, node: Reduce, r: int) -> DataFrame | None:
        """Round ``r`` of ``node``: every candidate group and new time, its two-dimensional
        difference of the reduce of its contents (the module docstring)."""
        source = node.input
        new = self._new_between(source, 0, r, rounds=True, base=r)
        if new is None:
            return None
        column = next((k.index for k in node.group_key if isinstance(k, Col)), None)
        values = None if column is None else self._values(source, 0, r, column)
        cuts: list[pa.Table | None] = []
        old = self._old(source, 0, r, rounds=True, base=r, cuts=cuts,
                        key=None if column is None or values is None else (column, values))
        if not self._has(source, r) and (old is None or _before_round(cuts)):
            return None  # no group has a difference of round r: none changes at it
        if node.group_key and all(a.func in ("count", "sum") for a in node.aggregates):
            return self.planned(("reduce", node, r > 0), (old, new),
                                lambda: self._summed(node, r > 0, old, new))
        changed = self._new_between(source, 0, r)
        now = self._at(source, r)
        return self.planned(("reduce", node, r > 0), (changed, old, now, new),
                            lambda: self._reduced(node, r > 0, changed, old, now, new))

    def _summed(self, node: Reduce, later: bool, old: DataFrame | None,
                new: DataFrame) -> DataFrame:
        """The plan of a round of ``node`` whose aggregates are counts and sums, reading its
        contents once. ``old`` and ``new`` are its input's committed and new differences
        with ``ROUND`` relative to the round (0 the round's own; it is ``later`` than the
        first when some precede it). With the rows of group k ordered by time, the contents
        of corner ``(t - dt, -dr)`` of candidate time t are the rows up to ``t - dt``
        (a window frame over time; its peers share it) with ``ROUND <= -dr``, so every
        corner's count and sums are window sums over the group, and the candidates are
        the new rows' times of the groups holding a row of the round (a window maximum
        over the group). Each candidate's corners with rows are output with their signs,
        once (a distinct)."""
        prepared = self._prepared(node)
        keys = [f"k{i}" for i in range(len(node.group_key))]
        tagged = [df.withColumn(_NEW, F.lit(is_new)) for df, is_new in ((old, False), (new, True))
                  if df is not None]
        rows = prepared(union_all(tagged))  # type: ignore[arg-type]
        if self._step.small and not self._step.first:
            rows = rows.coalesce(1)  # grouped in one partition: no shuffle
        by_time = Window.partitionBy(*keys).orderBy(TIME)
        frames = {0: by_time.rangeBetween(Window.unboundedPreceding, Window.currentRow),
                  1: by_time.rangeBetween(Window.unboundedPreceding, -1)}
        whole = by_time.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
        out = [spark_type(a.type(node.input.types)) for a in node.aggregates]

        def summed(dt: int, dr: int, weight: Column) -> Column:
            """The sum of ``weight`` over the contents of corner ``(t - dt, -dr)``."""
            return F.sum(F.when(col(ROUND) <= -dr, weight)).over(frames[dt])

        def corner(dt: int, dr: int, sign: int) -> Column:
            aggregates = []
            for i, agg in enumerate(node.aggregates):
                value = col(f"v{i}")
                if agg.expr is None:
                    aggregates.append(summed(dt, dr, col(DIFF)).cast(out[i]))
                elif agg.func == "count":
                    aggregates.append(summed(dt, dr, F.when(value.isNotNull(), col(DIFF)))
                                      .cast(out[i]))
                else:  # sum: NULL when no copy of a value is left
                    aggregates.append(F.when(
                        summed(dt, dr, F.when(value.isNotNull(), col(DIFF))) > 0,
                        summed(dt, dr, value.cast(out[i]) * col(DIFF))).cast(out[i]))
            return F.struct(summed(dt, dr, col(DIFF)).alias("_n"),
                            *[a.alias(f"a{i}") for i, a in enumerate(aggregates)],
                            F.lit(sign).cast("bigint").alias(_SIGN))

        corners = [corner(dt, dr, sign) for dt, dr, sign in _CORNERS if later or dr == 0]
        touched = F.max((col(ROUND) == 0).cast("int")).over(whole)
        candidates = (rows.select(*keys, col(TIME).alias(_AT), col(_NEW), touched.alias("_k"),
                                  *[c.alias(f"_c{j}") for j, c in enumerate(corners)])
                      .where(col(_NEW) & (col("_k") > 0)).drop(_NEW, "_k").distinct())
        return (candidates.select(*keys, _AT, F.inline(F.array(*[
                    col(f"_c{j}") for j in range(len(corners))])))
                .where(col("_n") > 0)
                .select(*[col(k).alias(f"c{i}") for i, k in enumerate(keys)],
                        *[col(f"a{i}").alias(f"c{len(keys) + i}")
                          for i in range(len(node.aggregates))],
                        col(_AT).alias(TIME), col(_SIGN).alias(DIFF)))

    def _reduced(self, node: Reduce, later: bool, changed: DataFrame, old: DataFrame | None,
                 now: DataFrame | None, new: DataFrame | None) -> DataFrame:
        """The plan of a round of ``node`` with a min or max or no group key (``_reduce``;
        counts and sums by a key are ``_summed``): the candidates (group and new time)
        joined with the contents of each of their corners. ``changed`` is its input's new
        differences of every round so far, ``now`` those of the round, ``old`` and ``new``
        its committed and new differences with ``ROUND`` relative to the round (0; the
        round is ``later`` than the first when some precede it)."""
        prepared = self._prepared(node)
        keys = [f"k{i}" for i in range(len(node.group_key))]
        at_r = [df for df in (now, None if old is None else
                              old.where(col(ROUND) == 0).drop(ROUND)) if df is not None]
        small = self._step.small and not self._step.first

        def one(df: DataFrame) -> DataFrame:
            """``df`` in one partition in a small step, where grouping it needs no shuffle."""
            return df.coalesce(1) if small else df

        touched = one(prepared(union_all(at_r))).select(*keys).distinct()  # type: ignore[arg-type]
        candidates = lookup(one(prepared(changed)).select(*keys, TIME).distinct(),
                            touched.select(*[col(k).alias(f"x_{k}") for k in keys]),
                            key_match(keys, [f"x_{k}" for k in keys]), "left_semi", small)
        corners = candidates.select(*keys, col(TIME).alias(_AT), F.inline(F.array(*[
            F.struct((col(TIME) - dt).alias(_UPTO), F.lit(-dr).cast("bigint").alias(_ROUNDS),
                     F.lit(sign).alias(_SIGN))
            for dt, dr, sign in _CORNERS if later or dr == 0]))).select(
                *[col(k).alias(f"x_{k}") for k in keys], _AT, _UPTO, _ROUNDS, _SIGN)
        contents = union_all([df for df in (old, new) if df is not None])
        assert contents is not None
        rows = prepared(contents)
        seen = lookup(rows, corners, key_match(keys, [f"x_{k}" for k in keys])
                      & (col(TIME) <= col(_UPTO)) & (col(ROUND) <= col(_ROUNDS)), "inner",
                      small, build="right")
        values = [c for c in rows.columns if c.startswith("v")]
        corner = [*[f"x_{k}" for k in keys], _AT, _UPTO, _ROUNDS, _SIGN]
        # min and max see each row's copies, consolidated
        copies = (seen.groupBy(*corner, *values).agg(F.sum(DIFF).alias(_COPIES))
                  .where(col(_COPIES) != 0))
        groups = copies.groupBy(*corner).agg(F.sum(_COPIES).alias("_n"), *[
            self._aggregate(node, i).alias(f"a{i}") for i in range(len(node.aggregates))])
        return groups.where(col("_n") > 0).select(
            *[col(f"x_{k}").alias(f"c{i}") for i, k in enumerate(keys)],
            *[col(f"a{i}").alias(f"c{len(keys) + i}") for i in range(len(node.aggregates))],
            col(_AT).alias(TIME), col(_SIGN).cast("bigint").alias(DIFF))

    def _prepared(self, node: Reduce):  # noqa: ANN202 - a callable over frames
        """The input rows of ``node`` as group key ``k{i}`` and aggregate arguments
        ``v{i}`` (with time, diff and any round)."""
        types = node.input.types

        def compiled() -> list[Column]:
            columns = [col(c) for c in column_names(len(types))]
            return [*[compile_scalar(k, columns, types).alias(f"k{i}")
                      for i, k in enumerate(node.group_key)],
                    *[compile_scalar(a.expr, columns, types).alias(f"v{i}")
                      for i, a in enumerate(node.aggregates) if a.expr is not None]]

        def prepare(df: DataFrame) -> DataFrame:
            rest = [c for c in (TIME, DIFF, ROUND, _NEW) if c in df.columns]
            return df.select(*self.built(("prepared", node), compiled), *rest)

        return prepare

    def _aggregate(self, node: Reduce, i: int) -> Column:
        """Aggregate ``i`` of a group's rows, each with its ``_copies``."""
        agg = node.aggregates[i]
        out = spark_type(agg.type(node.input.types))
        copies = col(_COPIES)
        if agg.expr is None:
            return F.sum(copies).cast(out)
        value = col(f"v{i}")
        if agg.func == "count":
            return F.sum(F.when(value.isNotNull(), copies).otherwise(0)).cast(out)
        if agg.func == "sum":  # NULL when no copy of a value is left
            return F.when(F.sum(F.when(value.isNotNull(), copies)) > 0,
                          F.sum(value.cast(out) * copies)).cast(out)
        if agg.func == "min":
            return F.min(F.when(copies > 0, value)).cast(out)
        if agg.func == "max":
            return F.max(F.when(copies > 0, value)).cast(out)
        raise TypeError(f"{agg.func} is not computed inside a loop")


def _condition(link: Prefix) -> Column:
    """The join's equalities and predicates over its first ``link.inputs`` inputs."""
    join = link.join
    arity = len(link.types)
    columns = [col(c) for c in column_names(arity)]
    within = [e for cls in join.equivalences for e in _equalities(cls, arity)]
    within += [p for p in join.predicates if all(c < arity for c in columns_used(p))]
    if not within:
        return F.lit(True)
    return compile_scalar(conjoin(within), columns, list(join.types[:arity]))


def _before_round(cuts: list[pa.Table | None]) -> bool:
    """Whether the committed differences read (``cuts``, their ``ROUND`` relative to the
    round being computed) all precede that round; False when some were not read in the
    driver."""
    return all(cut is not None and pc.max(cut[ROUND]).as_py() < 0 for cut in cuts)


def _concatenated(arrays: list[pa.Array]) -> pa.Array:
    """Values of one column from several batches as one array (of the first one's type)."""
    if not arrays:
        return pa.array([], pa.int64())
    return pa.concat_arrays([a.cast(arrays[0].type) for a in arrays])


def _rounded(table: pa.Table, r: int, arity: int) -> pa.Table:
    """Update rows ``table`` with ``ROUND`` ``r`` before their time and diff."""
    return pa.table({**{n: table[n] for n in column_names(arity)},
                     ROUND: pa.array([r] * table.num_rows, pa.int64()),
                     TIME: table[TIME], DIFF: table[DIFF]})


def _key_columns(link: Prefix) -> tuple[int, int] | None:
    """A column of ``link``'s first inputs but one and a column of its last input that the
    join's equalities make equal (None when no such pair of bare columns exists)."""
    arity = len(link.types)
    width = arity - link.join.inputs[link.inputs - 1].arity
    for cls in link.join.equivalences:
        lefts = [e.index for e in cls if isinstance(e, Col) and e.index < width]
        rights = [e.index for e in cls if isinstance(e, Col) and width <= e.index < arity]
        if lefts and rights:
            return lefts[0], rights[0]
    return None


def _equalities(cls: tuple[Scalar, ...], arity: int) -> Iterator[Scalar]:
    """The equalities of equivalence class ``cls`` between members that read only the
    first ``arity`` columns."""
    members = [e for e in cls if all(c < arity for c in columns_used(e))]
    for a, b in zip(members, members[1:]):
        yield Call("eq", (a, b))


def _with_rounds(leaves: dict[int, Leaf], arity: int) -> pa.Table:
    """The batches of a collection's rounds as one Arrow table with ``ROUND`` (a batch the
    driver does not hold is fetched: one Spark job, on large steps only)."""
    tables = []
    for r, leaf in leaves.items():
        table = leaf.in_driver
        if table is None:
            table = normalized(to_arrow(leaf.df))
        tables.append(_rounded(table, r, arity))
    return pa.concat_tables(tables)
