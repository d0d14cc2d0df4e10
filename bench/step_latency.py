"""Per-step latency of keeping a GROUP BY view up to date, one small transaction per step.

    .venv/bin/python -m bench.step_latency [--steps N] [--view SQL]

Prints the median and 90th percentile of the refresh time (a Spark job or more per step)
over the steps after a warm-up, and the same for a from-scratch Spark SQL recomputation of
the view's query on the same table, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time

import matview

DEFAULT_VIEW = "SELECT cust, count(*), sum(amount) FROM orders GROUP BY cust"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--view", default=DEFAULT_VIEW)
    args = parser.parse_args()
    con = matview.connect(clock=0)
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("orders", [(i, i % 100, i % 1000) for i in range(100_000)])
    con.execute(f"CREATE MATERIALIZED VIEW v AS {args.view}")
    spark = con.spark
    incremental, recompute = [], []
    for step in range(args.warmup + args.steps):
        con.execute(f"INSERT INTO orders VALUES ({10**6 + step}, {step % 7}, {step})")
        start = time.perf_counter()
        con.execute("SELECT * FROM v").fetchall()
        incremental.append(time.perf_counter() - start)
        table = con.execute("SELECT * FROM orders").fetch_arrow()
        table = table.rename_columns(["id", "cust", "amount"])
        spark.createDataFrame(table).createOrReplaceTempView("orders")
        start = time.perf_counter()
        spark.sql(args.view).toArrow()
        recompute.append(time.perf_counter() - start)
    for name, times in (("matview refresh+read", incremental), ("spark recompute", recompute)):
        kept = sorted(times[args.warmup:])
        p90 = kept[int(0.9 * (len(kept) - 1))]
        print(f"{name:22s} median {statistics.median(kept):.3f}s  p90 {p90:.3f}s")


if __name__ == "__main__":
    main()
