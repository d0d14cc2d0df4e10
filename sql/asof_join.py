"""``L ASOF [LEFT] JOIN R ON ...`` bound: its ON condition checked to be the keys'
equalities and one inequality of times, then lowered by ``ir.asof_joins``."""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.asof_joins import asof_condition, asof_join
from matview.ir.relation import Relation
from matview.ir.scalar import Scalar
from matview.sql.errors import UnsupportedError
from sqlglot import exp


def asof(join: exp.Join, side: str, left: Relation, right: Relation,
         on: Sequence[Scalar]) -> Relation:
    """``left`` ``side`` (``ASOF`` or ``ASOF LEFT``) JOIN ``right`` ON ``on``, whose
    predicates read ``left``'s columns followed by ``right``'s."""
    cond = asof_condition(on, left.arity)
    if cond is None:
        raise UnsupportedError.at(
            f"{side} JOIN's ON condition must be equalities between the two sides and "
            "exactly one inequality (>=, >, <= or <) between an expression of each side",
            join.args.get("on") or join)
    return asof_join(left, right, cond, side == "ASOF LEFT")
