"""The values of decorrelated subqueries on their outer rows: each joins the rows ``R`` of
an operator with ``apply(D, S)`` (``domain.Applied``) on the key ``d``, giving a semi join
(``semi_join``), or ``R`` extended with the value of ``EXISTS S`` (``exists_value``),
``x IN S`` (``in_value``) or the scalar subquery ``S`` (``scalar_value``) on each row.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.aggregate_call import Aggregate
from matview.ir.decorrelate.domain import Applied, as_classes, key_equalities, same
from matview.ir.outer_joins import outer_join
from matview.ir.plans import linear
from matview.ir.relation import Join, Linear, Reduce, Relation
from matview.ir.scalar import FALSE, TRUE, Call, Case, Col, Lit, Scalar
from matview.ir.steps import Map, Project
from matview.ir.types import BIGINT, BOOLEAN


def semi_join(outer: Relation, applied: Applied, pairs: Sequence[tuple[Scalar, int]] = ()
              ) -> Relation:
    """The rows of ``outer`` (each copy once) that have a row in ``applied`` with their
    ``d`` and, for each ``(x, i)`` of ``pairs``, column ``i`` of the subquery's row equal to
    ``x`` (SQL ``=``): ``π_R(R ⋈ δ_{d, s_i}(apply(D, S)))``."""
    n, width = outer.arity, applied.width
    keys = [Col(j) for j in range(width)] + [Col(width + i) for _, i in pairs]
    distinct = Reduce(applied.rows, tuple(keys) or (TRUE,), ())
    equalities = key_equalities(applied, 0, n) + [
        Call("eq", (x, Col(n + width + k))) for k, (x, _) in enumerate(pairs)]
    join = Join((outer, distinct), as_classes(equalities))
    return Linear(join, (Project(tuple(range(n))),))


def left_joined(outer: Relation, rows: Relation, on: Sequence[Scalar]) -> Relation:
    """``outer`` LEFT JOIN ``rows`` ON ``on`` (``ir.outer_joins``)."""
    return outer_join("LEFT", outer, rows, on)


def exists_value(outer: Relation, applied: Applied) -> tuple[Relation, Scalar]:
    """``outer`` extended so that the returned expression is ``EXISTS`` on each row:
    ``R ⟕ Map(δ_d(apply(D, S)); TRUE)``, the value ``coalesce(marker, FALSE)``."""
    n, width = outer.arity, applied.width
    marked = linear(Reduce(applied.rows, tuple(Col(j) for j in range(width)) or (TRUE,), ()),
                    [Map((TRUE,))])
    joined = left_joined(outer, marked, key_equalities(applied, 0, n))
    return joined, Call("coalesce", (Col(n + max(width, 1)), FALSE))


def scalar_value(outer: Relation, applied: Applied) -> tuple[Relation, Scalar]:
    """``outer`` extended with the scalar subquery's value: ``R ⟕ apply(D, S)`` when it has
    at most one row per ``d``, ``R ⋈ apply(D, S)`` when exactly one for each ``d`` of ``D``,
    the value the first column after ``d``. Otherwise ``R ⟕ γ_{d; count(*), max(s)}(A)``
    (``R × γ_{; count(*), max(s)}(A)`` when uncorrelated: one row), the value
    ``single_row(count, max)``: the error of a subquery returning several rows where there
    are several, else the one value (NULL over none). ``A`` is first restricted to the
    ``d`` of ``D`` (``π_A(D ⋈_d A)``): the optimizer may evaluate ``single_row`` before the
    join, and a ``d`` that no row of ``R`` has must not fail."""
    n, width = outer.arity, applied.width
    rows, single = applied.rows, applied.single
    value: Scalar = Col(n + width)
    if not applied.unique:
        domain = applied.domain
        on = [p for j, t in enumerate(domain.types[:width])
              for p in same(Col(j), Col(domain.arity + j), t, applied.null_safe)]
        needed = Linear(Join((domain, rows), as_classes(on)),
                        (Project(tuple(range(domain.arity, domain.arity + rows.arity))),))
        rows = Reduce(needed, tuple(Col(j) for j in range(width)),
                      (Aggregate("count", None), Aggregate("max", Col(width))))
        single = not width
        value = Call("single_row", (Col(n + width), Col(n + width + 1)))
    on = key_equalities(applied, 0, n)
    joined = Join((outer, rows), as_classes(on)) if single else left_joined(outer, rows, on)
    return joined, value


def in_value(outer: Relation, applied: Applied, needle: Scalar) -> tuple[Relation, Scalar]:
    """``outer`` extended so that the returned expression is ``needle IN S`` with SQL's
    NULLs: ``found`` from ``R ⟕_{d, x = s} Map(δ_{d, s}(A); TRUE)``, then ``n`` rows and
    ``v`` non-NULL values per ``d`` from ``⟕_d γ_{d; count(*), count(s)}(A)``: TRUE when
    found, FALSE when ``n`` is 0, NULL when ``x`` is NULL or ``n > v``, else FALSE."""
    n, width = outer.arity, applied.width
    keys = tuple(Col(j) for j in range(width))
    found = Linear(Reduce(applied.rows, keys + (Col(width),), ()), (Map((TRUE,)),))
    first = left_joined(outer, found, key_equalities(applied, 0, n)
                        + [Call("eq", (needle, Col(n + width)))])
    counted = Reduce(applied.rows, keys or (TRUE,),
                     (Aggregate("count", None), Aggregate("count", Col(width))))
    at = first.arity
    second = left_joined(first, counted, key_equalities(applied, 0, at))
    rows, values = Col(at + max(width, 1)), Col(at + max(width, 1) + 1)
    zero = Lit(0, BIGINT)
    value = Case(((Col(n + width + 1), TRUE),
                  (Call("eq", (Call("coalesce", (rows, zero)), zero)), FALSE),
                  (Call("or", (Call("is_null", (needle,)), Call("gt", (rows, values)))),
                   Lit(None, BOOLEAN))),
                 FALSE)
    return second, value
