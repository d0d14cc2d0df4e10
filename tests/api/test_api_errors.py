"""Every exception leaving the public API is a DB-API exception of the right class, with a
message, and a failed statement changes nothing: a table of bad inputs, each driven through
the public API against one connection whose contents are checked after every case."""

from __future__ import annotations

import socket
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
    ("DDL inside a transaction", lambda c: _in_transaction(c, "CREATE TABLE t2 (x INT)"),
     matview.ProgrammingError, "CREATE TABLE t2 cannot run inside a transaction"),
    ("rollback with no transaction", lambda c: c.rollback(), matview.ProgrammingError,
     "no transaction"),
    ("clock moved backwards", lambda c: c.advance_time(-5), matview.ProgrammingError,
     "backwards"),
    ("table created twice", lambda c: c.execute("CREATE TABLE t (x INT)"),
     matview.ProgrammingError, "already exists"),
    ("drop of a table others use", lambda c: c.execute("DROP TABLE t"),
     matview.ProgrammingError, "depend"),
    ("unsupported statement", lambda c: c.execute("CREATE SEQUENCE s"),
     matview.NotSupportedError, "not supported"),
    ("view over a missing table", lambda c: c.execute("CREATE VIEW w AS SELECT * FROM nope"),
     matview.ProgrammingError, "nope"),
    ("INSERT ... SELECT of negative multiplicities",
     lambda c: c.execute("INSERT INTO t SELECT x, s FROM t, repeat_row(-1)"),
     matview.DataError, "negative multiplicity"),
    ("delete of a DataFrame row not there",
     lambda c: c.delete("t", c.spark.createDataFrame([(99, "zz")], "x int, s string")),
     matview.DataError, "cannot delete"),
    ("insert of a DataFrame with a NUL byte",
     lambda c: c.insert("t", c.spark.createDataFrame([(5, "a\x00")], "x int, s string")),
     matview.DataError, "0x00"),
    ("insert of a DataFrame value that does not fit",
     lambda c: c.insert("t", c.spark.createDataFrame([("q", "a")], "x string, s string")),
     matview.DataError, 'column "x" of table "t" (int): q'),
    ("insert of a fraction into INT", lambda c: c.insert("t", [(1.5, "a")]), matview.DataError,
     'column "x"'),
    ("insert of a DataFrame fraction into INT",
     lambda c: c.insert("t", c.spark.createDataFrame([(1.5, "a")], "x double, s string")),
     matview.DataError, 'column "x"'),
    ("SQL that is not text", lambda c: c.execute(None), matview.ProgrammingError, "SQL text"),
    ("script that is not text", lambda c: c.executescript(None), matview.ProgrammingError,
     "SQL text"),
    ("explain of no text", lambda c: c.explain(None), matview.ProgrammingError, "SQL text"),
    ("explain options as one string", lambda c: c.explain("SELECT 1", options="arity"),
     matview.ProgrammingError, "sequence"),
    ("parameters as a mapping", lambda c: c.execute("SELECT ?", {"a": 1}),
     matview.ProgrammingError, "sequence"),
    ("parameters as a string", lambda c: c.execute("SELECT ?", "a"), matview.ProgrammingError,
     "sequence"),
    ("parameters as a number", lambda c: c.execute("SELECT ?", 5), matview.ProgrammingError,
     "sequence"),
    ("executemany of a number", lambda c: c.cursor().executemany("SELECT ?", 5),
     matview.ProgrammingError, "sequence"),
    ("subscribe to a non-name", lambda c: c.subscribe(5), matview.ProgrammingError, "name"),
    ("clock moved to a non-integer", lambda c: c.advance_time("5"), matview.ProgrammingError,
     "integer"),
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


def test_an_evaluation_error_shows_the_row_it_was_found_on(shared: Connection) -> None:
    """... when the row has columns: a constant query's error is its message alone."""
    with pytest.raises(matview.DataError) as caught:
        shared.execute("SELECT 1 / 0").fetchall()
    assert "division by zero" in str(caught.value) and "(row:" not in str(caught.value)
    with pytest.raises(matview.DataError) as caught:
        shared.execute("SELECT x / (x - 1) FROM t").fetchall()
    assert "division by zero (row: (1, a))" in str(caught.value)


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
    with pytest.raises(matview.ProgrammingError, match="state_dir= cannot apply"):
        matview.connect(str(tmp_path), state_dir=str(tmp_path / "state"))
    with pytest.raises(matview.OperationalError, match='"nosuch://x/db" cannot be reached: '
                                                       ".*No FileSystem for scheme"):
        matview.connect("nosuch://x/db", spark=spark)
    with pytest.raises(matview.ProgrammingError, match="master"):
        matview.connect(spark=spark, master="local[1]")
    with pytest.raises(matview.ProgrammingError, match="max_table_function_rows"):
        matview.connect(max_table_function_rows=0)
    with pytest.raises(matview.ProgrammingError, match="max_join_rows"):
        matview.connect(max_join_rows=True)
    with pytest.raises(matview.ProgrammingError, match="clock"):
        matview.connect(clock=True)
    # Spark runs one session per process: this one is what connect() gets, so settings it
    # cannot take are refused instead of ignored; a runtime setting applies to it
    with pytest.raises(matview.ProgrammingError, match="already runs"):
        matview.connect(master="local[3]")
    with pytest.raises(matview.ProgrammingError, match="spark.driver.memory"):
        matview.connect(config={"spark.driver.memory": "1g"})
    with pytest.raises(matview.ProgrammingError, match="spark.some.setting"):
        matview.connect(config={"spark.some.setting": "1"})
    # a Spark Connect server that does not answer is an error at once, not a long wait
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    with pytest.raises(matview.OperationalError, match=f"cannot reach .* 127.0.0.1:{port}"):
        matview.connect(master=f"sc://127.0.0.1:{port}").cursor()
    shuffle = spark.conf.get("spark.sql.shuffle.partitions")
    matview.connect(master=spark.sparkContext.master,
                    config={"spark.sql.shuffle.partitions": shuffle}).close()


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
    monkeypatch.setattr(connection_module, "spark_lost", lambda spark: False)
    with pytest.raises(matview.OperationalError, match="JVM"):
        con.execute("SELECT * FROM u")
    assert not con.closed  # Spark still answers: the connection goes on
    monkeypatch.setattr(connection_module, "spark_lost", lambda spark: True)
    with pytest.raises(matview.OperationalError, match="reopened"):
        con.execute("SELECT * FROM u")
    assert con.closed
    with pytest.raises(matview.InterfaceError):
        con.execute("SELECT 1")


class _JavaException:
    """A stand-in for a py4j JavaObject: its text, or no answer (``None``: the JVM is gone)."""

    def __init__(self, text: str | None) -> None:
        self.text = text

    def __str__(self) -> str:
        if self.text is None:
            from py4j.protocol import Py4JNetworkError

            raise Py4JNetworkError("Answer from Java side is empty")
        return self.text


def _java_error(text: str | None) -> Exception:
    """A Py4JJavaError for a Java exception with ``text`` (built without a JVM)."""
    from py4j.protocol import Py4JJavaError

    class JavaError(Py4JJavaError):
        def __init__(self) -> None:
            self.errmsg = "An error occurred while calling o42.collectToPython"
            self.java_exception = _JavaException(text)
            self.args = (self.errmsg,)

        def __str__(self) -> str:
            return self.errmsg

    return JavaError()


@pytest.mark.parametrize(("text", "kind", "fragment"), [
    ("java.lang.OutOfMemoryError: Java heap space", matview.OperationalError, "out of memory"),
    ("org.apache.spark.SparkException: Job aborted due to stage failure: Lost task 0.0: "
     "java.lang.OutOfMemoryError: GC overhead limit exceeded", matview.OperationalError,
     "out of memory"),
    ("java.lang.IllegalStateException: broken", matview.InternalError, "broken"),
    (None, matview.InternalError, "did not answer"),
])
def test_java_errors_are_db_api_errors(spark: SparkSession, monkeypatch: pytest.MonkeyPatch,
                                       text: str | None, kind: type[matview.Error],
                                       fragment: str) -> None:
    from matview import connection as connection_module

    con = matview.connect(clock=0, spark=spark)
    engine = con._engine_for_use()

    def failing(*args: object) -> object:
        raise _java_error(text)

    monkeypatch.setattr(engine, "execute", failing)
    monkeypatch.setattr(connection_module, "spark_lost", lambda spark: False)
    with pytest.raises(kind, match=fragment) as caught:
        con.execute("SELECT 1")
    assert type(caught.value) is kind
    assert not con.closed


def test_an_internal_error_that_stopped_spark_closes_the_connection(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    from matview import connection as connection_module

    assert connection_module.spark_lost(spark) is False  # the real check, on a live session
    con = matview.connect(clock=0, spark=spark)
    engine = con._engine_for_use()

    def stopped(*args: object) -> object:
        raise _java_error("java.lang.IllegalStateException: Cannot call methods on a stopped "
                          "SparkContext.")

    monkeypatch.setattr(engine, "execute", stopped)
    monkeypatch.setattr(connection_module, "spark_lost", lambda spark: True)
    with pytest.raises(matview.OperationalError, match="reopened"):
        con.execute("SELECT 1")
    assert con.closed


class _Stopped:
    """A classic session whose JVM no longer answers (asking a classic session for Spark
    Connect's ``client`` raises, and not AttributeError)."""

    @property
    def sparkContext(self) -> object:
        raise ConnectionRefusedError("no JVM")

    @property
    def client(self) -> object:
        from pyspark.errors import PySparkRuntimeError

        raise PySparkRuntimeError(errorClass="ONLY_SUPPORTED_WITH_SPARK_CONNECT",
                                  messageParameters={"feature": "SparkSession.client"})


def test_a_session_whose_jvm_does_not_answer_is_lost() -> None:
    from matview.runtime.spark.session import spark_lost

    assert spark_lost(_Stopped()) is True  # type: ignore[arg-type]


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


def test_a_transaction_write_checks_the_staged_rows(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT, s TEXT)")
    row = spark.createDataFrame([(7, "x")], "x int, s string")
    with con.transaction():
        con.insert("t", [(7, "x")])
        assert con.delete("t", row) == 1  # deletes the row staged before it
        with pytest.raises(matview.DataError, match="cannot delete"):
            con.delete("t", row)
        con.insert("t", [(8, "y")])
    assert con.execute("SELECT * FROM t").fetchall() == [(8, "y")]


def test_text_arrays_refuse_nul_bytes(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE a (tags TEXT[])")
    with pytest.raises(matview.DataError, match="0x00"):
        con.insert("a", [(["ok", "b\x00d"],)])
    with pytest.raises(matview.DataError, match="0x00"):
        con.insert("a", spark.createDataFrame([(["ok", "b\x00d"],)], "tags array<string>"))
    assert con.insert("a", spark.createDataFrame([(["ok"],)], "tags array<string>")) == 1
    assert con.execute("SELECT * FROM a").fetchall() == [(["ok"],)]


def _finishes(action: Callable[[], object], seconds: float = 30.0) -> list[object]:
    """Run ``action`` in a thread: what it returned or raised, or [] if it had not ended
    after ``seconds`` (it is then left blocked, in a daemon thread)."""
    outcome: list[object] = []

    def run() -> None:
        try:
            outcome.append(action())
        except BaseException as e:  # reported to the caller
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    return outcome


def _settled(outcome: list[object]) -> list[object]:
    """``outcome`` of ``_finishes`` once its action has ended (waiting up to 30 s)."""
    for _ in range(300):
        if outcome:
            break
        threading.Event().wait(0.1)
    return outcome


def test_threads_starting_a_connection_share_one_engine(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)  # Spark is not used until the first statement
    barrier = threading.Barrier(6)

    def create(i: int) -> None:
        barrier.wait()
        con.execute(f"CREATE TABLE t{i} (x INT)")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(con.execute("SHOW TABLES").fetchall()) == [(f"t{i}",) for i in range(6)]


def test_a_transaction_left_open_by_an_ended_thread_is_rolled_back(
        spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT)")

    def abandon() -> None:
        con.begin()
        con.insert("t", [(1,)])

    thread = threading.Thread(target=abandon)
    thread.start()
    thread.join()
    assert _finishes(lambda: con.insert("t", [(2,)])) == [1]
    assert con.execute("SELECT * FROM t").fetchall() == [(2,)]


def test_losing_spark_in_a_transaction_releases_the_waiting_threads(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    from py4j.protocol import Py4JNetworkError

    from matview import connection as connection_module

    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT)")
    engine = con._engine_for_use()
    con.begin()
    waiting = _finishes(lambda: con.execute("INSERT INTO t VALUES (2)"), seconds=0.5)
    assert waiting == []  # a write, blocked while the transaction is open

    def lost(*args: object) -> object:
        raise Py4JNetworkError("Answer from Java side is empty")

    monkeypatch.setattr(engine, "write", lost)
    monkeypatch.setattr(connection_module, "spark_lost", lambda spark: True)
    with pytest.raises(matview.OperationalError, match="reopened"):
        con.insert("t", [(1,)])
    outcome = _finishes(lambda: con.execute("SELECT 1"))
    assert len(outcome) == 1 and isinstance(outcome[0], matview.InterfaceError)
    waited = _settled(waiting)  # the statement that waited ends too
    assert len(waited) == 1 and isinstance(waited[0], matview.InterfaceError)


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


def test_the_clock_and_close_wait_for_another_threads_transaction(
        spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (x INT)")
    con.begin()
    con.insert("t", [(1,)])
    moved = _finishes(lambda: con.advance_time(50), seconds=0.5)
    assert moved == []  # waits for the transaction to end
    con.commit()
    assert _settled(moved) == [None]
    assert con.now == 50 and con.execute("SELECT * FROM t").fetchall() == [(1,)]
    con.begin()
    closed = _finishes(con.close, seconds=0.5)
    assert closed == [] and not con.closed
    con.insert("t", [(2,)])
    con.commit()
    assert _settled(closed) == [None] and con.closed
