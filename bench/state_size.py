"""What state a durable database keeps after many transactions (issue 40): W1 in a durable
database, its tables loaded and its view created, then ``--transactions`` batches committed,
the view read after every ``--read-every``-th (a read steps the view and compacts what no
one reads any more), and the database closed:

    python -m bench.state_size --orders 1000000 --transactions 1000

Compares the state with the live rows (target: state bytes per live row within 1.5x of the
live rows' bytes):

- ``on disk``: the directory's bytes (batch files, Parquet and Arrow, and the manifest),
  closed and after opening it again (which sweeps the files of merged-away batches held in
  the executors), against the live rows of every table and of the view written as one
  Parquet file each (Spark's Parquet codec, snappy, as the state's Parquet files);
- ``in memory``: before closing, the bytes every trace holds (``Trace.bytes``: Arrow's
  for driver batches, Spark's row-size estimate for the others; tables, the view and its
  operators' arrangements) against the live rows as Arrow.

Prints a table and writes ``results/state-ordersN.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
from matview.runtime.spark.session import start_session

from bench import w1
from bench.engines import Matview
from bench.report import saved


def _directory_bytes(path: str | Path) -> int:
    return sum(f.stat().st_size for f in Path(path).rglob("*") if f.is_file())


def measure(engine: Matview, transactions: int, read_every: int, path: str) -> dict[str, Any]:
    """The figures of the module's docstring, for ``engine`` (loaded, durable in
    ``path``)."""
    workload = engine.workload
    for i, batch in enumerate(workload.batches[:transactions]):
        engine.apply(batch, workload.clock + 1 + i)
        if (i + 1) % read_every == 0:
            engine.read()
    engine.read()
    live = {name: engine.con.execute(f"SELECT * FROM {name}").fetch_arrow()
            for name in [t.name for t in workload.tables] + list(workload.views)}
    state = engine.con._engine_for_use()
    traces = [e.trace for e in state.catalog.entries.values() if e.trace is not None]
    flows = [e.dataflow for e in state.catalog.entries.values() if e.dataflow is not None]
    arranged = [t for flow in flows for t in flow.arrangements().values()]
    figures: dict[str, Any] = {
        "live_rows": sum(t.num_rows for t in live.values()),
        "live_arrow_bytes": sum(t.nbytes for t in live.values()),
        "trace_bytes": sum(t.bytes for t in traces),
        "arrangement_bytes": sum(t.bytes for t in arranged),
        "held_update_rows": sum(t.rows for t in traces + arranged),
    }
    engine.con.close()
    figures["closed_disk_bytes"] = _directory_bytes(path)
    Matview(engine.spark, workload, path=path).con.close()  # the opening sweeps
    figures["disk_bytes"] = _directory_bytes(path)
    codecs: dict[str, int] = {}
    for file in Path(path).rglob("*.parquet"):
        codec = pq.ParquetFile(file).metadata.row_group(0).column(0).compression
        codecs[codec] = codecs.get(codec, 0) + file.stat().st_size
    figures["parquet_bytes_by_codec"] = codecs
    figures["disk_bytes_by_entry"] = {entry.name: _directory_bytes(entry) if entry.is_dir()
                                      else entry.stat().st_size
                                      for entry in sorted(Path(path).iterdir())}
    with tempfile.TemporaryDirectory(prefix="matview-live-") as live_dir:
        for name, table in live.items():
            pq.write_table(table, Path(live_dir) / f"{name}.parquet", compression="snappy")
        figures["live_parquet_bytes"] = _directory_bytes(live_dir)
    return figures


def report(figures: dict[str, Any]) -> str:
    rows = figures["live_rows"]
    disk, memory = figures["disk_bytes"], figures["trace_bytes"] + figures["arrangement_bytes"]
    closed = figures["closed_disk_bytes"]
    lines = [f"{'':44}{'bytes':>14}{'per live row':>14}  ratio",
             f"{'live rows (' + str(rows) + '), Parquet':44}{figures['live_parquet_bytes']:14,}"
             f"{figures['live_parquet_bytes'] / rows:14.1f}",
             f"{'state on disk, closed':44}{closed:14,}{closed / rows:14.1f}  "
             f"{closed / figures['live_parquet_bytes']:.2f}x live",
             f"{'state on disk, opened again (swept)':44}{disk:14,}{disk / rows:14.1f}  "
             f"{disk / figures['live_parquet_bytes']:.2f}x live",
             f"{'live rows, Arrow':44}{figures['live_arrow_bytes']:14,}"
             f"{figures['live_arrow_bytes'] / rows:14.1f}",
             f"{'state in memory (traces + arrangements)':44}{memory:14,}{memory / rows:14.1f}"
             f"  {memory / figures['live_arrow_bytes']:.2f}x live",
             f"{'update rows held':44}{figures['held_update_rows']:14,}"]
    lines += [f"{'state Parquet, ' + codec:44}{size:14,}"
              for codec, size in sorted(figures["parquet_bytes_by_codec"].items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.state_size", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=1_000_000)
    parser.add_argument("--transactions", type=int, default=1000)
    parser.add_argument("--read-every", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    workload = w1.make(orders=args.orders, batches=args.transactions, changes=100,
                       seed=args.seed)
    spark = start_session()
    print(f"running W1 state size {workload.params}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory(prefix="matview-state-") as path:
        engine = Matview(spark, workload, path=path)
        engine.load_tables()
        engine.create_views()
        figures = measure(engine, args.transactions, args.read_every, path)
    saved(f"state-orders{args.orders}", args, figures, report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())

