"""Constraints of ``CREATE TABLE``: ``NOT NULL``, ``DEFAULT``, ``PRIMARY KEY`` and
``UNIQUE``, as column constraints (``k int PRIMARY KEY``) or table constraints
(``[CONSTRAINT name] PRIMARY KEY (a, b)``, ``UNIQUE (a, b)``).

Unnamed keys get PostgreSQL's names: ``t_pkey`` for the primary key, ``t_a_b_key`` for a
unique key (numbered when taken). A primary key's columns are NOT NULL. A column's
``DEFAULT`` is an expression of no column (kept as SQL text, bound at each INSERT that
omits the column or writes ``DEFAULT``: ``default_value``). Other constraints (CHECK,
REFERENCES, ...) are refused by name.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from matview.ir.relation import Field
from matview.ir.scalar import Lit
from matview.sql.catalog import CatalogItem, UniqueKey
from matview.sql.coerce import TypedScalar, assignment_cast
from matview.sql.dialect import Matview
from matview.sql.errors import SqlError, UnknownObjectError, UnsupportedError
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
                    value = _bound_default(kind.this, fields[column])
                    rows_relation([[value]], [{0: kind.this}], [kind.this])  # a constant folds
                    defaults.append((column, kind.this.sql(dialect=Matview)))
                elif isinstance(kind, exp.PrimaryKeyColumnConstraint | exp.UniqueColumnConstraint):
                    _plain(kind)
                    keys.append((name, (column,), isinstance(kind, exp.PrimaryKeyColumnConstraint),
                                 constraint))
                else:
                    _refuse(kind or constraint)
            column += 1
            continue
        name = None
        if isinstance(item, exp.Constraint):
            name = normalize(item.this)
            if len(item.expressions) != 1:
                _refuse(item)
            item = item.expressions[0]
        if isinstance(item, exp.PrimaryKey):
            keys.append((name, _positions(names, item.expressions, item), True, item))
        elif isinstance(item, exp.UniqueColumnConstraint) and isinstance(item.this, exp.Schema):
            _plain(item)
            keys.append((name, _positions(names, item.this.expressions, item), False, item))
        else:
            _refuse(item)
    primaries = [node for _, _, primary, node in keys if primary]
    if len(primaries) > 1:
        raise SqlError.at(f'multiple primary keys for table "{table}" are not allowed',
                          primaries[1])
    taken: set[str] = set()
    bound = []
    for name, columns, primary, node in keys:
        name = name or _free_name(table, [names[i] for i in columns], primary, taken)
        if name in taken:
            raise SqlError.at(f'relation "{name}" already exists', node)
        taken.add(name)
        bound.append(UniqueKey(name, columns, primary))
        if primary:
            not_null.update(columns)
    return tuple(bound), frozenset(not_null), tuple(defaults)


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


def _positions(names: list[str], identifiers: Sequence[exp.Expr], node: exp.Expr
               ) -> tuple[int, ...]:
    positions = []
    for identifier in identifiers:
        name = normalize(identifier.this if isinstance(identifier, exp.Column) else identifier)
        if name not in names:
            raise UnknownObjectError.at(f'column "{name}" named in key does not exist', node)
        if names.index(name) in positions:
            raise SqlError.at(f'column "{name}" appears twice in unique constraint', node)
        positions.append(names.index(name))
    return tuple(positions)


def _free_name(table: str, columns: list[str], primary: bool, taken: set[str]) -> str:
    """PostgreSQL's name for an unnamed key: ``t_pkey`` or ``t_a_b_key``, numbered when
    taken."""
    base = f"{table}_pkey" if primary else f"{table}_{'_'.join(columns)}_key"
    return next(n for n in (base, *(f"{base}{i}" for i in range(1, len(taken) + 2)))
                if n not in taken)


def _plain(key: exp.Expr) -> None:
    """Refuse a key's options (``NULLS NOT DISTINCT``, ``INCLUDE``, storage parameters)."""
    if key.args.get("nulls"):
        raise UnsupportedError.at("UNIQUE NULLS NOT DISTINCT is not supported yet", key)
    include = key.args.get("include")
    if include is not None and any(v for k, v in include.args.items() if k != "with_storage"):
        raise UnsupportedError.at("index parameters of a key are not supported", key)


def _refuse(node: exp.Expr) -> None:
    word = next((w for t, w in _REFUSED.items() if isinstance(node, t)), None)
    if word is None:
        word = node.sql(dialect="postgres").split("(")[0].strip() or type(node).__name__
    raise UnsupportedError.at(f"{word} constraints are not supported yet", node)
