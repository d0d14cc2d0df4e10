"""Function-call syntax lowered to scalars: CAST (``ARRAY[]::int[]`` included), the supported
built-in functions, and the errors for functions matview does not have."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from matview.ir.scalar import Call, Cast
from matview.ir.types import INT, TEXT, Kind, SqlType
from matview.sql.coerce import TypedScalar, call, coerce, explicit_cast, unify
from matview.sql.datatypes import sql_type
from matview.sql.dialect import Matview
from matview.sql.errors import SqlTypeError, UnknownObjectError, UnsupportedError
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

_SIGNATURES: dict[type[exp.Func], tuple[str, tuple[SqlType | None, ...]]] = {
    exp.Lower: ("lower", (TEXT,)),
    exp.Upper: ("upper", (TEXT,)),
    exp.Length: ("length", (TEXT,)),
    exp.Substring: ("substr", (TEXT, INT, INT)),
    exp.Abs: ("abs", (None,)),
    exp.Round: ("round", (None, INT)),
}
"""Function name in the registry and argument types (None: any, checked by the registry)."""

_ARGUMENTS = {exp.Substring: ("this", "start", "length"), exp.Round: ("this", "decimals")}


def bind_call(binder: ExprBinder, node: exp.Expr) -> TypedScalar:
    """The scalar a function call (or other expression without an operator rule) denotes."""
    if type(node) is exp.Cast:
        to = sql_type(node.to)
        if isinstance(node.this, exp.Array) and not node.this.expressions:
            if to.kind is not Kind.ARRAY:
                raise SqlTypeError.at(f"cannot cast type array to {to}", node)
            return TypedScalar(Cast(Call("array", ()), to), to)
        return explicit_cast(binder.bind(node.this), to, node)
    if type(node) in _SIGNATURES:
        return _builtin(binder, node)
    if isinstance(node, exp.Coalesce):
        args = [binder.bind(x) for x in (node.this, *node.expressions)]
        args = unify(args, node, lambda a, b: f"COALESCE types {a} and {b} cannot be matched")
        return call("coalesce", args, node)
    if isinstance(node, exp.Nullif):
        args = unify([binder.bind(node.this), binder.bind(node.expression)], node,
                     lambda a, b: f"operator does not exist: {a} = {b}")
        return call("nullif", args, node)
    if isinstance(node, exp.Filter):
        raise UnsupportedError.at("FILTER clauses of aggregates are not supported yet", node)
    if isinstance(node, exp.AggFunc):
        raise UnsupportedError.at(
            f"aggregate function {node.sql_name().lower()} is not supported yet", node)
    if isinstance(node, exp.Anonymous):
        raise UnknownObjectError.at(f"function {node.name.lower()} does not exist", node)
    if isinstance(node, exp.Func):
        raise UnsupportedError.at(f"function {node.sql_name().lower()} is not supported yet",
                                  node)
    raise UnsupportedError.at(f"expression {node.sql(dialect=Matview)} is not supported yet",
                              node)


def _builtin(binder: ExprBinder, node: exp.Func) -> TypedScalar:
    func, expected = _SIGNATURES[type(node)]
    names = _ARGUMENTS.get(type(node), ("this",))
    extra = [k for k, v in node.args.items() if k not in names and v not in (None, False)]
    if extra:  # sqlglot takes other dialects' arguments (a fourth of SUBSTR: zero_start)
        raise SqlTypeError.at(f"function {node.sql_name().lower()} takes at most "
                              f"{len(names)} arguments", node)
    syntax = [node.args.get(name) for name in names]
    if isinstance(node, exp.Substring) and syntax[1] is None:
        syntax[1] = exp.Literal.number(1)
    args = [binder.bind(x) for x in syntax if x is not None]
    signature = f"function {node.sql_name().lower()}({', '.join(str(a.type) for a in args)})"
    coerced = _coerce_all(args, expected)
    if coerced is None:
        raise SqlTypeError.at(f"{signature} does not exist", node)
    return call(func, coerced, node, f"{signature} does not exist")


def _coerce_all(
    args: Sequence[TypedScalar], expected: Sequence[SqlType | None]
) -> list[TypedScalar] | None:
    out = []
    for arg, target in zip(args, expected, strict=False):
        value = arg if target is None else coerce(arg, target)
        if value is None:
            return None
        out.append(value)
    return out
