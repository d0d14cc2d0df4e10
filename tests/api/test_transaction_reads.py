"""Transactions that read: a transaction's SELECTs, DELETEs, UPDATEs and INSERT ... SELECTs
see its own writes (materialized views built on a table it wrote are read as their
queries until it commits), and other threads read the last committed state beside it while
their writes wait for it to end. Transactions opened and ended by the API or by SQL
(``BEGIN``, ``COMMIT``, ``ROLLBACK``, savepoints: ``matview.transaction_sql``)."""

from __future__ import annotations

import random
import threading

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.harness import oracle_seeds

TABLES = {"t": "a INT, b INT", "u": "k INT, v INT"}
VIEWS = {
    "by_b": "SELECT b, count(*) AS n, sum(a) AS s FROM t GROUP BY b",
    "joined": "SELECT t.b, u.v FROM t JOIN u ON t.a = u.k",
    "over": "SELECT count(*) AS groups, max(n) AS most FROM by_b",
    "u_only": "SELECT v, count(*) AS n FROM u GROUP BY v",
}
"""Materialized views: over the table written, over both, over another view, and over the
other table alone (read from its dataflow while only ``t`` is written)."""

READS = [*(f"SELECT * FROM {name}" for name in [*TABLES, *VIEWS]),
         "SELECT b, count(*) FROM t WHERE a > 2 GROUP BY b",
         "SELECT * FROM plain", "SELECT * FROM t WHERE a = 3"]


def _statement(rng: random.Random) -> str:
    table, x, y = rng.choice(["t", "t", "u"]), rng.randrange(6), rng.randrange(4)
    other = "u" if table == "t" else "t"
    return rng.choice([
        f"INSERT INTO {table} VALUES ({x}, {y}), ({y}, {x})",
        f"INSERT INTO {table} SELECT * FROM {other} WHERE {'a' if other == 't' else 'k'} = {x}",
        f"DELETE FROM {table} WHERE {'a' if table == 't' else 'k'} = {x}",
        f"UPDATE {table} SET {'b' if table == 't' else 'v'} = {y} WHERE "
        f"{'a' if table == 't' else 'k'} < {x}",
    ])


@pytest.mark.slow
@pytest.mark.parametrize("seed", oracle_seeds())
def test_reads_in_a_transaction_see_its_writes_as_duckdb_does(spark: SparkSession,
                                                              seed: int) -> None:
    """Blocks of random writes, each followed by a read of a table, a view or a query,
    committed or rolled back: every read inside and after equals DuckDB's in its own
    transaction."""
    rng = random.Random(seed)
    con, oracle = matview.connect(clock=0, spark=spark), duckdb.connect()
    for name, columns in TABLES.items():
        for db in (con, oracle):
            db.execute(f"CREATE TABLE {name} ({columns})")
            db.execute(f"INSERT INTO {name} VALUES (1, 1), (2, 1), (3, 2)")
    for name, sql in VIEWS.items():
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
        oracle.execute(f"CREATE VIEW {name} AS {sql}")
    for db in (con, oracle):
        db.execute("CREATE VIEW plain AS SELECT a + b AS c FROM t")
    for _ in range(3):
        spelled = rng.random() < 0.5  # the block's control as SQL, else the API's calls
        con.execute(rng.choice(["BEGIN", "START TRANSACTION"])) if spelled else con.begin()
        oracle.begin()
        for _ in range(3):
            statement, read = _statement(rng), rng.choice(READS)
            assert con.execute(statement).rowcount == oracle.execute(statement).fetchone()[0]
            assert _rows(con, read) == _rows(oracle, read), (statement, read)
        if rng.random() < 0.3:
            con.execute(rng.choice(["ROLLBACK", "ABORT"])) if spelled else con.rollback()
            oracle.rollback()
        else:
            con.execute(rng.choice(["COMMIT", "END"])) if spelled else con.commit()
            oracle.commit()
        assert not con.in_transaction
        for read in READS[:len(TABLES) + len(VIEWS)]:  # every table and view
            assert _rows(con, read) == _rows(oracle, read), read


def _rows(db: matview.Connection | duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    return sorted(db.execute(sql).fetchall(), key=repr)


def test_what_a_transaction_cannot_run_leaves_it_open(spark: SparkSession) -> None:
    """DDL and SUBSCRIBE inside a transaction are refused, naming the statement; the
    transaction's writes stay, and commit."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    con.execute("CREATE MATERIALIZED VIEW n AS SELECT count(*) AS n FROM t")
    with con.transaction():
        con.execute("INSERT INTO t VALUES (1)")
        for sql, named in [("CREATE TABLE z (a INT)", "CREATE TABLE z"),
                           ("DROP VIEW n", "DROP"), ("SUBSCRIBE n", "SUBSCRIBE TO n")]:
            with pytest.raises(matview.ProgrammingError,
                               match=f"{named} cannot run inside a transaction"):
                con.execute(sql)
        assert con.execute("SELECT * FROM n").fetchall() == [(1,)]
    assert con.execute("SELECT * FROM n").fetchall() == [(1,)]
    assert con.execute("SHOW TABLES").fetchall() == [("t",)]


def test_other_threads_read_beside_an_open_transaction_and_their_writes_wait(
        spark: SparkSession) -> None:
    """While one thread's transaction is open, another thread's reads run at once and see
    the last committed state (the open transaction's writes are not visible, a view is
    read as of before them); its write waits until the transaction ends, then lands after
    it."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    con.execute("INSERT INTO t VALUES (1)")
    con.execute("CREATE MATERIALIZED VIEW total AS SELECT sum(a) AS s FROM t")
    con.begin()
    con.execute("INSERT INTO t VALUES (10)")
    seen: dict[str, object] = {}
    read = threading.Event()

    def other() -> None:
        seen["t"] = con.execute("SELECT count(*) FROM t").fetchall()
        seen["total"] = con.execute("SELECT * FROM total").fetchall()
        read.set()
        con.execute("INSERT INTO t VALUES (100)")
        seen["after"] = con.execute("SELECT * FROM total").fetchall()

    thread = threading.Thread(target=other)
    thread.start()
    assert read.wait(timeout=300), "the other thread's reads waited for the transaction"
    assert seen == {"t": [(1,)], "total": [(1,)]}
    thread.join(timeout=2)
    assert thread.is_alive(), "the other thread's write ran inside the open transaction"
    assert con.execute("SELECT * FROM total").fetchall() == [(11,)]
    con.commit()
    thread.join(timeout=300)
    assert not thread.is_alive() and seen["after"] == [(111,)]


def test_sql_blocks_follow_postgresqls_rules(spark: SparkSession) -> None:
    """BEGIN, COMMIT, ROLLBACK and savepoints as SQL through ``execute`` and
    ``executescript``: a second BEGIN and an end outside a block change nothing, ROLLBACK TO
    discards the writes after its savepoint and keeps it, RELEASE forgets it, a savepoint
    outside a block is refused; DDL runs in a block before its first write (which opens the
    transaction), and is refused after it, the block staying open."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    con.execute("CREATE MATERIALIZED VIEW n AS SELECT count(*) AS n, sum(a) AS s FROM t")
    for end in ("COMMIT", "ROLLBACK"):
        con.execute(end)  # PostgreSQL warns: no transaction in progress
    with pytest.raises(matview.ProgrammingError, match="SAVEPOINT can only be used in "
                       "transaction blocks"):
        con.execute("SAVEPOINT s")
    con.execute("BEGIN")
    con.execute("BEGIN")  # PostgreSQL warns: already in progress
    con.execute("SAVEPOINT s0")
    con.execute("CREATE TABLE y (a INT)")
    assert con.in_transaction and not con.writing
    con.execute("INSERT INTO t VALUES (1)")
    assert con.writing
    con.execute("SAVEPOINT s")
    con.execute("INSERT INTO t VALUES (10)")
    con.execute("SAVEPOINT s2")
    con.execute("INSERT INTO t VALUES (100)")
    con.execute("ROLLBACK TO SAVEPOINT s")
    assert con.execute("SELECT * FROM n").fetchall() == [(1, 1)]
    with pytest.raises(matview.OperationalError, match='savepoint "s2" does not exist'):
        con.execute("RELEASE SAVEPOINT s2")
    con.execute("INSERT INTO t VALUES (1000)")
    con.execute("ROLLBACK TO s")  # s is kept by the first ROLLBACK TO
    con.execute("INSERT INTO t VALUES (2)")
    con.execute("RELEASE s")
    con.execute("INSERT INTO y VALUES (4)")
    con.execute("ROLLBACK TO s0")  # before the first write: all of the block's writes
    con.execute("INSERT INTO t VALUES (1), (2)")
    with pytest.raises(matview.ProgrammingError, match="CREATE TABLE z cannot run inside"):
        con.execute("CREATE TABLE z (a INT)")
    assert con.in_transaction
    con.execute("COMMIT")
    assert not con.in_transaction and con.execute("SELECT * FROM n").fetchall() == [(2, 3)]
    assert con.execute("SELECT count(*) FROM y").fetchall() == [(0,)]
    con.executescript("BEGIN; INSERT INTO t VALUES (5); ROLLBACK; "
                      "START TRANSACTION; INSERT INTO t VALUES (6); END;")
    assert con.execute("SELECT * FROM n").fetchall() == [(3, 9)]
