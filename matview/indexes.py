"""Indexes (``CREATE INDEX``): a stored collection's arrangement by a key, named, kept up
to date at every step and shared by every reader (seed 004).

An index on a table or materialized view ``x`` by columns ``(k, ...)`` arranges ``x``'s
trace by ``k`` (``Trace.arrange``: each batch held in files gets a copy arranged by ``k``,
now for those it holds and as each later one is written), so that every lookup of ``x`` by
``k`` — a join's delta path in any view, created before the index or after it, a write's
check — reads the pages of its keys instead of scanning ``x``, and a view created later
imports the arrangement instead of building it when it is created. The further key
columns are kept for ``SHOW INDEXES``: the arrangement is by the first. ``CREATE DEFAULT
INDEX`` indexes every column (arranged by the first), as Materialize's does.

A ``SELECT`` whose filter pins an index's key (``WHERE k = 42``, ``WHERE k IN (...)``)
over ``x`` alone is answered from the index: its plan runs over the rows of those keys
read by key (``Trace.matching``), not over ``x`` (``pinned``; Materialize's fast-path
peek).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from matview.errors import ProgrammingError
from matview.ir.relation import Get, Linear, Relation
from matview.ir.scalar import Call, Col, Lit, Scalar
from matview.ir.steps import Filter
from matview.ir.types import TEXT, Kind
from matview.result import Result
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import stored_or_none
from matview.runtime.time import MIN_TIME
from matview.sql.catalog import quoted_name
from matview.sql.statements import CreateIndex, DropIndex

if TYPE_CHECKING:
    from matview.catalog import LiveCatalog
    from matview.engine import Engine
    from matview.sql.catalog import CatalogItem

_ARROW = {Kind.INT: pa.int32(), Kind.BIGINT: pa.int64(), Kind.TEXT: pa.string(),
          Kind.UUID: pa.string()}
"""The Arrow type of an index key's values, by the key's kind (a UUID is its canonical
text)."""


@dataclass(frozen=True)
class Index:
    """Index ``name`` on ``on`` by ``columns`` (arranged by the first)."""

    name: str
    on: str
    columns: tuple[str, ...]
    constraint: bool = False
    """Whether it backs a table's unique key of its name (made and dropped with it)."""

    def create_sql(self) -> str:
        """The statement creating it, by name (a durable database replays it)."""
        keys = ", ".join(map(quoted_name, self.columns))
        return f"CREATE INDEX {quoted_name(self.name)} ON {quoted_name(self.on)} ({keys})"


def create(engine: Engine, stmt: CreateIndex) -> Result:
    """``CREATE [DEFAULT] INDEX``: the collection's trace arranged by the key now (a Spark
    job per batch held in files lacking that copy) and from now on."""
    catalog = engine.catalog
    name = stmt.name or _free_name(engine, stmt)
    if stmt.if_not_exists and taken(engine, name):
        return Result()
    free(engine, name)
    item = catalog.lookup(stmt.on)
    assert item is not None  # the binder checked it
    column = [f.name for f in item.fields].index(stmt.columns[0])
    engine.trace_of(stmt.on).arrange(f"c{column}")
    catalog.indexes[name] = Index(name, stmt.on, stmt.columns)
    return Result()


def taken(engine: Engine, name: str) -> bool:
    """Whether a relation or an index has ``name``."""
    return name in engine.catalog.indexes or engine.catalog.lookup(name) is not None


def free(engine: Engine, name: str) -> None:
    """Refuse ``name`` when it is ``taken``."""
    if taken(engine, name):
        raise ProgrammingError(f'relation "{name}" already exists')


def backing(catalog: LiveCatalog, table: CatalogItem) -> None:
    """The indexes backing ``table``'s unique keys, by the keys' names (its trace is
    arranged by each key's first column: ``Engine``)."""
    for key in table.keys:
        catalog.indexes[key.name] = Index(key.name, table.name, tuple(
            table.fields[i].name for i in key.columns), constraint=True)


def _free_name(engine: Engine, stmt: CreateIndex) -> str:
    """Materialize's name for an unnamed index: ``x_primary_idx`` (default) or
    ``x_k_..._idx``, numbered when taken."""
    base = f"{stmt.on}_primary_idx" if stmt.default else \
        f"{stmt.on}_{'_'.join(stmt.columns)}_idx"
    taken = engine.catalog.indexes.keys() | engine.catalog.entries.keys()
    return next(n for n in (base, *(f"{base}{i}" for i in range(1, len(taken) + 2)))
                if n not in taken)


def drop(engine: Engine, stmt: DropIndex) -> Result:
    """``DROP INDEX [IF EXISTS] names``: later batches of the collection are no longer
    arranged by the key for it (a reader that looks the collection up by the key arranges
    it again: ``Trace.matching``)."""
    indexes = engine.catalog.indexes
    for name in stmt.names:
        if name not in indexes and not stmt.if_exists:
            raise ProgrammingError(f'index "{name}" does not exist')
        if name in indexes and indexes[name].constraint:
            raise ProgrammingError(f'cannot drop index {name} because constraint {name} on '
                                   f"table {indexes[name].on} requires it")
    for name in stmt.names:
        index = indexes.pop(name, None)
        if index is None:
            continue
        fields = [f.name for f in engine.catalog.entries[index.on].item.fields]
        kept = {i.columns[0] for i in indexes.values() if i.on == index.on}
        trace = engine.trace_of(index.on)
        key = f"c{fields.index(index.columns[0])}"
        if index.columns[0] not in kept and key in trace.keys[1:]:
            trace.keys.remove(key)  # the first: what the trace's writes are checked by
    return Result()


def show(engine: Engine, on: str | None) -> Result:
    """``SHOW INDEXES [ON x]``: each index's name, collection and key (``{k, ...}``)."""
    if on is not None and engine.catalog.lookup(on) is None:
        raise ProgrammingError(f'relation "{on}" does not exist')
    shown = sorted((i for i in engine.catalog.indexes.values() if on in (None, i.on)),
                   key=lambda i: (i.on, i.name))
    table = pa.table({"name": [i.name for i in shown], "on": [i.on for i in shown],
                      "key": ["{" + ", ".join(i.columns) + "}" for i in shown]})
    return Result(("name", "on", "key"), (TEXT,) * 3, table)


def pinned(plan: Relation, indexes: dict[str, Index], columns: dict[str, tuple[str, ...]]
           ) -> tuple[str, int, pa.Array] | None:
    """When ``plan`` (optimized) filters a Get of a collection with an index to some
    values of the index's key: the collection, the key's column and the values (a
    superset of the rows the plan reads); else None."""
    if not (isinstance(plan, Linear) and isinstance(plan.input, Get) and plan.steps
            and isinstance(plan.steps[0], Filter)):
        return None
    name = plan.input.name
    keys = {columns[name].index(i.columns[0]) for i in indexes.values() if i.on == name}
    for predicate in plan.steps[0].predicates:
        found = _values(predicate)
        if found is not None and found[0] in keys:
            return name, found[0], found[1]
    return None


def _values(predicate: Scalar) -> tuple[int, pa.Array] | None:
    """``(column, values)`` when ``predicate`` is ``column = literal`` or an OR of such
    equalities of one column (an IN list); else None."""
    if isinstance(predicate, Call) and predicate.func == "or":
        parts = [_values(arg) for arg in predicate.args]
        found = [part for part in parts if part is not None]
        if len(found) != len(parts) or len({column for column, _ in found}) != 1:
            return None
        return found[0][0], pa.concat_arrays([values for _, values in found])
    if isinstance(predicate, Call) and predicate.func == "eq":
        left, right = predicate.args
        if isinstance(right, Col):
            left, right = right, left
        if isinstance(left, Col) and isinstance(right, Lit) and right.value is not None \
                and isinstance(right.value, int | str) and not isinstance(right.value, bool):
            return left.index, pa.array([right.value])
    return None


def peeked(engine: Engine, plan: Relation, now: int) -> tuple[str, Trace] | None:
    """When ``plan`` (optimized) reads a collection pinned to some keys of one of its
    indexes (``pinned``): the collection's name and a trace holding only those keys' rows
    at ``now`` (and the collection's errors, a view's), read by key from the index; else
    None."""
    if not (isinstance(plan, Linear) and isinstance(plan.input, Get)):
        return None
    fields = engine.catalog.entries[plan.input.name].item.fields
    found = pinned(plan, engine.catalog.indexes,
                   {plan.input.name: tuple(f.name for f in fields)})
    if found is None:
        return None
    name, column, values = found
    trace = engine.reading(name)
    kind = engine.catalog.entries[name].item.fields[column].type.kind
    if kind not in _ARROW:  # a key's index on other values: not arranged by them
        return None
    try:
        values = values.cast(_ARROW[kind])
    except pa.ArrowInvalid:  # a key no row can hold (out of the column's range)
        return None
    read = trace.matching(now, f"c{column}", values)
    if read is None:
        return None
    table, _ = read.fetch()
    held = Trace(engine.spark, trace.arity)
    held.errors = trace.errors
    held.append(None if table is None else stored_or_none(engine.spark, table), MIN_TIME, now)
    return name, held


def described(engine: Engine) -> dict[str, list[str]]:
    """Per collection, its indexes as EXPLAIN names them: ``name (k, ...)``."""
    out: dict[str, list[str]] = {}
    for index in sorted(engine.catalog.indexes.values(), key=lambda i: i.name):
        out.setdefault(index.on, []).append(f"{index.name} ({', '.join(index.columns)})")
    return out
