"""``ALTER TABLE | VIEW | MATERIALIZED VIEW``: a relation's columns or name changed, with
PostgreSQL's semantics; the views built on it keep running, with their columns.

As PostgreSQL expands a view's ``*`` when the view is created, the stored query of each view
reading the altered relation is rewritten first (``sql.rewrite``): its columns qualified by
the relation they come from, its stars expanded, then the renamed table or column renamed.
The rewritten query must bind to the plan the stored one binds to (else the ALTER is refused:
a ``USING`` or ``NATURAL`` join, which sqlglot rewrites otherwise); bound again after the
ALTER it means what it meant, which plain views (bound at each use) and a durable database
(which binds every view again when opened) rely on.

ADD and DROP COLUMN rewrite the table: a new trace holding its rows (a query of the old
table) at the ALTER's own time, from which on it can be read (``AS OF`` an earlier time is
refused: its history is gone). RENAME keeps the trace. A materialized view whose plan reads
the altered relation gets a dataflow of the plan its rewritten query binds to now, which
takes over its output trace (``Controller.replan``: the fresh dataflow's rows diffed with the
view's, which are equal), so that the view, what reads it and its subscriptions go on. A
statement that fails changes nothing: the catalog as it was is put back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import networkx as nx
from sqlglot import exp

from matview.catalog import Entry
from matview.errors import IntegrityError, ProgrammingError
from matview.ir.relation import Field, gets
from matview.planner.lower import lower
from matview.planner.pipeline import physical
from matview.result import Result
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import TIME, Leaf
from matview.runtime.io import peek, writes
from matview.sql.catalog import CatalogItem, UniqueKey, quoted_name
from matview.sql.dialect import Matview
from matview.sql.parse import bind_statement, one_statement
from matview.sql.rewrite import ctes, qualified, rename_table, renamed_column, uses_column
from matview.sql.statements import (
    AlterRename,
    AlterTableAddColumn,
    AlterTableDropColumn,
    AlterTableRenameColumn,
    CreateView,
    Query,
)

if TYPE_CHECKING:
    from matview.engine import Engine

Rewrite = Callable[[str, exp.Expr], None]
"""What an ALTER does to the qualified query of a view (named) reading the altered
relation, in place; it may refuse the ALTER (``ProgrammingError``)."""


def add_column(engine: Engine, stmt: AlterTableAddColumn) -> Result:
    """``ADD COLUMN``: the table rewritten with the column, holding its default (or NULL)."""
    item = _table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    field = stmt.field
    if field.name in {f.name for f in item.fields}:
        if stmt.if_not_exists:
            return Result()
        raise ProgrammingError(f'column "{field.name}" of relation "{item.name}" already '
                               "exists")
    position = len(item.fields)
    new = dataclasses.replace(
        item, fields=(*item.fields, field),
        not_null=item.not_null | ({position} if stmt.not_null else set()),
        defaults=item.defaults + (() if stmt.default is None else ((position, stmt.default),)))
    value = f"CAST({'NULL' if stmt.default is None else stmt.default} AS {field.type})"
    columns = [quoted_name(f.name) for f in item.fields]
    _alter(engine, item.name, new, lambda name, tree: None, (*columns, value),
           check_null=position if stmt.not_null else None)
    return Result()


def drop_column(engine: Engine, stmt: AlterTableDropColumn) -> Result:
    """``DROP COLUMN``: refused while a view reads it (but with CASCADE, which drops them),
    the unique keys and indexes with it dropped, the table rewritten without it."""
    item = _table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    names = [f.name for f in item.fields]
    if stmt.column not in names:
        if stmt.if_column_exists:
            return Result()
        raise ProgrammingError(f'column "{stmt.column}" of relation "{item.name}" does not '
                               "exist")
    if len(names) == 1:
        raise ProgrammingError(f'cannot drop column {stmt.column} of table {item.name}: it '
                               "is its only column (tables without columns are not "
                               "supported)")
    dropped = names.index(stmt.column)
    users: list[str] = []

    def check(view: str, tree: exp.Expr) -> None:
        if uses_column(tree, item.name, stmt.column):
            users.append(view)

    moved = {i: i - (i > dropped) for i in range(len(names)) if i != dropped}
    keys = tuple(UniqueKey(k.name, tuple(moved[c] for c in k.columns), k.primary)
                 for k in item.keys if dropped not in k.columns)
    new = dataclasses.replace(
        item, fields=tuple(f for i, f in enumerate(item.fields) if i != dropped), keys=keys,
        not_null=frozenset(moved[i] for i in item.not_null if i != dropped),
        defaults=tuple((moved[i], d) for i, d in item.defaults if i != dropped),
        column_comments=tuple((moved[i], c) for i, c in item.column_comments if i != dropped))
    kept = [quoted_name(n) for n in names if n != stmt.column]

    def doomed() -> list[str]:
        if users and not stmt.cascade:
            raise ProgrammingError(
                f"cannot drop column {stmt.column} of table {item.name} because other "
                f"objects depend on it: {', '.join(users)} (use ALTER TABLE ... DROP COLUMN "
                "... CASCADE to drop them too)")
        found = [n for u in users for n in (*engine.catalog.dependents(u), u)]
        return list(dict.fromkeys(found))

    _alter(engine, item.name, new, check, kept, doomed=doomed)
    indexes = engine.catalog.indexes
    for name, index in list(indexes.items()):
        if index.on == item.name and stmt.column in index.columns:
            del indexes[name]
    return Result()


def rename_column(engine: Engine, stmt: AlterTableRenameColumn) -> Result:
    """``RENAME COLUMN``: the views reading it read it by its new name; the table's
    indexes follow."""
    item = _table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    names = [f.name for f in item.fields]
    if stmt.column not in names:
        raise ProgrammingError(f'column "{stmt.column}" does not exist')
    if stmt.to in names:
        raise ProgrammingError(f'column "{stmt.to}" of relation "{item.name}" already exists')
    new = dataclasses.replace(item, fields=tuple(
        Field(stmt.to, f.type) if f.name == stmt.column else f for f in item.fields))
    _alter(engine, item.name, new,
           lambda view, tree: renamed_column(tree, item.name, stmt.column, stmt.to))
    indexes = engine.catalog.indexes
    for name, index in list(indexes.items()):
        if index.on == item.name:
            indexes[name] = dataclasses.replace(index, columns=tuple(
                stmt.to if c == stmt.column else c for c in index.columns))
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
    if engine.catalog.lookup(stmt.to) is not None or stmt.to in engine.catalog.indexes:
        raise ProgrammingError(f'relation "{stmt.to}" already exists')

    def renamed(view: str, tree: exp.Expr) -> None:
        if stmt.to in ctes(tree):
            raise ProgrammingError(f'cannot rename "{stmt.name}" to "{stmt.to}": view '
                                   f'"{view}" has a WITH query of that name')
        rename_table(tree, stmt.name, stmt.to)

    _alter(engine, stmt.name, dataclasses.replace(item, name=stmt.to), renamed)
    indexes = engine.catalog.indexes
    for name, index in list(indexes.items()):
        if index.on == stmt.name:
            indexes[name] = dataclasses.replace(index, on=stmt.to)
    engine.cursors.update({key: (stmt.to, at) for key, (on, at) in engine.cursors.items()
                           if on == stmt.name})
    return Result()


def _table(engine: Engine, name: str, if_exists: bool) -> CatalogItem | None:
    """Table ``name``'s item (None when it does not exist and ``if_exists``)."""
    item = engine.catalog.lookup(name)
    if item is None and if_exists:
        return None
    if item is None:
        raise ProgrammingError(f'relation "{name}" does not exist')
    if item.kind != "table":
        raise ProgrammingError(f'"{name}" is not a table')
    return item


def _alter(engine: Engine, name: str, new: CatalogItem, change: Rewrite,
           rows: Sequence[str] | None = None, check_null: int | None = None,
           doomed: Callable[[], list[str]] = list) -> None:
    """Put ``new`` in the place of relation ``name``, the queries of the views reading it
    rewritten by ``change``, the objects ``doomed`` names (once every view was rewritten)
    dropped; ``rows``: the table rewritten, each row its old one's ``rows`` (SQL
    expressions), refused when column ``check_null`` (NOT NULL) holds a NULL."""
    catalog = engine.catalog
    engine.sinks.check_drop([name], "alter")
    views = {view: _rewritten(engine, name, catalog.entries[view].item, change)
             for view in catalog.graph.successors(name)}
    dropping = doomed()
    engine.sinks.check_drop(dropping)
    flows = {view: catalog.entries[view] for view in catalog.dependents(name)
             if view not in dropping and catalog.entries[view].dataflow is not None}
    replanned = [view for view, entry in flows.items() if entry.plan is not None
                 and any(g.name == name for g in gets(entry.plan))]
    for view in replanned:  # up to date: the new dataflow takes over from now
        engine.refresh(view)
    at = engine.oracle.peek_write()
    old = catalog.entries[name]
    trace = old.trace if rows is None else _rows(engine, name, new, rows, at, check_null)
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
        if rows is not None:
            engine.end_cursors(name)  # their rows have other columns now
        for view, item in views.items():
            if view not in dropping:
                catalog.entries[view] = dataclasses.replace(catalog.entries[view], item=item)
        for view in replanned:
            _replan(engine, view, at)
    except BaseException:
        catalog.entries, catalog.graph, catalog.indexes = saved[:3]
        engine.cursors = saved[3]
        raise
    engine.oracle.commit_write(at)


def _rewritten(engine: Engine, name: str, item: CatalogItem, change: Rewrite) -> CatalogItem:
    """View ``item`` (which reads relation ``name``) with its query qualified (checked to
    bind to the plan its query binds to) and rewritten by ``change``."""
    assert item.query_sql is not None
    columns = {n: [f.name for f in e.item.fields] for n, e in engine.catalog.entries.items()}
    refused = ProgrammingError(f'cannot alter "{name}": the query of view "{item.name}", which '
                               "reads it, could not be rewritten to read it altered (a USING "
                               "or NATURAL join is not rewritten yet)")
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


def _bound(engine: Engine, item: CatalogItem) -> CreateView:
    """View ``item``'s CREATE statement bound against the catalog as it is now."""
    stmt = bind_statement(one_statement(item.create_sql()), engine.catalog)
    assert isinstance(stmt, CreateView)
    return stmt


def _rows(engine: Engine, name: str, table: CatalogItem, rows: Sequence[str], at: int,
          check_null: int | None) -> Trace:
    """A new trace of ``table`` holding at ``at`` (from which on it holds its history) the
    rows of table ``name`` as ``rows`` computes them."""
    query = bind_statement(one_statement(
        f"SELECT {', '.join(rows)} FROM {quoted_name(name)}"), engine.catalog)
    assert isinstance(query, Query)
    trace = engine.table_trace(table)
    for index in engine.catalog.indexes.values():
        names = [f.name for f in table.fields]
        if index.on == name and index.columns[0] in names:
            trace.arrange(f"c{names.index(index.columns[0])}")
    found = engine.evaluate(query.plan)
    if found is not None:
        updates = peek.refusing_negative(found).drop(TIME)
        leaf, _, _ = writes.batch(engine.spark, updates, [f.type for f in table.fields],
                                  True, at, trace.keys[0])
        leaf = trace.with_copy(leaf)
        if leaf is not None and check_null is not None and _holds_null(leaf, f"c{check_null}"):
            raise IntegrityError(f'column "{table.fields[check_null].name}" of relation '
                                 f'"{name}" contains null values')
        trace.append(leaf, at, at)
    trace.since = at
    return trace


def _holds_null(leaf: Leaf, column: str) -> bool:
    """Whether a row of ``leaf`` holds NULL in ``column``."""
    held = leaf.in_driver
    if held is not None:
        return held.column(column).null_count > 0
    return not leaf.df.filter(leaf.df[column].isNull()).isEmpty()


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
