"""Query parameters (DB-API ``qmark`` style): each ``?`` of a statement replaced by its value
as a SQL literal before binding, so a value is always data, never SQL text."""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Sequence

from matview.ir import interval_values, intervals, times, timetz
from matview.sql.errors import SqlError
from sqlglot import exp


def bind_parameters(tree: exp.Expr, params: Sequence[object]) -> exp.Expr:
    """``tree`` with its placeholders, in the order they were written (the parser keeps
    where: a tree's walk meets them in another order, ``a = ? AND b = ? AND c = ?``'s last
    first), replaced by the literals of ``params``."""
    holes = sorted(tree.find_all(exp.Placeholder), key=lambda h: h.meta.get("start", -1))
    if len(holes) != len(params):
        raise SqlError(
            f"the statement has {len(holes)} parameters but {len(params)} were given")
    for hole, value in zip(holes, params, strict=True):
        hole.replace(_literal(value))
    return tree


def _literal(value: object) -> exp.Expr:
    """A parameter's value as a SQL literal (dates, timestamps, times, intervals and UUIDs as
    typed casts, an aware ``datetime.time`` a TIMETZ, bytes as a blob literal ``x'0a'``, a
    list an ``ARRAY[...]`` of its elements')."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, decimal.Decimal)):
        return exp.Literal.number(value)
    if isinstance(value, datetime.datetime):  # an aware one is an instant: TIMESTAMPTZ
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")),
                        to=exp.DataType.build("timestamptz" if value.tzinfo else "timestamp"))
    if isinstance(value, timetz.TimeTz) or isinstance(value, datetime.time) and value.tzinfo:
        return exp.Cast(this=exp.Literal.string(timetz.text_of(timetz.of_python(value))),
                        to=exp.DataType.build("timetz"))  # a time with its offset
    if isinstance(value, datetime.time | times.EndOfDay):
        return exp.Cast(this=exp.Literal.string(times.text_of(value)),
                        to=exp.DataType.build("time"))
    if isinstance(value, datetime.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()),
                        to=exp.DataType.build("date"))
    if isinstance(value, datetime.timedelta):  # an INTERVAL of its days and microseconds
        text = intervals.render(interval_values.of_python(value))
        return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("interval"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, uuid.UUID):
        return exp.Cast(this=exp.Literal.string(str(value)), to=exp.DataType.build("uuid"))
    if isinstance(value, bytes | bytearray | memoryview):
        return exp.HexString(this=bytes(value).hex())
    if isinstance(value, list | tuple):  # an array; an empty one takes its type from where
        if not value:                    # it is used, as the literal '{}'
            return exp.Literal.string("{}")
        return exp.Array(expressions=[_literal(v) for v in value])
    raise SqlError(f"cannot use a parameter of type {type(value).__name__}")
