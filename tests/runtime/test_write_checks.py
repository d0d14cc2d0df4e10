"""The check that no write makes a multiplicity negative, on tables whose rows are held in
Spark (past ``driver_batch_rows``, with a driver copy or without) as well as in the driver:
``con.delete`` of rows a table does not hold is a DataError that changes nothing, whatever
batches hold its copies."""

from __future__ import annotations

import pyarrow as pa
import pytest
from matview.runtime.settings import DEFAULTS

import matview

ROWS = DEFAULTS.driver_batch_rows + 1_000


@pytest.fixture(params=["driver copies", "spark only"])
def settings(request: pytest.FixtureRequest) -> dict[str, int]:
    """Tables created in the test keep a driver copy of the batches they hold in Spark (a
    delete is checked in Arrow), or none (it is checked with a Spark job)."""
    return {"table_copy_rows": 0} if request.param == "spark only" else {}


def _rows(keys: list[int], note: str | None = "n") -> pa.Table:
    return pa.table({"a": pa.array(keys, pa.int32()), "b": pa.array([note] * len(keys))})


def test_deletes_are_checked_against_rows_held_in_spark_and_in_the_driver(
        con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE TABLE big (a INT, b TEXT)")
    con.insert("big", _rows(list(range(ROWS))))  # held in Spark
    con.insert("big", _rows([1, 2], None))  # held in the driver, NULLs included
    assert con.delete("big", _rows([5])) == 1
    # 5's retraction is held in the driver, its insertion in Spark: deleting another row
    # must not count 5 as missing, and deleting 5 again must
    assert con.delete("big", _rows([7, 8])) == 2
    with pytest.raises(matview.DataError, match=r"cannot delete \(5, 'n'\)"):
        con.delete("big", _rows([6, 5]))
    with pytest.raises(matview.DataError, match="cannot delete"):
        con.delete("big", _rows([9, 9]))  # two copies of a row held once
    with pytest.raises(matview.DataError, match="cannot delete"):
        con.delete("big", _rows([ROWS + 5]))  # never held
    assert con.delete("big", _rows([1], None)) == 1
    with pytest.raises(matview.DataError, match=r"cannot delete \(1, None\)"):
        con.delete("big", _rows([1], None))
    # nothing was changed by the failed deletes
    assert con.execute("SELECT count(*), count(b) FROM big").fetchall() == [
        (ROWS + 2 - 4, ROWS - 3)]
    assert con.execute("SELECT count(*) FROM big WHERE a IN (5, 6, 7, 8, 9)").fetchall() == [
        (2,)]


def test_deletes_in_a_transaction_count_its_staged_writes(
        con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE TABLE big (a INT, b TEXT)")
    con.insert("big", _rows(list(range(ROWS))))
    with con.transaction():
        con.delete("big", _rows([3]))
        with pytest.raises(matview.DataError, match=r"cannot delete \(3, 'n'\)"):
            con.delete("big", _rows([3]))
        con.insert("big", _rows([3]))
        assert con.delete("big", _rows([3])) == 1
    assert con.execute("SELECT count(*) FROM big WHERE a = 3").fetchall() == [(0,)]


@pytest.mark.parametrize("types, key", [
    ("a BIGINT, b DOUBLE", lambda i: None if i % 7 == 0 else 2**40 + i),  # probed by a
    ("a TEXT, b DOUBLE", lambda i: None if i % 7 == 0 else f"o'k\\{i}"),  # probed by a
    ("a DATE, b DOUBLE", lambda i: None if i % 7 == 0 else  # no column to probe by
     __import__("datetime").date(2000, 1, 1) + __import__("datetime").timedelta(days=i)),
])
def test_deletes_of_rows_held_in_spark_find_every_copy_whatever_the_column_types(
        con, types, key) -> None:  # type: ignore[no-untyped-def]
    con.execute(f"CREATE TABLE t ({types})")
    a_type = {"BIGINT": pa.int64(), "TEXT": pa.string(), "DATE": pa.date32()}[types.split()[1]
                                                                               .rstrip(",")]

    def rows(ids: list[int], b: float | None = 1.5) -> pa.Table:
        return pa.table({"a": pa.array([key(i) for i in ids], a_type),
                         "b": pa.array([b] * len(ids), pa.float64())})

    con.insert("t", rows(list(range(ROWS))))  # held in Spark; rows 0, 7, 14, ... have a NULL
    assert con.delete("t", rows([0, 3, 4])) == 3
    with pytest.raises(matview.DataError, match="cannot delete"):
        con.delete("t", rows([5, 3]))  # 3 was deleted
    with pytest.raises(matview.DataError, match="cannot delete"):
        con.delete("t", rows([5], 2.5))  # a held, b not
    nulls = len(range(0, ROWS, 7)) - 1  # copies of (NULL, 1.5) held
    with pytest.raises(matview.DataError, match="cannot delete"):
        con.delete("t", rows([7] * (nulls + 1)))
    assert con.delete("t", rows([7, 14, 6])) == 3
    assert con.execute("SELECT count(*), count(a) FROM t").fetchall() == [
        (ROWS - 6, ROWS - 6 - (nulls - 2))]
    held = con.execute("SELECT * FROM t").fetchall()
    assert len(held) == ROWS - 6 and held.count((key(22), 1.5)) == 1
