"""The reference interpreter: the multiset a relation denotes over static table contents.

It exists to test the optimizer (a plan and its rewrite must denote the same multiset), so it
follows each node's static meaning (see ``relation``) as directly as possible, with no regard
for speed. A multiset is a ``Counter`` from row tuples to multiplicities; results never hold a
row of multiplicity 0, and intermediate results may hold negative multiplicities.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from decimal import localcontext
from functools import cmp_to_key
from itertools import product
from math import prod
from typing import Any

from matview.ir import aggregates, windows
from matview.ir.aggregate_call import Aggregate
from matview.ir.casts import DECIMAL_CONTEXT, cast_value
from matview.ir.evaluate import evaluate, promote, subquery_runner
from matview.ir.intervals import Interval
from matview.ir.linear_logic import BOTTOM, join_function, steps_logic
from matview.ir.recursion import RecursionLimit, recursion_limit_message
from matview.ir.relation import (
    AsOfJoin,
    Constant,
    Get,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
)
from matview.ir.scalar import Scalar, remap, volatile
from matview.ir.sort_keys import SortKey, total_order
from matview.ir.steps import step_scalars
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.ir.types import SqlType

Row = tuple[object, ...]

_BINDINGS: ContextVar[tuple[Counter[Row], ...]] = ContextVar("bindings", default=())
"""The values of the innermost ``LetRec``'s bindings at the iteration being evaluated."""


def interpret(rel: Relation, tables: Mapping[str, Counter[Row]], now: int = BOTTOM,
              limit: int = DEFAULT_ROW_LIMIT) -> Counter[Row]:
    """The multiset ``rel`` denotes at time ``now`` (what ``mz_now()`` reads) when each table
    ``name`` holds ``tables[name]``; ``limit`` bounds the rows of a table function call. A
    subquery in an expression is interpreted for each row it is evaluated on."""
    with subquery_runner(lambda plan: interpret(plan, tables, now, limit)):
        return _interpret(rel, tables, now, limit)


def _interpret(rel: Relation, tables: Mapping[str, Counter[Row]], now: int,
               limit: int) -> Counter[Row]:
    if isinstance(rel, Get):
        return _consolidate(tables[rel.name].items())
    if isinstance(rel, Constant):
        return _consolidate((tuple(values), mult) for values, mult in rel.rows)
    if isinstance(rel, Linear):
        return _linear(rel, interpret(rel.input, tables, now, limit), now, limit)
    if isinstance(rel, Join):
        return _join(rel, [interpret(i, tables, now, limit) for i in rel.inputs])
    if isinstance(rel, AsOfJoin):
        return _as_of(rel, interpret(rel.left, tables, now, limit),
                      interpret(rel.right, tables, now, limit))
    if isinstance(rel, Union):
        return _consolidate(
            entry for i in rel.inputs for entry in interpret(i, tables, now, limit).items()
        )
    if isinstance(rel, Reduce):
        return _reduce(rel, interpret(rel.input, tables, now, limit))
    if isinstance(rel, TopK):
        return _topk(rel, interpret(rel.input, tables, now, limit))
    if isinstance(rel, Window):
        return _window(rel, interpret(rel.input, tables, now, limit))
    if isinstance(rel, Recur):
        return Counter(_BINDINGS.get()[rel.index])
    if isinstance(rel, LetRec):
        return _let_rec(rel, tables, now, limit)
    raise TypeError(f"not a relation: {rel!r}")


def _let_rec(rel: LetRec, tables: Mapping[str, Counter[Row]], now: int,
             limit: int) -> Counter[Row]:
    """Iterate from empty bindings until an iteration changes none (``LetRec``)."""
    values: tuple[Counter[Row], ...] = tuple(Counter() for _ in rel.names)
    for iteration in range(rel.limit + 1):
        token = _BINDINGS.set(values)
        try:
            new = tuple(interpret(v, tables, now, limit) for v in rel.values)
        finally:
            _BINDINGS.reset(token)
        if new == values:
            return values[rel.result]
        if iteration == rel.limit:
            break
        values = new
    if rel.at_limit == "return":
        return values[rel.result]
    raise RecursionLimit(recursion_limit_message(rel.names, rel.limit))


def _consolidate(entries: Iterable[tuple[Row, int]]) -> Counter[Row]:
    """The multiset of ``(row, multiplicity)`` entries, equal rows summed, zeros dropped."""
    total: Counter[Row] = Counter()
    for row, mult in entries:
        total[row] += mult
    return Counter({row: mult for row, mult in total.items() if mult != 0})


def _linear(rel: Linear, rows: Counter[Row], now: int, limit: int) -> Counter[Row]:
    """The updates ``join_function`` makes of the static input (each row at time ⊥) that are
    in effect at ``now``."""
    logic = steps_logic(rel.steps, rel.input.types, limit)
    inputs = ((row, BOTTOM, mult) for row, mult in rows.items())
    if any(volatile(e) for step in rel.steps for e in step_scalars(step)):
        # a new value for each copy of a row (gen_random_uuid()): the copies one by one
        inputs = ((row, BOTTOM, 1 if mult > 0 else -1) for row, mult in rows.items()
                  for _ in range(abs(mult)))
    updates = join_function(logic, inputs)
    return _consolidate((row, diff) for row, time, diff in updates if time <= now)


def _join(rel: Join, inputs: list[Counter[Row]]) -> Counter[Row]:
    types = rel.types
    out = []
    for combination in product(*(list(rows.items()) for rows in inputs)):
        row = tuple(v for part, _ in combination for v in part)
        if all(_all_equal(exprs, row, types) for exprs in rel.equivalences) and all(
                evaluate(p, row, types) is True for p in rel.predicates):
            out.append((row, prod(mult for _, mult in combination)))
    return _consolidate(out)


def _as_of(rel: AsOfJoin, left: Counter[Row], right: Counter[Row]) -> Counter[Row]:
    """``rel`` on a static collection, every row of which arrived at once: the (left) join
    of ``left`` and ``right`` (the reference knows no history)."""
    types, out, width = rel.types, [], rel.left.arity
    pairs = [(k, remap(r, lambda c: c + width))
             for k, r in zip(rel.left_keys, rel.right_keys, strict=True)]
    for x, m in left.items():
        matched = [(x + y, m * n) for y, n in right.items() if all(
            _all_equal(pair, x + y, types) for pair in pairs) and all(
            evaluate(p, x + y, types) is True for p in rel.predicates)]
        out += matched or ([(x + (None,) * rel.right.arity, m)] if rel.outer else [])
    return _consolidate(out)


def _all_equal(exprs: Sequence[Scalar], row: Row, types: tuple[SqlType, ...]) -> bool:
    """Whether ``exprs`` are all equal and non-NULL on ``row`` (SQL ``=``: NULL never matches)."""
    values = promote([evaluate(e, row, types) for e in exprs])
    return all(v is not None and v == values[0] for v in values)


def _reduce(rel: Reduce, rows: Counter[Row]) -> Counter[Row]:
    types = rel.input.types
    groups: dict[Row, list[tuple[Row, int]]] = {}
    for row, mult in rows.items():
        key = tuple(evaluate(k, row, types) for k in rel.group_key)
        groups.setdefault(key, []).append((row, mult))
    if not rel.group_key:
        groups.setdefault((), [])
    out = []
    for key, members in groups.items():
        if rel.group_key and sum(mult for _, mult in members) <= 0:
            continue
        values = tuple(_aggregate(agg, members, types) for agg in rel.aggregates)
        out.append((key + values, 1))
    return _consolidate(out)


def _aggregate(
    agg: Aggregate, members: list[tuple[Row, int]], types: tuple[SqlType, ...]
) -> object:
    """``agg`` over the rows of one group, each ``(row, multiplicity)``: its registered
    meaning (``ir/aggregates.py``) over the non-NULL values with their multiplicities."""
    if agg.expr is None:
        return sum(mult for _, mult in members)
    fn = aggregates.maintained(agg.func)
    assert fn.python is not None
    if fn.ordered:  # the values in the call's order, then by value
        keyed = []
        for row, mult in members:
            value = evaluate(agg.expr, row, types)
            tie = value[0] if isinstance(value, tuple) else value  # array_agg's ARRAY[x]: x
            keys = tuple(evaluate(e, row, types) for e in agg.scalars()[1:])
            keyed.append((keys + (tie, value), mult))
        order = [(i, d, n) for i, (_, d, n) in enumerate(agg.order_by)]
        order.append((len(agg.order_by), False, False))
        keyed.sort(key=cmp_to_key(lambda a, b: compare_rows(a[0], b[0], order)))
        ordered = [(key[-1], mult) for key, mult in keyed if key[-1] is not None]
        return fn.python(ordered, agg.separator)
    evaluated = [(evaluate(agg.expr, row, types), mult) for row, mult in members]
    pairs: list[tuple[Any, int]] = [(value, mult) for value, mult in evaluated if value is not None]
    with localcontext(DECIMAL_CONTEXT):
        value = fn.python(pairs)
    return cast_value(value, agg.type(types)) if fn.sums_values and value is not None else value


def _topk(rel: TopK, rows: Counter[Row]) -> Counter[Row]:
    """The rows at positions ``offset + 1 .. offset + limit`` of the input's rows in the
    order of ``total_order`` (a row of multiplicity m at m positions)."""
    order = total_order(rel.order_by, rel.arity)
    ranked = sorted((row for row, mult in rows.items() if mult > 0),
                    key=cmp_to_key(lambda a, b: compare_rows(a, b, order)))
    end = None if rel.limit is None else rel.offset + rel.limit
    out: Counter[Row] = Counter()
    start = 0
    for row in ranked:
        stop = start + rows[row]
        taken = (stop if end is None else min(stop, end)) - max(start, rel.offset)
        if taken > 0:
            out[row] = taken
        start = stop
    return out


def _window(rel: Window, rows: Counter[Row]) -> Counter[Row]:
    """Each row of each partition (one per copy) with the calls' values over it."""
    partitions: dict[Row, list[Row]] = {}
    for row, mult in rows.items():
        key = tuple(row[c] for c in rel.partition_by)
        partitions.setdefault(key, []).extend([row] * mult)
    types = rel.input.types
    return _consolidate((row, 1) for members in partitions.values()
                        for row in windows.partition_values(rel.calls, members, types,
                                                            compare_rows))


def compare_rows(a: Row, b: Row, order: Sequence[SortKey]) -> int:
    """-1, 0 or 1 as row ``a`` sorts before, with or after row ``b`` by ``order``: NULLs
    first or last as each key says, a NaN above every other number."""
    for column, descending, nulls_first in order:
        x, y = a[column], b[column]
        if x is None or y is None:
            if x is None and y is None:
                continue
            return -1 if (x is None) == nulls_first else 1
        sign = _compare_values(x, y)
        if sign:
            return -sign if descending else sign
    return 0


def _compare_values(x: object, y: object) -> int:
    """-1, 0 or 1 as non-NULL ``x`` is below, equal to or above ``y`` (NaN the largest,
    intervals by their length)."""
    x_nan, y_nan = (isinstance(v, float) and math.isnan(v) for v in (x, y))
    if x_nan or y_nan:
        return int(x_nan) - int(y_nan)
    if isinstance(x, Interval) and isinstance(y, Interval):  # by length, as PostgreSQL
        x, y = x.length, y.length
    return int(x > y) - int(x < y)  # type: ignore[operator]
