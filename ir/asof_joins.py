"""ASOF joins on data time (``L ASOF [LEFT] JOIN R ON k_L = k_R AND l θ r``) lowered to
operators the dataflow already maintains (``Window``, ``Join``, ``Union``, ``Linear``), so
their delta rules need nothing new.

Meaning (DuckDB's): each row of ``L`` is paired with the one row of ``R`` with equal keys
whose ``r`` is the greatest (θ is ``>=`` or ``>``) or the least (``<=``, ``<``) value for
which ``l θ r`` holds; the inner join drops a row of ``L`` without one, LEFT pads it with
NULLs. A NULL key or time matches nothing. Where several rows of ``R`` share the best ``r``,
the first in ``R``'s total order (every column ascending, NULLs last) is taken, so the
result is deterministic.

The binder has cast ``l`` and ``r`` (and each key pair) to one type. Each row of ``R`` that
can match (one per key and time) holds the times ``l`` it is the best match of: an interval
from its ``r`` to the next time of its key (``>=``: ``r <= l < next``; ``>``: ``r < l <=
next``) or from the time before (``<=``: ``prev < l <= r``; ``<``: ``prev <= l < r``),
unbounded where there is none. The intervals of a key do not overlap, so each row of
``L`` falls in at most one:

    R₁ = σ_{n = 1} Window_{k_R, r}(n = row_number() in R's total order)(σ_{k_R, r ≠ NULL} R)
         (σ_{k_R, r ≠ NULL} R itself when a unique key of R is among k_R and r)
    I  = Window_{k_R}(b = lead(r) (lag(r) for <=, <) in the order of r)(R₁)
    L ASOF JOIN R       =  M  =  π_{L, R} σ_{l in [r, b)}(L ⋈_{k_L = k_R} I)
    L ASOF LEFT JOIN R  =  M ⊎ π_{L, NULL}(L ⊎ −π_L M)

Delta rule: the operators'. A new or deleted price changes the intervals of its key's
neighbouring times (a window over that key's prices only), which the join meets with that
key's rows of ``L``: exactly the rows whose match moves change in the output. A new row of
``L`` looks up its key's intervals. State: ``L`` and ``I`` arranged by key (``L``'s the
table's own, shared), R₁ and its window by key and time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir.keys import unique_keys
from matview.ir.linear_logic import is_temporal
from matview.ir.outer_joins import key_pair, right_side, sides_read
from matview.ir.plans import compute, negated
from matview.ir.relation import Join, Relation, Union, Window
from matview.ir.scalar import Call, Col, Lit, Scalar, conjuncts, not_null
from matview.ir.types import BIGINT
from matview.ir.window_call import WindowCall

_MIRRORED = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}
"""Each inequality with its operands swapped: ``r θ l`` is ``l mirrored(θ) r``."""


@dataclass(frozen=True)
class AsOf:
    """An ASOF join's ON condition split: ``left_keys[i] = right_keys[i]`` for each ``i``,
    and ``left_time op right_time``; each operand over its own side's columns."""

    left_keys: tuple[Scalar, ...]
    right_keys: tuple[Scalar, ...]
    left_time: Scalar
    op: str
    right_time: Scalar


def asof_condition(on: Sequence[Scalar], arity: int) -> AsOf | None:
    """``on`` (over ``L``'s ``arity`` columns followed by ``R``'s) as equalities of the two
    sides and exactly one inequality ``>=``, ``>``, ``<=`` or ``<`` between them; None when
    it is not of that form."""
    left_keys: list[Scalar] = []
    right_keys: list[Scalar] = []
    times: list[tuple[Scalar, str, Scalar]] = []
    for pred in (c for p in on for c in conjuncts(p)):
        pair = key_pair(pred, arity)
        if pair is not None:
            left_keys.append(pair[0])
            right_keys.append(right_side(pair[1], arity))
            continue
        if not (isinstance(pred, Call) and pred.func in _MIRRORED) or is_temporal(pred):
            return None
        first, second = pred.args
        sides = (sides_read(first, arity), sides_read(second, arity))
        if sides == ({0}, {1}):
            times.append((first, pred.func, right_side(second, arity)))
        elif sides == ({1}, {0}):
            times.append((second, _MIRRORED[pred.func], right_side(first, arity)))
        else:
            return None
    if len(times) != 1:
        return None
    left_time, op, right_time = times[0]
    return AsOf(tuple(left_keys), tuple(right_keys), left_time, op, right_time)


def asof_join(left: Relation, right: Relation, cond: AsOf, outer: bool) -> Relation:
    """``left`` ASOF JOIN (``outer``: ASOF LEFT JOIN) ``right`` on ``cond``: the columns of
    ``left`` followed by those of ``right`` (see the module docstring)."""
    n, width, arity = len(cond.left_keys), left.arity, right.arity
    first = _first_rows(right, [*cond.right_keys, cond.right_time])
    offered = arity + n
    bound = WindowCall("lag" if cond.op in ("le", "lt") else "lead", (Col(offered),),
                       ((offered, False, False),))
    intervals = Window(first, tuple(range(arity, offered)), (bound,))
    at, r, b = cond.left_time, Col(width + offered), Col(width + offered + 1)
    pairs = Join((left, intervals), tuple((key, Col(width + arity + i))
                                          for i, key in enumerate(cond.left_keys)))
    # r is l's best match: l θ r holds, and l θ b (the next or previous time) does not
    matched = compute(pairs, [*(Col(i) for i in range(width + arity))], [
        Call(cond.op, (at, r)),
        Call("or", (Call("is_null", (b,)), Call("not", (Call(cond.op, (at, b)),))))])
    if not outer:
        return matched
    unmatched = Union((left, negated(compute(matched, [Col(i) for i in range(width)]))))
    return Union((matched, compute(unmatched, [*(Col(i) for i in range(width)),
                                               *(Lit(None, t) for t in right.types)])))


def _first_rows(right: Relation, offered_by: Sequence[Scalar]) -> Relation:
    """R₁: the rows of ``right`` whose ``offered_by`` (keys, then time) are not NULL, with
    those values appended, one per distinct ``offered_by`` (the first in the total order)."""
    arity, n = right.arity, len(offered_by)
    present = compute(right, [*(Col(i) for i in range(arity)), *offered_by],
                      [not_null(e) for e in offered_by])
    plain = {e.index for e in offered_by if isinstance(e, Col)}
    if any(set(key) <= plain for key in unique_keys(right)):
        return present
    numbered = Window(present, tuple(range(arity, arity + n)),
                      (WindowCall("row_number", (), ()),))
    return compute(numbered, [Col(i) for i in range(arity + n)],
                   [Call("eq", (Col(arity + n), Lit(1, BIGINT)))])
