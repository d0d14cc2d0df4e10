"""The engines a workload runs on: matview, and the two recomputing baselines.

Each engine loads a workload's tables, applies its batches, and reads every view. matview
maintains the views; the baselines hold the current tables and run the views' SQL from
scratch on every read. ``read`` returns each view's rows as an Arrow table.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import matview
from bench.workload import Batch, Table, Workload
from matview.connection import Connection

SparkView = Callable[[Mapping[str, DataFrame]], DataFrame]
"""How the Spark baseline computes a view whose SQL ``spark.sql`` cannot run: a function of
the current tables (name to checkpointed DataFrame) returning the view's rows. A workload
names its own in its ``spark_views`` (view name to function: W4's recursion, W5's ASOF JOIN)."""


@contextmanager
def timed(into: dict[str, float], name: str) -> Iterator[None]:
    """Add the block's wall time in seconds to ``into[name]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        into[name] = into.get(name, 0.0) + time.perf_counter() - start


def at_clock(sql: str, clock: int) -> str:
    """``sql`` with ``mz_now()`` replaced by the TIMESTAMP of logical time ``clock`` (ms), for
    the engines that recompute: they read the view at that time."""
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=clock)
    return sql.replace("mz_now()", f"TIMESTAMP '{moment.isoformat(sep=' ')}'")


def spark_table(spark: SparkSession, table: Table) -> DataFrame:
    """``table``'s rows as a Spark DataFrame reading a Parquet file (written now, in a
    temporary directory removed when the process exits): how a Spark user's data arrives
    (``spark.read``, a lake table), its rows never in the driver."""
    directory = tempfile.mkdtemp(prefix="bench-load-")
    atexit.register(shutil.rmtree, directory, True)
    pq.write_table(table.rows, f"{directory}/{table.name}.parquet", row_group_size=1 << 20)
    return spark.read.parquet(f"{directory}/{table.name}.parquet")


class Matview:
    """matview on the given SparkSession, with a manual clock: batch ``i`` commits at time
    ``clock_base + i`` (or at the batch's own clock) so that two runs of the same batches
    produce the same timestamps. ``refresh`` is how views step (``matview.connect``);
    ``load`` how the tables' first rows are inserted: as Arrow tables (``arrow``) or as
    Spark DataFrames reading files (``spark``, ``spark_table``); ``path`` a durable database's
    directory (``connect(path=...)``; None: in memory); ``settings`` runtime settings
    (``connect(settings=...)``)."""

    name = "matview"

    def __init__(self, spark: SparkSession, workload: Workload, refresh: str = "auto",
                 load: str = "arrow", path: str | None = None,
                 settings: Mapping[str, int] | None = None) -> None:
        self.workload = workload
        self.refresh = refresh
        self.spark, self.load = spark, load
        self.con: Connection = matview.connect(path, spark=spark, clock=workload.clock,
                                               refresh=refresh, settings=dict(settings or {}))

    def load_tables(self) -> None:
        for table in self.workload.tables:
            self.con.execute(table.ddl)
            self.con.insert(table.name, table.rows if self.load == "arrow"
                            else spark_table(self.spark, table))

    def create_views(self) -> None:
        for name, sql in self.workload.views.items():
            self.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")

    def apply(self, batch: Batch, at: int) -> None:
        """Commit ``batch`` as one transaction at logical time ``at`` (the batch's clock when
        it has one; a batch without rows only moves the clock)."""
        self.con.advance_time(max(at if batch.clock is None else batch.clock, self.con.now))
        if not batch.size:
            return
        with self.con.transaction():
            for name, rows in batch.deletes.items():
                self.con.delete(name, rows)
            for name, rows in batch.inserts.items():
                self.con.insert(name, rows)

    def read(self) -> dict[str, pa.Table]:
        out = {}
        for name in self.workload.views:
            table = self.con.execute(f"SELECT * FROM {name}").fetch_arrow()
            assert table is not None
            out[name] = table
        return out


class SparkRecompute:
    """The tables as checkpointed Spark DataFrames; a batch anti-joins its deletions away,
    unions its insertions and checkpoints again; a read runs each view's SQL with
    ``spark.sql`` and collects it through Arrow. ``views`` (by default the workload's
    ``spark_views``, if it has any) computes some views with DataFrames instead of SQL."""

    name = "spark"

    def __init__(self, spark: SparkSession, workload: Workload,
                 views: Mapping[str, SparkView] | None = None, load: str = "arrow") -> None:
        self.spark, self.load = spark, load
        self.workload = workload
        self.views: dict[str, SparkView] = dict(
            workload.spark_views if views is None else views)
        self.tables: dict[str, DataFrame] = {}
        self.clock = workload.clock

    def _register(self, name: str, df: DataFrame) -> None:
        df = df.localCheckpoint(eager=True)
        self.tables[name] = df
        df.createOrReplaceTempView(name)

    def load_tables(self) -> None:
        for table in self.workload.tables:
            self._register(table.name, self.spark.createDataFrame(table.rows)
                           if self.load == "arrow" else spark_table(self.spark, table))

    def apply(self, batch: Batch) -> None:
        self.clock = self.clock if batch.clock is None else batch.clock
        for table in self.workload.tables:
            if table.name not in batch.deletes and table.name not in batch.inserts:
                continue
            df = self.tables[table.name]
            if table.name in batch.deletes:
                gone = self.spark.createDataFrame(batch.deletes[table.name].select(table.key))
                df = df.join(F.broadcast(gone), list(table.key), "left_anti")
            if table.name in batch.inserts:
                df = df.unionByName(self.spark.createDataFrame(batch.inserts[table.name]))
            self._register(table.name, df)

    def read(self) -> dict[str, pa.Table]:
        return {name: (self.views[name](self.tables) if name in self.views
                       else self.spark.sql(at_clock(self.workload.recompute_sql(name),
                                                    self.clock))).toArrow()
                for name in self.workload.views}


class DuckDBRecompute:
    """The tables in an in-memory DuckDB database; a batch is a DELETE by key and an INSERT;
    a read runs each view's SQL."""

    name = "duckdb"

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.db = duckdb.connect()
        self.db.execute("SET threads = 2")
        self.clock = workload.clock

    def _run(self, sql: str, rows: pa.Table) -> None:
        """Run ``sql``, in which ``_rows`` names ``rows``."""
        self.db.register("_rows", rows)
        try:
            self.db.execute(sql)
        finally:
            self.db.unregister("_rows")

    def load_tables(self) -> None:
        for table in self.workload.tables:
            self._run(f"CREATE TABLE {table.name} AS SELECT * FROM _rows", table.rows)

    def apply(self, batch: Batch) -> None:
        self.clock = self.clock if batch.clock is None else batch.clock
        for table in self.workload.tables:
            if table.name in batch.deletes:
                self._delete(table, batch.deletes[table.name])
            if table.name in batch.inserts:
                self._run(f"INSERT INTO {table.name} SELECT * FROM _rows",
                          batch.inserts[table.name])

    def _delete(self, table: Table, rows: pa.Table) -> None:
        match = " AND ".join(f"{table.name}.{k} = _rows.{k}" for k in table.key)
        self._run(f"DELETE FROM {table.name} USING _rows WHERE {match}", rows.select(table.key))

    def read(self) -> dict[str, pa.Table]:
        return {name: self.db.sql(at_clock(self.workload.recompute_sql(name), self.clock)
                                  ).to_arrow_table()
                for name in self.workload.views}
