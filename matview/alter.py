"""``ALTER TABLE | VIEW | MATERIALIZED VIEW``: a relation's columns, constraints or name
changed, with PostgreSQL's semantics; the views built on it keep running, with their
columns. ``apply`` makes every change (``matview.alter_table`` the actions of ALTER TABLE);
the RENAME statements are here.

As PostgreSQL expands a view's ``*`` when the view is created, the stored query of each view
reading the altered relation is rewritten first (``sql.rewrite``): its columns qualified by
the relation they come from, its stars expanded, its NATURAL joins made USING joins of the
columns they join by now, then the renamed table or column renamed. The rewritten query must
bind to the plan the stored one binds to (else the ALTER is refused); bound again after the
ALTER it means what it meant, which plain views (bound at each use, and checked to bind
after the ALTER) and a durable database (which binds every view again when opened) rely on.

An ALTER that adds, drops or retypes a column rewrites the table: a new trace holding its
rows (a query of the old table) at the ALTER's own time, from which on it can be read (``AS
OF`` an earlier time is refused: its history is gone). Other ALTERs keep the trace; one
adding a constraint reads the rows to check them. A materialized view whose plan reads the
altered relation, when the relation's rows, columns, keys or name change, gets a dataflow of
the plan its rewritten query binds to now, which takes over its output trace
(``Controller.replan``: the fresh dataflow's rows diffed with the view's, which are equal),
so that the view, what reads it and its subscriptions go on. A statement that fails changes
nothing: the catalog as it was is put back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import networkx as nx
from sqlglot import exp

from matview import indexes
from matview.catalog import Entry
from matview.errors import IntegrityError, NotSupportedError, ProgrammingError
from matview.ir.relation import Field, gets
from matview.planner.lower import lower
from matview.planner.pipeline import physical
from matview.result import Result
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import TIME, Leaf
from matview.runtime.io import peek, writes
from matview.runtime.io.constraints import duplicated, null_in, shown
from matview.sql.catalog import CatalogItem, UniqueKey, quoted_name
from matview.sql.dialect import Matview
from matview.sql.parse import bind_statement, one_statement
from matview.sql.rewrite import ctes, qualified, rename_table, renamed_column
from matview.sql.statements import (
    AlterRename,
    AlterTableRenameColumn,
    AlterTableRenameConstraint,
    CreateView,
    Query,
)

if TYPE_CHECKING:
    from matview.engine import Engine

Rewrite = Callable[[str, exp.Expr], None]
"""What an ALTER does to the qualified query of a view (named) reading the altered
relation, in place; it may refuse the ALTER (``ProgrammingError``)."""


def unchanged(view: str, tree: exp.Expr) -> None:
    """The ``Rewrite`` of an ALTER that leaves the views' queries as they are."""


@dataclasses.dataclass
class Alteration:
    """What an ALTER does to relation ``name`` (``apply``)."""

    name: str
    new: CatalogItem
    """The relation's item after it."""
    change: Rewrite = unchanged
    rows: Sequence[str] | None = None
    """The table rewritten: each row its old one's ``rows`` (SQL expressions of its
    columns); None: its trace kept."""
    not_null: Sequence[int] = ()
    """Columns of ``new`` checked to hold no NULL (SQLSTATE 23502 when one does)."""
    unique: Sequence[UniqueKey] = ()
    """Keys of ``new`` checked to be held by one row each (23505 when two share one)."""
    doomed: Callable[[], list[str]] = list
    """The objects it drops, named once every view was rewritten (DROP COLUMN CASCADE)."""


def apply(engine: Engine, alteration: Alteration) -> None:
    """Put ``alteration.new`` in the place of its relation, the queries of the views reading
    it rewritten, the objects it dooms dropped, its checks made on the table's rows (as
    rewritten), the materialized views reading it replanned, and the indexes backing the
    table's keys made again; all or nothing."""
    catalog, name, new = engine.catalog, alteration.name, alteration.new
    old = catalog.entries[name]
    reshaped = alteration.rows is not None or (new.name, new.fields) != (
        old.item.name, old.item.fields)
    if reshaped:
        engine.sinks.check_drop([name], "alter")
    views = {view: _rewritten(engine, name, catalog.entries[view].item, alteration.change)
             for view in catalog.graph.successors(name)}
    dropping = alteration.doomed()
    engine.sinks.check_drop(dropping)
    replanning = reshaped or new.known_keys() != old.item.known_keys()
    flows = {view: catalog.entries[view] for view in catalog.dependents(name)
             if view not in dropping and catalog.entries[view].dataflow is not None}
    replanned = [view for view, entry in flows.items() if replanning and entry.plan is not None
                 and any(g.name == name for g in gets(entry.plan))]
    stuck = next((view for view in replanned if flows[view].dataflow.arrivals), None)
    if stuck is not None:
        raise NotSupportedError(
            f'cannot alter relation "{name}": materialized view "{stuck}" joins it as of '
            "when rows arrived (FOR SYSTEM_TIME AS OF), which a new plan cannot know")
    for view in replanned:  # up to date: the new dataflow takes over from now
        engine.refresh(view)
    at = engine.oracle.peek_write()
    trace = old.trace
    if alteration.rows is not None or alteration.not_null or alteration.unique:
        columns = [quoted_name(f.name) for f in new.fields]
        rewritten = _rows(engine, name, new, alteration.rows or columns, at, alteration)
        trace = trace if alteration.rows is None else rewritten
    saved = (dict(catalog.entries), catalog.graph.copy(), dict(catalog.indexes),
             dict(engine.cursors))
    try:
        for view in dropping:
            catalog.remove(view)
            engine.end_cursors(view)
        del catalog.entries[name]
        catalog.entries[new.name] = dataclasses.replace(old, item=new, trace=trace)
        if new.name != name:
            nx.relabel_nodes(catalog.graph, {name: new.name}, copy=False)
        if alteration.rows is not None:
            engine.end_cursors(name)  # their rows have other columns now
        for view, item in views.items():
            if view not in dropping:
                catalog.entries[view] = dataclasses.replace(catalog.entries[view], item=item)
                _still_bound(engine, name, item)
        for view in replanned:
            _replan(engine, view, at)
        for key, index in list(catalog.indexes.items()):
            if index.constraint and index.on == name:
                del catalog.indexes[key]
        indexes.backing(catalog, new)
    except BaseException:
        catalog.entries, catalog.graph, catalog.indexes = saved[:3]
        engine.cursors = saved[3]
        raise
    engine.oracle.commit_write(at)
    if alteration.rows is None and trace is not None:  # later writes checked by the keys
        for column in {f"c{key.columns[0]}" for key in new.keys} - set(trace.keys):
            trace.arrange(column)


def rename_column(engine: Engine, stmt: AlterTableRenameColumn) -> Result:
    """``RENAME COLUMN``: the views reading it read it by its new name; the table's
    indexes follow."""
    item = table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    names = [f.name for f in item.fields]
    if stmt.column not in names:
        raise ProgrammingError(f'column "{stmt.column}" does not exist')
    if stmt.to in names:
        raise ProgrammingError(f'column "{stmt.to}" of relation "{item.name}" already exists')
    new = dataclasses.replace(item, fields=tuple(
        Field(stmt.to, f.type) if f.name == stmt.column else f for f in item.fields))
    apply(engine, Alteration(item.name, new, lambda view, tree: renamed_column(
        tree, item.name, names, stmt.column, stmt.to)))
    for name, index in list(engine.catalog.indexes.items()):
        if index.on == item.name and not index.constraint:
            engine.catalog.indexes[name] = dataclasses.replace(index, columns=tuple(
                stmt.to if c == stmt.column else c for c in index.columns))
    return Result()


def rename_constraint(engine: Engine, stmt: AlterTableRenameConstraint) -> Result:
    """``RENAME CONSTRAINT``: a unique key renamed, and the index backing it."""
    item = table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    found = [key for key in item.keys if key.name == stmt.constraint]
    if not found:
        raise ProgrammingError(f'constraint "{stmt.constraint}" for table "{item.name}" does '
                               "not exist")
    indexes.free(engine, stmt.to)
    keys = tuple(dataclasses.replace(k, name=stmt.to) if k is found[0] else k
                 for k in item.keys)
    apply(engine, Alteration(item.name, dataclasses.replace(item, keys=keys)))
    return Result()


def rename(engine: Engine, stmt: AlterRename) -> Result:
    """``RENAME TO``: the views reading the relation read it by its new name; its indexes,
    subscriptions and comments follow."""
    item = engine.catalog.lookup(stmt.name)
    if item is None:
        if stmt.if_exists:
            return Result()
        raise ProgrammingError(f'relation "{stmt.name}" does not exist')
    if stmt.kind != "table" and item.kind != stmt.kind:
        raise ProgrammingError(f'"{stmt.name}" is not a {stmt.kind}')
    if item.kind == "source":
        raise ProgrammingError(f'cannot rename source "{stmt.name}": it and its progress '
                               "relation keep their names (DROP SOURCE and CREATE it again)")
    if engine.catalog.lookup(stmt.to) is not None or stmt.to in engine.catalog.indexes:
        raise ProgrammingError(f'relation "{stmt.to}" already exists')

    def renamed(view: str, tree: exp.Expr) -> None:
        if stmt.to in ctes(tree):
            raise ProgrammingError(f'cannot rename "{stmt.name}" to "{stmt.to}": view '
                                   f'"{view}" has a WITH query of that name')
        rename_table(tree, stmt.name, stmt.to)

    apply(engine, Alteration(stmt.name, dataclasses.replace(item, name=stmt.to), renamed))
    for name, index in list(engine.catalog.indexes.items()):
        if index.on == stmt.name:
            engine.catalog.indexes[name] = dataclasses.replace(index, on=stmt.to)
    engine.cursors.update({key: (stmt.to, at) for key, (on, at) in engine.cursors.items()
                           if on == stmt.name})
    return Result()


def table(engine: Engine, name: str, if_exists: bool) -> CatalogItem | None:
    """Table ``name``'s item (None when it does not exist and ``if_exists``)."""
    item = engine.catalog.lookup(name)
    if item is None and if_exists:
        return None
    if item is None:
        raise ProgrammingError(f'relation "{name}" does not exist')
    if item.kind != "table":
        raise ProgrammingError(f'"{name}" is not a table')
    return item


def _rewritten(engine: Engine, name: str, item: CatalogItem, change: Rewrite) -> CatalogItem:
    """View ``item`` (which reads relation ``name``) with its query qualified (checked to
    bind to the plan its query binds to) and rewritten by ``change``."""
    assert item.query_sql is not None
    columns = {n: [f.name for f in e.item.fields] for n, e in engine.catalog.entries.items()}
    refused = ProgrammingError(f'cannot alter "{name}": the query of view "{item.name}", which '
                               "reads it, could not be rewritten to read it altered")
    try:
        tree = qualified(item.query_sql, columns)
        same = dataclasses.replace(item, query_sql=tree.sql(dialect=Matview))
        faithful = _bound(engine, same).plan == _bound(engine, item).plan
    except Exception as error:
        raise refused from error
    if not faithful:
        raise refused
    change(item.name, tree)
    return dataclasses.replace(item, query_sql=tree.sql(dialect=Matview))


def _still_bound(engine: Engine, name: str, item: CatalogItem) -> None:
    """Refuse the ALTER of ``name`` when view ``item``'s rewritten query does not bind
    after it (a column it reads unqualified, which USING joins merge, made ambiguous)."""
    try:
        _bound(engine, item)
    except Exception as error:
        raise ProgrammingError(f'cannot alter "{name}": view "{item.name}", which reads it, '
                               f"would not read it altered ({error})") from error


def _bound(engine: Engine, item: CatalogItem) -> CreateView:
    """View ``item``'s CREATE statement bound against the catalog as it is now."""
    stmt = bind_statement(one_statement(item.create_sql()), engine.catalog)
    assert isinstance(stmt, CreateView)
    return stmt


def _rows(engine: Engine, name: str, new: CatalogItem, rows: Sequence[str], at: int,
          checks: Alteration) -> Trace:
    """A new trace of table ``new`` holding at ``at`` (from which on it holds its history)
    the rows of table ``name`` as ``rows`` computes them, refused unless they pass the
    ``checks`` (its NOT NULL columns and keys)."""
    query = bind_statement(one_statement(
        f"SELECT {', '.join(rows)} FROM {quoted_name(name)}"), engine.catalog)
    assert isinstance(query, Query)
    trace = engine.table_trace(new)
    names = [f.name for f in new.fields]
    for index in engine.catalog.indexes.values():
        if index.on == name and index.columns[0] in names:
            trace.arrange(f"c{names.index(index.columns[0])}")
    found = engine.evaluate(query.plan)
    if found is not None:
        updates = peek.refusing_negative(found).drop(TIME)
        leaf, _, _ = writes.batch(engine.spark, updates, [f.type for f in new.fields],
                                  True, at, trace.keys[0])
        leaf = trace.with_copy(leaf)
        if leaf is not None:
            _check(name, new, trace, leaf, checks)
        trace.append(leaf, at, at)
    trace.since = at
    return trace


def _check(name: str, new: CatalogItem, trace: Trace, leaf: Leaf, checks: Alteration) -> None:
    """Refuse rows ``leaf`` of table ``name`` (as ``new``, its ``trace`` empty) unless its
    ``checks`` columns hold no NULL and its keys no duplicate, with PostgreSQL's messages."""
    column = null_in(leaf, checks.not_null)
    if column is not None:
        raise IntegrityError(f'column "{new.fields[column].name}" of relation "{name}" '
                             "contains null values")
    for key in checks.unique:
        values = duplicated(trace, leaf, key.columns)
        if values is not None:
            listed = ", ".join(new.fields[i].name for i in key.columns)
            raise IntegrityError(f'could not create unique index "{key.name}": Key '
                                 f"({listed})=({shown(values)}) is duplicated.")


def _replan(engine: Engine, view: str, at: int) -> None:
    """Materialized view ``view``'s dataflow replaced by one of the plan its query binds to
    now, taking over its trace at ``at`` (``Controller.replan``)."""
    entry = engine.catalog.entries[view]
    stmt = _bound(engine, entry.item)
    fields = tuple(Field(n, t) for n, t in zip(stmt.column_names, stmt.plan.types))
    if fields != entry.item.fields:
        raise ProgrammingError(f'cannot alter a relation materialized view "{view}" reads: '
                               "the view would get other columns")
    assert entry.dataflow is not None and entry.trace is not None
    flow = engine.controller.replan(entry.dataflow, entry.trace, lower(physical(stmt.plan)),
                                    at)
    engine.catalog.entries[view] = Entry(entry.item, entry.trace, flow, stmt.plan)
