"""``jsonb_agg`` and ``to_jsonb`` (``ir/aggregates.py``: an EXTREME aggregate of the values in
order, over ``coalesce(to_jsonb(x), 'null'::jsonb)``).

DuckDB has neither: the same queries run there with ``jsonb_agg(x ...)`` written as
``to_json(array_agg(x ...))`` and ``to_jsonb`` as ``to_json`` (DuckDB's ``array_agg`` keeps
NULLs, as ``jsonb_agg`` does). JSON values are compared as the values they denote (DuckDB
prints ``2.0`` and ``1.50`` where matview's canonical form has ``2`` and ``1.5``).

Through the reference interpreter at every stage; then maintained views on Spark after every
group of one to three transactions of seeded random workloads.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from decimal import Decimal
from typing import Any

import pytest
import sqlglot
from matview.ir import jsonb
from matview.ir.interpret import interpret
from matview.ir.parse import parse_plan
from matview.ir.render import render_plan
from matview.planner.pipeline import at_stage
from matview.sql.errors import SqlTypeError, UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession
from sqlglot import exp

from tests.support.mirror import Mirror
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_refused, setup  # noqa: F401 (a fixture)


def _named(node: exp.Expr, name: str) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == name


def _to_json(arg: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="to_json", expressions=[arg])


def _for_duckdb_node(node: exp.Expr) -> exp.Expr:
    if isinstance(node, exp.Filter) and _named(node.this, "jsonb_agg"):
        aggregated = exp.ArrayAgg(this=node.this.expressions[0].transform(_for_duckdb_node))
        return _to_json(exp.Filter(this=aggregated, expression=node.expression))
    if _named(node, "jsonb_agg"):
        return _to_json(exp.ArrayAgg(this=node.expressions[0].transform(_for_duckdb_node)))
    if _named(node, "to_jsonb"):
        return _to_json(node.expressions[0])
    return node


def for_duckdb(sql: str) -> str:
    """``sql`` with the JSONB functions written as DuckDB's."""
    return sqlglot.parse_one(sql, read="postgres").transform(_for_duckdb_node).sql("duckdb")


def _json_value(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_json_value(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _json_value(v)) for k, v in value.items()))
    return value


def _normal(value: Any) -> Any:
    """A JSON text as the value it denotes (numbers as Decimals, so ``2.0`` is ``2``), marked
    apart from any other value; other values as they are."""
    if isinstance(value, str):
        try:
            return ("json", _json_value(json.loads(value, parse_float=Decimal)))
        except json.JSONDecodeError:
            return value
    return value


def _rows(rows: Any) -> Counter:
    return Counter(tuple(_normal(v) for v in row) for row in rows)


QUERIES = [
    "SELECT cust, jsonb_agg(amount ORDER BY id), jsonb_agg(price ORDER BY id, price) "
    "FROM orders GROUP BY cust",
    "SELECT cust, jsonb_agg(note ORDER BY note NULLS FIRST, id) FILTER (WHERE id > 1) "
    "FROM orders GROUP BY cust",
    "SELECT region, jsonb_agg(score ORDER BY score DESC, id), jsonb_agg(name ORDER BY name) "
    "FROM customers GROUP BY region",
    "SELECT jsonb_agg(id ORDER BY id), jsonb_agg(tag ORDER BY tag) FROM tags",
    "SELECT jsonb_agg(tag ORDER BY tag) FROM tags WHERE id < 0",  # NULL over no rows
    "SELECT id, to_jsonb(name), to_jsonb(score), to_jsonb(score > 1), to_jsonb(id + 1) "
    "FROM customers",
    "SELECT c.name, (SELECT jsonb_agg(o.price ORDER BY o.id) FROM orders o "
    "WHERE o.cust = c.id) FROM customers c",  # a correlated global aggregate
    "SELECT cust, jsonb_agg(to_jsonb(amount) ORDER BY id) FROM orders GROUP BY ROLLUP (cust)",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    catalog, tables, db = setup
    [query] = parse(sql, catalog)
    assert isinstance(query, Query)
    expected = _rows(db.execute(for_duckdb(sql)).fetchall())
    assert _rows(interpret(at_stage(query.plan, stage), tables).elements()) == expected


@pytest.mark.parametrize("sql, error, message", [
    ("SELECT jsonb_agg(day) FROM orders", SqlTypeError,
     r"function jsonb_agg\(date\) does not exist"),
    ("SELECT to_jsonb(day) FROM orders", SqlTypeError,
     r"function to_jsonb\(date\) does not exist"),
    ("SELECT to_jsonb(id, cust) FROM orders", SqlTypeError,
     r"function to_jsonb takes 1 argument \(2 given\)"),
    ("SELECT jsonb_agg(DISTINCT note) FROM orders", UnsupportedError,
     r"jsonb_agg\(DISTINCT ...\) is not supported yet"),
    ("SELECT jsonb_agg(note) OVER () FROM orders", UnsupportedError,
     "jsonb_agg over a window is not supported yet"),
])
def test_misuse_is_refused(sql: str, error: type[Exception], message: str,
                           setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


def test_a_jsonb_aggregate_prints_and_parses_back() -> None:
    text = ("Reduce group_key=(#0) aggregates=(jsonb_agg(coalesce(to_jsonb(#1), 'null'::jsonb) "
            "order by #2 desc))\n"
            "  Get t (a int, b text, c int)")
    assert render_plan(parse_plan(text)) == text


@pytest.mark.parametrize("value, text", [
    (True, "true"), (7, "7"), (Decimal("1.50"), "1.5"), (2.0, "2"), (1e21, "1.0E21"),
    ("a\"ü", '"a\\"ü"'), (float("nan"), '"NaN"'), (float("-inf"), '"-Infinity"'),
])
def test_to_jsonb_gives_canonical_text(value: Any, text: str) -> None:
    assert jsonb.of_scalar(value) == text


class JsonMirror(Mirror):
    """A ``Mirror`` whose DuckDB side runs each view's query as DuckDB writes it, and which
    compares JSON values as the values they denote (matview's in their canonical text, which
    JSONB equality compares)."""

    def view(self, name: str, sql: str) -> None:
        super().view(name, sql)
        self.views[name] = for_duckdb(sql)

    def check(self) -> None:
        for name, sql in self.views.items():
            rows = self.con.execute(f"SELECT * FROM {name}").fetchall()
            texts = [v for row in rows for v in row if isinstance(_normal(v), tuple)]
            assert [jsonb.canonical(v) for v in texts] == texts, f"{name}: not canonical"
            got = _rows(rows)
            want = _rows(self.db.execute(sql).fetchall())
            assert got == want, (f"{name}: {sql}\n  lacks {want - got}\n  has beyond "
                                 f"{got - want}\nafter: {self.log}")


VIEWS = {
    "texts": "SELECT p, jsonb_agg(x ORDER BY o, x) FROM t GROUP BY p",
    "numbers": "SELECT p, jsonb_agg(d ORDER BY o, d), jsonb_agg(n ORDER BY n DESC, o) "
               "FILTER (WHERE b) FROM t GROUP BY p",
    "total": "SELECT jsonb_agg(b ORDER BY o, b), count(*) FROM t",
    "nested": "SELECT o, jsonb_agg(to_jsonb(p) ORDER BY p) FROM t GROUP BY o",
}


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_views_match_duckdb_under_random_writes(spark: SparkSession, seed: int) -> None:
    """NULLs, duplicates, quotes and non-ASCII text, doubles with and without fractions and
    exponents, numerics with trailing zeros; groups empty and fill again; views read after
    one to three transactions (a step over several times)."""
    rng = random.Random(seed)
    mirror = JsonMirror(spark, "CREATE TABLE t (p INT, o INT, x TEXT, d DOUBLE, "
                               "n NUMERIC(6,2), b BOOLEAN)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)

    def row() -> str:
        values = (rng.choice(["1", "2", "NULL"]), str(rng.randint(1, 3)),
                  rng.choice(["'a'", "'b\"q'", "'ü'", "NULL"]),
                  rng.choice(["1.5", "2.0", "-0.25", "1e21", "NULL"]),
                  rng.choice(["1.50", "2", "-3.25", "NULL"]),
                  rng.choice(["TRUE", "FALSE", "NULL"]))
        return f"({', '.join(values)})"

    def change() -> str:
        if rng.random() < 0.6:
            return f"INSERT INTO t VALUES {', '.join(row() for _ in range(rng.randint(1, 3)))}"
        return f"DELETE FROM t WHERE o = {rng.randint(1, 3)} AND p = {rng.randint(1, 2)}"

    mirror.steps_grouped([change() for _ in range(12)] + ["DELETE FROM t"], rng)
