"""Small constructors that keep bound plans tidy: one ``Linear`` with only the steps needed."""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir.relation import Constant, Linear, Relation
from matview.ir.scalar import Col, Lit, Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step, step_types
from matview.ir.types import INT

UNIT = Constant((((), 1),), ())
"""One empty row: the input of a SELECT without FROM."""


def linear(rel: Relation, steps: Sequence[Step]) -> Relation:
    """``rel`` followed by ``steps`` (``rel`` itself when there are none)."""
    return Linear(rel, tuple(steps)) if steps else rel


def negated(rel: Relation) -> Relation:
    """``rel`` with every multiplicity negated (``repeat_row -1``): its rows retracted."""
    return Linear(rel, (Repeat(Lit(-1, INT)),))


def compute(
    rel: Relation, exprs: Sequence[Scalar], predicates: Sequence[Scalar] = (),
    flat_map: FlatMap | None = None,
) -> Relation:
    """The rows of ``rel`` on which ``predicates`` hold, each (expanded by ``flat_map``, whose
    columns ``exprs`` may read) turned into the values of ``exprs``; plain column references
    are projected rather than computed."""
    steps: list[Step] = [Filter(tuple(predicates))] if predicates else []
    arity = rel.arity
    if flat_map is not None:
        steps.append(flat_map)
        arity = len(step_types(flat_map, rel.types))
    computed = [e for e in exprs if not isinstance(e, Col)]
    outputs, next_computed = [], arity
    for expr in exprs:
        if isinstance(expr, Col):
            outputs.append(expr.index)
        else:
            outputs.append(next_computed)
            next_computed += 1
    if computed:
        steps.append(Map(tuple(computed)))
    if outputs != list(range(arity + len(computed))):
        steps.append(Project(tuple(outputs)))
    return linear(rel, steps)
