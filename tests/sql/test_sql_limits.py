"""Generated SQL of any depth is bound or refused with an error, never a RecursionError; and
no expensive function (a backtracking regular expression) is computed in the driver while
planning."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from matview.ir.interpret import interpret
from matview.ir.relation import Linear, Relation
from matview.ir.scalar import Call
from matview.ir.steps import FlatMap
from matview.planner.pipeline import physical
from matview.sql.errors import SqlError
from matview.sql.parse import parse
from matview.sql.statements import Query

import matview
from tests.support.bind_catalog import catalog

T_ROWS = Counter({(1, "x", 10): 1, (20000, "y", 20): 1, (5, None, 30): 1})


def _bound(sql: str) -> Query:
    statement = parse(sql, catalog())[0]
    assert isinstance(statement, Query)
    return statement


def _depth(plan_expr: object) -> int:
    """The depth of a scalar tree (iteratively)."""
    deepest, stack = 0, [(plan_expr, 1)]
    while stack:
        node, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(node, Call):
            stack.extend((arg, depth + 1) for arg in node.args)
    return deepest


@pytest.mark.parametrize(("count", "word", "expected"), [
    (500, "AND", {(1,), (20000,)}),
    (10_000, "AND", {(1,), (20000,)}),
    (2_000, "OR", {(1,), (5,)}),
])
def test_long_chains_of_and_or_bind_plan_and_evaluate(count: int, word: str,
                                                      expected: set[tuple[int]]) -> None:
    if word == "AND":  # a <> 2 AND a <> 3 AND ... keeps 1 and 20000
        condition = " AND ".join(f"a <> {i}" for i in range(2, count + 2))
    else:  # a = 1 OR a = 2 OR ... keeps 1 and 5
        condition = " OR ".join(f"a = {i}" for i in range(1, count + 1))
    query = _bound(f"SELECT a FROM t WHERE {condition}")
    plan = physical(query.plan)
    rows = interpret(plan, {"t": T_ROWS})
    assert set(rows) == expected


def test_a_long_chain_is_a_balanced_tree() -> None:
    query = _bound("SELECT a FROM t WHERE " + " OR ".join(f"a = {i}" for i in range(2000)))
    assert isinstance(query.plan, Linear)
    predicate = query.plan.steps[0].predicates[0]  # type: ignore[attr-defined]
    assert _depth(predicate) <= 13


@pytest.mark.parametrize("sql", [
    "SELECT " + " + ".join("a" for _ in range(3000)) + " FROM t",
    "SELECT " + "(" * 2000 + "a" + ")" * 2000 + " FROM t",
    "SELECT a FROM t WHERE " + "NOT " * 3000 + "a > 1",
])
def test_too_deep_expressions_are_errors_not_crashes(sql: str) -> None:
    with pytest.raises(SqlError, match="too deeply nested"):
        parse(sql, catalog())


def test_deep_expressions_through_the_api(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 2, 7, 'b')")
    chain = " AND ".join(f"amount <> {i}" for i in range(8, 508))
    assert sorted(con.execute(f"SELECT id FROM orders WHERE {chain}").fetchall()) == [(1,), (2,)]
    with pytest.raises(matview.ProgrammingError, match="too deeply nested"):
        con.execute("SELECT " + " + ".join("amount" for _ in range(3000)) + " FROM orders")


def test_long_sums_run_with_their_overflow_checked(con) -> None:  # type: ignore[no-untyped-def]
    # each addition's overflow is an error as data; checking them must not read every
    # partial sum again per term (which grew the Spark expression with the square of the
    # terms, and slowed its analysis exponentially), nor overflow the JVM's stack
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 2, 7, NULL)")
    terms = 200
    total = " + ".join("amount" for _ in range(terms))
    rows = con.execute(f"SELECT id, {total} FROM orders").fetchall()
    assert sorted(rows) == [(1, 5 * terms), (2, 7 * terms)]
    con.execute(f"CREATE MATERIALIZED VIEW sums AS SELECT id, {total} - id AS s FROM orders")
    con.execute("INSERT INTO orders VALUES (3, 3, 9223372036854775807, 'max')")
    with pytest.raises(matview.DataError, match="bigint out of range"):
        con.execute("SELECT * FROM sums")
    con.execute("DELETE FROM orders WHERE id = 3")
    assert sorted(con.execute("SELECT * FROM sums").fetchall()) == [
        (1, 5 * terms - 1), (2, 7 * terms - 2)]


def _calls(plan: Relation) -> list[str]:
    assert isinstance(plan, Linear)
    return [c.func for s in plan.steps if isinstance(s, FlatMap) for c in s.calls]


def test_regular_expressions_are_not_computed_while_planning() -> None:
    # 40 a's and a '!' against (a+)+$: Python's re backtracks for hours
    sql = "SELECT * FROM regexp_matches('" + "a" * 40 + "!', '^(a+)+$')"
    started = time.monotonic()
    plan = physical(_bound(sql).plan)
    assert time.monotonic() - started < 5
    assert _calls(plan) == ["regexp_matches"]  # left for Spark, not folded to rows
    like = physical(_bound("SELECT '" + "a" * 40 + "' LIKE '%a%a%a%a%a%a%a%a%b'").plan)
    assert isinstance(like, Linear)
    assert any(isinstance(e, Call) and e.func == "like" for s in like.steps
               for e in getattr(s, "exprs", ())), like


def test_long_in_lists_bind_plan_and_evaluate_as_balanced_trees() -> None:
    items = ", ".join(str(i) for i in range(5, 10_005))  # keeps 5 and 20000 of T_ROWS
    query = _bound(f"SELECT a FROM t WHERE a IN ({items}) OR a IN (20000)")
    assert isinstance(query.plan, Linear)
    predicate = query.plan.steps[0].predicates[0]  # type: ignore[attr-defined]
    assert _depth(predicate) <= 20  # log2(10,000) levels of OR, not 10,000
    assert set(interpret(physical(query.plan), {"t": T_ROWS})) == {(5,), (20000,)}
    negated = _bound(f"SELECT a FROM t WHERE a NOT IN ({items})")
    assert set(interpret(physical(negated.plan), {"t": T_ROWS})) == {(1,), (20000,)}


def _planned_within(sql: str, seconds: float) -> Relation:
    """The optimized plan of ``sql``, which must be bound and planned within ``seconds``
    (in a thread, so that a planner computing the query would fail the test, not hang it)."""
    done: list[Relation] = []
    worker = threading.Thread(target=lambda: done.append(physical(_bound(sql).plan)),
                              daemon=True)
    worker.start()
    worker.join(seconds)
    assert done, f"binding and planning took more than {seconds}s"
    return done[0]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM regexp_matches('" + "a" * 31 + "!', '^(a+)+$')",
    "SELECT regexp_matches('" + "a" * 31 + "!', '^(a+)+$', 'g')",
])
def test_the_catastrophic_regular_expression_is_left_for_spark(sql: str) -> None:
    _planned_within("SELECT * FROM regexp_matches('ab', '(a)')", 5)  # warm up
    assert _calls(_planned_within(sql, 1.0)) == ["regexp_matches"]
