"""What a benchmark workload is: tables with their initial rows, views, and batches of
changes, all generated deterministically from a seed.

Every engine (matview, Spark recompute, DuckDB recompute) is given exactly these objects, so
the work compared is the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Table:
    """A base table: ``ddl`` creates it in matview (``CREATE TABLE name (...)``); ``rows`` are
    its initial contents with the DDL's column names; ``key`` names columns that identify a
    row, which the baselines use to apply deletions."""

    name: str
    ddl: str
    key: tuple[str, ...]
    rows: pa.Table


@dataclass(frozen=True)
class Batch:
    """One transaction: rows inserted into and deleted from each table (deleted rows are
    whole rows currently in the table), and the logical clock to advance to before it
    commits (``None`` keeps the clock; W3 advances it with and without changes)."""

    inserts: dict[str, pa.Table] = field(default_factory=dict)
    deletes: dict[str, pa.Table] = field(default_factory=dict)
    clock: int | None = None

    @property
    def size(self) -> int:
        """Update rows in the batch (an UPDATE counts as one deletion and one insertion)."""
        return sum(t.num_rows for t in self.inserts.values()) + sum(
            t.num_rows for t in self.deletes.values())


@dataclass(frozen=True)
class Workload:
    """``views`` maps a view name to its SELECT, written in SQL that matview, Spark SQL and
    DuckDB all accept with the same meaning. ``batches`` are applied in order after the
    views were built; ``catchup`` are further batches for the catch-up measurement.
    ``params`` records the sizes and seed that generated it; ``clock`` is the logical time
    (milliseconds) when the tables are loaded and the views built, which the baselines put
    in place of ``mz_now()``. ``spark_views`` computes the views Spark SQL cannot run (W4's
    recursion, W5's ASOF JOIN) for the Spark baseline (``bench.engines.SparkView``);
    ``recompute_views`` are the SQL both baselines run in place of a view matview alone
    can state (W6's as-of join on transaction time, over the history the workload keeps
    for them)."""

    name: str
    tables: tuple[Table, ...]
    views: dict[str, str]
    batches: list[Batch]
    catchup: list[Batch]
    params: dict[str, object]
    clock: int = 0
    spark_views: Mapping[str, Callable[[Mapping[str, Any]], Any]] = field(default_factory=dict)
    recompute_views: Mapping[str, str] = field(default_factory=dict)
    arrivals: bool = False
    """Whether a view's contents depend on when rows arrived (W6): a connection replaying
    the batches must create its views before them, as the first one did."""

    def recompute_sql(self, name: str) -> str:
        """The SQL the baselines run for view ``name``."""
        return self.recompute_views.get(name, self.views[name])
