"""The steps of a ``relation.Linear`` node (``Map``, ``Filter``, ``Project``, ``FlatMap``,
``Repeat``), each a logic ``row -> [(row', time', diff')]`` (``linear_logic``), and what a
sequence of them does to the row: its column types (``step_types``), the input column a
kept column copies (``input_column``), the expressions a step evaluates (``step_scalars``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir.scalar import Call, Col, Scalar, type_of
from matview.ir.types import BIGINT, SqlType


@dataclass(frozen=True)
class Map:
    """Linear step: append one column per expression, evaluated on the row so far."""

    exprs: tuple[Scalar, ...]


@dataclass(frozen=True)
class Filter:
    """Linear step: keep the rows on which every predicate is TRUE (not FALSE, not NULL)."""

    predicates: tuple[Scalar, ...]


@dataclass(frozen=True)
class Project:
    """Linear step: keep the listed columns, in the listed order (repeats allowed)."""

    outputs: tuple[int, ...]


@dataclass(frozen=True)
class FlatMap:
    """Linear step: each row is repeated once per row of the table functions ``calls``
    (``table_functions``), with their columns appended; several calls run in lockstep (as
    PostgreSQL's ``ROWS FROM``), the shorter ones padded with NULLs. ``ordinality`` appends
    the BIGINT position 1, 2, ... of each output row."""

    calls: tuple[Call, ...]
    ordinality: bool = False


@dataclass(frozen=True)
class Repeat:
    """Linear step (``repeat_row``): the row with its multiplicity multiplied by ``count``
    (an integer expression; negative retracts, 0 or NULL drops the row)."""

    count: Scalar


Step = Map | Filter | Project | FlatMap | Repeat


def step_types(step: Step, types: tuple[SqlType, ...]) -> tuple[SqlType, ...]:
    """The column types after ``step`` on rows of ``types``."""
    if isinstance(step, Map):
        out = list(types)
        for expr in step.exprs:
            out.append(type_of(expr, out))
        return tuple(out)
    if isinstance(step, Project):
        return tuple(types[i] for i in step.outputs)
    if isinstance(step, FlatMap):
        from matview.ir.table_functions import output_types

        added = tuple(t for call in step.calls for t in output_types(call, types))
        return types + added + ((BIGINT,) if step.ordinality else ())
    return types


def input_column(steps: Sequence[Step], types: tuple[SqlType, ...], column: int) -> int | None:
    """The column of the input (of ``types``) whose value column ``column`` of ``steps``'
    output always holds: one that the steps keep, project or copy (a Map of a plain column);
    None for a column they compute."""
    arities = []
    for step in steps:
        arities.append(len(types))
        types = step_types(step, types)
    for step, before in zip(reversed(steps), reversed(arities)):
        if isinstance(step, Project):
            column = step.outputs[column]
        while column >= before and isinstance(step, Map):
            expr = step.exprs[column - before]
            if not isinstance(expr, Col):
                return None
            column = expr.index
        if column >= before:
            return None
    return column


def copied_columns(steps: Sequence[Step], types: tuple[SqlType, ...]
                   ) -> tuple[int, ...] | None:
    """The input column (of ``types``) each output column of ``steps`` copies, when the
    steps only rearrange columns (projections, maps of plain columns); else None."""
    if not all(isinstance(s, Project) or (isinstance(s, Map) and all(
            isinstance(e, Col) for e in s.exprs)) for s in steps):
        return None
    out = types
    for step in steps:
        out = step_types(step, out)
    sources = [input_column(steps, types, c) for c in range(len(out))]
    return None if None in sources else tuple(c for c in sources if c is not None)


def step_scalars(step: Step) -> tuple[Scalar, ...]:
    """The scalar expressions ``step`` evaluates (a FlatMap's call arguments)."""
    if isinstance(step, Map):
        return step.exprs
    if isinstance(step, Filter):
        return step.predicates
    if isinstance(step, FlatMap):
        return tuple(a for call in step.calls for a in call.args)
    if isinstance(step, Repeat):
        return (step.count,)
    return ()
