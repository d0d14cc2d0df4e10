"""``ALTER TABLE t action [, ...]``: the actions applied in order to a draft of the table (its
catalog item, and each column's value as SQL of the table's row as it was), then made at
once by ``alter.apply``: one rewrite of the table when a column is added, dropped or
retyped, one read of its rows when a NOT NULL column or a key must be checked, one replan of
each materialized view reading it. All or nothing: when an action or a check fails, the
catalog and the rows are as they were.

Each action with PostgreSQL's semantics and messages:

* ``ADD COLUMN``: every row holds its default (NULL without one); refused when a NOT NULL
  column would hold NULL (23502), or when the column exists (42701; skipped with IF NOT
  EXISTS);
* ``DROP COLUMN``: refused while a view reads it (2BP01), unless CASCADE drops them; the
  keys and indexes with it dropped;
* ``SET DEFAULT | DROP DEFAULT``: the value an INSERT that omits the column writes (an
  expression of no column, of a type the column takes);
* ``SET NOT NULL``: refused when a row holds NULL (23502); ``DROP NOT NULL``: refused for
  a primary key's column (42P16);
* ``TYPE``: every value cast to the type, or the ``USING`` expression's value cast to it
  (of the row as the actions before leave it; PostgreSQL reads the row as it was); without
  USING, the column's type must convert to it as an INSERT converts (42804); a failing cast
  is its error; refused when a view reads the column (0A000, as PostgreSQL refuses it); its
  default checked against the type;
* ``ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE (columns)``: named as at CREATE TABLE
  (``sql.constraints.added_key``), refused when two rows share the key (23505, ``could not
  create unique index``); a primary key's columns made NOT NULL (checked as SET NOT NULL);
* ``DROP CONSTRAINT [IF EXISTS] name``: a key dropped (a primary key's columns stay NOT
  NULL, as in PostgreSQL); refused when there is none of that name (42704).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from matview.alter import Alteration, Rewrite, apply, table
from matview.errors import NotSupportedError, ProgrammingError
from matview.ir.relation import Field
from matview.ir.scalar import Col
from matview.result import Result
from matview.sql.catalog import CatalogItem, UniqueKey, quoted_name
from matview.sql.coerce import TypedScalar, assignment_cast
from matview.sql.constraints import added_key, column_default, key_columns
from matview.sql.dialect import Matview
from matview.sql.errors import SqlError, SqlTypeError
from matview.sql.names import normalize
from matview.sql.rewrite import dropped_column, uses_column
from matview.sql.statements import (
    AddColumn,
    AddKey,
    AlterTable,
    DropColumn,
    DropConstraint,
    SetDefault,
    SetNotNull,
    SetType,
    TableAction,
)

if TYPE_CHECKING:
    from matview.engine import Engine


@dataclasses.dataclass
class _Draft:
    """Table ``original`` as the actions so far leave it: ``item``; per column, its value
    as SQL of a row of ``original`` (``sources``) and, when it holds the values it held,
    its position there (``origins``)."""

    original: CatalogItem
    item: CatalogItem
    sources: list[str]
    origins: list[int | None]
    changes: list[Rewrite] = dataclasses.field(default_factory=list)
    """What each action does to the qualified query of a view reading the table."""
    drops: list[tuple[DropColumn, list[str]]] = dataclasses.field(default_factory=list)
    """Each DROP COLUMN, with the views reading its column (found by ``changes``)."""
    rewrite: bool = False
    """Whether the rows change (a column added, dropped or retyped)."""

    @property
    def names(self) -> list[str]:
        """The names of its columns."""
        return [f.name for f in self.item.fields]

    def position(self, column: str) -> int:
        """Column ``column``'s position (refused when the table has no such column)."""
        if column not in self.names:
            raise ProgrammingError(f'column "{column}" of relation "{self.item.name}" does '
                                   "not exist")
        return self.names.index(column)


def alter_table(engine: Engine, stmt: AlterTable) -> Result:
    """``ALTER TABLE t action [, ...]`` (see the module docstring)."""
    item = table(engine, stmt.name, stmt.if_exists)
    if item is None:
        return Result()
    draft = _Draft(item, item, [quoted_name(f.name) for f in item.fields],
                   list(range(len(item.fields))))
    for action in stmt.actions:
        _ACTIONS[type(action)](engine, draft, action)
    apply(engine, _alteration(engine, draft))
    dropped = {action.column for action, _ in draft.drops}  # (a key's index: made again)
    for name, index in list(engine.catalog.indexes.items()):
        if index.on == item.name and not index.constraint and not dropped.isdisjoint(
                index.columns):
            del engine.catalog.indexes[name]
    return Result()


def _alteration(engine: Engine, draft: _Draft) -> Alteration:
    """The ``Alteration`` the actions make: the table rewritten when its rows change; its
    NOT NULL columns and keys checked unless they hold the values they held under them."""
    original, item, origins = draft.original, draft.item, draft.origins
    not_null = [i for i in sorted(item.not_null)
                if origins[i] is None or origins[i] not in original.not_null]

    def held(key: UniqueKey) -> bool:  # by the same columns, as they were
        columns = tuple(origins[c] for c in key.columns)
        return any(k.name == key.name and k.columns == columns for k in original.keys)

    unique = [key for key in item.keys if not held(key)]

    def change(view: str, tree: exp.Expr) -> None:
        for each in draft.changes:
            each(view, tree)

    def doomed() -> list[str]:
        for action, users in draft.drops:
            if users and not action.cascade:
                raise ProgrammingError(
                    f"cannot drop column {action.column} of table {item.name} because other "
                    f"objects depend on it: {', '.join(users)} (use ALTER TABLE ... DROP "
                    "COLUMN ... CASCADE to drop them too)")
        found = [n for _, users in draft.drops for u in users
                 for n in (*engine.catalog.dependents(u), u)]
        return list(dict.fromkeys(found))

    return Alteration(original.name, item, change, draft.sources if draft.rewrite else None,
                      not_null, unique, doomed)


def _add_column(engine: Engine, draft: _Draft, action: AddColumn) -> None:
    field, item = action.field, draft.item
    if field.name in draft.names:
        if action.if_not_exists:
            return
        raise ProgrammingError(f'column "{field.name}" of relation "{item.name}" already '
                               "exists")
    position = len(item.fields)
    draft.item = dataclasses.replace(
        item, fields=(*item.fields, field),
        not_null=item.not_null | ({position} if action.not_null else set()),
        defaults=item.defaults + (() if action.default is None else
                                  ((position, action.default),)))
    draft.sources.append(f"CAST({'NULL' if action.default is None else action.default} AS "
                         f"{field.type})")
    draft.origins.append(None)
    draft.rewrite = True


def _drop_column(engine: Engine, draft: _Draft, action: DropColumn) -> None:
    item, names, column = draft.item, draft.names, action.column
    if column not in names and action.if_exists:
        return
    dropped = draft.position(column)
    if len(names) == 1:
        raise ProgrammingError(f"cannot drop column {column} of table {item.name}: it is its "
                               "only column (tables without columns are not supported)")
    users: list[str] = []

    def check(view: str, tree: exp.Expr) -> None:
        if uses_column(tree, item.name, names, column):
            users.append(view)
        else:
            dropped_column(tree, item.name, names, column)

    moved = {i: i - (i > dropped) for i in range(len(names)) if i != dropped}
    draft.item = dataclasses.replace(
        item, fields=tuple(f for i, f in enumerate(item.fields) if i != dropped),
        keys=tuple(UniqueKey(k.name, tuple(moved[c] for c in k.columns), k.primary)
                   for k in item.keys if dropped not in k.columns),
        not_null=frozenset(moved[i] for i in item.not_null if i != dropped),
        defaults=tuple((moved[i], d) for i, d in item.defaults if i != dropped),
        column_comments=tuple((moved[i], c) for i, c in item.column_comments if i != dropped))
    del draft.sources[dropped], draft.origins[dropped]
    draft.changes.append(check)
    draft.drops.append((action, users))
    draft.rewrite = True


def _set_default(engine: Engine, draft: _Draft, action: SetDefault) -> None:
    position, item = draft.position(action.column), draft.item
    kept = tuple((i, d) for i, d in item.defaults if i != position)
    if action.default is not None:
        node = sqlglot.parse_one(action.default, dialect=Matview)
        kept += ((position, column_default(node, item.fields[position])),)
    draft.item = dataclasses.replace(item, defaults=tuple(sorted(kept)))


def _set_not_null(engine: Engine, draft: _Draft, action: SetNotNull) -> None:
    position, item = draft.position(action.column), draft.item
    if action.not_null:
        draft.item = dataclasses.replace(item, not_null=item.not_null | {position})
        return
    if any(key.primary and position in key.columns for key in item.keys):
        raise ProgrammingError(f'column "{action.column}" is in a primary key')
    draft.item = dataclasses.replace(item, not_null=item.not_null - {position})


def _set_type(engine: Engine, draft: _Draft, action: SetType) -> None:
    position, item, names, column = draft.position(action.column), draft.item, draft.names, \
        action.column
    old = item.fields[position]

    def refuse_read(view: str, tree: exp.Expr) -> None:
        if uses_column(tree, item.name, names, column):
            raise NotSupportedError(f"cannot alter type of a column used by a view or rule: "
                                    f'view "{view}" depends on column "{column}"')

    if action.using is not None:
        value = _of_draft(draft, action.using)
    else:  # as an INSERT would convert it
        try:
            assignment_cast(TypedScalar(Col(position), old.type), action.type, column, None)
        except SqlTypeError:
            raise ProgrammingError(f'column "{column}" cannot be cast automatically to type '
                                   f"{action.type} (convert it with USING "
                                   f"{quoted_name(column)}::{action.type})") from None
        value = draft.sources[position]
    field = Field(column, action.type)
    default = dict(item.defaults).get(position)
    if default is not None:
        try:
            column_default(sqlglot.parse_one(default, dialect=Matview), field)
        except SqlError:
            raise ProgrammingError(f'default for column "{column}" cannot be cast '
                                   f"automatically to type {action.type}") from None
    draft.item = dataclasses.replace(item, fields=tuple(
        field if i == position else f for i, f in enumerate(item.fields)))
    draft.sources[position] = f"CAST(({value}) AS {action.type})"
    draft.origins[position] = None
    draft.changes.append(refuse_read)
    draft.rewrite = True


def _of_draft(draft: _Draft, sql: str) -> str:
    """Expression ``sql`` of a row of the table as the actions so far leave it, as SQL of
    a row of the table as it was: each of its columns replaced by its value (``sources``)."""
    names, table = draft.names, draft.item.name

    def value(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Column) and isinstance(node.this, exp.Identifier)):
            return node
        qualifier, name = node.args.get("table"), normalize(node.this)
        if (qualifier is None or normalize(qualifier) == table) and name in names:
            source = draft.sources[names.index(name)]
            return exp.Paren(this=sqlglot.parse_one(source, dialect=Matview))
        return node

    return sqlglot.parse_one(sql, dialect=Matview).transform(value).sql(dialect=Matview)


def _add_key(engine: Engine, draft: _Draft, action: AddKey) -> None:
    item = draft.item
    columns = key_columns(draft.names, action.columns)
    taken = set(engine.catalog.entries) | {
        name for name, index in engine.catalog.indexes.items()
        if not (index.constraint and index.on == item.name)}  # the draft's keys: its own
    key = added_key(item.name, item.fields, item.keys, action.name, columns, action.primary,
                    taken)
    draft.item = dataclasses.replace(
        item, keys=(*item.keys, key),
        not_null=item.not_null | (set(columns) if action.primary else set()))


def _drop_constraint(engine: Engine, draft: _Draft, action: DropConstraint) -> None:
    item = draft.item
    if action.name not in {key.name for key in item.keys}:
        if action.if_exists:
            return
        raise ProgrammingError(f'constraint "{action.name}" of relation "{item.name}" does '
                               "not exist")
    draft.item = dataclasses.replace(item, keys=tuple(k for k in item.keys
                                                      if k.name != action.name))


_ACTIONS: dict[type[TableAction], Callable[[Engine, _Draft, Any], None]] = {
    AddColumn: _add_column, DropColumn: _drop_column, SetDefault: _set_default,
    SetNotNull: _set_not_null, SetType: _set_type, AddKey: _add_key,
    DropConstraint: _drop_constraint}
"""What each action does to the draft."""
