"""The rewriting of a view's stored query when a relation it reads is altered
(``matview.alter``): qualified first, every column by the relation it comes from and every
``*`` expanded to the columns it stands for (as PostgreSQL expands a view's ``*`` when the
view is created), so that the query means the same after its table gains a column; then a
table or a column renamed where the query reads it, or a column's use found.

A ``JOIN ... USING (columns)`` stays one, its merged columns named unqualified as written;
a ``NATURAL JOIN`` becomes the USING join of the columns its sides share when the view is
qualified (PostgreSQL fixes them when the view is created: a column added later to both
sides does not join them), or a join ``ON TRUE`` when they share none. A table's column
named in a USING list is renamed as PostgreSQL shows such a view: the reference to the
table lists its columns' old names (``t AS t(a, b)``), and the query reads them by those.
A reference with a column list (written so, or made by a rename) names the table's columns
by position: the list gives the first ones their names there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import sqlglot
from matview.sql.catalog import quoted_name
from matview.sql.dialect import Matview
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, traverse_scope

_WRITTEN = "matview_written"
"""Marks (in its ``meta``) a COALESCE the query was written with: any other one after
sqlglot's ``qualify`` stands for the merged column of a USING join."""


def qualified(sql: str, columns: Mapping[str, Sequence[str]]) -> exp.Expr:
    """Query ``sql`` with its columns qualified and its stars expanded, given the columns of
    every relation it may read (``columns``, by name). sqlglot's ``qualify`` may fail, or
    change what the query means to the binder: the caller checks that it binds to the same
    plan."""
    schema = {name: dict.fromkeys(names, "int") for name, names in columns.items()}
    tree = sqlglot.parse_one(sql, dialect=Matview)
    for written in tree.find_all(exp.Coalesce):
        written.meta[_WRITTEN] = True
    joins = [j for j in tree.find_all(exp.Join) if j.args.get("using") or j.method == "NATURAL"]
    tree = qualify(tree, schema=schema, dialect=Matview, quote_identifiers=False,
                   identify=False, validate_qualify_columns=True)
    for join in joins:  # sqlglot made each an ON join over the COALESCE of its sides
        _using_again(join)
    for merged in list(tree.find_all(exp.Coalesce)):
        args = [merged.this, *merged.expressions]
        names = {arg.name for arg in args}
        if not merged.meta.get(_WRITTEN) and len(names) == 1 and \
                all(isinstance(arg, exp.Column) for arg in args):
            merged.replace(exp.Column(this=_identifier(names.pop())))
    return tree


def _using_again(join: exp.Join) -> None:
    """Join ``join``, written ``USING`` or ``NATURAL`` and made an ON join of equalities by
    sqlglot (none: a NATURAL join of sides sharing no column), a USING join again."""
    on = join.args.get("on")
    join.set("method", None)
    if on is None:
        join.set("on", exp.true())
        return
    equalities = list(on.flatten()) if isinstance(on, exp.And) else [on]
    join.set("on", None)
    join.set("using", [_identifier(eq.expression.name) for eq in equalities])


def _source_of(scope: Scope | None, alias: str) -> exp.Expr | Scope | None:
    """What ``alias`` names for a column of ``scope`` (a source of its own, or of a query it
    is nested in)."""
    while scope is not None:
        if alias in scope.sources:
            return scope.sources[alias]
        scope = scope.parent
    return None


def _listed(source: exp.Table) -> list[str]:
    """The column names a reference to a table lists (``t AS x(a, b)``), if any."""
    alias = source.args.get("alias")
    return [] if alias is None else [c.name for c in alias.columns]


def _visible(source: exp.Table, names: Sequence[str], position: int) -> str:
    """The name by which reference ``source`` to a table of columns ``names`` reads its
    column at ``position``."""
    listed = _listed(source)
    return listed[position] if position < len(listed) else names[position]


def _tables(scope: Scope, table: str) -> Iterator[exp.Table]:
    """The references to stored relation ``table`` among ``scope``'s own sources (not to a
    WITH query)."""
    for source in scope.sources.values():
        if isinstance(source, exp.Table) and source.name == table:
            yield source


def _read(tree: exp.Expr, table: str, names: Sequence[str], column: str
          ) -> Iterator[tuple[exp.Column, exp.Table]]:
    """The columns of qualified query ``tree`` that read ``column`` of stored relation
    ``table`` (of columns ``names``), each with the reference to ``table`` it reads."""
    position = names.index(column)
    for scope in traverse_scope(tree):
        for found in scope.columns:
            source = _source_of(scope, found.table) if found.table else None
            if isinstance(source, exp.Table) and source.name == table and \
                    found.name == _visible(source, names, position):
                yield found, source


def _joined(tree: exp.Expr, table: str, names: Sequence[str], column: str
            ) -> Iterator[exp.Table]:
    """The references to ``table`` (of columns ``names``) in a query of ``tree`` whose USING
    lists name the column at ``column``'s position as the reference reads it (taken to
    join by it: whether it is on the join's side is not looked at)."""
    position = names.index(column)
    for scope in traverse_scope(tree):
        using = {ident.name for join in scope.find_all(exp.Join)
                 for ident in join.args.get("using") or []}
        for source in _tables(scope, table):
            if _visible(source, names, position) in using:
                yield source


def uses_column(tree: exp.Expr, table: str, names: Sequence[str], column: str) -> bool:
    """Whether qualified query ``tree`` reads ``column`` of ``table`` (of columns
    ``names``), or joins by it."""
    return next(_read(tree, table, names, column), None) is not None or \
        next(_joined(tree, table, names, column), None) is not None


def renamed_column(tree: exp.Expr, table: str, names: Sequence[str], column: str,
                   to: str) -> None:
    """Read ``column`` of ``table`` (of columns ``names``) as ``to`` in qualified query
    ``tree`` (in place; its output columns keep their names: a view's are listed with it).
    A reference joining by it lists the old names instead, the query reading them."""
    position = names.index(column)
    for source in list(_joined(tree, table, names, column)):
        listed = _listed(source)
        if position >= len(listed):
            columns = [*listed, *names[len(listed):position + 1]]
            source.set("alias", exp.TableAlias(this=source.args["alias"].this.copy(),
                                               columns=[_identifier(c) for c in columns]))
    for found, source in list(_read(tree, table, names, column)):
        if position >= len(_listed(source)):
            found.set("this", _identifier(to))


def dropped_column(tree: exp.Expr, table: str, names: Sequence[str], column: str) -> None:
    """Qualified query ``tree``, which does not read ``column`` of ``table`` (of columns
    ``names``), reading the table without it: a reference's column list loses its name for
    it (in place)."""
    position = names.index(column)
    for scope in traverse_scope(tree):
        for source in _tables(scope, table):
            listed = source.args["alias"].columns if source.args.get("alias") else []
            if position < len(listed):
                source.args["alias"].set("columns", [c for i, c in enumerate(listed)
                                                     if i != position] or None)


def rename_table(tree: exp.Expr, table: str, to: str) -> None:
    """Read stored relation ``table`` as ``to`` in qualified query ``tree`` (in place: every
    reference keeps its alias, which its columns are qualified by)."""
    for scope in traverse_scope(tree):
        for source in list(_tables(scope, table)):
            if not source.alias:
                source.set("alias", exp.TableAlias(this=_identifier(table)))
            source.set("this", _identifier(to))


def ctes(tree: exp.Expr) -> set[str]:
    """The names of the WITH queries of ``tree``."""
    return {cte.alias for cte in tree.find_all(exp.CTE)}


def _identifier(name: str) -> exp.Identifier:
    """Normalized ``name`` as an identifier (quoted when it must be: ``quoted_name``)."""
    return exp.to_identifier(name, quoted=quoted_name(name) != name)
