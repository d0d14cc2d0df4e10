"""The benchmark harness at toy sizes: every workload runs through matview and both
recomputing baselines, the answers are checked against each other after every batch, and
a wrong answer fails the run."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import DataFrame

import matview
from bench import w1, w2, w3
from bench.measure import Mismatch, check_equal
from bench.report import table
from bench.run import run_workload
from bench.state_store import MECHANISMS, measure


@pytest.mark.parametrize("workload", [
    w1.make(orders=3_000, customers=300, batches=3, catchup=3, changes=40, moves=3, seed=1),
    w2.make(edges=600, nodes=120, hubs=2, hub_degree=60, batches=3, catchup=3, changes=10,
            seed=2),
    w3.make(events=2_000, rate=20, tick_ms=5_000, batches=3, catchup=3, seed=3),
], ids=["w1", "w2", "w3"])
def test_workload_agrees_with_baselines(spark, workload) -> None:  # type: ignore[no-untyped-def]
    result = run_workload(spark, workload)
    figures = result["matview"]
    assert len(figures["batch_s"]) == 3 and figures["latency"]["median"] > 0
    assert figures["catchup"]["batches"] == 3 and figures["catchup"]["one_step_s"] > 0
    assert figures["state"][-1]["table_rows"] >= figures["state"][-1]["live_rows"]
    # a batch commits changes and reads every view: py4j calls happen, counted, and its
    # Spark jobs are counted (none when every plan it runs is computed in the driver, where
    # its rows are: runtime/spark/ArrowCollect.java; bench.measure.counted is tested below)
    assert len(figures["jobs_per_batch"]) == len(figures["py4j_per_batch"]) == 3
    assert all(calls >= 1 for calls in figures["py4j_per_batch"])
    # each view's steps: its first (a recompute) and one per batch, as they ran
    for steps in figures["refresh"].values():
        assert steps["incremental"] + steps["recompute"] == 1 + 3 and steps["recompute"] >= 1
    for baseline in ("spark", "duckdb"):
        assert len(result[baseline]["ratio"]) == 3
    printed = table({"environment": {"session": "classic"}, "results": [result]})
    assert f"| {workload.name} | matview |" in printed
    assert f"target {workload.name} catch-up >= 20x stepping:" in printed
    assert f"{workload.name}: per batch (commit and read every view), Spark jobs median" in printed
    assert f"{workload.name}: view steps (the first of each included) " in printed
    assert "table arrangement bytes per live row " in printed
    # the cheapest Spark action, measured in the same run, bounds a step of many actions
    assert figures["action_floor_s"] > 0
    assert f"{workload.name}: one Spark action here costs at least " in printed
    assert figures["state"][-1]["table_bytes"] > 0
    # memory in use after every batch: the driver's heap, Python's RSS, Spark's storage
    for key in ("driver_heap_bytes", "python_rss_bytes", "storage_memory_bytes"):
        assert all(s[key] is not None and s[key] >= 0 for s in figures["state"]), key
    assert all(s["driver_heap_bytes"] > 0 and s["python_rss_bytes"] > 0
               for s in figures["state"])
    assert f"{workload.name}: memory in use after each batch (median / max): driver JVM heap" \
        in printed


def test_tables_loaded_as_spark_dataframes(spark, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--load spark``: matview and the Spark baseline get the tables' first rows as
    DataFrames reading Parquet files, and every answer still agrees."""
    inserted: list[bool] = []
    insert = matview.Connection.insert

    def spy(self, table, rows):  # type: ignore[no-untyped-def]
        inserted.append(isinstance(rows, DataFrame))
        return insert(self, table, rows)

    monkeypatch.setattr(matview.Connection, "insert", spy)
    workload = w1.make(orders=2_000, customers=100, batches=2, catchup=0, changes=40, seed=4)
    result = run_workload(spark, workload, ("spark",), load="spark")
    assert inserted[:3] == [True, True, False]  # the two tables, then the batches
    assert len(result["spark"]["ratio"]) == 2


def test_generators_are_deterministic_and_delete_live_rows() -> None:
    first = w1.make(orders=500, customers=50, batches=4, changes=20, moves=2, seed=7)
    again = w1.make(orders=500, customers=50, batches=2, catchup=2, changes=20, moves=2,
                    seed=7)
    assert [b.inserts["orders"] for b in first.batches] == [
        b.inserts["orders"] for b in again.batches + again.catchup]
    live = {row for row in zip(*first.tables[1].rows.to_pydict().values())}
    for batch in first.batches:
        gone = set(zip(*batch.deletes["orders"].to_pydict().values()))
        assert gone <= live
        live = (live - gone) | set(zip(*batch.inserts["orders"].to_pydict().values()))


def test_a_wrong_answer_fails_the_run() -> None:
    right = pa.table({"k": ["a", "b"], "n": [1, 2]})
    check_equal("same", right, pa.table({"k": ["b", "a"], "n": [2.0, 1.0]}))
    with pytest.raises(Mismatch, match="wrong"):
        check_equal("wrong", right, pa.table({"k": ["a", "b"], "n": [1, 3]}))


def test_counted_counts_this_threads_jobs_and_py4j_calls(spark) -> None:  # type: ignore[no-untyped-def]
    from bench.measure import counted

    with counted(spark, "test-idle") as idle:
        pass
    assert idle == {"py4j": 0, "py4j_gc": 0, "jobs": 0}
    with counted(spark, "test-two-jobs") as busy:
        spark.range(10).collect()
        spark.range(5).collect()
    assert busy["jobs"] == 2 and (busy["py4j"] or 0) > 2


def test_every_way_of_holding_a_batch_finds_the_same_rows(spark) -> None:  # type: ignore[no-untyped-def]
    """``bench.state_store`` at a toy size: each mechanism answers the lookups with the rows
    holding the keys looked up (4,000 rows over 1,000 keys, each key in 4 rows)."""
    rng = np.random.default_rng(0)  # the keys of the last lookup: the 4th draw
    wanted = [rng.integers(0, 1_000, 20) for _ in range(4)][-1]
    for mechanism in MECHANISMS:
        figures = measure(spark, mechanism, rows=4_000, keys=20, repeats=1, partitions=2)
        assert figures["found"] == 4 * len(set(wanted.tolist())), mechanism


def test_the_durability_bench_restarts_and_rebuilds_at_a_toy_size(spark) -> None:  # type: ignore[no-untyped-def]
    """``bench.durable``: W1 of 2,000 orders in memory and durable (``measure`` checks that
    every database's view equals the one in memory, and that reopening rebuilt nothing)."""
    from bench import durable

    workload = w1.make(orders=2_000, customers=100, batches=2, catchup=2, changes=20)
    figures = durable.measure(spark, workload)
    assert [len(figures[k][0]) for k in ("memory", "durable", "after_restart")] == [2, 2, 2]
    assert figures["bytes"] > 0 and figures["restart"] > 0 and figures["rebuild"] > 0
    assert "restart: connect to first read" in durable.report(figures)


def test_small_data_is_measured_and_checked(spark) -> None:  # type: ignore[no-untyped-def]
    """``bench small`` times CREATE, each insert-and-read (checking the view's answer),
    each ad hoc SELECT (checking its rows), once and run again, and CREATE of a recursive
    view (checking its answer), and prints every target as met or missed."""
    from bench import small

    figures = small.run(spark, inserts=3, connect=False)
    assert figures["create_s"] > 0 and figures["connect_s"] is None
    assert figures["recursive_create_s"] > 0
    assert len(figures["insert_and_read_s"]) == 3 and len(figures["ad_hoc_s"]) == 3
    assert len(figures["ad_hoc_again_s"]) == 3
    assert all(s > 0 for s in figures["insert_and_read_s"] + figures["ad_hoc_s"]
               + figures["ad_hoc_again_s"])
    printed = small.table(figures)
    assert "| insert and read, first after CREATE |" in printed
    assert "| ad hoc again (median of 3): SELECT count(*) FROM a WHERE v > 5 |" in printed
    for target in ("CREATE <= 0.5 s", "every insert-and-read <= 0.2 s",
                   "every ad hoc SELECT <= 0.2 s"):
        assert f"target small {target}: " in printed
