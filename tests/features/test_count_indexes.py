"""Count indexes (seed 003's *count*; ``runtime/arrangements/count_index.py``): a worst-case
optimal join's step that runs by counts reads each proposing input's counts from a count
index of the input's arrangement, kept in step with it at every write and compaction, and
shared by every view reading the collection, instead of aggregating the input's rows."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from matview.runtime.arrangements import count_index
from matview.runtime.arrangements.trace import Trace
from matview.runtime.operators import join, join_extension
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.features.test_cyclic_joins import EVERY_STEP_LARGE, VIEWS
from tests.support.mirror import Mirror

HELD = {"driver": {}, "executors": {"driver_batch_rows": 8, "table_copy_rows": 0,
                                    "fetched_batch_rows": 0, "driver_merge_rows": 0}}
"""Where the edges' batches, and their count indexes' batches, are held: in the driver (as
Arrow; the defaults), or in the executors (in files: indexes made and followed in Spark)."""


def _counted(trace: Trace, column: str) -> Counter[int]:
    """The counts ``trace``'s count index by ``column`` holds up to its last time."""
    df = count_index.counts(trace.counts[column], trace.upper)
    return Counter() if df is None else Counter({r[0]: r[1] for r in df.collect()})


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[list[DataFrame | None]]:
    """The counts each extension run by counts was given (``join_extension.extend``)."""
    given: list[list[DataFrame | None]] = []
    extend = join_extension.extend

    def recording(*args):  # type: ignore[no-untyped-def]
        given.append(list(args[5]))
        return extend(*args)

    monkeypatch.setattr(join, "extend", recording)
    return given


@pytest.mark.parametrize("held", sorted(HELD))
def test_count_indexes_follow_the_edges_and_serve_every_view(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, held: str) -> None:
    """Two cyclic views over one edges table: both count from the same two indexes (by
    ``src``, by ``dst``), made once; after every write each index holds the edges' counts
    per node, and both views equal DuckDB."""
    given = _recording(monkeypatch)
    mirror = Mirror(spark, "CREATE TABLE edges (src INT, dst INT)", "CREATE TABLE labels "
                    "(node INT, label TEXT)", **EVERY_STEP_LARGE, **HELD[held])
    rng = random.Random(7)
    edges = [(rng.randrange(9), rng.randrange(9)) for _ in range(40)]
    mirror.execute("INSERT INTO edges VALUES " + ", ".join(map(str, edges)))
    mirror.view("triangles", VIEWS["triangles"])
    trace = mirror.con._engine_for_use().catalog.entries["edges"].trace
    assert sorted(trace.counts) == ["c0", "c1"]
    indexes = dict(trace.counts)
    mirror.view("cycles4", VIEWS["cycles4"])
    assert trace.counts == indexes and all(
        trace.counts[c] is indexes[c] for c in indexes), "the second view made its own"
    assert given and all(counts and all(c is not None for c in counts) for counts in given)
    for step in range(4):
        given.clear()
        added = [(rng.randrange(9), rng.randrange(9)) for _ in range(6)]
        gone = rng.sample(edges, 3)
        mirror.execute("INSERT INTO edges VALUES " + ", ".join(map(str, added)))
        mirror.execute("DELETE FROM edges WHERE " + " OR ".join(
            f"(src = {a} AND dst = {b})" for a, b in gone))
        edges = [e for e in edges if e not in gone] + added
        mirror.check()
        assert given and all(c is not None for counts in given for c in counts), step
        assert _counted(trace, "c0") == Counter(a for a, _ in edges), step
        assert _counted(trace, "c1") == Counter(b for _, b in edges), step
    assert all(trace.counts[c] is indexes[c] for c in indexes)
    assert len(trace.counts["c0"].batches) < 6, "the index compacts with the trace"


def test_a_view_over_a_filtered_input_counts_what_it_reads(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """An input with no arrangement of its own (edges filtered before the join) has no count
    index: its counts are aggregated from the rows the path reads, and the view is right."""
    given = _recording(monkeypatch)
    mirror = Mirror(spark, "CREATE TABLE edges (src INT, dst INT)", **EVERY_STEP_LARGE)
    mirror.execute("INSERT INTO edges VALUES (0, 1), (1, 2), (2, 0), (0, 2), (2, 3), (3, 0)")
    mirror.view("small", "SELECT count(*) AS n FROM edges e1 JOIN edges e2 ON e1.dst = e2.src "
                "JOIN (SELECT * FROM edges WHERE src <> 3) e3 ON e2.dst = e3.src "
                "AND e3.dst = e1.src")
    mirror.execute("INSERT INTO edges VALUES (1, 0), (3, 1), (1, 3)")
    mirror.check()
    assert any(c is None for counts in given for c in counts)
    assert any(c is not None for counts in given for c in counts)


def test_a_reopened_database_makes_its_count_indexes_again(
        spark: SparkSession, tmp_path: object) -> None:
    """Count indexes are derived state, not stored: a database opened again makes them from
    the edges' batches at its first step by counts, and its views stay right."""
    path = str(tmp_path)
    con = matview.connect(path=path, spark=spark, clock=0, settings=EVERY_STEP_LARGE)
    con.execute("CREATE TABLE edges (src INT, dst INT)")
    con.execute("INSERT INTO edges VALUES (0, 1), (1, 2), (2, 0), (0, 2), (2, 3), (3, 0)")
    con.execute(f"CREATE MATERIALIZED VIEW t AS {VIEWS['triangles']}")
    con.close()
    con = matview.connect(path=path, spark=spark, clock=0, settings=EVERY_STEP_LARGE)
    trace = con._engine_for_use().catalog.entries["edges"].trace
    assert trace.counts == {}
    con.execute("INSERT INTO edges VALUES (3, 1), (1, 0)")
    edges = [(0, 1), (1, 2), (2, 0), (0, 2), (2, 3), (3, 0), (3, 1), (1, 0)]
    triangles = Counter(a for a, b in edges for x, c in edges if x == a
                        if (b, c) in edges)
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == sorted(triangles.items())
    assert _counted(trace, "c0") == Counter({0: 2, 1: 2, 2: 2, 3: 2})
    con.close()
