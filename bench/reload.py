"""A dimension reloaded whole beside a trickling fact table (issue 44's per-operator
recompute): ``facts (k, v)`` of ``--facts`` rows receives ``--rows`` new rows a step, and
``dim (k, w)`` of ``--dim`` rows is reloaded in the same transaction (every row deleted,
as many new ones inserted: a nightly reload, a ``CREATE OR REPLACE`` of a lake table). The
view joins a GROUP BY of each:

    python -m bench.reload --facts 1000000 --dim 200000 --steps 6

Four ways of stepping it, each in a connection of its own over the same rows, in this
process and SparkSession, two rounds alternating, after a warm-up run that is not counted:

    per-operator   refresh=auto (this engine now): the GROUP BY over ``dim`` recomputes
                   from ``dim``'s snapshot and diffs its output, the rest incremental
    auto           refresh=auto without per-operator recompute (``operator_recompute_change
                   = 0``): the engine before it
    incremental    REFRESH POLICY = INCREMENTAL: every operator incremental
    full           REFRESH POLICY = FULL: every step recomputes the view

A step is one transaction and one read of the view; the answers of the four must be equal
at every step. Prints a table (median step seconds, ratios to ``auto``) and writes
``results/reload-factsN.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import numpy as np
import pyarrow as pa
from matview.runtime.spark.session import start_session
from pyspark.sql import SparkSession

import matview
from bench.report import saved

VIEW = ("SELECT f.k, f.total, d.total AS weight, d.top, d.n FROM "
        "(SELECT k, sum(v) AS total FROM facts GROUP BY k) f JOIN "
        "(SELECT k, sum(w) AS total, max(w) AS top, count(*) AS n FROM dim GROUP BY k) d "
        "ON f.k = d.k")

MODES = {"per-operator": ("", {}), "auto": ("", {"operator_recompute_change": 0}),
         "incremental": (" WITH (REFRESH POLICY = INCREMENTAL)", {}),
         "full": (" WITH (REFRESH POLICY = FULL)", {})}


def _table(rng: np.random.Generator, rows: int, keys: int, value: str) -> pa.Table:
    return pa.table({"k": pa.array(rng.integers(0, keys, rows), pa.int32()),
                     value: pa.array(rng.integers(1, 1_000, rows), pa.int64())})


def run(spark: SparkSession, args: argparse.Namespace, mode: str
        ) -> tuple[list[float], list[list[tuple[object, ...]]]]:
    """One mode's step seconds and answers (the same rows for every mode: ``--seed``)."""
    rng = np.random.default_rng(args.seed)
    policy, settings = MODES[mode]
    con = matview.connect(spark=spark, settings=settings)
    con.execute("CREATE TABLE facts (k INT, v BIGINT)")
    con.execute("CREATE TABLE dim (k INT, w BIGINT)")
    con.insert("facts", _table(rng, args.facts, args.keys, "v"))
    con.insert("dim", _table(rng, args.dim, args.keys, "w"))
    con.execute(f"CREATE MATERIALIZED VIEW v{policy} AS {VIEW}")
    con.execute("SELECT count(*) FROM v").fetchall()
    seconds, answers = [], []
    for _ in range(args.steps):
        facts, dim = _table(rng, args.rows, args.keys, "v"), _table(rng, args.dim, args.keys,
                                                                     "w")
        with con.transaction():
            con.execute("DELETE FROM dim")
            con.insert("dim", dim)
            con.insert("facts", facts)
        started = time.perf_counter()
        answers.append(con.execute("SELECT sum(total), sum(weight), sum(top), sum(n) FROM v")
                       .fetchall())
        seconds.append(time.perf_counter() - started)
    said = con.execute("SELECT strategy, recomputed_operators FROM matview_refresh_history "
                       "ORDER BY mz_timestamp DESC LIMIT 1").fetchall()
    print(f"{mode}: {[round(s, 3) for s in seconds]} last step {said}", file=sys.stderr,
          flush=True)
    con.close()
    return seconds, answers


def report(figures: dict[str, Any]) -> str:
    medians = {mode: statistics.median(seconds) for mode, seconds in figures.items()}
    base = medians.get("auto", next(iter(medians.values())))
    lines = [f"{'mode':16}{'median read s':>14}  vs auto"]
    lines += [f"{mode:16}{median:14.3f}  {base / median:.2f}x"
              for mode, median in medians.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.reload", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--facts", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=200_000)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--rows", type=int, default=1_000)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    args = parser.parse_args(argv)
    spark = start_session()
    run(spark, argparse.Namespace(**{**vars(args), "steps": 2}), "auto")  # warms the JVM
    figures: dict[str, Any] = {mode: [] for mode in args.modes}
    for _ in range(args.rounds):
        answers = {}
        for mode in args.modes:
            seconds, answers[mode] = run(spark, args, mode)
            figures[mode] += seconds
        assert all(a == answers[args.modes[0]] for a in answers.values()), "answers differ"
    saved(f"reload-facts{args.facts}", args, figures, report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
