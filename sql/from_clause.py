"""The FROM clause: its relations joined into one flat ``Join``, and the scope naming its row.

Tables and materialized views are read with ``Get``; plain views, common table expressions
and subqueries are inlined. Every inner join (comma, CROSS, ``JOIN ... ON``, ``USING``,
NATURAL) adds its relation to the one ``Join``; ON and USING conditions are returned as
predicates for the caller's filter.

A table function (``generate_series(1, t.a) WITH ORDINALITY AS g(x, n)``, with or without
LATERAL) may read the columns of the FROM items before it, as in PostgreSQL: the relations
joined so far (one empty row when it comes first) become ``Linear(rel, [FlatMap(call)])``,
the single input so far, and later items join with it. The conditions collected keep their
column positions, since the FlatMap appends its columns. ``repeat_row(n)`` likewise adds a
``Repeat`` step, and no columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from matview.ir.relation import FlatMap, Get, Join, Linear, Relation, Repeat, Step
from matview.ir.scalar import Col, Scalar
from matview.ir.types import BIGINT, SqlType
from matview.sql import table_functions, temporal
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
    builder = _FromBuilder(ctx, _aliases([from_.this, *(select.args.get("joins") or [])]))
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

    def __init__(self, ctx: Context, all_aliases: set[str]) -> None:
        self.ctx = ctx
        self.inputs: list[Relation] = []
        self.types: list[SqlType] = []
        self.conditions: list[Scalar] = []
        self.aliases: set[str] = set()
        self.all_aliases = all_aliases

    def join_list(self, first: exp.Expr, joins: Sequence[exp.Join],
                  before: Sequence[FromItem] = ()) -> list[FromItem]:
        """The FROM items of ``first`` followed by ``joins`` (sqlglot's flat join list, where a
        join without kind or condition is a comma); ``before`` are the items to their left
        (which table functions may read)."""
        items = [self.item(first, before)]
        for join in joins:
            if join.side or join.kind not in ("", "CROSS", "INNER"):
                word = join.side or join.kind
                raise UnsupportedError.at(f"{word} JOIN is not supported yet", join)
            right = self.item(join.this, [*before, *items])
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
                    table_functions.reject(on, "JOIN conditions")
                    scope = Scope(tuple(items), tuple(self.types))
                    binder = ExprBinder(scope, "aggregate functions are not allowed in JOIN "
                                               "conditions")
                    self.conditions.extend(temporal.conditions(binder, on, "JOIN/ON"))
            else:
                items.append(right)
        return items

    def item(self, node: exp.Expr, before: Sequence[FromItem]) -> FromItem:
        """One FROM item: a relation, a subquery, a table function, or a parenthesized join;
        ``before`` are the items to its left."""
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            name = relation_name(node)
            query = self._relation(name, node)
            return self._add(query, _alias(node) or name, node)
        if isinstance(node, exp.Table) and node.args.get("rows_from"):
            raise UnsupportedError.at("ROWS FROM is not supported yet", node)
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Func):
            return self._function(node.this, node, bool(node.args.get("ordinality")), before)
        if isinstance(node, exp.Unnest):
            return self._function(node, node, bool(node.args.get("offset")), before)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table):
            return self._parenthesized(node, before)
        if isinstance(node, exp.Subquery):
            from matview.sql.query import subquery

            query = subquery(node.this, self.ctx, "a subquery in FROM")
            return self._add(query, _alias(node), node)
        if isinstance(node, exp.Lateral) and isinstance(node.this, exp.Func):
            ordinality = node.args.get("ordinality") or (
                isinstance(node.this, exp.Unnest) and node.this.args.get("offset"))
            return self._function(node.this, node, bool(ordinality), before)
        if isinstance(node, exp.Lateral):
            raise UnsupportedError.at(
                "LATERAL subqueries are not supported yet; table functions in FROM (which "
                "are lateral without the keyword) are", node)
        raise UnsupportedError.at(
            f"{node.sql(dialect=Matview)} is not supported in FROM yet", node)

    def _function(self, func: exp.Expr, node: exp.Expr, ordinality: bool,
                  before: Sequence[FromItem]) -> FromItem:
        """Table function ``func`` as FROM item ``node`` (its alias and ordinality), reading
        the columns of the items ``before`` it."""
        found = table_functions.table_call(func)
        if found is None:
            raise table_functions.not_a_table_function(func)
        self._check_references(func, before)
        scope = Scope(tuple(before), tuple(self.types))
        binder = ExprBinder(scope, "aggregate functions are not allowed in functions in FROM",
                            "set-returning functions must appear at top level of FROM")
        step: Step
        if found.name == table_functions.REPEAT_ROW:
            if ordinality:
                raise UnsupportedError.at("repeat_row has no WITH ORDINALITY", node)
            step, names, types = Repeat(table_functions.repeat_count(binder, found)), (), ()
        else:
            calls = ([table_functions.TableCall("unnest", (a,), found.node) for a in found.args]
                     if found.name == "unnest" and len(found.args) > 1 else [found])
            bound = [table_functions.bind_call(binder, c) for c in calls]
            step = FlatMap(tuple(b.call for b in bound), ordinality)
            names = tuple(n for b in bound for n in b.names)
            types = tuple(t for b in bound for t in b.types)
            alias_name = _alias(node)
            if alias_name is not None and len(bound) == 1 and bound[0].scalar:
                names = (alias_name,)
            if ordinality:
                names, types = names + ("ordinality",), types + (BIGINT,)
        rel = self.inputs[0] if len(self.inputs) == 1 else (
            Join(tuple(self.inputs), ()) if self.inputs else UNIT)
        self.inputs = [Linear(rel, (step,))]
        return self._add_columns(names, types, _alias(node) or found.name, node,
                                 _column_aliases(node, func))

    def _check_references(self, func: exp.Expr, before: Sequence[FromItem]) -> None:
        """A table function may only read the FROM items before it."""
        visible = {t.alias for item in before for t in item.tables}
        for column in func.find_all(exp.Column):
            qualifier = column.args.get("table")
            if qualifier is None:
                continue
            name = normalize(qualifier)
            if name not in visible and name in self.all_aliases:
                raise SqlError.at(
                    f'invalid reference to FROM-clause entry for table "{name}": a function in '
                    "FROM can only read the FROM items before it", column)

    def _relation(self, name: str, node: exp.Table) -> Query:
        if name in self.ctx.ctes:
            return self.ctx.ctes[name]
        item = self.ctx.catalog.lookup(name)
        if item is None:
            raise UnknownObjectError.at(f'relation "{name}" does not exist', node)
        if item.kind == "view":
            return bind_view(item, self.ctx)
        return Query(Get(item.name, item.fields), tuple(f.name for f in item.fields))

    def _parenthesized(self, node: exp.Subquery, before: Sequence[FromItem]) -> FromItem:
        if node.alias:
            raise UnsupportedError.at("aliases of parenthesized joins are not supported yet",
                                      node)
        table = node.this.copy()
        joins = table.args.pop("joins", None) or []
        items = self.join_list(table, joins, before)
        return FromItem(tuple(c for i in items for c in i.columns),
                        tuple(t for i in items for t in i.tables))

    def _add(self, query: Query, alias: str | None, node: exp.Expr) -> FromItem:
        """Adds ``query`` to the join as range variable ``alias`` (None: a subquery without
        alias, which qualified names cannot reach)."""
        alias_node = node.args.get("alias")
        columns = [normalize(c) for c in alias_node.columns] if alias_node else []
        self.inputs.append(query.plan)
        return self._add_columns(query.column_names, query.plan.types, alias, node, columns)

    def _add_columns(self, names: Sequence[str], types: Sequence[SqlType], alias: str | None,
                     node: exp.Expr, aliases: Sequence[str]) -> FromItem:
        """Names the columns ``types`` (named ``names``, the first renamed to ``aliases``)
        just added to the joined row as range variable ``alias``."""
        names = rename(names, aliases, alias or "?subquery?", node)
        if alias in self.aliases:
            raise SqlError.at(f'table name "{alias}" specified more than once', node)
        if alias is not None:
            self.aliases.add(alias)
        table = RangeVar(alias or "", names, len(self.types))
        self.types.extend(types)
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


def _column_aliases(node: exp.Expr, func: exp.Expr) -> list[str]:
    """The column aliases of table function item ``node``; sqlglot keeps the name of an
    ``unnest`` ordinality column apart (in ``offset``)."""
    alias = node.args.get("alias")
    names = [normalize(c) for c in alias.columns] if alias is not None else []
    offset = func.args.get("offset") if isinstance(func, exp.Unnest) else None
    return names + [normalize(offset)] if isinstance(offset, exp.Identifier) else names


def _aliases(nodes: Sequence[exp.Expr]) -> set[str]:
    """Every name a FROM item is known by in ``nodes`` (for the error of a table function
    reading a later item)."""
    out = set()
    for node in nodes:
        for item in node.find_all(exp.Table, exp.Subquery, exp.Lateral, exp.Unnest):
            alias = _alias(item)
            if alias is None and isinstance(item, exp.Table) and isinstance(item.this,
                                                                            exp.Identifier):
                alias = normalize(item.this)
            if alias is not None:
                out.add(alias)
    return out
