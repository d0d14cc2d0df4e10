"""EXPLAIN end to end through a connection: every statement form, ``con.explain``, EXPLAIN
of a materialized view, EXPLAIN ANALYZE of a running dataflow, and the errors."""

from __future__ import annotations

import json

import pytest
from matview.ir import parse_plan, render_plan

import matview

JOIN = ("SELECT c.region, count(*) AS n FROM orders o JOIN customers c ON o.cust = c.id "
        "WHERE o.amount > 0 GROUP BY c.region")


def _explain(con, sql: str) -> str:  # type: ignore[no-untyped-def]
    (row,) = con.execute(sql).fetchall()
    return str(row[0])


def test_statement_forms_agree_with_the_python_api(con) -> None:  # type: ignore[no-untyped-def]
    for stage in ("raw", "decorrelated", "optimized", "physical"):
        for fmt in ("text", "json", "dot"):
            sql = f"EXPLAIN {stage.upper()} PLAN AS {fmt.upper()} FOR {JOIN}"
            assert _explain(con, sql) == con.explain(JOIN, stage=stage, format=fmt)
    assert _explain(con, f"EXPLAIN {JOIN}") == con.explain(JOIN)
    assert _explain(con, f"EXPLAIN PLAN FOR {JOIN}") == con.explain(JOIN, stage="optimized")
    assert _explain(con, f"EXPLAIN WITH (arity, humanized expressions) FOR {JOIN}") == (
        con.explain(JOIN, options=["arity", "humanized expressions"]))


def test_logical_stages_round_trip(con) -> None:  # type: ignore[no-untyped-def]
    for stage in ("raw", "decorrelated", "optimized"):
        text = con.explain(JOIN, stage=stage)
        assert render_plan(parse_plan(text)) == text
    optimized = con.explain(JOIN)
    assert optimized.startswith("Reduce group_key=(#5) aggregates=(count(*))")
    assert "Join on=(#1 = #4)" in optimized


def test_physical_plan_shows_paths_and_arrangements(con) -> None:  # type: ignore[no-untyped-def]
    text = con.explain(JOIN, stage="physical")
    assert "implementation: delta" in text
    assert "path 0 from %1: %2[#0] <" in text
    assert "path 1 from %2: %1[#1] <=" in text
    assert "lookups: %1 in orders (reused) by (#1), %2 in customers (reused) by (#0)" in text
    assert "Used Indexes:" in text and "Source orders (%1)" in text
    document = json.loads(con.explain(JOIN, stage="physical", format="json"))
    assert document["stage"] == "physical"
    assert [op["operator"] for op in document["operators"]] == [
        "Get", "Linear", "Get", "Join", "Reduce"]
    assert "digraph" in con.explain(JOIN, stage="physical", format="dot")


def test_optimizer_trace(con) -> None:  # type: ignore[no-untyped-def]
    text = _explain(con, f"EXPLAIN OPTIMIZER TRACE FOR {JOIN}")
    lines = text.splitlines()
    assert lines[0] == "raw:"
    assert "flatten_joins: (no change)" in lines
    assert "push_linear_into_joins:" in lines
    assert lines[-1].startswith("join_plan") or "join_plan:" in lines
    steps = json.loads(con.explain(JOIN, stage="trace", format="json"))["steps"]
    assert [s["changed"] for s in steps if s["transform"] == "flatten_joins"] == [False]


def test_explain_materialized_view(con) -> None:  # type: ignore[no-untyped-def]
    con.execute(f"CREATE MATERIALIZED VIEW by_region AS {JOIN}")
    for stage in ("raw", "optimized", "physical"):
        sql = f"EXPLAIN {stage.upper()} PLAN FOR MATERIALIZED VIEW by_region"
        assert _explain(con, sql) == con.explain(JOIN, stage=stage)
    assert con.explain("MATERIALIZED VIEW by_region") == con.explain(JOIN)
    with pytest.raises(matview.ProgrammingError, match='materialized view "nope" does not'):
        con.execute("EXPLAIN MATERIALIZED VIEW nope")
    with pytest.raises(matview.ProgrammingError, match='"orders" is a table'):
        con.execute("EXPLAIN ANALYZE MATERIALIZED VIEW orders")


def test_explain_analyze(con) -> None:  # type: ignore[no-untyped-def]
    con.execute(f"CREATE MATERIALIZED VIEW by_region AS {JOIN}")
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 2, 7, 'b'), (3, 1, -1, 'c')")
    con.execute("INSERT INTO orders VALUES (4, 2, 9, 'd')")
    text = _explain(con, "EXPLAIN ANALYZE MATERIALIZED VIEW by_region")
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "Dataflow of materialized view by_region:"
    stats = {line.split()[0]: line for line in lines if line.startswith("%")}
    assert set(stats) == {"%0", "%1", "%2", "%3", "%4"}
    document = json.loads(con.explain("MATERIALIZED VIEW by_region", stage="analyze",
                                      format="json"))
    by_id = {op["id"]: op for op in document["operators"]}
    # the Get of orders saw 4 inserts, the filter passed 3 of them, the customers were read
    # once (2 rows), the join produced one row per order that passed
    assert by_id[0]["statistics"]["rows_out"] == 4
    assert by_id[1]["statistics"]["rows_out"] == 3
    assert by_id[2]["statistics"]["rows_out"] == 2
    assert by_id[3]["statistics"]["rows_out"] == 3
    assert by_id[4]["statistics"]["rows_in"] == 3
    output = [a for a in by_id[4]["statistics"]["arrangements"] if a["name"] == "%4.output"]
    assert output and output[0]["rows"] > 0 and output[0]["bytes"] > 0
    assert any(line.startswith("steps=") and "rows_out=3" in line for line in lines)


def test_errors_name_the_problem(con) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(matview.ProgrammingError, match='unknown EXPLAIN option "color"'):
        con.execute("EXPLAIN WITH (color) FOR SELECT 1")
    with pytest.raises(matview.ProgrammingError, match="column 15"):
        con.execute("EXPLAIN WITH (color) FOR SELECT 1")
    with pytest.raises(matview.NotSupportedError, match="OPTIMIZER TRACE has no DOT"):
        con.execute("EXPLAIN OPTIMIZER TRACE AS DOT FOR SELECT 1")
    with pytest.raises(matview.ProgrammingError, match="unknown EXPLAIN stage 'fast'"):
        con.explain("SELECT 1", stage="fast")
    with pytest.raises(matview.ProgrammingError, match="unknown EXPLAIN format 'xml'"):
        con.explain("SELECT 1", format="xml")
    with pytest.raises(matview.ProgrammingError, match='relation "nope" does not exist'):
        con.explain("SELECT * FROM nope")
