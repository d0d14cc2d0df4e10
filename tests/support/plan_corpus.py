"""Plans the EXPLAIN format tests share: every well-typed plan of the golden fixture files
(``corpus``) and a three-way self join under a reduction (``SELF_JOIN``)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from matview.ir.parse import PlanSyntaxError, parse_plan
from matview.ir.relation import Relation, inputs_of

from tests.support.golden import read_cases

FIXTURES = Path(__file__).parents[1] / "fixtures"

@cache
def corpus() -> list[Relation]:
    """Every well-typed plan written in the golden fixture files (inputs and outputs)."""
    plans: dict[str, Relation] = {}
    for path in sorted(FIXTURES.rglob("*.test")):
        for case in read_cases(path.read_text()):
            for text in (case.input, case.expected):
                try:
                    plan = parse_plan(text)
                except PlanSyntaxError:
                    continue
                if well_typed(plan):
                    plans.setdefault(text, plan)
    return list(plans.values())


def well_typed(plan: Relation) -> bool:
    """Whether the types of ``plan`` and of every operator under it compute (the fixtures
    of single transforms hold plans that are not, and such a plan has no JSON form)."""
    try:
        plan.types  # noqa: B018
    except (IndexError, KeyError, TypeError, ValueError):
        return False
    return all(well_typed(child) for child in inputs_of(plan))


SELF_JOIN = """\
Reduce group_key=(#0) aggregates=(count(*), min(#2))
  Join on=(#0 = #2 = #4) plan=delta[(1, 2), (0, 2), (0, 1)]
    Linear [filter (mz_now() < #1)]
      Get a (x int, y bigint)
    Linear [filter (#0 > 0)]
      Get b (x int, y bigint)
    Get a (x int, y bigint)"""
