"""The scalars of the IR's text form as its parser (``matview.ir.parse``) builds them from
parse trees: ``ScalarBuilder``, the lark transformer's rules for scalar expressions, values,
types and names, which ``parse_relations.PlanBuilder`` extends with the operator lines.

A value is read as a value of its type (``read_value``): a literal's ``::type``, or the type
its form implies; a string or name spelled ``E'...'`` holds Python's backslash escapes
(``unquote``). A subquery ``@N`` in an expression is a ``Slot`` until the operator's
``subquery @N`` block gives it its plan. Text that parses but builds no IR raises ``Invalid``
at the token where it is wrong.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from lark import Token, Transformer, v_args
from matview.ir import intervals, times, timetz
from matview.ir.eval_error import EvalError
from matview.ir.functions import by_symbol
from matview.ir.relation import Relation
from matview.ir.scalar import (
    Call,
    Case,
    Cast,
    Col,
    Exists,
    InSubquery,
    Lit,
    Outer,
    Scalar,
    ScalarSubquery,
)
from matview.ir.types import (
    BOOLEAN,
    INT,
    INTEGER_KINDS,
    NULLTYPE,
    TEXT,
    TIMESTAMP_KINDS,
    Kind,
    SqlType,
    array_of,
    type_from_name,
)

_INTEGER = re.compile(r"-?[0-9]+")
# The type a literal without ``::type`` has, by the form of its value.
_IMPLICIT_TYPE = {
    "NUMBER": INT, "STRING": TEXT, "TRUE": BOOLEAN, "FALSE": BOOLEAN, "NULL": NULLTYPE
}
_TESTS = {("exists", 1), ("in", 2)}
"""The calls that spell the subquery tests ``exists(@N)`` and ``in(EXPR, @N)``."""


class Invalid(Exception):
    """Raised while building the IR from a parse: ``token`` is where the text is wrong."""

    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


@dataclass(frozen=True)
class Slot(Relation):
    """Subquery ``@number`` while parsing: in an expression (``plan`` None), or the block
    ``subquery @number`` holding its ``plan``."""

    number: int
    plan: Relation | None = None


def unquote(token: Token) -> str:
    escaped = token.startswith("E")
    mark = token[1] if escaped else token[0]
    body = token[2 if escaped else 1 : -1].replace(mark * 2, mark)
    if not escaped:
        return body
    try:
        return body.encode("ascii").decode("unicode_escape")
    except UnicodeError as e:
        raise Invalid(f"bad escape in {token}: {e.reason}", token) from None


def read_value(token: Token, t: SqlType) -> object:
    """The value of type ``t`` that the value ``token`` spells."""
    kind = t.kind
    try:
        if token.type == "NULL":
            return None
        if token.type in ("TRUE", "FALSE") and kind is Kind.BOOLEAN:
            return token.type == "TRUE"
        if token.type == "NUMBER":
            if kind in INTEGER_KINDS and _INTEGER.fullmatch(token):
                return int(token)
            if kind is Kind.NUMERIC:
                return Decimal(str(token))
            if kind is Kind.DOUBLE:
                return float(token)
        if token.type == "STRING":
            text = unquote(token)
            if kind is Kind.TEXT:
                return text
            if kind is Kind.DOUBLE:
                value = float(text)
                return math.nan if math.isnan(value) else value
            if kind is Kind.NUMERIC:
                return Decimal(text)
            if kind is Kind.DATE:
                return date.fromisoformat(text)
            if kind in TIMESTAMP_KINDS:
                return datetime.fromisoformat(text)
            if kind is Kind.TIME:
                return times.parse(text)
            if kind is Kind.TIMETZ:
                return timetz.parse(text)
            if kind is Kind.INTERVAL:
                return intervals.parse(text)
            if kind in (Kind.JSONB, Kind.UUID):
                return text
            if kind is Kind.BYTEA:
                return bytes.fromhex(text.removeprefix("\\x"))
    except (ValueError, ArithmeticError, EvalError):
        pass
    raise Invalid(f"{token} is not a value of type {t}", token)


@v_args(inline=True)
class ScalarBuilder(Transformer[Token, object]):
    """Builds scalar expressions, values, types and names from parse trees; each method is
    named after its grammar rule."""

    def outer(self, token: Token, t: SqlType) -> Outer:
        level = token.index("#")
        return Outer(level, int(token[level + 1:]), t)

    def scalar_subquery(self, token: Token) -> ScalarSubquery:
        return ScalarSubquery(Slot(int(token[1:])))

    def scalars(self, *exprs: Scalar) -> tuple[Scalar, ...]:
        return exprs

    def column(self, index: int) -> Col:
        return Col(index)

    def column_ref(self, token: Token, name: Token | None) -> int:
        """The index of a column reference; its name (``#i{name}``) says nothing more."""
        return int(token[1:])

    def column_name(self, name: Token) -> Token:
        return name

    def literal(self, token: Token, t: SqlType | None) -> Lit:
        t = _IMPLICIT_TYPE[token.type] if t is None else t
        return Lit(read_value(token, t), t)

    def binary(self, left: Scalar, operator: Token, right: Scalar) -> Call:
        return Call(_function(operator, 2), (left, right))

    def prefix(self, operator: Token, arg: Scalar) -> Call:
        return Call(_function(operator, 1), (arg,))

    def binary_operator(self, operator: Token) -> Token:
        return operator

    def prefix_operator(self, operator: Token) -> Token:
        return operator

    def call(self, func: Token, args: tuple[Scalar, ...]) -> Scalar:
        """A function call, or the subquery test ``exists(@N)`` or ``in(EXPR, @N)``."""
        last = args[-1] if args else None
        if isinstance(last, ScalarSubquery) and (str(func), len(args)) in _TESTS:
            return Exists(last.rel) if len(args) == 1 else InSubquery(args[0], last.rel)
        return Call(str(func), args)

    def case(self, *exprs: Scalar) -> Case:
        pairs = tuple(zip(exprs[:-1:2], exprs[1:-1:2], strict=True))
        return Case(pairs, exprs[-1])

    def cast(self, expr: Scalar, to: SqlType) -> Cast:
        return Cast(expr, to)

    def value(self, token: Token) -> Token:
        return token

    def type(self, name: Token, precision: Token | None, scale: Token | None,
             array: bool | None) -> SqlType:
        try:
            t = type_from_name(str(name), None if precision is None else int(precision),
                               None if scale is None else int(scale))
        except ValueError as e:
            raise Invalid(str(e), name) from None
        if precision is not None and t.kind is not Kind.NUMERIC:
            raise Invalid(f"type {t} takes no precision", precision)
        return t if array is None else array_of(t)

    def array_suffix(self) -> bool:
        return True

    def name(self, token: Token) -> Token:
        """The name ``token`` spells, still a token for its position."""
        if token.type == "NAME":
            return token
        return token.update(value=unquote(token))


def _function(operator: Token, arity: int) -> str:
    try:
        return by_symbol(operator, arity).name
    except KeyError:
        raise Invalid(f"no function is the operator {operator} of {arity} argument(s)",
                       operator) from None
