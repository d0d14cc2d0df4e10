"""``query AS OF time`` and ``SUBSCRIBE x AS OF time`` (Materialize's): the logical time a
read is made at, bound to milliseconds since the Unix epoch (``mz_timestamp``).

The time is a constant: an integer (milliseconds), or a timestamp literal (``TIMESTAMP
'2026-12-01 10:00'`` or a string; without a zone, UTC). Whether the read's inputs still
hold that time is the engine's concern (their ``since``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from matview.sql.errors import InvalidValueError, UnsupportedError
from sqlglot import exp


def bind_time(node: exp.Expr) -> int:
    """The time ``node`` (an ``AS OF`` argument) names, in milliseconds."""
    negative = isinstance(node, exp.Neg)
    value = node.this if negative else node
    if isinstance(value, exp.Cast) and value.to.is_type(*exp.DataType.TEMPORAL_TYPES):
        value = value.this
    if isinstance(value, exp.Literal) and not value.is_string and not negative:
        number = float(value.this)
        if number != int(number):
            raise InvalidValueError.at(f"AS OF {value.this}: a time is a whole number of "
                                       "milliseconds", node)
        return int(value.this.split(".")[0])
    if isinstance(value, exp.Literal) and value.is_string and not negative:
        try:
            moment = datetime.fromisoformat(value.this)
        except ValueError:
            raise InvalidValueError.at(f'invalid input syntax for type timestamp: '
                                       f'"{value.this}"', node) from None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    raise UnsupportedError.at("AS OF takes a constant time: milliseconds (an integer) or a "
                              "timestamp literal", node)
