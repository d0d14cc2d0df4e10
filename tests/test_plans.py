"""Golden plans: SQL -> RAW / OPTIMIZED / PHYSICAL plan text, and the IR text round trip of
every plan printed (``parse_plan(render_plan(p)) == p``). Rewrite with ``pytest --rewrite``."""

from __future__ import annotations

from pathlib import Path

from golden import run_golden
from matview.ir.relation import Field
from matview.ir.text import parse_plan, render_plan
from matview.ir.types import BIGINT, INT, TEXT, SqlType, type_from_name
from matview.planner.pipeline import optimize, physical
from matview.sql.catalog import Catalog as CatalogProtocol
from matview.sql.catalog import CatalogItem
from matview.sql.parse import parse
from matview.sql.statements import CreateView, Query

FIXTURES = Path(__file__).parent / "fixtures"


def _fields(*spec: tuple[str, SqlType]) -> tuple[Field, ...]:
    return tuple(Field(n, t) for n, t in spec)


class Catalog:
    """The tables every golden plan is bound against."""

    items = {
        "customers": CatalogItem("customers", "table", _fields(("id", INT), ("region", TEXT))),
        "orders": CatalogItem("orders", "table", _fields(
            ("id", INT), ("cust", INT), ("amount", BIGINT), ("note", TEXT),
            ("price", type_from_name("numeric", 10, 2)))),
        "items": CatalogItem("items", "table", _fields(
            ("order_id", INT), ("sku", TEXT), ("qty", INT))),
        "big_orders": CatalogItem("big_orders", "view", _fields(("id", INT), ("amount", BIGINT)),
                                  "SELECT id, amount FROM orders WHERE amount > 100"),
        "totals": CatalogItem("totals", "materialized view",
                              _fields(("cust", INT), ("total", BIGINT))),
    }

    def lookup(self, name: str) -> CatalogItem | None:
        return self.items.get(name)


STAGES = {"raw": lambda p: p, "optimized": optimize, "physical": physical}


def plan_text(directive: str, sql: str, catalog: CatalogProtocol) -> str:
    """The plan of ``sql`` bound against ``catalog``, at the directive's ``stage=``, checked
    to round-trip through the IR text."""
    stage = dict(part.split("=") for part in directive.split()[1:]).get("stage", "optimized")
    (stmt,) = parse(sql, catalog)
    assert isinstance(stmt, (Query, CreateView))
    plan = STAGES[stage](stmt.plan)
    text = render_plan(plan)
    assert parse_plan(text) == plan, "the printed plan must parse back into the same plan"
    assert render_plan(parse_plan(text)) == text
    return text


def test_plans(rewrite: bool) -> None:
    run_golden(FIXTURES / "plans.test", lambda d, sql: plan_text(d, sql, Catalog()), rewrite)
