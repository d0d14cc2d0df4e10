"""The as-of joins bound: ``L ASOF [LEFT] JOIN R ON ...`` (data time), its ON condition
checked to be the keys' equalities and one inequality of times, then lowered by
``ir.asof_joins``; ``L [LEFT] JOIN R FOR SYSTEM_TIME AS OF mz_now() ON ...`` (transaction
time, also spelled ``FOR TIMESTAMP AS OF``), an ``AsOfJoin``."""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.asof_joins import asof_condition, asof_join
from matview.ir.keys import unique_keys
from matview.ir.linear_logic import is_temporal
from matview.ir.outer_joins import key_pair, right_side
from matview.ir.relation import AsOfJoin, Relation
from matview.ir.scalar import Outer, Scalar, children, conjuncts, may_fail
from matview.ir.subquery import outer_columns, subqueries
from matview.sql.errors import UnsupportedError
from sqlglot import exp


def asof(join: exp.Join, side: str, left: Relation, right: Relation,
         on: Sequence[Scalar]) -> Relation:
    """``left`` ``side`` (``ASOF`` or ``ASOF LEFT``, ``SYSTEM_TIME`` or ``SYSTEM_TIME
    LEFT``) JOIN ``right`` ON ``on``, whose predicates read ``left``'s columns followed by
    ``right``'s."""
    if side.startswith("SYSTEM_TIME"):
        return _system_time(join, side == "SYSTEM_TIME LEFT", left, right, on)
    cond = asof_condition(on, left.arity)
    if cond is None:
        raise UnsupportedError.at(
            f"{side} JOIN's ON condition must be equalities between the two sides and "
            "exactly one inequality (>=, >, <= or <) between an expression of each side",
            join.args.get("on") or join)
    return asof_join(left, right, cond, side == "ASOF LEFT")


def _system_time(join: exp.Join, outer: bool, left: Relation, right: Relation,
                 on: Sequence[Scalar]) -> AsOfJoin:
    """The ``AsOfJoin`` of ``left`` and ``right`` ON ``on``: its equalities between an
    expression of each side are its keys, the rest its predicates."""
    if outer_columns(left) or outer_columns(right):
        raise UnsupportedError.at(
            "JOIN ... FOR SYSTEM_TIME AS OF mz_now() in a subquery cannot join relations that "
            "read the enclosing query's columns", join.this)
    keys = [key for key in unique_keys(left) if key]
    if not keys:
        raise UnsupportedError.at(
            "JOIN ... FOR SYSTEM_TIME AS OF mz_now() needs a left side with a unique key (a "
            "table's primary key, say): a deleted row retracts the rows its insertion "
            "produced, found by that key", join.this)
    left_keys: list[Scalar] = []
    right_keys: list[Scalar] = []
    predicates: list[Scalar] = []
    for pred in (c for p in on for c in conjuncts(p)):
        if is_temporal(pred) or any(subqueries(pred)) or may_fail(pred) or _outer(pred):
            raise UnsupportedError.at(
                "the ON condition of JOIN ... FOR SYSTEM_TIME AS OF mz_now() cannot read "
                "mz_now(), a subquery, a column of an enclosing query or an expression that "
                "may fail", join.args.get("on") or join)
        pair = key_pair(pred, left.arity)
        if pair is None:
            predicates.append(pred)
        else:
            left_keys.append(pair[0])
            right_keys.append(right_side(pair[1], left.arity))
    return AsOfJoin(left, right, tuple(left_keys), tuple(right_keys), tuple(predicates),
                    outer, min(keys, key=len))


def _outer(expr: Scalar) -> bool:
    """Whether ``expr`` reads a column of an enclosing query (``Outer``)."""
    return isinstance(expr, Outer) or any(_outer(child) for child in children(expr))
