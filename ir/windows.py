"""The registry of window functions: each declared once with its kind, its result type and
its meaning over one partition (PostgreSQL's, with ties in the order broken by every other
column, ``sort_keys.total_order``).

The kinds (``Kind``):

- ``RANKING`` (``row_number``, ``rank``, ``dense_rank``, ``percent_rank``, ``cume_dist``,
  ``ntile(n)``): the row's place in the order; the frame does not matter.
- ``OFFSET`` (``lag(x [, offset [, default]])``, ``lead``): the value ``offset`` rows before
  (after) the row, ``default`` past the partition's ends; the frame does not matter.
- ``VALUE`` (``first_value(x)``, ``last_value(x)``, ``nth_value(x, n)``): a row of the frame.
- ``AGGREGATE`` (``count``, ``sum``, ``min``, ``max`` of ``ir/aggregates.py``; the binder
  writes the derived ones, ``avg`` and the others, over these as a ``Reduce``'s): the
  aggregate over the frame's rows.

A frame (``window_call.Frame``) of ``rows`` spans positions; of ``range``, peers (rows equal on
the ORDER BY): ``range`` between UNBOUNDED PRECEDING and CURRENT ROW, PostgreSQL's default
under an ORDER BY, ends at the current row's last peer. ``python`` gives the reference
interpreter's meaning; the runtime (``runtime/operators/window.py``) computes the same with Spark's
window functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import localcontext
from enum import Enum
from functools import cmp_to_key, partial
from typing import Any

from matview.ir import aggregates
from matview.ir.casts import DECIMAL_CONTEXT, cast_value
from matview.ir.scalar import Col, Lit
from matview.ir.sort_keys import SortKey, total_order
from matview.ir.types import BIGINT, DOUBLE, INT, SqlType
from matview.ir.window_call import Frame, WindowCall

Row = tuple[object, ...]


class Kind(Enum):
    """What a window function reads (see the module docstring)."""

    RANKING = "ranking"
    OFFSET = "offset"
    VALUE = "value"
    AGGREGATE = "aggregate"


@dataclass(frozen=True)
class WindowFunction:
    """A registered window function: ``arity`` the numbers of arguments it takes (the first
    a column, the others literals), ``returns`` its type for its arguments' types."""

    name: str
    kind: Kind
    arity: tuple[int, ...]
    returns: Callable[[Sequence[SqlType]], SqlType]


REGISTRY: dict[str, WindowFunction] = {}


def _register(fn: WindowFunction) -> None:
    REGISTRY[fn.name] = fn


def lookup(name: str) -> WindowFunction:
    if name not in REGISTRY:
        raise KeyError(f"unknown window function {name}")
    return REGISTRY[name]


def _first_type(types: Sequence[SqlType]) -> SqlType:
    return types[0]


for _name, _type in (("row_number", BIGINT), ("rank", BIGINT), ("dense_rank", BIGINT),
                     ("percent_rank", DOUBLE), ("cume_dist", DOUBLE)):
    _register(WindowFunction(_name, Kind.RANKING, (0,),
                             lambda types, t=_type: t))  # type: ignore[misc]
_register(WindowFunction("ntile", Kind.RANKING, (1,), lambda types: INT))
for _name in ("lag", "lead"):
    _register(WindowFunction(_name, Kind.OFFSET, (1, 2, 3), _first_type))
_register(WindowFunction("first_value", Kind.VALUE, (1,), _first_type))
_register(WindowFunction("last_value", Kind.VALUE, (1,), _first_type))
_register(WindowFunction("nth_value", Kind.VALUE, (2,), _first_type))
for _name in ("count", "sum", "min", "max"):
    _register(WindowFunction(
        _name, Kind.AGGREGATE, (0, 1) if _name == "count" else (1,),
        lambda types, n=_name: aggregates.maintained(n).returns(  # type: ignore[misc]
            types[0] if types else None)))


def constant(arg: object) -> Any:
    """The value of a literal argument (``Lit``)."""
    assert isinstance(arg, Lit)
    return arg.value


def partition_values(calls: Sequence[WindowCall], rows: Sequence[Row],
                     types: Sequence[SqlType],
                     compare: Callable[[Row, Row, Sequence[SortKey]], int]) -> list[Row]:
    """Each row of one partition (a row of multiplicity m given m times) followed by the
    values of ``calls`` at it; ``compare`` orders rows by sort keys."""
    out = [tuple(row) for row in rows]
    for call in calls:
        order = total_order(call.order_by, len(types))
        ranked = sorted(out, key=cmp_to_key(partial(_compared, compare, order)))
        values = _call_values(call, ranked, types, compare)
        out = [row + (value,) for row, value in zip(ranked, values, strict=True)]
    return out


def _compared(compare: Callable[[Row, Row, Sequence[SortKey]], int],
              order: Sequence[SortKey], a: Row, b: Row) -> int:
    return compare(a, b, order)


def _call_values(call: WindowCall, rows: list[Row], types: Sequence[SqlType],
                 compare: Callable[[Row, Row, Sequence[SortKey]], int]) -> list[object]:
    """``call``'s value at each of ``rows``, sorted in its total order."""
    n = len(rows)
    first_peer, last_peer = [0] * n, [0] * n
    for i in range(1, n):
        tied = compare(rows[i - 1], rows[i], call.order_by) == 0
        first_peer[i] = first_peer[i - 1] if tied else i
    for i in range(n - 1, -1, -1):
        tied = i < n - 1 and compare(rows[i], rows[i + 1], call.order_by) == 0
        last_peer[i] = last_peer[i + 1] if tied else i
    fn = lookup(call.func)
    column = call.args[0].index if call.args and isinstance(call.args[0], Col) else None
    out: list[object] = []
    for i in range(n):
        if fn.kind is Kind.RANKING:
            out.append(_ranking(call, i, n, first_peer, last_peer))
        elif fn.kind is Kind.OFFSET:
            assert column is not None
            offset = constant(call.args[1]) if len(call.args) > 1 else 1
            default = constant(call.args[2]) if len(call.args) > 2 else None
            at = i - offset if call.func == "lag" else i + offset
            out.append(rows[at][column] if 0 <= at < n else default)
        else:
            start, end = frame_bounds(call.frame, i, n, first_peer, last_peer)
            framed = rows[start:end + 1] if start <= end else []
            if fn.kind is Kind.VALUE:
                assert column is not None
                if call.func == "nth_value":
                    place = (constant(call.args[1]) or 0) - 1
                else:
                    place = 0 if call.func == "first_value" else len(framed) - 1
                out.append(framed[place][column] if 0 <= place < len(framed) else None)
            else:
                out.append(_aggregate(call, framed, column, types))
    return out


def _ranking(call: WindowCall, i: int, n: int, first_peer: list[int],
             last_peer: list[int]) -> object:
    """A ranking function's value at row ``i`` of ``n``."""
    if call.func == "row_number":
        return i + 1
    if call.func == "rank":
        return first_peer[i] + 1
    if call.func == "dense_rank":
        return len({first_peer[j] for j in range(i + 1)})
    if call.func == "percent_rank":
        return first_peer[i] / (n - 1) if n > 1 else 0.0
    if call.func == "cume_dist":
        return (last_peer[i] + 1) / n
    buckets = constant(call.args[0])  # ntile: the first n % buckets buckets hold one more
    if buckets is None:
        return None
    size, extra = divmod(n, buckets)
    if i < extra * (size + 1):
        return i // (size + 1) + 1
    return extra + (i - extra * (size + 1)) // size + 1


def frame_bounds(frame: Frame, i: int, n: int, first_peer: Sequence[int],
                 last_peer: Sequence[int]) -> tuple[int, int]:
    """The first and last positions (from 0, clipped to the partition) of row ``i``'s
    frame; the frame is empty when the first is after the last."""
    if frame.units == "range":
        start = 0 if frame.start is None else first_peer[i]
        end = n - 1 if frame.end is None else last_peer[i]
        return start, end
    start = 0 if frame.start is None else max(0, i + frame.start)
    end = n - 1 if frame.end is None else min(n - 1, i + frame.end)
    return start, end


def _aggregate(call: WindowCall, framed: list[Row], column: int | None,
               types: Sequence[SqlType]) -> object:
    """An aggregate over the frame's rows (``ir/aggregates.py``'s meaning)."""
    if column is None:  # count(*)
        return len(framed)
    fn = aggregates.maintained(call.func)
    assert fn.python is not None
    pairs = [(row[column], 1) for row in framed if row[column] is not None]
    with localcontext(DECIMAL_CONTEXT):
        value = fn.python(pairs)
    if fn.sums_values and value is not None:
        return cast_value(value, call.type(types))
    return value
