"""GROUP BY and aggregates: the keys and aggregate calls of a ``Reduce``, and the binding of
the expressions evaluated on its output (select list, HAVING, ORDER BY).

An aggregate is bound by its entry in ``ir/aggregates.py``: a ``Reduce`` computes count,
sum, min and max; the others (avg, bool_and, bool_or, the variances and standard deviations)
become an expression above the ``Reduce`` over the counts and sums it computes (``avg(x)`` is
``CAST(sum(x) AS DOUBLE) / CAST(NULLIF(count(x), 0) AS DOUBLE)``). ``f(x) FILTER (WHERE c)``
is ``f(CASE WHEN c THEN x END)`` (``count(*)``'s ``x`` is TRUE).

``f(DISTINCT x)`` (those whose value over distinct values differs: not min, max, bool_and,
bool_or) aggregates each group's
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

from matview.ir import aggregates
from matview.ir.plans import compute
from matview.ir.relation import Aggregate, Reduce, Relation, Union
from matview.ir.scalar import Case, Col, Lit, Scalar, type_of
from matview.ir.types import BOOLEAN
from matview.sql import calls
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
        self.filter = ExprBinder(scope, "aggregate functions are not allowed in FILTER")
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

    def aggregate(self, node: exp.Expr) -> TypedScalar:
        """The aggregate call ``node`` (an ``exp.Filter`` around it when it has a FILTER
        clause): a registered aggregate (``ir/aggregates.py``) of its argument, which under
        ``FILTER (WHERE c)`` is ``CASE WHEN c THEN x END`` (``count(*)``'s ``x`` is TRUE):
        every aggregate ignores NULL arguments."""
        condition = None
        if isinstance(node, exp.Filter):
            calls.check_call(node.this)
            where = node.expression
            condition = self.filter.predicate(where.this, "FILTER")
            node = node.this
        assert isinstance(node, AGGREGATES)
        name, argument = calls.function_name(node), node.this
        fn = aggregates.lookup(name)
        distinct = isinstance(argument, exp.Distinct)
        if distinct:
            if len(argument.expressions) != 1:
                raise UnsupportedError.at(
                    f"{name}(DISTINCT ...) of several arguments is not supported", node)
            if not fn.distinct:
                raise UnsupportedError.at(f"{name}(DISTINCT ...) is not supported yet", node)
            argument = argument.expressions[0]
            distinct = not fn.same_over_distinct
        if isinstance(node, exp.Count) and (argument is None or isinstance(argument, exp.Star)):
            if condition is None:
                return self._add(Aggregate("count", None), False)
            arg = TypedScalar(Lit(True, BOOLEAN), BOOLEAN)
        else:
            arg = self.inner.bind(argument)
        if not fn.accepts(arg.type):
            raise SqlTypeError.at(f"function {name}({arg.type}) does not exist", node)
        if condition is not None:
            arg = TypedScalar(Case(((condition.expr, arg.expr),), Lit(None, arg.type)),
                              arg.type)
        if fn.derive is None:
            return self._add(Aggregate(fn.name, arg.expr), distinct)

        def add(func: str, expr: Scalar | None) -> Scalar:
            return self._add(Aggregate(func, expr), distinct).expr

        return TypedScalar(fn.derive(arg.expr, arg.type, add), fn.returns(arg.type))

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
