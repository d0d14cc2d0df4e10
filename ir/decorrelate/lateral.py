"""``LATERAL (SELECT ...)`` in FROM, joined through the domain (``domain``).

A FROM item ``LATERAL S`` after the relation ``L`` (the FROM items before it, joined under
their conditions) reads the columns ``c`` of each row of ``L`` (``S``'s ``Outer``
references of level 1). With ``A = apply(δ_c(L), S')`` (the rows ``d ++ s``; ``S'`` is
``S`` with its own subqueries in expressions decorrelated, as ``DECORRELATE`` does):

    L, LATERAL S                  =  π_{L, s}(L ⋈_{c = d} A)
    L LEFT JOIN LATERAL S ON p    =  π_{L, s}(L ⟕_{c = d ∧ p} A)

Each row ``l`` of ``L`` meets the rows of ``A`` with ``d = l[c]``, which are the rows of
``S`` evaluated on ``l`` (NULL-safely matched when ``d`` may hold NULLs): a global aggregate
gives one row even over no rows (a count of 0), as in PostgreSQL. ``⟕`` is the LEFT JOIN of
``ir.outer_joins``. ``S`` reading no column of ``L`` is a plain join with ``S``.

The binder applies this rewrite: no RAW operator joins laterally, so the RAW plan of a query
with a LATERAL subquery already shows the join (with ``S``'s own subqueries decorrelated).
That is why this module and the decorrelation it runs are in the IR: ``sql/`` imports no
planner module, and a plain lateral node left for the planner to rewrite would change the
RAW plan EXPLAIN shows.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.decorrelate.domain import as_classes, decorrelated, key_equalities
from matview.ir.decorrelate.semi_joins import semi_joins
from matview.ir.decorrelate.subquery_values import subquery_values
from matview.ir.outer_joins import outer_join
from matview.ir.plans import linear
from matview.ir.relation import Join, Relation
from matview.ir.scalar import Scalar, remap
from matview.ir.steps import Project


def lateral_join(left: Relation, sub: Relation, on: Sequence[Scalar] | None) -> Relation:
    """The rows of ``left``, each joined with the rows of the plan ``sub`` evaluated on it
    (its level-1 ``Outer`` references read ``left``'s columns): an inner join when ``on`` is
    None, else a LEFT JOIN on the conjunction of ``on`` (over ``left``'s columns followed by
    ``sub``'s)."""
    applied = decorrelated(subquery_values(semi_joins(sub)), left)
    n, width = left.arity, applied.width
    keys = key_equalities(applied, 0, n)
    if on is None:
        joined = Join((left, applied.rows), as_classes(keys))
    else:
        moved = [remap(p, lambda c: c + width if c >= n else c) for p in on]
        joined = outer_join("LEFT", left, applied.rows, [*keys, *moved])
    columns = (*range(n), *range(n + width, n + width + sub.arity))
    return linear(joined, [Project(columns)] if width else [])
