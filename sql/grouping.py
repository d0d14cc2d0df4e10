"""GROUP BY and aggregates: the keys and aggregate calls of a ``Reduce``, and the binding of
the expressions evaluated on its output (select list, HAVING, ORDER BY).

``avg(x)`` is not a ``Reduce`` aggregate: it becomes ``sum(x)`` and ``count(x)`` there and
``CAST(sum AS DOUBLE) / CAST(NULLIF(count, 0) AS DOUBLE)`` above it.

``f(DISTINCT x)`` (count, sum, avg; min and max ignore DISTINCT) aggregates each group's
distinct values of ``x``. With keys ``K`` over input ``R``, distinct arguments ``x_1..x_n``
and plain arguments ``y_1..y_p``, one ``Reduce`` over a union computes every aggregate:

    Reduce_K(π_{K, TRUE, y, NULL..}(R) ⊎ ⊎_i π_{K, NULL, NULL.., x_i at i}(Reduce_{K, x_i}(R)))

``count(*)`` counts the first part's ``TRUE`` marker, a plain ``f(y_j)`` reads ``y_j``'s
column and ``f(DISTINCT x_i)`` reads ``x_i``'s, which holds each group's distinct values of
``x_i`` once (the NULLs of the other parts are ignored by every aggregate). Every group of
the distinct parts is a group of ``R``, so the groups are ``R``'s and GROUP BY's NULL keys
need no join.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.plans import compute
from matview.ir.relation import Aggregate, Reduce, Relation, Union
from matview.ir.scalar import Call, Cast, Col, Lit, Scalar, type_of
from matview.ir.types import BIGINT, BOOLEAN, DOUBLE, Kind
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
        self.aggregates: list[tuple[Aggregate, bool]] = []
        """The aggregates of the ``Reduce``, each with whether it reads distinct values."""

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
        func, argument = node.key, node.this
        distinct = isinstance(argument, exp.Distinct)
        if distinct:
            if len(argument.expressions) != 1:
                raise UnsupportedError.at(
                    f"{func}(DISTINCT ...) of several arguments is not supported", node)
            argument = argument.expressions[0]
            distinct = func not in ("min", "max")  # the same over distinct values
        if isinstance(node, exp.Count) and (argument is None or isinstance(argument, exp.Star)):
            return self._add(Aggregate("count", None), False)
        arg = self.inner.bind(argument)
        untyped = func in ("min", "max") and arg.type.kind is Kind.NULL
        if untyped or func in ("sum", "avg") and not arg.type.is_numeric:
            raise SqlTypeError.at(f"function {func}({arg.type}) does not exist", node)
        if func != "avg":
            return self._add(Aggregate(func, arg.expr), distinct)
        total = Cast(self._add(Aggregate("sum", arg.expr), distinct).expr, DOUBLE)
        count = Call("nullif", (self._add(Aggregate("count", arg.expr), distinct).expr,
                                Lit(0, BIGINT)))
        return TypedScalar(Call("div", (total, Cast(count, DOUBLE))), DOUBLE)

    def _add(self, aggregate: Aggregate, distinct: bool) -> TypedScalar:
        if (aggregate, distinct) not in self.aggregates:
            self.aggregates.append((aggregate, distinct))
        position = len(self.keys) + self.aggregates.index((aggregate, distinct))
        return TypedScalar(Col(position), aggregate.type(self.scope.types))

    def reduce(self, rel: Relation) -> Relation:
        """The ``Reduce`` of ``rel`` by the keys computing the aggregates bound so far (over a
        union when some read distinct values: see the module docstring)."""
        keys = tuple(self.keys)
        if not any(distinct for _, distinct in self.aggregates):
            return Reduce(rel, keys, tuple(a for a, _ in self.aggregates))
        types = rel.types
        plain = _unique([a.expr for a, d in self.aggregates if not d and a.expr is not None])
        spread = _unique([a.expr for a, d in self.aggregates if d and a.expr is not None])
        width = len(keys) + 1 + len(plain)
        nulls = [Lit(None, type_of(e, types)) for e in (*plain, *spread)]
        parts: list[Relation] = [compute(rel, [*keys, Lit(True, BOOLEAN), *plain,
                                              *nulls[len(plain):]])]
        for i, x in enumerate(spread):
            values = Reduce(rel, (*keys, x), ())
            row: list[Scalar] = [Col(k) for k in range(len(keys))]
            row += [Lit(None, BOOLEAN), *nulls[:len(plain) + i], Col(len(keys)),
                    *nulls[len(plain) + i + 1:]]
            parts.append(compute(values, row))

        def read(aggregate: Aggregate, distinct: bool) -> Aggregate:
            if aggregate.expr is None:
                return Aggregate("count", Col(len(keys)))
            at = width + spread.index(aggregate.expr) if distinct else (
                len(keys) + 1 + plain.index(aggregate.expr))
            return Aggregate(aggregate.func, Col(at))

        return Reduce(Union(tuple(parts)), tuple(Col(k) for k in range(len(keys))),
                      tuple(read(a, d) for a, d in self.aggregates))


def _unique(exprs: Sequence[Scalar]) -> list[Scalar]:
    """``exprs`` without repeats, in order."""
    return list(dict.fromkeys(exprs))
