"""GROUP BY and aggregates: the keys and aggregate calls of a ``Reduce``, and the binding of
the expressions evaluated on its output (select list, HAVING, ORDER BY).

An aggregate is bound by its entry in ``ir/aggregates.py``: a ``Reduce`` computes count,
sum, min and max; the others (avg, bool_and, bool_or, the variances and standard deviations)
become an expression above the ``Reduce`` over the counts and sums it computes (``avg(x)`` is
``CAST(sum(x) AS DOUBLE) / CAST(NULLIF(count(x), 0) AS DOUBLE)``; ``sum`` and ``avg`` of
intervals are over the sums of their fields: ``interval_keys.aggregated``).
``f(x) FILTER (WHERE c)`` is ``f(CASE WHEN c THEN x END)`` (``count(*)``'s ``x`` is TRUE).

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

from collections.abc import Callable, Sequence

from matview.ir import aggregates
from matview.ir.aggregate_call import Aggregate, OrderedScalar
from matview.ir.plans import compute
from matview.ir.relation import Reduce, Relation, Union
from matview.ir.scalar import Call, Case, Col, Lit, Scalar, type_of
from matview.ir.types import BIGINT, BOOLEAN, INT, INTERVAL, JSONB, NUMERIC_MAX, Kind, SqlType
from matview.sql import calls, interval_keys
from matview.sql.coerce import TypedScalar
from matview.sql.errors import SqlError, SqlTypeError, UnknownObjectError, UnsupportedError
from matview.sql.names import normalize
from matview.sql.scalars import AGGREGATES, ExprBinder
from matview.sql.scope import Scope
from sqlglot import exp


def has_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` contains an aggregate function call."""
    return any(isinstance(sub, exp.AggFunc) for sub in node.walk())


MAX_GROUPING_SETS = 4096
"""As PostgreSQL: more grouping sets than this are refused."""


def group_keys(
    group: exp.Group, scope: Scope, select_items: Sequence[tuple[str, exp.Expr]]
) -> tuple[list[TypedScalar], list[tuple[int, ...]] | None]:
    """The distinct GROUP BY keys over the FROM clause's row and, when the clause has
    ``ROLLUP``, ``CUBE`` or ``GROUPING SETS``, its grouping sets as positions among the keys
    (None: one set of every key). As in PostgreSQL a key may be an expression, a
    select-list position, or the name of a select item that is no input column (``()`` is
    no key); ``select_items`` are the select list's (name, expression) pairs. The sets are
    the product of the items' choices: a key is in every set, ``ROLLUP (a, b)`` chooses
    ``(a, b), (a), ()``, ``CUBE`` every subset, ``GROUPING SETS`` its listed sets."""
    binder = ExprBinder(scope, "aggregate functions are not allowed in GROUP BY")
    keys: list[TypedScalar] = []

    def position(item: exp.Expr) -> int:
        key = binder.bind(_select_item(item, scope, select_items))
        if key not in keys:
            keys.append(key)
        return keys.index(key)

    sets: list[tuple[int, ...]] = [()]
    for item in group.expressions:
        product = [(*s, *c) for s in sets for c in _choices(item, position)]
        if len(product) > MAX_GROUPING_SETS:
            raise SqlError.at(f"too many grouping sets present (maximum {MAX_GROUPING_SETS})",
                              item)
        sets = product
    if not any(isinstance(i, (exp.Rollup, exp.Cube, exp.GroupingSets))
               for i in group.expressions):
        return keys, None  # GROUP BY DISTINCT of one set is GROUP BY
    if group.args.get("all") is False:
        raise UnsupportedError.at("GROUP BY DISTINCT with grouping sets is not supported yet",
                                  group)
    return keys, [tuple(dict.fromkeys(s)) for s in sets]


def _choices(item: exp.Expr, position: Callable[[exp.Expr], int]) -> list[tuple[int, ...]]:
    """The key positions each grouping set may take from GROUP BY ``item``."""
    if isinstance(item, exp.Rollup):
        parts = [_group_of(e, position) for e in item.expressions]
        return [tuple(p for part in parts[:n] for p in part)
                for n in range(len(parts), -1, -1)]
    if isinstance(item, exp.Cube):
        parts = [_group_of(e, position) for e in item.expressions]
        return [tuple(p for i, part in enumerate(parts) if mask >> i & 1 for p in part)
                for mask in range((1 << len(parts)) - 1, -1, -1)]
    if isinstance(item, exp.GroupingSets):
        return [c for e in item.expressions for c in (
            _choices(e, position) if isinstance(e, (exp.Rollup, exp.Cube, exp.GroupingSets))
            else [_group_of(e, position)])]
    return [_group_of(item, position)]


def _group_of(item: exp.Expr, position: Callable[[exp.Expr], int]) -> tuple[int, ...]:
    """The key positions of one element: ``(a, b)`` several, ``()`` none."""
    if isinstance(item, exp.Tuple):
        return tuple(position(e) for e in item.expressions)
    if isinstance(item, exp.Paren):
        return _group_of(item.this, position)
    return (position(item),)


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
    aggregates collected in ``aggregates`` while binding. With grouping ``sets`` (positions
    among the keys) the row is the keys (NULL where its set has none), the set's index
    (BIGINT, which ``grouping()`` reads), then the aggregates: ``reduce`` unites one
    ``Reduce`` per set."""

    def __init__(self, scope: Scope, keys: Sequence[TypedScalar],
                 sets: Sequence[tuple[int, ...]] | None = None) -> None:
        super().__init__(scope, "aggregate function calls cannot be nested")
        self.keys = [k.expr for k in keys]
        self.key_types = [k.type for k in keys]
        self.sets = None if sets is None else list(sets)
        self.width = len(self.keys) + (0 if sets is None else 1)
        """Columns before the aggregates."""
        self.inner = ExprBinder(scope, "aggregate function calls cannot be nested")
        self.filter = ExprBinder(scope, "aggregate functions are not allowed in FILTER")
        self.aggregates: list[tuple[Aggregate, bool]] = []
        """The aggregates of the ``Reduce``, each with whether it reads distinct values."""

    def row_types(self) -> list[SqlType]:
        """The keys' types, the grouping set's index, the aggregates' types."""
        sets = [] if self.sets is None else [BIGINT]
        return [*map(interval_keys.grouped_type, self.key_types), *sets,
                *(a.type(self.scope.types) for a, _ in self.aggregates)]

    def bind(self, node: exp.Expr) -> TypedScalar:
        if not has_aggregate(node) and node.find(exp.Window) is None:
            # grouping() is an aggregate call to sqlglot
            inner = self.inner.bind(node)
            if inner.expr in self.keys:
                return self._key(self.keys.index(inner.expr))
        return super().bind(node)

    def _key(self, position: int) -> TypedScalar:
        """The value of GROUP BY key ``position`` in its group (an interval's: the smallest
        of the group's values, ``interval_keys``)."""
        key_type = self.key_types[position]
        if key_type != INTERVAL:
            return TypedScalar(Col(position), key_type)
        smallest = self._add(Aggregate("min", self.keys[position]), False).expr
        return TypedScalar(interval_keys.chosen(position, smallest), key_type)

    def column(self, index: int, node: exp.Expr) -> TypedScalar:
        if Col(index) in self.keys:
            return self._key(self.keys.index(Col(index)))
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
        order: tuple[OrderedScalar, ...] = ()
        if isinstance(argument, exp.Order):  # f(x ORDER BY ...): only the ordered ones read it
            if fn.ordered:
                order = tuple((self.inner.bind(o.this).expr, bool(o.args.get("desc")),
                               bool(o.args.get("nulls_first"))) for o in argument.expressions)
            argument = argument.this
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
        elif fn.name == "array_agg":  # aggregates ARRAY[x] (see ir/aggregates.py)
            arg = self.inner.bind(exp.Array(expressions=[argument.copy()]))
        elif fn.name == "jsonb_agg":  # aggregates coalesce(to_jsonb(x), 'null')
            json = calls.to_jsonb(self.inner.bind(argument), node)
            arg = TypedScalar(Call("coalesce", (json.expr, Lit("null", JSONB))), JSONB)
        else:
            arg = self.inner.bind(argument)
        of_intervals = arg.type == INTERVAL and fn.name in interval_keys.AGGREGATES
        if of_intervals and distinct:
            raise UnsupportedError.at(f"{name}(DISTINCT interval) is not supported yet", node)
        if not (fn.accepts(arg.type) or of_intervals):
            raise SqlTypeError.at(f"function {name}({arg.type}) does not exist", node)
        if condition is not None:
            arg = TypedScalar(Case(((condition.expr, arg.expr),), Lit(None, arg.type)),
                              arg.type)
        if arg.type == INTERVAL and distinct:  # equal lengths are one value
            arg = TypedScalar(interval_keys.grouped(arg.expr, arg.type), NUMERIC_MAX)

        def add(func: str, expr: Scalar | None) -> Scalar:
            return self._add(Aggregate(func, expr), distinct).expr

        if of_intervals:
            return TypedScalar(interval_keys.aggregated(fn.name, arg.expr, add), INTERVAL)
        if fn.derive is None:
            separator = self._separator(node) if fn.name == "string_agg" else None
            return self._add(Aggregate(fn.name, arg.expr, order, separator), distinct)
        return TypedScalar(fn.derive(arg.expr, arg.type, add), fn.returns(arg.type))

    def _separator(self, node: exp.Expr) -> str | None:
        """``string_agg``'s separator: a constant text (NULL: none)."""
        given = node.args.get("separator")
        value = self.inner.bind(given)
        if not isinstance(value.expr, Lit) or value.type.kind not in (Kind.TEXT, Kind.NULL):
            raise UnsupportedError.at("string_agg's separator must be a text constant", given)
        return None if value.expr.value is None else str(value.expr.value)

    def grouping(self, node: exp.Grouping) -> TypedScalar:
        """``grouping(a, b, ...)``: an integer whose bits, the last argument's lowest, are 1
        for the arguments the row's grouping set does not group by."""
        positions = []
        for argument in node.expressions:
            key = self.inner.bind(argument).expr
            if key not in self.keys:
                raise SqlError.at("arguments to GROUPING must be grouping expressions of the "
                                  "associated query level", argument)
            positions.append(self.keys.index(key))

        def bits(grouped: Sequence[int]) -> Lit:
            value = sum(1 << i for i, p in enumerate(reversed(positions)) if p not in grouped)
            return Lit(value, INT)

        if self.sets is None:
            return TypedScalar(bits(range(len(self.keys))), INT)
        which = Col(len(self.keys))
        return TypedScalar(Case(tuple((Call("eq", (which, Lit(i, BIGINT))), bits(s))
                                      for i, s in enumerate(self.sets[:-1])),
                                bits(self.sets[-1])), INT)

    def _add(self, aggregate: Aggregate, distinct: bool) -> TypedScalar:
        if (aggregate, distinct) not in self.aggregates:
            self.aggregates.append((aggregate, distinct))
        position = self.width + self.aggregates.index((aggregate, distinct))
        return TypedScalar(Col(position), aggregate.type(self.scope.types))

    def reduce(self, rel: Relation) -> Relation:
        """The ``Reduce`` of ``rel`` by the keys computing the aggregates bound so far (over a
        union when some read distinct values: see the module docstring); with grouping sets,
        the union of one per set, each row padded to the keys with NULLs and marked with its
        set's index."""
        keys = [interval_keys.grouped(k, t) for k, t in zip(self.keys, self.key_types)]
        if self.sets is None:
            return self._reduce(rel, tuple(keys))
        parts: list[Relation] = []
        for i, grouped in enumerate(self.sets):
            part = self._reduce(rel, tuple(keys[p] for p in grouped))
            row: list[Scalar] = [Col(grouped.index(k)) if k in grouped
                                 else Lit(None, interval_keys.grouped_type(self.key_types[k]))
                                 for k in range(len(self.keys))]
            row += [Lit(i, BIGINT), *[Col(len(grouped) + j)
                                      for j in range(len(self.aggregates))]]
            parts.append(compute(part, row))
        return parts[0] if len(parts) == 1 else Union(tuple(parts))

    def _reduce(self, rel: Relation, keys: tuple[Scalar, ...]) -> Relation:
        """The ``Reduce`` of ``rel`` by ``keys`` computing the aggregates bound so far."""
        if not any(distinct for _, distinct in self.aggregates):
            return Reduce(rel, keys, tuple(a for a, _ in self.aggregates))
        types = rel.types
        plain = _unique([e for a, d in self.aggregates if not d for e in a.scalars()])
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
            if distinct:
                return Aggregate(aggregate.func, Col(width + spread.index(aggregate.expr)))
            return aggregate.mapped(lambda e: Col(len(keys) + 1 + plain.index(e)))

        return Reduce(Union(tuple(parts)), tuple(Col(k) for k in range(len(keys))),
                      tuple(read(a, d) for a, d in self.aggregates))


def _unique(exprs: Sequence[Scalar]) -> list[Scalar]:
    """``exprs`` without repeats, in order."""
    return list(dict.fromkeys(exprs))
