"""Cyclic joins by counts against binary lookups (issue 41, seed 003), in one process:

    python -m bench.cyclic --queries triangles,cycles4 --edges 200000 --batches 5

Over W2's graph and batches (``bench/w2.py``: random edges plus hubs, batches of 50 edges
deleted and 50 inserted), each query is maintained by matview by counts (the default: a step
that is not small runs each group of lookups extending a path by one attribute by count,
propose and validate) and by binary lookups in the plan's first order
(``counted_extension_rows=-1``, the baseline), on one SparkSession, each twice in turn, the
second run kept (the first warms the JVM). Each builds the view (``CREATE``: its first step,
the whole graph at once, a large step) and steps every batch (small steps, whose paths read
the graph by key: both run them alike); Spark and DuckDB recompute the query after each
batch. Reported per query: the build's seconds, the median batch's, the state's update rows
(the edges' arrangement, its count indexes and the view's own; a join keeps no intermediate
arrangement), and the ratios. Every engine's answer after every batch must agree, else the
run fails.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from typing import Any

import pyarrow as pa
from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

import matview
from bench import w2
from bench.engines import DuckDBRecompute, Matview, SparkRecompute
from bench.measure import check_equal, state
from bench.report import saved
from bench.workload import Workload

QUERIES = {
    "triangles": w2.VIEW,
    "cycles4": "SELECT count(*) AS cycles FROM edges r1 JOIN edges r2 ON r1.dst = r2.src "
               "JOIN edges r3 ON r2.dst = r3.src JOIN edges r4 ON r3.dst = r4.src "
               "AND r4.dst = r1.src",
    "cliques4": "SELECT count(*) AS cliques FROM edges ab JOIN edges ac ON ab.src = ac.src "
                "JOIN edges ad ON ab.src = ad.src "
                "JOIN edges bc ON ab.dst = bc.src AND ac.dst = bc.dst "
                "JOIN edges bd ON ab.dst = bd.src AND ad.dst = bd.dst "
                "JOIN edges cd ON ac.dst = cd.src AND ad.dst = cd.dst",
}
"""Directed triangles (W2's view), 4-cycles and 4-cliques over ``edges``."""

BINARY = {"counted_extension_rows": -1}
"""The baseline: every group of lookups in its first order."""


def _matview(spark: SparkSession, workload: Workload, settings: dict[str, int]
             ) -> tuple[dict[str, Any], list[dict[str, pa.Table]]]:
    """The run's figures and answers; a build that fails (a binary plan's intermediate
    rows exhausting memory) is reported as its error, with no answers."""
    engine = Matview(spark, workload, settings=settings)
    engine.load_tables()
    started = time.perf_counter()
    try:
        engine.create_views()
    except matview.Error as error:
        engine.con.close()
        return {"error": str(error).splitlines()[0][:160],
                "seconds": time.perf_counter() - started}, []
    figures: dict[str, Any] = {"build": time.perf_counter() - started, "batches": []}
    answers = []
    for i, batch in enumerate(workload.batches):
        started = time.perf_counter()
        engine.apply(batch, workload.clock + 1 + i)
        answers.append(engine.read())
        figures["batches"].append(time.perf_counter() - started)
    figures["state"] = state(engine.con)
    engine.con.close()
    return figures, answers


def _recompute(engine: SparkRecompute | DuckDBRecompute, workload: Workload
               ) -> tuple[dict[str, Any], list[dict[str, pa.Table]]]:
    engine.load_tables()
    figures: dict[str, Any] = {"batches": []}
    answers = []
    for batch in workload.batches:
        engine.apply(batch)
        started = time.perf_counter()
        answers.append(engine.read())
        figures["batches"].append(time.perf_counter() - started)
    return figures, answers


def measure(spark: SparkSession, workload: Workload, baselines: list[str],
            settings: dict[str, int]) -> dict[str, Any]:
    """Each engine's figures over ``workload``, matview's with ``settings`` too."""
    runs = {}
    for name, own in [("binary", BINARY), ("counts", {})] * 2:  # the second of each kept
        runs[name] = _matview(spark, workload, {**settings, **own})
    if "spark" in baselines:
        runs["spark"] = _recompute(SparkRecompute(spark, workload), workload)
    if "duckdb" in baselines:
        runs["duckdb"] = _recompute(DuckDBRecompute(workload), workload)
    for name, (_, answers) in runs.items():
        for i, (want, got) in enumerate(zip(runs["counts"][1], answers)):
            for view in want:
                check_equal(f"{view} after batch {i} ({name})", want[view], got[view])
    return {name: figures for name, (figures, _) in runs.items()}


def report(results: dict[str, dict[str, Any]]) -> str:
    lines = [f"{'query':10}{'engine':8}{'build s':>9}{'batch s':>9}{'state rows':>12}"
             "  ratios (batch)"]
    for query, figures in results.items():
        counts = statistics.median(figures["counts"].get("batches") or [float("nan")])
        for name, run in figures.items():
            if "error" in run:
                lines.append(f"{query:10}{name:8}failed after {run['seconds']:.1f} s: "
                             f"{run['error']}")
                continue
            batch = statistics.median(run["batches"])
            build = f"{run['build']:9.2f}" if "build" in run else f"{'':9}"
            rows = run.get("state", {})
            held = f"{rows['table_rows'] + rows['view_rows'] + rows.get('count_rows', 0):12,}" \
                if rows else f"{'':12}"
            ratio = "" if name == "counts" else f"  {name} / counts {batch / counts:.2f}"
            lines.append(f"{query:10}{name:8}{build}{batch:9.3f}{held}{ratio}")
        if "build" in figures["binary"] and "build" in figures["counts"]:
            binary = figures["binary"]["build"] / figures["counts"]["build"]
            lines.append(f"{query:10}build: binary / counts {binary:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.cyclic", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", default="triangles,cycles4")
    parser.add_argument("--edges", type=int, default=200_000)
    parser.add_argument("--hubs", type=int, default=5)
    parser.add_argument("--hub-degree", type=int, default=2_000,
                        help="each hub's edges, half out, half in")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--baselines", default="spark,duckdb")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--small-step-rows", type=int, default=None,
                        help="matview's small_step_rows (0: every batch a large step, by "
                             "counts where the group's inputs are large enough)")
    args = parser.parse_args(argv)
    settings = {} if args.small_step_rows is None else {"small_step_rows": args.small_step_rows}
    spark = start_session()
    results = {}
    for query in args.queries.split(","):
        workload = dataclasses.replace(w2.make(
            edges=args.edges, nodes=args.edges // 10, hubs=args.hubs,
            hub_degree=args.hub_degree,
            batches=args.batches, seed=args.seed), views={query: QUERIES[query]})
        print(f"running {query} {workload.params}", file=sys.stderr, flush=True)
        results[query] = measure(spark, workload, args.baselines.split(","), settings)
    large = "" if args.small_step_rows is None else f"-small{args.small_step_rows}"
    saved(f"cyclic-edges{args.edges}-hubs{args.hubs}x{args.hub_degree}{large}", args, results,
          report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
