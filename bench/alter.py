"""What ALTER TABLE costs a table that views read (issue 45), W1 in one process:

    python -m bench.alter --orders 1000000

W1's tables are loaded and its views created (``create``: their seconds, the baseline);
one batch is committed and read. Then ``orders`` is altered three times, each timed:
``ADD COLUMN note TEXT DEFAULT 'x'`` and ``DROP COLUMN note`` (each rewrites the table and
replans every materialized view over it: ``matview.alter``) and ``RENAME COLUMN amount TO
amt`` (keeps the table, replans the views). A second batch is committed and read after them,
to compare a step before and after. Every view must then equal the same view created anew
over the altered table, else the run fails. Reported: each ALTER's seconds and its ratio to
the views' creation.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from pyspark.sql import SparkSession

from bench import w1_session
from bench.engines import Matview
from bench.workload import Workload

ALTERS = {"add column": "ALTER TABLE orders ADD COLUMN note TEXT DEFAULT 'x'",
          "rename column": "ALTER TABLE orders RENAME COLUMN amount TO amt",
          "drop column": "ALTER TABLE orders DROP COLUMN note"}


def _timed(action: Any) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _step(engine: Matview, workload: Workload, i: int) -> float:
    """Batch ``i`` committed and every view read: its seconds."""
    def run() -> None:
        engine.apply(workload.batches[i], workload.clock + 1 + i)
        for name in workload.views:
            engine.con.execute(f"SELECT * FROM {name}").fetchall()
    return _timed(run)


def measure(spark: SparkSession, workload: Workload) -> dict[str, Any]:
    engine = Matview(spark, workload)
    engine.load_tables()
    figures: dict[str, Any] = {"create": _timed(engine.create_views),
                               "step before": _step(engine, workload, 0)}
    for name, sql in ALTERS.items():
        figures[name] = _timed(lambda sql=sql: engine.con.execute(sql))
    for rows in (workload.batches[1].inserts, workload.batches[1].deletes):  # amount is amt
        if "orders" in rows:
            rows["orders"] = rows["orders"].rename_columns(
                ["amt" if c == "amount" else c for c in rows["orders"].column_names])
    figures["step after"] = _step(engine, workload, 1)
    for name in workload.views:
        query = engine.con.execute(f"SHOW CREATE MATERIALIZED VIEW {name}").fetchall()[0][1]
        engine.con.execute(query.replace(f"VIEW {name} ", f"VIEW {name}_anew ", 1))
        ours, anew = (sorted(engine.con.execute(f"SELECT * FROM {v}").fetchall(), key=repr)
                      for v in (name, f"{name}_anew"))
        assert ours == anew, f"{name} differs from the same view created anew"
    engine.con.close()
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [f"{'':36}{'seconds':>10}  x create"]
    for name, value in figures.items():
        lines.append(f"{name:36}{value:10.3f}  {value / figures['create']:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return w1_session.main(argv, "alter", __doc__, measure, report)


if __name__ == "__main__":
    sys.exit(main())
