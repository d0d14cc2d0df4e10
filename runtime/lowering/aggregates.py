"""The Spark lowering of the EXTREME aggregates of ``ir/aggregates.py``, by registry name.

``min`` and ``max`` are Spark's aggregates of those names over a group's values
(``extreme_value``). An aggregate of the values in order (``AggregateFunction.ordered``:
``string_agg``, ``array_agg``, ``jsonb_agg``) takes its value from the array of a group's
non-NULL values in order and the call's separator (``ordered_value``); over no values it is NULL.
``extreme_aggregate`` is either over a group's rows, as the reduce computes it
(``operators.reduce_extremes``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matview.ir.aggregate_call import Aggregate
from matview.ir.aggregates import maintained
from matview.ir.types import Kind, SqlType
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


def _compared(a: Column, b: Column, directions: list[tuple[bool, bool]]) -> Column:
    """-1, 0 or 1 as struct ``a`` sorts before, with or after ``b`` by their fields
    ``k0, k1, ...``, each (descending, nulls first) as ``directions`` say."""
    result: Column = F.lit(0)
    for i, (descending, nulls_first) in reversed(list(enumerate(directions))):
        x, y = a[f"k{i}"], b[f"k{i}"]
        result = (F.when(x.isNull() & y.isNull(), result)
                  .when(x.isNull(), F.lit(-1 if nulls_first else 1))
                  .when(y.isNull(), F.lit(1 if nulls_first else -1))
                  .when(x < y, F.lit(1 if descending else -1))
                  .when(x > y, F.lit(-1 if descending else 1))
                  .otherwise(result))
    return result


def extreme_aggregate(aggregate: Aggregate, output: SqlType, value: Column,
                      order: Sequence[Column]) -> Column:
    """The Spark aggregate of the EXTREME ``aggregate`` (of type ``output``) over a group's
    rows: ``value`` its argument (NULL on a row that does not count), ``order`` its ORDER BY
    keys; an aggregate of values in order must see each row once per occurrence."""
    fn = maintained(aggregate.func)
    if not fn.ordered:
        return extreme_value(fn.name, value)
    tie = value[0] if output.kind is Kind.ARRAY else value
    keys = [*order, tie]
    directions = [(d, n) for _, d, n in aggregate.order_by] + [(False, False)]
    entries = F.collect_list(F.struct(*[k.alias(f"k{i}") for i, k in enumerate(keys)],
                                      value.alias("v")))
    present = F.filter(entries, lambda e: e["v"].isNotNull())
    ordered = F.array_sort(present, lambda a, b: _compared(a, b, directions))
    return ordered_value(fn.name, F.transform(ordered, lambda e: e["v"]), aggregate.separator)
