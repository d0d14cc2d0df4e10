"""Copies arranged by integer keys that the driver memory-maps (``arrangements.mapped_copies``):
once converted, the driver's reads of some keys find the same rows as Spark's reads of the
copy's files and decode no Parquet row group; a view's steps read them so."""

from __future__ import annotations

import threading
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from matview.runtime.arrangements import batch_files, mapped_copies, row_groups
from matview.runtime.arrangements.updates import normalized
from matview.runtime.settings import DEFAULTS, IN_EXECUTORS, using
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import SparkSession

import matview

MAPPED = DEFAULTS.replaced({"mapped_copy_rows": 0, "file_rows": 7_000})
"""Every copy by integers mapped; copies in files of 7,000 rows."""


@pytest.mark.parametrize("kind", ["TINYINT", "SMALLINT", "INT", "BIGINT"])
def test_a_mapped_copy_reads_rows_of_every_type_by_integer_and_null_keys(
        spark: SparkSession, decoded: list[int], kind: str) -> None:
    """The conversion begins as the copy is written; once it is done, reads find the rows
    Spark finds in the copy's files (and the driver in their row groups), typed as Spark
    hands them out, NULL among the keys finding the rows that hold NULL, with no row group
    decoded."""
    rows = [(None if i % 1_000 == 0 else i % 100 - 50, f"t{i}", date(2024, 1, 1 + i % 28),
             datetime(2024, 1, 1, i % 24, 5, 7, 123_456), Decimal(i) / 100, i / 3, i)
            for i in range(20_000)]
    df = spark.createDataFrame(rows, f"k {kind}, s STRING, day DATE, ts TIMESTAMP, "
                                     "price DECIMAL(12, 2), x DOUBLE, n INT")
    with using(MAPPED):
        files = batch_files.written(df, "k", len(rows))
        assert files is not None
        converted = files.mapping["k"]
        assert converted is not None and converted.result() is not None
        values = pa.array([-50, 7, 49, 120, None], pa.int64())
        found = files.in_driver("k", values)
    assert found is not None and not decoded
    groups = files.groups["k"]
    assert groups is not None
    from_groups = groups.read(values)
    expected = normalized(to_arrow(files.matching("k", values))).sort_by("n")
    assert found.num_rows == (200 - 20) + 200 + 200 + 20 == expected.num_rows
    assert normalized(found).sort_by("n").equals(expected)
    assert normalized(from_groups).sort_by("n").equals(expected)
    assert files.in_driver("k", pa.array([1_000], pa.int64())).num_rows == 0  # type: ignore[union-attr]


def test_copies_are_mapped_only_when_large_in_key_order_and_keyed_by_integers(
        spark: SparkSession, tmp_path: Path) -> None:
    """No conversion for a copy of fewer than ``mapped_copy_rows`` rows nor one by text;
    files whose row groups' key ranges are out of order (not a copy arranged by the key)
    convert to nothing."""
    df = spark.range(12_000).selectExpr("CAST(id AS INT) AS k", "CAST(id AS STRING) AS s")
    (tmp_path / "shuffled").mkdir()
    keys = pa.array([(i * 7_919) % 12_000 for i in range(12_000)], pa.int32())
    pq.write_table(pa.table({"k": keys, "s": pc.cast(keys, pa.string())}),
                   tmp_path / "shuffled" / "part-0.parquet", row_group_size=1_000)
    shuffled = row_groups.row_groups(str(tmp_path / "shuffled"), "k", df.schema)
    assert shuffled is not None
    converted = mapped_copies.mapping(shuffled, 12_000, 0)
    assert converted is not None and converted.result() is None
    with using(MAPPED):
        files = batch_files.written(df, "k", 12_000)
        assert files is not None
        by_k = row_groups.row_groups(f"{files.directory}/by-k", "k", df.schema)
        assert by_k is not None and mapped_copies.mapping(by_k, 12_000, 12_001) is None
        in_order = mapped_copies.mapping(by_k, 12_000, 0)
        assert in_order is not None and in_order.result() is not None
        by_text = row_groups.row_groups(f"{files.directory}/by-k", "s", df.schema)
        assert by_text is not None and mapped_copies.mapping(by_text, 12_000, 0) is None


def test_a_copy_the_driver_maps_is_written_for_spark_and_read_once_converted(
        spark: SparkSession, decoded: list[int]) -> None:
    """A copy the driver will map is written in large row groups (Spark scans it whole
    fast, and skips pages by the column index), compressed; a driver read made before its
    conversion is done waits for it rather than decode those row groups; a copy converted
    before (a durable database opened again) is mapped from its files as they are."""
    df = spark.range(20_000).selectExpr("CAST(id % 5000 AS INT) AS k", "id AS n")
    release = threading.Event()
    with using(MAPPED):
        mapped_copies._converter().submit(release.wait)  # the conversion waits behind it
        files = batch_files.written(df, "k", 20_000)
        assert files is not None
        footers = [pq.read_metadata(f) for f in
                   sorted(Path(f"{files.directory}/by-k").glob("*.parquet"))]
        assert {footer.row_group(0).column(0).compression for footer in footers} == {"SNAPPY"}
        groups = files.groups["k"]
        assert groups is not None and groups.largest > batch_files.PAGE_ROWS
        read: list[pa.Table | None] = []
        reader = threading.Thread(target=lambda: read.append(
            files.in_driver("k", pa.array([3, 4_999], pa.int64()))))
        reader.start()
        reader.join(0.5)
        assert reader.is_alive() and not read  # waiting for the conversion
        release.set()
        reader.join()
        converted = files.mapping["k"]
        assert converted is not None and converted.result() is not None
        arrow = sorted(Path(f"{files.directory}/by-k.arrow").glob("*.arrow"))
        made = [f.stat().st_mtime_ns for f in arrow]
        again = mapped_copies.mapping(groups, 20_000, 0)
        assert again is not None and again.result() is not None
    assert [f.stat().st_mtime_ns for f in arrow] == made and arrow
    assert read[0] is not None and not decoded
    assert sorted(read[0]["n"].to_pylist()) == [3, 4_999, 5_003, 9_999, 10_003, 14_999,
                                                15_003, 19_999]
    assert again.result().read(pa.array([3], pa.int64())).num_rows == 4  # type: ignore[union-attr]


def test_a_views_steps_read_a_tables_mapped_copies(
        spark: SparkSession, decoded: list[int], tmp_path: Path) -> None:
    """Tables held in the executors: their copies (orders' by ``id``, which a delete's
    check reads) are converted as they are written; once done, steps moving customers and
    deleting orders decode no row group, and the view stays equal to its definition."""
    settings = {**IN_EXECUTORS, "keyed_read_rows": 1_000, "mapped_copy_rows": 0,
                "file_rows": 8_000}
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings=settings,
                          state_dir=tmp_path)
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id BIGINT, cust INT, amount BIGINT)")
    con.insert("customers", [(i, f"r{i % 7}") for i in range(3_000)])
    orders = {i: (i, i % 3_000, i % 97) for i in range(30_000)}
    con.insert("orders", list(orders.values()))
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n, "
                "sum(o.amount) AS total FROM orders o JOIN customers c ON o.cust = c.id "
                "GROUP BY c.region")
    regions = {i: f"r{i % 7}" for i in range(3_000)}

    def step(moved: int, deleted: list[int]) -> None:
        with con.transaction():
            con.delete("customers", [(moved, regions[moved])])
            regions[moved] = "moved"
            con.insert("customers", [(moved, "moved")])
            con.delete("orders", [orders.pop(i) for i in deleted])
        totals: dict[str, list[int]] = {}
        for _, cust, amount in orders.values():
            row = totals.setdefault(regions[cust], [0, 0])
            row[0] += 1
            row[1] += amount
        assert sorted(con.execute("SELECT * FROM v").fetchall()) == sorted(
            (region, n, total) for region, (n, total) in totals.items())

    step(5, [5, 17_005, 29_999])
    mapped_copies._converter().submit(lambda: None).result()  # every conversion begun
    trace = con._engine_for_use().catalog.entries["orders"].trace
    assert trace is not None and trace.batches[0].leaf.files is not None
    by_id = trace.batches[0].leaf.files.mapping["c0"]
    assert by_id is not None and by_id.result() is not None
    decoded.clear()
    step(7, [7, 12, 20_000])
    step(8, [8, 9, 10])
    assert not decoded
