"""The FROM clause: its relations joined into one flat ``Join``, and the scope naming its row.

Tables and materialized views are read with ``Get``; plain views, common table expressions,
subqueries and VALUES lists (``values``) are inlined. Every inner join (comma, CROSS,
``JOIN ... ON``, ``USING``, NATURAL) adds its relation to the one ``Join``; ON and USING
conditions are returned as predicates for the caller's filter. An ON condition sees the two
sides of its join only, as in PostgreSQL.

An outer join (``LEFT``, ``RIGHT``, ``FULL [OUTER] JOIN`` with ON, USING or NATURAL) joins
the FROM item to its left, the relations that item joined with the conditions collected
for them, with the item to its right, bound on its own (it cannot read the left side):
``outer_joins.outer_join`` lowers the pair, and its result replaces the left item's
relations in the ``Join``. Chains are left-associative, as SQL parses them: ``a JOIN b ON p
LEFT JOIN c ON q`` is ``σ_p(a × b) ⟕_q c``. WHERE stays above the whole FROM clause, so it
sees the NULLs of the padded side. In ``a FULL JOIN b USING (c)`` the merged column ``c`` is
``COALESCE(a.c, b.c)``, computed after the join's columns (LEFT shows ``a.c``, RIGHT
``b.c``).

A table function (``generate_series(1, t.a) WITH ORDINALITY AS g(x, n)``, with or without
LATERAL) may read the columns of the FROM items before it, as in PostgreSQL: the relations
joined so far (one empty row when it comes first) become ``Linear(rel, [FlatMap(call)])``,
the single input so far, and later items join with it. The conditions collected keep their
column positions, since the FlatMap appends its columns. ``repeat_row(n)`` likewise adds a
``Repeat`` step, and no columns. As the right side of a LEFT JOIN a table function may read
the left side too (``outer_joins.lateral_left_join``); the right side of a RIGHT or FULL
JOIN may not, and the left side of one may not be such an expansion of earlier FROM items.

A ``LATERAL (SELECT ...)`` item reads the FROM items before it as ``Outer`` references (the
subquery is bound with their scope around it, as a subquery in an expression is):
``ir.decorrelate.lateral`` joins the relations so far, under their conditions, with the
subquery evaluated on the distinct values of the columns it reads, and the result is the
single input so far (as a table function's expansion is). As the right side of a LEFT JOIN
it is left-joined with the left side in the same way; on the right of a RIGHT or FULL JOIN,
or as the first item, it is a plain subquery, which cannot read the left side.

Column positions are those of the FROM clause's whole row. A builder keeps its relations
(``inputs``, whose row starts at column ``base``: 0, or the first column of the right side
of an outer join, bound by a builder of its own) and the conditions of its items, each
tagged with the first input of the item it belongs to, so that an outer join takes exactly
its left item's relations and conditions. ``from_items`` reads the items as sqlglot writes
them, ``join_using`` binds USING and NATURAL conditions.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.decorrelate.lateral import lateral_join
from matview.ir.outer_joins import lateral_left_join, outer_join
from matview.ir.plans import UNIT, linear
from matview.ir.relation import Constant, Get, Join, Linear, Relation
from matview.ir.scalar import Call, Outer, Scalar, remap
from matview.ir.steps import Filter, FlatMap, Map, Repeat, Step
from matview.ir.subquery import rewrite_outer
from matview.ir.types import BIGINT, SqlType
from matview.sql import table_functions, temporal
from matview.sql.asof_join import asof
from matview.sql.coerce import TypedScalar
from matview.sql.context import Context
from matview.sql.dialect import Matview
from matview.sql.errors import SqlError, SqlSyntaxError, UnknownObjectError, UnsupportedError
from matview.sql.from_items import (
    column_aliases,
    item_alias,
    known_aliases,
    lateral_query,
    outer_side,
    rename,
    table_function,
)
from matview.sql.join_using import using_join
from matview.sql.names import normalize, read_name
from matview.sql.scalars import ExprBinder
from matview.sql.scope import FromItem, RangeVar, Scope
from matview.sql.statements import Query
from matview.sql.values import bind_values
from sqlglot import exp

_LATERAL = "a function in FROM can only read the FROM items before it"
"""Why a table function cannot read a FROM item (the default rule)."""


def bind_from(select: exp.Select, ctx: Context) -> tuple[Relation, Scope, list[Scalar]]:
    """The FROM clause of ``select``: the joined relation, its scope, and the join conditions.
    Without FROM, one empty row."""
    from_ = select.args.get("from_")
    if from_ is None:
        return UNIT, Scope((), (), ctx=ctx), []
    builder = _FromBuilder(ctx, known_aliases([from_.this, *(select.args.get("joins") or [])]))
    items = builder.join_list(from_.this, select.args.get("joins") or [])
    inputs = builder.inputs
    rel = inputs[0] if len(inputs) == 1 else Join(tuple(inputs), ())
    scope = Scope(tuple(items), tuple(builder.types), ctx=ctx)
    return rel, scope, [c for _, c in builder.conditions]


class _FromBuilder:
    """Accumulates the joined relations, their column types and the join conditions."""

    def __init__(self, ctx: Context, all_aliases: set[str]) -> None:
        self.ctx = ctx
        self.inputs: list[Relation] = []
        self.base = 0
        """The column of the FROM clause's row where the row of ``inputs`` starts."""
        self.types: list[SqlType] = []
        self.conditions: list[tuple[int, Scalar]] = []
        """Each join condition, with the first input of the item it belongs to."""
        self.aliases: set[str] = set()
        self.all_aliases = all_aliases
        self.merges = 0
        """How many times a table function has made the inputs so far one."""
        self.lateral_rule = _LATERAL

    def join_list(self, first: exp.Expr, joins: Sequence[exp.Join],
                  before: Sequence[FromItem] = ()) -> list[FromItem]:
        """The FROM items of ``first`` followed by ``joins`` (sqlglot's flat join list, where a
        join without kind or condition is a comma); ``before`` are the items to their left
        (which table functions may read)."""
        item, start = self._bound(first, before)
        items, starts = [item], [start]
        for join in joins:
            side = outer_side(join)
            hidden = frozenset(t.alias for i in [*before, *items[:-1]] for t in i.tables)
            if side is not None:
                items[-1], starts[-1] = self._outer_join(side, join, items[-1], starts[-1],
                                                         [*before, *items], hidden)
                continue
            right, right_start = self._bound(join.this, [*before, *items])
            if not (join.method == "NATURAL" or join.args.get("using")
                    or join.args.get("on") is not None or join.kind):
                items.append(right)
                starts.append(right_start)
                continue
            if right_start is None:
                starts[-1] = 0 if starts[-1] == 0 else None
            items[-1], conditions, _ = self._condition(join, items[-1], right, hidden, None)
            self.conditions.extend((starts[-1] or 0, c) for c in conditions)
        return items

    def _bound(self, node: exp.Expr, before: Sequence[FromItem]) -> tuple[FromItem, int | None]:
        """The FROM item ``node`` and its first input (None when a table function in it made
        it one input with the items before it)."""
        count, merges = len(self.inputs), self.merges
        item = self.item(node, before)
        return item, (count if self.merges == merges or count == 0 else None)

    def _outer_join(self, side: str, join: exp.Join, left: FromItem, start: int | None,
                    before: Sequence[FromItem], hidden: frozenset[str]
                    ) -> tuple[FromItem, int | None]:
        """The item ``left`` ``side`` JOIN ``join.this`` makes, and its first input; the
        relations of ``left`` (from input ``start``, or every input when None) become the
        outer join's. ``before`` are the items a table function on the right may read."""
        if start is None and side != "LEFT":
            raise UnsupportedError.at(
                f"{side} JOIN of a FROM item that a table function joined with the FROM items "
                "before it is not supported yet", join)
        if join.args.get("on") is None and not join.args.get("using") and (
                join.method != "NATURAL"):
            raise SqlSyntaxError.at(f"syntax error: {side} JOIN needs an ON or USING clause",
                                    join)
        function = table_function(join.this)
        if side == "LEFT" and lateral_query(join.this) is not None:
            at, left_rel = self.base, self._take(0)
            plan, right = self._lateral(join.this, before, at)
            item, on, computed = self._condition(join, left, right, hidden, side)
            joined = lateral_join(left_rel, plan, _shifted(on, at))
            start = 0 if start == 0 else None
        elif side == "LEFT" and function is not None and any(function[0].find_all(exp.Column)):
            at, left_rel = self.base, self._take(0)
            self.inputs = [left_rel]
            right = self.item(join.this, before)
            expanded = self.inputs.pop()
            item, on, computed = self._condition(join, left, right, hidden, side)
            joined = lateral_left_join(left_rel, expanded, _shifted(on, at))
            start = 0 if start == 0 else None
        else:
            right_side = self._right_side(side)
            right = right_side.item(join.this, ())
            item, on, computed = self._condition(join, left, right, hidden, side)
            at = self._column(start or 0)
            operands = self._take(start or 0), right_side._take(0), _shifted(on, at)
            joined = (outer_join(side, *operands) if side in ("LEFT", "RIGHT", "FULL") else
                      asof(join, side, *operands))
        if computed:
            joined = linear(joined, [Map(tuple(_shifted([c.expr for c in computed], at)))])
            self.types.extend(c.type for c in computed)
        self.inputs.append(joined)
        return item, start

    def _right_side(self, side: str) -> _FromBuilder:
        """A builder for the right side of an outer join, whose columns follow the row so
        far; it cannot read the left side."""
        builder = _FromBuilder(self.ctx, self.all_aliases)
        builder.types, builder.aliases, builder.base = self.types, self.aliases, len(self.types)
        builder.lateral_rule = (
            f"the right side of a {side} JOIN cannot read its left side" if side != "LEFT" else
            "only a table function that is the whole right side of a LEFT JOIN can read its "
            "left side")
        return builder

    def _column(self, first: int) -> int:
        """The column of the FROM clause's row where input ``first`` starts."""
        return self.base + sum(rel.arity for rel in self.inputs[:first])

    def _take(self, first: int) -> Relation:
        """Removes the inputs from ``first`` on and the conditions of their items: their
        join, filtered by those conditions, over its own columns."""
        at = self._column(first)
        inputs, self.inputs = self.inputs[first:], self.inputs[:first]
        taken = [c for tag, c in self.conditions if tag >= first]
        self.conditions = [(tag, c) for tag, c in self.conditions if tag < first]
        rel = inputs[0] if len(inputs) == 1 else Join(tuple(inputs), ())
        return linear(rel, [Filter(tuple(_shifted(taken, at)))] if taken else [])

    def _condition(self, join: exp.Join, left: FromItem, right: FromItem,
                   hidden: frozenset[str], side: str | None
                   ) -> tuple[FromItem, list[Scalar], list[TypedScalar]]:
        """The item ``left`` JOIN ``right`` makes (``side`` None: an inner join), the predicates
        of its ON, USING or NATURAL condition, and (FULL JOIN USING) the merged columns to
        compute after the row. ``hidden`` are the other FROM items, which ON cannot read."""
        using = join.args.get("using")
        if join.method == "NATURAL" or using:
            if join.method == "NATURAL":
                shared = {n for n, _ in right.columns}
                names = list(dict.fromkeys(n for n, _ in left.columns if n in shared))
            else:
                names = [normalize(ident) for ident in using]
            return using_join(left, right, names, join, side, self.types)
        item = FromItem(left.columns + right.columns, left.tables + right.tables)
        on = join.args.get("on")
        if on is None:
            return item, [], []
        table_functions.reject(on, "JOIN conditions")
        # an ON's subqueries stay in its predicates (a filter over the joined row for an
        # inner join, the matching condition of an outer join's lowering): DECORRELATE
        # rewrites them there
        binder = ExprBinder(Scope((item,), tuple(self.types), hidden,
                                  ctx=self.ctx),
                            "aggregate functions are not allowed in JOIN conditions")
        return item, temporal.conditions(binder, on, "JOIN/ON"), []

    def item(self, node: exp.Expr, before: Sequence[FromItem]) -> FromItem:
        """One FROM item: a relation, a subquery, a table function, or a parenthesized join;
        ``before`` are the items to its left."""
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            query = self._relation(read_name(node), node)
            return self._add(query, item_alias(node) or normalize(node.this), node)
        if isinstance(node, exp.Table) and node.args.get("rows_from"):
            raise UnsupportedError.at("ROWS FROM is not supported yet", node)
        function = table_function(node)
        if function is not None:
            return self._function(function[0], node, function[1], before)
        if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Table):
            return self._parenthesized(node, before)
        if isinstance(node, exp.Values):
            return self._add(bind_values(node), item_alias(node), node)
        lateral = lateral_query(node)
        if lateral is not None and self.inputs:
            at, left = self.base, self._take(0)
            plan, item = self._lateral(node, before, at)
            self.merges += 1
            self.inputs = [lateral_join(left, plan, None)]
            return item
        if isinstance(node, exp.Subquery) or lateral is not None:
            from matview.sql.query import subquery

            query = subquery(lateral or node.this, self.ctx, "a subquery in FROM")
            return self._add(query, item_alias(node), node)
        raise UnsupportedError.at(
            f"{node.sql(dialect=Matview)} is not supported in FROM yet", node)

    def _lateral(self, node: exp.Lateral, before: Sequence[FromItem], at: int
                 ) -> tuple[Relation, FromItem]:
        """The plan of LATERAL subquery ``node``, reading the columns of the items ``before``
        it (``Outer`` references of level 1 to a row starting at column ``at`` of the FROM
        clause's row), and the FROM item naming its columns."""
        visible = {t.alias for item in before for t in item.tables}
        scope = Scope(tuple(before), tuple(self.types), frozenset(self.all_aliases - visible))
        binder = ExprBinder(scope, "aggregate functions are not allowed in FROM")
        query = binder.correlated(node.this.this, self.ctx, "a LATERAL subquery")
        plan = query.plan if not at else rewrite_outer(
            query.plan, lambda ref, depth: Outer(ref.level, ref.index - at, ref.type)
            if ref.level == depth + 1 else ref)
        alias_node = node.args.get("alias")
        columns = [normalize(c) for c in alias_node.columns] if alias_node else []
        item = self._add_columns(query.column_names, plan.types, item_alias(node), node, columns)
        return plan, item

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
            count = table_functions.repeat_count(binder, found)
            step, names, types = Repeat(_shifted([count], self.base)[0]), (), ()
        else:
            calls = ([table_functions.TableCall("unnest", (a,), found.node) for a in found.args]
                     if found.name == "unnest" and len(found.args) > 1 else [found])
            bound = [table_functions.bind_call(binder, c) for c in calls]
            step = FlatMap(tuple(Call(b.call.func, tuple(_shifted(b.call.args, self.base)))
                                 for b in bound), ordinality)
            names = tuple(n for b in bound for n in b.names)
            types = tuple(t for b in bound for t in b.types)
            alias_name = item_alias(node)
            if alias_name is not None and len(bound) == 1 and bound[0].scalar:
                names = (alias_name,)
            if ordinality:
                names, types = names + ("ordinality",), types + (BIGINT,)
        rel = self.inputs[0] if len(self.inputs) == 1 else (
            Join(tuple(self.inputs), ()) if self.inputs else UNIT)
        if self.inputs:
            self.merges += 1
            self.conditions = [(0, c) for _, c in self.conditions]
        self.inputs = [Linear(rel, (step,))]
        return self._add_columns(names, types, item_alias(node) or found.name, node,
                                 column_aliases(node, func))

    def _check_references(self, func: exp.Expr, before: Sequence[FromItem]) -> None:
        """A table function may only read the FROM items before it."""
        visible = {t.alias for item in before for t in item.tables}
        for column in func.find_all(exp.Column):
            qualifier = column.args.get("table")
            if qualifier is None:
                continue
            name = normalize(qualifier)
            if name not in visible and name in self.all_aliases:
                raise SqlError.at(f'invalid reference to FROM-clause entry for table "{name}": '
                                  f"{self.lateral_rule}", column)

    def _relation(self, name: str, node: exp.Table) -> Query:
        if name in self.ctx.ctes:
            return self.ctx.ctes[name]
        item = self.ctx.catalog.lookup(name)
        if item is None:
            raise UnknownObjectError.at(f'relation "{name}" does not exist', node)
        if item.kind == "system catalog":
            return Query(Constant(item.rows, tuple(f.type for f in item.fields)),
                         tuple(f.name for f in item.fields))
        if item.kind == "view":
            from matview.sql.query import bind_view

            return bind_view(item, self.ctx)
        return Query(Get(item.name, item.fields, item.known_keys()),
                     tuple(f.name for f in item.fields))

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


def _shifted(exprs: Sequence[Scalar], at: int) -> list[Scalar]:
    """``exprs`` over the FROM clause's row, rewritten over a row that starts at column ``at``."""
    return [remap(e, lambda c: c - at) for e in exprs] if at else list(exprs)


