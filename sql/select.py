"""One SELECT block lowered to a plan.

Without aggregation: ``Linear(from) [Filter(ON and WHERE conditions), Map, Project]``, with
a ``FlatMap`` after the filter when the select list calls table functions. The ON conditions
are the inner joins'; an outer join's is part of ``from`` (``from_clause``), below WHERE,
which so sees the NULLs of its padded rows. With GROUP BY,
aggregates or HAVING: ``Linear(from) [Filter] -> Reduce(keys, aggregates) -> Linear
[Filter(HAVING), Map, Project]``. DISTINCT adds a ``Reduce`` over all output columns.
No output column may have a type that only exists in expressions (MZ_TIMESTAMP, but in a
one-shot query).
"""

from __future__ import annotations

from dataclasses import dataclass

from matview.ir.plans import compute
from matview.ir.relation import Relation
from matview.ir.scalar import Call, Col, Lit, Scalar
from matview.ir.types import BIGINT, Kind
from matview.sql import interval_keys, table_functions, temporal
from matview.sql.coerce import TypedScalar
from matview.sql.context import Context
from matview.sql.datatypes import storable
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.from_clause import bind_from
from matview.sql.grouping import GroupedBinder, group_keys
from matview.sql.names import output_name
from matview.sql.order import limit_offset, order_by
from matview.sql.scalars import SUBQUERIES, ExprBinder
from matview.sql.scope import Scope
from matview.sql.statement_time import one_shot
from matview.sql.statements import Query
from matview.sql.windows import SelectListWindows, calls_placed
from sqlglot import exp


@dataclass(frozen=True)
class SelectItem:
    """An output column: ``node`` is its expression, or for a column of ``*`` the star, with
    ``column`` the FROM row's column it shows."""

    name: str
    node: exp.Expr
    column: int | None = None

    def bind(self, binder: ExprBinder) -> TypedScalar:
        if self.column is not None:
            return binder.column(self.column, self.node)
        return binder.bind(self.node)


def bind_select(select: exp.Select, ctx: Context) -> Query:
    """The query ``select`` denotes, including its ORDER BY, LIMIT and OFFSET."""
    distinct = select.args.get("distinct")
    on = None if distinct is None else distinct.args.get("on")
    rel, scope, conditions = bind_from(select, ctx)
    where = select.args.get("where")
    group, having, order = (select.args.get(k) for k in ("group", "having", "order"))
    for clause, word in ((where, "WHERE"), (group, "GROUP BY"), (having, "HAVING")):
        table_functions.reject(clause, word)
    if where is not None:
        binder = ExprBinder(scope, "aggregate functions are not allowed in WHERE")
        conditions.extend(temporal.conditions(binder, where.this, "WHERE"))
    items = _select_items(select, scope)
    nodes = [item.node for item in items] + ([having] if having else []) + (
        [o.this for o in order.expressions] if order else [])
    _reject_subqueries(group, nodes)
    grouped = group is not None or having is not None or any(_own_aggregates(n) for n in nodes)
    srf = next((c for i in items for c in table_functions.table_calls(i.node)), None)
    calls = table_functions.SelectListCalls(scope, rel.arity)
    if srf is not None and (grouped or distinct is not None):
        raise UnsupportedError.at("set-returning functions in the select list are not "
                                  "supported with GROUP BY, aggregates or DISTINCT yet",
                                  srf.node)
    if grouped:
        keys, sets = group_keys(group, scope, [(i.name, i.node) for i in items]) if group \
            else ([], None)
        binder = GroupedBinder(scope, keys, sets)
    else:
        binder = ExprBinder(scope, "aggregate functions are not allowed here",
                            table_calls=calls)
    windows = binder.windows = SelectListWindows()
    values = [item.bind(binder) for item in items]
    names = tuple(item.name for item in items)
    _check_output_types(items, values)
    exprs = [v.expr for v in values]

    hidden: list[Scalar] = []

    def match(node: exp.Expr) -> int | None:
        """The output column sorting by ``node``: a select item's, or one added to sort by
        (not with DISTINCT, whose rows are the select list's)."""
        expr = binder.bind(node).expr
        if expr in exprs:
            return exprs.index(expr)
        if distinct is not None:
            raise SqlError.at("for SELECT DISTINCT, ORDER BY expressions must appear in "
                              "select list", node)
        if expr not in hidden:
            hidden.append(expr)
        return len(exprs) + hidden.index(expr)

    order_keys = order_by(order, names, exprs, match)
    exprs = exprs + hidden
    kept = None if on is None else _distinct_on(on, binder, windows, exprs, order_keys, order)
    binder.windows = None  # not in HAVING
    if isinstance(binder, GroupedBinder):
        having_pred = [binder.predicate(having.this, "HAVING").expr] if having else []
        row = binder.reduce(compute(rel, [Col(i) for i in range(rel.arity)], conditions))
        conditions, step = having_pred, None
    else:
        row, step = rel, calls.step()
    if windows.calls:
        if step is not None:
            raise UnsupportedError.at("set-returning functions in the select list are not "
                                      "supported with window functions yet", srf.node)
        row, placed = windows.plan(compute(row, [Col(i) for i in range(row.arity)],
                                           conditions))
        exprs, conditions = [calls_placed(e, placed) for e in exprs], []
        if kept is not None:
            conditions = [Call("eq", (calls_placed(kept, placed), Lit(1, BIGINT)))]
    plan: Relation = compute(row, exprs, conditions, step)
    if distinct is not None and on is None:
        plan = interval_keys.distinct(plan, plan.types)
    limit, offset = limit_offset(select)
    return Query(plan, names, order_keys, limit, offset, hidden=len(hidden))


def _distinct_on(on: exp.Expr, binder: ExprBinder, windows: SelectListWindows,
                 exprs: list[Scalar], order_keys: tuple[tuple[int, bool, bool], ...],
                 order: exp.Order | None) -> Scalar:
    """``SELECT DISTINCT ON (e, ...)``: the column numbering each row within its group of
    equal ``e`` (intervals: of equal length) in the ORDER BY (then every column), whose
    rows numbered 1 are kept. As in PostgreSQL, the leftmost ORDER BY expressions must be
    DISTINCT ON expressions."""
    items = on.expressions if isinstance(on, exp.Tuple) else [on]
    bound = [binder.bind(e) for e in items]
    keys = [b.expr for b in bound]
    for (column, _, _), item in zip(order_keys[:len(keys)], order.expressions if order else []):
        if exprs[column] not in keys:
            raise SqlError.at("SELECT DISTINCT ON expressions must match initial ORDER BY "
                              "expressions", item)
    sort = [(exprs[c], d, n) for c, d, n in order_keys]
    partition = [interval_keys.grouped(b.expr, b.type) for b in bound]
    return windows.row_number(binder, partition, sort).expr


def _own_aggregates(node: exp.Expr) -> list[exp.Expr]:
    """The aggregate calls in ``node`` outside its subqueries (which aggregate their own
    rows)."""
    if isinstance(node, SUBQUERIES):
        return []
    if isinstance(node, exp.In) and node.args.get("query") is not None:
        return _own_aggregates(node.this)
    if isinstance(node, exp.Window):  # its function is the window's, its arguments ours
        func = node.this.this if isinstance(node.this, exp.Filter) else node.this
        parts = [*func.iter_expressions(), *(node.args.get("partition_by") or [])]
        if isinstance(node.this, exp.Filter):
            parts.append(node.this.expression)
        if node.args.get("order") is not None:
            parts.append(node.args["order"])
        return [a for part in parts for a in _own_aggregates(part)]
    own = [node] if isinstance(node, (exp.AggFunc, exp.Filter)) else []
    return own + [a for child in node.iter_expressions() for a in _own_aggregates(child)]


def _reject_subqueries(group: exp.Group | None, nodes: list[exp.Expr]) -> None:
    """Subqueries are not supported in GROUP BY or in an aggregate's argument yet."""
    places = [(group, "GROUP BY")] + [
        (call, "aggregate arguments") for n in nodes for call in _own_aggregates(n)]
    for place, word in places:
        found = place.find(*SUBQUERIES) if place is not None else None
        if found is not None:
            raise UnsupportedError.at(f"subqueries in {word} are not supported yet", found)


def _check_output_types(items: list[SelectItem], values: list[TypedScalar]) -> None:
    for item, value in zip(items, values, strict=True):
        if value.type.kind is Kind.MZ_TIMESTAMP and one_shot():
            continue  # mz_now(), the time a one-shot query reads at
        if not storable(value.type):
            raise SqlTypeError.at(
                f'column "{item.name}" has type {value.type}, which a query cannot return: '
                "mz_now() is a value only in one-shot queries and temporal filters", item.node)


def _select_items(select: exp.Select, scope: Scope) -> list[SelectItem]:
    items = []
    for node in select.expressions:
        if isinstance(node, exp.Star) or (
            isinstance(node, exp.Column) and isinstance(node.this, exp.Star)
        ):
            qualifier = node.args.get("table") if isinstance(node, exp.Column) else None
            columns = scope.star(qualifier)
            if not scope.items:
                raise SqlError.at("SELECT * with no tables specified is not valid", node)
            items.extend(SelectItem(name, node, index) for name, index in columns)
        else:
            expr = node.this if isinstance(node, exp.Alias) else node
            items.append(SelectItem(output_name(node), expr))
    return items
