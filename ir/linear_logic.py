"""The meaning of the general linear operator, stated in pure Python (seed 000).

A linear step is a *logic*: a function from one row to a list of updates ``(row', time',
diff')``. Steps compose by ``followed_by``: the second logic runs on every row the first
yields, times join (``max``, the lattice join of totally ordered times) and diffs multiply.
``join_function`` applies a logic to update batches: ``(r, t, d)`` becomes ``(r', t ⊔ t',
d * d')``. This module is the reference the Spark lowering
(``runtime.lowering.linear_steps``) is tested against; nothing here runs on the runtime's
path.

Times are int64 milliseconds since the Unix epoch, ``BOTTOM`` the least (``t ⊔ BOTTOM = t``).

Temporal filters. A predicate over ``mz_now()`` is normalized (by the binder) to
``mz_now() OP e`` with OP one of ``= < <= > >=`` and ``e`` a TIMESTAMP, DATE or integer
(milliseconds) expression of the row. With ``u`` the value of ``e`` in microseconds:

- ``>= e``: valid from ``ceil(u / 1000)``; ``> e``: from ``floor(u / 1000) + 1``;
- ``< e``: valid until (excluded) ``ceil(u / 1000)``; ``<= e``: until ``floor(u / 1000) + 1``;
- ``= e``: both ``>= e`` and ``<= e``.

A Filter step's temporal predicates together give ``lower`` (the greatest lower bound, ⊥
when none) and ``upper`` (the least upper bound, none when none); the step's logic is
``[(r, lower, +1), (r, upper, -1)]`` when ``lower < upper``, no update when the interval is
empty or a bound is NULL. Upper bounds past the largest time are no bounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import date, datetime
from functools import reduce

from matview.ir.evaluate import evaluate
from matview.ir.scalar import Call, Scalar, children
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step, step_types
from matview.ir.table_functions import DEFAULT_ROW_LIMIT, rows
from matview.ir.types import SqlType

Row = tuple[object, ...]
Update = tuple[Row, int, int]
Logic = Callable[[Row], list[Update]]

BOTTOM = -(2**63)
TOP = 2**63 - 1
MZ_NOW = Call("mz_now", ())
TEMPORAL_OPERATORS = ("eq", "lt", "le", "gt", "ge")
_EPOCH = datetime(1970, 1, 1)


def identity(row: Row) -> list[Update]:
    return [(row, BOTTOM, 1)]


def followed_by(first: Logic, then: Logic) -> Logic:
    """The logic of ``first`` then ``then``: concatenation of their outputs, times joined and
    diffs multiplied."""

    def composed(row: Row) -> list[Update]:
        return [(r2, max(t1, t2), d1 * d2)
                for r1, t1, d1 in first(row) for r2, t2, d2 in then(r1) if d1 * d2 != 0]

    return composed


def join_function(logic: Logic, updates: Iterable[Update]) -> list[Update]:
    """The output of the linear operator with ``logic`` on input ``updates``."""
    return [(r2, max(t, t2), d * d2) for r, t, d in updates for r2, t2, d2 in logic(r)
            if d * d2 != 0]


def steps_logic(steps: Sequence[Step], types: Sequence[SqlType],
                limit: int = DEFAULT_ROW_LIMIT) -> Logic:
    """The logic of ``steps`` applied in order to rows of ``types``."""
    logics = []
    current = tuple(types)
    for step in steps:
        logics.append(step_logic(step, current, limit))
        current = step_types(step, current)
    return reduce(followed_by, logics, identity)


def step_logic(step: Step, types: tuple[SqlType, ...], limit: int = DEFAULT_ROW_LIMIT) -> Logic:
    """The logic of one step over rows of ``types``."""
    if isinstance(step, Map):
        def map_logic(row: Row) -> list[Update]:
            values, so_far = list(row), list(types)
            for expr, t in zip(step.exprs, step_types(step, types)[len(types):]):
                values.append(evaluate(expr, values, so_far))
                so_far.append(t)
            return [(tuple(values), BOTTOM, 1)]
        return map_logic
    if isinstance(step, Project):
        return lambda row: [(tuple(row[i] for i in step.outputs), BOTTOM, 1)]
    if isinstance(step, Filter):
        return _filter_logic(step, types)
    if isinstance(step, Repeat):
        def repeat_logic(row: Row) -> list[Update]:
            count = evaluate(step.count, row, types)
            return [] if not count else [(row, BOTTOM, int(count))]  # type: ignore[call-overload]
        return repeat_logic
    if isinstance(step, FlatMap):
        return _flat_map_logic(step, types, limit)
    raise TypeError(f"not a linear step: {step!r}")


def _filter_logic(step: Filter, types: tuple[SqlType, ...]) -> Logic:
    plain = [p for p in step.predicates if not is_temporal(p)]
    temporal = [temporal_parts(p) for p in step.predicates if is_temporal(p)]

    def filter_logic(row: Row) -> list[Update]:
        # Every predicate is evaluated, so that an error does not depend on their order.
        verdicts = [evaluate(p, row, types) for p in plain]
        if not all(v is True for v in verdicts):
            return []
        if not temporal:
            return [(row, BOTTOM, 1)]
        interval = validity([(op, evaluate(e, row, types)) for op, e in temporal])
        if interval is None:
            return []
        lower, upper = interval
        out = [(row, lower, 1)]
        return out if upper is None else out + [(row, upper, -1)]

    return filter_logic


def _flat_map_logic(step: FlatMap, types: tuple[SqlType, ...], limit: int) -> Logic:
    widths = [len(step_types(FlatMap((c,)), types)) - len(types) for c in step.calls]

    def flat_map_logic(row: Row) -> list[Update]:
        results = [rows(c.func, [evaluate(a, row, types) for a in c.args], limit)
                   for c in step.calls]
        length = max((len(r) for r in results), default=0)
        out = []
        for i in range(length):
            values: list[object] = list(row)
            for result, width in zip(results, widths):
                values.extend(result[i] if i < len(result) else (None,) * width)
            if step.ordinality:
                values.append(i + 1)
            out.append((tuple(values), BOTTOM, 1))
        return out

    return flat_map_logic


def is_temporal(expr: Scalar) -> bool:
    """Whether ``expr`` reads ``mz_now()``."""
    return expr == MZ_NOW or any(is_temporal(c) for c in children(expr))


def is_temporal_steps(steps: Sequence[Step]) -> bool:
    """Whether ``steps`` hold a temporal filter (a predicate over ``mz_now()``)."""
    return any(isinstance(s, Filter) and any(is_temporal(p) for p in s.predicates)
               for s in steps)


def is_temporal_predicate(pred: Scalar) -> bool:
    """Whether ``pred`` is a normalized temporal predicate ``mz_now() OP e``."""
    return (isinstance(pred, Call) and pred.func in TEMPORAL_OPERATORS and len(pred.args) == 2
            and pred.args[0] == MZ_NOW and not is_temporal(pred.args[1]))


def temporal_parts(pred: Scalar) -> tuple[str, Scalar]:
    """``(OP, e)`` of a normalized temporal predicate ``mz_now() OP e``."""
    if not is_temporal_predicate(pred):
        raise ValueError(f"not a normalized temporal predicate: {pred!r}")
    assert isinstance(pred, Call)
    return pred.func, pred.args[1]


def micros(value: object) -> int:
    """A bound's value in microseconds since the epoch (integers are milliseconds)."""
    if isinstance(value, datetime):
        delta = value.replace(tzinfo=None) - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(value, date):
        return (value - _EPOCH.date()).days * 86_400_000_000
    assert isinstance(value, int)
    return value * 1000


def validity(bounds: Sequence[tuple[str, object]]) -> tuple[int, int | None] | None:
    """The times ``[lower, upper)`` at which all of ``bounds`` (``(OP, value)`` pairs of
    ``mz_now() OP value``) hold; None when a value is NULL or no time satisfies them."""
    lower, upper = BOTTOM, None
    for op, value in bounds:
        if value is None:
            return None
        u = micros(value)
        floor_ms, ceil_ms = u // 1000, -(-u // 1000)
        if op in ("ge", "eq"):
            lower = max(lower, ceil_ms)
        if op == "gt":
            lower = max(lower, floor_ms + 1)
        ends = [floor_ms + 1] if op in ("le", "eq") else [ceil_ms] if op == "lt" else []
        for end in ends:
            if end <= TOP:
                upper = end if upper is None else min(upper, end)
    if upper is not None and lower >= upper:
        return None
    return lower, upper
