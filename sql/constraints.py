"""Constraints of ``CREATE TABLE`` (and of ``ALTER TABLE``: ``matview.alter_table``):
``NOT NULL``, ``DEFAULT``, ``PRIMARY KEY`` and ``UNIQUE``, as column constraints (``k int
PRIMARY KEY``) or table constraints (``[CONSTRAINT name] PRIMARY KEY (a, b)``, ``UNIQUE (a,
b)``).

Unnamed keys get PostgreSQL's names: ``t_pkey`` for the primary key, ``t_a_b_key`` for a
unique key (numbered when taken; ``added_key``). A primary key's columns are NOT NULL. A column's
``DEFAULT`` is an expression of no column (kept as SQL text, bound at each INSERT that
omits the column or writes ``DEFAULT``: ``default_value``). Other constraints (CHECK,
REFERENCES, ...) are refused by name.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import NoReturn

import sqlglot
from matview.ir.relation import Field
from matview.ir.scalar import Lit
from matview.ir.types import INTERVAL
from matview.sql.catalog import CatalogItem, UniqueKey
from matview.sql.coerce import TypedScalar, assignment_cast
from matview.sql.dialect import Matview
from matview.sql.errors import (
    DuplicateObjectError,
    SqlError,
    UnknownObjectError,
    UnsupportedError,
)
from matview.sql.names import normalize
from matview.sql.scalars import ExprBinder
from matview.sql.scope import Scope
from matview.sql.values import rows_relation
from sqlglot import exp

_REFUSED = {exp.CheckColumnConstraint: "CHECK",
            exp.Reference: "REFERENCES (foreign keys)", exp.ForeignKey: "FOREIGN KEY",
            exp.GeneratedAsIdentityColumnConstraint: "GENERATED ... AS IDENTITY",
            exp.CollateColumnConstraint: "COLLATE"}
"""Constraints refused by their SQL names (others by sqlglot's)."""


def bind_constraints(table: str, fields: Sequence[Field], items: Sequence[exp.Expr]
                     ) -> tuple[tuple[UniqueKey, ...], frozenset[int], tuple[tuple[int, str], ...]]:
    """The unique keys, NOT NULL column positions and defaults (position, SQL text) that
    ``items`` (a CREATE TABLE's column definitions and table constraints, bound to
    ``fields``) declare for ``table``."""
    names = [f.name for f in fields]
    keys: list[tuple[str | None, tuple[int, ...], bool, exp.Expr]] = []
    not_null: set[int] = set()
    defaults: list[tuple[int, str]] = []
    column = 0
    for item in items:
        if isinstance(item, exp.ColumnDef):
            for constraint in item.args.get("constraints") or []:
                kind = constraint.args.get("kind")
                given = constraint.args.get("this")
                name = None if given is None else normalize(given)
                if isinstance(kind, exp.NotNullColumnConstraint):
                    if not kind.args.get("allow_null"):
                        not_null.add(column)
                elif isinstance(kind, exp.DefaultColumnConstraint):
                    defaults.append((column, column_default(kind.this, fields[column])))
                elif isinstance(kind, exp.PrimaryKeyColumnConstraint | exp.UniqueColumnConstraint):
                    _plain(kind)
                    keys.append((name, (column,), isinstance(kind, exp.PrimaryKeyColumnConstraint),
                                 constraint))
                else:
                    _refuse(kind or constraint)
            column += 1
            continue
        name, columns, primary, node = table_key(item)
        keys.append((name, key_columns(names, columns, node), primary, node))
    bound: list[UniqueKey] = []
    for name, columns, primary, node in keys:
        bound.append(added_key(table, fields, bound, name, columns, primary, set(), node))
        if primary:
            not_null.update(columns)
    return tuple(bound), frozenset(not_null), tuple(defaults)


def table_key(item: exp.Expr) -> tuple[str | None, tuple[str, ...], bool, exp.Expr]:
    """Table constraint ``item`` (of CREATE TABLE, or ALTER TABLE's ``ADD``): its name
    (None: not given), the names of its columns, whether it is the primary key, and its
    node; any constraint other than ``PRIMARY KEY`` and ``UNIQUE`` refused by name."""
    name = None
    if isinstance(item, exp.Constraint):
        name = normalize(item.this)
        if len(item.expressions) != 1:
            _refuse(item)
        item = item.expressions[0]
    if isinstance(item, exp.PrimaryKey):
        columns = item.expressions
    elif isinstance(item, exp.UniqueColumnConstraint) and isinstance(item.this, exp.Schema):
        columns = item.this.expressions
    else:
        _refuse(item)
    _plain(item)
    return name, tuple(normalize(c.this if isinstance(c, exp.Column) else c)
                       for c in columns), isinstance(item, exp.PrimaryKey), item


def key_columns(names: Sequence[str], columns: Sequence[str], node: exp.Expr | None = None
                ) -> tuple[int, ...]:
    """The positions, among a table's columns ``names``, of a key's ``columns``."""
    positions: list[int] = []
    for name in columns:
        if name not in names:
            raise UnknownObjectError.at(f'column "{name}" named in key does not exist', node)
        if names.index(name) in positions:
            raise SqlError.at(f'column "{name}" appears twice in unique constraint', node)
        positions.append(names.index(name))
    return tuple(positions)


def added_key(table: str, fields: Sequence[Field], keys: Sequence[UniqueKey], name: str | None,
              columns: tuple[int, ...], primary: bool, taken: Collection[str],
              node: exp.Expr | None = None) -> UniqueKey:
    """The key of ``columns`` (positions among ``fields``) added to table ``table``, whose
    keys are ``keys``: refused when it is a second primary key, when its ``name`` is taken
    (by a key of ``keys`` or a name of ``taken``: relations, indexes), or over an INTERVAL
    column (keys are checked by values, where intervals are equal by length: ``'1 mon'`` and
    ``'30 days'`` would both go in); unnamed, it gets PostgreSQL's name, ``t_pkey`` or
    ``t_a_b_key``, numbered when taken."""
    names = [f.name for f in fields]
    interval = next((names[i] for i in columns if fields[i].type == INTERVAL), None)
    if interval is not None:
        raise UnsupportedError.at(f'a unique key over interval column "{interval}" is not '
                                  "supported yet", node)
    if primary and any(key.primary for key in keys):
        raise SqlError.at(f'multiple primary keys for table "{table}" are not allowed', node)
    used = {key.name for key in keys} | set(taken)
    if name is None:
        base = f"{table}_pkey" if primary else f"{table}_{'_'.join(names[i] for i in columns)}_key"
        name = next(n for n in (base, *(f"{base}{i}" for i in range(1, len(used) + 2)))
                    if n not in used)
    if name in used:
        raise DuplicateObjectError.at(f'relation "{name}" already exists', node)
    return UniqueKey(name, columns, primary)


def column_default(node: exp.Expr, field: Field) -> str:
    """``DEFAULT node`` of column ``field``, checked (an expression of no column, which
    folds to a constant, of a type the column takes), as SQL text."""
    value = _bound_default(node, field)
    rows_relation([[value]], [{0: node}], [node])  # a constant folds
    return node.sql(dialect=Matview)


def default_value(item: CatalogItem, index: int) -> TypedScalar:
    """The value an INSERT writes to column ``index`` of table ``item`` when it gives none
    (or ``DEFAULT``): its default, else NULL."""
    field = item.fields[index]
    text = dict(item.defaults).get(index)
    if text is None:
        return TypedScalar(Lit(None, field.type), field.type)
    return _bound_default(sqlglot.parse_one(text, dialect=Matview), field)


def _bound_default(node: exp.Expr, field: Field) -> TypedScalar:
    """A ``DEFAULT`` expression of column ``field``, bound and cast to its type."""
    if node.find(exp.Column) is not None:
        raise SqlError.at("cannot use column reference in DEFAULT expression", node)
    if node.find(exp.Subquery, exp.Select) is not None:
        raise UnsupportedError.at("cannot use subquery in DEFAULT expression", node)
    binder = ExprBinder(Scope((), ()), "aggregate functions are not allowed in DEFAULT "
                                       "expressions")
    return assignment_cast(binder.bind(node), field.type, field.name, node)


def _plain(key: exp.Expr) -> None:
    """Refuse a key's options (``NULLS NOT DISTINCT``, ``INCLUDE``, storage parameters)."""
    if key.args.get("nulls"):
        raise UnsupportedError.at("UNIQUE NULLS NOT DISTINCT is not supported yet", key)
    include = key.args.get("include")
    if include is not None and any(v for k, v in include.args.items() if k != "with_storage"):
        raise UnsupportedError.at("index parameters of a key are not supported", key)


def _refuse(node: exp.Expr) -> NoReturn:
    """Refuse constraint ``node`` by its name: a write is checked against NOT NULL and the
    unique keys alone."""
    word = next((w for t, w in _REFUSED.items() if isinstance(node, t)), None)
    if word is None:
        word = node.sql(dialect="postgres").split("(")[0].strip() or type(node).__name__
    raise UnsupportedError.at(f"{word} constraints are not supported yet (a table's writes "
                              "are checked against NOT NULL, PRIMARY KEY and UNIQUE "
                              "constraints only)", node)
