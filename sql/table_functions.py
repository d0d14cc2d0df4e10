"""Table functions (``ir.table_functions``) and ``repeat_row`` as SQL calls: recognizing them in
sqlglot trees, binding their arguments with the conversions each function needs, and the
select-list form (``SELECT a, generate_series(1, a) FROM t``).

Argument conversions: the bounds of ``generate_series`` over timestamps may be string literals
(read as TIMESTAMP) and its step must be a constant interval; ``regexp_matches`` needs a
constant pattern and flags; the ``jsonb_*`` functions read a string literal as JSONB (and
take TEXT values as the registry does).

In the select list, every table function call (at any depth of an expression) becomes one
call of a single ``FlatMap`` step applied after WHERE, so that several calls run in lockstep
as in PostgreSQL; the expression reads the call's column.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matview.ir.functions import REGISTRY as SCALAR_FUNCTIONS
from matview.ir.scalar import Call, Col, Lit, Scalar
from matview.ir.steps import FlatMap
from matview.ir.table_functions import REGISTRY
from matview.ir.types import (
    INTEGER_KINDS,
    INTERVAL,
    JSONB,
    TEXT,
    TIMESTAMP,
    TIMESTAMP_KINDS,
    TIMESTAMPTZ,
    Kind,
    SqlType,
)
from matview.sql.calls import check_arity, check_call, function_name
from matview.sql.coerce import TypedScalar, cast, is_string_literal
from matview.sql.errors import SqlError, SqlTypeError, UnknownObjectError, UnsupportedError
from matview.sql.walk import outside_queries
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder
    from matview.sql.scope import Scope

REPEAT_ROW = "repeat_row"
"""``repeat_row(n)``: in FROM, each row so far repeated ``n`` times (a ``Repeat`` step)."""


@dataclass(frozen=True)
class TableCall:
    """A call of table function ``name`` (or ``repeat_row``) written as ``node``."""

    name: str
    args: tuple[exp.Expr, ...]
    node: exp.Expr


@dataclass(frozen=True)
class BoundCall:
    """A bound table function call: the ``Call``, its column types and default names."""

    call: Call
    types: tuple[SqlType, ...]
    names: tuple[str, ...]
    scalar: bool
    """Whether the function returns one unnamed column (a table alias then names it)."""


def table_call(node: exp.Expr) -> TableCall | None:
    """The table function call ``node`` is, or None when it is none (a call of another
    dialect's function that sqlglot reads into the same node, like ``explode_outer``, is an
    error: ``calls.check_call``)."""
    if isinstance(node, (exp.GenerateSeries, exp.Explode, exp.Unnest)):
        check_call(node)
    if isinstance(node, exp.GenerateSeries):
        args = (node.args.get(k) for k in ("start", "end", "step", "is_end_exclusive"))
        return TableCall("generate_series", tuple(a for a in args if isinstance(a, exp.Expr)),
                         node)  # sqlglot keeps a fourth argument as is_end_exclusive
    if type(node) in (exp.Explode, exp.Unnest):
        first = [node.this] if node.this is not None else []
        return TableCall("unnest", tuple(first + list(node.expressions)), node)
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name in REGISTRY or name == REPEAT_ROW:
            return TableCall(name, tuple(node.expressions), node)
    return None


def table_calls(node: exp.Expr) -> Iterator[TableCall]:
    """The table function calls in ``node``, not looking into subqueries."""
    for sub in outside_queries(node):
        found = table_call(sub)
        if found is not None:
            yield found


def reject(node: exp.Expr | None, clause: str) -> None:
    """Raise when ``clause`` (``node``) holds a table function call, as PostgreSQL does."""
    if node is None:
        return
    for found in table_calls(node):
        raise SqlError.at(f"set-returning functions are not allowed in {clause}", found.node)


def not_a_table_function(node: exp.Expr) -> SqlError:
    """The error for a function in FROM that is no table function."""
    name = function_name(node)
    known = ", ".join(sorted([*REGISTRY, REPEAT_ROW]))
    if name in SCALAR_FUNCTIONS or isinstance(node, exp.Func) and not isinstance(
            node, exp.Anonymous):
        return UnsupportedError.at(
            f"function {name} is not a table function; table functions in FROM: {known}", node)
    return UnknownObjectError.at(
        f"table function {name} does not exist; table functions in FROM: {known}", node)


def bind_call(binder: ExprBinder, found: TableCall) -> BoundCall:
    """The bound call ``found`` (not ``repeat_row``), its arguments over ``binder``'s row."""
    fn = REGISTRY[found.name]
    check_arity(found.node, fn.arity, len(found.args))
    args = [binder.bind(a) for a in found.args]
    if found.name == "generate_series":
        args = _series_args(args, found)
    elif found.name == "regexp_matches":
        _check_regexp(args, found)
    elif found.name.startswith("jsonb_") and is_string_literal(args[0]):
        args = [cast(args[0], JSONB, found.args[0])]
    types = [a.type for a in args]
    try:
        columns = fn.columns(types)
    except TypeError as error:
        raise SqlTypeError.at(str(error), found.node) from None
    call = Call(found.name, tuple(a.expr for a in args))
    return BoundCall(call, tuple(columns), fn.column_names(types), fn.names is None
                     and len(columns) == 1)


def repeat_count(binder: ExprBinder, found: TableCall) -> Scalar:
    """The count of ``repeat_row(count)``, an integer."""
    if len(found.args) != 1:
        raise SqlTypeError.at("repeat_row takes one argument, the number of copies", found.node)
    count = binder.bind(found.args[0])
    if count.type.kind not in INTEGER_KINDS + (Kind.NULL,):
        raise SqlTypeError.at(
            f"repeat_row needs an integer number of copies, not type {count.type}", found.node)
    return count.expr


def _series_args(args: list[TypedScalar], found: TableCall) -> list[TypedScalar]:
    """Timestamp bounds: string literals read as TIMESTAMP, both bounds TIMESTAMPTZ when one
    is, the step a constant interval."""
    kinds = {a.type.kind for a in args[:2] if not is_string_literal(a)}
    timestamps = bool(kinds & {Kind.DATE, *TIMESTAMP_KINDS}) or (
        len(args) == 3 and args[2].type.kind is Kind.INTERVAL)
    if not timestamps:
        return args
    zoned = Kind.TIMESTAMPTZ in kinds
    out = [cast(a, TIMESTAMPTZ, found.args[i]) if zoned else
           cast(a, TIMESTAMP, found.args[i]) if is_string_literal(a) else a
           for i, a in enumerate(args[:2])]
    if len(args) < 3:
        raise SqlTypeError.at("generate_series over timestamps needs an interval step",
                              found.node)
    step = cast(args[2], INTERVAL, found.args[2]) if is_string_literal(args[2]) else args[2]
    if step.type.kind is Kind.INTERVAL and not isinstance(step.expr, Lit):
        raise UnsupportedError.at(
            "generate_series over timestamps needs a constant interval step "
            "(INTERVAL '1 hour')", found.args[2])
    return out + [step]


def _check_regexp(args: list[TypedScalar], found: TableCall) -> None:
    """The pattern and flags must be constants (they decide the shape of each row)."""
    for arg, node in list(zip(args, found.args, strict=True))[1:]:
        if not (isinstance(arg.expr, Lit) and arg.type == TEXT):
            raise UnsupportedError.at(
                "regexp_matches needs a constant pattern and flags (string literals)", node)
    values = [a.expr.value for a in args[1:] if isinstance(a.expr, Lit)]
    try:
        re.compile(str(values[0]))
    except re.error as error:
        raise SqlError.at(f"invalid regular expression: {error}", found.args[1]) from None
    unknown = set(str(values[1]) if len(values) > 1 else "") - {"g", "i"}
    if unknown:
        raise SqlError.at(f'invalid regular expression option: "{"".join(sorted(unknown))}"',
                          found.args[2])


class SelectListCalls:
    """The table function calls of a select list: each distinct call becomes one call of the
    ``FlatMap`` step, over rows of ``arity`` columns, whose column the expression reads."""

    def __init__(self, scope: Scope, arity: int) -> None:
        from matview.sql.scalars import ExprBinder

        self.arity = arity
        self.inner = ExprBinder(scope, "aggregate functions are not allowed in the arguments "
                                       "of set-returning functions",
                                srf_error="set-returning functions cannot be nested yet")
        self.calls: list[Call] = []
        self.types: list[SqlType] = []

    def bind(self, found: TableCall) -> TypedScalar:
        """The column of call ``found``."""
        if found.name == REPEAT_ROW:
            raise UnsupportedError.at("repeat_row is only supported in FROM", found.node)
        bound = bind_call(self.inner, found)
        if len(bound.types) != 1:
            raise UnsupportedError.at(
                f"{found.name} in the select list would return records; call it in FROM "
                f"(SELECT ... FROM t, {found.name}(...) AS x)", found.node)
        if bound.call not in self.calls:
            self.calls.append(bound.call)
            self.types.append(bound.types[0])
        index = self.calls.index(bound.call)
        return TypedScalar(Col(self.arity + index), self.types[index])

    def step(self) -> FlatMap | None:
        """The ``FlatMap`` running the calls in lockstep (None when there are none)."""
        return FlatMap(tuple(self.calls)) if self.calls else None
