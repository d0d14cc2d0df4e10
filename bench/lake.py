"""W1 over a Delta Lake table (issue 44): ``orders`` is a Delta table that receives
``--rows``-row versions, and matview follows it as a source (``CREATE SOURCE orders FROM
DELTA``); the view joins it with ``customers`` and sums per region.

    python -m bench.lake --orders 1000000 --versions 10
    python -m bench.lake --orders 1000000 --versions 10 --cdf
    python -m bench.lake --orders 1000000 --versions 10 --deletes

Per version: the writer commits it (``write``: delta-rs, as another job would), then
``matview`` reads the view (the source reads the version as changes, the view steps) and
``spark`` recomputes the view from the table at that version (Spark reading the version's
Parquet files: what a Spark user runs without matview). Both run in this process, on one
SparkSession, and must give the same answer at every version. Each version appends
``--rows`` new orders; with ``--deletes`` it also deletes as many (``id IN (...)``, which
rewrites the files holding them). ``--cdf`` enables the table's change data feed.

On a real lake: ``--path s3://bucket/prefix`` (or ``abfss://``, ``gs://``) writes the
table there instead of a temporary directory, with the credentials delta-rs and Spark take
from the environment (``AWS_ACCESS_KEY_ID`` and the like for delta-rs) and the session's
settings (``--conf spark.hadoop.fs.s3a.access.key=...``, repeated, for Spark's reads).

Prints a table and writes ``results/lake-ordersN.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

import matview
from bench import w1
from bench.report import saved


def _orders(rng: np.random.Generator, first: int, rows: int, customers: int) -> pa.Table:
    return pa.table({"id": pa.array(np.arange(first, first + rows), pa.int64()),
                     "cust": pa.array(rng.integers(0, customers, rows), pa.int32()),
                     "amount": pa.array(rng.integers(1, 10_000, rows), pa.int64())})


def _spark(spark: SparkSession, path: str, customers: pa.Table) -> pa.Table:
    """The view recomputed by Spark from the table's latest version."""
    spark.read.parquet(*DeltaTable(path).file_uris()).createOrReplaceTempView("orders")
    return pa.Table.from_pandas(spark.sql(w1.VIEW).toPandas()).sort_by("region")


def measure(spark: SparkSession, args: argparse.Namespace, path: str) -> dict[str, Any]:
    rng = np.random.default_rng(args.seed)
    customers = w1._customers(np.arange(args.customers),  # noqa: SLF001 - W1's own rows
                              rng.integers(0, w1.REGIONS, args.customers))
    config = {"delta.enableChangeDataFeed": "true"} if args.cdf else None
    write_deltalake(path, _orders(rng, 0, args.orders, args.customers), configuration=config)
    spark.createDataFrame(customers.to_pandas()).createOrReplaceTempView("customers")
    figures: dict[str, Any] = {"write": [], "matview": [], "spark": []}
    local = "://" not in path
    con = matview.connect(spark=spark, files=[Path(path).parent] if local else None)
    started = time.perf_counter()
    con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.insert("customers", customers)
    con.execute(f"CREATE MATERIALIZED VIEW w1 AS {w1.VIEW}")
    con.execute("SELECT * FROM w1").fetch_arrow()
    figures["build"] = time.perf_counter() - started
    next_id = args.orders
    for version in range(args.versions):
        started = time.perf_counter()
        write_deltalake(path, _orders(rng, next_id, args.rows, args.customers), mode="append")
        if args.deletes:
            gone = rng.choice(next_id, args.rows, replace=False)
            DeltaTable(path).delete(f"id IN ({', '.join(map(str, gone))})")
        next_id += args.rows
        figures["write"].append(time.perf_counter() - started)
        started = time.perf_counter()
        ours = con.execute("SELECT * FROM w1").fetch_arrow().sort_by("region")
        figures["matview"].append(time.perf_counter() - started)
        started = time.perf_counter()
        theirs = _spark(spark, path, customers)
        figures["spark"].append(time.perf_counter() - started)
        assert ours.to_pylist() == theirs.to_pylist(), f"version {version}: answers differ"
    con.close()
    return figures


def report(figures: dict[str, Any]) -> str:
    ours, spark = figures["matview"], figures["spark"]
    rows = [("build: CREATE SOURCE, view, first read", figures["build"], ""),
            ("writer: one version (delta-rs)", statistics.median(figures["write"]), ""),
            ("matview: read after a version (median)", statistics.median(ours),
             f"{statistics.median(spark) / statistics.median(ours):.2f}x faster than Spark"),
            ("matview: mean", statistics.mean(ours),
             f"{statistics.mean(spark) / statistics.mean(ours):.2f}x faster than Spark"),
            ("spark: recompute from the version (median)", statistics.median(spark), ""),
            ("matview: first version after CREATE", ours[0],
             f"{ours[0] / spark[0]:.2f}x Spark's same version")]
    lines = [f"{'':44}{'seconds':>10}  ratio"]
    lines += [f"{name:44}{value:10.3f}  {ratio}" for name, value, ratio in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lake", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--customers", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=10)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--deletes", action="store_true")
    parser.add_argument("--cdf", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--path", help="the Delta table's URI (default: a temporary directory)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting of the session (repeated)")
    args = parser.parse_args(argv)
    spark = start_session(config=dict(c.split("=", 1) for c in args.conf))
    print(f"running W1 over Delta {vars(args)}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="matview-lake-") as directory:
        figures = measure(spark, args, args.path or str(Path(directory) / "orders"))
    name = f"lake-orders{args.orders}{'-cdf' if args.cdf else ''}" \
           f"{'-deletes' if args.deletes else ''}"
    saved(name, args, figures, report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
