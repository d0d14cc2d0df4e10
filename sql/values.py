"""VALUES lists as relations: ``VALUES (1, 'a'), (2, 'b')`` as a query, in FROM
(``(VALUES ...) AS v(x, y)``), in a set operation, and as ``INSERT``'s rows (``dml``).

As PostgreSQL: every list has as many expressions; each column is of its expressions'
common type (as UNION's: an untyped string literal takes the others' type, text when all
are) and named ``column1``, ``column2``, ...; the expressions read no columns. Rows of
constants fold into one ``Constant``; others are a ``Union`` of one-row maps of the unit
relation:

    VALUES (e11, .., e1n), .., (em1, .., emn)
        => Constant((v11, .., v1n), .., (vm1, .., vmn))          every eij constant
        => Union(Linear(UNIT, [map e11, .., e1n; project]), ..)  otherwise
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.casts import cast_value
from matview.ir.eval_error import EvalError
from matview.ir.plans import UNIT
from matview.ir.relation import Constant, Linear, Relation, Union
from matview.ir.scalar import Call, Cast, Lit, Scalar
from matview.ir.steps import Map
from matview.ir.types import TEXT, Kind
from matview.sql.coerce import TypedScalar, cast, unify
from matview.sql.errors import SqlError
from matview.sql.scalars import ExprBinder
from matview.sql.scope import Scope
from matview.sql.statements import Query
from sqlglot import exp


def bind_values(node: exp.Values) -> Query:
    """The relation the VALUES lists of ``node`` denote, its columns ``column1``.."""
    binder = ExprBinder(Scope((), ()), "aggregate functions are not allowed in VALUES")
    lists = node.expressions
    width = len(lists[0].expressions)
    for values in lists[1:]:
        if len(values.expressions) != width:
            raise SqlError.at("VALUES lists must all be the same length", values)
    bound = [[binder.bind(n) for n in values.expressions] for values in lists]
    columns = [_column([row[i] for row in bound], node) for i in range(width)]
    rows = [[column[r] for column in columns] for r in range(len(lists))]
    names = tuple(f"column{i + 1}" for i in range(width))
    nodes = [dict(enumerate(values.expressions)) for values in lists]
    return Query(rows_relation(rows, nodes, lists), names)


def _column(values: list[TypedScalar], node: exp.Expr) -> list[TypedScalar]:
    """One column's ``values`` cast to their common type (text when all are NULL)."""
    values = unify(values, node, lambda a, b: f"VALUES types {a} and {b} cannot be matched")
    if values[0].type.kind is Kind.NULL:
        return [cast(v, TEXT) for v in values]
    return values


def rows_relation(rows: Sequence[Sequence[TypedScalar]], nodes: Sequence[dict[int, exp.Expr]],
                  lists: Sequence[exp.Expr]) -> Relation:
    """The relation of ``rows`` (each a list of values of the same types, ``nodes`` the
    expressions of its given columns, ``lists`` its list): a ``Constant`` when all are
    constants, else a union of one-row maps."""
    if all(_is_constant(v.expr) for row in rows for v in row):
        types = tuple(v.type for v in rows[0])
        return Constant(tuple((_folded(row, given, values), 1)
                              for row, given, values in zip(rows, nodes, lists, strict=True)),
                        types)
    plans = [Linear(UNIT, (Map(tuple(v.expr for v in row)),)) for row in rows]
    return plans[0] if len(plans) == 1 else Union(tuple(plans))


def _is_constant(expr: Scalar) -> bool:
    """A literal, casts of one, or an array of them: foldable before the statement runs."""
    if isinstance(expr, Call):
        return expr.func == "array" and all(_is_constant(a) for a in expr.args)
    return isinstance(expr, Lit) or isinstance(expr, Cast) and _is_constant(expr.expr)


def _folded(
    row: Sequence[TypedScalar], nodes: dict[int, exp.Expr], values: exp.Expr
) -> tuple[object, ...]:
    """The values of a constant row; ``nodes`` are the expressions of its given columns."""
    out = []
    for index, value in enumerate(row):
        try:
            out.append(cast_value(_fold(value.expr), value.type))
        except EvalError as error:
            raise SqlError.at(str(error), nodes.get(index, values)) from None
    return tuple(out)


def _fold(expr: Scalar) -> object:
    if isinstance(expr, Cast):
        return cast_value(_fold(expr.expr), expr.to)
    if isinstance(expr, Call):
        return tuple(_fold(a) for a in expr.args)
    assert isinstance(expr, Lit)
    return expr.value
