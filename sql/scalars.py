"""Scalar expressions: sqlglot expression trees lowered to typed ``matview.ir.scalar`` trees.

``ExprBinder`` dispatches each node to its binder and lowers columns, literals, predicates
and the subqueries below; operators are in ``operators``, function calls in ``calls``.
Subclasses change what columns and aggregate calls denote (``grouping.GroupedBinder``).
Table function calls are errors unless a ``table_functions.SelectListCalls`` binds them (the
select list); ``mz_now()`` is an error here (``temporal`` binds it where it is allowed).

Subqueries in expressions (``EXISTS``, ``IN (SELECT ...)``, scalar subqueries) bind to the
scalar nodes holding their plans (``x op ANY | ALL (SELECT ...)`` to ``IN`` or to scalar
subqueries of aggregates: ``quantified``), where the scope has a context (``Scope.ctx``: the select
list, WHERE and HAVING). While a subquery's query is bound, the binders of the queries
around it are on a stack: a column its own FROM clause does not have is looked up there,
innermost first, and becomes an ``Outer`` reference (level 1 for the query just around),
through the binder that would bind it there (so a grouped query's column must be a key).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

from matview.ir.aggregate_call import Aggregate
from matview.ir.plans import compute
from matview.ir.relation import Reduce, Relation
from matview.ir.scalar import (
    FALSE,
    TRUE,
    Call,
    Case,
    Col,
    Exists,
    InSubquery,
    Lit,
    Outer,
    Scalar,
    ScalarSubquery,
    balanced,
)
from matview.ir.types import BIGINT, BOOLEAN, INTERVAL, Kind, SqlType, array_of
from matview.sql import calls, operators, temporal
from matview.sql.call_names import WINDOW_CALLS
from matview.sql.coerce import TypedScalar, call, cast, coerce, is_string_literal, require, unify
from matview.sql.context import Context
from matview.sql.dialect_nodes import JsonbAggCall
from matview.sql.errors import SqlError, SqlSyntaxError, UnknownObjectError, UnsupportedError
from matview.sql.literals import blob, interval, literal
from matview.sql.operators import ARITHMETIC, COMPARISON, NEGATED, SYMBOLS
from matview.sql.scope import Scope
from matview.sql.statements import Query
from matview.sql.table_functions import SelectListCalls, table_call
from matview.sql.windows import SelectListWindows
from sqlglot import exp

AGGREGATES = (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max, exp.LogicalAnd, exp.LogicalOr,
              exp.Variance, exp.VariancePop, exp.Stddev, exp.StddevSamp, exp.StddevPop,
              exp.GroupConcat, exp.ArrayAgg, JsonbAggCall)
"""The aggregate calls the binder binds (``ir/aggregates.py`` registers each by the names of
``call_names.CALL_NAMES``)."""
SUBQUERIES = (exp.Subquery, exp.Exists, exp.Any, exp.All)
"""The nodes of a subquery in an expression (``IN`` holds its query as an ``exp.Subquery``;
``x op ANY (...)`` as an ``exp.Any``, ``ALL`` as an ``exp.All``)."""

_OUTER: ContextVar[tuple[ExprBinder, ...]] = ContextVar("outer_binders", default=())
"""The binders of the queries around the subquery being bound, outermost first."""


class ExprBinder:
    """Lowers expressions over the columns of ``scope``; an aggregate call is an error with
    ``aggregate_error`` as its message, a table function call one with ``srf_error`` unless
    ``table_calls`` binds them."""

    def __init__(self, scope: Scope, aggregate_error: str,
                 srf_error: str = "set-returning functions are not allowed here",
                 table_calls: SelectListCalls | None = None) -> None:
        self.scope = scope
        self.aggregate_error = aggregate_error
        self.srf_error = srf_error
        self.table_calls = table_calls
        self.windows: SelectListWindows | None = None
        """Binds window calls (the select list's binder only)."""

    def row_types(self) -> list[SqlType]:
        """The types of the row the expressions are evaluated on."""
        return list(self.scope.types)

    def bind(self, node: exp.Expr) -> TypedScalar:
        """The typed scalar ``node`` denotes."""
        calls.check_call(node)
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            return handler(self, node)
        if isinstance(node, exp.Grouping):
            return self.grouping(node)
        if isinstance(node, AGGREGATES) or (
                isinstance(node, exp.Filter) and isinstance(node.this, AGGREGATES)):
            return self.aggregate(node)
        found = table_call(node)
        if found is not None:
            if self.table_calls is None:
                raise SqlError.at(self.srf_error, node)
            return self.table_calls.bind(found)
        if temporal.is_mz_now(node):
            return temporal.value(node)
        if type(node) in WINDOW_CALLS:
            raise SqlError.at(f"window function {WINDOW_CALLS[type(node)]} requires an OVER "
                              "clause", node)
        return calls.bind_call(self, node)

    def predicate(self, node: exp.Expr, clause: str) -> TypedScalar:
        """``node`` as the boolean condition of ``clause`` (WHERE, HAVING, ON...)."""
        return require(self.bind(node), BOOLEAN, f"argument of {clause}", node)

    def column(self, index: int, node: exp.Expr) -> TypedScalar:
        """Column ``index`` of the scope's row, referenced by ``node``."""
        return TypedScalar(Col(index), self.scope.types[index])

    def grouping(self, node: exp.Grouping) -> TypedScalar:
        """``grouping(...)``: only in a grouped query (``grouping.GroupedBinder``)."""
        raise SqlError.at("arguments to GROUPING must be grouping expressions of the "
                          "associated query level", node)

    def aggregate(self, node: exp.Expr) -> TypedScalar:
        """An aggregate call (``exp.Filter`` when it has a FILTER clause); not allowed here
        (see ``grouping.GroupedBinder``)."""
        raise SqlError.at(self.aggregate_error, node)

    def _column(self, node: exp.Column) -> TypedScalar:
        if isinstance(node.this, exp.Star):
            raise UnsupportedError.at('"*" is only supported in the select list', node)
        try:
            index = self.scope.resolve(node)
        except UnknownObjectError:
            outer = _outer_column(node)
            if outer is None:
                raise
            return outer
        return self.column(index, node)

    def _literal(self, node: exp.Literal | exp.Boolean | exp.Null) -> TypedScalar:
        return literal(node)

    def _paren(self, node: exp.Paren) -> TypedScalar:
        return self.bind(node.this)

    def _interval(self, node: exp.Interval) -> TypedScalar:
        return interval(node)

    def _blob(self, node: exp.HexString) -> TypedScalar:
        return blob(node)

    def _comparison(self, node: exp.Binary) -> TypedScalar:
        right = node.expression
        if isinstance(right, exp.Anonymous) and right.name.lower() == "all" and len(
                right.expressions) == 1:  # sqlglot reads ALL (array) as a call
            right = exp.All(this=right.expressions[0])
        if isinstance(right, (exp.Any, exp.All)):
            return self._quantified(node, right)
        return operators.binary(self, COMPARISON[type(node)], node.this, node.expression, node)

    def _quantified(self, node: exp.Binary, quantifier: exp.Any | exp.All) -> TypedScalar:
        """``x op ANY (SELECT y ...)`` (``SOME`` too) and ``x op ALL (SELECT y ...)``: see
        ``quantified``; ``x`` and ``y`` cast to their common type (intervals compared by
        their lengths)."""
        func = COMPARISON[type(node)]
        every = isinstance(quantifier, exp.All)
        word = f"{SYMBOLS[func]} {'ALL' if every else 'ANY'}"
        if not isinstance(quantifier.this, (exp.Subquery, exp.Query)):
            return self._over_array(node, quantifier, f"{'all' if every else 'any'}_{func}",
                                    word)
        plan = self.subquery(quantifier.this, node, word)

        def mismatch(a: SqlType, b: SqlType) -> str:
            return f"operator does not exist: {a} {SYMBOLS[func]} {b}"

        needle, column = unify([self.bind(node.this), TypedScalar(Col(0), plan.types[0])],
                               node, mismatch)
        call(func, [needle, column], node, mismatch(needle.type, column.type))
        if needle.type == INTERVAL:  # intervals compare by length
            needle, column = (call("interval_key", [v], node) for v in (needle, column))
        value = quantified(NEGATED[func] if every else func, needle.expr,
                           compute(plan, [column.expr]))
        return TypedScalar(Call("not", (value,)) if every else value, BOOLEAN)

    def _over_array(self, node: exp.Binary, quantifier: exp.Any | exp.All, func: str,
                    word: str) -> TypedScalar:
        """``x op ANY (array)`` and ``x op ALL (array)`` (``ir.array_quantifiers``): ``x``
        cast to the elements' type, or else the array to an array of ``x``'s."""
        value, array = self.bind(node.this), self.bind(quantifier.this)
        mismatch = f"operator does not exist: {value.type} {word} ({array.type})"
        if is_string_literal(array) and value.type.kind is not Kind.NULL:  # '{a,b}'
            array = cast(array, array_of(value.type), quantifier)
        if array.type.kind is Kind.ARRAY and array.type.element != value.type:
            assert array.type.element is not None
            cast_value = coerce(value, array.type.element)
            if cast_value is not None:
                value = cast_value
            else:
                array = coerce(array, array_of(value.type)) or array
        return call(func, [value, array], node, mismatch)

    def _in(self, node: exp.In) -> TypedScalar:
        """``x IN (a, b, ...)``: ``x = a OR x = b ...``, a balanced tree however long;
        ``x IN (SELECT y ...)``: ``InSubquery``, ``x`` and ``y`` cast to their common type."""
        query = node.args.get("query")
        if query is not None:
            plan = self.subquery(query, node, "IN")
            values = unify([self.bind(node.this), TypedScalar(Col(0), plan.types[0])], node,
                           lambda a, b: f"operator does not exist: {a} = {b}")
            if values[0].type == INTERVAL:  # intervals are equal by length
                values = [call("interval_key", [v], node) for v in values]
            return TypedScalar(InSubquery(values[0].expr, compute(plan, [values[1].expr])),
                               BOOLEAN)
        if not node.expressions:  # PostgreSQL's grammar has no empty list
            raise SqlSyntaxError.at('syntax error at or near ")": IN needs a value', node)
        tests = [operators.binary(self, "eq", node.this, item, node) for item in node.expressions]
        return TypedScalar(balanced("or", [t.expr for t in tests]), BOOLEAN)

    def subquery(self, node: exp.Expr, at: exp.Expr, word: str) -> Relation:
        """The plan of the subquery ``node`` (an operand of ``word``), bound with this
        binder's query around it; it must have one column unless ``word`` is EXISTS."""
        if self.scope.ctx is None:
            raise UnsupportedError.at("subqueries are not supported in this clause yet", at)
        query = self.correlated(node.this if isinstance(node, exp.Subquery) else node,
                                self.scope.ctx, "a subquery")
        if word != "EXISTS" and len(query.column_names) != 1:
            raise SqlError.at("subquery must return only one column", node)
        return query.plan

    def correlated(self, node: exp.Expr, ctx: Context, where: str) -> Query:
        """The query ``node`` (``where`` names the place, for errors) bound in ``ctx`` with
        this binder's query around it: a column it does not find is looked up here, as an
        ``Outer`` reference of level 1 (further out, a level more)."""
        from matview.sql.query import subquery

        token = _OUTER.set((*_OUTER.get(), self))
        try:
            return subquery(node, ctx, where)
        finally:
            _OUTER.reset(token)

    def _exists(self, node: exp.Exists) -> TypedScalar:
        return TypedScalar(Exists(self.subquery(node.this, node, "EXISTS")), BOOLEAN)

    def _scalar_subquery(self, node: exp.Subquery) -> TypedScalar:
        """A scalar subquery (a second row is an evaluation error: ``ScalarSubquery``)."""
        plan = self.subquery(node, node, "a scalar subquery")
        return TypedScalar(ScalarSubquery(plan), plan.types[0])

    def _window(self, node: exp.Window) -> TypedScalar:
        """A window function call: only in the select list (``sql/windows.py``)."""
        if self.windows is None:
            raise SqlError.at("window functions are only allowed in the select list", node)
        return self.windows.bind(self, node)


_HANDLERS: dict[type[exp.Expr], Callable[[ExprBinder, exp.Expr], TypedScalar]] = {
    exp.Column: ExprBinder._column,
    exp.Literal: ExprBinder._literal,
    exp.Boolean: ExprBinder._literal,
    exp.Null: ExprBinder._literal,
    exp.Paren: ExprBinder._paren,
    exp.Neg: operators.bind_neg,
    exp.Interval: ExprBinder._interval,
    exp.HexString: ExprBinder._blob,
    exp.Array: operators.bind_array,
    **dict.fromkeys(ARITHMETIC, operators.bind_arithmetic),
    **dict.fromkeys(COMPARISON, ExprBinder._comparison),
    exp.And: operators.bind_connective,
    exp.Or: operators.bind_connective,
    exp.Not: operators.bind_not,
    exp.Is: operators.bind_is,
    exp.In: ExprBinder._in,
    exp.Between: operators.bind_between,
    exp.Like: operators.bind_like,
    exp.ILike: operators.bind_like,
    exp.RegexpLike: operators.bind_regex_match,
    exp.RegexpILike: operators.bind_regex_match,
    exp.Operator: operators.bind_regex_match,
    exp.DPipe: operators.bind_concat,
    exp.Case: operators.bind_case,
    exp.Subquery: ExprBinder._scalar_subquery,
    exp.Exists: ExprBinder._exists,
    exp.Window: ExprBinder._window,
}


def quantified(func: str, needle: Scalar, column: Relation) -> Scalar:
    """``needle func ANY (column)``, ``column`` a one-column plan, with SQL's NULLs: TRUE when
    some comparison with a value of ``column`` is TRUE, else NULL when some is NULL, else
    FALSE (FALSE over no rows); ``x op ALL S`` is ``NOT (x NEGATED[op] ANY S)``.

    ``= ANY`` is ``InSubquery``. For the others, with ``t`` the comparison against the
    extreme non-NULL value that decides it (``x < ANY S`` iff ``x < max(S)``; ``x > ANY S``
    iff ``x > min(S)``; ``x <> ANY S`` iff ``x <> min(S) OR x <> max(S)``) and ``s`` the
    scalar subquery ``CASE WHEN count(*) = count(y) THEN count(*) > 0 END`` over ``S``
    (FALSE when ``S`` is empty, NULL when it holds a NULL)::

        CASE WHEN t THEN TRUE WHEN NOT s THEN FALSE WHEN t IS NULL OR s IS NULL THEN NULL
             ELSE FALSE END

    so that each subquery is a global aggregate (one row per correlation key, whatever
    ``needle`` is), not a comparison of every row of ``S`` with every value of ``needle``."""
    if func == "eq":
        return InSubquery(needle, column)

    def extreme(name: str) -> Scalar:
        return Call(func, (needle, ScalarSubquery(Reduce(column, (), (Aggregate(name, Col(0)),)))))

    if func == "ne":
        test = Call("or", (extreme("min"), extreme("max")))
    else:
        test = extreme("max" if func in ("lt", "le") else "min")
    counts = Reduce(column, (), (Aggregate("count", None), Aggregate("count", Col(0))))
    nonempty = Case(((Call("eq", (Col(0), Col(1))), Call("gt", (Col(0), Lit(0, BIGINT)))),),
                    Lit(None, BOOLEAN))
    state = ScalarSubquery(compute(counts, [nonempty]))
    null = Lit(None, BOOLEAN)
    return Case(((test, TRUE), (Call("not", (state,)), FALSE),
                 (Call("or", (Call("is_null", (test,)), Call("is_null", (state,)))), null)),
                FALSE)


def _outer_column(node: exp.Column) -> TypedScalar | None:
    """The column ``node`` names in a query around the subquery being bound, as an ``Outer``
    reference; None when no query around has it."""
    for level, binder in enumerate(reversed(_OUTER.get()), 1):
        try:
            index = binder.scope.resolve(node)
        except UnknownObjectError:
            continue
        value = binder.column(index, node)
        assert isinstance(value.expr, Col)
        return TypedScalar(Outer(level, value.expr.index, value.type), value.type)
    return None
