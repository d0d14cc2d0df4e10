"""One SELECT block lowered to a plan.

Without aggregation: ``Linear(from) [Filter(ON and WHERE conditions), Map, Project]``. With
GROUP BY, aggregates or HAVING: ``Linear(from) [Filter] -> Reduce(keys, aggregates) ->
Linear [Filter(HAVING), Map, Project]``. DISTINCT adds a ``Reduce`` over all output columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from matview.ir.relation import Reduce, Relation
from matview.ir.scalar import Col
from matview.sql.coerce import TypedScalar
from matview.sql.context import Context
from matview.sql.errors import SqlError, UnsupportedError
from matview.sql.from_clause import bind_from
from matview.sql.grouping import GroupedBinder, group_keys, has_aggregate
from matview.sql.names import output_name
from matview.sql.order import limit_offset, order_by
from matview.sql.plans import compute
from matview.sql.scalars import ExprBinder
from matview.sql.scope import Scope
from matview.sql.statements import Query
from sqlglot import exp

_UNSUPPORTED_CLAUSES = {
    "laterals": "LATERAL VIEW", "qualify": "QUALIFY", "windows": "WINDOW", "into": "SELECT INTO",
    "locks": "FOR UPDATE", "sample": "TABLESAMPLE", "connect": "CONNECT BY",
}


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
    for arg, word in _UNSUPPORTED_CLAUSES.items():
        if select.args.get(arg):
            raise UnsupportedError.at(f"{word} is not supported", select.args[arg])
    distinct = select.args.get("distinct")
    if distinct is not None and distinct.args.get("on"):
        raise UnsupportedError.at("SELECT DISTINCT ON is not supported yet", distinct)
    rel, scope, conditions = bind_from(select, ctx)
    where = select.args.get("where")
    if where is not None:
        binder = ExprBinder(scope, "aggregate functions are not allowed in WHERE")
        conditions.append(binder.predicate(where.this, "WHERE").expr)
    items = _select_items(select, scope)
    group, having, order = (select.args.get(k) for k in ("group", "having", "order"))
    nodes = [item.node for item in items] + ([having] if having else []) + (
        [o.this for o in order.expressions] if order else [])
    if group is not None or having is not None or any(has_aggregate(n) for n in nodes):
        keys = group_keys(group, scope, [(i.name, i.node) for i in items]) if group else []
        binder = GroupedBinder(scope, keys)
    else:
        binder = ExprBinder(scope, "aggregate functions are not allowed here")
    values = [item.bind(binder) for item in items]
    names = tuple(item.name for item in items)
    exprs = [v.expr for v in values]

    def match(node: exp.Expr) -> int | None:
        expr = binder.bind(node).expr
        return exprs.index(expr) if expr in exprs else None

    order_keys = order_by(order, names, exprs, match)
    if isinstance(binder, GroupedBinder):
        having_pred = [binder.predicate(having.this, "HAVING").expr] if having else []
        grouped = Reduce(compute(rel, [Col(i) for i in range(rel.arity)], conditions),
                         tuple(binder.keys), tuple(binder.aggregates))
        plan: Relation = compute(grouped, exprs, having_pred)
    else:
        plan = compute(rel, exprs, conditions)
    if distinct is not None:
        plan = Reduce(plan, tuple(Col(i) for i in range(len(exprs))), ())
    limit, offset = limit_offset(select)
    return Query(plan, names, order_keys, limit, offset)


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
