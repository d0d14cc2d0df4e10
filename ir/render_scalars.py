"""The printer of the IR text form's scalars (``matview.ir.render`` prints the plans around
them and describes the whole form; ``matview.ir.parse`` reads it back): ``render_scalar``,
``render_value``, ``render_type``, ``render_name`` and ``render_column``.

Scalars: ``#i`` is column i. Operators of the function registry print parenthesized, infix
``(#0 + #1)`` or prefix ``(-#0)``, ``(NOT #0)`` (a space after ``-`` when the operand starts with
a digit: ``(- 5)`` negates 5, ``-5`` is a literal); other functions print ``name(args)``. Then
``case when C then V ... else D end`` and ``cast(E as TYPE)``. A correlated reference
(``scalar.Outer``) prints ``^#i::TYPE``, one ``^`` per level. A subquery prints as the
number ``numbered`` gives its plan within the operator being printed: ``exists(@0)``,
``in(#1, @1)`` and the scalar subquery ``@2``; rendered outside a plan's line
(``render_scalar`` alone) it prints ``@?``.

Literals print their value, followed by ``::TYPE`` unless the value's form implies the type:
integers are ``int`` (``5``, ``-5``, but ``5::bigint``), quoted strings ``text``, ``true`` and
``false`` ``boolean``, and ``null`` the NULL type (``null::int`` is an int NULL). Doubles print
``repr`` (``1.5::double``, ``'inf'::double``), numerics their exact ``Decimal`` text
(``1.50::numeric(10,2)``), dates and timestamps ISO text (``'2024-01-31'::date``,
``'2024-01-31 10:00:00.500000'::timestamp``), intervals PostgreSQL's output text
(``'1 day 00:05:00'::interval``), jsonb its canonical text (``'{"a":1}'::jsonb``). Array
types print ``int[]``; array values have no literal form (``array(1, 2)`` is a call).
Inside a Constant, values print without the suffix: the header gives their types.

Strings are quoted SQL-style, ``'it''s'``; names (tables, fields, functions, aggregates, join
kinds) print bare when they are identifiers other than a keyword of the grammar, else quoted
``"two words"``. A string or name holding an unprintable character (a newline, say) prints as
``E'...'`` (``E"..."``) with Python's backslash escapes, so every operator stays on one line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime, time
from decimal import Decimal

from matview.ir import bytea, intervals, times, timetz
from matview.ir.column_names import name_at
from matview.ir.functions import REGISTRY, by_symbol
from matview.ir.parse import BARE_NAME, KEYWORDS
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
    type_from_name,
)

_PYTHON_TYPE_DEFAULTS = {int: INT, str: TEXT, bool: BOOLEAN, type(None): NULLTYPE}

_SUBPLANS: ContextVar[tuple[Relation, ...]] = ContextVar("subplans", default=())
"""The subquery plans of the operator whose line is being rendered, by number."""


def render_scalar(expr: Scalar, names: Sequence[str | None] = ()) -> str:
    """The text of the scalar expression ``expr``; column ``#i`` prints ``#i{name}`` when
    ``names[i]`` is a name (``humanized``), bare ``#i`` otherwise."""
    if isinstance(expr, Col):
        return render_column(expr.index, names)
    if isinstance(expr, Lit):
        text = render_value(expr.value, expr.type)
        if _PYTHON_TYPE_DEFAULTS.get(type(expr.value)) == expr.type:
            return text
        return f"{text}::{render_type(expr.type)}"
    if isinstance(expr, Call):
        args = [render_scalar(a, names) for a in expr.args]
        symbol = _operator_symbol(expr)
        if symbol is not None and len(args) == 2:
            return f"({args[0]} {symbol} {args[1]})"
        if symbol is not None:
            space = " " if symbol.isalpha() or args[0][0].isdigit() else ""
            return f"({symbol}{space}{args[0]})"
        return f"{render_name(expr.func)}({', '.join(args)})"
    if isinstance(expr, Case):
        whens = "".join(
            f"when {render_scalar(c, names)} then {render_scalar(v, names)} "
            for c, v in expr.whens
        )
        return f"case {whens}else {render_scalar(expr.default, names)} end"
    if isinstance(expr, Cast):
        return f"cast({render_scalar(expr.expr, names)} as {render_type(expr.to)})"
    if isinstance(expr, Outer):
        return f"{'^' * expr.level}#{expr.index}::{render_type(expr.type)}"
    if isinstance(expr, (Exists, InSubquery, ScalarSubquery)):
        plans = _SUBPLANS.get()
        ref = f"@{plans.index(expr.rel)}" if expr.rel in plans else "@?"
        if isinstance(expr, Exists):
            return f"exists({ref})"
        if isinstance(expr, InSubquery):
            return f"in({render_scalar(expr.expr, names)}, {ref})"
        return ref
    raise TypeError(f"not a scalar expression: {expr!r}")


@contextmanager
def numbered(plans: tuple[Relation, ...]) -> Iterator[None]:
    """Scalars rendered within refer to the subqueries ``plans`` as ``@0``, ``@1``..."""
    token = _SUBPLANS.set(plans)
    try:
        yield
    finally:
        _SUBPLANS.reset(token)


def render_column(index: int, names: Sequence[str | None]) -> str:
    """``#index``, with ``{name}`` when ``names`` name the column."""
    name = name_at(names, index)
    return f"#{index}" if name is None else f"#{index}{{{render_name(name)}}}"


def render_type(t: SqlType) -> str:
    """The text of the type ``t`` (``int``, ``numeric(10,2)``, ``int[]``)."""
    if t.kind is Kind.ARRAY:
        assert t.element is not None
        return render_type(t.element) + "[]"
    if type_from_name(t.kind.value, t.precision, t.scale) != t:
        raise ValueError(f"{t!r} is not in the normal form of types.type_from_name")
    return str(t)


def render_name(name: str) -> str:
    if BARE_NAME.fullmatch(name) and name not in KEYWORDS:
        return name
    return _quote(name, '"')


def _operator_symbol(call: Call) -> str | None:
    """The symbol ``call`` prints with, when its function is the registry's operator for it."""
    fn = REGISTRY.get(call.func)
    if fn is None or fn.symbol is None or len(call.args) not in (1, 2):
        return None
    try:
        return fn.symbol if by_symbol(fn.symbol, len(call.args)) is fn else None
    except KeyError:
        return None


def render_value(value: object, t: SqlType) -> str:
    """``value`` of type ``t`` as a bare value (without ``::type``)."""
    kind = t.kind
    if value is None:
        return "null"
    if kind is Kind.BOOLEAN and isinstance(value, bool):
        return "true" if value else "false"
    if kind in INTEGER_KINDS and type(value) is int:
        return str(value)
    if kind is Kind.DOUBLE and type(value) is float:
        return repr(value) if math.isfinite(value) else _quote(repr(value), "'")
    if kind is Kind.NUMERIC and isinstance(value, Decimal):
        return str(value) if value.is_finite() else _quote(str(value), "'")
    if kind is Kind.TEXT and isinstance(value, str):
        return _quote(value, "'")
    if kind is Kind.DATE and type(value) is date:
        return _quote(value.isoformat(), "'")
    if kind in TIMESTAMP_KINDS and isinstance(value, datetime):
        return _quote(value.isoformat(" "), "'")
    if kind is Kind.TIME and isinstance(value, time | times.EndOfDay):
        return _quote(times.text_of(value), "'")
    if kind is Kind.TIMETZ and isinstance(value, timetz.TimeTz):
        return _quote(timetz.text_of(value), "'")
    if kind is Kind.INTERVAL and isinstance(value, intervals.Interval):
        return _quote(intervals.render(value), "'")
    if kind in (Kind.JSONB, Kind.UUID) and isinstance(value, str):
        return _quote(value, "'")
    if kind is Kind.BYTEA and isinstance(value, bytes):
        return _quote(bytea.text_of(value), "'")
    raise ValueError(f"{value!r} is not a value of type {t}")


def _quote(text: str, mark: str) -> str:
    if text.isprintable():
        return mark + text.replace(mark, mark * 2) + mark
    escaped = text.encode("unicode_escape").decode("ascii")
    return "E" + mark + escaped.replace(mark, mark * 2) + mark
