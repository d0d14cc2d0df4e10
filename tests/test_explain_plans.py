"""Golden EXPLAIN output: every query of ``fixtures/explain_plans.test`` at the four stages
(RAW, DECORRELATED, OPTIMIZED, PHYSICAL), plus cases with options and other formats; each
printed logical plan must parse back into the plan it shows and print the same text again.
Rewrite with ``pytest --rewrite``."""

from __future__ import annotations

from pathlib import Path

from golden import run_golden
from matview.ir.relation import Field
from matview.ir.text import parse_plan, render_plan
from matview.ir.types import INT, TEXT, type_from_name
from matview.planner.explain import explain_plan, explain_trace, render_options
from matview.planner.pipeline import STAGES, at_stage
from matview.sql.catalog import CatalogItem
from matview.sql.parse import parse
from matview.sql.statements import CreateView, Query
from test_plans import Catalog as PlanCatalog

FIXTURES = Path(__file__).parent / "fixtures"


class Catalog(PlanCatalog):
    """The golden plans' tables, and one with the types table functions and temporal
    filters read."""

    items = {
        **PlanCatalog.items,
        "events": CatalogItem("events", "table", (
            Field("id", INT), Field("at", type_from_name("timestamp")),
            Field("tags", type_from_name("text[]")), Field("doc", type_from_name("jsonb")),
            Field("n", INT), Field("body", TEXT))),
    }


def explain_text(directive: str, sql: str) -> str:
    """The EXPLAIN output the directive asks for: ``explain [stage=S,...] [with=OPT,...]
    [format=F]`` (options spell spaces as ``_``), or ``trace [with=...]``."""
    words = directive.split()
    args = dict(part.split("=") for part in words[1:])
    options = [o.replace("_", " ") for o in args["with"].split(",")] if "with" in args else []
    (stmt,) = parse(sql, Catalog())
    assert isinstance(stmt, (Query, CreateView))
    if words[0] == "trace":
        return explain_trace(stmt.plan, args.get("format", "text"), options)
    fmt = args.get("format", "text")
    out = []
    for stage in args.get("stage", ",".join(STAGES)).split(","):
        text = explain_plan(stmt.plan, stage, fmt, options)
        if stage != "physical" and fmt == "text":
            plan = parse_plan(text)
            assert plan == at_stage(stmt.plan, stage), "EXPLAIN text must parse into its plan"
            assert render_plan(plan, render_options(options)) == text
        out += [stage.upper(), text]
    return "\n".join(out)


def test_explain_plans(rewrite: bool) -> None:
    run_golden(FIXTURES / "explain_plans.test", explain_text, rewrite)
