"""What a recursive query's loop (``runtime.recursion.let_rec``) keeps between steps.

The loop stores the differences of some of its collections (``stored_nodes``): its
bindings' values, the inputs of its joins and of its reduces, TopKs and windows. A step's
differences of a collection, one batch per round, are staged as one Arrow table with their
``ROUND`` (``with_rounds``) and committed as a batch of the collection, the newest batches
merged when there are more than ``MAX_BATCHES`` (``commit_staged``, ``merged_tail``)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.relation import Join, LetRec, Recur, Reduce, Relation, TopK, Window, inputs_of
from matview.runtime.arrangements.consolidation import consolidated_arrow
from matview.runtime.arrangements.spine import merged_tail
from matview.runtime.arrangements.updates import DIFF, ROUND, TIME, Leaf, normalized
from matview.runtime.lowering.types import column_names
from matview.runtime.spark.jvm_plans import to_arrow


def stored_nodes(loop: LetRec, invariants: frozenset[Relation]) -> list[Relation]:
    """The collections whose differences the loop keeps: its bindings' values, the inputs
    of its joins and of its reduces, TopKs and windows, in a stable order."""
    out: dict[Relation, None] = {}

    def visit(rel: Relation) -> None:
        if rel in invariants or isinstance(rel, Recur):
            return
        if isinstance(rel, Join):
            for child in rel.inputs:
                out.setdefault(child)
        if isinstance(rel, (Reduce, TopK, Window)):
            out.setdefault(rel.input)
        for child in inputs_of(rel):
            visit(child)

    for value in loop.values:
        out.setdefault(value)
        visit(value)
    return [node for node in out if not isinstance(node, Recur)]


def commit_staged(batches: dict[Relation, list[pa.Table]], rounds: dict[Relation, int],
                  staged: dict[Relation, pa.Table]) -> None:
    """Add each collection's ``staged`` differences to its ``batches`` (the newest merged
    when there are too many) and the rounds holding them to its ``rounds``."""
    for node, table in staged.items():
        kept = batches.setdefault(node, [])
        kept.append(table.combine_chunks())  # one chunk: cut by key in a single take
        start = merged_tail([b.num_rows for b in kept])
        if start is not None:
            kept[start:] = [
                consolidated_arrow(pa.concat_tables(kept[start:])).combine_chunks()]
        last = pc.max(table[ROUND]).as_py()
        rounds[node] = max(rounds.get(node, 0), last + 1)


def rounded(table: pa.Table, r: int, arity: int) -> pa.Table:
    """Update rows ``table`` with ``ROUND`` ``r`` before their time and diff."""
    return pa.table({**{n: table[n] for n in column_names(arity)},
                     ROUND: pa.array([r] * table.num_rows, pa.int64()),
                     TIME: table[TIME], DIFF: table[DIFF]})


def with_rounds(leaves: dict[int, Leaf], arity: int) -> pa.Table:
    """The batches of a collection's rounds as one Arrow table with ``ROUND`` (a batch the
    driver does not hold is fetched: one Spark job, on large steps only)."""
    tables = []
    for r, leaf in leaves.items():
        table = leaf.in_driver
        if table is None:
            table = normalized(to_arrow(leaf.df))
        tables.append(rounded(table, r, arity))
    return pa.concat_tables(tables)
