"""The binder tests' catalog: tables ``t``, ``u``, ``n`` (numeric, date, timestamp, boolean)
and ``w`` (array, jsonb), a view ``v`` over ``t`` and a materialized view ``m``."""

from __future__ import annotations

from matview.ir.relation import Field
from matview.ir.types import (
    BIGINT,
    BOOLEAN,
    DATE,
    DOUBLE,
    INT,
    JSONB,
    TEXT,
    TIMESTAMP,
    Kind,
    SqlType,
    array_of,
)
from matview.sql.catalog import CatalogItem

from tests.support.sql_env import DictCatalog

NUMERIC = SqlType(Kind.NUMERIC, 10, 2)

T = (Field("a", INT), Field("b", TEXT), Field("c", BIGINT))
U = (Field("a", INT), Field("d", DOUBLE))
N = (Field("x", NUMERIC), Field("dt", DATE), Field("ts", TIMESTAMP), Field("flag", BOOLEAN))
W = (Field("k", INT), Field("arr", array_of(INT)), Field("j", JSONB), Field("ts", TIMESTAMP),
     Field("s", TEXT))


def catalog() -> DictCatalog:
    """Tables t, u, n, w; view v over t; materialized view m."""
    cat = DictCatalog()
    for item in (
        CatalogItem("t", "table", T),
        CatalogItem("u", "table", U),
        CatalogItem("n", "table", N),
        CatalogItem("w", "table", W),
        CatalogItem("v", "view", (Field("x", INT), Field("y", BIGINT)),
                    "SELECT a, c FROM t WHERE a > 1"),
        CatalogItem("m", "materialized view", (Field("x", INT),), "SELECT a FROM t"),
    ):
        cat.items[item.name] = item
    return cat
