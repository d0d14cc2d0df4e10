"""GROUP BY and aggregates: the keys and aggregate calls of a ``Reduce``, and the binding of
the expressions evaluated on its output (select list, HAVING, ORDER BY).

``avg(x)`` is not a ``Reduce`` aggregate: it becomes ``sum(x)`` and ``count(x)`` there and
``CAST(sum AS DOUBLE) / CAST(NULLIF(count, 0) AS DOUBLE)`` above it.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.relation import Aggregate
from matview.ir.scalar import Call, Cast, Col, Lit
from matview.ir.types import BIGINT, DOUBLE, Kind
from matview.sql.coerce import TypedScalar
from matview.sql.errors import SqlError, SqlTypeError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize
from matview.sql.scalars import AGGREGATES, ExprBinder
from matview.sql.scope import Scope
from sqlglot import exp


def has_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` contains an aggregate function call."""
    return any(isinstance(sub, exp.AggFunc) for sub in node.walk())


def group_keys(
    group: exp.Group, scope: Scope, select_items: Sequence[tuple[str, exp.Expr]]
) -> list[TypedScalar]:
    """The distinct GROUP BY keys over the FROM clause's row. As in PostgreSQL an item may be
    an expression, a select-list position, or the name of a select item that is no input
    column (``()`` is no key); ``select_items`` are the select list's (name, expression)
    pairs."""
    binder = ExprBinder(scope, "aggregate functions are not allowed in GROUP BY")
    keys: list[TypedScalar] = []
    for item in group.expressions:
        if isinstance(item, exp.Tuple) and not item.expressions:
            continue
        key = binder.bind(_select_item(item, scope, select_items))
        if key not in keys:
            keys.append(key)
    return keys


def _select_item(
    item: exp.Expr, scope: Scope, select_items: Sequence[tuple[str, exp.Expr]]
) -> exp.Expr:
    if isinstance(item, exp.Literal) and item.is_int:
        position = int(item.this)
        if not 1 <= position <= len(select_items):
            raise UnknownObjectError.at(
                f"GROUP BY position {position} is not in select list", item)
        return select_items[position - 1][1]
    if isinstance(item, exp.Column) and not item.args.get("table"):
        try:
            scope.resolve(item)
        except UnknownObjectError:
            name = normalize(item.this)
            matches = [node for n, node in select_items if n == name]
            if len(matches) == 1:
                return matches[0]
            raise
    return item


class GroupedBinder(ExprBinder):
    """Binds expressions evaluated on a ``Reduce``'s output: a row of the ``keys`` then of the
    aggregates collected in ``aggregates`` while binding."""

    def __init__(self, scope: Scope, keys: Sequence[TypedScalar]) -> None:
        super().__init__(scope, "aggregate function calls cannot be nested")
        self.keys = [k.expr for k in keys]
        self.key_types = [k.type for k in keys]
        self.inner = ExprBinder(scope, "aggregate function calls cannot be nested")
        self.aggregates: list[Aggregate] = []

    def bind(self, node: exp.Expr) -> TypedScalar:
        if not has_aggregate(node):
            inner = self.inner.bind(node)
            if inner.expr in self.keys:
                return TypedScalar(Col(self.keys.index(inner.expr)), inner.type)
        return super().bind(node)

    def column(self, index: int, node: exp.Expr) -> TypedScalar:
        if Col(index) in self.keys:
            position = self.keys.index(Col(index))
            return TypedScalar(Col(position), self.key_types[position])
        raise SqlError.at(
            f'column "{self.scope.qualified_name(index)}" must appear in the GROUP BY clause '
            "or be used in an aggregate function", node)

    def aggregate(self, node: exp.AggFunc) -> TypedScalar:
        assert isinstance(node, AGGREGATES)
        func = node.key
        if isinstance(node.this, exp.Distinct):
            raise UnsupportedError.at(f"{func}(DISTINCT ...) is not supported yet", node)
        if isinstance(node, exp.Count) and (node.this is None or isinstance(node.this, exp.Star)):
            return self._add(Aggregate("count", None))
        arg = self.inner.bind(node.this)
        untyped = func in ("min", "max") and arg.type.kind is Kind.NULL
        if untyped or func in ("sum", "avg") and not arg.type.is_numeric:
            raise SqlTypeError.at(f"function {func}({arg.type}) does not exist", node)
        if func != "avg":
            return self._add(Aggregate(func, arg.expr))
        total = Cast(self._add(Aggregate("sum", arg.expr)).expr, DOUBLE)
        count = Call("nullif", (self._add(Aggregate("count", arg.expr)).expr, Lit(0, BIGINT)))
        return TypedScalar(Call("div", (total, Cast(count, DOUBLE))), DOUBLE)

    def _add(self, aggregate: Aggregate) -> TypedScalar:
        if aggregate not in self.aggregates:
            self.aggregates.append(aggregate)
        position = len(self.keys) + self.aggregates.index(aggregate)
        return TypedScalar(Col(position), aggregate.type(self.scope.types))
