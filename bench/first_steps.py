"""What a view's first steps cost, with and without CREATE's rehearsal (issue 42's "no
first-step penalty"), in one process:

    python -m bench.first_steps
    python -m bench.first_steps --workloads w1,tpch --rounds 3

For each workload, ``--rounds`` times: its tables loaded into a new connection without the
rehearsal (``rehearsal_rows`` 0), its views created and ``--batches`` batches committed,
each followed by a read of every view; then the same in a connection with the default
rehearsal. Reports per setting the median over the rounds of CREATE's seconds and of each
batch's (commit and read), and the first batch against the later ones' median (target: the
second batch costs what the tenth does, here the first what the others do). The rounds
alternate the settings, so both see the same machine; the first round's figures include
the JVM's warming and are left out when there are more.

Prints a table and writes ``results/first-steps.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from matview.runtime.settings import DEFAULTS
from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

from bench import tpch, w1, w2, w3
from bench.engines import Matview
from bench.report import saved
from bench.workload import Workload

WORKLOADS = {"w1": lambda batches: w1.make(batches=batches),
             "w2": lambda batches: w2.make(batches=batches),
             "w3": lambda batches: w3.make(batches=batches),
             "tpch": lambda batches: tpch.make(batches=batches)}


def measured(spark: SparkSession, work: Workload, rehearsal_rows: int) -> dict[str, Any]:
    """CREATE's seconds and each batch's, in a new connection with ``rehearsal_rows``."""
    engine = Matview(spark, work, settings={"rehearsal_rows": rehearsal_rows})
    engine.load_tables()
    started = time.perf_counter()
    engine.create_views()
    create = time.perf_counter() - started
    batches = []
    for i, batch in enumerate(work.batches):
        started = time.perf_counter()
        engine.apply(batch, work.clock + 1 + i)
        engine.read()
        batches.append(time.perf_counter() - started)
    engine.con.close()
    return {"create": create, "batches": batches}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.first_steps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", default="w1,w2,w3,tpch")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    spark = start_session()
    settings = {"without": 0, "with": DEFAULTS.rehearsal_rows}
    figures: dict[str, Any] = {}
    lines = ["| workload | rehearsal | CREATE s | first batch s | later batches, median s "
             "| first / later |", "|---|---|---:|---:|---:|---:|"]
    for name in args.workloads.split(","):
        work = WORKLOADS[name](args.batches)
        runs: dict[str, list[dict[str, Any]]] = {s: [] for s in settings}
        for _ in range(args.rounds):
            for setting, rows in settings.items():
                runs[setting].append(measured(spark, work, rows))
        figures[name] = runs
        for setting, done in runs.items():
            kept = done[1:] if len(done) > 1 else done
            create = statistics.median(r["create"] for r in kept)
            first = statistics.median(r["batches"][0] for r in kept)
            later = statistics.median(b for r in kept for b in r["batches"][1:])
            lines.append(f"| {name} | {setting} | {create:.3f} | {first:.3f} | {later:.3f} "
                         f"| {first / later:.1f}x |")
    saved("first-steps", args, figures, "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
