"""Sources following an append-only Parquet folder that another process writes, and a
Spark stream's batches fed through ``foreachBatch`` (``matview.sources``): each file and
each batch is applied once, across a restart of the database and a replay of the stream
after a failure."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.support.lake_writer import Writer, random_orders
from tests.support.oracle.compare import Context, mismatch_report

VIEW = "SELECT cust, count(*) AS n, sum(amount) AS total FROM orders GROUP BY cust"


def _check(con: matview.Connection, folder: Path, files: int) -> None:
    """The view and the source equal DuckDB over the folder's files; ``files`` applied."""
    oracle = duckdb.connect()
    oracle.register("orders", pq.read_table(sorted(folder.glob("[!.]*.parquet"))))
    for name, sql in {"by_cust": VIEW, "orders": "SELECT * FROM orders"}.items():
        report = mismatch_report(con.execute(f"SELECT * FROM {name}").fetchall(),
                                 oracle.execute(sql).fetchall(),
                                 Context(0, name, sql, [f"{files} files"]))
        assert report is None, report
    progress = con.execute("SELECT version, file FROM orders_progress").fetchall()
    assert sorted(progress) == [(i + 1, f"{i:03d}.parquet") for i in range(files)]


def test_a_parquet_folder_source_applies_each_new_file_once(spark: SparkSession,
                                                            tmp_path: Path) -> None:
    rng = random.Random(7)
    db, folder = tmp_path / "db", tmp_path / "orders"
    folder.mkdir()
    writer = Writer()
    count = 0

    def write(rows: int) -> None:
        nonlocal count
        writer(op="parquet", path=str(folder), name=f"{count:03d}.parquet",
               rows=random_orders(rng, range(count * 100, count * 100 + rows)))
        count += 1

    try:
        for _ in range(3):
            write(5)
        con = matview.connect(db, spark=spark, files=[tmp_path])
        con.execute(f"CREATE SOURCE orders FROM PARQUET '{folder}'")
        con.execute(f"CREATE MATERIALIZED VIEW by_cust AS {VIEW}")
        (folder / ".004.parquet").write_bytes(b"half written")  # a writer's file in progress
        _check(con, folder, 3)
        sub = con.subscribe("orders")
        sub.fetch()
        write(4)
        write(2)
        _check(con, folder, 5)
        assert len({t for t, *_ in sub.fetch()}) == 2  # a transaction per file
        con.close()
        write(3)  # while the database is closed
        con = matview.connect(db, spark=spark, files=[tmp_path])
        _check(con, folder, 6)
        write(1)
        _check(con, folder, 7)
        con.close()
    finally:
        writer.close()


def test_a_stream_replayed_after_a_failure_applies_each_batch_once(
        spark: SparkSession, tmp_path: Path) -> None:
    """Spark's file source, through ``foreachBatch`` into a source FROM STREAM: the first
    run fails after matview committed batch 1 but before Spark did; the database is
    reopened, the stream restarted from its checkpoint replays batch 1 (skipped: its id
    is recorded) and goes on."""
    rng = random.Random(3)
    db, incoming, checkpoint = tmp_path / "db", tmp_path / "in", tmp_path / "checkpoint"
    incoming.mkdir()
    writer = Writer()
    try:
        for i in range(4):
            writer(op="parquet", path=str(incoming), name=f"{i:03d}.parquet",
                   rows=random_orders(rng, range(i * 10, i * 10 + 3)))
    finally:
        writer.close()
    schema = "id BIGINT, cust INT, amount DECIMAL(10,2), note STRING"

    def run(con: matview.Connection, fail_at: int | None) -> None:
        def fed(rows: DataFrame, batch: int) -> None:
            con.feed("orders", rows, batch)
            if batch == fail_at:
                raise RuntimeError("the process failed before Spark committed the batch")

        query = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                 .parquet(str(incoming)).writeStream.foreachBatch(fed)
                 .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
                 .start())
        query.awaitTermination()

    con = matview.connect(db, spark=spark)
    con.execute(f"CREATE SOURCE orders ({schema.replace('STRING', 'TEXT')}) FROM STREAM")
    con.execute(f"CREATE MATERIALIZED VIEW by_cust AS {VIEW}")
    with pytest.raises(StreamingQueryException, match="before Spark committed"):
        run(con, fail_at=1)
    assert con.execute("SELECT * FROM orders_progress").fetchall() == [(1, None)]
    con.close()
    con = matview.connect(db, spark=spark)
    run(con, fail_at=None)
    oracle = duckdb.connect()
    oracle.register("orders", pq.read_table(sorted(incoming.glob("*.parquet"))))
    for name, sql in {"by_cust": VIEW, "orders": "SELECT * FROM orders"}.items():
        report = mismatch_report(con.execute(f"SELECT * FROM {name}").fetchall(),
                                 oracle.execute(sql).fetchall(),
                                 Context(0, name, sql, ["four batches, one replayed"]))
        assert report is None, report
    assert con.execute("SELECT * FROM orders_progress").fetchall() == [(3, None)]
    assert con.feed("orders", [(1, 1, None, None)], 2) == 0  # an old batch id: skipped
    with pytest.raises(matview.ProgrammingError, match="not a source FROM STREAM"):
        con.feed("by_cust", [(1, 1, None)], 9)
    with con.transaction(), pytest.raises(matview.ProgrammingError, match="commit the open"):
        con.feed("orders", [(1, 1, None, None)], 9)
    con.close()
