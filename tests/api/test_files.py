"""Files in and out (``matview/files.py``, ``matview/sinks.py``): ``COPY ... FROM | TO 'path'``
in CSV and Parquet, ``CREATE TABLE ... AS``, ``CREATE SINK ... INTO PARQUET | DELTA``, results
as pandas, Arrow and Spark, and paths confined to the directories a connection allows
(issue 17, item 3)."""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal
from pathlib import Path
from uuid import UUID

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import matview
from matview.server import serve

KINDS = ("(i INT, b BIGINT, n NUMERIC(10,2), f DOUBLE, s TEXT, ok BOOLEAN, d DATE, ts TIMESTAMP, "
         "tz TIMESTAMPTZ, tm TIME, by BYTEA, u UUID, tt TIMETZ)")
_LATER = (dt.datetime(2024, 1, 2, 1, 4, 5, 600000, tzinfo=dt.UTC), dt.time(7, 8, 9, 500000),
          b"\x00\xff,\n", UUID(int=7),
          dt.time(23, 0, 0, 250000, tzinfo=dt.timezone(-dt.timedelta(hours=5, minutes=30))))
ROWS = [
    (1, 10**12, Decimal("1.50"), 0.25, "", True, dt.date(2024, 1, 2),
     dt.datetime(2024, 1, 2, 3, 4, 5, 600000), *_LATER),
    (None, None, None, None, None, None, None, None, None, None, None, None, None),
    (3, -7, Decimal("-2.25"), -1e300, 'comma, "quote"\nnewline', False, dt.date(1999, 12, 31),
     dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
     dt.time(0, 0), b"", UUID(int=0), dt.time(0, 0, tzinfo=dt.UTC)),
    (3, -7, Decimal("-2.25"), -1e300, 'comma, "quote"\nnewline', False, dt.date(1999, 12, 31),
     dt.datetime(1999, 12, 31, 23, 59, 59), dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.UTC),
     dt.time(0, 0), b"", UUID(int=0), dt.time(0, 0, tzinfo=dt.UTC)),  # a duplicate: two rows
]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


@pytest.fixture()
def con(spark: SparkSession, folder: Path) -> matview.Connection:  # noqa: F811
    connection = matview.connect(clock=0, spark=spark, files=[folder])
    connection.execute(f"CREATE TABLE t {KINDS}")
    connection.insert("t", ROWS)
    return connection


def rows(con: matview.Connection, sql: str) -> list[tuple[object, ...]]:
    return sorted(con.execute(sql).fetchall(), key=repr)


@pytest.mark.parametrize("options, name", [
    ("(FORMAT csv)", "t.csv"),
    ("(FORMAT csv, HEADER, DELIMITER ';')", "t.txt"),
    ("(FORMAT parquet)", "t.parquet"),
])
def test_copy_round_trips(con: matview.Connection, folder: Path, options: str,
                          name: str) -> None:
    """Every type, NULLs and empty strings apart, quotes, delimiters and newlines in text,
    duplicates: written, read back into a table of the same columns, equal; a view over the
    loaded table sees the rows (COPY FROM is a write)."""
    assert con.execute(f"COPY t TO '{folder / name}' {options}").rowcount == 4
    con.execute(f"CREATE TABLE back {KINDS}")
    con.execute("CREATE MATERIALIZED VIEW seen AS SELECT count(*), count(s), sum(i) FROM back")
    assert con.execute(f"COPY back FROM '{folder / name}' {options}").rowcount == 4
    assert rows(con, "SELECT * FROM back") == rows(con, "SELECT * FROM t")
    assert con.execute("SELECT * FROM seen").fetchall() == [(4, 3, 7)]


def test_csv_as_postgresql_writes_it(con: matview.Connection, folder: Path) -> None:
    """An unquoted empty field is NULL, a quoted one the empty string; a header line; the
    NULL text on reading; a column list fills the others with NULL."""
    con.execute(f"COPY (SELECT i, s FROM t WHERE i = 1 OR i IS NULL) TO '{folder}/q.csv' "
                "(FORMAT csv, HEADER)")
    assert sorted((folder / "q.csv").read_text().splitlines()) == ['"i","s"', ",", '1,""']
    con.execute(f"COPY (SELECT tz, tm, by, tt FROM t WHERE i = 1) TO '{folder}/z.csv' "
                "(FORMAT csv)")
    assert (folder / "z.csv").read_text() == \
        '"2024-01-02 01:04:05.600000+00","07:08:09.5","\\x00ff2c0a","23:00:00.25-05:30"\n'
    (folder / "z.csv").write_text("2024-06-01 12:00:00-05,23:59:59,\\x00ff,1:02+0100\n")
    con.execute("CREATE TABLE zoned (tz TIMESTAMPTZ, tm TIME, by BYTEA, tt TIMETZ)")
    con.execute(f"COPY zoned FROM '{folder}/z.csv' (FORMAT csv)")  # an offset, PostgreSQL's
    assert rows(con, "SELECT * FROM zoned") == [
        (dt.datetime(2024, 6, 1, 17, tzinfo=dt.UTC), dt.time(23, 59, 59), b"\x00\xff",
         dt.time(1, 2, tzinfo=dt.timezone(dt.timedelta(hours=1))))]
    (folder / "in.csv").write_text("5|-\n6|x\n")
    con.execute("CREATE TABLE two (s TEXT, i INT, other DATE)")
    con.execute(f"COPY two (i, s) FROM '{folder}/in.csv' (FORMAT csv, DELIMITER '|', NULL '-')")
    assert rows(con, "SELECT * FROM two") == [("x", 6, None), (None, 5, None)]


def test_a_bad_value_fails_the_copy_and_inserts_nothing(con: matview.Connection,
                                                        folder: Path) -> None:
    (folder / "bad.csv").write_text("1,a\nzz,b\n")
    con.execute("CREATE TABLE p (i INT, s TEXT)")
    with pytest.raises(matview.DataError, match="invalid value 'zz'"):
        con.execute(f"COPY p FROM '{folder}/bad.csv' (FORMAT csv)")
    with pytest.raises(matview.DataError, match="could not open file"):
        con.execute(f"COPY p FROM '{folder}/missing.csv' (FORMAT csv)")
    assert con.execute("SELECT count(*) FROM p").fetchall() == [(0,)]
    with con.transaction():  # COPY FROM is a write: it may join a transaction
        (folder / "good.csv").write_text("7,z\n")
        con.execute(f"COPY p FROM '{folder}/good.csv' (FORMAT csv)")
        con.execute("INSERT INTO p VALUES (8, 'y')")
    assert rows(con, "SELECT * FROM p") == [(7, "z"), (8, "y")]


def test_parquet_files_hold_names_and_types(con: matview.Connection, folder: Path) -> None:
    con.execute(f"COPY (SELECT i AS id, s FROM t WHERE i = 3) TO '{folder}/q.parquet' "
                "(FORMAT parquet)")
    table = pq.read_table(folder / "q.parquet")
    assert table.column_names == ["id", "s"] and table.num_rows == 2
    assert str(table.schema.field("id").type) == "int32"


@pytest.mark.parametrize("path, message", [
    ("/etc/passwd", "outside the directories"),
    ("{folder}/../escape.csv", "outside the directories"),
    ("{folder}/link/x.csv", "outside the directories"),  # a symbolic link out of the folder
])
def test_paths_are_confined(con: matview.Connection, folder: Path, path: str,
                            message: str) -> None:
    (folder / "link").symlink_to(folder.parent)
    with pytest.raises(matview.ProgrammingError, match=message):
        con.execute(f"COPY t TO '{path.format(folder=folder)}' (FORMAT csv)")
    assert not (folder.parent / "escape.csv").exists() and not (folder.parent / "x.csv").exists()


def test_no_directory_no_files(spark: SparkSession, tmp_path: Path) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    with pytest.raises(matview.ProgrammingError, match="allows no directory"):
        con.execute(f"COPY t TO '{tmp_path}/t.csv' (FORMAT csv)")
    with pytest.raises(matview.ProgrammingError, match="is not a directory"):
        matview.connect(clock=0, spark=spark, files=[tmp_path / "missing"])


@pytest.mark.parametrize("sql, error, message", [
    ("COPY t TO '{folder}/t.txt'", matview.NotSupportedError, "FORMAT text is not supported"),
    ("COPY t FROM STDIN", matview.NotSupportedError, "matview serve"),
    ("COPY t TO '{folder}/t.csv' (FORMAT parquet, HEADER)", matview.ProgrammingError,
     "apply to FORMAT csv only"),
    ("COPY t (nope) FROM '{folder}/t.csv' (FORMAT csv)", matview.ProgrammingError,
     'column "nope" of relation "t" does not exist'),
    ("COPY t TO '{folder}/t.csv' (FORMAT csv, NULL 'x')", matview.ProgrammingError,
     "NULL for COPY TO a file is not supported yet"),
])
def test_copy_misuse(con: matview.Connection, folder: Path, sql: str,
                     error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        con.execute(sql.format(folder=folder))


def test_create_table_as(con: matview.Connection) -> None:
    """The query's columns (renamed by a list) and types, its rows; a query that fails
    creates nothing; the new table is a table (written, read by views)."""
    con.execute("CREATE TABLE c (k, total) AS SELECT i, sum(b) FROM t GROUP BY i")
    assert [c[0] for c in con.execute("SELECT * FROM c").description] == ["k", "total"]
    assert con.execute("SHOW COLUMNS FROM c").fetchall()[:2] == [("k", "int"),
                                                                 ("total", "numeric(38,0)")]
    assert rows(con, "SELECT * FROM c") == [(1, 10**12), (3, -14), (None, None)]
    with pytest.raises(matview.DataError, match="division by zero"):
        con.execute("CREATE TABLE z AS SELECT i / 0 AS q FROM t WHERE i = 1")
    assert con.execute("SHOW TABLES").fetchall() == [("c",), ("t",)]
    con.execute("CREATE TABLE IF NOT EXISTS c AS SELECT 1 AS one")  # exists: nothing done
    con.execute("CREATE MATERIALIZED VIEW big AS SELECT k FROM c WHERE total > 0")
    con.execute("INSERT INTO c VALUES (9, 9)")
    assert rows(con, "SELECT * FROM big") == [(1,), (9,)]


def test_results_as_pandas_arrow_and_spark(con: matview.Connection) -> None:
    cursor = con.execute("SELECT i, s FROM t WHERE i = 1")
    assert cursor.fetch_df().to_dict("records") == [{"i": 1, "s": ""}]
    assert cursor.fetch_arrow().to_pylist() == [{"i": 1, "s": ""}]
    assert [tuple(r) for r in cursor.fetch_spark().collect()] == [(1, "")]
    assert con.execute("CREATE TABLE e (a INT)").fetch_df() is None
    # a NULL in a BIGINT, BOOLEAN or DOUBLE column is pd.NA in a nullable column
    frame = con.execute("SELECT CAST(i AS BIGINT) AS b, i = 1 AS ok, CAST(i AS DOUBLE) AS d "
                        "FROM (VALUES (1), (NULL)) AS v(i)").fetch_df()
    assert [str(t) for t in frame.dtypes] == ["Int64", "boolean", "Float64"]
    assert frame["b"].tolist()[0] == 1 and frame.isna().sum().tolist() == [1, 1, 1]


def test_copy_through_the_server(spark: SparkSession, folder: Path) -> None:
    """A PostgreSQL client's COPY to and from a server file runs in the engine, confined to
    the server connection's directories."""
    server = serve(matview.connect(clock=None, spark=spark, files=[folder]), port=0)
    try:
        with psycopg.connect(host="127.0.0.1", port=server.port, user="u", dbname="m",
                             autocommit=True) as conn:
            conn.execute("CREATE TABLE s (a INT, b TEXT)")
            conn.execute("INSERT INTO s VALUES (1, 'x'), (2, NULL)")
            conn.execute(f"COPY s TO '{folder}/s.csv' (FORMAT csv)")
            conn.execute("CREATE TABLE s2 (a INT, b TEXT)")
            conn.execute(f"COPY s2 FROM '{folder}/s.csv' (FORMAT csv)")
            assert sorted(conn.execute("SELECT * FROM s2").fetchall(), key=repr) == [
                (1, "x"), (2, None)]
            with pytest.raises(psycopg.Error, match="outside the directories"):
                conn.execute("COPY s TO '/tmp/escape.csv' (FORMAT csv)")
    finally:
        server.close()


def replayed(table: pa.Table) -> list[tuple[object, ...]]:
    """The contents a sink's rows replay to: each row as often as its summed ``mz_diff``."""
    columns = [c for c in table.column_names if c not in ("mz_timestamp", "mz_diff")]
    totals: dict[tuple[object, ...], int] = {}
    for row in table.to_pylist():
        key = tuple(row[c] for c in columns)
        totals[key] = totals.get(key, 0) + row["mz_diff"]
    assert all(n >= 0 for n in totals.values()), totals
    return sorted((k for k, n in totals.items() for _ in range(n)), key=repr)


def sink_rows(folder: Path, kind: str) -> pa.Table:
    if kind == "delta":
        return DeltaTable(str(folder)).to_pyarrow_table()
    return pa.concat_tables([pq.read_table(f) for f in sorted(folder.glob("*.parquet"))])


@pytest.mark.parametrize("kind", ["parquet", "delta"])
def test_a_sinks_files_replay_to_the_view(spark: SparkSession, folder: Path, kind: str) -> None:
    """After every write (single statements and transactions, inserts, deletes and updates)
    the sink's files, replayed, equal the view; each batch's times are after the last's."""
    rng = random.Random(7)
    con = matview.connect(clock=0, spark=spark, files=[folder])
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.execute("INSERT INTO t VALUES (1, 10), (2, 20), (2, 20)")
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT k, count(*), sum(v) FROM t GROUP BY k")
    con.execute(f"CREATE SINK s FROM v INTO {kind.upper()} '{folder}/s'")
    for _ in range(8):
        roll = rng.random()
        if roll < 0.4:
            con.execute(f"INSERT INTO t VALUES ({rng.randint(1, 4)}, {rng.randint(1, 9)})")
        elif roll < 0.6:
            con.execute(f"DELETE FROM t WHERE k = {rng.randint(1, 4)}")
        elif roll < 0.8:
            con.execute(f"UPDATE t SET v = v + 1 WHERE k = {rng.randint(1, 4)}")
        else:
            with con.transaction():
                con.execute("INSERT INTO t VALUES (5, 1)")
                con.execute("INSERT INTO t VALUES (5, 2)")
        assert replayed(sink_rows(folder / "s", kind)) == rows(con, "SELECT * FROM v")
    times = sink_rows(folder / "s", kind).column("mz_timestamp").to_pylist()
    assert len(set(times)) > 1
    if kind == "parquet":  # the files' names sort in time order
        assert times == sorted(times)
    else:  # one Delta commit per batch
        assert DeltaTable(str(folder / "s")).version() + 1 == len(set(times))
    with pytest.raises(matview.ProgrammingError, match='sink "s" reads it'):
        con.execute("DROP MATERIALIZED VIEW v")
    con.execute("DROP SINK s")
    con.execute("DROP MATERIALIZED VIEW v")


@pytest.mark.parametrize("sql, error, message", [
    ("CREATE SINK x FROM t INTO KAFKA '{folder}/x'", matview.NotSupportedError,
     "INTO PARQUET or INTO DELTA"),
    ("CREATE SINK x FROM nope INTO PARQUET '{folder}/x'", matview.ProgrammingError,
     'relation "nope" does not exist'),
    ("CREATE SINK x FROM t INTO PARQUET '/tmp/elsewhere'", matview.ProgrammingError,
     "outside the directories"),
    ("CREATE SINK x FROM t INTO PARQUET '{folder}'", matview.ProgrammingError,
     "needs an empty or new directory"),
    ("DROP SINK nope", matview.ProgrammingError, 'sink "nope" does not exist'),
])
def test_sink_misuse(con: matview.Connection, folder: Path, sql: str, error: type[Exception],
                     message: str) -> None:
    (folder / "taken.csv").write_text("")
    with pytest.raises(error, match=message):
        con.execute(sql.format(folder=folder))
