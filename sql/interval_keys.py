"""Grouping by INTERVAL values as PostgreSQL groups them: by length (``'1 month'`` and
``'30 days'`` are one group), each group's interval the smallest of its values in
``Interval``'s order (the same length: the least months, then days), so the choice does not
depend on the order rows arrive in. A ``Reduce`` groups by ``interval_key`` of an interval
key and computes the ``min`` of its values beside the other aggregates: GROUP BY, DISTINCT,
UNION, INTERSECT and EXCEPT. ``count(DISTINCT)`` counts distinct lengths; ``sum`` adds the
fields and ``avg`` divides that sum by the count, as PostgreSQL's do (``aggregated``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matview.ir.aggregate_call import Aggregate
from matview.ir.plans import compute
from matview.ir.relation import Reduce, Relation
from matview.ir.scalar import Call, Case, Cast, Col, Lit, Scalar
from matview.ir.types import DOUBLE, INTERVAL, NUMERIC_MAX, SqlType


def grouped(key: Scalar, key_type: SqlType) -> Scalar:
    """What a ``Reduce`` groups by for GROUP BY key ``key``, and what a window partitions
    and orders by (peers are equal lengths): an interval's length."""
    return Call("interval_key", (key,)) if key_type == INTERVAL else key


def grouped_type(key_type: SqlType) -> SqlType:
    """The type of the ``Reduce``'s column of a key of ``key_type``."""
    return NUMERIC_MAX if key_type == INTERVAL else key_type


def chosen(column: int, smallest: Scalar) -> Scalar:
    """An interval key's value in its group: ``smallest``, the ``min`` of its values, where
    the ``Reduce``'s key ``column`` is set (NULL in a grouping set without the key)."""
    return Case(((Call("is_null", (Col(column),)), Lit(None, INTERVAL)),), smallest)


def rows(rel: Relation, types: Sequence[SqlType], aggregates: Sequence[Aggregate] = ()
         ) -> tuple[Reduce, tuple[int, ...]]:
    """A ``Reduce`` of ``rel`` (the first ``len(types)`` columns of ``types`` its row)
    grouping equal rows, intervals by length, and computing ``aggregates``; and the columns
    of its output holding each group's row, an interval the group's smallest. Its output
    is the grouped row, then ``aggregates``, then each interval's smallest."""
    width = len(types)
    keys = tuple(grouped(Col(i), t) for i, t in enumerate(types))
    intervals = [i for i, t in enumerate(types) if t == INTERVAL]
    smallest = tuple(Aggregate("min", Col(i)) for i in intervals)
    at = width + len(aggregates)
    return Reduce(rel, keys, (*aggregates, *smallest)), tuple(
        at + intervals.index(i) if i in intervals else i for i in range(width))


def distinct(rel: Relation, types: Sequence[SqlType]) -> Relation:
    """The distinct rows of ``rel`` (of ``types``): SELECT DISTINCT and UNION."""
    reduced, row = rows(rel, types)
    if row == tuple(range(len(types))):
        return reduced
    return compute(reduced, [Col(i) for i in row])


AGGREGATES = ("sum", "avg")
"""The aggregates of intervals ``aggregated`` computes."""


def aggregated(func: str, value: Scalar, add: Callable[[str, Scalar], Scalar]) -> Scalar:
    """``func(value)`` of intervals (``AGGREGATES``), as PostgreSQL computes them: ``sum``
    the interval of the sums of their fields; ``avg`` that sum divided by their count as
    ``interval / number`` divides (``ir.interval_scaling``; PostgreSQL's ``interval_avg``
    sums into an interval, then calls ``interval_div``). ``add(func, expr)`` adds an
    aggregate (``sum``, ``count``) of ``expr``, giving its value."""
    total = Call("interval_of", tuple(add("sum", Call(f"interval_{field}", (value,)))
                                      for field in ("months", "days", "micros")))
    if func == "sum":
        return total
    return Call("interval_div", (total, Cast(add("count", value), DOUBLE)))
