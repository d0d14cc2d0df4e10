"""Function-call syntax lowered to scalars: CAST (``ARRAY[]::int[]`` included), the supported
built-in functions, and the errors for functions matview does not have.

A call is checked against the function it names as written (``check_call``): sqlglot reads
other dialects' names into the nodes the binder binds (``div(a, b)`` becomes a cast of a
division, ``explode_outer`` an ``Explode``), so a node built from a call is bound only when
written with one of the binder's names for it, and with a number of arguments the function
takes (the registry's ``arity``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING

from matview.ir import bytea, to_char
from matview.ir.functions import lookup
from matview.ir.scalar import Call, Case, Cast, Lit
from matview.ir.types import BYTEA, INT, INTERVAL, TEXT, Kind, SqlType
from matview.sql import statement_time
from matview.sql.call_names import (
    ARGUMENT_COUNT,
    CALL_NAMES,
    CATALOG_FUNCTIONS,
    JSON_OBJECTS,
    WINDOW_CALLS,
    WRITTEN_NAME,
)
from matview.sql.coerce import (
    TypedScalar,
    call,
    coerce,
    explicit_cast,
    is_string_literal,
    unify,
)
from matview.sql.datatypes import sql_type
from matview.sql.datetime_fields import FieldCall, bind_field_call
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import (
    DatePartCall,
    DateTruncCall,
    OctetLengthCall,
    ToCharCall,
    ToJsonbCall,
)
from matview.sql.errors import (
    InvalidValueError,
    SqlTypeError,
    UnknownObjectError,
    UnsupportedError,
)
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

_SIGNATURES: dict[type[exp.Func], tuple[str, tuple[SqlType | None, ...]]] = {
    exp.Lower: ("lower", (TEXT,)),
    exp.Upper: ("upper", (TEXT,)),
    exp.Length: ("length", (None,)),
    OctetLengthCall: ("octet_length", (None,)),
    exp.MD5: ("md5", (None,)),
    exp.Substring: ("substr", (TEXT, INT, INT)),
    exp.StrPosition: ("strpos", (TEXT, TEXT)),
    exp.Abs: ("abs", (None,)),
    exp.Round: ("round", (None, INT)),
    exp.Replace: ("replace", (TEXT, TEXT, TEXT)),
    exp.SplitPart: ("split_part", (TEXT, TEXT, INT)),
}
"""Function name in the registry and argument types (None: any, checked by the registry)."""

_ARGUMENTS = {exp.Substring: ("this", "start", "length"), exp.Round: ("this", "decimals"),
              exp.StrPosition: ("this", "substr"),
              exp.Replace: ("this", "expression", "replacement"),
              exp.SplitPart: ("this", "delimiter", "part_index")}

_REGISTERED: dict[type[exp.Expr], str] = {
    **{kind: name for kind, (name, _) in _SIGNATURES.items()},
    exp.Coalesce: "coalesce", exp.Nullif: "nullif", exp.Mod: "mod", ToJsonbCall: "to_jsonb",
    exp.Greatest: "greatest", exp.Least: "least", exp.ConcatWs: "concat_ws",
}
"""The registered function of each node kind the binder lowers to one (its arity applies)."""

_FIELD_CALLS = (DatePartCall, DateTruncCall)
"""Calls whose function is chosen by their first argument, a field (``datetime_fields``):
they take two arguments."""

_ENCODINGS = (exp.Encode, exp.Decode)
"""``encode`` and ``decode``, whose function is chosen by their second argument, a format
(``_encoding``): they take two arguments."""

_CONCAT_ARITY = (1, 10_000)
"""Arguments of ``concat``, which is bound as ``||`` (``_concat``)."""

_AGGREGATE_ARITY = (1, 1)
"""Arguments of every aggregate bound (``count(*)``: one, ``*``)."""

_MANY = 1000
"""An arity bound from which a function is described as taking "at least" its minimum."""


def function_name(node: exp.Expr) -> str:
    """The name a function call is written with, for messages."""
    if WRITTEN_NAME in node.meta:
        return str(node.meta[WRITTEN_NAME])
    if isinstance(node, exp.GroupConcat):  # PostgreSQL's dialect parses string_agg itself
        return "string_agg"
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if isinstance(node, exp.Func):
        return node.sql_name().lower()
    return node.key.lower()


def check_call(node: exp.Expr) -> None:
    """Raise unless ``node``, when written as a function call, names a function the binder
    has under that name, and unless it has a number of arguments its function takes (table
    functions' counts are checked with their arguments, ``table_functions.bind_call``)."""
    name = function_name(node)
    if WRITTEN_NAME in node.meta and name not in CALL_NAMES.get(type(node), ()):
        what = "aggregate function" if isinstance(node, exp.AggFunc) else "function"
        raise UnsupportedError.at(f"{what} {name} is not supported yet", node)
    if type(node) in _REGISTERED:
        check_arity(node, lookup(_REGISTERED[type(node)]).arity)
    elif type(node) in _FIELD_CALLS + _ENCODINGS:
        check_arity(node, (2, 2))
    elif type(node) is exp.Concat:
        check_arity(node, _CONCAT_ARITY)
    elif isinstance(node, exp.AggFunc) and type(node) in CALL_NAMES and (
            type(node) not in WINDOW_CALLS):  # window calls: counted by sql/windows.py
        arity = {exp.Grouping: (1, _MANY), exp.GroupConcat: (2, 2)}.get(type(node),
                                                                        _AGGREGATE_ARITY)
        check_arity(node, arity)


def check_arity(node: exp.Expr, arity: tuple[int, int], given: int | None = None) -> None:
    """Raise, at ``node``, unless it has ``arity[0]`` to ``arity[1]`` arguments: ``given``, or
    as many as it was written with."""
    if given is None:
        given = node.meta.get(ARGUMENT_COUNT)
    if given is None:
        given = sum(len(v) if isinstance(v, list) else 1 for v in node.args.values()
                    if isinstance(v, exp.Expr) or isinstance(v, list) and v)
    low, high = arity
    if low <= given <= high:
        return
    if high >= _MANY:
        expected = f"at least {low}"
    elif low == high:
        expected = str(low)
    else:
        expected = f"{low} {'or' if high == low + 1 else 'to'} {high}"
    noun = "argument" if low == 1 and (high == 1 or high >= _MANY) else "arguments"
    raise SqlTypeError.at(f"function {function_name(node)} takes {expected} {noun} "
                          f"({given} given)", node)


def bind_call(binder: ExprBinder, node: exp.Expr) -> TypedScalar:
    """The scalar a function call (or other expression without an operator rule) denotes."""
    if type(node) is exp.Cast and _object_cast(node):
        from matview.sql import catalog_functions

        return catalog_functions.bind_object_cast(binder, node)
    if type(node) is exp.Cast:
        to = sql_type(node.to)
        if isinstance(node.this, exp.Array) and not node.this.expressions:
            if to.kind is not Kind.ARRAY:
                raise SqlTypeError.at(f"cannot cast type array to {to}", node)
            return TypedScalar(Cast(Call("array", ()), to), to)
        return explicit_cast(binder.bind(node.this), to, node)
    if type(node) in _SIGNATURES:
        return _builtin(binder, node)
    if isinstance(node, FieldCall):
        return bind_field_call(binder, node)
    if isinstance(node, ToJsonbCall):
        return to_jsonb(binder.bind(node.this), node)
    if isinstance(node, ToCharCall):
        return _to_char(binder.bind(node.this), node)
    if isinstance(node, _ENCODINGS):
        return _encoding(binder.bind(node.this), node)
    if isinstance(node, exp.Coalesce):
        args = [binder.bind(x) for x in (node.this, *node.expressions)]
        args = unify(args, node, lambda a, b: f"COALESCE types {a} and {b} cannot be matched")
        return call("coalesce", args, node)
    if isinstance(node, exp.Greatest | exp.Least):
        name = "greatest" if isinstance(node, exp.Greatest) else "least"
        args = unify([binder.bind(x) for x in (node.this, *node.expressions)], node,
                     lambda a, b: f"{name.upper()} types {a} and {b} cannot be matched")
        return call(name, args, node)
    if isinstance(node, exp.ConcatWs):
        [given, *parts] = [binder.bind(x) for x in node.expressions]
        separator = coerce(given, TEXT)
        if separator is None:  # the others may be of any type
            raise SqlTypeError.at(f"function concat_ws({given.type}, ...) does not exist",
                                  node)
        return call("concat_ws", [separator, *(_text(p, node) for p in parts)], node)
    if isinstance(node, exp.RegexpReplace):
        from matview.sql.regexes import bind_regexp_replace

        return bind_regexp_replace(binder, node)
    if isinstance(node, exp.Concat):  # after ConcatWs, a kind of Concat
        return _concat([_text(binder.bind(x), node) for x in node.expressions], node)
    if isinstance(node, exp.Nullif):
        args = unify([binder.bind(node.this), binder.bind(node.expression)], node,
                     lambda a, b: f"operator does not exist: {a} = {b}")
        if args[0].type == INTERVAL:  # NULL where they are as long as each other, as = has it
            equal = call("eq", [call("interval_key", [a], node) for a in args], node)
            return TypedScalar(Case(((equal.expr, Lit(None, INTERVAL)),), args[0].expr),
                               INTERVAL)
        return call("nullif", args, node)
    if isinstance(node, exp.Filter):
        check_call(node.this)
        raise UnsupportedError.at(f"FILTER is not supported on {function_name(node.this)}",
                                  node)
    if isinstance(node, exp.AggFunc):
        raise UnsupportedError.at(
            f"aggregate function {function_name(node)} is not supported yet", node)
    if function_name(node) in statement_time.NAMES:  # no arguments, not even a precision
        check_arity(node, (0, 0), len(node.expressions) if isinstance(node, exp.Anonymous)
                    else int(node.args.get("this") is not None))
        return statement_time.bind_now(node, function_name(node))
    if isinstance(node, (exp.CurrentTimestamp, exp.Localtimestamp, exp.CurrentDate,
                         exp.CurrentTime, exp.Localtime)):
        return statement_time.bind_now(node, function_name(node))
    if isinstance(node, exp.ArraySize) or (isinstance(node, exp.Anonymous)
                                            and node.name.lower() == "cardinality"):
        from matview.sql.array_sizes import bind_size

        return bind_size(binder, node)
    if isinstance(node, exp.Anonymous) and node.name.lower() in JSON_OBJECTS:
        from matview.sql.json_objects import bind_build_object

        return bind_build_object(binder, node)
    if isinstance(node, exp.CurrentSchemas) or (
            isinstance(node, exp.Anonymous) and node.name.lower() in CATALOG_FUNCTIONS):
        from matview.sql import catalog_functions

        return catalog_functions.bind_function(binder, node)
    if isinstance(node, exp.Uuid):
        check_arity(node, (0, 0))
        statement_time.refuse_in_view(
            node, "gen_random_uuid()", "it gives a new value each time it is computed, so a "
            "maintained view could not retract the rows it gave; compute it when writing "
            "(INSERT ... VALUES (gen_random_uuid()), a column's DEFAULT gen_random_uuid())")
        return call("gen_random_uuid", [], node)
    if isinstance(node, exp.Anonymous):
        raise UnknownObjectError.at(f"function {function_name(node)} does not exist", node)
    if isinstance(node, exp.Func):
        raise UnsupportedError.at(f"function {function_name(node)} is not supported yet", node)
    raise UnsupportedError.at(f"expression {node.sql(dialect=Matview)} is not supported yet",
                              node)


def _object_cast(node: exp.Cast) -> bool:
    """Whether ``node`` casts to an object identifier type (``oid``, ``regclass``,
    ``regtype``) or casts such a cast to text (``sql.catalog_functions``)."""
    inner = node.this
    return isinstance(node.to, exp.ObjectIdentifier) or (
        node.to.is_type(*exp.DataType.TEXT_TYPES) and isinstance(inner, exp.Cast)
        and isinstance(inner.to, exp.ObjectIdentifier))


def _text(value: TypedScalar, node: exp.Expr) -> TypedScalar:
    """``value`` as ``concat`` and ``concat_ws`` take it: as text (a boolean ``t`` or
    ``f``, as PostgreSQL prints it there, where a cast gives ``true`` or ``false``)."""
    if value.type.kind is Kind.BOOLEAN:
        return TypedScalar(Case(((value.expr, Lit("t", TEXT)),
                                 (Call("not", (value.expr,)), Lit("f", TEXT))),
                                Lit(None, TEXT)), TEXT)
    return explicit_cast(value, TEXT, node)


def _concat(parts: Sequence[TypedScalar], node: exp.Expr) -> TypedScalar:
    """``concat(a, b, ...)``: ``coalesce(a, '') || coalesce(b, '') || ...`` of the
    arguments' texts; never NULL."""
    empty = TypedScalar(Lit("", TEXT), TEXT)
    texts = [call("coalesce", [part, empty], node) for part in parts]
    return functools.reduce(lambda a, b: call("concat", [a, b], node), texts)


def _to_char(value: TypedScalar, node: ToCharCall) -> TypedScalar:
    """``to_char(value, 'pattern')``: the pattern's parts (``ir.to_char.split``) joined by
    ``||``; NULL when ``value`` is."""
    pattern = node.args["format"]
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise UnsupportedError.at("to_char's pattern must be a text constant", pattern)
    try:
        to_char.returns([value.type])
        parts = to_char.split(pattern.name)
    except TypeError as error:
        raise SqlTypeError.at(str(error), node) from None
    except ValueError as error:
        raise UnsupportedError.at(str(error), pattern) from None
    pieces = [call(f"to_char_{name}", [value], node) if kind == "pattern"
              else TypedScalar(Lit(name, TEXT), TEXT) for kind, name in parts]
    if any(kind == "pattern" for kind, _ in parts):
        return functools.reduce(lambda a, b: call("concat", [a, b], node), pieces)
    text = "".join(name for _, name in parts)
    return TypedScalar(Case(((Call("is_null", (value.expr,)), Lit(None, TEXT)),),
                            Lit(text, TEXT)), TEXT)


def _encoding(value: TypedScalar, node: exp.Encode | exp.Decode) -> TypedScalar:
    """``encode(bytea, format)`` and ``decode(text, format)``: the function of the format, a
    text constant (``hex``, ``base64`` or ``escape``, in any case)."""
    name = function_name(node)
    given = node.args["charset"]
    if not (isinstance(given, exp.Literal) and given.is_string):
        raise UnsupportedError.at(f"{name}'s format must be a text constant", given)
    if given.name.lower() not in bytea.ENCODERS:
        raise InvalidValueError.at(f'unrecognized encoding: "{given.name}"', given)
    argument = coerce(value, BYTEA if isinstance(node, exp.Encode) else TEXT)
    if argument is None:
        raise SqlTypeError.at(f"function {name}({value.type}, text) does not exist", node)
    return call(f"{name}_{given.name.lower()}", [argument], node)


def to_jsonb(value: TypedScalar, node: exp.Expr) -> TypedScalar:
    """``to_jsonb(value)``: a JSONB value is itself, others are converted (NULL stays NULL)."""
    if value.type.kind is Kind.JSONB:
        return value
    return call("to_jsonb", [value], node,
                f"function {function_name(node)}({value.type}) does not exist")


def _builtin(binder: ExprBinder, node: exp.Func) -> TypedScalar:
    func, expected = _SIGNATURES[type(node)]
    names = _ARGUMENTS.get(type(node), ("this",))
    args = [binder.bind(x) for x in (node.args.get(name) for name in names) if x is not None]
    if isinstance(node, exp.Substring) and any(is_string_literal(a) for a in args[1:]):
        # PostgreSQL reads substring(s FROM 'text') as a regular expression match, and
        # matview prints substr(s, '2') as that in a view's text: both are refused
        raise UnsupportedError.at(f"{function_name(node)} with a text argument is not "
                                  "supported yet (substring(s FROM pattern) matches a "
                                  "regular expression): write integer positions", node)
    signature = f"function {function_name(node)}({', '.join(str(a.type) for a in args)})"
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
