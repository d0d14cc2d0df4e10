"""``python -m bench config``: the measurements behind matview's Spark configuration.

1. How to hold a large stored batch: an Arrow-backed local relation, ``cache()``, or
   ``localCheckpoint()``; timed on a 1,000-key probe and a full aggregate.
2. How a small step joins a delta with state: broadcasting the delta (a separate job per
   broadcast, then a shuffle for the aggregate) against reading both sides in one partition
   and hashing the delta (no broadcast job, no shuffle).
3. Session settings on W1 at a small scale: matview's defaults against 200 shuffle
   partitions, adaptive execution on, and whole-stage code generation off.
4. How a join step looks state up by key, against the state's size: the state read whole
   (held in Spark, one partition), the state sorted by key and cached with small column
   batches so that a filter on the keys skips batches (Spark's in-memory partition
   pruning), and the keyed read matview makes when the driver holds the state or a copy
   of it (``Trace.matching``: a hash lookup in Arrow, then only those rows reach Spark).

Every figure is a median over repeated runs in this process; ratios matter, not seconds.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import lookup, stored
from matview.runtime.spark.arrow_frames import arrow_frame
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench import w1
from bench.run import run_matview

SETTINGS = {
    "defaults": {},
    "shuffle.partitions=200": {"spark.sql.shuffle.partitions": "200"},
    "adaptive on": {"spark.sql.adaptive.enabled": "true"},
    "wholeStage codegen off": {"spark.sql.codegen.wholeStage": "false"},
}


def _median(run: Callable[[], object], repeat: int = 7, warmup: int = 2) -> float:
    times = []
    for _ in range(repeat + warmup):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times[warmup:])


def storage(spark: SparkSession, rows: int = 1_000_000) -> dict[str, dict[str, float]]:
    """Probe and scan times of one batch of ``rows`` rows held three ways."""
    rng = np.random.default_rng(0)
    table = pa.table({"id": pa.array(np.arange(rows), pa.int64()),
                      "cust": pa.array(rng.integers(0, 100_000, rows), pa.int32()),
                      "amount": pa.array(rng.integers(0, 10_000, rows), pa.int64())})
    cached = spark.createDataFrame(table).cache()
    cached.count()
    held = {"local relation": spark.createDataFrame(table), "cache()": cached,
            "localCheckpoint()": spark.createDataFrame(table).localCheckpoint()}
    keys = spark.createDataFrame(pa.table({"k": pa.array(range(1000), pa.int32())}))
    out = {}
    for name, df in held.items():
        out[name] = {
            "probe_s": _median(lambda df=df: F.broadcast(keys).join(
                df, F.col("k") == F.col("cust")).groupBy().count().toArrow()),
            "sum_s": _median(lambda df=df: df.groupBy().agg(F.sum("amount")).toArrow()),
        }
    cached.unpersist()
    return out


def join_strategy(spark: SparkSession) -> dict[str, dict[str, float]]:
    """A 1,000-row delta joined with state of 100k and 1M rows and aggregated."""
    rng = np.random.default_rng(1)
    delta = pa.table({"k": pa.array(rng.integers(0, 100_000, 1000), pa.int32())})
    out = {}
    for rows in (100_000, 1_000_000):
        state = spark.createDataFrame(pa.table({
            "cust": pa.array(rng.integers(0, 100_000, rows), pa.int32()),
            "amount": pa.array(rng.integers(0, 10_000, rows), pa.int64())})).localCheckpoint()

        def broadcast(state: DataFrame = state) -> None:
            F.broadcast(spark.createDataFrame(delta)).join(
                state, F.col("k") == F.col("cust")).groupBy("k").agg(F.sum("amount")).toArrow()

        def one_partition(state: DataFrame = state) -> None:
            spark.createDataFrame(delta).coalesce(1).hint("shuffle_hash").join(
                state.coalesce(1), F.col("k") == F.col("cust")).groupBy("k").agg(
                F.sum("amount")).toArrow()

        out[f"{rows} rows"] = {"broadcast_s": _median(broadcast),
                               "one_partition_s": _median(one_partition)}
    return out


def keyed_lookup(spark: SparkSession, keys: int = 1_000) -> dict[str, dict[str, float]]:
    """A delta of ``keys`` random keys joined with state of 100k to 2M rows (one row per
    key) and counted, the state read three ways (see the module docstring)."""
    rng = np.random.default_rng(2)
    return {f"{rows} rows": _keyed_lookup_at(spark, rows, keys, rng)
            for rows in (100_000, 1_000_000, 2_000_000)}


def _keyed_lookup_at(spark: SparkSession, rows: int, keys: int,
                     rng: np.random.Generator) -> dict[str, float]:
    table = pa.table({"c0": pa.array(rng.permutation(rows), pa.int64()),
                      "c1": pa.array(rng.integers(0, 10_000, rows), pa.int64()),
                      "_time": pa.array(np.zeros(rows, np.int64)),
                      "_diff": pa.array(np.ones(rows, np.int64))})
    trace = Trace(spark, 2, copy_rows=rows)
    trace.append(stored(spark, table), 0, 0)
    whole_state = trace.read(upto=0)
    assert whole_state is not None
    previous = spark.conf.get("spark.sql.inMemoryColumnarStorage.batchSize")
    spark.conf.set("spark.sql.inMemoryColumnarStorage.batchSize", "1000")
    try:
        ordered = whole_state.orderBy("c0").cache()
        ordered.count()
    finally:
        spark.conf.set("spark.sql.inMemoryColumnarStorage.batchSize", str(previous))
    values = pa.array(rng.integers(0, rows, keys), pa.int64())
    delta = pa.table({"k": values})

    def joined(state: DataFrame) -> None:
        lookup(arrow_frame(spark, delta), state, F.col("k") == F.col("c0"), "inner", True,
               build="left").groupBy().count().toArrow()

    def keyed() -> None:
        found = trace.matching(0, "c0", values)
        assert found is not None
        joined(arrow_frame(spark, found))

    out = {"whole_s": _median(lambda: joined(whole_state)),
           "pruned_s": _median(lambda: joined(ordered.where(F.col("c0").isin(
               values.to_pylist())))),
           "keyed_s": _median(keyed)}
    ordered.unpersist()
    return out


def session_settings(spark: SparkSession) -> dict[str, float]:
    """W1 (100k orders, 8 batches) median per-batch latency under each setting, after a
    warm-up run (the JVM's first runs are slower), with the defaults measured first and
    last."""
    run_matview(spark, w1.make(orders=100_000, batches=8, seed=3))
    out = {}
    for name, settings in [*SETTINGS.items(), ("defaults, again", {})]:
        previous = {key: spark.conf.get(key) for key in settings}
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            figures, _ = run_matview(spark, w1.make(orders=100_000, batches=8, seed=3))
        finally:
            for key, value in previous.items():
                spark.conf.set(key, value)
        out[name] = figures["latency"]["median"]
    return out


def measure(spark: SparkSession) -> dict[str, Any]:
    return {"storage": storage(spark), "join_strategy": join_strategy(spark),
            "keyed_lookup": keyed_lookup(spark), "session_settings": session_settings(spark)}


def table(figures: dict[str, Any]) -> str:
    lines = ["| held as | probe s | full sum s |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['probe_s']:.3f} | {v['sum_s']:.3f} |"
              for k, v in figures["storage"].items()]
    lines += ["", "| state | broadcast delta s | one partition s |", "|---|---:|---:|"]
    lines += [f"| {k} | {v['broadcast_s']:.3f} | {v['one_partition_s']:.3f} |"
              for k, v in figures["join_strategy"].items()]
    lines += ["", "| state (1,000-key lookup) | read whole s | sorted, batches pruned s | "
              "keyed read in Arrow s |", "|---|---:|---:|---:|"]
    lines += [f"| {k} | {v['whole_s']:.3f} | {v['pruned_s']:.3f} | {v['keyed_s']:.3f} |"
              for k, v in figures["keyed_lookup"].items()]
    lines += ["", "| W1 100k setting | median batch s |", "|---|---:|"]
    lines += [f"| {k} | {v:.3f} |" for k, v in figures["session_settings"].items()]
    return "\n".join(lines)
