"""What durability costs and saves (issue 40), W1 in one process:

    python -m bench.durable --orders 1000000 --batches 10
    python -m bench.durable --orders 10000000 --batches 10

1. ``memory``: W1 in a database in memory: its tables loaded, its view created, then each
   batch committed (``commit``: the transaction, which returns once durable) and the view
   read (``step``: it steps to the batch); the same in a durable database
   (``connect(path=...)``: ``durable``). Per batch the median seconds of each, and their
   ratio (target: a commit with a path at most 1.5x one without).
2. ``restart``: the durable database closed and opened again (its SparkSession kept: a
   restart of matview, not of Spark), then the view read: the seconds from ``connect`` to
   the first read's rows (target: at most 10% of ``rebuild``), and the batches after it,
   the first apart (target: what any other batch costs).
   ``--profile`` prints a cProfile of the first batch's read after the restart.
   ``--uri``: the durable database opened at its directory's ``file://`` URI, reached
   through Hadoop's ``FileSystem`` as an ``hdfs://`` one is (``hadoop_paths``).
3. ``rebuild``: then, in that reopened database, the view created again from the tables (a
   database without durable views pays this at every start) and read.

Prints a table and writes ``results/durable-ordersN.json``; the directory's bytes on disk
and the view's answer (equal in every database, else the run fails) are recorded too.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

from bench import w1
from bench.engines import Matview
from bench.report import saved
from bench.workload import Batch, Workload


def _batches(engine: Matview, batches: list[Batch], first: int,
             profile: cProfile.Profile | None = None) -> tuple[list[float], list[float]]:
    """Each of ``batches`` committed (the ``first``-th at the workload's clock plus
    ``first``...), then the view read: the seconds of each, per batch; ``profile`` profiles
    the first read."""
    commits, steps = [], []
    for i, batch in enumerate(batches):
        started = time.perf_counter()
        engine.apply(batch, engine.workload.clock + first + i)
        commits.append(time.perf_counter() - started)
        started = time.perf_counter()
        if profile is not None and i == 0:
            profile.runcall(engine.read)
        else:
            engine.read()
        steps.append(time.perf_counter() - started)
    return commits, steps


def _loaded(spark: SparkSession, workload: Workload, path: str | None) -> Matview:
    engine = Matview(spark, workload, path=path)
    engine.load_tables()
    engine.create_views()
    engine.read()
    return engine


def measure(spark: SparkSession, workload: Workload,
            profile: cProfile.Profile | None = None, uri: bool = False) -> dict[str, Any]:
    """The figures of the module's docstring; ``workload.catchup`` are the batches after
    the restart (``profile`` profiles the first one's read; ``uri``: the database at its
    ``file://`` URI)."""
    figures: dict[str, Any] = {}
    memory = _loaded(spark, workload, None)
    figures["memory"] = _batches(memory, workload.batches, 1)
    answer = memory.read()["w1"].sort_by("region")
    memory.con.close()
    with tempfile.TemporaryDirectory(prefix="matview-durable-") as directory:
        path = Path(directory).as_uri() if uri else directory
        durable = _loaded(spark, workload, path)
        figures["durable"] = _batches(durable, workload.batches, 1)
        assert durable.read()["w1"].sort_by("region").equals(answer)
        durable.con.close()
        figures["bytes"] = sum(f.stat().st_size for f in Path(directory).rglob("*")
                               if f.is_file())
        started = time.perf_counter()
        reopened = Matview(spark, workload, path=path)
        first = reopened.read()["w1"]
        figures["restart"] = time.perf_counter() - started
        assert first.sort_by("region").equals(answer)
        engine = reopened.con._engine_for_use()
        assert engine.durability is not None and engine.durability.rebuilt == []
        figures["after_restart"] = _batches(reopened, workload.catchup,
                                            1 + len(workload.batches), profile)
        answer = reopened.read()["w1"].sort_by("region")
        started = time.perf_counter()
        reopened.con.execute(f"CREATE MATERIALIZED VIEW rebuilt AS {w1.VIEW}")
        rebuilt = reopened.con.execute("SELECT * FROM rebuilt").fetch_arrow()
        figures["rebuild"] = time.perf_counter() - started
        assert rebuilt is not None and rebuilt.sort_by("region").equals(answer)
        reopened.con.close()
    return figures


def report(figures: dict[str, Any]) -> str:
    memory_commit, memory_step = map(statistics.median, figures["memory"])
    durable_commit, durable_step = map(statistics.median, figures["durable"])
    first_commit, first_step = (f[0] for f in figures["after_restart"])
    rows = [
        ("commit, in memory (median)", memory_commit, ""),
        ("commit, durable (median)", durable_commit,
         f"{durable_commit / memory_commit:.2f}x in memory"),
        ("step, in memory (median)", memory_step, ""),
        ("step, durable (median)", durable_step, f"{durable_step / memory_step:.2f}x in memory"),
        ("restart: connect to first read", figures["restart"],
         f"{figures['restart'] / figures['rebuild']:.1%} of rebuild"),
        ("rebuild: create view, first read", figures["rebuild"], ""),
        ("first batch after restart: commit + step", first_commit + first_step,
         f"{(first_commit + first_step) / (durable_commit + durable_step):.2f}x median"),
    ]
    lines = [f"{'':44}{'seconds':>10}  ratio"]
    lines += [f"{name:44}{value:10.3f}  {ratio}" for name, value, ratio in rows]
    lines.append(f"{'directory on disk (MiB)':44}{figures['bytes'] / 2**20:10.1f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.durable", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="print a cProfile of the first read after the restart")
    parser.add_argument("--uri", action="store_true",
                        help="open the database at its directory's file:// URI")
    args = parser.parse_args(argv)
    workload = w1.make(orders=args.orders, batches=args.batches, catchup=2,
                       seed=args.seed)
    spark = start_session()
    print(f"running durable W1 {workload.params}", file=sys.stderr, flush=True)
    profile = cProfile.Profile() if args.profile else None
    figures = measure(spark, workload, profile, args.uri)
    saved(f"durable-orders{args.orders}{'-uri' if args.uri else ''}", args, figures,
          report(figures))
    if profile is not None:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
    return 0


if __name__ == "__main__":
    sys.exit(main())
