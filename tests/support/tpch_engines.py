"""TPC-H at SF 0.01 in a matview connection and in DuckDB (``Engines``, loaded once per module
by the ``engines`` fixture) with the refresh functions RF1 and RF2, and the check of one
official query as a view after CREATE, RF1 and RF2 that the TPC-H tests and the cluster runs
share."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import duckdb
import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

import matview
from bench import tpch22
from bench.workload import Batch
from matview.connection import Connection

SF = 0.01
RF_ORDERS = 60
"""Orders each refresh function inserts or deletes, with about four lineitems each: some
300 rows per refresh function at SF 0.01 (the specification's 0.1% would be 15 orders)."""
@dataclass
class Engines:
    """The loaded tables in a matview connection and in DuckDB, and the refresh functions;
    ``applied`` are the batches committed since the tables were loaded."""

    con: Connection
    duck: duckdb.DuckDBPyConnection
    rf1: Batch
    rf2: Batch
    applied: list[Batch] = field(default_factory=list)

    def apply(self, batch: Batch) -> None:
        """Commit ``batch`` as one transaction in matview and in DuckDB (whose transaction
        stays open until ``reset``)."""
        with self.con.transaction():
            for table, rows in batch.deletes.items():
                self.con.delete(table, rows)
            for table, rows in batch.inserts.items():
                self.con.insert(table, rows)
        if not self.applied:
            self.duck.execute("BEGIN TRANSACTION")
        self.applied.append(batch)
        for table, rows in batch.deletes.items():
            key = tpch22.TABLES[table][1]
            match = " AND ".join(f"{table}.{k} = _rows.{k}" for k in key)
            self.in_duckdb(f"DELETE FROM {table} USING _rows WHERE {match}", rows.select(key))
        for table, rows in batch.inserts.items():
            self.in_duckdb(f"INSERT INTO {table} SELECT * FROM _rows", rows)

    def in_duckdb(self, sql: str, rows: pa.Table) -> None:
        """Run ``sql`` in DuckDB, ``_rows`` naming ``rows``."""
        self.duck.register("_rows", rows)
        try:
            self.duck.execute(sql)
        finally:
            self.duck.unregister("_rows")

    def check(self, name: str, when: str) -> None:
        """View ``name`` holds DuckDB's answer to its query."""
        actual = self.con.execute(f"SELECT * FROM {name}").fetchall()
        expected = self.duck.sql(tpch22.portable(tpch22.query(name))).fetchall()
        missing, extra = tpch22.differences(actual, expected)
        assert not missing and not extra, (
            f"{name} {when}: {len(actual)} rows, DuckDB {len(expected)}; DuckDB rows matview "
            f"lacks ({len(missing)}): {missing[:10]}; rows beyond DuckDB's ({len(extra)}): "
            f"{extra[:10]}")

    def reset(self, name: str) -> None:
        """Drop view ``name`` and undo the applied batches in both engines."""
        self.con.execute(f"DROP MATERIALIZED VIEW IF EXISTS {name}")
        if not self.applied:
            return
        with self.con.transaction():
            for batch in reversed(self.applied):
                for table, rows in batch.inserts.items():
                    self.con.delete(table, rows)
                for table, rows in batch.deletes.items():
                    self.con.insert(table, rows)
        self.duck.execute("ROLLBACK")
        self.applied.clear()


@pytest.fixture(scope="module")
def engines(spark: SparkSession) -> Iterator[Engines]:
    """TPC-H at SF 0.01 loaded into a matview connection and into DuckDB, with RF1 and RF2."""
    tables = tpch22.load(SF)
    rf1, rf2 = tpch22.refresh_functions(tables, RF_ORDERS)
    con = matview.connect(spark=spark, clock=0)
    duck = duckdb.connect()
    duck.execute("SET threads = 2")
    loaded = Engines(con, duck, rf1, rf2)
    for name, rows in tables.items():
        con.execute(tpch22.ddl(name))
        con.insert(name, rows)
        loaded.in_duckdb(f"CREATE TABLE {name} AS SELECT * FROM _rows", rows)
    yield loaded
    con.close()
    duck.close()



def check_query_as_a_view(engines: Engines, name: str) -> None:
    """CREATE MATERIALIZED VIEW from the official text; its rows equal DuckDB's after
    CREATE, RF1 and RF2."""
    try:
        engines.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {tpch22.query(name)}")
        engines.check(name, "after CREATE")
        engines.apply(engines.rf1)
        engines.check(name, "after RF1")
        engines.apply(engines.rf2)
        engines.check(name, "after RF2")
    finally:
        engines.reset(name)
