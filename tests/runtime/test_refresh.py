"""How a materialized view's steps run (``matview.runtime.refresh``): incrementally or by
recompute-and-diff, chosen per step, and reported by EXPLAIN ANALYZE. The oracle runs every
query shape with each fixed setting (``test_oracle``); these cases check the choice and
what a recompute must keep: errors as data, and every time a subscription reads."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from matview.runtime.refresh import Choice, Measured, RefreshPolicy
from pyspark.sql import SparkSession

import matview


def _refresh(con: matview.Connection, view: str) -> dict[str, object]:
    """EXPLAIN ANALYZE's refresh object, the last step's estimates (seconds or null: they
    vary from run to run) taken out."""
    plan = con.explain(f"MATERIALIZED VIEW {view}", stage="analyze", format="json")
    refresh = json.loads(plan)["refresh"]
    for estimate in ("incremental", "recompute"):
        seconds = refresh["last"].pop(estimate)
        assert seconds is None or seconds >= 0
    assert refresh.pop("recomputed") == []  # small steps recompute no single operator
    return refresh


def _committed(con: matview.Connection, sql: str) -> int:
    """The time ``sql``, a write, committed at."""
    con.execute(sql)
    return con.now


def test_a_transaction_rewriting_half_the_data_is_recomputed(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i % 10, i) for i in range(100)])
    con.execute("CREATE MATERIALIZED VIEW s AS SELECT k, sum(v) AS total, count(*) AS n "
                "FROM t GROUP BY k")
    assert _refresh(con, "s") == {"setting": "auto", "incremental": 0, "recompute": 1, "last": {
        "strategy": "recompute", "reason": "first step: the inputs' snapshots"}}
    with con.transaction():
        con.delete("t", [(i % 10, i) for i in range(60)])
        con.insert("t", [(3, 1000), (11, 5)])
    assert sorted(con.execute("SELECT * FROM s").fetchall()) == sorted(
        [(k, sum(v for v in range(60, 100) if v % 10 == k) + (1000 if k == 3 else 0),
          4 + (k == 3)) for k in range(10)] + [(11, 5, 1)])
    assert _refresh(con, "s") == {"setting": "auto", "incremental": 0, "recompute": 2, "last": {
        "strategy": "recompute", "reason": "62 changed rows, 100 held before: at least half"}}
    con.insert("t", [(11, 1)])
    assert con.execute("SELECT total, n FROM s WHERE k = 11").fetchall() == [(6, 2)]
    refresh = _refresh(con, "s")
    assert refresh["incremental"] == 1 and refresh["last"] == {
        "strategy": "incremental", "reason": "1 changed rows, 42 held before: less than 10%"}
    text = con.explain("MATERIALIZED VIEW s", stage="analyze")
    assert "refresh=auto: 1 incremental steps, 2 recomputes" in text
    assert "last step: incremental (1 changed rows, 42 held before: less than 10%)" in text



def test_recomputed_steps_keep_errors_as_data(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark, refresh="recompute")
    con.execute("CREATE TABLE t (a INT, b INT)")
    con.execute("INSERT INTO t VALUES (6, 3), (1, 1)")
    con.execute("CREATE MATERIALIZED VIEW q AS SELECT a / b AS r FROM t")
    con.execute("INSERT INTO t VALUES (1, 0)")
    with pytest.raises(matview.DataError, match="division by zero"):
        con.execute("SELECT * FROM q")
    con.execute("DELETE FROM t WHERE b = 0")
    assert sorted(con.execute("SELECT * FROM q").fetchall()) == [(1,), (2,)]
    assert _refresh(con, "q") == {"setting": "recompute", "incremental": 0, "recompute": 3,
                                  "last": {"strategy": "recompute",
                                           "reason": "refresh=recompute"}}


def test_a_subscription_sees_every_time_of_a_recomputed_view(spark: SparkSession) -> None:
    """A step over several transactions runs incrementally while a subscription reads the
    view or a view over it: recompute would put all their changes at the last time."""
    con = matview.connect(clock=0, spark=spark, refresh="recompute")
    con.execute("CREATE TABLE t (k TEXT, v INT)")
    con.execute("INSERT INTO t VALUES ('a', 1), ('b', 2)")
    con.execute("CREATE MATERIALIZED VIEW g AS SELECT k, sum(v) AS total FROM t GROUP BY k")
    con.execute("CREATE MATERIALIZED VIEW h AS SELECT k FROM g WHERE total > 1")
    sub = con.subscribe("h")
    start = con.now
    t1 = _committed(con, "INSERT INTO t VALUES ('a', 10)")
    t2 = _committed(con, "DELETE FROM t WHERE k = 'b'")
    assert sorted(sub.fetch()) == [(start, 1, "b"), (t1, 1, "a"), (t2, -1, "b")]
    assert _refresh(con, "g")["last"] == {
        "strategy": "incremental", "reason": "a subscription reads each of the step's times"}
    # changes of one time are recomputed, and put at that time, not at the read's
    con.execute("INSERT INTO t VALUES ('e', 3)")
    t3 = con.now
    con.advance_time(t3 + 100)
    assert sub.fetch() == [(t3, 1, "e")]
    assert _refresh(con, "g")["last"] == {"strategy": "recompute",
                                          "reason": "refresh=recompute"}
    sub.close()
    con.execute("INSERT INTO t VALUES ('c', 5)")
    con.execute("INSERT INTO t VALUES ('d', 7)")
    assert sorted(con.execute("SELECT * FROM h").fetchall()) == [("a",), ("c",), ("d",),
                                                                  ("e",)]
    assert _refresh(con, "g")["last"] == {"strategy": "recompute",
                                          "reason": "refresh=recompute"}


def test_a_step_nobody_reads_between_puts_one_row_per_key_at_its_time(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Transactions stepped together with no subscription and no history kept for AS OF:
    the view's step puts every update at the step's time, one row per key (the grouped
    sums' running values at each transaction's time are never read); with a subscription
    open, each time apart."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (k TEXT, v INT)")
    con.execute("INSERT INTO t VALUES ('a', 1), ('b', 2)")
    con.execute("CREATE MATERIALIZED VIEW g AS SELECT k, sum(v) AS total FROM t GROUP BY k")

    trace = con._engine_for_use().catalog.entries["g"].trace
    assert trace is not None
    appended: list[pa.Table] = []
    append = trace.append
    monkeypatch.setattr(trace, "append", lambda leaf, lower, upper: (
        appended.append(leaf.in_driver), append(leaf, lower, upper)))
    for v in (10, 20, 30):
        con.execute(f"INSERT INTO t VALUES ('a', {v})")
    assert sorted(con.execute("SELECT * FROM g").fetchall()) == [("a", 61), ("b", 2)]
    step = appended[0]  # the three transactions' step (then compaction's merge)
    assert set(step["_time"].to_pylist()) == {con.now} and sorted(
        zip(step["c1"].to_pylist(), step["_diff"].to_pylist())) == [(1, -1), (61, 1)]
    sub = con.subscribe("g")
    before = con.now
    t1 = _committed(con, "INSERT INTO t VALUES ('b', 5)")
    t2 = _committed(con, "INSERT INTO t VALUES ('b', 6)")
    assert sorted(sub.fetch()) == sorted([(before, 1, "a", 61), (before, 1, "b", 2),
                                          (t1, -1, "b", 2), (t1, 1, "b", 7),
                                          (t2, -1, "b", 7), (t2, 1, "b", 13)])
    sub.close()


def test_estimates_pick_the_cheaper_strategy() -> None:
    policy = RefreshPolicy()
    policy.record(Choice("recompute", "first"), Measured(1000, 1000, 2.0), 1)  # 2 ms a row
    policy.record(Choice("incremental", "small"), Measured(10, 1000, 0.5), 2)
    policy.record(Choice("incremental", "small"), Measured(30, 1000, 0.7), 3)
    assert policy.estimate_incremental(20) == pytest.approx(0.6)
    assert policy.estimate_incremental(200) == pytest.approx(0.6 * 10)
    assert policy.estimate_recompute(2000) == pytest.approx(4.0)
    policy.record(Choice("recompute", "large"), Measured(500, 1000, 1.0), 4)  # 1 ms a row
    assert policy.estimate_recompute(2000) == pytest.approx(4.0)  # the slowest rate
    assert policy.choose(20, 2000, False, False) == Choice(
        "incremental", "20 changed rows, 1980 held before: less than 10%",
        pytest.approx(0.6), pytest.approx(4.0))
    assert policy.choose(1000, 2000, False, False) == Choice(
        "recompute", "estimated 4.000s recompute < 30.000s incremental",
        pytest.approx(30.0), pytest.approx(4.0))
    fresh = RefreshPolicy()
    fresh.record(Choice("recompute", "first"), Measured(100, 100, 1.0), 5)
    assert fresh.choose(30, 130, False, False) == Choice(
        "incremental", "30 changed rows, 100 held before: less than half", None,
        pytest.approx(1.3))
    assert fresh.choose(50, 150, False, False).strategy == "recompute"
    slow = RefreshPolicy()
    slow.record(Choice("recompute", "first"), Measured(1000, 1000, 10.0), 6)  # 10 ms a row
    slow.record(Choice("incremental", "small"), Measured(100, 1000, 0.5), 7)
    assert slow.choose(200, 1200, False, False) == Choice(
        "incremental", "estimated 1.000s incremental <= 12.000s recompute",
        pytest.approx(1.0), pytest.approx(12.0))


def test_a_dataflows_first_incremental_step_is_no_estimate() -> None:
    """The first incremental step of a dataflow builds the plans the steps after it reuse:
    over a few rows it took 1.6 s where the next took 0.05 s. Estimated from it, the next
    step recomputed, which starts a fresh dataflow that pays the plans again; so it is no
    estimate of an incremental step, and a part of a recompute's."""
    policy = RefreshPolicy()
    policy.record(Choice("recompute", "first"), Measured(6, 6, 0.9), 8)
    policy.record(Choice("incremental", "small"), Measured(1, 7, 1.6, warming=True), 9)
    assert policy.estimate_incremental(1) is None
    assert policy.choose(1, 8, False, False) == Choice(
        "incremental", "1 changed rows, 7 held before: less than half", None,
        pytest.approx(0.9 / 6 * 8 + 1.6))
    policy.record(Choice("incremental", "small"), Measured(1, 8, 0.05), 10)
    assert policy.estimate_incremental(1) == pytest.approx(0.05)
    # a recompute starts a fresh dataflow: its first incremental step warms it again
    assert policy.estimate_recompute(12) == pytest.approx(0.9 / 6 * 12 + 1.6)
    assert policy.choose(30, 42, False, False) == Choice(
        "incremental", "estimated 1.500s incremental <= 7.900s recompute",
        pytest.approx(1.5), pytest.approx(7.9))


def test_each_dataflows_first_incremental_step_is_warming(spark: SparkSession) -> None:
    """The controller marks the first incremental step of each dataflow a view steps with,
    which builds its plans: after its first step (here CREATE rehearses no step), and after
    a recompute, which starts a fresh dataflow."""
    con = matview.connect(clock=0, spark=spark, settings={"rehearsal_rows": 0})
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i % 3, i) for i in range(20)])
    con.execute("CREATE MATERIALIZED VIEW s AS SELECT k, sum(v) AS total FROM t GROUP BY k")
    for change in ([(1, 100)], [(i % 3, i) for i in range(15)], [(0, 300)], [(2, 200)]):
        if len(change) > 1:  # most rows, and no estimate of an incremental step: recomputed
            con.delete("t", change)
        else:
            con.insert("t", change)
        con.execute("SELECT * FROM s").fetchall()  # a step each
    assert sorted(con.execute("SELECT * FROM s").fetchall()) == [
        (0, 15 + 18 + 300), (1, 16 + 19 + 100), (2, 17 + 200)]
    entry = con._engine_for_use().catalog.entries["s"]
    assert entry.dataflow is not None
    policy = entry.dataflow.policy
    assert [(m.changed, m.warming) for m in policy.measured["incremental"]] == [
        (1, True), (1, True), (1, False)]
    assert [m.changed for m in policy.measured["recompute"]] == [20, 15]


def test_a_rehearsed_dataflows_first_incremental_step_is_no_warming(
        spark: SparkSession) -> None:
    """CREATE's rehearsal (``Dataflow.rehearse``) built the plans of the view's small steps:
    its first incremental step is measured as any other, an estimate for the next (its
    input of 20 rows rehearses with ``rehearsal_min_rows`` at most 20)."""
    con = matview.connect(clock=0, spark=spark, settings={"rehearsal_min_rows": 20})
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i % 3, i) for i in range(20)])
    con.execute("CREATE MATERIALIZED VIEW s AS SELECT k, sum(v) AS total FROM t GROUP BY k")
    con.insert("t", [(1, 100)])
    assert sorted(con.execute("SELECT * FROM s").fetchall()) == [
        (0, 63), (1, 70 + 100), (2, 57)]
    entry = con._engine_for_use().catalog.entries["s"]
    assert entry.dataflow is not None and entry.dataflow.warm
    assert [(m.changed, m.warming) for m in entry.dataflow.policy.measured["incremental"]] == [
        (1, False)]


def test_refresh_setting_is_checked(spark: SparkSession) -> None:
    with pytest.raises(matview.ProgrammingError, match="refresh must be one of"):
        matview.connect(spark=spark, refresh="sometimes")


def test_every_reader_of_a_collection_shares_its_arrangement(spark: SparkSession) -> None:
    """One arrangement per stored collection, read by every view that reads it, before
    and after a recompute replaced a view's dataflow."""
    con = matview.connect(clock=0, spark=spark, refresh="recompute")
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.execute("INSERT INTO t VALUES (1, 2)")
    con.execute("CREATE MATERIALIZED VIEW a AS SELECT k, count(*) AS n FROM t GROUP BY k")
    con.execute("CREATE MATERIALIZED VIEW b AS SELECT t.v, a.n FROM t JOIN a ON t.k = a.k")
    entries = con._engine_for_use().catalog.entries

    def readers() -> dict[str, list[object]]:
        found: dict[str, list[object]] = {}
        for name in ("a", "b"):
            for source in entries[name].dataflow.sources():
                found.setdefault(source.name, []).append(source.trace)
        return found

    before = readers()
    assert [len(traces) for traces in before.values()] == [2, 1]
    assert all(trace is entries[name].trace for name, traces in before.items()
               for trace in traces)
    con.execute("INSERT INTO t VALUES (1, 5)")
    assert sorted(con.execute("SELECT * FROM b").fetchall()) == [(2, 2), (5, 2)]
    assert _refresh(con, "b")["recompute"] == 2
    after = readers()
    assert all(trace is entries[name].trace for name, traces in after.items()
               for trace in traces)
