"""``cardinality(a)``, ``array_length(a, d)`` (``ir.array_sizes``) and the set-returning
``generate_subscripts(a, d)``, which is a series of the subscripts of ``a`` (from 1):

    generate_subscripts(a, d)  =>  generate_series(1, array_length(a, d))

no rows for an empty or NULL array or another dimension than 1.
"""

from __future__ import annotations

from matview.sql.calls import check_arity
from matview.sql.coerce import TypedScalar, call
from matview.sql.scalars import ExprBinder
from sqlglot import exp


def subscripts_as_series(tree: exp.Expr) -> exp.Expr:
    """``tree`` with each ``generate_subscripts(a, d)`` a ``generate_series`` (in place)."""
    for node in list(tree.find_all(exp.Anonymous)):
        if node.name.lower() == "generate_subscripts" and len(node.expressions) == 2:
            array, dimension = node.expressions
            node.replace(exp.func("generate_series", exp.Literal.number(1), exp.ArraySize(
                this=array.copy(), expression=dimension.copy())))
    return tree


def bind_size(binder: ExprBinder, node: exp.Expr) -> TypedScalar:
    """``array_length(a, d)`` (sqlglot's ``ArraySize``) or ``cardinality(a)``."""
    if isinstance(node, exp.ArraySize):
        args = [node.this, node.expression] if node.expression else [node.this]
        check_arity(node, (2, 2), len(args))
        return call("array_length", [binder.bind(a) for a in args], node,
                    "function array_length does not exist for these arguments")
    check_arity(node, (1, 1), len(node.expressions))
    return call("cardinality", [binder.bind(node.expressions[0])], node,
                "function cardinality does not exist for this argument")
