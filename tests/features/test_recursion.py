"""Recursive queries: ``WITH RECURSIVE`` and ``WITH MUTUALLY RECURSIVE`` (``sql/recursion.py``)
bound to ``LetRec``, maintained by ``runtime/recursion/let_rec.py`` over (transaction, round) times.

Through the reference interpreter at every stage, against DuckDB's ``WITH RECURSIVE``; then
maintained views on Spark against DuckDB on random graphs under edge insertions and
deletions, read after one to three transactions (a step then carries several times); then
seed 002's claim: one step carrying N transactions gives exactly the changes per time
(SUBSCRIBE) that N single steps give.
"""

from __future__ import annotations

import pytest
from matview.ir.interpret import interpret
from matview.ir.parse import parse_plan
from matview.ir.recursion import RecursionLimit
from matview.ir.render import render_plan
from matview.runtime.spark.jvm_plans import of_rows
from matview.runtime.spark.one_job import OneJob
from matview.runtime.spark.unsafe_rows import send
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from matview.sql.parse import parse
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.support.recursive_graphs import (
    GRAPH_VIEWS,
    MUTUAL_VIEWS,
    check_fixed_points_over_min,
    check_loop_operators,
    edge_change,
    random_graph,
)
from tests.support.seeds import seeds
from tests.support.sql_env import Environment, assert_denotes, assert_refused, setup  # noqa: F401 (a fixture)

QUERIES = [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) "
    "SELECT n, n * n FROM r",
    "WITH RECURSIVE r(n) AS (SELECT id FROM orders WHERE id < 3 UNION ALL "
    "SELECT n + 3 FROM r WHERE n < 9) SELECT * FROM r",  # duplicates kept by UNION ALL
    "WITH RECURSIVE c(id, depth) AS (SELECT id, 0 FROM customers WHERE id = 1 UNION "
    "SELECT o.id, c.depth + 1 FROM c JOIN orders o ON o.cust = c.id WHERE c.depth < 4) "
    "SELECT * FROM c",
    "WITH RECURSIVE t(a) AS (SELECT cust FROM orders UNION SELECT a + 1 FROM t WHERE a < 6) "
    "SELECT a, count(*) FROM t GROUP BY a",
    "WITH RECURSIVE w AS (SELECT 1 AS k), r(x) AS (SELECT k FROM w UNION "
    "SELECT x * 2 FROM r, w WHERE x < 100) SELECT x FROM r",
    "SELECT id, (SELECT max(n) FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL "
    "SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r) s) FROM tags",
]


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("stage", ["raw", "optimized", "physical"])
def test_plans_denote_what_duckdb_computes(
        sql: str, stage: str, setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_denotes(sql, stage, setup)


@pytest.mark.parametrize("sql, error, message", [
    ("WITH RECURSIVE r(n) AS (SELECT n FROM r) SELECT * FROM r", SqlError,
     "does not have the form non-recursive-term UNION"),
    ("WITH RECURSIVE r(n) AS (SELECT n FROM r UNION SELECT 1) SELECT * FROM r", SqlError,
     "must not appear within its non-recursive term"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT a.n FROM r a JOIN r b ON a.n = b.n) "
     "SELECT * FROM r", SqlError, "must not appear more than once"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT count(*) FROM r) SELECT * FROM r",
     UnsupportedError, "must not appear within an aggregate"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT 'x' FROM r) SELECT * FROM r",
     SqlTypeError, 'recursive query "r" column 1 has type int in non-recursive term but '
     "type text overall"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION SELECT n FROM r WHERE EXISTS (SELECT 1 FROM r)) "
     "SELECT * FROM r", SqlError, "must not appear within a subquery"),
    ("WITH MUTUALLY RECURSIVE a (x int) AS (SELECT x FROM a WHERE mz_now() > 5) "
     "SELECT * FROM a", UnsupportedError, "mz_now\\(\\) over a recursive query's rows"),
    ("WITH MUTUALLY RECURSIVE a (x int, y int) AS (SELECT 1) SELECT * FROM a", SqlError,
     'binding "a" declares 2 columns but its query has 1'),
    ("WITH MUTUALLY RECURSIVE (RETURN AT RECURSION LIMIT 0) a (x int) AS (SELECT 1) "
     "SELECT * FROM a", SqlError, "RECURSION LIMIT must be at least 1"),
    ("SELECT (SELECT count(*) FROM (WITH RECURSIVE r(n) AS (SELECT t.id UNION SELECT n + 1 "
     "FROM r WHERE n < 3) SELECT * FROM r) s) FROM tags t", UnsupportedError,
     "cannot read the columns of the enclosing query"),
])
def test_misuse_is_refused(sql: str, error: type[Exception], message: str,
                           setup: Environment) -> None:  # noqa: F811 (the fixture)
    assert_refused(sql, error, message, setup)


def test_a_loop_prints_and_parses_back() -> None:
    text = ("LetRec bindings=(r, s) result=1 limit=20 return\n"
            "  Union\n"
            "    Get t (a int)\n"
            "    Recur 1 s (int)\n"
            "  Linear [map (#0 + 1); project (#1)]\n"
            "    Recur 0 r (int)")
    assert render_plan(parse_plan(text)) == text


def test_recursion_limit(spark: SparkSession, setup: Environment) -> None:  # noqa: F811
    """Without a fixed point, the default limit fails the query, ERROR AT RECURSION LIMIT n
    another; RETURN AT RECURSION LIMIT n gives the rows after n iterations, in the
    interpreter and on Spark alike."""
    [query] = parse("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
                    "SELECT n FROM r", setup[0])
    with pytest.raises(RecursionLimit, match="did not reach a fixed point within 1000"):
        interpret(query.plan, setup[1])
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (x int)")
    con.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(matview.DataError, match="did not reach a fixed point within 8"):
        con.execute("SELECT * FROM (WITH MUTUALLY RECURSIVE (ERROR AT RECURSION LIMIT 8) "
                    "r (n int) AS (SELECT x FROM t UNION ALL SELECT n + 1 FROM r) "
                    "SELECT n FROM r) s")
    con.execute("CREATE MATERIALIZED VIEW capped AS WITH MUTUALLY RECURSIVE "
                "(RETURN AT RECURSION LIMIT 4) r (n int) AS (SELECT x FROM t UNION "
                "SELECT n + 1 FROM r) SELECT n FROM r")
    assert sorted(con.execute("SELECT * FROM capped").fetchall()) == [(1,), (2,), (3,), (4,)]
    con.execute("INSERT INTO t VALUES (10)")
    assert sorted(con.execute("SELECT * FROM capped").fetchall()) == [
        (1,), (2,), (3,), (4,), (10,), (11,), (12,), (13,)]
    con.execute("CREATE MATERIALIZED VIEW bounded AS WITH MUTUALLY RECURSIVE "
                "(ERROR AT RECURSION LIMIT 5) r (n int) AS (SELECT x FROM t WHERE x <> 1 "
                "UNION SELECT n + 1 FROM r WHERE n < 12) SELECT n FROM r")
    assert sorted(con.execute("SELECT * FROM bounded").fetchall()) == [(10,), (11,), (12,)]
    with pytest.raises(matview.DataError, match="within 5 iterations"):
        con.execute("INSERT INTO t VALUES (-5)")
        con.execute("SELECT * FROM bounded").fetchall()


def test_a_failing_expression_inside_the_loop_is_the_views_error(spark: SparkSession) -> None:
    """An expression of the loop's body failing on a row of some round (a linear operator's
    division by zero, a join predicate's) makes the view hold the error, as outside a loop:
    reading it fails naming the row, and it holds rows again once the row is gone. The
    loop's operators are the ordinary ones, whose failed rows are the loop's errors."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (n BIGINT)")
    con.execute("CREATE TABLE d (n BIGINT, m BIGINT)")
    con.execute("INSERT INTO t VALUES (0)")
    con.execute("INSERT INTO d VALUES (1, 1), (4, 0)")
    con.execute("CREATE MATERIALIZED VIEW mapped AS WITH RECURSIVE r(n) AS (SELECT n FROM t "
                "UNION SELECT n + 1 + 0 * (10 / (5 - n)) FROM r WHERE n < 8) SELECT * FROM r")
    con.execute("CREATE MATERIALIZED VIEW joined AS WITH RECURSIVE r(n) AS (SELECT n FROM t "
                "UNION SELECT r.n + 1 FROM r JOIN d ON r.n / d.m >= 0 WHERE r.n < 3) "
                "SELECT * FROM r")
    with pytest.raises(matview.DataError, match=r'"mapped".*division by zero.*\(5\)'):
        con.execute("SELECT * FROM mapped").fetchall()
    with pytest.raises(matview.DataError, match=r'"joined".*division by zero'):
        con.execute("SELECT * FROM joined").fetchall()
    con.execute("DELETE FROM t")
    con.execute("DELETE FROM d WHERE m = 0")
    assert con.execute("SELECT * FROM mapped").fetchall() == []
    assert con.execute("SELECT * FROM joined").fetchall() == []
    con.execute("INSERT INTO t VALUES (6)")
    assert sorted(con.execute("SELECT * FROM mapped").fetchall()) == [(6,), (7,), (8,)]
    con.execute("INSERT INTO t VALUES (0)")
    assert sorted(con.execute("SELECT * FROM joined").fetchall()) == [(0,), (1,), (2,), (3,),
                                                                       (6,)]
    con.close()


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_graph_views_match_duckdb(spark: SparkSession, seed: int) -> None:
    """Reachability, transitive closure, bounded path counts (UNION ALL: multiplicities)
    and components on random graphs with cycles and self-loops, edges inserted and deleted
    (a deletion often cuts a cycle's only way in), read after one to three transactions."""
    mirror, rng = random_graph(spark, seed)
    for name, sql in GRAPH_VIEWS.items():
        mirror.view(name, sql)
    mirror.steps_grouped([edge_change(rng) for _ in range(12)] + ["DELETE FROM edges"], rng)


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_fixed_points_over_min_match_duckdb(spark: SparkSession, seed: int) -> None:
    """WITH MUTUALLY RECURSIVE with ``min`` inside the loop against DuckDB on a random graph
    under edge changes (``check_fixed_points_over_min``)."""
    check_fixed_points_over_min(spark, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_every_operator_inside_the_loop_matches_duckdb(spark: SparkSession,
                                                       seed: int) -> None:
    """A global aggregate (its row there over no rows), string_agg in order, bool_and,
    ORDER BY with LIMIT and OFFSET and window functions over a binding inside the loop,
    against DuckDB on a random graph under edge changes (``check_loop_operators``)."""
    check_loop_operators(spark, seed)


BATCH = [
    "INSERT INTO edges VALUES (2, 3, 4)",
    "INSERT INTO edges VALUES (3, 4, 1), (0, 4, 9)",
    "DELETE FROM edges WHERE src = 1 AND dst = 2",
    "INSERT INTO edges VALUES (4, 1, 1)",
    "UPDATE edges SET w = 1 WHERE src = 0",
    "DELETE FROM edges WHERE src = 0 AND dst = 4",
    "INSERT INTO roots VALUES (5)",
    "INSERT INTO edges VALUES (5, 2, 2)",
    "DELETE FROM edges WHERE src = 0",
]
"""Transactions that each change reachability or distances (or both)."""


def _changes(spark: SparkSession, batched: bool) -> tuple[list[tuple], str]:
    """The changes per time SUBSCRIBE shows of a reachability view and a shortest-path view
    over the ``BATCH`` transactions, read after each (``batched`` False) or once after all;
    and EXPLAIN ANALYZE of the latter."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src int, dst int, w int)")
    con.execute("CREATE TABLE roots (id int)")
    con.execute("INSERT INTO roots VALUES (0)")
    con.execute("INSERT INTO edges VALUES (0, 1, 1), (1, 2, 1), (2, 0, 1)")
    con.execute(f"CREATE MATERIALIZED VIEW reach AS {GRAPH_VIEWS['reach']}")
    con.execute(f"CREATE MATERIALIZED VIEW shortest AS {MUTUAL_VIEWS['shortest'][0]}")
    subs = [con.subscribe("reach"), con.subscribe("shortest")]
    seen = [(i, *row) for i, sub in enumerate(subs) for row in sub.fetch()]
    for change in BATCH:
        con.execute(change)
        if not batched:
            seen += [(i, *row) for i, sub in enumerate(subs) for row in sub.fetch()]
    if batched:
        seen += [(i, *row) for i, sub in enumerate(subs) for row in sub.fetch()]
    analyzed = con.execute("EXPLAIN ANALYZE MATERIALIZED VIEW shortest").fetchall()[0][0]
    return sorted(seen, key=repr), analyzed


def test_one_step_of_many_transactions_equals_a_step_each(spark: SparkSession) -> None:
    """Seed 002: a step carrying nine transactions gives each transaction's changes at its
    own time, exactly those of nine single steps; the batched view ran one step for them."""
    single, _ = _changes(spark, False)
    batched, analyzed = _changes(spark, True)
    assert single == batched
    assert len({row[1] for row in single}) >= len(BATCH) - 1  # changes at (almost) every time
    lines = analyzed.splitlines()
    loop = next(i for i, line in enumerate(lines) if "LetRec" in line)
    steps = next(line for line in lines[loop:] if "steps=" in line)
    assert "steps=2 " in steps, analyzed  # the first contents, then one for all nine


def test_a_failing_aggregate_inside_the_loop_is_the_views_error_once(
        spark: SparkSession) -> None:
    """A reduce's aggregate failing on a row of some round makes the view hold the error,
    counted once: each round reads the contents of every round so far, but the reduce's
    expressions are checked on the round's differences alone (``recursion.group_wise``),
    so the error is retracted with its row."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (n BIGINT)")
    con.execute("INSERT INTO t VALUES (0)")
    con.execute("CREATE MATERIALIZED VIEW summed AS WITH MUTUALLY RECURSIVE "
                "r (n bigint) AS (SELECT n FROM t UNION SELECT n + 1 FROM r WHERE n < 8), "
                "g (k bigint, s numeric) AS (SELECT n % 2, sum(10 / (5 - n)) FROM r "
                "GROUP BY n % 2) SELECT * FROM g")
    with pytest.raises(matview.DataError, match=r'"summed".*division by zero'):
        con.execute("SELECT * FROM summed").fetchall()
    con.execute("DELETE FROM t")
    assert con.execute("SELECT * FROM summed").fetchall() == []
    con.execute("INSERT INTO t VALUES (6)")  # 10 / -1 + 10 / -3, 10 / -2
    assert sorted(con.execute("SELECT * FROM summed").fetchall()) == [(0, -13), (1, -5)]
    con.close()


def _plan(frame: DataFrame) -> str:
    """``frame``'s optimized plan over the rows its slots hold now (a new query: a frame's
    own keeps the plan of its first), the rows waiting to be sent sent first (as a collect
    does: ``unsafe_rows.send``)."""
    spark = frame.sparkSession
    send(spark)
    query = of_rows(spark)(spark._jsparkSession, frame._jdf.queryExecution().analyzed())
    return query.queryExecution().optimizedPlan().toString()


def _joins(plan: str) -> int:
    """The inner joins in ``plan`` (a loop's join pairs; a semi-join keeps the rows of the
    groups a round touches)."""
    return sum(line.lstrip(":- +").startswith("Join Inner") for line in plan.splitlines())


def test_a_round_of_a_recursive_distinct_reads_its_join_once(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small step's round computes the loop's join pairs and the DISTINCT over them in one
    job. The reduce's plan reads the round's join pairs once: as many inner joins as each of
    the join's own plans (its rows of the round, and of later rounds where an input holds
    differences of earlier steps at later rounds), the groups the round touches known in the
    driver (a reduce's candidates, touched groups and contents each read them once before).
    Edges are cut and put back; the view is the reachable set after every step."""
    jobs: list[list[str]] = []
    run = OneJob.run

    def recorded(job: OneJob) -> None:
        jobs.append([_plan(frame) for frame, _ in job.wanted])
        run(job)

    edges = {(i, i + 1) for i in range(12)} | {(0, 6), (3, 9)}
    con = matview.connect(spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src BIGINT, dst BIGINT)")
    con.execute("CREATE TABLE roots (id BIGINT)")
    con.insert("edges", sorted(edges))
    con.insert("roots", [(0,)])
    con.execute(f"CREATE MATERIALIZED VIEW reach AS {GRAPH_VIEWS['reach']}")
    con.execute("SELECT * FROM reach").fetchall()
    monkeypatch.setattr(OneJob, "run", recorded)
    for change, edge in [("delete", (5, 6)), ("delete", (0, 6)), ("delete", (3, 4)),
                         ("insert", (0, 6))]:
        getattr(con, change)("edges", [edge])
        (edges.discard if change == "delete" else edges.add)(edge)
        rows = con.execute("SELECT * FROM reach").fetchall()
        reached, frontier = {0}, [0]
        while frontier:
            frontier = [d for s, d in edges if s in frontier and d not in reached]
            reached |= set(frontier)
        assert {n for (n,) in rows} == reached
    rounds = [plans for plans in jobs
              if len(plans) >= 2 and sum("Aggregate" in plan for plan in plans) == 1
              and any(_joins(plan) for plan in plans)]
    assert len(rounds) >= 6
    for plans in rounds:
        reduce = next(plan for plan in plans if "Aggregate" in plan)
        others = [_joins(plan) for plan in plans if plan is not reduce]
        assert all(joins == _joins(reduce) >= 1 for joins in others), plans
    con.close()


def test_rounds_without_differences_compute_nothing(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A step's rounds run up to the deepest round stored by earlier steps, but a round in
    which no group of the DISTINCT has a difference computes nothing. A second copy of the
    first edge of a chain 13 rounds deep counts node 1 once more at round 1 and changes no
    later round: the step computes rounds 0 and 1 only, not one plan per stored round."""
    jobs: list[int] = []
    run = OneJob.run

    def recorded(job: OneJob) -> None:
        jobs.append(len(job.wanted))
        run(job)

    con = matview.connect(spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src BIGINT, dst BIGINT)")
    con.execute("CREATE TABLE roots (id BIGINT)")
    con.insert("edges", [(i, i + 1) for i in range(12)])
    con.insert("roots", [(0,)])
    con.execute(f"CREATE MATERIALIZED VIEW reach AS {GRAPH_VIEWS['reach']}")
    assert len(con.execute("SELECT * FROM reach").fetchall()) == 13
    monkeypatch.setattr(OneJob, "run", recorded)
    con.insert("edges", [(0, 1)])
    assert sorted(con.execute("SELECT * FROM reach").fetchall()) == [(i,) for i in range(13)]
    assert 1 <= len([n for n in jobs if n]) <= 2, jobs
    con.close()


@pytest.mark.parametrize("fetched, in_files", [(20_000, False), (20, True)])
def test_a_first_steps_rounds_over_few_rows_stay_in_the_driver(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, fetched: int,
        in_files: bool) -> None:
    """A view's first step over few rows (at most ``fetched_batch_rows``) collects each
    round's differences in the round's job into the driver, writing no files, unless a
    round holds more than that many: with 20, the 20 edges (a chain of 8 and every pair of
    4 nodes) fit, but a round's join pairs do not, and are computed again into files. The
    closure is right either way, at creation and after edges are cut and put back."""
    from matview.runtime.arrangements import updates

    written: list[int] = []
    held = updates.held

    def counted(*args: object, **kwargs: object) -> object:
        written.append(1)
        return held(*args, **kwargs)  # type: ignore[arg-type]

    edges = {(i, i + 1) for i in range(8)} | {(a, b) for a in range(10, 14)
                                              for b in range(10, 14) if a != b}
    con = matview.connect(spark=spark, refresh="incremental",
                          settings={"fetched_batch_rows": fetched})
    con.execute("CREATE TABLE edges (src BIGINT, dst BIGINT)")
    con.insert("edges", sorted(edges))
    monkeypatch.setattr(updates, "held", counted)
    con.execute(f"CREATE MATERIALIZED VIEW closure AS {GRAPH_VIEWS['closure']}")
    assert bool(written) is in_files
    for change, edge in [(None, None), ("delete", (4, 5)), ("delete", (10, 11)),
                         ("insert", (4, 5))]:
        if change is not None:
            getattr(con, change)("edges", [edge])
            (edges.discard if change == "delete" else edges.add)(edge)
        pairs = set(edges)
        while True:
            more = pairs | {(a, d) for a, b in pairs for c, d in edges if b == c}
            if more == pairs:
                break
            pairs = more
        assert set(con.execute("SELECT * FROM closure").fetchall()) == pairs
    con.close()
