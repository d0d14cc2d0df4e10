"""``jsonb_build_object(k1, v1, ...)`` (and ``json_build_object``, whose result is a JSONB
here: matview has no ``json`` type) of constant keys.

The object's canonical text (``ir.jsonb``: keys sorted by their UTF-8 bytes, the last of
equal keys kept) is the concatenation of its keys, known when binding, and its values'
``to_jsonb`` texts (a NULL value is JSON ``null``):

    jsonb_build_object('b', x, 'a', y)  =>  '{"a":' || coalesce(to_jsonb(y), 'null')
                                            || ',"b":' || coalesce(to_jsonb(x), 'null') || '}'
"""

from __future__ import annotations

import functools

from matview.ir import jsonb
from matview.ir.scalar import Lit
from matview.ir.types import JSONB, TEXT
from matview.sql.calls import check_arity, to_jsonb
from matview.sql.coerce import TypedScalar, call, explicit_cast
from matview.sql.errors import InvalidValueError, SqlError, UnsupportedError
from matview.sql.scalars import ExprBinder
from sqlglot import exp


def bind_build_object(binder: ExprBinder, node: exp.Anonymous) -> TypedScalar:
    """``jsonb_build_object(k1, v1, ...)``: keys are constants cast to text."""
    args = node.expressions
    check_arity(node, (0, 1_000_000), len(args))
    if len(args) % 2:
        raise SqlError.at("argument list must have even number of elements", node)
    fields: dict[str, TypedScalar] = {}
    for key_node, value_node in zip(args[::2], args[1::2], strict=True):
        key = explicit_cast(binder.bind(key_node), TEXT, key_node).expr
        if not isinstance(key, Lit):
            raise UnsupportedError.at(f"{node.name.lower()} needs constant keys", key_node)
        if key.value is None:
            raise InvalidValueError.at("null value not allowed for object key", key_node)
        fields.pop(str(key.value), None)
        fields[str(key.value)] = to_jsonb(binder.bind(value_node), value_node)
    pieces: list[TypedScalar] = []
    for i, key in enumerate(sorted(fields, key=lambda k: k.encode("utf-8"))):
        text = ("{" if i == 0 else ",") + jsonb.dumps(key) + ":"
        value = call("jsonb_canonical", [fields[key]], node)
        pieces += [TypedScalar(Lit(text, TEXT), TEXT),
                   call("coalesce", [value, TypedScalar(Lit("null", TEXT), TEXT)], node)]
    pieces.append(TypedScalar(Lit("}" if fields else "{}", TEXT), TEXT))
    joined = functools.reduce(lambda a, b: call("concat", [a, b], node), pieces)
    return TypedScalar(joined.expr, JSONB)
