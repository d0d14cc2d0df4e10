"""How a recursive query's loop (``runtime.recursion.let_rec``) reads a collection's
differences of some rounds: its committed ones (``committed``: all of them, or cut from
the driver's batches by the values of a column) and this step's (``new_between``: the
round's own plan and one frame of the batches of earlier rounds), each bound into the slot
of the same read of the rounds before; and the values a column of this step's differences
may hold, known in the driver before the round's plan runs (``column_values``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.relation import Join, Linear, Recur, Reduce, Relation, Union
from matview.ir.scalar import Col
from matview.ir.steps import input_column
from matview.runtime.arrangements.key_index import distinct_values, holding
from matview.runtime.arrangements.updates import DIFF, ROUND, TIME, stored, union_all
from matview.runtime.lowering.types import col, column_names
from matview.runtime.recursion.state import rounded
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.recursion.let_rec import LetRecOp


def unwound(op: LetRecOp, node: Relation) -> tuple[Relation, int]:
    """The collection ``node`` reads and how many rounds later: a ``Recur`` reads its
    binding's value a round later (through chains of them), any other node itself."""
    assert op.loop is not None
    shift = 0
    while isinstance(node, Recur):
        node, shift = op.loop.values[node.index], shift + 1
    return node, shift


def committed(op: LetRecOp, node: Relation, lo: int, hi: int | None, rounds: bool = False,
              key: tuple[int, pa.Array] | None = None,
              cuts: list[pa.Table | None] | None = None, base: int = 0) -> DataFrame | None:
    """Committed differences of rounds ``lo..hi`` (``hi`` None: of every round from ``lo``
    on) (with ``ROUND`` less ``base`` when ``rounds``); with ``key`` (a column and values)
    only those whose column holds one of the values, cut from the driver's batches (a
    frame of the round, bound into the slot of the same read of the rounds before).
    ``cuts`` receives the rows read when some are: the cut, or None for a read of all of
    them (its values are not known in the driver)."""
    role = ("old", node, *_relative(op, lo, hi), rounds, key is not None and key[0],
            base == op.round)
    node, shift = unwound(op, node)
    lo, hi = lo - shift, None if hi is None else hi - shift
    last = op.rounds.get(node, 0) if hi is None else hi + 1
    if last <= max(lo, 0) or lo >= op.rounds.get(node, 0) or op.step.first:
        return None
    names = column_names(len(node.types))
    if key is None:
        df = _whole_frame(op, node)
        if df is None:
            return None
        df = df.where((col(ROUND) >= lo) & (col(ROUND) < last))
        if cuts is not None:
            cuts.append(None)
    else:
        column, values = key
        tables = []
        for batch in op.batches.get(node, []):
            found = holding(batch, f"c{column}", values)
            tables.append(found.filter(pc.and_(pc.greater_equal(found[ROUND], lo),
                                               pc.less(found[ROUND], last))))
        table = pa.concat_tables(tables) if tables else None
        if table is None or not table.num_rows:
            return None
        if shift != base:
            table = table.set_column(table.schema.get_field_index(ROUND), ROUND,
                                     pc.add(table[ROUND], shift - base))
        if cuts is not None:
            cuts.append(table)
        return op.bound(op.step, role,
                        table.select([*names, *([ROUND] if rounds else []), TIME, DIFF]))
    if shift != base:
        df = df.withColumn(ROUND, col(ROUND) + (shift - base))
    return df.select(*names, *([ROUND] if rounds else []), TIME, DIFF)


def _relative(op: LetRecOp, lo: int, hi: int | None) -> tuple[int | None, int | None]:
    """Rounds ``lo..hi`` as the rounds before read them in their turn: relative to the
    round being computed, a range from round 0 on from round 0 (None), one to every round
    to every round (None)."""
    return (None if lo <= 0 else lo - op.round), (None if hi is None else hi - op.round)


def _whole_frame(op: LetRecOp, node: Relation) -> DataFrame | None:
    """All of ``node``'s committed differences as one frame (made once per step)."""
    if node not in op.whole:
        batches = op.batches.get(node, [])
        op.whole[node] = stored(op.step.spark, pa.concat_tables(batches)).df \
            if batches else None
    return op.whole[node]


def column_values(op: LetRecOp, node: Relation, lo: int, hi: int, column: int) -> pa.Array | None:
    """The values column ``column`` of ``node``'s new differences of rounds ``lo..hi``
    may hold (a superset), when the driver knows them (else None): a batch's own; for
    the round being computed, what its plan reads (``_round_values``)."""
    node, shift = unwound(op, node)
    lo, hi = lo - shift, hi - shift
    arrays = []
    for r in range(max(lo, 0), hi + 1):
        if not op.has(node, r):
            continue
        leaf = op.held[node].get(r)
        if leaf is None:
            found = _round_values(op, node, r, column)
        else:
            table = leaf.in_driver
            found = None if table is None else table[f"c{column}"].combine_chunks()
        if found is None:
            return None
        arrays.append(found)
    return distinct_values(arrays)


def _round_values(op: LetRecOp, node: Relation, r: int, column: int) -> pa.Array | None:
    """A superset of the values of column ``column`` in ``node``'s differences of
    round ``r``, not computed yet, from what its plan reads (None: not known)."""
    if node in op.invariants:  # the input's delta, when the driver holds it
        table = op.input_in_driver(node)
        return None if table is None else table[f"c{column}"].combine_chunks()
    if isinstance(node, Linear):
        source = input_column(node.steps, node.input.types, column)
        return None if source is None else column_values(op, node.input, r, r, source)
    if isinstance(node, Union):
        arrays = [column_values(op, child, r, r, column) for child in node.inputs]
        present = [a for a in arrays if a is not None]
        return distinct_values(present) if len(present) == len(arrays) else None
    if isinstance(node, Join):  # what the join's operator knows, with the rows filed for r
        found = op.join_values(node, column) if r == op.round else None
        filed = op.filed.get(node, {}).get(r)
        if found is None or filed is None:
            return found
        return distinct_values([found, filed[f"c{column}"].combine_chunks()])
    if isinstance(node, Reduce) and column < len(node.group_key):
        key = node.group_key[column]
        return column_values(op, node.input, 0, r, key.index) if isinstance(key, Col) else None
    return None


def held_in_driver(op: LetRecOp, node: Relation, lo: int, hi: int) -> bool:
    """Whether this step's differences of rounds ``lo..hi`` before the round being computed
    are batches the driver holds (which ``new_between`` can cut by key)."""
    node, shift = unwound(op, node)
    for r in range(max(lo - shift, 0), hi - shift + 1):
        if r != op.round and op.has(node, r):
            leaf = op.held[node].get(r)
            if leaf is None or leaf.in_driver is None:
                return False
    return True


def new_between(op: LetRecOp, node: Relation, lo: int, hi: int, rounds: bool = False,
                base: int = 0, key: tuple[int, pa.Array] | None = None) -> DataFrame | None:
    """This step's differences of rounds ``lo..hi``, with ``ROUND`` less ``base`` when
    ``rounds``: the round's own (a plan) and one frame of the batches of earlier rounds,
    bound into the slot of the same read of the rounds before (made once per round); with
    ``key`` (a column and values), the batches' rows whose column holds one of the values
    (the round's own plan whole: ``held_in_driver`` says whether the others are batches)."""
    node, shift = unwound(op, node)
    lo, hi = lo - shift, hi - shift
    if key is not None:  # a read of its own, not kept for other readers of the rounds
        return _new_between(op, node, lo, hi, rounds, shift, base, key)
    cached = (node, max(lo, 0), hi, rounds, shift, base)
    if cached not in op.unions:
        op.unions[cached] = _new_between(op, node, lo, hi, rounds, shift, base, None)
    return op.unions[cached]


def _new_between(op: LetRecOp, node: Relation, lo: int, hi: int, rounds: bool, shift: int,
                 base: int, key: tuple[int, pa.Array] | None) -> DataFrame | None:
    """``new_between`` of ``node`` itself (not a ``Recur``), its rounds already shifted."""
    plans: list[tuple[DataFrame, int]] = []
    tables = []
    for r in range(max(lo, 0), hi + 1):
        if not op.has(node, r):
            continue
        leaf = op.held[node].get(r)
        table = None if leaf is None or r == op.round else leaf.in_driver
        if table is not None:
            if key is not None:
                table = holding(table, f"c{key[0]}", key[1])
                if not table.num_rows:
                    continue
            tables.append(rounded(table, r + shift - base, len(node.types)) if rounds
                          else table)
            continue
        df = op.at(node, r)
        assert df is not None
        plans.append((df, r + shift - base))
    role = ("new", node, *_relative(op, lo, hi), rounds, shift, base == op.round,
            key is not None and key[0])
    held = [op.bound(op.step, role, pa.concat_tables(tables))] if tables else []

    def union() -> DataFrame | None:
        return union_all([df.withColumn(ROUND, F.lit(at).cast("bigint")) if rounds else df
                          for df, at in plans] + held)

    inputs = (*(df for df, _ in plans), *(at for _, at in plans if rounds), *held)
    return op.planned(role, inputs, union)
