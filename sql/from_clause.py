"""The FROM clause: its relations joined into one flat ``Join``, and the scope naming its row.

Tables and materialized views are read with ``Get``; plain views, common table expressions
and subqueries are inlined. Every inner join (comma, CROSS, ``JOIN ... ON``, ``USING``,
NATURAL) adds its relation to the one ``Join``; ON and USING conditions are returned as
predicates for the caller's filter.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from matview.ir.relation import Get, Join, Relation
from matview.ir.scalar import Col, Scalar
from matview.ir.types import SqlType
from matview.sql.catalog import CatalogItem
from matview.sql.coerce import TypedScalar, call, unify
from matview.sql.context import Context
from matview.sql.dialect import Matview
from matview.sql.errors import SqlError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize, relation_name
from matview.sql.plans import UNIT
from matview.sql.scalars import ExprBinder
from matview.sql.scope import FromItem, RangeVar, Scope
from matview.sql.statements import Query
from sqlglot import exp


def bind_from(select: exp.Select, ctx: Context) -> tuple[Relation, Scope, list[Scalar]]:
    """The FROM clause of ``select``: the joined relation, its scope, and the join conditions.
    Without FROM, one empty row."""
    from_ = select.args.get("from_")
    if from_ is None:
        return UNIT, Scope((), ()), []
    builder = _FromBuilder(ctx)
    items = builder.join_list(from_.this, select.args.get("joins") or [])
    inputs = builder.inputs
    rel = inputs[0] if len(inputs) == 1 else Join(tuple(inputs), ())
    return rel, Scope(tuple(items), tuple(builder.types)), builder.conditions


def rename(names: Sequence[str], aliases: Sequence[str], relation: str,
           node: exp.Expr) -> tuple[str, ...]:
    """``names`` with the first ones replaced by the column ``aliases`` of ``relation``."""
    if len(aliases) > len(names):
        raise SqlError.at(f'table "{relation}" has {len(names)} columns available but '
                          f"{len(aliases)} columns specified", node)
    return tuple(aliases) + tuple(names[len(aliases):])


def bind_view(item: CatalogItem, ctx: Context) -> Query:
    """The stored query of view ``item``, bound in a context without CTEs."""
    from matview.sql.query import bind_query

    assert item.query_sql is not None
    try:
        query = bind_query(sqlglot.parse_one(item.query_sql, dialect=Matview),
                           Context(ctx.catalog))
    except SqlError as error:
        raise type(error)(f'in view "{item.name}": {error.message}') from error
    return Query(query.plan, tuple(f.name for f in item.fields))


class _FromBuilder:
    """Accumulates the joined relations, their column types and the join conditions."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.inputs: list[Relation] = []
        self.types: list[SqlType] = []
        self.conditions: list[Scalar] = []
        self.aliases: set[str] = set()

    def join_list(self, first: exp.Expr, joins: Sequence[exp.Join]) -> list[FromItem]:
        """The FROM items of ``first`` followed by ``joins`` (sqlglot's flat join list, where a
        join without kind or condition is a comma)."""
        items = [self.item(first)]
        for join in joins:
            if join.side or join.kind not in ("", "CROSS", "INNER"):
                word = join.side or join.kind
                raise UnsupportedError.at(f"{word} JOIN is not supported yet", join)
            right = self.item(join.this)
            on, using = join.args.get("on"), join.args.get("using")
            if join.method == "NATURAL":
                shared = {n for n, _ in right.columns}
                names = list(dict.fromkeys(n for n, _ in items[-1].columns if n in shared))
                items[-1] = self._using(items[-1], right, names, join)
            elif using:
                names = [normalize(ident) for ident in using]
                items[-1] = self._using(items[-1], right, names, join)
            elif on is not None or join.kind:
                items[-1] = FromItem(items[-1].columns + right.columns,
                                     items[-1].tables + right.tables)
                if on is not None:
                    scope = Scope(tuple(items), tuple(self.types))
                    binder = ExprBinder(scope, "aggregate functions are not allowed in JOIN "
                                               "conditions")
                    self.conditions.append(binder.predicate(on, "JOIN/ON").expr)
            else:
                items.append(right)
        return items

    def item(self, node: exp.Expr) -> FromItem:
        """One FROM item: a relation, a subquery, or a parenthesized join."""
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            name = relation_name(node)
            query = self._relation(name, node)
            return self._add(query, _alias(node) or name, node)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table):
            return self._parenthesized(node)
        if isinstance(node, exp.Subquery):
            from matview.sql.query import subquery

            query = subquery(node.this, self.ctx, "a subquery in FROM")
            return self._add(query, _alias(node), node)
        if isinstance(node, exp.Lateral):
            raise UnsupportedError.at("LATERAL is not supported yet", node)
        raise UnsupportedError.at(
            f"{node.sql(dialect=Matview)} is not supported in FROM yet", node)

    def _relation(self, name: str, node: exp.Table) -> Query:
        if name in self.ctx.ctes:
            return self.ctx.ctes[name]
        item = self.ctx.catalog.lookup(name)
        if item is None:
            raise UnknownObjectError.at(f'relation "{name}" does not exist', node)
        if item.kind == "view":
            return bind_view(item, self.ctx)
        return Query(Get(item.name, item.fields), tuple(f.name for f in item.fields))

    def _parenthesized(self, node: exp.Subquery) -> FromItem:
        if node.alias:
            raise UnsupportedError.at("aliases of parenthesized joins are not supported yet",
                                      node)
        table = node.this.copy()
        joins = table.args.pop("joins", None) or []
        items = self.join_list(table, joins)
        return FromItem(tuple(c for i in items for c in i.columns),
                        tuple(t for i in items for t in i.tables))

    def _add(self, query: Query, alias: str | None, node: exp.Expr) -> FromItem:
        """Adds ``query`` to the join as range variable ``alias`` (None: a subquery without
        alias, which qualified names cannot reach)."""
        alias_node = node.args.get("alias")
        columns = [normalize(c) for c in alias_node.columns] if alias_node else []
        names = rename(query.column_names, columns, alias or "?subquery?", node)
        if alias in self.aliases:
            raise SqlError.at(f'table name "{alias}" specified more than once', node)
        if alias is not None:
            self.aliases.add(alias)
        table = RangeVar(alias or "", names, len(self.types))
        self.inputs.append(query.plan)
        self.types.extend(query.plan.types)
        return FromItem(table.columns(), (table,))

    def _using(self, left: FromItem, right: FromItem, names: Sequence[str],
               node: exp.Join) -> FromItem:
        if len(set(names)) < len(names):
            raise SqlError.at("a column appears more than once in USING clause", node)
        merged = []
        for name in names:
            left_col = self._using_column(left, name, "left", node)
            right_col = self._using_column(right, name, "right", node)
            operands = unify([TypedScalar(Col(i), self.types[i]) for i in (left_col, right_col)],
                             node, lambda a, b: f'JOIN/USING types {a} and {b} cannot be matched')
            self.conditions.append(call("eq", operands, node).expr)
            merged.append((name, left_col))
        rest = tuple(c for c in left.columns + right.columns if c[0] not in names)
        return FromItem(tuple(merged) + rest, left.tables + right.tables)

    def _using_column(self, item: FromItem, name: str, side: str, node: exp.Join) -> int:
        found = [i for n, i in item.columns if n == name]
        if not found:
            raise UnknownObjectError.at(
                f'column "{name}" specified in USING clause does not exist in {side} table', node)
        if len(found) > 1:
            raise SqlError.at(
                f'common column name "{name}" appears more than once in {side} table', node)
        return found[0]


def _alias(node: exp.Expr) -> str | None:
    """The normalized alias of a FROM item, or None."""
    alias = node.args.get("alias")
    return normalize(alias.this) if alias is not None and alias.this is not None else None
