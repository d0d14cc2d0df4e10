"""Every exception leaving the public API is a DB-API exception of the right class, with a
message, and a failed statement changes nothing: a table of bad inputs, each driven through
the public API against one connection whose contents are checked after every case."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

import matview
from matview.connection import Connection

Case = tuple[str, Callable[[Connection], object], type[matview.Error], str]

CASES: list[Case] = [
    ("syntax error", lambda c: c.execute("SELEC 1"), matview.ProgrammingError, "syntax"),
    ("unknown table", lambda c: c.execute("SELECT * FROM nope"), matview.ProgrammingError,
     "nope"),
    ("unknown column", lambda c: c.execute("SELECT zz FROM t"), matview.ProgrammingError, "zz"),
    ("two statements", lambda c: c.execute("SELECT 1; DROP TABLE t"),
     matview.ProgrammingError, "executescript"),
    ("no statement", lambda c: c.execute(" ; "), matview.ProgrammingError, "one statement"),
    ("too few parameters", lambda c: c.execute("INSERT INTO t VALUES (?, ?)", [1]),
     matview.ProgrammingError, "parameters"),
    ("parameter of a bad type", lambda c: c.execute("SELECT ?", [object()]),
     matview.ProgrammingError, "parameter"),
    ("division by zero", lambda c: c.execute("SELECT x / 0 FROM t"), matview.DataError,
     "division by zero"),
    ("overflow", lambda c: c.execute("SELECT x * 2147483647 FROM t"), matview.DataError,
     "out of range"),
    ("bad cast", lambda c: c.execute("SELECT CAST(s AS INT) FROM t"), matview.DataError,
     "invalid input syntax"),
    ("failing INSERT ... SELECT", lambda c: c.execute("INSERT INTO t SELECT x / 0, s FROM t"),
     matview.DataError, "division by zero"),
    ("failing UPDATE", lambda c: c.execute("UPDATE t SET x = x * 2147483647"),
     matview.DataError, "out of range"),
    ("insert of text into INT", lambda c: c.insert("t", [("x", "y")]), matview.DataError,
     'column "x"'),
    ("insert of an overflowing int", lambda c: c.insert("t", [(2**40, "y")]),
     matview.DataError, 'column "x"'),
    ("insert of a NUL byte", lambda c: c.insert("t", [(1, "a\x00b")]), matview.DataError,
     "0x00"),
    ("insert of no rows", lambda c: c.insert("t", 12345), matview.ProgrammingError,
     "list of tuples"),
    ("insert of a short row", lambda c: c.insert("t", [(1,)]), matview.ProgrammingError,
     "values"),
    ("insert into a missing table", lambda c: c.insert("nope", [(1, "a")]),
     matview.ProgrammingError, "nope"),
    ("delete of a row not there", lambda c: c.delete("t", [(99, "zz")]), matview.DataError,
     "cannot delete"),
    ("delete of more copies than there are", lambda c: c.delete("t", [(1, "a"), (1, "a")]),
     matview.DataError, "cannot delete"),
    ("subscribe to a missing view", lambda c: c.subscribe("nope"), matview.ProgrammingError,
     "nope"),
    ("subscribe to a plain view", lambda c: c.subscribe("plain"), matview.ProgrammingError,
     "materialized"),
    ("explain with a bad stage", lambda c: c.explain("SELECT 1", stage="cooked"),
     matview.ProgrammingError, "stage"),
    ("explain of two statements", lambda c: c.explain("SELECT 1; SELECT 2"),
     matview.ProgrammingError, "one statement"),
    ("read inside a transaction", lambda c: _in_transaction(c, "SELECT * FROM t"),
     matview.ProgrammingError, "transaction"),
    ("rollback with no transaction", lambda c: c.rollback(), matview.ProgrammingError,
     "no transaction"),
    ("clock moved backwards", lambda c: c.advance_time(-5), matview.ProgrammingError,
     "backwards"),
    ("table created twice", lambda c: c.execute("CREATE TABLE t (x INT)"),
     matview.ProgrammingError, "already exists"),
    ("drop of a table others use", lambda c: c.execute("DROP TABLE t"),
     matview.ProgrammingError, "depend"),
    ("unsupported statement", lambda c: c.execute("CREATE INDEX i ON t (x)"),
     matview.NotSupportedError, "not supported"),
    ("view over a missing table", lambda c: c.execute("CREATE VIEW w AS SELECT * FROM nope"),
     matview.ProgrammingError, "nope"),
]


def _in_transaction(con: Connection, sql: str) -> None:
    with con.transaction():
        con.insert("t", [(7, "seven")])
        con.execute(sql)


@pytest.fixture(scope="module")
def shared(spark: SparkSession) -> Connection:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT, s TEXT)")
    con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
    con.execute("CREATE VIEW plain AS SELECT x FROM t")
    con.execute("CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(x) AS s FROM t")
    return con


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_its_db_api_error_and_changes_nothing(shared: Connection,
                                                               case: Case) -> None:
    _, call, kind, fragment = case
    before = sorted(shared.execute("SELECT * FROM t").fetchall())
    now = shared.now
    with pytest.raises(kind) as caught:
        call(shared)
    assert type(caught.value) is kind, repr(caught.value)
    assert fragment in str(caught.value)
    assert sorted(shared.execute("SELECT * FROM t").fetchall()) == before
    assert shared.execute("SELECT * FROM total").fetchall() == [(2, 3)]
    assert shared.now == now


def test_connect_refuses_what_it_would_ignore(spark: SparkSession, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(matview.NotSupportedError, match="path"):
        matview.connect(str(tmp_path))
    with pytest.raises(matview.ProgrammingError, match="master"):
        matview.connect(spark=spark, master="local[1]")
    with pytest.raises(matview.ProgrammingError, match="max_table_function_rows"):
        matview.connect(max_table_function_rows=0)


def test_closed_connection_and_cursor(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    cur = con.cursor()
    cur.close()
    with pytest.raises(matview.InterfaceError):
        cur.execute("SELECT 1")
    con.close()
    assert con.closed
    with pytest.raises(matview.InterfaceError):
        con.execute("SELECT 1")


def test_a_lost_spark_is_an_operational_error_that_closes_the_connection(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    from py4j.protocol import Py4JNetworkError

    from matview import connection as connection_module

    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE u (x INT)")
    engine = con._engine_for_use()

    def lost(*args: object) -> object:
        raise Py4JNetworkError("Answer from Java side is empty")

    monkeypatch.setattr(engine, "execute", lost)
    monkeypatch.setattr(connection_module, "_spark_lost", lambda spark: False)
    with pytest.raises(matview.OperationalError, match="JVM"):
        con.execute("SELECT * FROM u")
    assert not con.closed  # Spark still answers: the connection goes on
    monkeypatch.setattr(connection_module, "_spark_lost", lambda spark: True)
    with pytest.raises(matview.OperationalError, match="reopened"):
        con.execute("SELECT * FROM u")
    assert con.closed
    with pytest.raises(matview.InterfaceError):
        con.execute("SELECT 1")


def test_internal_failures_are_internal_errors(spark: SparkSession,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    con = matview.connect(clock=0, spark=spark)
    engine = con._engine_for_use()

    def broken(*args: object) -> object:
        raise KeyError("oops")

    monkeypatch.setattr(engine, "execute", broken)
    with pytest.raises(matview.InternalError, match="KeyError"):
        con.execute("SELECT 1")


def test_fetch_arrow_names_and_executemany_rowcount(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT, s TEXT)")
    cur = con.cursor()
    cur.executemany("INSERT INTO t VALUES (?, ?)", [(1, "a"), (2, "b"), (3, "c"), (4, "d")])
    assert cur.rowcount == 4
    table = con.execute("SELECT x AS number, s FROM t").fetch_arrow()
    assert table is not None and table.column_names == ["number", "s"]
    con.executescript("INSERT INTO t VALUES (5, 'e'); DELETE FROM t WHERE x = 1")
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(4,)]


def test_threads_share_a_connection_without_losing_writes(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (w INT, i INT)")
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(8):
                con.execute("INSERT INTO t VALUES (?, ?)", [w, i])
        except BaseException as e:  # reported below
            errors.append(e)

    def reader() -> None:
        try:
            for _ in range(4):
                con.execute("SELECT count(*) FROM t").fetchall()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(2)]
    threads.append(threading.Thread(target=reader))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(16,)]


def test_a_transaction_owns_the_connection_until_it_ends(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT)")
    started, done = threading.Event(), threading.Event()

    def other() -> None:
        started.set()
        con.insert("t", [(2,)])  # waits for the transaction to end
        done.set()

    con.begin()
    con.insert("t", [(1,)])
    thread = threading.Thread(target=other)
    thread.start()
    started.wait()
    assert not done.wait(1.0)  # blocked while the transaction is open
    con.rollback()
    thread.join()
    assert done.is_set()
    assert con.execute("SELECT * FROM t").fetchall() == [(2,)]  # B's write survived
