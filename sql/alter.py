"""``ALTER TABLE | VIEW | MATERIALIZED VIEW`` and ``COMMENT ON``: their bound statements.

``ALTER TABLE [IF EXISTS] t action [, ...]`` (``AlterTable``), its actions applied in order,
all or none: ``ADD [COLUMN] [IF NOT EXISTS] c type [DEFAULT value] [NOT NULL] [PRIMARY KEY
| UNIQUE]``, ``DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT]``, ``ALTER [COLUMN] c SET
DEFAULT value | DROP DEFAULT | SET NOT NULL | DROP NOT NULL | [SET DATA] TYPE type [USING
expression]``, ``ADD [CONSTRAINT name] PRIMARY KEY (columns) | UNIQUE (columns)`` and ``DROP
CONSTRAINT [IF EXISTS] name``. A statement of their own, as in PostgreSQL: ``RENAME
[COLUMN] a TO b`` and ``RENAME CONSTRAINT a TO b`` (tables), ``RENAME TO y`` (any
relation). Whether the objects exist, and what the change does to the views built on them,
is the engine's concern (``matview.alter_table``, ``matview.alter``); a default and a
USING expression are kept as SQL text, checked against the column as the actions before
leave it.
"""

from __future__ import annotations

from matview.sql.allowlist import check_arguments
from matview.sql.catalog import ObjectKind
from matview.sql.constraints import table_key
from matview.sql.context import Context
from matview.sql.datatypes import column_type
from matview.sql.ddl import bind_create_table
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import RenameConstraint
from matview.sql.errors import SqlError, SqlSyntaxError, UnsupportedError
from matview.sql.names import normalize, relation_name
from matview.sql.statements import (
    AddColumn,
    AddKey,
    AlterRename,
    AlterStatement,
    AlterTable,
    AlterTableRenameColumn,
    AlterTableRenameConstraint,
    CommentOn,
    CreateTable,
    DropColumn,
    DropConstraint,
    SetDefault,
    SetNotNull,
    SetType,
    TableAction,
)
from sqlglot import exp

_ALTER = frozenset({"this", "kind", "exists", "actions", "options"})
_DROP = frozenset({"tables", "kind", "exists", "cascade", "restrict"})
_ALTER_COLUMN = frozenset({"this", "dtype", "using", "default", "drop", "allow_null"})
_COMMENT = frozenset({"this", "kind", "expression", "materialized"})
"""The arguments of ALTER, of its DROP COLUMN | CONSTRAINT, of its ALTER COLUMN and of
COMMENT ON the binder reads."""

_ACTIONS: dict[type[exp.Expr], str] = {
    exp.ColumnDef: "ADD COLUMN", exp.Drop: "DROP", exp.AlterColumn: "ALTER COLUMN",
    exp.AlterSet: "SET", exp.AddConstraint: "ADD CONSTRAINT",
    RenameConstraint: "RENAME CONSTRAINT"}
"""What an ALTER's action is called, for the message refusing it."""

_RENAMES = (exp.AlterRename, exp.RenameColumn, RenameConstraint)
"""The actions that are a statement of their own."""


def bind_alter(node: exp.Alter, ctx: Context) -> AlterStatement:
    """An ``ALTER TABLE | VIEW | MATERIALIZED VIEW`` statement."""
    if node.args.get("kind") not in ("TABLE", "VIEW"):
        raise UnsupportedError.at(f"ALTER {node.args.get('kind')} is not supported", node)
    check_arguments(node, _ALTER)
    kind: ObjectKind = "table" if node.args["kind"] == "TABLE" else (
        "materialized view" if node.meta.get("materialized") else "view")
    name, exists = relation_name(node.this), bool(node.args.get("exists"))
    actions = node.args.get("actions") or []
    renames = [a for a in actions if isinstance(a, _RENAMES)]
    if not actions:
        raise SqlSyntaxError.at(f"ALTER {kind.upper()} needs an action", node)
    if renames and len(actions) > 1:
        raise SqlSyntaxError.at("RENAME cannot be combined with other actions: it is an ALTER "
                                "statement of its own", renames[0])
    action, options = actions[0], node.args.get("options") or []
    if isinstance(action, exp.AlterRename) and options:  # RENAME a TO b: a column
        return _rename_column(kind, name, exists, action.this.this, options[0].this.this, node)
    if isinstance(action, exp.AlterRename):
        return AlterRename(kind, name, exists, relation_name(action.this))
    if isinstance(action, exp.RenameColumn):
        check_arguments(action, frozenset({"this", "to"}))
        return _rename_column(kind, name, exists, action.this.this, action.args["to"].this,
                              node)
    if kind == "table" and isinstance(action, RenameConstraint):
        return AlterTableRenameConstraint(name, exists, normalize(action.this),
                                          normalize(action.args["to"]))
    bound: list[TableAction] = []
    for action in actions:
        if kind != "table":
            raise UnsupportedError.at(f"ALTER {kind.upper()} ... "
                                      f"{_ACTIONS.get(type(action), action.key.upper())} is "
                                      "not supported: RENAME TO is", action)
        bound.extend(_action(node, action, ctx))
    return AlterTable(name, exists, tuple(bound))


def _action(node: exp.Alter, action: exp.Expr, ctx: Context) -> list[TableAction]:
    """The actions ALTER TABLE's ``action`` stands for (a column with a key: two)."""
    if isinstance(action, exp.ColumnDef):
        return _add_column(node, action, ctx)
    if isinstance(action, exp.Drop) and action.kind in ("COLUMN", "CONSTRAINT"):
        check_arguments(action, _DROP)
        if action.kind == "CONSTRAINT":
            return [DropConstraint(relation_name(t), bool(action.args.get("exists")))
                    for t in action.args["tables"]]
        return [DropColumn(normalize(c.this), bool(action.args.get("exists")),
                           bool(action.args.get("cascade"))) for c in action.args["tables"]]
    if isinstance(action, exp.AlterColumn):
        return [_alter_column(action)]
    if isinstance(action, exp.AddConstraint):
        keys = [table_key(item) for item in action.expressions]
        return [AddKey(name, columns, primary) for name, columns, primary, _ in keys]
    what = _ACTIONS.get(type(action), action.key.upper())
    raise UnsupportedError.at(
        f"ALTER TABLE ... {what} is not supported: ADD | DROP COLUMN, ALTER COLUMN ... SET | "
        "DROP DEFAULT, SET | DROP NOT NULL and TYPE, ADD | DROP CONSTRAINT (PRIMARY KEY, "
        "UNIQUE), and the RENAME forms are", action)


def _alter_column(action: exp.AlterColumn) -> SetDefault | SetNotNull | SetType:
    """``ALTER [COLUMN] c SET DEFAULT | DROP DEFAULT | SET NOT NULL | DROP NOT NULL | TYPE``."""
    column = normalize(action.this)
    if action.args.get("collate"):
        raise UnsupportedError.at("ALTER COLUMN ... TYPE ... COLLATE is not supported",
                                  action.args["collate"])
    check_arguments(action, _ALTER_COLUMN)
    dtype, using = action.args.get("dtype"), action.args.get("using") or None
    if dtype is not None:
        return SetType(column, column_type(dtype, column),
                       None if using is None else using.sql(dialect=Matview))
    if action.args.get("allow_null") is not None:
        return SetNotNull(column, not action.args["allow_null"])
    default = action.args.get("default")
    if default is not None:
        return SetDefault(column, default.sql(dialect=Matview))
    if action.args.get("drop"):
        return SetDefault(column, None)
    raise SqlError.at("ALTER COLUMN needs an action", action)


def _rename_column(kind: ObjectKind, name: str, exists: bool, column: exp.Expr,
                   to: exp.Expr, node: exp.Expr) -> AlterTableRenameColumn:
    if kind != "table":
        raise UnsupportedError.at(f"ALTER {kind.upper()} ... RENAME COLUMN is not supported: "
                                  "rename the column in the view's query (CREATE OR REPLACE)",
                                  node)
    return AlterTableRenameColumn(name, exists, normalize(column), normalize(to))


def _add_column(node: exp.Alter, column: exp.ColumnDef, ctx: Context) -> list[TableAction]:
    """``ADD COLUMN``: the column bound as ``CREATE TABLE name (column)`` binds it; its
    key, if it has one, added after it."""
    if_not_exists = bool(column.args.get("exists"))
    column = column.copy()
    column.set("exists", None)
    create = exp.Create(kind="TABLE", this=exp.Schema(this=node.this.copy(),
                                                      expressions=[column]))
    table = bind_create_table(create, ctx)
    assert isinstance(table, CreateTable)
    field = table.fields[0]
    named = [c.args.get("this") for c in column.args.get("constraints") or []
             if isinstance(c.args.get("kind"), exp.PrimaryKeyColumnConstraint
                           | exp.UniqueColumnConstraint)]
    keys: list[TableAction] = [
        AddKey(None if given is None else normalize(given), (field.name,), key.primary)
        for given, key in zip(named, table.keys, strict=True)]
    return [AddColumn(field, if_not_exists, 0 in table.not_null, dict(table.defaults).get(0)),
            *keys]


def bind_comment(node: exp.Comment) -> CommentOn:
    """``COMMENT ON TABLE | VIEW | MATERIALIZED VIEW | COLUMN x IS 'text' | NULL``."""
    check_arguments(node, _COMMENT)
    kind = str(node.args["kind"]).upper()
    text = node.expression
    value = None if isinstance(text, exp.Null) else text.name
    if kind == "COLUMN":
        column = node.this
        if not isinstance(column, exp.Column) or not column.table:
            raise SqlError.at("column name must be qualified", node)
        if column.args.get("db"):
            raise UnsupportedError.at("schema-qualified names are not supported", node)
        return CommentOn("column", normalize(column.args["table"]), normalize(column.this),
                         value)
    if kind not in ("TABLE", "VIEW"):
        raise UnsupportedError.at(f"COMMENT ON {kind} is not supported", node)
    target: ObjectKind = "table" if kind == "TABLE" else (
        "materialized view" if node.args.get("materialized") else "view")
    return CommentOn(target, relation_name(node.this), None, value)
