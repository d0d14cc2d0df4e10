"""Sinks of a durable database (``matview.sinks``): a Parquet sink is kept by the manifest
and resumes when the database is opened again, after its last file, with every change at
its time; a sink whose files are behind the view's history gets one batch that takes their
replay to the view's contents."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import NotSupportedError


def _replay(directory: Path) -> list[tuple[object, ...]]:
    """The rows a sink's files hold: their changes summed per row."""
    table = pq.read_table(sorted(directory.glob("*.parquet")))
    summed = table.group_by(["k", "s"]).aggregate([("mz_diff", "sum")]).to_pylist()
    return sorted((r["k"], r["s"]) for r in summed for _ in range(r["mz_diff_sum"]))


def _times(directory: Path) -> list[int]:
    return sorted(pq.read_table(sorted(directory.glob("*.parquet")))["mz_timestamp"]
                  .unique().to_pylist())


def test_a_parquet_sink_resumes_after_its_last_file(spark: SparkSession,
                                                    tmp_path: Path) -> None:
    db, out = tmp_path / "db", tmp_path / "out"
    times = []
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        con.execute("CREATE TABLE t (k INT, v INT)")
        con.execute("CREATE MATERIALIZED VIEW m AS SELECT k, sum(v) AS s FROM t GROUP BY k")
        con.execute(f"CREATE SINK snk FROM m INTO PARQUET '{out}'")
        with pytest.raises(NotSupportedError, match="INTO DELTA in a durable database"):
            con.execute(f"CREATE SINK d FROM m INTO DELTA '{tmp_path / 'delta'}'")
        for rows in ["(1, 1), (2, 2)", "(1, 5)"]:
            con.execute(f"INSERT INTO t VALUES {rows}")
            times.append(con.now)
    assert _replay(out) == [(1, 6), (2, 2)] and _times(out) == times
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        for rows in ["(3, 3)", "(2, 1)"]:
            con.execute(f"INSERT INTO t VALUES {rows}")
            times.append(con.now)
        assert _replay(out) == sorted(con.execute("SELECT * FROM m").fetchall())
    assert _times(out) == times  # each transaction's changes once, at its time
    assert not list(out.glob(".*"))  # no file left half-written
    for late in sorted(out.glob("*.parquet"))[1:]:  # the files behind the view's history
        late.unlink()
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        contents = sorted(con.execute("SELECT * FROM m").fetchall())  # opens the database
        assert _replay(out) == contents == [(1, 6), (2, 3), (3, 3)]
        con.execute("DROP SINK snk")
    with matview.connect(db, clock=0, spark=spark, files=[tmp_path]) as con:
        con.execute("INSERT INTO t VALUES (4, 4)")
    assert (4, 4) not in _replay(out)  # dropped, not resumed
