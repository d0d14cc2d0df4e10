"""One workload applied to matview and to an in-memory DuckDB database in lockstep, and the
oracle's check of every query shape as a view over a seed's workload (``check_views``).

A ``Run`` creates the schema in both, applies the workload's initial loads, creates every
query shape as a materialized view in matview, and then applies operations one at a time;
DuckDB evaluates a view's query from scratch as the expected contents.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import duckdb
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import Context, mismatch_report
from tests.support.oracle.queries import QUERIES, Query
from tests.support.oracle.workload import TABLES, Op, Row, Sql, Workload, generate

DEFAULT_SEEDS = 1


KEYED_HISTORIES = {"driver_batch_rows": 8, "driver_merge_rows": 8, "table_copy_rows": 0,
                   "view_copy_rows": 0, "keyed_read_rows": 0}
"""Runtime settings: batches of more than 8 rows in files, read by key; the steps' smaller
changes in the driver."""

INDEXES = ("CREATE INDEX ON customers (id)", "CREATE INDEX ON orders (cust)",
           "CREATE INDEX ON orders (id)", "CREATE INDEX ON items (order_id)")
"""Indexes on the tables' join columns (``check_views``' ``midway``)."""

IN_FILES = {"driver_batch_rows": 1, "fetched_batch_rows": 0, "table_copy_rows": 0,
            "view_copy_rows": 0, "keyed_read_rows": 0, "driver_merge_rows": 0}
"""Runtime settings: every batch of more than one row held in files (where an arrangement
by key is a copy of them sorted by the key), read by key."""


def sampled(queries: Sequence[Query], part: int, parts: int) -> list[Query]:
    """Part ``part`` of ``parts`` interleaved parts of ``queries`` (every query in exactly
    one part): a variant of the oracle loop run over a part sees every kind of query."""
    return list(queries[part::parts])


def oracle_seeds() -> list[int]:
    """The seeds to run: ``MATVIEW_ORACLE_SEEDS`` of them (default ``DEFAULT_SEEDS``),
    starting at ``MATVIEW_ORACLE_FIRST_SEED`` (default 0)."""
    count = int(os.environ.get("MATVIEW_ORACLE_SEEDS", DEFAULT_SEEDS))
    first = int(os.environ.get("MATVIEW_ORACLE_FIRST_SEED", 0))
    return list(range(first, first + count))


class Run:
    """A matview connection (its views stepping as ``refresh`` says) and a DuckDB database
    holding the same tables."""

    def __init__(self, spark: SparkSession, workload: Workload, refresh: str = "auto") -> None:
        self.workload = workload
        self.con = matview.connect(clock=0, spark=spark, refresh=refresh)
        self.db = duckdb.connect()
        self.log: list[str] = []
        """Every statement and operation applied, in order."""
        for table in TABLES:
            self.apply(Sql(table.ddl(), table.name))
        for op in workload.initial:
            self.apply(op)

    def context(self, query: Query) -> Context:
        return Context(self.workload.seed, query.name, query.sql, tuple(self.log))

    def apply(self, op: Op) -> None:
        """Apply ``op`` to both systems (DuckDB first: its failure is the harness's bug)."""
        self.log.append(str(op))
        op.on_duckdb(self.db)
        try:
            op.on_matview(self.con)
        except Exception as error:
            raise AssertionError(self._failure(f"matview failed to apply: {error!r}")) from error

    def create_views(self, queries: Sequence[Query]) -> dict[str, str]:
        """Create each query as a materialized view; the reports of those matview rejects."""
        rejected = {}
        for query in queries:
            self.expected(query)  # a query DuckDB rejects is the harness's bug
            self.log.append(f"CREATE MATERIALIZED VIEW {query.name} AS <its query>")
            try:
                self.con.execute(f"CREATE MATERIALIZED VIEW {query.name} AS {query.sql}")
            except Exception as error:
                rejected[query.name] = self.context(query).render(
                    "matview rejected the view", [f"error: {error!r}"])
        return rejected

    def expected(self, query: Query) -> list[Row]:
        return self.db.execute(query.sql).fetchall()

    def actual(self, query: Query) -> list[Row]:
        return self.con.execute(f"SELECT * FROM {query.name}").fetchall()

    def _failure(self, headline: str) -> str:
        lines = [f"{headline} (seed {self.workload.seed})", "operations so far:"]
        return "\n".join(lines + [f"    {i:2d}. {entry}" for i, entry in enumerate(self.log)])


def check_views(spark: SparkSession, seed: int, refresh: str = "auto",
                queries: Sequence[Query] = QUERIES, midway: bool = False) -> None:
    """Every query of ``queries`` (by default all of ``QUERIES``) as a view stepping as
    ``refresh`` says, checked against DuckDB after every operation of seed ``seed``'s
    workload that writes a table it reads. ``midway``: the tables indexed (``INDEXES``)
    first and the views created halfway through the operations, so that each imports its
    inputs' live arrangements as they are then (compacted, arranged by the indexes' keys)
    instead of being built with them from the first rows."""
    workload = generate(seed)
    run = Run(spark, workload, refresh)
    ops = workload.ops
    if midway:
        for statement in INDEXES:
            run.log.append(statement)
            run.con.execute(statement)
        for op in ops[:len(ops) // 2]:
            run.apply(op)
        ops = ops[len(ops) // 2:]
    failures = run.create_views(queries)

    def check(queries: Sequence[Query]) -> None:
        for query in queries:
            if query.name in failures:
                continue
            context = run.context(query)
            try:
                actual = run.actual(query)
            except Exception as error:
                failures[query.name] = context.render(
                    "reading the view failed", [f"error: {error!r}"])
                continue
            report = mismatch_report(actual, run.expected(query), context)
            if report is not None:
                failures[query.name] = report

    check(queries)
    for op in ops:
        run.apply(op)
        table = op.table
        check(queries if table is None else [q for q in queries if q.reads(table)])
    check(queries)
    assert not failures, (f"{len(failures)} of {len(queries)} views failed:\n\n"
                          + "\n\n".join(failures.values()))
