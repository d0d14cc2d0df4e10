"""What an index saves a view created later (issue 40), W1 in one process:

    python -m bench.indexes --orders 10000000

W1's tables are loaded into two databases in memory on one SparkSession. In one,
``CREATE INDEX ON orders (cust)`` arranges the orders by customer (``index``: its
seconds); then in each a view joining orders with customers by it is created and two
batches committed and read (the view's first steps). Creating the view arranges the
orders by customer for its lookups unless an index did (seed 004: a new dataflow imports
a live arrangement instead of building it), and computes its contents. Reported: the seconds from
``CREATE`` to the second batch read in each database, and their ratio (target: at least
5x faster with the index). The view's answer must be equal in both, else the run fails.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from bench import w1_session
from bench.engines import Matview
from bench.workload import Workload

RESULTS = Path(__file__).parent / "results"

VIEW = ("SELECT c.region, count(*) AS orders, sum(o.amount) AS amount FROM orders o "
        "JOIN customers c ON o.cust = c.id WHERE o.amount > 5000 GROUP BY c.region")


def _created(spark: SparkSession, workload: Workload, index: bool) -> dict[str, Any]:
    """The view created and stepped twice in a new database (with the index or not)."""
    engine = Matview(spark, workload)
    engine.load_tables()
    figures: dict[str, Any] = {}
    if index:
        started = time.perf_counter()
        engine.con.execute("CREATE INDEX ON orders (cust)")
        figures["index"] = time.perf_counter() - started
    started = time.perf_counter()
    engine.con.execute(f"CREATE MATERIALIZED VIEW big AS {VIEW}")
    figures["create"] = time.perf_counter() - started
    steps = []
    for i, batch in enumerate(workload.batches):
        begun = time.perf_counter()
        engine.apply(batch, workload.clock + 1 + i)
        engine.con.execute("SELECT * FROM big").fetchall()
        steps.append(time.perf_counter() - begun)
    figures["steps"] = steps
    figures["total"] = figures["create"] + sum(steps)
    answer = engine.con.execute("SELECT * FROM big ORDER BY region").fetch_arrow()
    figures["answer"] = None if answer is None else answer.to_pylist()
    engine.con.close()
    return figures


def measure(spark: SparkSession, workload: Workload) -> dict[str, Any]:
    with_index = _created(spark, workload, index=True)  # first: the other runs warmer
    without = _created(spark, workload, index=False)
    assert without.pop("answer") == with_index.pop("answer"), "the answers differ"
    return {"without": without, "with": with_index}


def report(figures: dict[str, Any]) -> str:
    without, with_index = figures["without"], figures["with"]
    rows = [("CREATE INDEX ON orders (cust)", with_index["index"], ""),
            ("view, no index: CREATE", without["create"], ""),
            ("view, no index: first batch", without["steps"][0], ""),
            ("view, no index: second batch", without["steps"][1], ""),
            ("view, index: CREATE", with_index["create"], ""),
            ("view, index: first batch", with_index["steps"][0], ""),
            ("view, index: second batch", with_index["steps"][1], ""),
            ("CREATE to second batch, no index", without["total"], ""),
            ("CREATE to second batch, index", with_index["total"],
             f"{without['total'] / with_index['total']:.2f}x faster")]
    lines = [f"{'':40}{'seconds':>10}  ratio"]
    lines += [f"{name:40}{value:10.3f}  {ratio}" for name, value, ratio in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return w1_session.main(argv, "indexes", __doc__, measure, report)


if __name__ == "__main__":
    sys.exit(main())
