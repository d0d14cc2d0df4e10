"""Data definition: CREATE TABLE [AS], CREATE [MATERIALIZED] VIEW, CREATE SINK, DROP and
SHOW.

Whether the named objects exist is the engine's concern when it runs the statement (IF [NOT]
EXISTS, CASCADE); binding only checks the statement itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast

from matview.ir.relation import Field, TopK
from matview.ir.types import Kind
from matview.sql.allowlist import check_arguments
from matview.sql.catalog import ObjectKind, Recording
from matview.sql.constraints import bind_constraints
from matview.sql.context import Context
from matview.sql.datatypes import column_type, storable
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import CreateSink as CreateSinkNode
from matview.sql.dialect_nodes import DropSink as DropSinkNode
from matview.sql.errors import (
    DuplicateObjectError,
    SqlError,
    SqlTypeError,
    UnknownObjectError,
    UnsupportedError,
)
from matview.sql.names import normalize, relation_name
from matview.sql.query import bind_query, top_k
from matview.sql.statement_time import timeless
from matview.sql.statements import (
    REFRESH_POLICIES,
    CreateIndex,
    CreateSink,
    CreateTable,
    CreateTableAs,
    CreateView,
    Drop,
    DropIndex,
    DropSink,
    Query,
    Show,
    ShowWhat,
)
from sqlglot import exp

_CREATE = frozenset({"this", "kind", "expression", "exists", "properties", "replace"})
_DROP = frozenset({"tables", "kind", "exists", "cascade", "restrict", "materialized"})
"""The arguments of CREATE and DROP the binder reads (``allowlist.check_arguments``)."""

_SHOW: dict[str, ShowWhat] = {
    "TABLES": "tables", "INDEXES": "indexes", "VIEWS": "views", "COMMENTS": "comments",
    "MATERIALIZED VIEWS": "materialized views", "SOURCES": "sources",
    "CREATE SOURCE": "create source",
    "COLUMNS": "columns", "SETTINGS": "settings", "CREATE TABLE": "create table",
    "CREATE VIEW": "create view", "CREATE MATERIALIZED VIEW": "create materialized view",
}


def bind_create_table(node: exp.Create, ctx: Context) -> CreateTable | CreateTableAs:
    """``CREATE TABLE name (column type, ...)``, or ``CREATE TABLE name [(columns)] AS
    query``: a table of the query's columns (renamed by the list) and types, holding its
    rows."""
    check_arguments(node, _CREATE)
    if node.args.get("replace"):
        raise UnsupportedError.at("CREATE OR REPLACE TABLE is not supported (PostgreSQL has "
                                  "none): drop the table and create it", node)
    _reject_properties(node)
    if node.expression is not None:
        return _bind_create_table_as(node, ctx)
    schema = node.this
    columns = [c for c in schema.expressions if isinstance(c, exp.ColumnDef)]
    fields = tuple(Field(normalize(c.this), column_type(c.args["kind"], normalize(c.this)))
                   for c in columns)
    check_unique([f.name for f in fields], columns)
    name = relation_name(schema.this)
    keys, not_null, defaults = bind_constraints(name, fields, schema.expressions)
    return CreateTable(name, fields, bool(node.args.get("exists")), keys, not_null, defaults)


def _bind_create_table_as(node: exp.Create, ctx: Context) -> CreateTableAs:
    target = node.this
    columns = [normalize(c) for c in target.expressions] if isinstance(target, exp.Schema) \
        else []
    table = target.this if isinstance(target, exp.Schema) else target
    query = bind_query(node.expression, ctx)
    if len(columns) > len(query.column_names):
        raise SqlError.at("CREATE TABLE AS specifies too many column names", target)
    names = columns + list(query.column_names[len(columns):])
    check_unique(names, target.expressions if columns else [node.expression] * len(names))
    fields = []
    for name, t in zip(names, query.plan.types, strict=True):
        if not storable(t):
            raise SqlTypeError.at(f'column "{name}" has type {t}, which a table cannot hold',
                                  node.expression)
        fields.append(Field(name, t))
    create = CreateTable(relation_name(table), tuple(fields), bool(node.args.get("exists")))
    return CreateTableAs(create, query)


def bind_create_view(node: exp.Create, ctx: Context) -> CreateView:
    """``CREATE [OR REPLACE] [MATERIALIZED] VIEW name [(columns)] AS query``. A materialized
    view's query may end in LIMIT and OFFSET (with or without ORDER BY): its plan is then a
    ``TopK`` of the query's, and its rows are read in the ORDER BY's order. Otherwise ORDER
    BY is dropped (a view is a set). Column names may repeat (a reference to a repeated name
    is ambiguous)."""
    check_arguments(node, _CREATE)
    properties = node.args.get("properties")
    materialized = properties is not None and any(
        isinstance(p, exp.MaterializedProperty) for p in properties.expressions)
    refresh = _refresh_policy(node, materialized)
    target = node.this
    columns = target.expressions if isinstance(target, exp.Schema) else []
    table = target.this if isinstance(target, exp.Schema) else target
    recording = Recording(ctx.catalog)
    with timeless():
        query = bind_query(node.expression, Context(recording, ctx.ctes), sorting=True)
    if query.hidden:
        order = node.expression.args.get("order")
        raise UnsupportedError.at("ORDER BY expressions that are not in the select list are "
                                  "not supported in views yet", order or node)
    if materialized and recording.system:
        raise UnsupportedError.at(
            f'a materialized view cannot read system catalog "{min(recording.system)}": '
            "it changes with DDL, not with transactions (use a view)", node.expression)
    if len(columns) > len(query.column_names):
        raise SqlError.at("CREATE VIEW specifies more column names than columns", columns[0])
    names = tuple(normalize(c) for c in columns) + query.column_names[len(columns):]
    text, plan = node.expression.copy(), query.plan
    if query.limit is not None or query.offset:
        plan = _top_k(node.expression, query, materialized)
    else:
        text.set("order", None)
    return CreateView(relation_name(table), text.sql(dialect=Matview), names, materialized,
                      plan, bool(node.args.get("exists")), frozenset(recording.found),
                      bool(node.args.get("replace")), refresh)


def _refresh_policy(node: exp.Create, materialized: bool) -> str | None:
    """The ``REFRESH POLICY`` a materialized view's properties give (None: none), any other
    property refused."""
    properties = node.args.get("properties")
    policy = None
    for prop in properties.expressions if properties is not None else []:
        if isinstance(prop, exp.MaterializedProperty):
            continue
        if not (isinstance(prop, exp.Property) and prop.name == "refresh policy"):
            raise UnsupportedError.at(f"{prop.sql(dialect=Matview)} is not supported", node)
        if not materialized:
            raise SqlError.at("a view that is not materialized has no refresh policy", prop)
        policy = prop.text("value")
        if policy not in REFRESH_POLICIES:
            raise SqlError.at(f"unknown refresh policy {policy!r}: AUTO, INCREMENTAL, "
                              "INCREMENTAL STRICT or FULL", prop)
    return policy


def _top_k(node: exp.Expr, query: Query, materialized: bool) -> TopK:
    """The ``TopK`` of a view's ``query`` (``node``) ending in LIMIT or OFFSET."""
    if not materialized:
        clause = node.args.get("limit") or node.args.get("offset")
        raise UnsupportedError.at(
            "LIMIT and OFFSET in a view that is not materialized are not supported yet", clause)
    return top_k(node, query, "a view")


def bind_create_sink(node: CreateSinkNode, ctx: Context) -> CreateSink:
    """``CREATE SINK name FROM view INTO PARQUET | DELTA 'directory'``: ``view`` a table or
    a materialized view (the collections that keep their changes)."""
    view = relation_name(node.args["view"])
    item = ctx.catalog.lookup(view)
    if item is None or item.kind == "view":
        what = "does not exist" if item is None else "is a view, which keeps no changes"
        raise SqlError.at(f'relation "{view}" {what}: a sink reads a table or a '
                          "materialized view", node.args["view"])
    kind = node.args["kind"].name.lower()
    if kind not in ("parquet", "delta"):
        raise UnsupportedError.at(f"sinks INTO {kind.upper()} are not supported: INTO "
                                  "PARQUET or INTO DELTA", node.args["kind"])
    envelope = node.args.get("envelope")
    word = "changes" if envelope is None else envelope.name.lower()
    if word not in ("changes", "contents") or (word == "contents" and kind != "delta"):
        raise UnsupportedError.at(f"ENVELOPE {word.upper()} is not supported: ENVELOPE "
                                  "CHANGES, or CONTENTS INTO DELTA", envelope)
    return CreateSink(relation_name(node.this), view, kind, node.args["path"].name,
                      cast(Literal["changes", "contents"], word))


def bind_drop_sink(node: DropSinkNode) -> DropSink:
    """``DROP SINK [IF EXISTS] name``."""
    return DropSink(relation_name(node.this), bool(node.args.get("exists")))


def bind_create_index(node: exp.Create, ctx: Context) -> CreateIndex:
    """``CREATE INDEX [IF NOT EXISTS] [name] ON x (column, ...)`` or ``CREATE DEFAULT INDEX
    ON x``: ``x`` a table or materialized view, its key columns of ``x`` (the first, which
    the index arranges ``x`` by, of integers or text)."""
    check_arguments(node, _CREATE)
    index = node.this
    table = index.args["table"]
    on = relation_name(table)
    item = ctx.catalog.lookup(on)
    if item is None:
        raise UnknownObjectError.at(f'relation "{on}" does not exist', table)
    if item.kind == "view":
        raise UnsupportedError.at(f'an index on "{on}", a view that is not materialized, is '
                                  "not supported yet: index a materialized view", table)
    fields = {f.name: f for f in item.fields}
    params = index.args.get("params")
    if node.meta.get("default"):
        columns, keys = list(fields), [table] * len(fields)
    else:
        for clause, value in (params.args if params is not None else {}).items():
            if clause != "columns" and value:
                raise UnsupportedError.at(f"CREATE INDEX ... {clause.upper()} is not "
                                          "supported", node)
        keys = list(params.args.get("columns") or []) if params is not None else []
        columns = [_key_column(key, fields) for key in keys]
        if not columns:
            raise SqlError.at("an index needs key columns: CREATE INDEX ON x (column, ...) "
                              "or CREATE DEFAULT INDEX ON x", node)
    first = fields[columns[0]]
    if first.type.kind not in (Kind.INT, Kind.BIGINT, Kind.TEXT, Kind.UUID):
        raise UnsupportedError.at(
            f'an index arranges its collection by its first key, and "{first.name}" is of '
            f"type {first.type}: only integer, text and uuid keys are supported yet", keys[0])
    name = index.this.name if index.this is not None else None
    return CreateIndex(name and normalize(index.this), on, tuple(columns),
                       bool(node.args.get("exists")), bool(node.meta.get("default")))


def _key_column(key: exp.Expr, fields: dict[str, Field]) -> str:
    """The column an index's key ``key`` names (a plain column of the collection)."""
    column = key.this if isinstance(key, exp.Ordered) else key
    if not isinstance(column, exp.Column) or column.table:
        raise UnsupportedError.at("index keys other than columns are not supported yet", key)
    name = normalize(column.this)
    if name not in fields:
        raise UnknownObjectError.at(f'column "{name}" does not exist', key)
    return name


def bind_drop(node: exp.Drop) -> Drop | DropIndex:
    """``DROP TABLE | VIEW | MATERIALIZED VIEW | SOURCE [IF EXISTS] names [CASCADE]``, ``DROP INDEX
    [IF EXISTS] names``."""
    kind: ObjectKind
    if node.kind == "INDEX":
        check_arguments(node, _DROP)
        return DropIndex(tuple(relation_name(t) for t in node.args["tables"]),
                         bool(node.args.get("exists")))
    if node.kind == "TABLE" and not node.args.get("materialized"):
        kind = "table"
    elif node.kind == "SOURCE":
        kind = "source"
    elif node.kind == "VIEW":
        kind = "materialized view" if node.args.get("materialized") else "view"
    else:
        raise UnsupportedError.at(f"DROP {node.kind} is not supported", node)
    check_arguments(node, _DROP)
    names = tuple(relation_name(t) for t in node.args["tables"])
    return Drop(kind, names, bool(node.args.get("exists")), bool(node.args.get("cascade")))


def bind_show(node: exp.Show) -> Show:
    """``SHOW TABLES | VIEWS | MATERIALIZED VIEWS | SETTINGS | COLUMNS FROM name``, ``SHOW
    CREATE TABLE | VIEW | MATERIALIZED VIEW name``."""
    target = node.args.get("target")
    return Show(_SHOW[node.name], relation_name(target) if target is not None else None)


def _reject_properties(node: exp.Create, *read: type[exp.Expr]) -> None:
    """Refuse the properties of ``node`` (TEMPORARY, WITH (...), TABLESPACE...) other than
    the kinds ``read``."""
    properties = node.args.get("properties")
    for prop in properties.expressions if properties is not None else []:
        if not isinstance(prop, read):
            raise UnsupportedError.at(f"{prop.sql(dialect=Matview)} is not supported", node)


def check_unique(names: Sequence[str], nodes: Sequence[exp.Expr]) -> None:
    """Refuse a column name written twice (at the second)."""
    seen: set[str] = set()
    for name, node in zip(names, nodes, strict=True):
        if name in seen:
            raise DuplicateObjectError.at(f'column "{name}" specified more than once', node)
        seen.add(name)
