"""Operators and the other expressions SQL spells with symbols and keywords, lowered to IR
calls for ``scalars.ExprBinder``: arithmetic (with PostgreSQL's date, time and interval
arithmetic), negation, comparisons (``binary``: the operands cast to their common type),
AND, OR and NOT, IS, BETWEEN, LIKE and ILIKE, ``||``, CASE and ``ARRAY[...]``. Each
``bind_*`` function binds one kind of node with the binder given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from matview.ir.intervals import Interval
from matview.ir.scalar import Case, Lit, balanced
from matview.ir.types import (
    BOOLEAN,
    BYTEA,
    DATE,
    DOUBLE,
    INT,
    INTEGER_KINDS,
    INTERVAL,
    TEXT,
    TIME,
    TIMESTAMP,
    Kind,
    SqlType,
)
from matview.sql.coerce import TypedScalar, call, cast, is_string_literal, require, unify
from matview.sql.errors import SqlTypeError, UnsupportedError
from matview.sql.literals import literal
from matview.sql.walk import chain
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

ARITHMETIC = {exp.Add: "add", exp.Sub: "sub", exp.Mul: "mul", exp.Div: "div", exp.Mod: "mod"}
COMPARISON = {exp.EQ: "eq", exp.NEQ: "ne", exp.LT: "lt", exp.LTE: "le", exp.GT: "gt",
              exp.GTE: "ge"}
NEGATED = {"eq": "ne", "ne": "eq", "lt": "ge", "le": "gt", "gt": "le", "ge": "lt"}
"""Each comparison's negation: ``NOT (a op b)`` is ``a NEGATED[op] b``, NULL when either is."""
_FACTORS = (*INTEGER_KINDS, Kind.NUMERIC, Kind.DOUBLE, Kind.NULL)
"""The types of the numbers an interval is multiplied or divided by."""
SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "eq": "=", "ne": "<>",
           "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def bind_neg(binder: ExprBinder, node: exp.Neg) -> TypedScalar:
    if isinstance(node.this, exp.Literal) and not node.this.is_string:
        return literal(node.this, negative=True)
    value = binder.bind(node.this)
    if isinstance(value.expr, Lit) and isinstance(value.expr.value, Interval):
        return TypedScalar(Lit(-value.expr.value, value.type), value.type)
    return call("interval_neg" if value.type == INTERVAL else "neg", [value], node)


def bind_array(binder: ExprBinder, node: exp.Array) -> TypedScalar:
    """``ARRAY[...]``: the elements cast to their common type (text for string literals,
    when all are); ``ARRAY[]`` has no type unless cast (``calls``)."""
    if not node.expressions:
        raise SqlTypeError.at("cannot determine the type of an empty array; "
                              "write its type: ARRAY[]::int[]", node)
    elements = unify([binder.bind(x) for x in node.expressions], node,
                     lambda a, b: f"ARRAY types {a} and {b} cannot be matched")
    if elements[0].type.kind is Kind.NULL:
        elements = [cast(e, TEXT) for e in elements]
    if elements[0].type.kind is Kind.ARRAY:
        raise UnsupportedError.at("multidimensional arrays are not supported", node)
    if elements[0].type.kind in (Kind.INTERVAL, Kind.TIMETZ, Kind.MZ_TIMESTAMP):
        raise UnsupportedError.at(f"arrays of {elements[0].type} are not supported", node)
    return call("array", elements, node)


def bind_arithmetic(binder: ExprBinder, node: exp.Binary) -> TypedScalar:
    return binary(binder, ARITHMETIC[type(node)], node.this, node.expression, node)


def binary(binder: ExprBinder, func: str, left: exp.Expr, right: exp.Expr,
           node: exp.Expr) -> TypedScalar:
    """The arithmetic or comparison ``func`` of ``left`` and ``right``, cast to their
    common type."""
    symbol = SYMBOLS[func]

    def mismatch(a: SqlType, b: SqlType) -> str:
        return f"operator does not exist: {a} {symbol} {b}"

    values = [binder.bind(left), binder.bind(right)]
    if func == "sub" and any(v.type.kind is Kind.TIME for v in values) and all(
            v.type.kind in (Kind.TIME, Kind.NULL) or is_string_literal(v) for v in values):
        # time - time: the interval between them (PostgreSQL's time_mi_time)
        spans = [cast(cast(v, TIME, node), INTERVAL) for v in values]
        return call("interval_sub", spans, node, mismatch(TIME, TIME))
    if func in ("add", "sub") and any(v.type.kind is Kind.INTERVAL for v in values):
        return _shift(func, values, node, mismatch)
    if func in ("add", "sub") and any(v.type.kind is Kind.DATE for v in values):
        return _date_arithmetic(func, values, node, mismatch)
    if func in ("mul", "div") and any(v.type.kind is Kind.INTERVAL for v in values):
        return _scaled(func, values, node, mismatch)
    operands = unify(values, node, mismatch)
    if func in COMPARISON.values() and operands[0].type == INTERVAL:
        # PostgreSQL compares intervals by length: '1 month' = '30 days'
        operands = [call("interval_key", [v], node) for v in operands]
    return call(func, operands, node, mismatch(operands[0].type, operands[1].type))


def _scaled(func: str, values: list[TypedScalar], node: exp.Expr,
            mismatch: Callable[[SqlType, SqlType], str]) -> TypedScalar:
    """An interval times a number (either first) or divided by one, the number cast to
    DOUBLE PRECISION as PostgreSQL casts it (``ir.interval_scaling``: fractions of months
    and days cascade down into days and microseconds)."""
    if func == "mul" and values[1].type.kind is Kind.INTERVAL:
        values.reverse()
    error = mismatch(values[0].type, values[1].type)
    if values[0].type.kind is not Kind.INTERVAL or values[1].type.kind not in _FACTORS:
        raise SqlTypeError.at(error, node)
    return call(f"interval_{func}", [values[0], cast(values[1], DOUBLE)], node, error)


def _shift(func: str, values: list[TypedScalar], node: exp.Expr,
           mismatch: Callable[[SqlType, SqlType], str]) -> TypedScalar:
    """A timestamp or date plus or minus an interval (``interval + timestamp`` too); a time
    so shifted is the time of day of the shift of that time on 1970-01-01 (wrapping around
    midnight; days and months change nothing), as in PostgreSQL, a time with time zone its
    time of day so shifted (``timetz_shift``, the offset kept). Two intervals add (or
    subtract) field by field."""
    if all(v.type.kind is Kind.INTERVAL for v in values):
        return call(f"interval_{func}", values, node, mismatch(INTERVAL, INTERVAL))
    if func == "add" and values[0].type.kind is Kind.INTERVAL:
        values.reverse()
    if is_string_literal(values[0]):
        values[0] = cast(values[0], TIMESTAMP, node)
    error = mismatch(values[0].type, values[1].type)
    if values[0].type.kind is Kind.TIME:
        return cast(call(func, [cast(values[0], TIMESTAMP), values[1]], node, error), TIME)
    if values[0].type.kind is Kind.TIMETZ:
        by = values[1] if func == "add" else call("interval_neg", [values[1]], node, error)
        return call("timetz_shift", [values[0], by], node, error)
    return call(func, values, node, error)


def _date_arithmetic(func: str, values: list[TypedScalar], node: exp.Expr,
                     mismatch: Callable[[SqlType, SqlType], str]) -> TypedScalar:
    """PostgreSQL's operators on dates: ``date - date`` is the INT number of days
    between them (a string literal or NULL beside a date is a date there); ``date +
    int``, ``int + date`` and ``date - int`` are the DATE that many days later (or
    earlier); ``date ± time`` and ``time + date`` the TIMESTAMP at that time of the day.
    Any other operand is an error."""
    error = mismatch(values[0].type, values[1].type)
    unknown = [is_string_literal(v) or v.type.kind is Kind.NULL for v in values]
    if func == "sub" and all(v.type.kind is Kind.DATE or u
                             for v, u in zip(values, unknown, strict=True)):
        return call("days_between", [cast(v, DATE, node) for v in values], node, error)
    if func == "add" and values[1].type.kind is Kind.DATE:
        values.reverse()
    moment, days = values
    if moment.type.kind is Kind.DATE and days.type.kind is Kind.TIME:
        return call(func, [cast(moment, TIMESTAMP), cast(days, INTERVAL)], node, error)
    if moment.type.kind is not Kind.DATE or days.type.kind not in (Kind.INT, Kind.NULL):
        raise SqlTypeError.at(error, node)
    return call(func, [moment, cast(days, INT)], node, error)


def bind_connective(binder: ExprBinder, node: exp.And | exp.Or) -> TypedScalar:
    """A chain of ANDs (ORs), however long, as a balanced tree of its operands."""
    word = node.key.upper()
    args = [require(binder.bind(x), BOOLEAN, f"argument of {word}", x)
            for x in chain(node, type(node))]
    return TypedScalar(balanced(node.key, [a.expr for a in args]), BOOLEAN)


def bind_not(binder: ExprBinder, node: exp.Not) -> TypedScalar:
    return call("not", [binder.predicate(node.this, "NOT")], node)


def bind_is(binder: ExprBinder, node: exp.Is) -> TypedScalar:
    test = node.expression
    if isinstance(test, exp.Null):
        result = call("is_null", [binder.bind(node.this)], node)
    elif isinstance(test, exp.Boolean):
        value = binder.predicate(node.this, f"IS {'TRUE' if test.this else 'FALSE'}")
        if not test.this:
            value = call("not", [value], node)
        result = call("coalesce", [value, TypedScalar(Lit(False, BOOLEAN), BOOLEAN)], node)
    else:
        raise UnsupportedError.at("IS is only supported with NULL, TRUE and FALSE", node)
    return call("not", [result], node) if node.args.get("negate") else result


def bind_between(binder: ExprBinder, node: exp.Between) -> TypedScalar:
    if node.args.get("symmetric"):
        raise UnsupportedError.at("BETWEEN SYMMETRIC is not supported yet", node)
    low = binary(binder, "ge", node.this, node.args["low"], node)
    high = binary(binder, "le", node.this, node.args["high"], node)
    return call("and", [low, high], node)


def bind_like(binder: ExprBinder, node: exp.Like | exp.ILike) -> TypedScalar:
    word = "ILIKE" if isinstance(node, exp.ILike) else "LIKE"
    args = [require(binder.bind(x), TEXT, f"argument of {word}", x)
            for x in (node.this, node.expression)]
    if word == "ILIKE":
        args = [call("lower", [arg], node) for arg in args]
    result = call("like", args, node)
    return call("not", [result], node) if node.args.get("negate") else result


MATCH_OPERATORS = {"~": "regex_match", "~*": "regex_match_ci"}
"""The regular expression match operators (``ir.regex_match``); ``!~`` and ``!~*`` are
their negations."""


def bind_regex_match(binder: ExprBinder,
                     node: exp.RegexpLike | exp.RegexpILike | exp.Operator) -> TypedScalar:
    """``text ~ pattern``, ``~*``, and ``OPERATOR(pg_catalog.~)``, as psql writes them."""
    if isinstance(node, exp.Operator):
        symbol = str(node.args["operator"]).split(".")[-1].strip()
        negated = symbol.startswith("!")
        func = MATCH_OPERATORS.get(symbol.removeprefix("!"))
        if func is None:
            raise UnsupportedError.at(f"operator {symbol} is not supported", node)
    else:
        negated, func = False, MATCH_OPERATORS["~*" if isinstance(node, exp.RegexpILike)
                                               else "~"]
    args = [require(binder.bind(x), TEXT, "argument of ~", x)
            for x in (node.this, node.expression)]
    result = call(func, args, node)
    return call("not", [result], node) if negated else result


def bind_concat(binder: ExprBinder, node: exp.DPipe) -> TypedScalar:
    """``a || b``: of two BYTEA values (or one and a NULL or string literal) a BYTEA, else
    the TEXT of the operands' texts."""
    args = [binder.bind(x) for x in (node.this, node.expression)]
    joined = BYTEA if any(a.type == BYTEA for a in args) and all(
        a.type.kind in (Kind.BYTEA, Kind.NULL) or is_string_literal(a) for a in args) else TEXT
    return call("concat", [cast(a, joined, node) for a in args], node)


def bind_case(binder: ExprBinder, node: exp.Case) -> TypedScalar:
    subject = node.this
    conditions = [
        binary(binder, "eq", subject, when.this, when) if subject is not None
        else binder.predicate(when.this, "CASE/WHEN")
        for when in node.args["ifs"]
    ]
    default = node.args.get("default")
    values = [binder.bind(when.args["true"]) for when in node.args["ifs"]]
    values.append(binder.bind(default) if default is not None else literal(exp.Null()))
    values = unify(values, node, lambda a, b: f"CASE types {a} and {b} cannot be matched")
    whens = tuple((c.expr, v.expr) for c, v in zip(conditions, values[:-1], strict=True))
    return TypedScalar(Case(whens, values[-1].expr), values[-1].type)
