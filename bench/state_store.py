"""Where a Spark-held arrangement batch lives, measured (issue 39): the ways Spark can hold
a batch of update rows, each stored then looked up by a small delta's keys, in one process.

    python -m bench.state_store --rows 1000000 --rows 1000000 --rows 4000000 --keys 1000

(the first size twice: the first run warms the JVM; figures in ``results/state_store-keysK.json``)

A batch is ``rows`` update rows (a BIGINT key ``c0`` over ``rows / 4`` values, three more
BIGINT columns, time, diff) computed by Spark (from ``spark.range``, as a table loaded from
a Spark DataFrame is). Each mechanism stores it, then answers ``repeats`` lookups of
``keys`` random keys (a delta held in the driver, broadcast and joined with the batch, the
matching rows collected through Arrow), and reports the store's seconds, the lookups'
median, and the bytes it added (block manager memory and disk, files):

- ``local_checkpoint``: today's ``localCheckpoint(eager=True)`` (deserialized rows in the
  executors' block managers; lost with an executor);
- ``checkpoint``: a reliable ``checkpoint(eager=True)`` into a checkpoint directory
  (recomputed once to be written; survives an executor);
- ``parquet``: the rows sorted by key within ``partitions`` hash partitions of the key,
  written as Parquet files and read back (a file scan; survives an executor; a lookup's
  ``c0 IN`` skips row groups by their key statistics);
- ``parquet_cached``: those files read through ``cache()`` (columnar blocks in memory,
  recomputed from the files when an executor is lost);
- ``keyed_cache``: ``repartition(partitions, c0).sortWithinPartitions(c0)`` cached, its
  source recomputed when lost (its lineage is the source's plan, not cut);
- ``parquet_buckets``: Parquet files in ``BUCKETS`` directories by ``c0 % BUCKETS``, each
  sorted by key: a lookup reads only the directories of its keys' buckets (partition
  pruning, the buckets computed in the driver);
- ``batch_files``: what matview does (``runtime/arrangements/batch_files.py``): the batch
  range-partitioned by key, sorted, in Parquet pages of 1,000 rows; a lookup's ``IN``
  (``BatchFiles.matching``) skips the pages whose key range holds none of its keys.

    python -m bench.state_store --rows 1000000 --rows 1000000 --rows 4000000 --keys 500 \
        --mechanisms local_checkpoint,parquet_buckets,batch_files --label layouts-keys500
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from matview.runtime.arrangements.batch_files import (
    BatchFiles,
    place,
    state_directory,
    written,
)
from matview.runtime.spark.session import start_session
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

MECHANISMS = ("local_checkpoint", "checkpoint", "parquet", "parquet_cached", "keyed_cache",
              "parquet_buckets", "batch_files")
BUCKETS = 64
"""The directories ``parquet_buckets`` spreads a batch over (by ``c0 % BUCKETS``)."""


def _batch(spark: SparkSession, rows: int) -> DataFrame:
    """``rows`` update rows computed by Spark: key ``c0`` over ``rows / 4`` values."""
    keys = max(rows // 4, 1)
    return spark.range(rows).select(
        ((F.col("id") * 7919) % keys).alias("c0"), (F.col("id") % 97).alias("c1"),
        (F.col("id") * 3).alias("c2"), (F.col("id") % 13).alias("c3"),
        F.lit(1).cast("bigint").alias("_time"), F.lit(1).cast("bigint").alias("_diff"))


def _stored(spark: SparkSession, mechanism: str, batch: DataFrame, partitions: int,
            folder: Path, rows: int) -> DataFrame | BatchFiles:
    """``batch`` (of ``rows`` rows) stored by ``mechanism``, as a frame whose plan reads
    what it stored (matview's files for ``batch_files``)."""
    if mechanism == "batch_files":
        place(spark, str(folder))
        files = written(batch, "c0", rows)
        assert files is not None
        return files
    if mechanism == "local_checkpoint":
        return batch.localCheckpoint(eager=True)
    if mechanism == "checkpoint":
        spark.sparkContext.setCheckpointDir(str(folder / "checkpoints"))
        return batch.checkpoint(eager=True)
    if mechanism == "keyed_cache":
        keyed = batch.repartition(partitions, "c0").sortWithinPartitions("c0").cache()
        keyed.count()
        return keyed
    path = str(folder / "batch.parquet")
    if mechanism == "parquet_buckets":
        bucketed = batch.withColumn("_bucket", F.pmod(F.col("c0"), F.lit(BUCKETS)))
        (bucketed.repartition(partitions, "_bucket").sortWithinPartitions("_bucket", "c0")
         .write.partitionBy("_bucket").parquet(path))
        return spark.read.parquet(path)
    batch.repartition(partitions, "c0").sortWithinPartitions("c0").write.parquet(path)
    read = spark.read.schema(batch.schema).parquet(path)
    if mechanism == "parquet_cached":
        read = read.cache()
        read.count()
    return read


def _lookup(spark: SparkSession, stored: DataFrame | BatchFiles, keys: np.ndarray,
            pushed: bool) -> int:
    """The stored rows holding one of ``keys`` (a delta held in the driver, broadcast),
    collected through Arrow; with ``pushed`` the keys also filter the scan (``IN``)."""
    delta = spark.createDataFrame(pa.table({"k": pa.array(keys, pa.int64())}).to_pandas())
    if isinstance(stored, BatchFiles):
        source = stored.matching("c0", pa.array(keys)) if pushed else stored.frame
    else:
        source = stored.where(F.col("c0").isin([int(k) for k in keys])) if pushed else stored
    if "_bucket" in source.columns:  # only the directories of the keys' buckets
        source = source.where(F.col("_bucket").isin(sorted({int(k) % BUCKETS for k in keys})))
    joined = source.join(F.broadcast(delta), F.col("c0") == F.col("k"), "left_semi")
    return joined.toArrow().num_rows


def _storage_bytes(spark: SparkSession) -> tuple[int, int]:
    """The bytes the block managers hold in memory and on disk (RDD blocks)."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()  # type: ignore[union-attr]
    return (sum(info.memSize() for info in infos), sum(info.diskSize() for info in infos))


def _folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


def measure(spark: SparkSession, mechanism: str, rows: int, keys: int, repeats: int,
            partitions: int) -> dict[str, object]:
    """One mechanism: store a batch of ``rows``, look ``keys`` keys up ``repeats`` times."""
    folder = Path(tempfile.mkdtemp(prefix="matview-state-"))
    rng = np.random.default_rng(0)
    state = state_directory(spark)  # batch_files writes in ``folder`` meanwhile
    try:
        batch = _batch(spark, rows)
        memory_before, disk_before = _storage_bytes(spark)
        started = time.perf_counter()
        stored = _stored(spark, mechanism, batch, partitions, folder, rows)
        store_s = time.perf_counter() - started
        memory, disk = _storage_bytes(spark)
        memory, disk = memory - memory_before, disk - disk_before
        out: dict[str, object] = {"mechanism": mechanism, "rows": rows, "store_s": store_s,
                                  "memory_bytes": memory, "disk_bytes": disk,
                                  "file_bytes": _folder_bytes(folder)}
        for pushed in (False, True):
            times, found = [], 0
            for _ in range(repeats + 1):
                wanted = rng.integers(0, max(rows // 4, 1), keys)
                began = time.perf_counter()
                found = _lookup(spark, stored, wanted, pushed)
                times.append(time.perf_counter() - began)
            key = "lookup_in_s" if pushed else "lookup_s"
            out[key] = statistics.median(times[1:])  # the first plans and warms
            out["found"] = found
        if isinstance(stored, DataFrame):
            stored.unpersist()
        return out
    finally:
        place(spark, state)
        shutil.rmtree(folder, ignore_errors=True)


def _table(results: list[dict[str, object]]) -> str:
    base = {r["rows"]: r for r in results if r["mechanism"] == "local_checkpoint"}
    lines = ["| mechanism | rows | store s | lookup s | lookup with IN s | x local_checkpoint "
             "lookup | memory MiB | disk+files MiB |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        ref = base.get(r["rows"])
        ratio = "-" if ref is None else f"{float(ref['lookup_s']) / float(r['lookup_s']):.2f}x"
        lines.append(
            f"| {r['mechanism']} | {r['rows']:,} | {float(r['store_s']):.2f} | "
            f"{float(r['lookup_s']):.3f} | {float(r['lookup_in_s']):.3f} | {ratio} | "
            f"{_mib(int(r['memory_bytes']))} | "
            f"{(int(r['disk_bytes']) + int(r['file_bytes'])) / 2**20:.0f} |")
    return "\n".join(lines)


def _mib(added: int) -> str:
    """Bytes the block managers added, in MiB; ``?`` when blocks of an earlier mechanism
    were freed meanwhile (a garbage collection), which hides what this one added."""
    return "?" if added < 0 else f"{added / 2**20:.0f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.state_store", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", default=None)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--mechanisms", default=",".join(MECHANISMS))
    parser.add_argument("--label", default=None,
                        help="results file state_store-LABEL.json (default keysK)")
    args = parser.parse_args(argv)
    active = start_session()  # the session matview runs in
    results = [measure(active, mechanism, rows, args.keys, args.repeats, args.partitions)
               for rows in (args.rows or [1_000_000])
               for mechanism in args.mechanisms.split(",")]
    print(_table(results))
    label = args.label or f"keys{args.keys}"
    out = Path(__file__).parent / "results" / f"state_store-{label}.json"
    out.write_text(json.dumps({"args": vars(args), "results": results}, indent=1) + "\n")
    print(f"\nfigures: {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
