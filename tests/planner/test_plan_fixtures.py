"""Golden SQL -> plan fixtures: ``fixtures/plans.test``, ``fixtures/optimized_plans.test`` and
``fixtures/explain_plans.test``. Rewrite with ``pytest --rewrite``.

Each file starts with ``define`` cases declaring the tables and views its queries read
(``catalogs.py``); then each case is a SQL query under one of the directives:

- ``plan [stage=S]``: the plan at stage ``raw``, ``optimized`` (the default) or
  ``physical``, in the IR text form; the printed plan must parse back into the same plan and
  print the same text again.
- ``explain [stage=S,...] [with=OPT,...] [format=F]``: ``EXPLAIN`` at each stage (all four,
  RAW, DECORRELATED, OPTIMIZED and PHYSICAL, by default), each output after a line naming
  its stage; options spell spaces as ``_``. Every logical plan printed as text must parse
  back into the plan at its stage and print the same text again.
- ``trace [with=OPT,...] [format=F]``: ``EXPLAIN`` of the plan after each transform.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from matview.ir.parse import parse_plan
from matview.ir.relation import Relation
from matview.ir.render import render_plan
from matview.planner.explain import explain_plan, explain_trace, render_options
from matview.planner.pipeline import STAGES, at_stage
from matview.sql.parse import parse
from matview.sql.statements import CreateView, Query

from tests.support.catalogs import Catalog
from tests.support.golden import run_golden

FIXTURES = Path(__file__).parents[1] / "fixtures"
FILES = ("plans", "optimized_plans", "explain_plans")


def _args(directive: str) -> dict[str, str]:
    return dict(part.split("=") for part in directive.split()[1:])


def _plan(sql: str, catalog: Catalog) -> Relation:
    (stmt,) = parse(sql, catalog)
    assert isinstance(stmt, (Query, CreateView))
    return stmt.plan


def plan_text(directive: str, sql: str, catalog: Catalog) -> str:
    """The plan of ``sql`` at the directive's ``stage=``, checked to round-trip through the
    IR text."""
    plan = at_stage(_plan(sql, catalog), _args(directive).get("stage", "optimized"))
    text = render_plan(plan)
    assert parse_plan(text) == plan, "the printed plan must parse back into the same plan"
    assert render_plan(parse_plan(text)) == text
    return text


def explain_text(directive: str, sql: str, catalog: Catalog) -> str:
    """The EXPLAIN output an ``explain`` or ``trace`` directive asks for."""
    args = _args(directive)
    options = [o.replace("_", " ") for o in args["with"].split(",")] if "with" in args else []
    fmt = args.get("format", "text")
    plan = _plan(sql, catalog)
    if directive.split()[0] == "trace":
        return explain_trace(plan, fmt, options)
    out = []
    for stage in args.get("stage", ",".join(STAGES)).split(","):
        text = explain_plan(plan, stage, fmt, options)
        if stage != "physical" and fmt == "text":
            parsed = parse_plan(text)
            assert parsed == at_stage(plan, stage), "EXPLAIN text must parse into its plan"
            assert render_plan(parsed, render_options(options)) == text
        out += [stage.upper(), text]
    return "\n".join(out)


DIRECTIVES: dict[str, Callable[[str, str, Catalog], str]] = {
    "define": lambda _, text, catalog: catalog.define(text),
    "plan": plan_text,
    "explain": explain_text,
    "trace": explain_text,
}


@pytest.mark.parametrize("name", FILES)
def test_plan_fixtures(name: str, rewrite: bool) -> None:
    catalog = Catalog()
    run_golden(FIXTURES / f"{name}.test",
               lambda directive, text: DIRECTIVES[directive.split()[0]](directive, text, catalog),
               rewrite)
