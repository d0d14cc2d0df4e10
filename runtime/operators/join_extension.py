"""A delta path's group of lookups run worst-case optimally (seed 003; ``physical.Extension``).

The inputs of the group can each bind the path's next attribute. For every path row:
*count*: each input's rows matching the row by the key of its first stage, read from the
input's count index by that key (``arrangements.count_index``: a stored collection's rows
counted by one column, kept in step with it and shared by its readers) where the input has
one, else a keyed aggregate of what the path reads of it, joined to the rows by that key (the
counts only choose each row's branch, so the index's, up to the step's ``upper``, serve
whichever times the path sees); *propose*: the
rows go to the branch of the input with the fewest matches (ties: the earliest), which
looks that input up first; *validate*: each branch then looks up the group's other inputs,
by keys holding the proposed attribute. The branches' rows union into the path's rows,
those a binary order of the same lookups gives, without the rows that order proposes and a
later lookup drops: a path row extended through a hub's thousands of edges by one input,
and by a handful by another, now meets the handful. No per-row Python: the counts, the
split and the lookups are Spark plans over the path's frame.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from matview.ir import physical
from matview.ir.scalar import Scalar
from matview.runtime.arrangements.count_index import COUNT, KEY
from matview.runtime.arrangements.updates import lookup, union_all
from matview.runtime.operators.base import Delta, Operator, StepContext
from matview.runtime.settings import active
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def by_counts(path: physical.DeltaPath, small: bool, sizes: Sequence[int | None],
              deltas: Sequence[Delta | None]) -> tuple[bool, ...]:
    """Per extension of ``path``, whether a step runs it by counts: when the step is not
    ``small`` (a small step runs in the driver's one task, reading its inputs by key after
    its first step, where a group's counts, one aggregate each, cost more than they save
    and share that task's memory) and each of the group's inputs holds at least
    ``counted_extension_rows`` update rows (``sizes``: their histories' or what the path
    reads of them, when known, and their ``deltas``). Below that the counts cost more than
    the rows they save: planning them, and computing the path's rows once per branch (TPC-H
    Q5's customers and suppliers, 15k and 1k rows, cost its build a third more by counts).
    Otherwise the group runs in its first order."""
    least = active().counted_extension_rows

    def rows(j: int) -> int:
        delta = deltas[j]
        return (sizes[j] or 0) + (0 if delta is None else delta.rows or 0)

    return tuple(not small and least >= 0 and all(rows(j) >= least for j in e.inputs)
                 for e in path.extensions)


def index_counts(inputs: Sequence[Operator], path: physical.DeltaPath, ctx: StepContext,
                 counted: tuple[bool, ...]) -> tuple[tuple[DataFrame | None, ...], ...]:
    """Per extension of ``path`` the step runs by counts (``counted``; others: none), per
    order, its first stage's input counted by that stage's key from the input's count index
    (``Operator.key_counts``) when the key is one column of it; else None (``extend``
    counts the rows the path reads of it)."""
    def counts(stage: physical.Lookup) -> DataFrame | None:
        column = stage.counted_by
        return None if column is None else inputs[stage.input].key_counts(ctx, column)

    return tuple(tuple(counts(order[0]) for order in e.orders) if run else ()
                 for e, run in zip(path.extensions, counted, strict=True))


Joined = Callable[[DataFrame, int, int, frozenset[int]], DataFrame | None]
"""Stage ``s`` of order ``m`` of the group run on path rows whose bound inputs are given:
the rows joined with that stage's input (None: it holds nothing)."""


def extend(path: DataFrame, extension: physical.Extension, bound: frozenset[int],
           small: bool, others: Sequence[DataFrame | None],
           counts: Sequence[DataFrame | None],
           stream: Callable[[physical.Lookup], list[Column]],
           own: Callable[[int, Scalar], Column], joined: Joined) -> DataFrame | None:
    """``path`` extended by the group of ``extension`` (the module docstring), after the
    inputs ``bound``; ``others`` are what the path reads of each input, ``counts`` per
    order its first input's count index's counts (``index_counts``; None: none),
    ``stream`` compiles a stage's stream key over the path's columns, ``own`` an
    expression over input ``j``'s own columns."""
    size = len(extension.orders)
    for m, order in enumerate(extension.orders):
        frame, indexed = others[order[0].input], counts[m]
        if frame is None:
            return None
        key, stream_key = [own(order[0].input, k) for k in order[0].key], stream(order[0])
        names = [f"_k{m}_{x}" for x in range(len(key))]
        if indexed is not None:
            counted = indexed.select(F.col(KEY).alias(names[0]), F.col(COUNT).alias(f"_n{m}"))
        else:
            if small:  # one partition: counted with no exchange, in the step's one task
                frame = frame.coalesce(1)
            counted = frame.groupBy(*[k.alias(n) for k, n in zip(
                key, names, strict=True)]).agg(F.count(F.lit(1)).alias(f"_n{m}"))
        on = functools.reduce(Column.__and__, [
            s == counted[n] for s, n in zip(stream_key, names, strict=True)])
        path = lookup(path, counted, on, "left", small).drop(*names)
        path = path.withColumn(f"_n{m}", F.coalesce(F.col(f"_n{m}"), F.lit(0)))
    branches = []
    for m, order in enumerate(extension.orders):
        rows: DataFrame | None = path.where(_fewest(m, size))
        seen = bound
        for s, stage in enumerate(order):
            assert rows is not None
            rows = joined(rows, m, s, seen)
            if rows is None:
                return None
            seen = seen | {stage.input}
        branches.append(rows)
    return union_all(branches)


def _fewest(m: int, size: int) -> Column:
    """Whether input ``m`` of the group counts the fewest matches (before ``m``: strictly
    fewer than each earlier input, so a tie goes to the earliest)."""
    return functools.reduce(Column.__and__, [
        (F.col(f"_n{m}") < F.col(f"_n{o}")) if o < m else (F.col(f"_n{m}") <= F.col(f"_n{o}"))
        for o in range(size) if o != m])

