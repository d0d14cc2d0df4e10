"""Running one workload through matview and the baselines, in turn, in one process.

1. matview: load the tables, build the views (timed), then for every batch commit it as one
   transaction and read every view (timed: the per-batch latency; the Spark jobs and py4j
   calls it made are counted). State sizes are taken after every batch.
2. Catch-up: the same connection steps the catch-up batches one at a time under SUBSCRIBE;
   a second connection loads the same tables, commits the same batches at the same logical
   times, builds the views, commits every catch-up batch and then brings the views up to
   date in one step. Its per-timestamp SUBSCRIBE output must equal the stepped one's.
3. Spark recompute and DuckDB recompute: load, apply each batch, run every view's SQL from
   scratch (timed separately from applying the batch). Each answer must equal matview's
   answer after the same batch, or the run fails.
"""

from __future__ import annotations

import gc
import statistics
import time
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

from bench.engines import DuckDBRecompute, Matview, SparkRecompute, timed
from bench.measure import (
    action_floor,
    block_manager_bytes,
    check_equal,
    counted,
    jvm_memory,
    memory_now,
    refresh_stats,
    state,
)
from bench.workload import Workload

BASE_TIME = 1_000
"""Batch ``i`` commits at logical time ``BASE_TIME + i`` in every matview connection."""


def summary(times: list[float]) -> dict[str, float]:
    """Median, 90th percentile and maximum of per-batch times, in seconds."""
    ordered = sorted(times)
    if not ordered:
        return {}
    return {"median": statistics.median(ordered),
            "p90": ordered[round(0.9 * (len(ordered) - 1))], "max": ordered[-1]}


def _live_rows(workload: Workload, upto: int) -> int:
    rows = sum(t.rows.num_rows for t in workload.tables)
    for batch in workload.batches[:upto]:
        rows += sum(t.num_rows for t in batch.inserts.values())
        rows -= sum(t.num_rows for t in batch.deletes.values())
    return rows


def run_matview(spark: SparkSession, workload: Workload, refresh: str = "auto",
                load: str = "arrow"
                ) -> tuple[dict[str, Any], list[dict[str, pa.Table]]]:
    """Build and step ``workload``'s views (``refresh``: how they step; ``load``: how the
    tables' first rows are inserted, ``engines.Matview``); the figures, and the views after
    each batch (index 0: before any batch)."""
    engine = Matview(spark, workload, refresh, load)
    times: dict[str, float] = {}
    with timed(times, "load"):
        engine.load_tables()
    with timed(times, "build"):
        engine.create_views()
        answers = [engine.read()]
    latencies, states, calls = [], [], []
    for i, batch in enumerate(workload.batches):
        with counted(spark, f"bench-{workload.name}-{i}") as counts:
            start = time.perf_counter()
            engine.apply(batch, BASE_TIME + i)
            answers.append(engine.read())
            latencies.append(time.perf_counter() - start)
        calls.append(counts)
        states.append({**state(engine.con), **memory_now(spark),
                       "live_rows": _live_rows(workload, i + 1)})
    figures: dict[str, Any] = {
        "load_s": times["load"], "build_s": times["build"], "batch_s": latencies,
        "latency": summary(latencies), "state": states,
        "jobs_per_batch": [c["jobs"] for c in calls],
        "py4j_per_batch": [c["py4j"] for c in calls],
        "py4j_gc_per_batch": [c["py4j_gc"] for c in calls],
        "block_manager_bytes": block_manager_bytes(spark),
    }
    figures["refresh"] = {name: refresh_stats(engine.con, name) for name in workload.views}
    if workload.catchup:
        figures["catchup"] = _catchup(spark, workload, engine)
    figures["memory"] = jvm_memory(spark)
    engine.con.close()
    del engine
    _release(spark)
    return figures, answers


def _release(spark: SparkSession) -> None:
    """Let go of what a closed matview held before the baselines load the tables again
    (TPC-H SF 1's six million lineitems, held by both at once, did not fit a 4 GiB driver):
    Python's dropped JVM objects released, then the JVM's collection, after which Spark's
    cleaner drops the checkpoints and broadcasts no one references."""
    gc.collect()
    if not is_remote():
        spark.sparkContext._jvm.System.gc()  # type: ignore[union-attr]


def _catchup(spark: SparkSession, workload: Workload, stepped: Matview) -> dict[str, Any]:
    first = BASE_TIME + len(workload.batches)
    subs = {name: stepped.con.subscribe(name) for name in workload.views}
    diffs: dict[str, list[tuple[object, ...]]] = {n: s.fetch() for n, s in subs.items()}
    step_times = []
    for i, batch in enumerate(workload.catchup):
        start = time.perf_counter()
        stepped.apply(batch, first + i)
        stepped.read()
        step_times.append(time.perf_counter() - start)
        for name, sub in subs.items():
            diffs[name].extend(sub.fetch())
    final = stepped.read()

    fresh = Matview(spark, workload, stepped.refresh, stepped.load)
    fresh.load_tables()
    if workload.arrivals:  # stepped through the batches, as the first connection was
        fresh.create_views()
    for i, batch in enumerate(workload.batches):
        fresh.apply(batch, BASE_TIME + i)
        if workload.arrivals:
            fresh.read()
    if not workload.arrivals:
        fresh.create_views()
    fresh_subs = {name: fresh.con.subscribe(name) for name in workload.views}
    for i, batch in enumerate(workload.catchup):
        fresh.apply(batch, first + i)
    start = time.perf_counter()
    caught = fresh.read()
    one_step = time.perf_counter() - start
    for name, sub in fresh_subs.items():
        if sub.fetch() != diffs[name]:
            raise AssertionError(f"catch-up of {name}: the per-timestamp SUBSCRIBE output "
                                 "differs from stepping one batch at a time")
        check_equal(f"catch-up of {name}", final[name], caught[name])
    updates = sum(b.size for b in workload.catchup)
    return {
        "batches": len(workload.catchup), "updates": updates,
        "stepped_s": sum(step_times), "one_step_s": one_step,
        "stepped_updates_per_s": updates / sum(step_times),
        "one_step_updates_per_s": updates / one_step,
        "speedup": sum(step_times) / one_step,
    }


def run_baseline(engine: SparkRecompute | DuckDBRecompute, workload: Workload,
                 answers: list[dict[str, pa.Table]]) -> dict[str, Any]:
    """Load, recompute after every batch, and check every answer against matview's."""
    times: dict[str, float] = {}
    with timed(times, "load"):
        engine.load_tables()
    with timed(times, "build"):
        result = engine.read()
    _check(engine.name, 0, answers[0], result)
    applies, reads = [], []
    for i, batch in enumerate(workload.batches):
        start = time.perf_counter()
        engine.apply(batch)
        applied = time.perf_counter()
        result = engine.read()
        reads.append(time.perf_counter() - applied)
        applies.append(applied - start)
        _check(engine.name, i + 1, answers[i + 1], result)
    return {"load_s": times["load"], "build_s": times["build"], "apply_s": applies,
            "batch_s": reads, "latency": summary(reads)}


def _check(engine: str, batch: int, expected: dict[str, pa.Table],
           got: dict[str, pa.Table]) -> None:
    for name, table in expected.items():
        check_equal(f"{engine} {name} after batch {batch}", table, got[name])


def run_workload(spark: SparkSession, workload: Workload,
                 baselines: tuple[str, ...] = ("spark", "duckdb"), refresh: str = "auto",
                 load: str = "arrow") -> dict[str, Any]:
    """Every figure of one workload (see the module docstring); ``load`` is how matview and
    the Spark baseline get the tables' first rows (``engines.Matview``)."""
    figures, answers = run_matview(spark, workload, refresh, load)
    figures["action_floor_s"] = action_floor(spark)
    out: dict[str, Any] = {"workload": workload.name, "params": workload.params,
                           "matview": figures}
    for name in baselines:
        engine = SparkRecompute(spark, workload, load=load) if name == "spark" else DuckDBRecompute(
            workload)
        base = run_baseline(engine, workload, answers)
        base["ratio"] = [b / m for b, m in zip(base["batch_s"], figures["batch_s"])]
        base["ratio_median"] = statistics.median(base["ratio"]) if base["ratio"] else None
        out[name] = base
    return out
