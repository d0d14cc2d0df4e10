"""Sinks of a durable database (``matview.sinks``): a Parquet or Delta sink is kept by the
manifest and resumes when the database is opened again, after the last time it wrote (its
last file's, its last Delta commit's), with every change at its time; a sink behind the
view's history gets one batch that takes the replay of what it wrote to the view's
contents."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import matview


def _written(directory: Path, kind: str) -> pa.Table:
    """Every change a sink wrote."""
    if kind == "delta":
        return DeltaTable(str(directory)).to_pyarrow_table()
    return pq.read_table(sorted(directory.glob("*.parquet")))


def _replay(directory: Path, kind: str) -> list[tuple[object, ...]]:
    """The rows a sink's changes hold: summed per row."""
    table = _written(directory, kind)
    summed = table.group_by(["k", "s"]).aggregate([("mz_diff", "sum")]).to_pylist()
    return sorted((r["k"], r["s"]) for r in summed for _ in range(r["mz_diff_sum"]))


def _times(directory: Path, kind: str) -> list[int]:
    return sorted(_written(directory, kind)["mz_timestamp"].unique().to_pylist())


def _cut(directory: Path, kind: str) -> None:
    """Take back all but the first thing the sink wrote (its files, its Delta commits), as
    if the process had died before writing them."""
    if kind == "delta":
        for commit in sorted((directory / "_delta_log").glob("*.json"))[1:]:
            commit.unlink()
        for checkpoint in (directory / "_delta_log").glob("*checkpoint*"):
            checkpoint.unlink()
    else:
        for late in sorted(directory.glob("*.parquet"))[1:]:
            late.unlink()


@pytest.mark.parametrize("kind", ["parquet", "delta"])
def test_a_sink_resumes_after_the_last_time_it_wrote(spark: SparkSession, tmp_path: Path,
                                                     kind: str) -> None:
    db, out = tmp_path / "db", tmp_path / "out"
    times = []
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        con.execute("CREATE TABLE t (k INT, v INT)")
        con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
        con.execute(f"CREATE SINK snk FROM m INTO {kind.upper()} '{out}'")
        for rows in ["(1, 1), (2, 2)", "(1, 5)"]:
            con.execute(f"INSERT INTO t VALUES {rows}")
            times.append(con.now)
    assert _replay(out, kind) == [(1, 6), (2, 2)] and _times(out, kind) == times
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        for rows in ["(3, 3)", "(2, 1)"]:
            con.execute(f"INSERT INTO t VALUES {rows}")
            times.append(con.now)
        assert _replay(out, kind) == sorted(con.execute("SELECT * FROM m").fetchall(), key=repr)
    assert _times(out, kind) == times  # each transaction's changes once, at its time
    assert not list(out.glob(".*")) and not list(out.glob("*.tmp"))  # none half-written
    _cut(out, kind)  # behind the view's history
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        contents = sorted(con.execute("SELECT * FROM m").fetchall(), key=repr)  # opens the database
        assert _replay(out, kind) == contents == [(1, 6), (2, 3), (3, 3)]
        con.execute("DROP SINK snk")
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        con.execute("INSERT INTO t VALUES (4, 4)")
    assert (4, 4) not in _replay(out, kind)  # dropped, not resumed


def _contents(directory: Path) -> list[tuple[object, ...]]:
    """The rows of a contents sink's Delta table, in order (NULLs by their text)."""
    return sorted((tuple(row.values())
                   for row in DeltaTable(str(directory)).to_pyarrow_table().to_pylist()),
                  key=repr)


def test_a_contents_sink_keeps_a_delta_table_equal_to_its_view(spark: SparkSession,
                                                               tmp_path: Path) -> None:
    """``ENVELOPE CONTENTS``: after every write the Delta table holds the view's rows (each
    copy of a duplicate too), one commit per write that changes it; reopened, the sink goes
    on after its last commit; taken back behind the view's history, one commit takes it to
    the view."""
    db, out = tmp_path / "db", tmp_path / "out"
    rng = random.Random(11)
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        con.execute("CREATE TABLE t (k INT, v INT, s TEXT)")
        con.execute("CREATE MATERIALIZED VIEW m AS SELECT v, s FROM t WHERE k < 4")
        con.execute(f"CREATE SINK snk FROM m INTO DELTA '{out}' ENVELOPE CONTENTS")
        for i in range(12):
            if i == 6:  # a restart: the sink resumes after its last commit
                con.close()
                con = matview.connect(db, clock=0, spark=spark, files=[tmp_path])
            if i % 3 == 2:
                con.execute(f"DELETE FROM t WHERE k = {rng.randrange(5)}")
            else:
                con.execute(f"INSERT INTO t VALUES ({rng.randrange(5)}, {rng.randrange(3)}, "
                            f"{rng.choice(['NULL', chr(39) + 'a' + chr(39)])}), (1, 1, 'b')")
            assert _contents(out) == sorted(con.execute("SELECT * FROM m").fetchall(), key=repr)
        versions = DeltaTable(str(out)).version()
        shown = con.execute("SHOW CREATE MATERIALIZED VIEW m").fetchall()  # a read: no commit
        assert shown and DeltaTable(str(out)).version() == versions
        con.close()
    _cut(out, "delta")  # behind the view's history: one commit takes it to the view
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        contents = sorted(con.execute("SELECT * FROM m").fetchall(), key=repr)  # opens it
        assert _contents(out) == contents and DeltaTable(str(out)).version() == 1
    with pytest.raises(matview.ProgrammingError, match="ENVELOPE CONTENTS cannot keep"):
        with matview.connect(spark=spark, files=[tmp_path]) as con:
            con.execute("CREATE MATERIALIZED VIEW j AS SELECT '{}'::jsonb AS j")
            con.execute(f"CREATE SINK s FROM j INTO DELTA '{tmp_path / 'j'}' ENVELOPE CONTENTS")
