"""The rewriting of a view's stored query when a relation it reads is altered
(``matview.alter``): qualified first, every column by the relation it comes from and every
``*`` expanded to the columns it stands for (as PostgreSQL expands a view's ``*`` when the
view is created), so that the query means the same after its table gains a column; then a
table or a column renamed where the query reads it, or a column's use found."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import sqlglot
from matview.sql.catalog import quoted_name
from matview.sql.dialect import Matview
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope


def qualified(sql: str, columns: Mapping[str, Sequence[str]]) -> exp.Expr:
    """Query ``sql`` with its columns qualified and its stars expanded, given the columns of
    every relation it may read (``columns``, by name). sqlglot's ``qualify`` may fail, or
    change what the query means to the binder: the caller checks that it binds to the same
    plan."""
    schema = {name: dict.fromkeys(names, "int") for name, names in columns.items()}
    tree = sqlglot.parse_one(sql, dialect=Matview)
    return qualify(tree, schema=schema, dialect=Matview, quote_identifiers=False,
                   identify=False, validate_qualify_columns=True)


def _sources(tree: exp.Expr, table: str) -> Iterator[exp.Table]:
    """Every reference to stored relation ``table`` in ``tree`` (not to a WITH query)."""
    for scope in traverse_scope(tree):
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and source.name == table:
                yield source


def _columns_of(tree: exp.Expr, table: str, column: str) -> Iterator[exp.Column]:
    """The columns of ``tree`` (qualified) that are ``column`` of stored relation ``table``."""
    for scope in traverse_scope(tree):
        aliases = {alias for alias, source in scope.sources.items()
                   if isinstance(source, exp.Table) and source.name == table}
        for found in scope.columns:
            if found.table in aliases and found.name == column:
                yield found


def uses_column(tree: exp.Expr, table: str, column: str) -> bool:
    """Whether qualified query ``tree`` reads ``column`` of ``table``."""
    return next(_columns_of(tree, table, column), None) is not None


def renamed_column(tree: exp.Expr, table: str, column: str, to: str) -> None:
    """Read ``column`` of ``table`` as ``to`` in qualified query ``tree`` (in place; its
    output columns keep their names: a view's are listed with it)."""
    for found in list(_columns_of(tree, table, column)):
        found.set("this", _identifier(to))


def rename_table(tree: exp.Expr, table: str, to: str) -> None:
    """Read stored relation ``table`` as ``to`` in qualified query ``tree`` (in place: every
    reference keeps its alias, which its columns are qualified by)."""
    for source in list(_sources(tree, table)):
        if not source.alias:
            source.set("alias", exp.TableAlias(this=_identifier(table)))
        source.set("this", _identifier(to))


def ctes(tree: exp.Expr) -> set[str]:
    """The names of the WITH queries of ``tree``."""
    return {cte.alias for cte in tree.find_all(exp.CTE)}


def _identifier(name: str) -> exp.Identifier:
    """Normalized ``name`` as an identifier (quoted when it must be: ``quoted_name``)."""
    return exp.to_identifier(name, quoted=quoted_name(name) != name)
