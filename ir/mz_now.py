"""``mz_now()`` in a one-shot query: the time the query reads at, a constant.

A view keeps a row only while a condition on ``mz_now()`` holds (a temporal filter); a
one-shot query reads its inputs at one time ``t``, so there every ``mz_now()`` is ``t``, as
Materialize substitutes its peeks' timestamp. The binder types each use
(``sql.temporal.value``): compared with a timestamp, a date or an integer, ``mz_now()`` is
cast to their common type (``types.common_type``), and ``CAST(mz_now() AS τ)`` names the
type it is read as, so the substitution needs no types of its own.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from matview.ir.casts import cast_value
from matview.ir.linear_logic import MZ_NOW, is_temporal_predicate
from matview.ir.relation import Relation, inputs_of
from matview.ir.scalar import (
    Cast,
    Exists,
    InSubquery,
    Lit,
    Scalar,
    ScalarSubquery,
    children,
    transform,
)
from matview.ir.subquery import map_own_scalars, own_scalars, subqueries, with_rel
from matview.ir.types import MZ_TIMESTAMP, Kind, SqlType
from matview.ir.walk import bottom_up

_EPOCH = datetime(1970, 1, 1)
_AS_NUMBER = (Kind.TEXT, Kind.NUMERIC, Kind.INT, Kind.BIGINT)
"""The types ``mz_now()`` is read as milliseconds in (else: as the moment they denote)."""


def reads_mz_now(plan: Relation) -> bool:
    """Whether an operator of ``plan``, or of a subquery in it, reads ``mz_now()`` other
    than in a temporal filter."""
    return any(_reads(e) for e in own_scalars(plan)) or any(
        reads_mz_now(c) for c in inputs_of(plan))


def _reads(expr: Scalar) -> bool:
    if is_temporal_predicate(expr):
        return False
    return expr == MZ_NOW or any(reads_mz_now(s.rel) for s in subqueries(expr)) or any(
        _reads(c) for c in children(expr))


def bind_mz_now(plan: Relation, at: int) -> Relation:
    """``plan`` read at time ``at`` (milliseconds since the Unix epoch), in every operator
    and subquery::

        CAST(mz_now() AS τ)  →  at as τ   (text and numbers: the milliseconds;
                                            timestamps and dates: epoch + at ms)
        mz_now()             →  at :: mz_timestamp
    """

    def scalar(node: Scalar) -> Scalar:
        if node == MZ_NOW:
            return Lit(at, MZ_TIMESTAMP)
        if isinstance(node, Cast) and node.expr == Lit(at, MZ_TIMESTAMP):
            return Lit(_read_as(at, node.to), node.to)
        if isinstance(node, Exists | InSubquery | ScalarSubquery):
            return with_rel(node, bind_mz_now(node.rel, at))
        return node

    # a temporal filter of a view the query reads (a one-shot query's own comparisons cast
    # mz_now()) reads the time it is evaluated at already: kept
    return bottom_up(plan, lambda rel: map_own_scalars(
        rel, lambda e: transform(e, scalar, keep=is_temporal_predicate)))


def _read_as(at: int, to: SqlType) -> object:
    if to.kind in _AS_NUMBER:
        return cast_value(at, to)
    return cast_value(_EPOCH + timedelta(milliseconds=at), to)
