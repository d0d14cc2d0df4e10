"""Keys in DDL (``sql.constraints``, ``runtime.io.constraints``, ``sql.upsert``): PRIMARY
KEY, UNIQUE and NOT NULL in CREATE TABLE, enforced at every write (a violating statement or
transaction fails with SQLSTATE 23505 / 23502 and changes nothing), each key backed by an
index; INSERT ... ON CONFLICT equal to DuckDB's under random statements."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import psycopg
import pytest
from psycopg import errors as pg_errors
from pyspark.sql import SparkSession

import matview
from matview.errors import DataError, IntegrityError, NotSupportedError, ProgrammingError
from matview.server import serve
from tests.support.oracle.harness import IN_FILES
from tests.support.seeds import seeds


def test_keys_are_declared_shown_and_backed_by_indexes(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (k INT PRIMARY KEY, a TEXT NOT NULL, b INT UNIQUE, c INT NULL, "
                "CONSTRAINT ab UNIQUE (a, b))")
    con.execute("CREATE TABLE u (x INT, y TEXT, PRIMARY KEY (y, x), UNIQUE (x))")
    assert con.execute("SHOW CREATE TABLE t").fetchall()[0][1] == (
        "CREATE TABLE t (k int NOT NULL, a text NOT NULL, b int, c int, CONSTRAINT t_pkey "
        "PRIMARY KEY (k), CONSTRAINT t_b_key UNIQUE (b), CONSTRAINT ab UNIQUE (a, b))")
    assert con.execute("SHOW CREATE TABLE u").fetchall()[0][1] == (
        "CREATE TABLE u (x int NOT NULL, y text NOT NULL, CONSTRAINT u_pkey PRIMARY KEY (y, x), "
        "CONSTRAINT u_x_key UNIQUE (x))")
    assert con.execute("SHOW INDEXES").fetchall() == [
        ("ab", "t", "{a, b}"), ("t_b_key", "t", "{b}"), ("t_pkey", "t", "{k}"),
        ("u_pkey", "u", "{y, x}"), ("u_x_key", "u", "{x}")]
    refusals = [
        ("CREATE TABLE w (a INT PRIMARY KEY, b INT, PRIMARY KEY (b))", ProgrammingError,
         'multiple primary keys for table "w" are not allowed'),
        ("CREATE TABLE w (a INT, PRIMARY KEY (z))", ProgrammingError,
         'column "z" named in key does not exist'),
        ("CREATE TABLE w (a INT, UNIQUE (a, a))", ProgrammingError, "appears twice"),
        ("CREATE TABLE w (a INT CHECK (a > 0))", NotSupportedError,
         "CHECK constraints are not supported"),
        ("CREATE TABLE w (a INT GENERATED ALWAYS AS IDENTITY)", NotSupportedError,
         "GENERATED ... AS IDENTITY constraints are not supported"),
        ("CREATE TABLE w (a INT REFERENCES t (k))", NotSupportedError,
         "REFERENCES .foreign keys. constraints are not supported"),
        ("CREATE TABLE w (a INT, CONSTRAINT t_pkey UNIQUE (a))", ProgrammingError,
         'relation "t_pkey" already exists'),
        ("DROP INDEX t_pkey", ProgrammingError,
         "cannot drop index t_pkey because constraint t_pkey on table t requires it"),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message):
            con.execute(sql)
    assert con.execute("SHOW TABLES").fetchall() == [("t",), ("u",)]
    # the planner knows the keys no NULL can break (t's b may hold NULLs: not a key)
    plan = con.explain("SELECT * FROM t, u", "optimized", "text", ["keys"])
    assert "Get t (k int, a text, b int, c int)  // { keys: ((#0)) }" in plan
    assert "Get u (x int, y text)  // { keys: ((#0)) }" in plan  # (y, x) holds (x)
    con.execute("DROP TABLE t")
    assert [r[0] for r in con.execute("SHOW INDEXES").fetchall()] == ["u_pkey", "u_x_key"]


@pytest.mark.parametrize("settings", [{}, IN_FILES], ids=["driver", "files"])
def test_violations_fail_and_change_nothing(spark: SparkSession,
                                            settings: dict[str, int]) -> None:
    con = matview.connect(spark=spark, settings=settings)
    con.execute("CREATE TABLE t (k INT PRIMARY KEY, a TEXT NOT NULL, b INT UNIQUE)")
    con.execute("CREATE MATERIALIZED VIEW m AS SELECT a, count(*) AS n, sum(k) AS s FROM t "
                "GROUP BY a")
    con.execute("INSERT INTO t VALUES (1, 'x', 1), (2, 'y', NULL), (3, 'y', NULL)")
    before = sorted(con.execute("SELECT * FROM t").fetchall())
    view = sorted(con.execute("SELECT * FROM m").fetchall())
    violations = [
        ("INSERT INTO t VALUES (1, 'z', 5)", 't_pkey": Key \\(k\\)=\\(1\\) already exists'),
        ("INSERT INTO t VALUES (7, 'q', 7), (7, 'r', 8)", 'Key \\(k\\)=\\(7\\)'),
        ("INSERT INTO t VALUES (4, 'z', 1)", 't_b_key": Key \\(b\\)=\\(1\\)'),
        ("UPDATE t SET k = 2 WHERE k = 1", 't_pkey": Key \\(k\\)=\\(2\\)'),
        ("UPDATE t SET b = 9", 't_b_key": Key \\(b\\)=\\(9\\)'),
        ("INSERT INTO t SELECT k + 10, a, 1 FROM t", 't_b_key'),
    ]
    for sql, message in violations:
        with pytest.raises(IntegrityError, match="duplicate key value violates unique "
                                                 "constraint .*" + message):
            con.execute(sql)
    for sql, column in [("INSERT INTO t VALUES (NULL, 'z', 9)", "k"),
                        ("INSERT INTO t (k, b) VALUES (9, 9)", "a"),
                        ("UPDATE t SET a = NULL WHERE k = 2", "a")]:
        with pytest.raises(IntegrityError, match=f'null value in column "{column}" of '
                                                 'relation "t" violates not-null constraint'):
            con.execute(sql)
    with pytest.raises(IntegrityError, match="t_pkey"):  # written as a Spark DataFrame
        con.insert("t", spark.createDataFrame([(3, "w", 30), (8, "w", 80)], "k int, a string, "
                                                                          "b int"))
    with pytest.raises(IntegrityError, match='column "a" of relation "t" violates not-null'):
        con.insert("t", spark.createDataFrame([(9, "w", 90), (10, None, 91)],
                                              "k int, a string, b int"))
    con.begin()
    con.execute("INSERT INTO t VALUES (20, 'n', 51)")
    assert con.execute("INSERT INTO t VALUES (20, 'o', 61), (21, 'o', 62) ON CONFLICT (k) "
                       "DO NOTHING").rowcount == 1  # it reads the table with the staged 20
    with pytest.raises(IntegrityError, match="Key \\(k\\)=\\(20\\)"):  # against the staged
        con.execute("INSERT INTO t VALUES (20, 'm', 52)")
    con.rollback()
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == before
    assert sorted(con.execute("SELECT * FROM m").fetchall()) == view
    # what stays legal: NULLs in a UNIQUE column, a key freed and taken in one transaction
    # or one statement, keys swapped by one statement (checked at its end)
    con.execute("INSERT INTO t VALUES (4, 'z', NULL)")
    con.begin()
    con.delete("t", [(1, "x", 1)])
    con.execute("INSERT INTO t VALUES (1, 'x2', 1)")
    con.commit()
    con.execute("UPDATE t SET k = 5 - k WHERE k IN (1, 4)")
    con.insert("t", spark.createDataFrame([(30, "w", 30), (31, "w", None)],
                                          "k int, a string, b int"))
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == [
        (1, "z", None), (2, "y", None), (3, "y", None), (4, "x2", 1), (30, "w", 30),
        (31, "w", None)]
    assert sorted(con.execute("SELECT * FROM m").fetchall()) == [
        ("w", 2, 61), ("x2", 1, 4), ("y", 2, 5), ("z", 1, 1)]


def test_keys_survive_reopening(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path / "db", spark=spark) as con:
        con.execute("CREATE TABLE t (k INT PRIMARY KEY, v TEXT)")
        con.execute("INSERT INTO t VALUES (1, 'a')")
    with matview.connect(tmp_path / "db", spark=spark) as con:
        assert con.execute("SHOW INDEXES").fetchall() == [("t_pkey", "t", "{k}")]
        with pytest.raises(IntegrityError, match="t_pkey"):
            con.execute("INSERT INTO t VALUES (1, 'b')")
        con.execute("INSERT INTO t VALUES (2, 'b') ON CONFLICT (k) DO NOTHING")
        assert sorted(con.execute("SELECT * FROM t").fetchall()) == [(1, "a"), (2, "b")]


def test_on_conflict_refusals_and_row_counts(spark: SparkSession) -> None:
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT, w TEXT)")
    con.execute("CREATE TABLE n (k INT)")
    con.execute("INSERT INTO t VALUES (1, 10, 'a'), (2, 20, 'b')")
    refusals = [
        ("INSERT INTO t VALUES (6, 1, 'y'), (6, 2, 'y') ON CONFLICT (k) DO UPDATE SET v = 1",
         DataError, "ON CONFLICT DO UPDATE command cannot affect row a second time"),
        ("INSERT INTO t VALUES (6, 1, 'y') ON CONFLICT (v) DO NOTHING", ProgrammingError,
         "there is no unique or exclusion constraint matching the ON CONFLICT"),
        ("INSERT INTO n VALUES (1) ON CONFLICT DO NOTHING", ProgrammingError,
         "there is no unique or exclusion constraint matching the ON CONFLICT"),
        ("INSERT INTO t VALUES (6, 1, 'y') ON CONFLICT DO UPDATE SET v = 1", ProgrammingError,
         "ON CONFLICT DO UPDATE requires inference specification or constraint name"),
        ("INSERT INTO t VALUES (6, 1, 'y') ON CONFLICT ON CONSTRAINT nope DO NOTHING",
         ProgrammingError, 'constraint "nope" for table "t" does not exist'),
        ("INSERT INTO t VALUES (6, 1, 'y') ON CONFLICT (k) DO UPDATE SET v = excluded.nope",
         ProgrammingError, 'column excluded.nope does not exist|column "nope"'),
        ("INSERT INTO t VALUES (2, 1, 'y') ON CONFLICT (k) DO UPDATE SET k = 1",
         IntegrityError, 'duplicate key value violates unique constraint "t_pkey"'),
    ]
    for sql, error, message in refusals:
        with pytest.raises(error, match=message):
            con.execute(sql)
    cur = con.cursor()
    cur.execute("INSERT INTO t VALUES (1, 5, 'x'), (3, 30, 'c'), (3, 31, 'd') "
                "ON CONFLICT DO NOTHING")
    assert cur.rowcount == 1  # of two proposals of one new key, the least is inserted
    cur.execute("INSERT INTO t AS x VALUES (1, 7, 'z'), (5, 50, 'e') ON CONFLICT (k) DO UPDATE "
                "SET v = x.v + excluded.v, w = excluded.w WHERE x.v < 100")
    assert cur.rowcount == 2
    cur.execute("INSERT INTO t VALUES (2, 0, 'q') ON CONFLICT ON CONSTRAINT t_pkey "
                "DO UPDATE SET v = v + 1000 WHERE excluded.w = 'nope'")
    assert cur.rowcount == 0
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == [
        (1, 17, "z"), (2, 20, "b"), (3, 30, "c"), (5, 50, "e")]
    con.execute("CREATE TABLE q (u INT UNIQUE, v INT)")  # NULL keys conflict with nothing
    con.execute("INSERT INTO q VALUES (NULL, 1), (NULL, 2), (1, 3) ON CONFLICT (u) "
                "DO UPDATE SET v = excluded.v")
    con.execute("INSERT INTO q VALUES (NULL, 4), (1, 5) ON CONFLICT (u) DO UPDATE "
                "SET v = q.v + excluded.v")
    assert sorted(con.execute("SELECT * FROM q").fetchall(), key=repr) == [
        (1, 8), (None, 1), (None, 2), (None, 4)]


def _statement(rng: random.Random) -> str:
    """A random write to ``t (k PRIMARY KEY, v, w)``: upserts (keys distinct within one,
    where PostgreSQL and DuckDB agree), plain inserts, deletes and updates, some of which
    break the key."""
    def rows(n: int) -> str:
        keys = rng.sample(range(12), n)
        return ", ".join(f"({k}, {rng.randint(-5, 20)}, '{rng.choice('abc')}')" for k in keys)
    kind = rng.randrange(7)
    if kind == 0:
        return f"INSERT INTO t VALUES {rows(rng.randint(1, 3))} ON CONFLICT (k) DO NOTHING"
    if kind == 1:
        return (f"INSERT INTO t VALUES {rows(rng.randint(1, 4))} ON CONFLICT (k) DO UPDATE "
                f"SET v = t.v + excluded.v, w = excluded.w WHERE t.v < {rng.randint(0, 30)}")
    if kind == 2:
        return (f"INSERT INTO t SELECT k + {rng.randint(1, 4)}, v * 2, w FROM t WHERE w = "
                f"'{rng.choice('abc')}' ON CONFLICT (k) DO UPDATE SET v = excluded.v - t.v")
    if kind == 3:
        return f"INSERT INTO t VALUES {rows(rng.randint(1, 2))}"
    if kind == 4:
        return f"DELETE FROM t WHERE k % 4 = {rng.randrange(4)}"
    if kind == 5:
        return f"UPDATE t SET v = v + 1, w = 'c' WHERE k < {rng.randint(0, 12)}"
    return f"UPDATE t SET k = k + {rng.randint(1, 3)} WHERE k = {rng.randrange(12)}"


VIEWS = {"totals": "SELECT w, count(*) AS n, sum(v) AS s FROM t GROUP BY w",
         "pairs": "SELECT a.k, b.k AS k2 FROM t a JOIN t b ON a.v = b.v AND a.k < b.k"}


@pytest.mark.slow
@pytest.mark.parametrize("seed, held", [*((s, "driver") for s in seeds(1)),
                                         *((s, "files") for s in seeds(3))])
def test_upserts_equal_duckdb_under_random_statements(spark: SparkSession, seed: int,
                                                      held: str) -> None:
    """The table's batches held in the driver, and in files (more seeds of each:
    ``MATVIEW_TEST_SEEDS``)."""
    rng = random.Random(seed)
    con = matview.connect(spark=spark, settings=IN_FILES if held == "files" else {})
    oracle = duckdb.connect()
    for db in (con, oracle):
        db.execute("CREATE TABLE t (k INT PRIMARY KEY, v INT, w TEXT)")
    for name, sql in VIEWS.items():
        con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
    failures = 0
    for _ in range(14):
        sql = _statement(rng)
        try:
            oracle.execute(sql)
            expected = None
        except duckdb.ConstraintException as e:
            expected = e
        if expected is None:
            con.execute(sql)
        else:
            failures += 1
            with pytest.raises(IntegrityError, match="violates unique constraint"):
                con.execute(sql)
        for name, query in [("t", "SELECT * FROM t"), *VIEWS.items()]:
            got = sorted(con.execute(f"SELECT * FROM {name}").fetchall())
            assert got == sorted(oracle.execute(query).fetchall()), (sql, name)
    assert 0 < failures < 14  # the statements both fail and succeed


def test_keys_of_other_types_held_in_files(spark: SparkSession) -> None:
    """Keys of dates and doubles (which batches are not arranged by) are checked too, and a
    SELECT pinning one reads the table."""
    con = matview.connect(spark=spark, settings=IN_FILES)
    con.execute("CREATE TABLE d (day DATE PRIMARY KEY, x DOUBLE UNIQUE, n INT)")
    con.execute("INSERT INTO d VALUES (DATE '2020-01-01', 1.5, 1), (DATE '2020-01-02', 2.5, 2)")
    with pytest.raises(IntegrityError, match="Key \\(day\\)=\\(2020-01-01\\)"):
        con.execute("INSERT INTO d VALUES (DATE '2020-01-01', 9, 9)")
    with pytest.raises(IntegrityError, match="Key \\(x\\)=\\(2.5\\)"):
        con.execute("INSERT INTO d VALUES (DATE '2020-01-03', 2.5, 9)")
    con.execute("INSERT INTO d VALUES (DATE '2020-01-01', 7.5, 7) ON CONFLICT (day) DO UPDATE "
                "SET n = excluded.n")
    assert con.execute("SELECT n FROM d WHERE day = DATE '2020-01-01'").fetchall() == [(7,)]


def test_violations_carry_their_sqlstate_over_the_wire(spark: SparkSession) -> None:
    con = matview.connect(clock=None, spark=spark)
    with serve(con, port=0, poll=0.05) as running, psycopg.connect(
            host="127.0.0.1", port=running.port, user="u", dbname="matview",
            autocommit=True) as conn:
        conn.execute("CREATE TABLE kt (k INT PRIMARY KEY, v INT NOT NULL)")
        conn.execute("INSERT INTO kt VALUES (1, 1) ON CONFLICT (k) DO UPDATE SET v = 2")
        with pytest.raises(pg_errors.UniqueViolation, match='"kt_pkey"'):
            conn.execute("INSERT INTO kt VALUES (1, 3)")
        with pytest.raises(pg_errors.NotNullViolation):
            conn.execute("INSERT INTO kt VALUES (2, NULL)")
        with pytest.raises(pg_errors.CardinalityViolation):
            conn.execute("INSERT INTO kt VALUES (2, 2), (2, 3) ON CONFLICT (k) "
                         "DO UPDATE SET v = 0")
        with pytest.raises(pg_errors.InvalidColumnReference):
            conn.execute("INSERT INTO kt VALUES (2, 2) ON CONFLICT (v) DO NOTHING")
        assert conn.execute("SELECT * FROM kt").fetchall() == [(1, 1)]
