"""Golden optimized plans of queries using the general linear operator: table functions,
``repeat_row`` and temporal filters, alone and around joins and aggregates. Each case also
checks the IR text round trip of the printed plan. Rewrite with ``pytest --rewrite``."""

from __future__ import annotations

from pathlib import Path

from golden import run_golden
from matview.ir.relation import Field
from matview.ir.text import parse_plan, render_plan
from matview.ir.types import BIGINT, INT, JSONB, TEXT, TIMESTAMP, array_of
from matview.planner.pipeline import optimize, physical
from matview.sql.catalog import CatalogItem
from matview.sql.parse import parse
from matview.sql.statements import CreateView, Query

FIXTURES = Path(__file__).parent / "fixtures"


class Catalog:
    """``events`` with every column type the linear operator reads, and ``cats``."""

    items = {
        "events": CatalogItem("events", "table", (
            Field("id", INT), Field("n", INT), Field("k", INT), Field("ts", TIMESTAMP),
            Field("ms", BIGINT), Field("arr", array_of(INT)), Field("tags", TEXT),
            Field("doc", JSONB))),
        "cats": CatalogItem("cats", "table", (Field("k", INT), Field("name", TEXT))),
    }

    def lookup(self, name: str) -> CatalogItem | None:
        return self.items.get(name)


STAGES = {"optimized": optimize, "physical": physical}


def _plan(directive: str, sql: str) -> str:
    stage = dict(part.split("=") for part in directive.split()[1:]).get("stage", "optimized")
    (stmt,) = parse(sql, Catalog())
    assert isinstance(stmt, (Query, CreateView))
    plan = STAGES[stage](stmt.plan)
    text = render_plan(plan)
    assert parse_plan(text) == plan, "the printed plan must parse back into the same plan"
    return text


def test_optimized_plans(rewrite: bool) -> None:
    run_golden(FIXTURES / "optimized_plans.test", _plan, rewrite)
