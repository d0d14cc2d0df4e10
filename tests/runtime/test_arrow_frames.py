"""Arrow tables handed to the driver's JVM (``runtime.spark.arrow_frames``): every row
reaches Spark, also of a table put together from parts, some of them empty (Spark's reader of
an Arrow stream stops at an empty record batch, so ``arrow_file`` leaves them out)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
from matview.runtime.spark.arrow_frames import arrow_frame
from matview.runtime.spark.jvm_plans import to_arrow
from matview.runtime.spark.templates import slot_for
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.harness import IN_FILES

PARTS = pa.concat_tables([pa.table({"k": pa.array(k, pa.int64()), "s": pa.array(s, pa.string())})
                          for k, s in (([1], ["a"]), ([], []), ([2, 3], ["b", None]))])
"""Three rows in chunks of 1, 0 and 2 rows."""


def test_a_table_with_an_empty_chunk_reaches_spark_whole(spark: SparkSession) -> None:
    """As a local frame, and as the rows bound into a slot of text rows (read from an Arrow
    file by ``SlotRows.read``)."""
    assert [len(c) for c in PARTS["k"].chunks] == [1, 0, 2]
    assert sorted(map(tuple, arrow_frame(spark, PARTS).collect()), key=repr) == sorted(
        [(1, "a"), (2, "b"), (3, None)], key=repr)
    slot = slot_for([], spark, PARTS)
    assert slot is not None and not slot.fixed
    slot.bind(PARTS)
    assert to_arrow(slot.frame.select("k", "s")).sort_by("k").to_pylist() == [
        {"k": 1, "s": "a"}, {"k": 2, "s": "b"}, {"k": 3, "s": None}]


def test_a_text_keyed_state_read_with_an_empty_part_binds_every_row(
        spark: SparkSession) -> None:
    """A GROUP BY on text whose state is held in files, read by key: of a batch whose
    string statistics cannot rule the key out ('a' to 'c' for 'b') the read finds no row,
    an empty chunk before the next batch's rows. A slot of text rows is read from an Arrow
    file (``SlotRows.read``), and Spark's reader of its rows stops at an empty record batch:
    ``arrow_file`` leaves them out, else the state lost the later rows and the delete
    retracted a stale count."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings=IN_FILES)
    duck = duckdb.connect()
    view = "SELECT s, count(*) AS n FROM t GROUP BY s"
    for db in (con, duck):
        db.execute("CREATE TABLE t (k INT, s TEXT)")
    con.execute(f"CREATE MATERIALIZED VIEW m AS {view}")
    for statement in ["INSERT INTO t VALUES (1, 'b'), (2, 'a')",
                      "INSERT INTO t VALUES (3, 'a'), (4, 'c')",
                      "INSERT INTO t VALUES (5, 'b'), (6, 'c')", "DELETE FROM t WHERE k = 1"]:
        con.execute(statement)
        duck.execute(statement)
        assert sorted(con.execute("SELECT * FROM m").fetchall()) == sorted(
            duck.execute(view).fetchall()), statement
