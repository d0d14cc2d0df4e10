"""What a delta path of a join (``operators.join``) reads of the histories of the inputs it
looks up, and what the driver knows of the values the path's columns hold.

An input a path looks up is read by key when the stage's lookup key holds a plain column
paired, in its stream key, with a plain column of an input whose values the driver knows
(the path's start's changes, or an input read by key earlier on the path, with its changes
when the path sees them): only its rows holding one of those values are read
(``Operator.history_matching``, a superset of the rows the lookup can match). The values
known on every path bound the values of the join's output (``output_values``), which a
consumer reads by key in turn. Before a path runs, its rows up to its first keyed lookup
are bounded (``unkeyed_rows``), so that a runaway cross product fails before it starts."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir import physical
from matview.ir.joins import input_at, offsets_of
from matview.ir.scalar import Col
from matview.runtime.arrangements.key_index import distinct_values
from matview.runtime.operators.base import Delta, Matched, Operator, StepContext

Values = Callable[[int], pa.Array | None]
"""The values a column of an input may hold on a path (a superset), when the driver knows
them (else None)."""


def keyed_histories(inputs: tuple[Operator, ...], path: physical.DeltaPath,
                    ctx: StepContext, deltas: list[Delta | None], alt_neu: bool
                    ) -> tuple[dict[int, Matched], dict[int, Values]]:
    """The histories ``path`` reads by key (the module docstring; the other inputs are read
    whole), and per input the values, known in the driver, a column may hold on the path.
    ``alt_neu``: the path sees the changes of the inputs before its own only."""
    i = path.input
    start = inputs[i]
    known: dict[int, Values] = {i: lambda c: start.step_values(ctx, c)}
    if ctx.first:  # later steps read the inputs by their lookup keys: arranged by them now
        for stage in path.lookups:
            pairs = zip(stage.stream_key, stage.key, strict=True)
            key = next((k for s, k in pairs if isinstance(s, Col) and isinstance(k, Col)),
                       None)
            if key is not None:
                inputs[stage.input].arrange(key.index)
        return {}, known
    offsets = offsets_of([op.arity for op in inputs])
    read: dict[int, Matched] = {}
    for stage in path.lookups:
        j = stage.input
        for stream, key in zip(stage.stream_key, stage.key, strict=True):
            if not (isinstance(stream, Col) and isinstance(key, Col)):
                continue
            k = input_at(offsets, stream.index)
            values = known[k](stream.index - offsets[k]) if k in known else None
            matched = None if values is None else inputs[j].history_matching(
                ctx, key.index, values)
            if matched is not None:
                read[j] = matched
                sees = deltas[j] is not None and not (alt_neu and j > i)
                known[j] = _values_seen(inputs[j], ctx, matched, sees)
                break
    return read, known


def _values_seen(input: Operator, ctx: StepContext, matched: Matched, sees: bool) -> Values:
    """The values a column of ``input`` may hold on a path that read its history by key
    (``matched``) and, when it ``sees`` them, its changes of the step."""
    def values(column: int) -> pa.Array | None:
        old = matched.values(column)
        if old is None or not sees:
            return old
        new = input.step_values(ctx, column)
        return None if new is None else pc.unique(
            pa.chunked_array([old, new.cast(old.type)]))
    return values


def output_values(inputs: tuple[Operator, ...], paths: list[dict[int, Values]], column: int,
                  empty: pa.DataType) -> pa.Array | None:
    """The values column ``column`` of a join's output may hold, given the values known on
    each of the ``paths`` that ran (``keyed_histories``): None when a path knows none of
    its input's; no values (of type ``empty``) when no path ran."""
    offsets = offsets_of([op.arity for op in inputs])
    k = input_at(offsets, column)
    arrays = []
    for known in paths:
        found = known[k](column - offsets[k]) if k in known else None
        if found is None:
            return None
        arrays.append(found)
    return distinct_values(arrays, empty)


def unkeyed_rows(inputs: tuple[Operator, ...], path: physical.DeltaPath, ctx: StepContext,
                 deltas: list[Delta | None]) -> int | None:
    """A bound on the rows of ``path`` up to its first lookup by key (the lookups before it,
    with an empty key, are cross products of known sizes), when the sizes are known and
    those cross products make it more than the path's own changes."""
    start = deltas[path.input]
    changes = rows = None if start is None else start.rows
    if rows is None:
        return None
    for stage in path.lookups:
        old, delta = inputs[stage.input].history_rows(ctx), deltas[stage.input]
        new = 0 if delta is None else delta.rows
        if stage.key or old is None or new is None:
            break
        rows *= old + new
    return rows if rows > changes else None
