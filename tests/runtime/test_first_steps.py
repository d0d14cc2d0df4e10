"""A GROUP BY's first step (a new view's, an ad hoc query's) has no stored row to retract:
its plan sums each key's contributions and inserts the new row, with no explode of a
previous and a new row and no window over the step's times (``ReduceOp._updates``), so
it is smaller to build and to plan; a later step retracts and inserts, and every answer
is right."""

from __future__ import annotations

import pytest
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.support.dataframe_calls import wanted_frames

VIEWS = {
    "sums": ("SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k",
             lambda rows: {(k, len(vs), sum(vs)) for k, vs in _groups(rows).items()}),
    "extremes": ("SELECT k, min(v) AS lo, max(v) AS hi FROM t GROUP BY k",
                 lambda rows: {(k, min(vs), max(vs)) for k, vs in _groups(rows).items()}),
    "global": ("SELECT count(*) AS n, sum(v) AS s FROM t",
               lambda rows: {(len(rows), sum(v for _, v in rows) if rows else None)}),
}


def _groups(rows: list[tuple[int, int]]) -> dict[int, list[int]]:
    groups: dict[int, list[int]] = {}
    for k, v in rows:
        groups.setdefault(k, []).append(v)
    return groups


def _nodes(frames: list[DataFrame]) -> set[str]:
    """The names of the logical operators in the analysed plans of ``frames``."""
    names: set[str] = set()
    for frame in frames:
        plan = frame._jdf.queryExecution().analyzed()
        names |= {line.lstrip(" :+-").split(" ")[0] for line in plan.toString().splitlines()}
    return names


@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_first_step_inserts_and_a_later_one_retracts(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, view: str) -> None:
    sql, expected = VIEWS[view]
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (k INT, v INT)")
    rows = [(i % 7, i) for i in range(60)]
    con.insert("t", rows)
    wanted = wanted_frames(monkeypatch)
    con.execute(f"CREATE MATERIALIZED VIEW v AS {sql}")
    first = _nodes([frame for job in wanted for frame in job])
    assert first and not first & {"Generate", "Window"}, first
    assert set(con.execute("SELECT * FROM v").fetchall()) == expected(rows)
    assert set(con.execute(sql).fetchall()) == expected(rows)  # an ad hoc query's first step
    wanted.clear()
    con.delete("t", [(3, 3), (5, 12)])
    con.insert("t", [(3, 100), (6, -4)])
    rows = [r for r in rows if r not in ((3, 3), (5, 12))] + [(3, 100), (6, -4)]
    assert set(con.execute("SELECT * FROM v").fetchall()) == expected(rows)
    later = _nodes([frame for job in wanted for frame in job])
    assert "Generate" in later, later  # the previous row retracted, the new one inserted
    con.close()
