"""The human names of a plan's output columns, where they trace back to a named column.

``column_names(rel)`` gives one entry per output column of ``rel``: the name of the stored
field the column is a copy of, or None when it is computed (or its origin has no name).

- ``Get``: its field names.
- ``Constant``: None for every column.
- ``Linear``: step by step (``linear_column_names`` gives the names before each step). A
  ``map`` appends, per expression, the name of the column when the expression is a bare
  column ``#i`` and None otherwise (each expression sees the columns appended before it);
  ``project`` picks; ``flat_map`` appends None for each column it adds; ``filter`` and
  ``repeat_row`` keep the names.
- ``Join``, ``AsOfJoin``: the names of its inputs, concatenated.
- ``Reduce``: a group key entry that is a bare column keeps that input column's name; other
  group key entries and the aggregates are None.
- ``Union``: the names of its first input (none when it has no inputs).
- ``TopK``: its input's names.
- ``Window``: its input's names, then None for each call.
- ``LetRec``: the names of its result binding's value; ``Recur``: None for every column.

A reference to a column the row does not have (a malformed plan) names nothing: None. Only the
number of columns a ``flat_map`` adds needs the plan's types.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.relation import (
    AsOfJoin,
    Constant,
    Get,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
    inputs_of,
)
from matview.ir.scalar import Col, Scalar
from matview.ir.steps import FlatMap, Map, Project

Names = tuple[str | None, ...]


def column_names(rel: Relation) -> Names:
    """The name of each output column of ``rel`` (None where unknown), by the module's rules."""
    if isinstance(rel, Get):
        return tuple(f.name for f in rel.fields)
    if isinstance(rel, Constant):
        return (None,) * len(rel.column_types)
    if isinstance(rel, Linear):
        return linear_column_names(rel)[-1]
    if isinstance(rel, (Join, AsOfJoin)):
        return tuple(name for i in inputs_of(rel) for name in column_names(i))
    if isinstance(rel, Reduce):
        names = column_names(rel.input)
        keys = tuple(name_of(k, names) for k in rel.group_key)
        return keys + (None,) * len(rel.aggregates)
    if isinstance(rel, Union):
        return column_names(rel.inputs[0]) if rel.inputs else ()
    if isinstance(rel, TopK):
        return column_names(rel.input)
    if isinstance(rel, Window):
        return column_names(rel.input) + (None,) * len(rel.calls)
    if isinstance(rel, LetRec):
        return column_names(rel.values[rel.result])
    if isinstance(rel, Recur):
        return (None,) * len(rel.column_types)
    raise TypeError(f"not a relation: {rel!r}")


def linear_column_names(rel: Linear) -> list[Names]:
    """The names of the row before each step of ``rel`` and, last, after all of them
    (``len(rel.steps) + 1`` entries; the first are the input's names)."""
    names = column_names(rel.input)
    out = [names]
    for at, step in enumerate(rel.steps):
        if isinstance(step, Map):
            for expr in step.exprs:
                names += (name_of(expr, names),)
        elif isinstance(step, Project):
            names = tuple(name_at(names, i) for i in step.outputs)
        elif isinstance(step, FlatMap):
            arity = Linear(rel.input, rel.steps[: at + 1]).arity
            names += (None,) * (arity - len(names))
        out.append(names)
    return out


def name_of(expr: Scalar, names: Sequence[str | None]) -> str | None:
    """The name a column computed as ``expr`` keeps: its column's when it is a bare column."""
    return name_at(names, expr.index) if isinstance(expr, Col) else None


def name_at(names: Sequence[str | None], index: int) -> str | None:
    """``names[index]``, or None for a column the row does not have."""
    return names[index] if 0 <= index < len(names) else None
