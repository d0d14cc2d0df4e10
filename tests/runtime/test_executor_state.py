"""Collections held in the executors: their batches are Parquet files in the state
directory, arranged by key (``arrangements.batch_files``), and read by key: a join's lookup
of a step's keys, and a write's check of the rows it retracts, read only the pages of those
keys, by the driver itself where it can (``arrangements.row_groups``). Two views looking a
table up by the same key share its one copy arranged by it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matview.runtime.arrangements import batch_files, row_groups
from matview.runtime.arrangements.batch_files import PAGE_ROWS, BatchFiles, KeyedPart
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import normalized
from matview.runtime.settings import DEFAULTS, using
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import is_remote

import matview

ORDERS = DEFAULTS.driver_batch_rows + 10_000
"""Orders enough that the table's batch is held in the executors."""

SETTINGS = {"table_copy_rows": 0, "view_copy_rows": 0, "keyed_read_rows": 1_000,
            "file_rows": 10_000, "rehearsal_rows": 0}
"""No driver copies; batches of more than 1,000 rows read by key, in files of 10,000; no
rehearsal at CREATE (the tests count the reads of the steps after it)."""


class Reads:
    """Every keyed read of a batch's files (key, values) and every copy written (key)."""

    def __init__(self) -> None:
        self.matched: list[tuple[str, list[object]]] = []
        self.written: list[str | None] = []


@pytest.fixture()
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[Reads]:
    seen = Reads()
    read_by_key, written = BatchFiles.read_by_key, batch_files._written

    def spy_read(self: BatchFiles, key: str, values: pa.Array) -> KeyedPart:
        part = read_by_key(self, key, values)
        if part.keys:  # its files read
            seen.matched.append((key, sorted(part.values.to_pylist())))
        return part

    def spy_written(spark: SparkSession, df: DataFrame, rows: int | None, directory: str,
                    key: str | None) -> tuple[DataFrame, dict[str, object]]:
        seen.written.append(key)
        return written(spark, df, rows, directory, key)

    monkeypatch.setattr(BatchFiles, "read_by_key", spy_read)
    monkeypatch.setattr(batch_files, "_written", spy_written)
    yield seen


def _connect(spark: SparkSession, state_dir: Path | None = None) -> matview.Connection:
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings=SETTINGS,
                          state_dir=state_dir)
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("customers", [(i, f"r{i % 7}") for i in range(3_000)])
    con.insert("orders", [(i, i % 3_000, i % 97) for i in range(ORDERS)])
    return con


def _scanned(frame: DataFrame) -> int:
    """The rows the file scans of ``frame``'s last run decoded (its plan's scan metrics)."""
    found = []

    def walk(node: Any) -> None:
        if node.nodeName().startswith("Scan parquet"):
            found.append(node.metrics().apply("numOutputRows").value())
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(frame._jdf.queryExecution().executedPlan())
    return sum(found)


def _trace(con: matview.Connection, name: str) -> Trace:
    trace = con._engine_for_use().catalog.entries[name].trace
    assert trace is not None
    return trace


VIEW = ("SELECT c.region, count(*) AS n, sum(o.amount) AS total FROM orders o "
        "JOIN customers c ON o.cust = c.id GROUP BY c.region")


def _expected(moved: dict[int, str]) -> list[tuple[object, ...]]:
    totals: dict[str, list[int]] = {}
    for i in range(ORDERS):
        region = moved.get(i % 3_000, f"r{i % 3_000 % 7}")
        row = totals.setdefault(region, [0, 0])
        row[0] += 1
        row[1] += i % 97
    return sorted((region, n, total) for region, (n, total) in totals.items())


def test_a_join_step_reads_only_its_keys_pages_of_a_batch_held_in_files(
        spark: SparkSession, reads: Reads, tmp_path: Path) -> None:
    """orders' batch is written in the state directory arranged by its first column (its
    writes' key); the view's join arranges it by ``cust`` too when it is created, and a step
    moving two customers reads, of orders, only the pages of those customers' rows."""
    con = _connect(spark, tmp_path)
    assert reads.written == ["c0"]
    con.execute(f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    assert reads.written == ["c0", "c1"] and not reads.matched
    orders = _trace(con, "orders")
    [batch] = orders.batches
    assert batch.leaf.in_driver is None and batch.leaf.files is not None
    assert set(batch.leaf.files.copies) == {"c0", "c1"} and orders.keys == ["c0", "c1"]
    assert batch.leaf.files.directory.startswith(str(tmp_path))
    assert any(p.suffix == ".parquet" for p in tmp_path.rglob("*"))
    # written without Hadoop's checksum files, which a keyed read would read beside each page
    assert not any(p.suffix == ".crc" for p in tmp_path.rglob("*"))
    with con.transaction():
        for cust in (5, 1_234):
            con.delete("customers", [(cust, f"r{cust % 7}")])
            con.insert("customers", [(cust, "moved")])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == _expected(
        {5: "moved", 1_234: "moved"})
    assert reads.matched == [("c1", [5, 1_234])]
    frame = batch.leaf.files.matching("c1", pa.array([5, 1_234]))  # the read in Spark
    found = frame.collect()
    assert len(found) == 2 * ORDERS // 3_000 and {r.c1 for r in found} == {5, 1_234}
    if not is_remote():  # the scan decodes the two keys' pages only
        assert 0 < _scanned(frame) <= 2 * PAGE_ROWS + 2 * ORDERS // 3_000
    assert reads.written == ["c0", "c1"]  # no copy made by the step
    # EXPLAIN ANALYZE tells where orders is held, by what, and what the step read of it: one
    # batch by key, in 2 of its 3 files (customers 5 and 1,234), about a page per key
    [text] = con.execute("EXPLAIN ANALYZE MATERIALIZED VIEW v").fetchone()
    [line] = [x for x in text.splitlines() if "arrangement orders:" in x]
    assert line.strip().endswith("held=executors keys=c0,c1 read: 1 by key (files~2 pages~2), "
                                 "0 whole (0 rows), 0 remembered, 1 in the driver"), line


def test_two_views_looking_a_table_up_by_one_key_share_its_copy(
        spark: SparkSession, reads: Reads) -> None:
    """A second view joining orders on ``cust`` reads the copy the first one's join
    arranged: no second copy is written, and the files are read by key once: the rows the
    first view's lookup fetched, the batch remembers, and the second view's lookup of the
    same key picks them in Arrow."""
    con = _connect(spark)
    con.execute(f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    con.execute("CREATE MATERIALIZED VIEW big AS SELECT c.id, max(o.amount) AS most "
                "FROM customers c JOIN orders o ON c.id = o.cust WHERE c.id < 10 "
                "GROUP BY c.id")
    assert reads.written == ["c0", "c1"]
    con.delete("customers", [(3, "r3")])
    con.insert("customers", [(3, "moved")])
    assert sorted(con.execute("SELECT * FROM big").fetchall()) == [
        (i, max(j % 97 for j in range(i, ORDERS, 3_000))) for i in range(10)]
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == _expected({3: "moved"})
    assert reads.matched == [("c1", [3])]
    [batch] = _trace(con, "orders").batches
    assert batch.leaf.files is not None and set(batch.leaf.files.copies) == {"c0", "c1"}
    assert batch.leaf.files.found is not None
    key, values, rows = batch.leaf.files.found
    assert (key, values.to_pylist(), rows.num_rows) == ("c1", [3], len(range(3, ORDERS, 3_000)))
    assert _trace(con, "orders").file_reads.remembered == 1


def test_a_delete_is_checked_by_key_against_a_batch_held_in_files(
        spark: SparkSession, reads: Reads) -> None:
    """A delete's check that the table holds the rows it retracts reads, of orders' batch
    held in files, only the deleted ids' rows, which the batch remembers: a check of some
    of those ids again picks them in Arrow, of others reads the files again. A row the
    table does not hold fails the delete and changes nothing."""
    con = _connect(spark)
    con.delete("orders", [(7, 7, 7), (9_000, 0, 9_000 % 97)])
    assert reads.matched == [("c0", [7, 9_000])]
    with pytest.raises(matview.Error, match="does not hold"):
        con.delete("orders", [(7, 7, 7)])  # deleted already: found in what was read
    assert reads.matched == [("c0", [7, 9_000])]
    with pytest.raises(matview.Error, match="does not hold"):
        con.delete("orders", [(8, 8, 0)])  # order 8's amount is 8
    assert reads.matched == [
        ("c0", [7, 9_000]), ("c0", [8])]
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(ORDERS - 2,)]
    # two checks read the batch by its ids (2 keys, then 1), one picked what the first
    # read: in EXPLAIN ANALYZE's figures
    assert _trace(con, "orders").file_reads == batch_files.FileReads(
        by_key=2, files=3, pages=3, remembered=1, in_driver=2)


def test_a_delete_is_checked_by_the_key_expected_to_read_fewest_rows(
        spark: SparkSession, reads: Reads) -> None:
    """A table arranged by two keys (its first column, and the one a view joins on) is
    checked by the key whose values among the deleted rows find the fewest rows: the
    deleted lines of one order hold 4 parts (6 lines each) but one order (4 lines), so the
    check reads the order's lines, not the parts' (the column of most distinct values)."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings=SETTINGS)
    con.execute("CREATE TABLE lines (o INT, part INT, q INT)")
    con.execute("CREATE TABLE parts (id INT)")
    con.insert("lines", [(i // 4, i % 5_000, i) for i in range(ORDERS)])
    con.insert("parts", [(i,) for i in range(5_000)])
    con.execute("CREATE MATERIALIZED VIEW per_part AS SELECT p.id, count(*) AS n "
                "FROM lines l JOIN parts p ON l.part = p.id GROUP BY p.id")
    [batch] = _trace(con, "lines").batches
    assert batch.leaf.files is not None and set(batch.leaf.files.copies) == {"c0", "c1"}
    assert con.delete("lines", [(5, i, i) for i in range(20, 24)]) == 4
    assert reads.matched == [("c0", [5])]
    assert sorted(con.execute("SELECT * FROM per_part WHERE id < 25").fetchall()) == [
        (i, ORDERS // 5_000 - (20 <= i < 24)) for i in range(25)]


def test_a_lookup_of_keys_beyond_a_batch_reads_none_of_its_files(
        spark: SparkSession, reads: Reads) -> None:
    """A batch knows the least and greatest value of each key it is arranged by: a lookup
    of a key outside them (a new customer's orders) reads none of its files."""
    con = _connect(spark)
    con.execute(f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    con.insert("customers", [(9_999, "r0")])
    con.insert("orders", [(ORDERS, 9_999, 5)])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == sorted(
        (region, n + (region == "r0"), total + 5 * (region == "r0"))
        for region, n, total in _expected({}))
    assert reads.matched == []
    held = _trace(con, "orders").batches[0].leaf.files
    assert held is not None and held.bounds["c1"] == (0, 2_999)


def test_the_driver_reads_a_lookups_keys_row_groups_of_a_batch_held_in_files(
        spark: SparkSession, decoded: list[int], monkeypatch: pytest.MonkeyPatch) -> None:
    """A keyed read the step fetches is made by the driver itself, with no Spark job: of
    the copy arranged by the key, it decodes only the row groups (``PAGE_ROWS`` rows each)
    whose key range may hold one of the keys, found in the files' footers (LZ4-compressed
    pages: as fast to decode as uncompressed ones, for 0.6x the bytes; Parquet's second
    version, whose order ids are delta-encoded: ``ENCODED``). Where the driver cannot read
    the files (here: told so), the same read is a Spark job's."""
    con = _connect(spark)
    con.execute(f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    with con.transaction():
        con.delete("customers", [(5, "r5")])
        con.insert("customers", [(5, "moved")])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == _expected({5: "moved"})
    # customer 5: ten orders, in one row group of 1,000 rows (or two) of 30
    assert 1 <= len(decoded) <= 2 and ORDERS // PAGE_ROWS >= 30
    assert _trace(con, "orders").file_reads.in_driver == 1
    files = _trace(con, "orders").batches[0].leaf.files
    assert files is not None
    footers = [pq.read_metadata(f) for f in Path(f"{files.directory}/by-c1").glob("*.parquet")]
    assert {footer.row_group(0).column(0).compression for footer in footers} == {"LZ4"}
    assert all("DELTA_BINARY_PACKED" in footer.row_group(0).column(0).encodings
               for footer in footers)
    monkeypatch.setattr(batch_files, "row_groups", lambda *_: None)
    [batch] = _trace(con, "orders").batches
    assert batch.leaf.files is not None
    batch.leaf.files.groups.clear()
    with con.transaction():
        con.delete("customers", [(7, "r0")])
        con.insert("customers", [(7, "moved")])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == _expected(
        {5: "moved", 7: "moved"})
    assert _trace(con, "orders").file_reads.in_driver == 1


def test_the_driver_reads_rows_of_every_type_by_text_and_null_keys(
        spark: SparkSession, decoded: list[int]) -> None:
    """Rows the driver reads from a copy's files equal those Spark reads from them, typed
    as Spark hands them out (text, dates, timestamps, decimals, doubles): by a text key,
    NULL among the keys finding the rows that hold NULL."""
    rows = [(None if i % 1_000 == 0 else f"k{i % 2_000:05d}", i, date(2024, 1, 1 + i % 28),
             datetime(2024, 1, 1, i % 24, 5, 7, 123_456), Decimal(i) / 100, i / 3)
            for i in range(20_000)]
    df = spark.createDataFrame(rows, "k STRING, n INT, day DATE, ts TIMESTAMP, "
                                     "price DECIMAL(12, 2), x DOUBLE")
    files = batch_files.written(df, "k", len(rows))
    assert files is not None
    values = pa.array(["k00007", "k01999", "zzz", None])
    found = files.in_driver("k", values)
    assert found is not None and decoded and len(decoded) < 20_000 // PAGE_ROWS // 2
    expected = to_arrow(files.matching("k", values))
    assert found.num_rows == 10 + 10 + 20
    assert normalized(found).sort_by("n").equals(normalized(expected).sort_by("n"))


def test_the_driver_keeps_the_footers_of_the_files_it_read_last(
        spark: SparkSession) -> None:
    """The footers of the files the driver read keep parsed, the last read kept longest, up
    to ``footer_rows`` rows of them; with none kept, every read parses the footers it needs
    again and finds the same rows."""
    df = spark.range(12_000).selectExpr("CAST(id AS INT) AS k", "id * 2 AS v")
    with using(DEFAULTS.replaced({"file_rows": 4_000, "footer_rows": 11_999})):
        files = batch_files.written(df, "k", 12_000)
        assert files is not None
        row_groups._footers.clear()
        found = files.in_driver("k", pa.array([1, 5_000, 11_999]))
        assert found is not None and sorted(found["v"].to_pylist()) == [2, 10_000, 23_998]
        # three files: the footer of the one read first (key 1's) gave way
        [first, second] = row_groups._footers
        assert sum(f.num_rows for f in row_groups._footers.values()) <= 11_999
        assert files.in_driver("k", pa.array([11_998])) is not None
        assert list(row_groups._footers) == [first, second]
        assert files.in_driver("k", pa.array([2])) is not None
        assert list(row_groups._footers)[-1] not in (first, second)
    with using(DEFAULTS.replaced({"footer_rows": 0})):
        found = files.in_driver("k", pa.array([1, 5_000, 11_999]))
        assert found is not None and sorted(found["v"].to_pylist()) == [2, 10_000, 23_998]
        assert not row_groups._footers
