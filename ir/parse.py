"""The parser of the IR's text form (``matview.ir.render`` prints it and describes it):
``parse_plan`` and ``parse_scalar``, built with lark from ``grammar.lark``.

A ``//`` outside a quoted string or name starts a comment, which runs to the end of the line; a
line holding only a comment is skipped. ``#i{name}`` parses as column i whatever the name. So
parsing reads past annotations and names: ``render_plan(parse_plan(t), o) == t`` for every text
``t`` that ``render_plan`` printed with options ``o``.

``parse_plan(render_plan(p, o)) == p``, whatever the options ``o``, for every plan whose
literals hold values of their type (``int`` for int, ``float`` for double, ``Decimal`` for
numeric, ...) and whose types are in the normal form of ``types.type_from_name``;
``render_plan`` raises ``ValueError`` on other plans. (``arity``, ``types`` and ``keys`` also
need the plan's column types, as ``humanized`` needs those before a ``flat_map``: rendering
with them raises what ``Relation.types`` raises on a plan that does not type-check.) NaN never
equals itself: a double NaN parses as ``math.nan``, so only plans holding that very object
compare equal after a round trip. ``parse_plan`` skips lines of spaces; malformed text raises
``PlanSyntaxError``.

A subquery in an expression prints as ``@N`` (``exists(@0)``, ``in(#1, @1)``, ``@2``); the
plan of subquery N of an operator follows the operator's inputs, one level deeper, under a
line ``subquery @N``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedToken
from lark.lexer import PatternStr
from matview.ir import intervals
from matview.ir.aggregate_call import Aggregate, OrderedScalar
from matview.ir.functions import by_symbol
from matview.ir.joins import JoinPlan
from matview.ir.relation import (
    Constant,
    Field,
    Get,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
)
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
    transform,
)
from matview.ir.sort_keys import SortKey
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step
from matview.ir.subquery import map_own_scalars, with_rel
from matview.ir.types import (
    BOOLEAN,
    INT,
    INTEGER_KINDS,
    NULLTYPE,
    TEXT,
    Kind,
    SqlType,
    array_of,
    type_from_name,
)
from matview.ir.window_call import WHOLE_PARTITION, Frame, WindowCall

INDENT = "  "
"""The indentation of an input below its consumer."""


class PlanSyntaxError(ValueError):
    """Text that is no plan (or scalar); the message starts with ``line L, column C:``."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.line = line
        self.column = column


# A name that may print unquoted (unless it is one of the ``KEYWORDS``).
BARE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INTEGER = re.compile(r"-?[0-9]+")
# The type a literal without ``::type`` has, by the form of its value.
_IMPLICIT_TYPE = {
    "NUMBER": INT, "STRING": TEXT, "TRUE": BOOLEAN, "FALSE": BOOLEAN, "NULL": NULLTYPE
}



def parse_plan(text: str) -> Relation:
    """The plan ``text`` (as ``render_plan`` prints it, with any options) denotes; lines of
    spaces and lines of a comment alone are skipped."""
    lines = [(n, line) for n, line in enumerate(text.split("\n"), 1) if not _blank(line)]
    if not lines:
        raise PlanSyntaxError("no plan", 1, 1)
    at = 0

    def node(depth: int) -> Relation:
        nonlocal at
        number, line = lines[at]
        indent = _indent(line)
        if indent != len(INDENT) * depth:
            raise PlanSyntaxError(
                f"expected an indentation of {len(INDENT) * depth} spaces, found {indent}",
                number,
                indent + 1,
            )
        header = _parse(line, "header", number)
        assert isinstance(header, _Header)
        at += 1
        children = []
        while at < len(lines) and _indent(lines[at][1]) > indent:
            children.append(node(depth + 1))
        inputs = [c for c in children if not isinstance(c, _Slot)]
        if header.inputs is not None and len(inputs) != header.inputs:
            raise PlanSyntaxError(
                f"{header.operator} takes {_INPUTS.get(header.inputs, f'{header.inputs} inputs')}, "
                f"found {len(inputs)}",
                number,
                indent + 1,
            )
        plans = {c.number: c.plan for c in children if isinstance(c, _Slot)}
        return _fill(header.build(tuple(inputs)), plans, number, indent)

    plan = node(0)
    if at < len(lines):
        number, line = lines[at]
        raise PlanSyntaxError("a plan has one root operator", number, _indent(line) + 1)
    return plan


def with_subplans(rel: Relation, plans: Sequence[Relation]) -> Relation:
    """``rel`` whose operator's subqueries were parsed as references ``@N`` (a plan's JSON
    carries their plans apart), each given the plan ``plans[N]``."""
    return _fill(rel, dict(enumerate(plans)), 1, 0)


def _fill(rel: Relation, plans: dict[int, Relation | None], line: int, indent: int
          ) -> Relation:
    """``rel`` with each subquery ``@N`` of its operator given the plan ``plans[N]``."""

    def fill(node: Scalar) -> Scalar:
        if isinstance(node, (Exists, InSubquery, ScalarSubquery)) and isinstance(node.rel,
                                                                                  _Slot):
            plan = plans.get(node.rel.number)
            if plan is None:
                raise PlanSyntaxError(f"no plan for subquery @{node.rel.number}", line,
                                      indent + 1)
            return with_rel(node, plan)
        return node

    return map_own_scalars(rel, lambda e: transform(e, fill))


def parse_scalar(text: str) -> Scalar:
    """The scalar expression ``text`` (as ``render_scalar`` prints it) denotes."""
    expr = _parse(text, "scalar", 1)
    assert isinstance(expr, Scalar)
    return expr


def _blank(line: str) -> bool:
    """Whether ``line`` holds nothing but spaces and a comment."""
    return line.lstrip(" ")[:2] in ("", "//")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


class _Invalid(Exception):
    """Raised while building the IR from a parse: ``token`` is where the text is wrong."""

    def __init__(self, message: str, token: Token) -> None:
        super().__init__(message)
        self.message = message
        self.token = token


def _parse(text: str, start: str, first_line: int) -> object:
    """What ``text`` builds from rule ``start``; ``first_line`` is the number of its first line."""
    try:
        return _PARSER.parse(text, start=start)
    except UnexpectedCharacters as e:
        message, line, column = f"unexpected character {e.char!r}", e.line, e.column
    except UnexpectedToken as e:
        # ``accepts`` is empty when nothing but the end of the text could follow.
        expected = ", ".join(sorted({_spell(name) for name in e.accepts})) or "end of text"
        if e.token.type == "$END":
            lines = text.split("\n")
            message = f"unexpected end of text, expected {expected}"
            line, column = len(lines), len(lines[-1]) + 1
        else:
            message = f"unexpected {e.token.value!r}, expected {expected}"
            line, column = e.line, e.column
    except _Invalid as e:
        message, line, column = e.message, e.token.line, e.token.column
    raise PlanSyntaxError(message, first_line + line - 1, column)


def _spell(terminal: str) -> str:
    """A terminal as a reader knows it: ``'('`` for a string, its name for the others."""
    if terminal in ("$END", "<END-OF-FILE>"):
        return "end of text"
    pattern = _PARSER.get_terminal(terminal).pattern
    return repr(pattern.value) if isinstance(pattern, PatternStr) else terminal.lower()


_INPUTS = {0: "no inputs", 1: "one input"}
_TESTS = {("exists", 1), ("in", 2)}
"""The calls that spell the subquery tests ``exists(@N)`` and ``in(EXPR, @N)``."""


@dataclass(frozen=True)
class _Slot(Relation):
    """Subquery ``@number`` while parsing: in an expression (``plan`` None), or the block
    ``subquery @number`` holding its ``plan``."""

    number: int
    plan: Relation | None = None


@dataclass(frozen=True)
class _Where:
    """A join's ``where=(...)`` predicates."""

    predicates: tuple[Scalar, ...]


@dataclass(frozen=True)
class _Header:
    """A parsed operator line: it takes ``inputs`` inputs (any number when None)."""

    operator: str
    inputs: int | None
    build: Callable[[tuple[Relation, ...]], Relation]


def _unquote(token: Token) -> str:
    escaped = token.startswith("E")
    mark = token[1] if escaped else token[0]
    body = token[2 if escaped else 1 : -1].replace(mark * 2, mark)
    if not escaped:
        return body
    try:
        return body.encode("ascii").decode("unicode_escape")
    except UnicodeError as e:
        raise _Invalid(f"bad escape in {token}: {e.reason}", token) from None


def _read_value(token: Token, t: SqlType) -> object:
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
            text = _unquote(token)
            if kind is Kind.TEXT:
                return text
            if kind is Kind.DOUBLE:
                value = float(text)
                return math.nan if math.isnan(value) else value
            if kind is Kind.NUMERIC:
                return Decimal(text)
            if kind is Kind.DATE:
                return date.fromisoformat(text)
            if kind is Kind.TIMESTAMP:
                return datetime.fromisoformat(text)
            if kind is Kind.INTERVAL:
                return intervals.parse(text)
            if kind is Kind.JSONB:
                return text
    except (ValueError, ArithmeticError):
        pass
    raise _Invalid(f"{token} is not a value of type {t}", token)


@v_args(inline=True)
class _Builder(Transformer[Token, object]):
    """Builds IR objects from parse trees; each method is named after its grammar rule."""

    def header(self, header: _Header) -> _Header:
        return header

    def get(self, name: Token, *fields: Field) -> _Header:
        get = Get(str(name), fields)
        return _Header("Get", 0, lambda _: get)

    def field(self, name: Token, t: SqlType) -> Field:
        return Field(str(name), t)

    def constant(
        self, types: tuple[SqlType, ...], rows: tuple[tuple[tuple[Token, ...], Token], ...]
    ) -> _Header:
        values = []
        for tokens, multiplicity in rows:
            if len(tokens) != len(types):
                message = f"a row needs {len(types)} values, found {len(tokens)}"
                raise _Invalid(message, multiplicity)
            row = tuple(_read_value(token, t) for token, t in zip(tokens, types, strict=True))
            values.append((row, int(multiplicity[1:])))
        constant = Constant(tuple(values), types)
        return _Header("Constant", 0, lambda _: constant)

    def types(self, *types: SqlType) -> tuple[SqlType, ...]:
        return types

    def rows(
        self, *rows: tuple[tuple[Token, ...], Token]
    ) -> tuple[tuple[tuple[Token, ...], Token], ...]:
        return rows

    def row(self, *tokens: Token) -> tuple[tuple[Token, ...], Token]:
        return tokens[:-1], tokens[-1]

    def linear(self, *steps: Step) -> _Header:
        return _Header("Linear", 1, lambda inputs: Linear(inputs[0], steps))

    def filter(self, predicates: tuple[Scalar, ...]) -> Filter:
        return Filter(predicates)

    def map(self, exprs: tuple[Scalar, ...]) -> Map:
        return Map(exprs)

    def project(self, *columns: int) -> Project:
        return Project(columns)

    def flat_map(self, calls: tuple[Scalar, ...], ordinality: Token | None) -> FlatMap:
        if not calls or not all(isinstance(c, Call) for c in calls):
            raise _Invalid("flat_map takes table function calls", ordinality or Token("", ""))
        return FlatMap(tuple(c for c in calls if isinstance(c, Call)), ordinality is not None)

    def repeat(self, count: Scalar) -> Repeat:
        return Repeat(count)

    def join(self, *children: tuple[Scalar, ...] | JoinPlan | _Where | None) -> _Header:
        *classes, where, plan = children
        equivalences = tuple(c for c in classes if isinstance(c, tuple))
        assert plan is None or isinstance(plan, JoinPlan)
        predicates = () if where is None else where.predicates
        assert isinstance(predicates, tuple)
        return _Header("Join", None,
                       lambda inputs: Join(inputs, equivalences, plan, predicates))

    def join_where(self, predicates: tuple[Scalar, ...]) -> _Where:
        return _Where(predicates)

    def equivalence(self, *exprs: Scalar) -> tuple[Scalar, ...]:
        return exprs

    def join_plan(self, kind: Token, *orders: tuple[int, ...]) -> JoinPlan:
        return JoinPlan(str(kind), orders)

    def order(self, *indexes: Token) -> tuple[int, ...]:
        return tuple(int(i) for i in indexes)

    def reduce(
        self, group_key: tuple[Scalar, ...], aggregates: tuple[Aggregate, ...]
    ) -> _Header:
        return _Header("Reduce", 1, lambda inputs: Reduce(inputs[0], group_key, aggregates))

    def aggregates(self, *aggregates: Aggregate) -> tuple[Aggregate, ...]:
        return aggregates

    def count_star(self, func: Token) -> Aggregate:
        return Aggregate(str(func), None)

    def aggregate(self, func: Token, expr: Scalar, separator: str | None,
                  order: tuple[OrderedScalar, ...] | None) -> Aggregate:
        return Aggregate(str(func), expr, order or (), separator)

    def agg_separator(self, token: Token) -> str:
        return _unquote(token)

    def agg_order(self, *keys: OrderedScalar) -> tuple[OrderedScalar, ...]:
        return keys

    def ordered_scalar(self, expr: Scalar, desc: Token | None, nulls: Token | None
                       ) -> OrderedScalar:
        descending = desc is not None
        return (expr, descending, descending if nulls is None else nulls.endswith("first"))

    def union(self) -> _Header:
        return _Header("Union", None, Union)

    def topk(self, *children: SortKey | int | None) -> _Header:
        *keys, limit, offset = children
        order_by = tuple(k for k in keys if isinstance(k, tuple))
        assert not isinstance(limit, tuple) and not isinstance(offset, tuple)
        return _Header("TopK", 1,
                       lambda inputs: TopK(inputs[0], order_by, limit, offset or 0))

    def sort_key(self, column: int, desc: Token | None, nulls: Token | None) -> SortKey:
        descending = desc is not None
        return (column, descending, descending if nulls is None else nulls.endswith("first"))

    def topk_limit(self, count: Token) -> int:
        return int(count)

    def topk_offset(self, count: Token) -> int:
        return int(count)

    def window(self, *children: int | WindowCall) -> _Header:
        partition_by = tuple(c for c in children if isinstance(c, int))
        calls = tuple(c for c in children if isinstance(c, WindowCall))
        return _Header("Window", 1, lambda inputs: Window(inputs[0], partition_by, calls))

    def letrec(self, *children: Token) -> _Header:
        *names, result, limit, at_limit = children
        if int(result) >= len(names):
            raise _Invalid(f"result={result} names no binding of {len(names)}", result)

        def build(values: tuple[Relation, ...]) -> Relation:
            return LetRec(tuple(str(n) for n in names), values, int(result), int(limit),
                          str(at_limit))

        return _Header("LetRec", len(names), build)

    def recur(self, index: Token, name: Token, types: tuple[SqlType, ...]) -> _Header:
        recur = Recur(int(index), str(name), types)
        return _Header("Recur", 0, lambda _: recur)

    def window_call(self, func: Token, args: tuple[Scalar, ...],
                    *rest: SortKey | Frame | None) -> WindowCall:
        order_by = tuple(k for k in rest if isinstance(k, tuple))
        frame = rest[-1] if isinstance(rest[-1], Frame) else WHOLE_PARTITION
        return WindowCall(str(func), args, order_by, frame)

    def frame(self, units: Token, start: int | None, end: int | None) -> Frame:
        return Frame(str(units), start, end)

    def unbounded_preceding(self) -> None:
        return None

    def unbounded_following(self) -> None:
        return None

    def current_row(self) -> int:
        return 0

    def preceding(self, count: Token) -> int:
        return -int(count)

    def following(self, count: Token) -> int:
        return int(count)

    def subplan(self, token: Token) -> _Header:
        number = int(token[1:])
        return _Header("subquery", 1, lambda inputs: _Slot(number, inputs[0]))

    def outer(self, token: Token, t: SqlType) -> Outer:
        level = token.index("#")
        return Outer(level, int(token[level + 1:]), t)

    def scalar_subquery(self, token: Token) -> ScalarSubquery:
        return ScalarSubquery(_Slot(int(token[1:])))

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
        return Lit(_read_value(token, t), t)

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
            raise _Invalid(str(e), name) from None
        if precision is not None and t.kind is not Kind.NUMERIC:
            raise _Invalid(f"type {t} takes no precision", precision)
        return t if array is None else array_of(t)

    def array_suffix(self) -> bool:
        return True

    def name(self, token: Token) -> Token:
        """The name ``token`` spells, still a token for its position."""
        if token.type == "NAME":
            return token
        return token.update(value=_unquote(token))


def _function(operator: Token, arity: int) -> str:
    try:
        return by_symbol(operator, arity).name
    except KeyError:
        raise _Invalid(f"no function is the operator {operator} of {arity} argument(s)",
                       operator) from None


_PARSER = Lark(
    (Path(__file__).parent / "grammar.lark").read_text(),
    parser="lalr",
    start=["header", "scalar"],
    maybe_placeholders=True,
    transformer=_Builder(),
)
# The grammar's keywords: a name spelled as one prints quoted.
KEYWORDS = frozenset(
    t.pattern.value
    for t in _PARSER.terminals
    if isinstance(t.pattern, PatternStr) and BARE_NAME.fullmatch(t.pattern.value)
)
