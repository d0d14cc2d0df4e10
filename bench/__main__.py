"""``python -m bench``: run workloads through matview and the recomputing baselines.

    python -m bench quick                      # every workload at its default size
    python -m bench w1 --orders 10000000 --batches 20
    python -m bench w1 --changes 1000000 --refresh incremental   # rewrites, never recomputed
    python -m bench w2 --session connect
    python -m bench w1 --session user          # in a SparkSession with Spark's defaults
    python -m bench w3 --events 1000000
    python -m bench w4 --edges 100000 --catchup 100   # reachability, a recursive view
    python -m bench w5 --trades 1000000        # an ASOF JOIN of trades and prices
    python -m bench w6 --trades 1000000        # trades priced as of their arrival
    python -m bench tpch --sf 0.1
    python -m bench tpch22 --sf 0.1            # the 22 TPC-H queries: created? RF1/RF2 steps
    python -m bench config                     # the measurements behind the Spark settings
    python -m bench small                      # small data: CREATE, inserts, ad hoc SELECTs

Prints one table and writes every figure to ``bench/results/<workload>-<session>.json``
(and ``quick-<session>.json`` for the quick suite). Exits non-zero if any engine's answer
differs from matview's (``tpch22``: Spark's, for the queries matview creates).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

from matview.runtime.spark.session import DEFAULT_CONFIG, start_session
from pyspark.sql import SparkSession

from bench.report import table
from bench.run import run_workload
from bench.workload import Workload

RESULTS = Path(__file__).parent / "results"


def _workloads(args: argparse.Namespace) -> list[Workload]:
    from bench import tpch, w1, w2, w3, w4, w5, w6

    names = ["w1", "w2", "w3", "tpch"] if args.workload == "quick" else [args.workload]
    out = []
    for name in names:
        if name == "w1":
            out.append(w1.make(orders=args.orders, batches=args.batches or 20,
                               catchup=args.catchup, changes=args.changes, seed=args.seed,
                               keys=args.keys))
        elif name == "w2":
            out.append(w2.make(edges=args.edges or 200_000, batches=args.batches or 20,
                               catchup=args.catchup, seed=args.seed))
        elif name == "tpch":
            catchup = args.catchup if args.workload == "tpch" else min(args.catchup, 10)
            out.append(tpch.make(sf=args.sf, batches=args.batches or 10, catchup=catchup,
                                 seed=args.seed))
        elif name == "w3":
            out.append(w3.make(events=args.events, batches=args.batches or 20,
                               catchup=args.catchup, seed=args.seed))
        elif name == "w4":
            out.append(w4.make(edges=args.edges or 1_000_000, batches=args.batches or 20,
                               catchup=args.catchup, seed=args.seed))
        elif name == "w5":
            out.append(w5.make(trades=args.trades, batches=args.batches or 20,
                               catchup=args.catchup, seed=args.seed))
        elif name == "w6":
            out.append(w6.make(trades=args.trades, batches=args.batches or 20,
                               catchup=args.catchup, seed=args.seed))
    return out


def _session(kind: str, overrides: dict[str, str]) -> SparkSession:
    """The session a run uses: matview's own (``classic``), a local Spark Connect server
    (``connect``), or a user's: Spark's default settings (``user``; ``--conf`` applies), the
    session passed to ``matview.connect(spark=...)`` and the one the Spark baseline queries."""
    if kind != "user":
        return start_session(config=overrides, connect=kind == "connect")
    builder = SparkSession.builder.master("local[2]").appName("user")
    for key, value in overrides.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def _environment(session: str, overrides: dict[str, str]) -> dict[str, Any]:
    from importlib.metadata import version

    packages = {p: version(p) for p in ("pyspark", "duckdb", "pyarrow", "sqlglot", "numpy")}
    return {
        "machine": {"platform": platform.platform(), "python": platform.python_version(),
                    "cpus": __import__("os").cpu_count()},
        "packages": packages, "session": session,
        "config": overrides if session == "user" else {**DEFAULT_CONFIG, **overrides},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _config(session: str, overrides: dict[str, str]) -> int:
    from bench import config

    spark = _session(session, overrides)
    figures = config.measure(spark)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"config-{session}.json"
    path.write_text(json.dumps({"environment": _environment(session, overrides),
                                "figures": figures}, indent=1) + "\n")
    print(config.table(figures))
    print(f"\nfigures: {path}")
    return 0


def _tpch22(args: argparse.Namespace, overrides: dict[str, str]) -> int:
    from bench import tpch22

    spark = _session(args.session, overrides)
    result = tpch22.run(spark, sf=args.sf, seed=args.seed, refresh=args.refresh)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"tpch22-{args.session}.json"
    path.write_text(json.dumps({"environment": _environment(args.session, overrides),
                                "args": vars(args), "results": [result]},
                               indent=1, default=str) + "\n")
    print(tpch22.table(result))
    print(f"\nfigures: {path}")
    return 0 if tpch22.agrees(result) else 1


def _small(args: argparse.Namespace, overrides: dict[str, str]) -> int:
    from bench import small

    spark = _session(args.session, overrides)
    figures = small.run(spark, inserts=args.batches or 10)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"small-{args.session}.json"
    path.write_text(json.dumps({"environment": _environment(args.session, overrides),
                                "args": vars(args), "figures": figures}, indent=1) + "\n")
    print(small.table(figures))
    print(f"\nfigures: {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workload",
                        choices=["quick", "w1", "w2", "w3", "w4", "w5", "w6", "tpch", "tpch22",
                                 "config", "small"])
    parser.add_argument("--session", choices=["classic", "connect", "user"],
                        default="classic", help="user: a SparkSession with Spark's defaults, "
                        "passed to matview.connect(spark=...)")
    parser.add_argument("--batches", type=int, default=None,
                        help="batches stepped one at a time (default 20; TPC-H 10)")
    parser.add_argument("--catchup", type=int, default=20,
                        help="batches for the catch-up measurement (0 skips it; the quick "
                             "suite runs at most 10 for TPC-H)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--orders", type=int, default=1_000_000, help="W1 orders")
    parser.add_argument("--keys", action="store_true",
                        help="W1: each table's id its PRIMARY KEY (every write checked)")
    parser.add_argument("--changes", type=int, default=1_000,
                        help="W1 order changes per batch (half deletions, half new orders)")
    parser.add_argument("--refresh", choices=["auto", "incremental", "recompute"],
                        default="auto", help="how matview's views step (matview.connect)")
    parser.add_argument("--edges", type=int, default=None,
                        help="W2 edges (default 200,000), W4 edges (default 1,000,000)")
    parser.add_argument("--events", type=int, default=1_000_000, help="W3 initial events")
    parser.add_argument("--trades", type=int, default=1_000_000, help="W5 and W6 trades")
    parser.add_argument("--sf", type=float, default=0.1, help="TPC-H scale factor")
    parser.add_argument("--baselines", default="spark,duckdb")
    parser.add_argument("--load", choices=["arrow", "spark"], default="arrow",
                        help="insert the tables' first rows as Arrow tables, or as Spark "
                             "DataFrames reading Parquet files (a Spark user's data)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark setting overriding matview's default (repeatable)")
    args = parser.parse_args(argv)
    overrides = dict(item.split("=", 1) for item in args.conf)
    if args.workload == "config":
        return _config(args.session, overrides)
    if args.workload == "tpch22":
        return _tpch22(args, overrides)
    if args.workload == "small":
        return _small(args, overrides)
    workloads = _workloads(args)
    spark = _session(args.session, overrides)
    results = []
    for workload in workloads:
        print(f"running {workload.name} {workload.params}", file=sys.stderr, flush=True)
        results.append(run_workload(spark, workload, tuple(args.baselines.split(",")),
                                    args.refresh, args.load))
    report = {"environment": _environment(args.session, overrides), "args": vars(args),
              "results": results}
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{args.workload}-{args.session}.json"
    path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(table(report))
    print(f"\nfigures: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
