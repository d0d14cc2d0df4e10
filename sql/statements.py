"""Parsed and bound statements: what ``parse.bind_statement`` hands to the engine.

Relations (``matview.ir.relation``) in statements are bound against the catalog as it was
when the statement was bound. DELETE and UPDATE are plans of the changes they make: update
rows (retractions with negative multiplicity) over the target table, run as any plan is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from matview.ir.relation import Field, Relation
from matview.ir.types import SqlType
from matview.sql.catalog import ObjectKind, UniqueKey

ShowWhat = Literal["tables", "views", "materialized views", "columns", "settings",
                   "create table", "create view", "create materialized view", "indexes",
                   "comments", "sources", "create source"]


@dataclass(frozen=True)
class CreateTable:
    """``CREATE TABLE [IF NOT EXISTS] name (fields, constraints)``: its unique ``keys``, the
    positions of its ``NOT NULL`` columns and its columns' ``defaults`` (position, SQL
    text; ``sql.constraints``)."""

    name: str
    fields: tuple[Field, ...]
    if_not_exists: bool
    keys: tuple[UniqueKey, ...] = ()
    not_null: frozenset[int] = frozenset()
    defaults: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class Insert:
    """``INSERT INTO table``: ``source`` yields whole rows of ``table``, in its column order and
    with its column types."""

    table: str
    source: Relation


@dataclass(frozen=True)
class Upsert:
    """``INSERT INTO table ... ON CONFLICT``: ``changes`` insert the proposed rows that
    conflict with no row and, for DO UPDATE, retract the conflicting rows and insert them
    updated (``sql.upsert``); for DO UPDATE, ``affected`` are the rows inserted or updated
    (the statement's row count; DO NOTHING's is the rows it writes) and ``twice`` the keys
    proposed more than once (an error when there are any: a row cannot be updated
    twice)."""

    table: str
    changes: Relation
    affected: Relation | None
    twice: Relation | None


@dataclass(frozen=True)
class Delete:
    """``DELETE FROM table [WHERE predicate]``: ``changes`` retract every row of ``table`` that
    matches (``repeat_row -1`` over the matching rows)."""

    table: str
    changes: Relation


@dataclass(frozen=True)
class Update:
    """``UPDATE table SET ... [WHERE predicate]``: ``changes`` retract the ``matched`` rows of
    ``table`` and insert them with their new values; the statement's row count is the number
    of ``matched`` rows."""

    table: str
    changes: Relation
    matched: Relation


@dataclass(frozen=True)
class Query:
    """A query: ``plan`` with output ``column_names``; ``order_by`` entries are (output column,
    descending, nulls first); ``limit`` and ``offset`` apply after ordering."""

    plan: Relation
    column_names: tuple[str, ...]
    order_by: tuple[tuple[int, bool, bool], ...] = ()
    limit: int | None = None
    offset: int | None = None
    as_of: int | None = None
    """``AS OF time``: read at that time instead of now (``sql.as_of``)."""
    hidden: int = 0
    """How many of ``plan``'s last columns are ORDER BY expressions not in the select list,
    there only to sort by (a statement's query: ``sql.query.bind_query``)."""


REFRESH_POLICIES = ("AUTO", "INCREMENTAL", "INCREMENTAL STRICT", "FULL")
"""The refresh policies of ``CREATE MATERIALIZED VIEW ... WITH (REFRESH POLICY = ...)``
(``runtime.refresh``)."""


@dataclass(frozen=True)
class CreateView:
    """``CREATE [OR REPLACE] [MATERIALIZED] VIEW``: ``query_sql`` is the defining query as
    matview SQL text (without ORDER BY, unless the query ends in LIMIT or OFFSET: its plan is
    then a ``TopK``), ``plan`` its binding now, ``depends_on`` the stored objects the binding
    read (views' own dependencies included); ``or_replace`` replaces a view of that name;
    ``refresh``: a materialized view's ``REFRESH POLICY`` (one of ``REFRESH_POLICIES``;
    None: the connection's ``refresh`` setting)."""

    name: str
    query_sql: str
    column_names: tuple[str, ...]
    materialized: bool
    plan: Relation
    if_not_exists: bool
    depends_on: frozenset[str] = frozenset()
    or_replace: bool = False
    refresh: str | None = None


@dataclass(frozen=True)
class Drop:
    """``DROP TABLE | VIEW | MATERIALIZED VIEW | SOURCE [IF EXISTS] names [CASCADE]``."""

    kind: ObjectKind
    names: tuple[str, ...]
    if_exists: bool
    cascade: bool


@dataclass(frozen=True)
class CreateIndex:
    """``CREATE INDEX [IF NOT EXISTS] [name] ON relation (column, ...)``, or ``CREATE
    DEFAULT INDEX ON relation`` (``default``: every column); ``name`` None: chosen by the
    engine (``matview.indexes``)."""

    name: str | None
    on: str
    columns: tuple[str, ...]
    if_not_exists: bool
    default: bool = False


@dataclass(frozen=True)
class DropIndex:
    """``DROP INDEX [IF EXISTS] names``."""

    names: tuple[str, ...]
    if_exists: bool


@dataclass(frozen=True)
class Show:
    """``SHOW TABLES | VIEWS | MATERIALIZED VIEWS | SETTINGS``, ``SHOW COLUMNS FROM name``,
    ``SHOW INDEXES [ON name]``, or ``SHOW CREATE TABLE | VIEW | MATERIALIZED VIEW name``."""

    what: ShowWhat
    name: str | None = None


@dataclass(frozen=True)
class SubscribeTo:
    """``SUBSCRIBE [TO] name``: follow every change of table or materialized view ``name``
    (the cursor that runs it fetches them)."""

    name: str
    as_of: int | None = None
    """``AS OF time``: the snapshot is the contents at that time, then every later change."""


ExplainStage = Literal["raw", "decorrelated", "optimized", "physical", "trace", "analyze"]
ExplainFormat = Literal["text", "json", "dot"]


@dataclass(frozen=True)
class Explain:
    """``EXPLAIN``: the plan at ``stage`` (``trace``: after each optimizer transform;
    ``analyze``: the running dataflow's statistics) of ``query``, or of the materialized
    view ``view``, in ``format``, annotated with ``options`` (``arity``, ``types``, ``keys``,
    ``humanized expressions``)."""

    stage: ExplainStage
    format: ExplainFormat
    options: tuple[str, ...]
    query: Query | CreateView | None = None
    view: str | None = None


@dataclass(frozen=True)
class CreateTableAs:
    """``CREATE TABLE name [(columns)] AS query``: a table of the query's columns and types,
    holding its rows."""

    table: CreateTable
    query: Query


@dataclass(frozen=True)
class FileFormat:
    """How a file's rows are written: ``csv`` (with a ``header`` line, ``delimiter`` and the
    text of NULL) or ``parquet``."""

    kind: Literal["csv", "parquet"]
    header: bool = False
    delimiter: str = ","
    null: str = ""


@dataclass(frozen=True)
class CopyFrom:
    """``COPY table [(columns)] FROM 'path' (FORMAT ...)``: the file's rows inserted into
    ``table``; the file holds ``columns`` (all of the table's, in order, when None), the
    others are NULL."""

    table: str
    columns: tuple[str, ...] | None
    path: str
    format: FileFormat


@dataclass(frozen=True)
class CopyTo:
    """``COPY table | (query) TO 'path' (FORMAT ...)``: the query's rows written to a file."""

    query: Query
    path: str
    format: FileFormat


@dataclass(frozen=True)
class CreateSink:
    """``CREATE SINK name FROM view INTO PARQUET | DELTA 'directory' [ENVELOPE CHANGES |
    CONTENTS]``: every change of the materialized view (or table) ``view`` appended to
    files in ``directory`` as it commits (``changes``), or a Delta table kept equal to it
    (``contents``)."""

    name: str
    view: str
    kind: Literal["parquet", "delta"]
    path: str
    envelope: Literal["changes", "contents"] = "changes"


@dataclass(frozen=True)
class CreateSource:
    """``CREATE SOURCE name [(column type, ...)] FROM DELTA 'uri' | PARQUET 'folder' |
    STREAM``: a relation following a lake table's changes (``matview.sources``); ``fields``
    empty when not written (read from the lake's schema)."""

    name: str
    fields: tuple[Field, ...]
    kind: Literal["delta", "parquet", "stream"]
    path: str | None
    if_not_exists: bool


@dataclass(frozen=True)
class DropSink:
    """``DROP SINK [IF EXISTS] name``."""

    name: str
    if_exists: bool


@dataclass(frozen=True)
class AddColumn:
    """``ADD [COLUMN] [IF NOT EXISTS] field [DEFAULT value] [NOT NULL]`` (``default``: the
    value's SQL text)."""

    field: Field
    if_not_exists: bool = False
    not_null: bool = False
    default: str | None = None


@dataclass(frozen=True)
class DropColumn:
    """``DROP [COLUMN] [IF EXISTS] column [CASCADE]``."""

    column: str
    if_exists: bool = False
    cascade: bool = False


@dataclass(frozen=True)
class SetDefault:
    """``ALTER [COLUMN] column SET DEFAULT value`` (the value's SQL text), or ``DROP
    DEFAULT`` (``default`` None)."""

    column: str
    default: str | None


@dataclass(frozen=True)
class SetNotNull:
    """``ALTER [COLUMN] column SET NOT NULL``, or ``DROP NOT NULL`` (``not_null`` False)."""

    column: str
    not_null: bool


@dataclass(frozen=True)
class SetType:
    """``ALTER [COLUMN] column [SET DATA] TYPE type [USING expression]`` (``using``: the
    expression's SQL text)."""

    column: str
    type: SqlType
    using: str | None = None


@dataclass(frozen=True)
class AddKey:
    """``ADD [CONSTRAINT name] PRIMARY KEY (columns)``, or ``UNIQUE (columns)`` (``name``
    None: PostgreSQL's)."""

    name: str | None
    columns: tuple[str, ...]
    primary: bool


@dataclass(frozen=True)
class DropConstraint:
    """``DROP CONSTRAINT [IF EXISTS] name [CASCADE | RESTRICT]``."""

    name: str
    if_exists: bool = False


TableAction = AddColumn | DropColumn | SetDefault | SetNotNull | SetType | AddKey | DropConstraint


@dataclass(frozen=True)
class AlterTable:
    """``ALTER TABLE [IF EXISTS] name action [, ...]``: the actions applied in order, all
    or none (``matview.alter_table``)."""

    name: str
    if_exists: bool
    actions: tuple[TableAction, ...]


@dataclass(frozen=True)
class AlterTableRenameColumn:
    """``ALTER TABLE [IF EXISTS] name RENAME [COLUMN] column TO to``."""

    name: str
    if_exists: bool
    column: str
    to: str


@dataclass(frozen=True)
class AlterTableRenameConstraint:
    """``ALTER TABLE [IF EXISTS] name RENAME CONSTRAINT constraint TO to``."""

    name: str
    if_exists: bool
    constraint: str
    to: str


@dataclass(frozen=True)
class AlterRename:
    """``ALTER TABLE | VIEW | MATERIALIZED VIEW [IF EXISTS] name RENAME TO to``; ``kind``:
    what the statement names (``ALTER TABLE`` renames a relation of any kind, as
    PostgreSQL's does)."""

    kind: ObjectKind
    name: str
    if_exists: bool
    to: str


@dataclass(frozen=True)
class CommentOn:
    """``COMMENT ON TABLE | VIEW | MATERIALIZED VIEW name | COLUMN name.column IS 'text' |
    NULL`` (``text`` None: the comment removed)."""

    kind: ObjectKind | Literal["column"]
    name: str
    column: str | None
    text: str | None


AlterStatement = AlterTable | AlterTableRenameColumn | AlterTableRenameConstraint | AlterRename


Statement = (CreateTable | Insert | Delete | Update | Query | CreateView | Drop | Show | Explain
             | CreateTableAs | CopyFrom | CopyTo | CreateSink | DropSink | CreateSource
             | CreateIndex | DropIndex | AlterStatement | CommentOn)
