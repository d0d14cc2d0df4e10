"""``extract(field FROM x)``, ``date_part('field', x)`` and ``date_trunc('field', x)``: the
calls naming a field of a date or timestamp, each bound to the registry's function for its
field (``extract_year``, ``date_trunc_month``...: ``datetime_functions.EXTRACT_FIELDS``
and ``datetime_functions.TRUNCATIONS``).

The field is read as PostgreSQL reads it: case-insensitively, units with their plurals and
abbreviations (``'years'``, ``'mon'``, ``'qtr'``). It must be a constant: a field the query
computes is refused. ``extract`` gives PostgreSQL's numeric and refuses the time fields of
a date; ``date_part`` is ``extract`` of the value as a timestamp, in double precision (so
``date_part('hour', date)`` is 0); ``date_trunc`` truncates a timestamp (a date as its
midnight) to a timestamp. A string literal or NULL argument is a timestamp. A time has
the fields ``hour``, ``minute``, ``second`` and ``epoch`` (seconds since midnight).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from matview.ir import intervals
from matview.ir.functions import REGISTRY
from matview.ir.scalar import Call
from matview.ir.types import DOUBLE, TIMESTAMP, TIMESTAMP_KINDS, Kind
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
"""The fields of a TIME that matview reads."""

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
    source = binder.bind(node.expression)
    if is_string_literal(source) or source.type.kind is Kind.NULL:
        source = cast(source, TIMESTAMP, node)
    if source.type.kind is Kind.INTERVAL and not isinstance(node, DateTruncCall):
        result = _field_function("interval_extract", field.name.lower(), source, field)
        return cast(result, DOUBLE) if isinstance(node, DatePartCall) else result
    timed = source.type.kind is Kind.TIME and not isinstance(node, DateTruncCall)
    if source.type.kind not in (Kind.DATE, *TIMESTAMP_KINDS) and not timed:
        raise SqlTypeError.at(f"function {name}(text, {source.type}) does not exist", node)
    if timed:  # a time's fields are those of its clock on 1970-01-01
        word = field.name.lower()
        if (intervals.unit_name(word) or _FIELDS.get(word)) not in _TIME_FIELDS:
            raise UnsupportedError.at(f'unit "{word}" not supported for type time', field)
        source = cast(source, TIMESTAMP)
    if not isinstance(node, exp.Extract) and source.type.kind is Kind.DATE:
        source = cast(source, TIMESTAMP)
    prefix = "date_trunc" if isinstance(node, DateTruncCall) else "extract"
    result = _field_function(prefix, field.name.lower(), source, field)
    return cast(result, DOUBLE) if isinstance(node, DatePartCall) else result


def _field_function(prefix: str, word: str, source: TypedScalar,
                    at: exp.Expr) -> TypedScalar:
    """The registry's ``<prefix>_<field>`` of ``source``, for the field ``word`` names; an
    error at ``at`` when it names none, or one that ``source``'s type does not have."""
    field = intervals.unit_name(word) or _FIELDS.get(word)
    if field is None and word not in _NOT_SUPPORTED:
        raise SqlTypeError.at(f'unit "{word}" not recognized for type {source.type}', at)
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
