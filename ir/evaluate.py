"""Evaluation of scalar expressions on one row, with SQL semantics (the reference interpreter's
half that works on values).

Values are Python objects: ``None`` is NULL, BOOLEAN is ``bool``, INT and BIGINT are ``int``,
DOUBLE is ``float``, NUMERIC is ``Decimal``, TEXT is ``str``, DATE is ``datetime.date``,
TIMESTAMP is a naive ``datetime.datetime``, TIMESTAMPTZ one in UTC (the session time zone
is always UTC), TIME a ``datetime.time`` (or ``times.END_OF_DAY``) and TIMETZ a
``timetz.TimeTz``. A value read from a column or produced by an expression is first
brought to the representation of its SQL type (an ``int`` in a DOUBLE column becomes a
``float``), so Python's operators behave as the SQL type demands; casts are ``casts``'.

Every argument of a function call is evaluated (there is no short-circuit, so an error is not
hidden by the order of AND's operands); only CASE evaluates lazily, as SQL specifies.

A subquery in an expression is evaluated by running its plan, with its ``Outer`` references
bound to the row, through the function ``subquery_runner`` installs (the reference
interpreter installs itself).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date, datetime
from decimal import Decimal, localcontext

from matview.ir import timestamps
from matview.ir.casts import DECIMAL_CONTEXT, cast_value, check_range
from matview.ir.functions import EvalError, lookup
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
    type_of,
)
from matview.ir.subquery import enter
from matview.ir.types import TIMESTAMP, TIMESTAMP_KINDS, TIMESTAMPTZ, Kind, SqlType

Runner = Callable[[Relation], Counter[tuple[object, ...]]]
_RUNNER: ContextVar[Runner | None] = ContextVar("subquery_runner", default=None)


@contextmanager
def subquery_runner(run: Runner) -> Iterator[None]:
    """Within the block, a subquery's plan (its references to the row bound) evaluates to
    ``run(plan)``, a multiset of rows."""
    token = _RUNNER.set(run)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def evaluate(expr: Scalar, row: Sequence[object], types: Sequence[SqlType]) -> object:
    """The value of ``expr`` on ``row``, whose columns have ``types``.

    Raises ``EvalError`` when SQL would raise an error (overflow, division by zero, bad cast).
    """
    if isinstance(expr, Col):
        return _conform(row[expr.index], types[expr.index])
    if isinstance(expr, Lit):
        return _conform(expr.value, expr.type)
    if isinstance(expr, Cast):
        return cast_value(evaluate(expr.expr, row, types), expr.to)
    if isinstance(expr, Case):
        chosen = next(
            (value for cond, value in expr.whens if evaluate(cond, row, types) is True),
            expr.default,
        )
        return _conform(evaluate(chosen, row, types), type_of(expr, types))
    if isinstance(expr, Call):
        return _call(expr, row, types)
    if isinstance(expr, (Exists, InSubquery, ScalarSubquery)):
        return _subquery(expr, row, types)
    if isinstance(expr, Outer):
        raise TypeError(f"an outer reference outside its subquery: {expr!r}")
    raise TypeError(f"not a scalar expression: {expr!r}")


def _subquery(expr: Exists | InSubquery | ScalarSubquery, row: Sequence[object],
              types: Sequence[SqlType]) -> object:
    """The value of a subquery on ``row`` (see each node's meaning)."""
    run = _RUNNER.get()
    if run is None:
        raise TypeError("subqueries are evaluated only by the reference interpreter")
    plan = enter(expr.rel, lambda ref: Lit(_conform(row[ref.index], ref.type), ref.type))
    values = [r[0] if r else None for r in run(plan).elements()]
    if isinstance(expr, Exists):
        return bool(values)
    if isinstance(expr, ScalarSubquery):
        if len(values) > 1:
            raise EvalError("more than one row returned by a subquery used as an expression")
        return _conform(values[0], type_of(expr, types)) if values else None
    needle = evaluate(expr.expr, row, types)
    if not values:
        return False
    if needle is None:
        return None
    if any(v is not None and promote([v, needle])[0] == promote([v, needle])[1] for v in values):
        return True
    return None if None in values else False


def _call(expr: Call, row: Sequence[object], types: Sequence[SqlType]) -> object:
    fn = lookup(expr.func)
    args = promote([evaluate(arg, row, types) for arg in expr.args])
    if not fn.handles_null and any(arg is None for arg in args):
        return None
    with localcontext(DECIMAL_CONTEXT):
        result = fn.python(*args)
    result_type = type_of(expr, types)
    check_range(result, result_type)
    return _conform(result, result_type)


def promote(values: Sequence[object]) -> list[object]:
    """``values`` converted as SQL converts operands to their common type: beside a DOUBLE,
    NUMERIC values become ``float``; beside a TIMESTAMP, DATE values become ``datetime``;
    beside a TIMESTAMPTZ, DATE and TIMESTAMP values become instants in UTC."""
    out = list(values)
    if any(isinstance(v, float) for v in out):
        out = [float(v) if isinstance(v, Decimal) else v for v in out]
    if any(isinstance(v, datetime) for v in out):
        zoned = any(isinstance(v, datetime) and v.tzinfo is not None for v in out)
        out = [_conform(v, TIMESTAMPTZ if zoned else TIMESTAMP) for v in out]
    return out


def _conform(value: object, sql_type: SqlType) -> object:
    """``value`` in the Python representation of ``sql_type``, for the representations that
    widen implicitly (int or Decimal to float, int to Decimal, date to datetime), and a
    timestamp with or without its zone as its type has it (UTC is the session zone)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, list):
        return tuple(value)
    if sql_type.kind is Kind.DOUBLE and isinstance(value, int | Decimal):
        return float(value)
    if sql_type.kind is Kind.NUMERIC and isinstance(value, int):
        return Decimal(value)
    if sql_type.kind in TIMESTAMP_KINDS and isinstance(value, date):
        return timestamps.conform(value, sql_type.kind)
    return value
