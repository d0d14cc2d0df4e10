"""``ALTER TABLE | VIEW | MATERIALIZED VIEW`` and ``COMMENT ON``: their bound statements.

One action per ALTER statement: ``ADD [COLUMN] [IF NOT EXISTS] c type [DEFAULT value] [NOT
NULL]``, ``DROP [COLUMN] [IF EXISTS] c [CASCADE | RESTRICT]``, ``RENAME [COLUMN] a TO b``
(tables), ``RENAME TO y`` (any relation). Whether the objects exist, and what the change does
to the views built on them, is the engine's concern (``matview.alter``).
"""

from __future__ import annotations

from matview.sql.allowlist import check_arguments
from matview.sql.catalog import ObjectKind
from matview.sql.context import Context
from matview.sql.ddl import bind_create_table
from matview.sql.errors import SqlError, UnsupportedError
from matview.sql.names import normalize, relation_name
from matview.sql.statements import (
    AlterRename,
    AlterStatement,
    AlterTableAddColumn,
    AlterTableDropColumn,
    AlterTableRenameColumn,
    CommentOn,
    CreateTable,
)
from sqlglot import exp

_ALTER = frozenset({"this", "kind", "exists", "actions", "options"})
_DROP_COLUMN = frozenset({"tables", "kind", "exists", "cascade", "restrict"})
_COMMENT = frozenset({"this", "kind", "expression", "materialized"})
"""The arguments of ALTER, of its DROP COLUMN and of COMMENT ON the binder reads."""

_ACTIONS: dict[type[exp.Expr], str] = {
    exp.ColumnDef: "ADD COLUMN", exp.Drop: "DROP", exp.AlterColumn: "ALTER COLUMN",
    exp.AlterSet: "SET", exp.AddConstraint: "ADD CONSTRAINT"}
"""What an ALTER's action is called, for the message refusing it."""


def bind_alter(node: exp.Alter, ctx: Context) -> AlterStatement:
    """An ``ALTER TABLE | VIEW | MATERIALIZED VIEW`` statement."""
    if node.args.get("kind") not in ("TABLE", "VIEW"):
        raise UnsupportedError.at(f"ALTER {node.args.get('kind')} is not supported", node)
    check_arguments(node, _ALTER)
    kind: ObjectKind = "table" if node.args["kind"] == "TABLE" else (
        "materialized view" if node.meta.get("materialized") else "view")
    name, exists = relation_name(node.this), bool(node.args.get("exists"))
    actions = node.args.get("actions") or []
    if len(actions) != 1:
        raise UnsupportedError.at(f"ALTER {kind.upper()} with several actions is not "
                                  "supported: run one statement per action", node)
    action, options = actions[0], node.args.get("options") or []
    if isinstance(action, exp.AlterRename) and options:  # RENAME a TO b: a column
        return _rename_column(kind, name, exists, action.this.this, options[0].this.this, node)
    if isinstance(action, exp.AlterRename):
        return AlterRename(kind, name, exists, relation_name(action.this))
    if isinstance(action, exp.RenameColumn):
        check_arguments(action, frozenset({"this", "to"}))
        return _rename_column(kind, name, exists, action.this.this, action.args["to"].this,
                              node)
    if kind == "table" and isinstance(action, exp.ColumnDef):
        return _add_column(node, action, name, exists, ctx)
    if kind == "table" and isinstance(action, exp.Drop) and action.kind == "COLUMN":
        check_arguments(action, _DROP_COLUMN)
        if len(action.args["tables"]) != 1:
            raise UnsupportedError.at("DROP COLUMN of several columns is not supported: run "
                                      "one statement per column", action)
        return AlterTableDropColumn(name, exists, normalize(action.args["tables"][0].this),
                                    bool(action.args.get("exists")),
                                    bool(action.args.get("cascade")))
    what = _ACTIONS.get(type(action), action.key.upper())
    supported = "ADD COLUMN, DROP COLUMN, RENAME COLUMN and RENAME TO are" if kind == "table" \
        else "RENAME TO is"
    raise UnsupportedError.at(f"ALTER {kind.upper()} ... {what} is not supported: "
                              f"{supported}", action)


def _rename_column(kind: ObjectKind, name: str, exists: bool, column: exp.Expr,
                   to: exp.Expr, node: exp.Expr) -> AlterTableRenameColumn:
    if kind != "table":
        raise UnsupportedError.at(f"ALTER {kind.upper()} ... RENAME COLUMN is not supported: "
                                  "rename the column in the view's query (CREATE OR REPLACE)",
                                  node)
    return AlterTableRenameColumn(name, exists, normalize(column), normalize(to))


def _add_column(node: exp.Alter, column: exp.ColumnDef, name: str, exists: bool,
                ctx: Context) -> AlterTableAddColumn:
    """``ADD COLUMN``: the column bound as ``CREATE TABLE name (column)`` binds it."""
    if_not_exists = bool(column.args.get("exists"))
    column = column.copy()
    column.set("exists", None)
    create = exp.Create(kind="TABLE", this=exp.Schema(this=node.this.copy(),
                                                      expressions=[column]))
    table = bind_create_table(create, ctx)
    assert isinstance(table, CreateTable)
    if table.keys:
        raise UnsupportedError.at("ADD COLUMN ... PRIMARY KEY and UNIQUE are not supported",
                                  column)
    return AlterTableAddColumn(name, exists, table.fields[0], if_not_exists,
                               0 in table.not_null, dict(table.defaults).get(0))


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
