"""The domain (magic set) rewrite shared by the decorrelation transforms.

A subquery ``S`` evaluated on the rows of ``R`` reads the columns ``c`` of each row of ``R``
(its ``Outer`` references). With ``D = δ_c(R)`` (a ``Reduce`` grouped by ``c``: each
distinct value ``d`` of those columns once), ``apply(D, S)`` is the relation of the rows
``d ++ s`` for every ``d`` in ``D`` and every row ``s`` of ``S`` evaluated with ``c = d``:
``S`` no longer reads ``R``, and the subquery's value for a row ``r`` of ``R`` is computed
from the rows of ``apply(D, S)`` whose ``d`` is ``r[c]``. It may also hold rows for values
``d`` outside ``D``; they never meet a row of ``R``. The rules, by the operator at the top
of ``S`` (``S[d]`` replaces each reference to ``c_j`` by ``d_j``):

- ``S`` reads no ``c``:  ``apply(D, S) = D × S``.
- ``apply(D, σ_{e_j = c_j, p}(X) ...)`` with ``X`` not reading ``c`` (equality correlation,
  when every ``c_j`` is so bound):  ``π_{e, X}(σ_{e not null, p[c := e]}(X)) ...``: ``d``
  is computed from the rows of ``X``, no ``D`` at all. When only some ``c_j`` are bound:
  ``D ⋈_{d_j = e_j} X``.
- ``apply(D, Linear(X, steps)) = Linear(apply(D, X), steps[c := d])``, each step shifted past
  ``d`` (a ``project`` keeps ``d`` in front).
- ``apply(D, γ_{k; aggs}(X)) = γ_{d, k; aggs}(apply(D, X))``, and for a global aggregate
  (``k`` empty, one row even over no rows):
  ``γ_{d; aggs'}(Map(apply(D, X); m = 1) ⊎ (D padded with NULLs, m = NULL))``, where
  ``aggs'`` count ``m`` for ``count(*)`` and see NULL for the pad row (``case when m is
  null then null else e end``): ``count(*)`` over no rows is 0, as SQL says (the count bug).
- ``apply(D, X ⊎ Y) = apply(D, X) ⊎ apply(D, Y)``.
- ``apply(D, Window_{p; calls}(X)) = Window_{d, p; calls}(apply(D, X))``, the calls' columns
  shifted past ``d``: each ``d``'s rows are partitions of their own.
- ``apply(D, TopK_{o; k, m}(X)) = π σ_{m < n <= m + k} Window_{d; n = row_number() over
  o}(apply(D, X))``: the top rows of each ``d``'s rows (``n`` counts a row's copies, in
  ``o`` then every column, as ``TopK`` takes positions).
- ``apply(D, X₁ ⋈ ... ⋈ Xₙ)``: each ``Xᵢ`` reading ``c`` becomes ``apply(D, Xᵢ)``, their
  ``d`` columns made equal (NULL-safely); when none reads ``c``, ``D`` joins as one more
  input; ``c`` in the join's conditions becomes ``d``.

A column of ``d`` may be NULL only when ``D`` was joined in; ``Applied.null_safe`` says
whether matching ``d`` with ``R``'s columns must treat NULLs as equal, which the equi-join
does as ``coalesce(x, z) = coalesce(y, z) AND is_null(x) = is_null(y)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time
from decimal import Decimal

from matview.ir.aggregate_call import Aggregate
from matview.ir.keys import unique_keys
from matview.ir.plans import compute
from matview.ir.relation import Join, Linear, Reduce, Relation, TopK, Union, Window
from matview.ir.scalar import (
    TRUE,
    Call,
    Case,
    Cast,
    Col,
    Lit,
    Outer,
    Scalar,
    conjuncts,
    not_null,
    remap,
    transform,
    type_of,
)
from matview.ir.steps import Filter, Map, Project, Step
from matview.ir.subquery import enter, map_step, outer_columns, rewrite_outer
from matview.ir.types import BIGINT, INT, TEXT, Kind, SqlType
from matview.ir.uuids import ZERO
from matview.ir.window_call import WindowCall

_ZEROS: dict[Kind, object] = {
    Kind.INT: 0, Kind.BIGINT: 0, Kind.DOUBLE: 0.0, Kind.NUMERIC: Decimal(0), Kind.TEXT: "",
    Kind.BOOLEAN: False, Kind.DATE: date(1970, 1, 1), Kind.TIMESTAMP: datetime(1970, 1, 1),
    Kind.TIMESTAMPTZ: datetime(1970, 1, 1, tzinfo=UTC), Kind.TIME: time(0),
    Kind.JSONB: "null", Kind.UUID: ZERO, Kind.BYTEA: b"",
}
"""A value of each type, standing for NULL in a NULL-safe key."""


@dataclass(frozen=True)
class Applied:
    """A subquery's plan decorrelated against the rows of an operator: ``rows`` holds the
    rows ``d ++ s`` (``d`` the values of the operator's columns ``keys``, see the module
    doc); ``null_safe`` when a column of ``d`` may be NULL; ``unique`` when it holds at most
    one row for each ``d`` (the subquery has at most one row), ``single`` when exactly one for
    each ``d`` of ``D`` (it is a global aggregate), so that every row of the operator meets
    exactly one. ``domain`` is ``D`` (``δ_TRUE`` of the operator's rows when ``keys`` is
    empty: one row when it has any)."""

    keys: tuple[int, ...]
    rows: Relation
    null_safe: bool
    unique: bool
    single: bool
    domain: Relation

    @property
    def width(self) -> int:
        """The number of columns of ``d``."""
        return len(self.keys)


def decorrelated(sub: Relation, outer: Relation) -> Applied:
    """The subquery plan ``sub`` (holding no subquery) evaluated on the rows of ``outer``,
    as ``apply(D, sub)`` with ``D`` the distinct values of the columns of ``outer`` it
    reads; references further out lose a level."""
    keys = outer_columns(sub)
    marked = enter(sub, lambda ref: Outer(0, keys.index(ref.index), ref.type))
    unique, single = () in unique_keys(sub), _single(sub)
    domain = Reduce(outer, tuple(Col(c) for c in keys) or (TRUE,), ())
    if not keys:
        return Applied((), marked, False, unique, single, domain)
    applier = _Applier(domain)
    return Applied(tuple(keys), applier.apply(marked), applier.null_safe, unique, single,
                   domain)


def _single(rel: Relation) -> bool:
    """Whether ``rel`` has exactly one row: a global aggregate, then maps and projects."""
    if isinstance(rel, Linear):
        return all(isinstance(s, (Map, Project)) for s in rel.steps) and _single(rel.input)
    return isinstance(rel, Reduce) and not rel.group_key


def key_equalities(applied: Applied, outer_at: int, rows_at: int) -> list[Scalar]:
    """Predicates matching the outer row's key columns (its row starting at column
    ``outer_at``) with ``d`` (starting at column ``rows_at``) in a concatenated row."""
    pairs = [(Col(outer_at + c), Col(rows_at + j)) for j, c in enumerate(applied.keys)]
    types = applied.rows.types
    out: list[Scalar] = []
    for (left, right), t in zip(pairs, types, strict=False):
        out.extend(same(left, right, t, applied.null_safe))
    return out


def same(left: Scalar, right: Scalar, t: SqlType, null_safe: bool) -> list[Scalar]:
    """``left = right``, or (``null_safe``) equalities that also match two NULLs."""
    if not null_safe:
        return [Call("eq", (left, right))]
    if t.kind not in _ZEROS:
        left, right, t = Cast(left, TEXT), Cast(right, TEXT), TEXT
    zero = Lit(_ZEROS[t.kind], t)
    return [Call("eq", (Call("coalesce", (left, zero)), Call("coalesce", (right, zero)))),
            Call("eq", (Call("is_null", (left,)), Call("is_null", (right,))))]


def as_classes(predicates: Sequence[Scalar]) -> tuple[tuple[Scalar, ...], ...]:
    """Equalities ``a = b`` as a join's equivalence classes."""
    return tuple(tuple(p.args) for p in predicates if isinstance(p, Call))


def reads_domain(rel: Relation) -> bool:
    """Whether ``rel`` reads a column of the domain (an ``Outer`` of level 0)."""
    found: list[Outer] = []

    def note(ref: Outer, depth: int) -> Scalar:
        if ref.level == 0:
            found.append(ref)
        return ref

    rewrite_outer(rel, note)
    return bool(found)


def _reads(expr: Scalar) -> bool:
    """Whether ``expr`` reads a column of the domain."""
    found: list[Scalar] = []

    def note(n: Scalar) -> Scalar:
        if isinstance(n, Outer) and n.level == 0:
            found.append(n)
        return n

    transform(expr, note)
    return bool(found)


def _bound(expr: Scalar, width: int, at: int = 0) -> Scalar:
    """``expr`` over a row that gained ``width`` columns of ``d`` at column ``at``: later
    columns shift, and the domain's columns become the columns of ``d``."""

    def node(n: Scalar) -> Scalar:
        if isinstance(n, Col) and n.index >= at:
            return Col(n.index + width)
        if isinstance(n, Outer) and n.level == 0:
            return Col(at + n.index)
        return n

    return transform(expr, node)


class _Applier:
    """``apply(domain, ·)``; ``null_safe`` turns True once ``domain`` is joined in."""

    def __init__(self, domain: Relation) -> None:
        self.domain = domain
        self.width = domain.arity
        self.null_safe = False

    def apply(self, rel: Relation) -> Relation:
        if not reads_domain(rel):
            self.null_safe = True
            return Join((self.domain, rel), ())
        if isinstance(rel, Linear):
            return self._linear(rel)
        if isinstance(rel, Reduce):
            return self._reduce(rel)
        if isinstance(rel, Union):
            return Union(tuple(self.apply(i) for i in rel.inputs))
        if isinstance(rel, Join):
            return self._join(rel)
        if isinstance(rel, Window):
            return self._window(rel)
        if isinstance(rel, TopK):
            return self._top_k(rel)
        raise TypeError(f"cannot decorrelate {type(rel).__name__}")

    def _top_k(self, rel: TopK) -> Relation:
        width = self.width
        inner = self.apply(rel.input)
        order = tuple((c + width, d, n) for c, d, n in rel.order_by)
        numbered = Window(inner, tuple(range(width)), (WindowCall("row_number", (), order),))
        position = Col(inner.arity)
        kept = [Call("gt", (position, Lit(rel.offset, BIGINT)))]
        if rel.limit is not None:
            kept.append(Call("le", (position, Lit(rel.offset + rel.limit, BIGINT))))
        return compute(numbered, [Col(i) for i in range(inner.arity)], kept)

    def _window(self, rel: Window) -> Relation:
        width = self.width
        calls = tuple(WindowCall(c.func, tuple(remap(a, lambda i: i + width) for a in c.args),
                                 tuple((i + width, d, n) for i, d, n in c.order_by), c.frame)
                      for c in rel.calls)
        return Window(self.apply(rel.input),
                      tuple(range(width)) + tuple(p + width for p in rel.partition_by), calls)

    def _steps(self, steps: Sequence[Step]) -> tuple[Step, ...]:
        width = self.width
        return tuple(
            Project(tuple(range(width)) + tuple(o + width for o in s.outputs))
            if isinstance(s, Project) else map_step(s, lambda e: _bound(e, width))
            for s in steps)

    def _linear(self, rel: Linear) -> Relation:
        first = rel.steps[0] if rel.steps else None
        if reads_domain(rel.input) or not isinstance(first, Filter):
            return Linear(self.apply(rel.input), self._steps(rel.steps))
        preds = [c for p in first.predicates for c in conjuncts(p)]
        bound: dict[int, Scalar] = {}
        rest = []
        for pred in preds:
            pair = _equality(pred)
            if pair is not None and pair[0] not in bound:
                bound[pair[0]] = pair[1]
            else:
                rest.append(pred)
        if len(bound) < self.width:
            if not bound:
                return Linear(self.apply(rel.input), self._steps(rel.steps))
            self.null_safe = True
            width = self.width
            join = Join((self.domain, rel.input),
                        tuple((Col(j), _bound(e, width)) for j, e in bound.items()))
            return Linear(join, self._steps(rel.steps))
        n = rel.input.arity

        def known(expr: Scalar) -> Scalar:
            return transform(expr, lambda x: bound[x.index]
                             if isinstance(x, Outer) and x.level == 0 else x)

        exprs = [bound[j] for j in range(self.width)]
        checks = [not_null(e) for e in exprs]
        head: list[Step] = [Filter(tuple(known(p) for p in rest) + tuple(checks)),
                            Map(tuple(exprs)),
                            Project(tuple(range(n, n + self.width)) + tuple(range(n)))]
        return Linear(rel.input, tuple(head) + self._steps(rel.steps[1:]))

    def _reduce(self, rel: Reduce) -> Relation:
        width = self.width
        inner = self.apply(rel.input)
        keys = tuple(Col(j) for j in range(width))
        group = keys + tuple(_bound(k, width) for k in rel.group_key)
        aggregates = tuple(a.mapped(lambda e: _bound(e, width)) for a in rel.aggregates)
        if rel.group_key:
            return Reduce(inner, group, aggregates)
        self.null_safe = True
        mark = Col(inner.arity)
        marked = Linear(inner, (Map((Lit(1, INT),)),))
        pads = compute(self.domain, [*keys, *(Lit(None, t) for t in inner.types[width:]),
                                     Lit(None, INT)])

        def guarded(a: Aggregate) -> Aggregate:
            if a.expr is None:
                return Aggregate(a.func, mark)
            null = Lit(None, type_of(a.expr, inner.types))
            return replace(a, expr=Case(((Call("is_null", (mark,)), null),), a.expr))

        return Reduce(Union((marked, pads)), keys, tuple(guarded(a) for a in aggregates))

    def _join(self, rel: Join) -> Relation:
        width = self.width
        reading = [i for i, r in enumerate(rel.inputs) if reads_domain(r)]
        offsets = rel.offsets()
        if not reading:
            return Join((self.domain, *rel.inputs),
                        tuple(tuple(_bound(e, width) for e in c) for c in rel.equivalences),
                        None, tuple(_bound(e, width) for e in rel.predicates))
        inputs = [self.apply(r) if i in reading else r for i, r in enumerate(rel.inputs)]
        starts = [offsets[i] + width * sum(1 for j in reading if j < i)
                  for i in range(len(inputs))]
        first = reading[0]

        def moved(expr: Scalar) -> Scalar:
            def node(n: Scalar) -> Scalar:
                if isinstance(n, Col):
                    part = max(i for i, o in enumerate(offsets) if o <= n.index)
                    return Col(n.index - offsets[part] + starts[part]
                               + (width if part in reading else 0))
                if isinstance(n, Outer) and n.level == 0:
                    return Col(starts[first] + n.index)
                return n

            return transform(expr, node)

        types = self.domain.types
        links = [p for i in reading[1:] for j in range(width)
                 for p in same(Col(starts[first] + j), Col(starts[i] + j), types[j], True)]
        if len(reading) > 1:
            self.null_safe = True
        join = Join(tuple(inputs),
                    tuple(tuple(moved(e) for e in c) for c in rel.equivalences)
                    + as_classes(links), None, tuple(moved(e) for e in rel.predicates))
        columns = [starts[i] + (width if i in reading else 0) + c
                   for i, r in enumerate(rel.inputs) for c in range(r.arity)]
        ds = tuple(range(starts[first], starts[first] + width))
        return Linear(join, (Project(ds + tuple(columns)),))


def _equality(pred: Scalar) -> tuple[int, Scalar] | None:
    """``(j, e)`` when ``pred`` is ``e = c_j`` (either way round), ``e`` not reading the
    domain."""
    if not (isinstance(pred, Call) and pred.func == "eq"):
        return None
    for ref, other in (pred.args, pred.args[::-1]):
        if isinstance(ref, Outer) and ref.level == 0 and not _reads(other):
            return ref.index, other
    return None

