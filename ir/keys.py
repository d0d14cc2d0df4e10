"""Unique keys: sets of output columns no two rows of a collection share the values of.

A key of a relation is a tuple of its output columns such that, in the consolidated collection
it denotes (at any time), no two rows agree on all of those columns and every row has
multiplicity 1, as Materialize's keys. The empty key ``()`` says there is at most one row.
``unique_keys`` derives the keys the rules below guarantee; a collection may have more.

- ``Get``: the keys it declares (a table's primary key and its unique keys of NOT NULL
  columns, enforced at every write).
- ``Constant``: the whole row when the rows are distinct and every multiplicity is 1; the empty
  key when moreover there is at most one row.
- ``Linear``: step by step: ``filter`` and ``map`` keep the keys (they drop rows or append
  columns); ``project`` renames each key column to the first output that copies it and drops
  the keys it does not keep every column of; ``flat_map`` and ``repeat_row`` drop all keys (they
  repeat rows).
- ``Join``: every combination of one key per input, each shifted by its input's offset in the
  concatenated row, concatenated: the join has keys only when every input has one (a join of
  no inputs is one empty row: the empty key). An ``AsOfJoin`` as a join of its two inputs
  (each left row joins right's rows at one time), none when ``outer`` (NULL-padded rows).
- ``Reduce``: its group key columns ``(0, ..., k-1)`` (the empty key for a global aggregate).
- ``Union``, ``LetRec``, ``Recur``: none (a recursive query's rows are not known to be
  distinct).
- ``Window``: its input's keys (each input row once, its calls' values appended), and its
  partition columns with any ``row_number`` column (one row per position of a partition).
- ``TopK``: its input's keys (it keeps some of the input's rows, never more copies), and the
  empty key when ``limit`` is at most 1.

The result is minimal: each key's columns ascending, no key that holds another, no duplicates,
keys sorted.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import product

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
)
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step

Key = tuple[int, ...]


def unique_keys(rel: Relation) -> tuple[Key, ...]:
    """The minimal unique keys of ``rel``'s output, by the module's rules."""
    return minimal_keys(_keys(rel))


def minimal_keys(keys: Iterable[Iterable[int]]) -> tuple[Key, ...]:
    """``keys`` with each key's columns ascending, without duplicates and without any key that
    holds another key, sorted."""
    candidates = {tuple(sorted(set(key))) for key in keys}
    return tuple(sorted(
        key for key in candidates
        if not any(other != key and set(other) <= set(key) for other in candidates)
    ))


def _keys(rel: Relation) -> Iterable[Key]:
    if isinstance(rel, Constant):
        return _constant_keys(rel)
    if isinstance(rel, Linear):
        keys = unique_keys(rel.input)
        for step in rel.steps:
            keys = _step_keys(step, keys)
        return keys
    if isinstance(rel, Join):
        offsets = rel.offsets()
        per_input = [
            [tuple(offset + c for c in key) for key in unique_keys(i)]
            for i, offset in zip(rel.inputs, offsets, strict=True)
        ]
        return (tuple(c for key in combination for c in key) for combination in
                product(*per_input))
    if isinstance(rel, AsOfJoin):
        return () if rel.outer else _keys(Join((rel.left, rel.right), ()))
    if isinstance(rel, Reduce):
        return (tuple(range(len(rel.group_key))),)
    if isinstance(rel, TopK):
        small = rel.limit is not None and rel.limit <= 1
        return unique_keys(rel.input) + (((),) if small else ())
    if isinstance(rel, Window):
        numbered = [rel.input.arity + i for i, c in enumerate(rel.calls)
                    if c.func == "row_number"]
        return unique_keys(rel.input) + tuple((*rel.partition_by, n) for n in numbered)
    if isinstance(rel, Get):
        return rel.keys
    if isinstance(rel, (Union, Recur, LetRec)):
        return ()
    raise TypeError(f"not a relation: {rel!r}")


def _constant_keys(rel: Constant) -> tuple[Key, ...]:
    rows = [values for values, multiplicity in rel.rows if multiplicity == 1]
    if len(rows) < len(rel.rows) or len(set(rows)) < len(rows):
        return ()
    return ((),) if len(rows) <= 1 else (tuple(range(len(rel.column_types))),)


def _step_keys(step: Step, keys: tuple[Key, ...]) -> tuple[Key, ...]:
    """The keys after ``step`` of a row whose keys are ``keys``."""
    if isinstance(step, (Filter, Map)):
        return keys
    if isinstance(step, Project):
        return minimal_keys(
            [step.outputs.index(c) for c in key]
            for key in keys
            if all(c in step.outputs for c in key)
        )
    assert isinstance(step, (FlatMap, Repeat))
    return ()
