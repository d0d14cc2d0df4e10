"""ALTER TABLE | VIEW | MATERIALIZED VIEW (``matview.alter``) and COMMENT ON
(``matview.comments``): PostgreSQL's semantics and messages; the views over an altered table
keep running with their columns (DuckDB, which agrees on the tables' contents, evaluates
their queries); a durable database reopens after each kind of ALTER as it was."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import IntegrityError, ProgrammingError
from matview.server.sqlstate import pg_error
from tests.support.alter_oracle import both, changes, rows


@pytest.fixture(scope="module")
def db(spark: SparkSession) -> Iterator[matview.Connection]:
    """One connection for the module's tests (each uses tables of its own names)."""
    with matview.connect(clock=0, spark=spark) as connection:
        yield connection


def test_add_column_keeps_views_running_with_their_columns(db: matview.Connection) -> None:
    rng, oracle = random.Random(45), duckdb.connect()
    both(db, oracle, "CREATE TABLE ad (a INT, b INT)")
    db.execute("CREATE VIEW ad_v AS SELECT * FROM ad")
    db.execute("CREATE MATERIALIZED VIEW ad_m AS SELECT a, count(*) AS n, sum(b) AS s "
               "FROM ad GROUP BY a")
    db.execute("CREATE MATERIALIZED VIEW ad_star AS SELECT * FROM ad_v WHERE a > 1")
    changes(db, oracle, "ad", rng, "({a}, {a} * 10), ({a}, 7)")
    both(db, oracle, "ALTER TABLE ad ADD COLUMN c INT DEFAULT 5")
    assert rows(db, "SELECT * FROM ad") == rows(oracle, "SELECT * FROM ad")
    changes(db, oracle, "ad", rng, "({a}, 1, {a}), ({a}, 2, NULL)")
    both(db, oracle, "INSERT INTO ad (a, b) VALUES (4, 4)")
    assert rows(db, "SELECT * FROM ad") == rows(oracle, "SELECT * FROM ad")
    assert db.execute("SELECT * FROM ad_v").description[1][0] == "b"
    assert len(db.execute("SELECT * FROM ad_v").description) == 2
    assert rows(db, "SELECT * FROM ad_v") == rows(oracle, "SELECT a, b FROM ad")
    assert rows(db, "SELECT * FROM ad_m") == rows(
        oracle, "SELECT a, count(*), sum(b) FROM ad GROUP BY a")
    assert rows(db, "SELECT * FROM ad_star") == rows(oracle, "SELECT a, b FROM ad WHERE a > 1")
    assert db.execute("SHOW CREATE VIEW ad_v").fetchall()[0][1] == \
        "CREATE VIEW ad_v (a, b) AS SELECT ad.a AS a, ad.b AS b FROM ad AS ad"
    assert db.execute("SHOW CREATE TABLE ad").fetchall()[0][1] == \
        "CREATE TABLE ad (a int, b int, c int DEFAULT 5)"


def test_add_column_errors_change_nothing(db: matview.Connection) -> None:
    db.execute("CREATE TABLE an (a INT)")
    db.execute("INSERT INTO an VALUES (1)")
    with pytest.raises(IntegrityError, match='^column "b" of relation "an" contains null '
                       "values$") as caught:
        db.execute("ALTER TABLE an ADD COLUMN b INT NOT NULL")
    assert pg_error(caught.value).sqlstate == "23502"
    with pytest.raises(ProgrammingError, match='^column "a" of relation "an" already exists$'
                       ) as caught:
        db.execute("ALTER TABLE an ADD a TEXT")
    assert pg_error(caught.value).sqlstate == "42701"
    assert db.execute("SHOW CREATE TABLE an").fetchall()[0][1] == "CREATE TABLE an (a int)"
    db.execute("ALTER TABLE an ADD COLUMN IF NOT EXISTS a TEXT")
    db.execute("ALTER TABLE IF EXISTS missing ADD COLUMN a TEXT")
    db.execute("ALTER TABLE an ADD COLUMN b INT DEFAULT 2 NOT NULL")
    assert rows(db, "SELECT * FROM an") == [(1, 2)]
    with pytest.raises(IntegrityError, match="violates not-null constraint"):
        db.execute("INSERT INTO an VALUES (3, NULL)")
    db.execute("CREATE VIEW an_v AS SELECT a FROM an")
    with pytest.raises(ProgrammingError, match='^"an_v" is not a table$'):
        db.execute("ALTER TABLE an_v ADD COLUMN c INT")
    with pytest.raises(ProgrammingError, match='^relation "nothing" does not exist$'):
        db.execute("ALTER TABLE nothing ADD COLUMN c INT")
    db.begin()
    with pytest.raises(ProgrammingError, match="cannot run inside a transaction"):
        db.execute("ALTER TABLE an ADD COLUMN c INT")
    with pytest.raises(ProgrammingError, match="cannot run inside a transaction"):
        db.execute("COMMENT ON TABLE an IS 'x'")
    db.rollback()


def test_drop_column(db: matview.Connection) -> None:
    rng, oracle = random.Random(2), duckdb.connect()
    both(db, oracle, "CREATE TABLE dr (a INT, b INT, c TEXT, d INT)")
    db.execute("CREATE INDEX dr_c ON dr (c)")
    db.execute("CREATE MATERIALIZED VIEW dr_m AS SELECT a, sum(b) AS s FROM dr GROUP BY a")
    db.execute("CREATE VIEW dr_v AS SELECT a, c FROM dr")
    db.execute("CREATE VIEW dr_w AS SELECT * FROM dr_v")
    changes(db, oracle, "dr", rng, "({a}, {a} + 1, 'x', 1)")
    with pytest.raises(ProgrammingError, match="^cannot drop column c of table dr because "
                       "other objects depend on it: dr_v") as caught:
        db.execute("ALTER TABLE dr DROP COLUMN c")
    assert pg_error(caught.value).sqlstate == "2BP01"
    both(db, oracle, "ALTER TABLE dr DROP COLUMN d")
    changes(db, oracle, "dr", rng, "({a}, 3, 'y')")
    assert rows(db, "SELECT * FROM dr") == rows(oracle, "SELECT * FROM dr")
    assert rows(db, "SELECT * FROM dr_m") == rows(oracle, "SELECT a, sum(b) FROM dr GROUP BY a")
    both(db, oracle, "ALTER TABLE dr DROP COLUMN c CASCADE")
    assert db.execute("SHOW VIEWS").fetchall() == [
        v for v in db.execute("SHOW VIEWS").fetchall() if not v[0].startswith("dr_")]
    assert ("dr_c",) not in [(r[0],) for r in db.execute("SHOW INDEXES").fetchall()]
    changes(db, oracle, "dr", rng, "({a}, 4)")
    assert rows(db, "SELECT * FROM dr") == rows(oracle, "SELECT * FROM dr")
    assert rows(db, "SELECT * FROM dr_m") == rows(oracle, "SELECT a, sum(b) FROM dr GROUP BY a")
    db.execute("ALTER TABLE dr DROP COLUMN IF EXISTS zz")
    with pytest.raises(ProgrammingError, match='^column "zz" of relation "dr" does not exist'):
        db.execute("ALTER TABLE dr DROP zz")
    db.execute("CREATE TABLE dk (k INT PRIMARY KEY, v INT)")
    db.execute("ALTER TABLE dk DROP COLUMN k")
    assert db.execute("SHOW CREATE TABLE dk").fetchall()[0][1] == "CREATE TABLE dk (v int)"
    assert db.execute("SHOW INDEXES ON dk").fetchall() == []
    with pytest.raises(ProgrammingError, match="only column"):
        db.execute("ALTER TABLE dk DROP COLUMN v")


def test_rename_column_and_relations(db: matview.Connection) -> None:
    rng, oracle = random.Random(3), duckdb.connect()
    both(db, oracle, "CREATE TABLE rn (a INT, b INT)")
    db.execute("CREATE INDEX rn_a ON rn (a)")
    db.execute("CREATE MATERIALIZED VIEW rn_m AS SELECT a, sum(b) AS s FROM rn GROUP BY a")
    db.execute("CREATE VIEW rn_v AS SELECT r.* FROM rn r WHERE b > 0")
    changes(db, oracle, "rn", rng, "({a}, {a})")
    both(db, oracle, "ALTER TABLE rn RENAME COLUMN a TO x")
    both(db, oracle, "ALTER TABLE rn RENAME TO rn2")
    with pytest.raises(ProgrammingError, match='^column "b" of relation "rn2" already exists$'):
        db.execute("ALTER TABLE rn2 RENAME x TO b")
    with pytest.raises(ProgrammingError, match='^relation "rn_v" already exists$') as caught:
        db.execute("ALTER TABLE rn2 RENAME TO rn_v")
    assert pg_error(caught.value).sqlstate == "42P07"
    changes(db, oracle, "rn2", rng, "({a}, 2)", "x")
    assert rows(db, "SELECT * FROM rn_m") == rows(oracle, "SELECT x, sum(b) FROM rn2 GROUP BY x")
    assert rows(db, "SELECT * FROM rn_v") == rows(oracle, "SELECT * FROM rn2 WHERE b > 0")
    assert [d[0] for d in db.execute("SELECT * FROM rn_v").description] == ["a", "b"]
    assert db.execute("SHOW CREATE MATERIALIZED VIEW rn_m").fetchall()[0][1] == (
        "CREATE MATERIALIZED VIEW rn_m (a, s) AS SELECT rn.x AS a, SUM(rn.b) AS s "
        "FROM rn2 AS rn GROUP BY rn.x")
    assert db.execute("SHOW INDEXES ON rn2").fetchall() == [("rn_a", "rn2", "{x}")]
    db.execute("ALTER MATERIALIZED VIEW rn_m RENAME TO rn_m2")
    db.execute("ALTER VIEW rn_v RENAME TO rn_v2")
    with pytest.raises(ProgrammingError, match='^"rn_m2" is not a view$'):
        db.execute("ALTER VIEW rn_m2 RENAME TO rn_m3")
    changes(db, oracle, "rn2", rng, "({a}, 5)", "x")
    assert rows(db, "SELECT * FROM rn_m2") == rows(oracle,
                                                   "SELECT x, sum(b) FROM rn2 GROUP BY x")
    assert rows(db, "SELECT * FROM rn_v2") == rows(oracle, "SELECT * FROM rn2 WHERE b > 0")


def test_views_joining_with_using_or_natural_keep_their_join(db: matview.Connection) -> None:
    """A USING join stays one; a NATURAL join joins by the columns its sides shared when
    the view was created (a column added to both later does not join them); a column
    joined by is renamed as PostgreSQL shows it, the table's reference listing its old
    name."""
    rng, oracle = random.Random(9), duckdb.connect()
    both(db, oracle, "CREATE TABLE uj (a INT, b INT)")
    both(db, oracle, "CREATE TABLE uk (a INT, c INT)")
    db.execute("CREATE VIEW uj_v AS SELECT * FROM uj JOIN uk USING (a)")
    db.execute("CREATE MATERIALIZED VIEW uj_n AS SELECT * FROM uj NATURAL JOIN uk")
    db.execute("CREATE MATERIALIZED VIEW uj_f AS SELECT a, count(c) AS n FROM uj FULL JOIN uk "
               "USING (a) GROUP BY a")
    db.execute("CREATE VIEW uj_self AS SELECT * FROM uj NATURAL JOIN uj AS u2")
    changes(db, oracle, "uj", rng, "({a}, {a} * 2)")
    changes(db, oracle, "uk", rng, "({a}, 1), ({a}, 2)")
    both(db, oracle, "ALTER TABLE uk ADD COLUMN b INT DEFAULT 0")
    changes(db, oracle, "uk", rng, "({a}, 3, {a})")
    assert db.execute("SHOW CREATE MATERIALIZED VIEW uj_n").fetchall()[0][1] == (
        "CREATE MATERIALIZED VIEW uj_n (a, b, c) AS SELECT a AS a, uj.b AS b, uk.c AS c "
        "FROM uj AS uj JOIN uk AS uk USING (a)")
    both(db, oracle, "ALTER TABLE uj RENAME COLUMN a TO x")
    both(db, oracle, "ALTER TABLE uj RENAME TO uj2")
    changes(db, oracle, "uj2", rng, "({a}, 5)", "x")
    joined = "FROM uj2 JOIN uk ON x = uk.a"
    for view, query in [("uj_v", f"SELECT x, uj2.b, c {joined}"),
                        ("uj_n", f"SELECT x, uj2.b, c {joined}"),
                        ("uj_f", "SELECT coalesce(x, uk.a), count(c) FROM uj2 FULL JOIN uk ON "
                                 "x = uk.a GROUP BY 1"),
                        ("uj_self", "SELECT u1.x, u1.b FROM uj2 u1 JOIN uj2 u2 ON u1.x = u2.x "
                                    "AND u1.b = u2.b")]:
        assert rows(db, f"SELECT * FROM {view}") == rows(oracle, query), view
    assert db.execute("SHOW CREATE VIEW uj_v").fetchall()[0][1] == (
        "CREATE VIEW uj_v (a, b, c) AS SELECT a AS a, uj.b AS b, uk.c AS c FROM uj2 AS uj(a) "
        "JOIN uk AS uk USING (a)")
    with pytest.raises(ProgrammingError, match="^cannot drop column a of table uk because "
                       "other objects depend on it: uj_v, uj_n, uj_f"):
        db.execute("ALTER TABLE uk DROP COLUMN a")  # joined by
    both(db, oracle, "ALTER TABLE uk DROP COLUMN b")
    assert rows(db, "SELECT * FROM uj_n") == rows(oracle, f"SELECT x, uj2.b, c {joined}")
    db.execute("CREATE TABLE uw (w INT)")
    db.execute("CREATE VIEW uj_w AS SELECT a FROM uk JOIN uk AS k2 USING (a), uw")
    with pytest.raises(ProgrammingError, match='^cannot alter "uw": view "uj_w", which reads '
                       "it, would not read it altered"):
        db.execute("ALTER TABLE uw ADD COLUMN a INT")  # its merged column made ambiguous
    assert len(db.execute("SELECT * FROM uw").description) == 1


def test_comments(db: matview.Connection) -> None:
    db.execute("CREATE TABLE cm (a INT, b TEXT)")
    db.execute("CREATE MATERIALIZED VIEW cm_m AS SELECT a FROM cm")
    db.execute("COMMENT ON TABLE cm IS 'the table'")
    db.execute("COMMENT ON COLUMN cm.b IS 'it''s b'")
    db.execute("COMMENT ON MATERIALIZED VIEW cm_m IS 'a view'")
    db.execute("COMMENT ON COLUMN cm.a IS 'a'")
    db.execute("COMMENT ON COLUMN cm.a IS NULL")
    shown = [r for r in db.execute("SHOW COMMENTS").fetchall() if r[0].startswith("cm")]
    assert shown == [("cm", "table", None, "the table"), ("cm", "table", "b", "it's b"),
                     ("cm_m", "materialized view", None, "a view")]
    with pytest.raises(ProgrammingError, match='^"cm_m" is not a view$'):
        db.execute("COMMENT ON VIEW cm_m IS 'x'")
    with pytest.raises(ProgrammingError, match='^column "z" of relation "cm" does not exist$'):
        db.execute("COMMENT ON COLUMN cm.z IS 'x'")


def test_a_durable_database_reopens_after_every_kind_of_alter(spark: SparkSession,
                                                              tmp_path: Path) -> None:
    path, state = tmp_path / "db", None

    def reopened(*statements: str) -> None:
        """Reopen the database: it holds what it held; run ``statements``, then insert."""
        nonlocal state
        with matview.connect(path, spark=spark, clock=0) as con:
            if state is not None:
                assert {q: rows(con, q) for q in _STATE} == state
            for statement in statements:
                con.execute(statement)
            con.execute("INSERT INTO t2 (a, bb) VALUES (3, 10), (1, 1)")
            assert rows(con, "SELECT * FROM m2") == rows(
                con, "SELECT a, sum(bb) FROM t2 WHERE a > 0 GROUP BY a")
            assert rows(con, "SELECT * FROM kj") == rows(
                con, "SELECT a, id, bb, c FROM k AS k(id, a) JOIN t2 USING (a)")
            state = {q: rows(con, q) for q in _STATE}

    reopened("CREATE TABLE t (a INT, b INT)", "INSERT INTO t VALUES (1, 2), (3, 4), (-1, 0)",
             "CREATE VIEW v AS SELECT * FROM t WHERE a > 0",
             "CREATE MATERIALIZED VIEW m AS SELECT a, sum(b) AS s FROM v GROUP BY a",
             "CREATE INDEX t_b ON t (b)", "ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'x'",
             "ALTER TABLE t RENAME COLUMN b TO bb", "ALTER TABLE t RENAME TO t2",
             "ALTER MATERIALIZED VIEW m RENAME TO m2", "INSERT INTO t2 VALUES (1, 5, 'y')",
             "COMMENT ON COLUMN t2.c IS 'see'", "COMMENT ON TABLE t2 IS 'tee'",
             "CREATE TABLE k (id INT, a INT)", "INSERT INTO k VALUES (1, 1), (2, 3), (3, NULL)",
             "CREATE MATERIALIZED VIEW kj AS SELECT * FROM k NATURAL JOIN t2")
    reopened("ALTER TABLE t2 ADD COLUMN gone INT", "INSERT INTO t2 VALUES (2, 2, 'z', 1)",
             "ALTER TABLE t2 DROP COLUMN gone",
             "ALTER TABLE k ADD PRIMARY KEY (id), ALTER COLUMN a SET DEFAULT 0, ADD COLUMN w "
             "TEXT DEFAULT 'w' NOT NULL, ADD CONSTRAINT k_w UNIQUE (w, id)",
             "ALTER TABLE k RENAME COLUMN a TO ka",
             "ALTER TABLE k RENAME CONSTRAINT k_pkey TO k_id",
             "ALTER TABLE k ALTER COLUMN w DROP DEFAULT, ALTER COLUMN w TYPE int USING "
             "length(w) + id")
    reopened("ALTER TABLE k DROP CONSTRAINT k_id, ALTER COLUMN w DROP NOT NULL, ALTER COLUMN "
             "w TYPE bigint")
    reopened()


_STATE = ["SELECT * FROM t2", "SELECT * FROM v", "SELECT * FROM m2", "SHOW CREATE TABLE t2",
          "SHOW CREATE VIEW v", "SHOW CREATE MATERIALIZED VIEW m2", "SHOW INDEXES",
          "SHOW COMMENTS", "SELECT * FROM k", "SELECT * FROM kj", "SHOW CREATE TABLE k",
          "SHOW CREATE MATERIALIZED VIEW kj"]
"""What a reopened database must hold as it was."""
