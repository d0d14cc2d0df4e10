"""The Spark lowering of the EXTREME aggregates of ``ir/aggregates.py``, by registry name.

``min`` and ``max`` are Spark's aggregates of those names over a group's values
(``extreme_value``). An aggregate of the values in order (``AggregateFunction.ordered``:
``string_agg``, ``array_agg``, ``jsonb_agg``) takes its value from the array of a group's
non-NULL values in order and the call's separator (``ordered_value``); over no values it is NULL.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

SPARK_AGGREGATES: dict[str, str] = {"min": "min", "max": "max"}
"""The Spark aggregate computing each EXTREME aggregate that is not ordered."""


def _joined(values: Column, separator: str | None) -> Column:
    """``string_agg``: the values joined by ``separator``."""
    return F.when(F.size(values) > 0, F.array_join(values, separator or ""))


def _concatenated(values: Column, separator: str | None) -> Column:
    """``array_agg`` (over one-element arrays): their elements."""
    return F.when(F.size(values) > 0, F.flatten(values))


def _json_array(values: Column, separator: str | None) -> Column:
    """``jsonb_agg`` (over JSONB texts): the JSON array of them."""
    return F.when(F.size(values) > 0,
                  F.concat(F.lit("["), F.array_join(values, ","), F.lit("]")))


ORDERED: dict[str, Callable[[Column, str | None], Column]] = {
    "string_agg": _joined,
    "array_agg": _concatenated,
    "jsonb_agg": _json_array,
}
"""Each aggregate of the values in order: its value from the array of a group's values."""


def extreme_value(name: str, values: Column) -> Column:
    """The EXTREME aggregate ``name`` (not ordered) of the column ``values`` over a group."""
    return F.call_function(SPARK_AGGREGATES[name], values)


def ordered_value(name: str, values: Column, separator: str | None) -> Column:
    """The aggregate of the values in order ``name`` from the array ``values`` of a group's
    non-NULL values in order, and the call's ``separator``."""
    return ORDERED[name](values, separator)
