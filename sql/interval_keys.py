"""Grouping by INTERVAL values as PostgreSQL groups them: by length (``'1 month'`` and
``'30 days'`` are one group), each group's interval the smallest of its values in
``Interval``'s order (the same length: the least months, then days), so the choice does not
depend on the order rows arrive in. A ``Reduce`` groups by ``interval_key`` of an interval
key and computes the ``min`` of its values beside the other aggregates. ``count(DISTINCT)``
counts distinct lengths; ``sum`` adds the fields.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matview.ir.aggregate_call import Aggregate
from matview.ir.plans import compute
from matview.ir.relation import Reduce, Relation
from matview.ir.scalar import Call, Case, Col, Lit, Scalar
from matview.ir.types import INTERVAL, NUMERIC_MAX, SqlType


def grouped(key: Scalar, key_type: SqlType) -> Scalar:
    """What a ``Reduce`` groups by for GROUP BY key ``key``: an interval's length."""
    return Call("interval_key", (key,)) if key_type == INTERVAL else key


def grouped_type(key_type: SqlType) -> SqlType:
    """The type of the ``Reduce``'s column of a key of ``key_type``."""
    return NUMERIC_MAX if key_type == INTERVAL else key_type


def chosen(column: int, smallest: Scalar) -> Scalar:
    """An interval key's value in its group: ``smallest``, the ``min`` of its values, where
    the ``Reduce``'s key ``column`` is set (NULL in a grouping set without the key)."""
    return Case(((Call("is_null", (Col(column),)), Lit(None, INTERVAL)),), smallest)


def distinct(rel: Relation, types: Sequence[SqlType]) -> Relation:
    """The distinct rows of ``rel`` (of ``types``): SELECT DISTINCT and UNION."""
    keys = tuple(grouped(Col(i), t) for i, t in enumerate(types))
    intervals = [i for i, t in enumerate(types) if t == INTERVAL]
    if not intervals:
        return Reduce(rel, keys, ())
    reduced = Reduce(rel, keys, tuple(Aggregate("min", Col(i)) for i in intervals))
    return compute(reduced, [Col(len(keys) + intervals.index(i)) if i in intervals else Col(i)
                             for i in range(len(keys))])


def summed(value: Scalar, add: Callable[[Scalar], Scalar]) -> Scalar:
    """``sum(value)`` of intervals, as PostgreSQL adds them: the interval of the sums of
    their fields (``add`` adds a ``sum`` aggregate, giving its value)."""
    return Call("interval_of", tuple(add(Call(f"interval_{field}", (value,)))
                                     for field in ("months", "days", "micros")))
