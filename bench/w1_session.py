"""The command line of a bench that measures W1 (two batches) in one SparkSession:
``--orders`` and ``--seed``, the workload made, ``measure(spark, workload)`` run, its
``report`` printed and saved as ``results/<name>-ordersN.json`` (``bench.indexes``,
``bench.alter``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

from bench import w1
from bench.report import saved
from bench.workload import Workload


def main(argv: list[str] | None, name: str, doc: str | None,
         measure: Callable[[SparkSession, Workload], dict[str, Any]],
         report: Callable[[dict[str, Any]], str]) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m bench.{name}", description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    workload = w1.make(orders=args.orders, batches=2, seed=args.seed)
    spark = start_session()
    print(f"running the {name} bench {workload.params}", file=sys.stderr, flush=True)
    figures = measure(spark, workload)
    saved(f"{name}-orders{args.orders}", args, figures, report(figures))
    return 0
