"""The optimizer: an ordered tuple of transforms, each a pure function IR -> IR that keeps
the plan's output schema, followed by physical planning.

The stages EXPLAIN shows: ``raw`` (the binder's plan), ``decorrelated`` (after
``DECORRELATE``), ``optimized`` (after ``LOGICAL``), ``physical`` (after ``PHYSICAL``).
``DECORRELATE`` (``ir.decorrelate``) rewrites the subqueries in expressions that the
binder leaves in the RAW plan into joins and reductions: after it no subquery remains.
"""

from __future__ import annotations

from collections.abc import Callable

from matview.ir.decorrelate.semi_joins import semi_joins
from matview.ir.decorrelate.subquery_values import subquery_values
from matview.ir.relation import Relation
from matview.planner.join_plan import join_plan
from matview.planner.transforms.canonicalize_linear import canonicalize_linear
from matview.planner.transforms.factor_disjunctions import factor_disjunctions
from matview.planner.transforms.flat_map_to_map import flat_map_to_map
from matview.planner.transforms.flatten_joins import flatten_joins
from matview.planner.transforms.fold_constants import fold_constants
from matview.planner.transforms.fuse_linear import fuse_linear
from matview.planner.transforms.push_linear_into_joins import push_linear_into_joins

Transform = Callable[[Relation], Relation]

LOGICAL: tuple[Transform, ...] = (
    flatten_joins,
    fuse_linear,
    flat_map_to_map,  # its Filter(FALSE) and Maps of literals are for fold_constants
    fold_constants,
    factor_disjunctions,  # conjuncts shared by an OR's branches, for push_linear_into_joins
    canonicalize_linear,  # filters first, so that push_linear_into_joins sees them lead
    push_linear_into_joins,
    fuse_linear,
    canonicalize_linear,  # the steps pushed into join inputs and the Project left above
)
PHYSICAL: tuple[Transform, ...] = (join_plan,)
DECORRELATE: tuple[Transform, ...] = (semi_joins, subquery_values)
STAGES = ("raw", "decorrelated", "optimized", "physical")


def trace(plan: Relation, transforms: tuple[Transform, ...] = DECORRELATE + LOGICAL + PHYSICAL
          ) -> list[tuple[str, Relation]]:
    """The plan after each transform, by name."""
    steps = []
    for transform in transforms:
        plan = transform(plan)
        steps.append((transform.__name__, plan))
    return steps


def _run(plan: Relation, transforms: tuple[Transform, ...]) -> Relation:
    for transform in transforms:
        plan = transform(plan)
    return plan


def optimize(plan: Relation) -> Relation:
    """The logical optimizations of ``plan`` (the OPTIMIZED stage)."""
    return _run(_run(plan, DECORRELATE), LOGICAL)


def physical(plan: Relation) -> Relation:
    """``plan`` optimized, with every join's implementation chosen (the PHYSICAL stage)."""
    return _run(optimize(plan), PHYSICAL)


def at_stage(plan: Relation, stage: str) -> Relation:
    """``plan`` (a raw plan) at ``stage``, one of ``STAGES``."""
    staged = {"raw": lambda p: p, "decorrelated": lambda p: _run(p, DECORRELATE),
              "optimized": optimize, "physical": physical}
    if stage not in staged:
        raise ValueError(f"unknown plan stage {stage!r}; expected one of {', '.join(STAGES)}")
    return staged[stage](plan)
