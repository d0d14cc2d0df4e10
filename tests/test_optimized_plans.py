"""Golden optimized plans of queries using the general linear operator: table functions,
``repeat_row`` and temporal filters, alone and around joins and aggregates. Each case also
checks the IR text round trip of the printed plan. Rewrite with ``pytest --rewrite``."""

from __future__ import annotations

from pathlib import Path

from golden import run_golden
from matview.ir.relation import Field
from matview.ir.types import BIGINT, INT, JSONB, TEXT, TIMESTAMP, array_of
from matview.sql.catalog import CatalogItem
from test_plans import plan_text

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


def test_optimized_plans(rewrite: bool) -> None:
    run_golden(FIXTURES / "optimized_plans.test",
               lambda d, sql: plan_text(d, sql, Catalog()), rewrite)
