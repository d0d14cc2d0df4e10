"""ASOF joins on data time (``L ASOF [LEFT] JOIN R ON k_L = k_R AND l θ r``) lowered to
operators the dataflow already maintains (``Window``, ``Join``, ``Union``, ``Linear``), so
their delta rules need nothing new.

Meaning (DuckDB's): each row of ``L`` is paired with the one row of ``R`` with equal keys
whose ``r`` is the greatest (θ is ``>=`` or ``>``) or the least (``<=``, ``<``) value for
which ``l θ r`` holds; the inner join drops a row of ``L`` without one, LEFT pads it with
NULLs. A NULL key or time matches nothing. Where several rows of ``R`` share the best ``r``,
the first in ``R``'s total order (every column ascending, NULLs last) is taken, so the
result is deterministic.

With ``t`` the common type of ``l`` and ``r`` (and ``k`` of each key pair), ``s`` a row's
side (asked: a row of ``L``, offered: a time of ``R``) and ``o`` an offered time:

    R₁ = σ_{n = 1} Window_{k_R, r}(n = row_number() in R's total order)(σ_{k_R, r ≠ NULL} R)
         (σ_{k_R, r ≠ NULL} R itself when a unique key of R is among k_R and r)
    W  = Window_k(b = max(o) (min for <=, <) over the rows from the partition's start to
             the row, ordered by t (descending for <=, <) then s)(
             π_{k_L, l, asked, NULL, L}(σ_{k_L, l ≠ NULL} L) ⊎ π_{k_R, r, offered, r, NULL} R₁)
    L ASOF JOIN R       =  π_{L, R}(σ_{s = asked, b ≠ NULL} W ⋈_{k = k_R, b = r} R₁)
    L ASOF LEFT JOIN R  =  L ASOF JOIN R ⊎ π_{L, NULL}(σ_{s = asked, b = NULL} W)
                                         ⊎ π_{L, NULL}(σ_{k_L = NULL ∨ l = NULL} L)

In the window's order an offered time equal to an asked one comes first for ``>=`` and
``<=`` (``s``: offered 0, asked 1) and last for ``>`` and ``<`` (offered 1, asked 0), so the
running max (min) of the offered times at an asked row is its best match ``b``; R₁ has one
row per ``(k_R, r)``, so the join finds exactly one. Delta rule: the operators'. A change to
either side touches its key's partition of the window at the step's times (seed 002's
interesting times): a step's work follows the keys it changes, and a price that changes
some rows' matches changes only those rows of the output. State: the window's input (``L``'s
rows and ``R``'s times) arranged by key, R₁ by ``(k_R, r)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir.keys import unique_keys
from matview.ir.linear_logic import is_temporal
from matview.ir.outer_joins import key_pair, right_side, sides_read
from matview.ir.plans import compute
from matview.ir.relation import Join, Relation, Union, Window
from matview.ir.scalar import Call, Cast, Col, Lit, Scalar, balanced, conjuncts, type_of
from matview.ir.types import BIGINT, INT, SqlType, common_type
from matview.ir.window_call import Frame, WindowCall

_MIRRORED = {"ge": "le", "gt": "lt", "le": "ge", "lt": "gt"}
"""Each inequality with its operands swapped: ``r θ l`` is ``l mirrored(θ) r``."""

RUNNING = Frame("rows", None, 0)
"""From the partition's first row to the current one."""


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
    keys = [_common(k_l, left.types, k_r, right.types)
            for k_l, k_r in zip(cond.left_keys, cond.right_keys)]
    time = _common(cond.left_time, left.types, cond.right_time, right.types)
    asked_by = [k[0] for k in keys] + [time[0]]
    n, width, arity = len(keys), left.arity, right.arity
    first = _first_rows(right, [k[1] for k in keys] + [time[1]])
    time_type = type_of(asked_by[-1], left.types)
    asked, offered = (1, 0) if cond.op in ("ge", "le") else (0, 1)
    asks = compute(left, [*asked_by, Lit(asked, INT), Lit(None, time_type),
                          *(Col(i) for i in range(width))], _not_null(asked_by))
    offers = compute(first, [*(Col(arity + i) for i in range(n + 1)), Lit(offered, INT),
                             Col(arity + n), *(Lit(None, t) for t in left.types)])
    descending = cond.op in ("le", "lt")
    call = WindowCall("min" if descending else "max", (Col(n + 2),),
                      ((n, descending, False), (n + 1, False, False)), RUNNING)
    window = Window(Union((asks, offers)), tuple(range(n)), (call,))
    best, rows = Col(n + 3 + width), [Col(n + 3 + i) for i in range(width)]
    is_asked = Call("eq", (Col(n + 1), Lit(asked, INT)))
    found = compute(window, [*rows, *(Col(i) for i in range(n)), best],
                    [is_asked, Call("not", (Call("is_null", (best,)),))])
    pairs = Join((found, first), tuple(
        (Col(width + i), Col(width + n + 1 + arity + i)) for i in range(n + 1)))
    matched = compute(pairs, [*(Col(i) for i in range(width)),
                              *(Col(width + n + 1 + j) for j in range(arity))])
    if not outer:
        return matched
    nulls = [Lit(None, t) for t in right.types]
    unmatched = compute(window, [*rows, *nulls], [is_asked, Call("is_null", (best,))])
    unkeyed = compute(left, [*(Col(i) for i in range(width)), *nulls],
                      [balanced("or", [Call("is_null", (e,)) for e in asked_by])])
    return Union((matched, unmatched, unkeyed))


def _first_rows(right: Relation, offered_by: Sequence[Scalar]) -> Relation:
    """R₁: the rows of ``right`` whose ``offered_by`` (keys, then time) are not NULL, with
    those values appended, one per distinct ``offered_by`` (the first in the total order)."""
    arity, n = right.arity, len(offered_by)
    present = compute(right, [*(Col(i) for i in range(arity)), *offered_by],
                      _not_null(offered_by))
    plain = {e.index for e in offered_by if isinstance(e, Col)}
    if any(set(key) <= plain for key in unique_keys(right)):
        return present
    numbered = Window(present, tuple(range(arity, arity + n)),
                      (WindowCall("row_number", (), ()),))
    return compute(numbered, [Col(i) for i in range(arity + n)],
                   [Call("eq", (Col(arity + n), Lit(1, BIGINT)))])


def _common(left: Scalar, left_types: Sequence[SqlType], right: Scalar,
            right_types: Sequence[SqlType]) -> tuple[Scalar, Scalar]:
    """``left`` and ``right`` cast to the type both convert to, where theirs differs."""
    types = type_of(left, left_types), type_of(right, right_types)
    both = common_type(*types)
    return (left if types[0] == both else Cast(left, both),
            right if types[1] == both else Cast(right, both))


def _not_null(exprs: Sequence[Scalar]) -> list[Scalar]:
    return [Call("not", (Call("is_null", (e,)),)) for e in exprs]
