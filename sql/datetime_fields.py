"""``extract(field FROM x)``, ``date_part('field', x)`` and ``date_trunc('field', x)``: the
calls naming a field of a date or timestamp, each bound to the registry's function for its
field (``extract_year``, ``date_trunc_month``...: ``datetime_functions.EXTRACT_FIELDS``
and ``datetime_functions.TRUNCATIONS``).

The field is read as PostgreSQL reads it: case-insensitively, units with their plurals and
abbreviations (``'years'``, ``'mon'``, ``'qtr'``). It must be a constant: a field the query
computes is refused. ``extract`` gives PostgreSQL's numeric and refuses the time fields of
a date; ``date_part`` is ``extract`` of the value as a timestamp, in double precision (so
``date_part('hour', date)`` is 0); ``date_trunc`` truncates a timestamp (a date as its
midnight) to a timestamp, and an interval to an interval. A string literal or NULL
argument is a timestamp. A time has the fields ``hour``, ``minute``, ``second`` and
``epoch`` (seconds since midnight), those of its interval (24:00:00's hour is 24), and
``date_trunc`` of a time is of that interval, an INTERVAL (PostgreSQL casts a time to an
interval there); a time with time zone has those of its time of day, and ``epoch`` (its
seconds in UTC), ``timezone``, ``timezone_hour`` and ``timezone_minute`` (of its offset:
``timetz.FIELDS``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir import intervals, timetz
from matview.ir.functions import REGISTRY
from matview.ir.scalar import Call
from matview.ir.types import DOUBLE, INTERVAL, TIME, TIMESTAMP, TIMESTAMP_KINDS, Kind
from matview.sql.call_names import WRITTEN_NAME
from matview.sql.coerce import TypedScalar, cast, is_string_literal
from matview.sql.dialect_nodes import DatePartCall, DateTruncCall
from matview.sql.errors import SqlTypeError, UnsupportedError
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

FieldCall = exp.Extract | DatePartCall | DateTruncCall

_FIELDS = {"quarter": "quarter", "qtr": "quarter", "dow": "dow", "doy": "doy",
           "epoch": "epoch"}
"""Field names besides the interval units (``intervals.unit_name``), as PostgreSQL spells
them."""

_TIME_FIELDS = ("hour", "minute", "second", "epoch")
"""The fields of a TIME that matview reads: those of the time as an interval (a TIMETZ's
time of day's, but for its ``epoch``)."""

_NOT_SUPPORTED = frozenset({
    "decade", "decades", "century", "centuries", "millennium", "millennia", "millenniums",
    "isodow", "isoyear", "julian", "timezone", "timezone_hour", "timezone_minute",
})
"""PostgreSQL's other fields: refused as not supported rather than as unknown names."""


def bind_field_call(binder: ExprBinder, node: FieldCall) -> TypedScalar:
    """The scalar ``node`` (an ``extract``, ``date_part`` or ``date_trunc`` call) denotes."""
    name = str(node.meta.get(WRITTEN_NAME, "extract"))
    field = node.this
    constant = isinstance(field, exp.Literal) and field.is_string
    if not (constant or isinstance(node, exp.Extract) and isinstance(field, exp.Var)):
        raise UnsupportedError.at(f"{name} of a field that is not a constant is not "
                                  "supported yet", field)
    source, word = binder.bind(node.expression), field.name.lower()
    if is_string_literal(source) or source.type.kind is Kind.NULL:
        source = cast(source, TIMESTAMP, node)
    truncating = isinstance(node, DateTruncCall)
    if source.type.kind is Kind.TIME and truncating:  # PostgreSQL: date_trunc(text, interval)
        source = cast(source, INTERVAL)
    if source.type.kind is Kind.INTERVAL:
        prefix = "interval_trunc" if truncating else "interval_extract"
        result = _field_function(prefix, word, source, field)
    elif source.type.kind in (Kind.TIME, Kind.TIMETZ) and not truncating:
        result = _time_field(word, source, field)
    elif source.type.kind not in (Kind.DATE, *TIMESTAMP_KINDS):
        raise SqlTypeError.at(f"function {name}(text, {source.type}) does not exist", node)
    else:
        if not isinstance(node, exp.Extract) and source.type.kind is Kind.DATE:
            source = cast(source, TIMESTAMP)
        result = _field_function("date_trunc" if truncating else "extract", word, source, field)
    return cast(result, DOUBLE) if isinstance(node, DatePartCall) else result


def _time_field(word: str, source: TypedScalar, at: exp.Expr) -> TypedScalar:
    """The field ``word`` names of the TIME or TIMETZ ``source``: a TIMETZ's own
    (``timetz.FIELDS``), else that of its time of day as an interval."""
    unit = intervals.unit_name(word) or _FIELDS.get(word) or word
    if source.type.kind is Kind.TIMETZ and unit in timetz.FIELDS:
        return _field_function("timetz_extract", word, source, at)
    if unit not in _TIME_FIELDS:
        raise UnsupportedError.at(f'unit "{word}" not supported for type {source.type}', at)
    return _field_function("interval_extract", word, cast(cast(source, TIME), INTERVAL), at)


def _field_function(prefix: str, word: str, source: TypedScalar,
                    at: exp.Expr) -> TypedScalar:
    """The registry's ``<prefix>_<field>`` of ``source``, for the field ``word`` names; an
    error at ``at`` when it names none, or one that ``source``'s type does not have."""
    field = intervals.unit_name(word) or _FIELDS.get(word)
    if field is None and word not in _NOT_SUPPORTED:
        raise SqlTypeError.at(f'unit "{word}" not recognized for type {source.type}', at)
    field = field or word
    func = f"{prefix}_{field}"
    unsupported = UnsupportedError.at(f'unit "{word}" not supported for type {source.type}',
                                      at)
    if func not in REGISTRY:
        raise unsupported
    try:
        result = REGISTRY[func].returns([source.type])
    except TypeError:
        raise unsupported from None
    return TypedScalar(Call(func, (source.expr,)), result)
