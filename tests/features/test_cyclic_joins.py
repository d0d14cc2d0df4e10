"""Cyclic joins extended worst-case optimally (seed 003): the planner groups the lookups
that can each bind a path's next attribute (``planner/join_plan.py``), and a step that is
not small runs each group by count, propose and validate (``runtime/operators/
join_extension.py``). Triangles, 4-cycles, 4-cliques and a cycle joined with another table
are maintained under random transactions (each changing the graph's every input at once,
several of them per step) and equal DuckDB's answers; changes to several inputs at one
time are counted once (Alt/Neu), which a run without the order's times would not be."""

from __future__ import annotations

import operator
import random

import pytest
from matview.runtime.operators import join, join_extension
from pyspark.sql import SparkSession

import matview
from tests.support.mirror import Mirror
from tests.support.seeds import seeds

TABLES = ("CREATE TABLE edges (src INT, dst INT)", "CREATE TABLE labels (node INT, label TEXT)")
VIEWS = {
    "triangles": "SELECT e1.src, count(*) AS n FROM edges e1 JOIN edges e2 ON e1.src = e2.src "
                 "JOIN edges e3 ON e1.dst = e3.src AND e2.dst = e3.dst GROUP BY e1.src",
    "cycles4": "SELECT count(*) AS n FROM edges r1 JOIN edges r2 ON r1.dst = r2.src "
               "JOIN edges r3 ON r2.dst = r3.src JOIN edges r4 ON r3.dst = r4.src "
               "AND r4.dst = r1.src",
    "cliques4": "SELECT ab.src, count(*) AS n FROM edges ab JOIN edges ac ON ab.src = ac.src "
                "JOIN edges ad ON ab.src = ad.src "
                "JOIN edges bc ON ab.dst = bc.src AND ac.dst = bc.dst "
                "JOIN edges bd ON ab.dst = bd.src AND ad.dst = bd.dst "
                "JOIN edges cd ON ac.dst = cd.src AND ad.dst = cd.dst GROUP BY ab.src",
    "labelled": "SELECT l.label, e1.src, e2.src, e3.src FROM edges e1 "
                "JOIN edges e2 ON e1.dst = e2.src JOIN edges e3 ON e2.dst = e3.src "
                "AND e3.dst = e1.src JOIN labels l ON l.node = e1.src WHERE l.label <> 'x'",
}
"""Directed triangles per first node, 4-cycles, 4-cliques per first node, and labelled
3-cycles (a cycle plus an input outside it)."""

EVERY_STEP_LARGE = {"small_step_rows": 0, "counted_extension_rows": 0}
"""Every step large and every group run by counts (a small step runs them in order)."""


@pytest.mark.parametrize("name", list(VIEWS))
def test_every_path_of_a_cycle_extends_by_counts(spark: SparkSession, name: str) -> None:
    """EXPLAIN PHYSICAL shows a group per path of the cycle: the stages whose matches are
    counted and which may propose, and the stages validating each proposal."""
    con = matview.connect(clock=0, spark=spark)
    for ddl in TABLES:
        con.execute(ddl)
    paths = [line for line in con.explain(VIEWS[name], stage="physical").splitlines()
             if line.strip().startswith("path ")]
    assert len(paths) == VIEWS[name].count(" edges ") + ("labels" in VIEWS[name])
    assert all("extend(count, propose: " in p and "; validate: " in p for p in paths), paths


def _changes(rng: random.Random, count: int) -> list[str]:
    """Random writes over six nodes (dense: every view has rows): edges inserted in
    groups, deleted by endpoint, labels changed."""
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.55:
            rows = ", ".join(f"({rng.randrange(6)}, {rng.randrange(6)})"
                             for _ in range(rng.randint(1, 5)))
            out.append(f"INSERT INTO edges VALUES {rows}")
        elif kind < 0.85:
            column = rng.choice(["src", "dst"])
            out.append(f"DELETE FROM edges WHERE {column} = {rng.randrange(6)} "
                       f"AND {rng.randrange(3)} = 0")
        else:
            node = rng.randrange(6)
            out.append(f"DELETE FROM labels WHERE node = {node}")
            out.append(f"INSERT INTO labels VALUES ({node}, '{rng.choice('xyz')}')")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds())
def test_cyclic_views_equal_duckdb_under_random_transactions(
        spark: SparkSession, seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each view against DuckDB after every group of one to three transactions, every step
    running its groups by counts (the extension runs: counted)."""
    ran = []
    extend = join_extension.extend
    monkeypatch.setattr(join, "extend", lambda *a: ran.append(1) or extend(*a))
    rng = random.Random(seed)
    mirror = Mirror(spark, *TABLES, **EVERY_STEP_LARGE)
    mirror.execute("INSERT INTO labels VALUES (0, 'y'), (1, 'x'), (2, 'z'), (3, 'y')")
    mirror.execute("INSERT INTO edges VALUES (0, 1), (1, 2), (2, 0), (0, 2), (2, 3), (3, 0)")
    for name, sql in VIEWS.items():
        mirror.view(name, sql)
    mirror.steps_grouped(_changes(rng, 6), rng)
    assert ran


def test_changes_at_one_time_to_every_input_count_once(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A triangle's edges (and a 4-clique's) inserted in one transaction (each view's every
    input changes at one time) and deleted in another: equal to DuckDB. With each path seeing
    the changes of the inputs after its own too (Alt/Neu dropped: every time ``<=``), the
    same steps count the new triangle more than once."""
    def run(*names: str) -> list[str]:
        mirror = Mirror(spark, *TABLES, **EVERY_STEP_LARGE)
        for name in names:
            mirror.view(name, VIEWS[name])
        failures = []
        for change in ["INSERT INTO edges VALUES (0, 1), (1, 2), (0, 2), (2, 0), (0, 3), "
                       "(1, 3), (2, 3)",
                       "DELETE FROM edges WHERE src = 0"]:
            mirror.execute(change)
            try:
                mirror.check()
            except AssertionError as failure:
                failures.append(str(failure))
        return failures

    assert run("triangles", "cliques4") == []
    monkeypatch.setattr(join.JoinOp, "_alt_neu", lambda self, ctx: False)  # see all changes
    monkeypatch.setitem(join._TIMES, "<", operator.le)  # ... at times <= the change's
    assert run("triangles"), "the view counted simultaneous changes once without Alt/Neu"
