"""ALTER TABLE ... ALTER COLUMN (SET | DROP DEFAULT, SET | DROP NOT NULL, TYPE) and several
actions in one statement (``matview.alter_table``): PostgreSQL's semantics, messages and
SQLSTATEs; the table and the views over it agree with DuckDB, written alike, before and
after each ALTER; a statement that fails changes nothing."""

from __future__ import annotations

import random
from collections.abc import Iterator

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import DataError, IntegrityError, NotSupportedError, ProgrammingError
from tests.support.alter_oracle import both, changes, created, rows, sqlstate


@pytest.fixture(scope="module")
def db(spark: SparkSession) -> Iterator[matview.Connection]:
    """One connection for the module's tests (each uses tables of its own names)."""
    with matview.connect(clock=0, spark=spark) as connection:
        yield connection


def test_defaults_and_not_null(db: matview.Connection) -> None:
    rng, oracle = random.Random(11), duckdb.connect()
    both(db, oracle, "CREATE TABLE cd (a INT, b INT, c TEXT)")
    db.execute("CREATE MATERIALIZED VIEW cd_m AS SELECT a, count(*) AS n, count(b) AS nb, "
               "min(c) AS c FROM cd GROUP BY a")
    changes(db, oracle, "cd", rng, "({a}, {a}, 'x')")
    db.execute("ALTER TABLE cd ALTER COLUMN b SET DEFAULT 3 + 4, ALTER c SET DEFAULT 'd'")
    oracle.execute("ALTER TABLE cd ALTER COLUMN b SET DEFAULT 3 + 4")
    oracle.execute("ALTER TABLE cd ALTER c SET DEFAULT 'd'")
    both(db, oracle, "INSERT INTO cd (a) VALUES (1), (2)")
    assert created(db, "cd") == "CREATE TABLE cd (a int, b int DEFAULT 3 + 4, c text DEFAULT 'd')"
    both(db, oracle, "ALTER TABLE cd ALTER b SET NOT NULL")
    with pytest.raises(IntegrityError, match='^null value in column "b" of relation "cd" '
                       "violates not-null constraint$"):
        db.execute("INSERT INTO cd VALUES (1, NULL, 'z')")
    both(db, oracle, "ALTER TABLE cd ALTER COLUMN b DROP DEFAULT")
    both(db, oracle, "ALTER TABLE cd ALTER COLUMN c DROP DEFAULT")
    with pytest.raises(IntegrityError, match="violates not-null constraint"):
        db.execute("INSERT INTO cd (a) VALUES (3)")  # its default dropped: NULL
    both(db, oracle, "ALTER TABLE cd ALTER COLUMN b DROP NOT NULL")
    both(db, oracle, "INSERT INTO cd (a) VALUES (3)")
    changes(db, oracle, "cd", rng, "({a}, NULL, NULL), ({a}, 1, 'y')")
    assert rows(db, "SELECT * FROM cd") == rows(oracle, "SELECT * FROM cd")
    assert rows(db, "SELECT * FROM cd_m") == rows(
        oracle, "SELECT a, count(*), count(b), min(c) FROM cd GROUP BY a")
    assert created(db, "cd") == "CREATE TABLE cd (a int, b int, c text)"
    with pytest.raises(IntegrityError, match='^column "b" of relation "cd" contains null '
                       "values$") as caught:
        db.execute("ALTER TABLE cd ALTER COLUMN b SET DEFAULT 1, ALTER COLUMN b SET NOT NULL")
    assert sqlstate(caught.value) == "23502"
    refusals = [
        ("ALTER TABLE cd ALTER COLUMN b SET DEFAULT 'abc'", ProgrammingError,
         'invalid input syntax for type integer: "abc"', "22P02"),
        ("ALTER TABLE cd ALTER COLUMN b SET DEFAULT a + 1", ProgrammingError,
         "cannot use column reference in DEFAULT expression", None),
        ("ALTER TABLE cd ALTER COLUMN zz SET DEFAULT 1", ProgrammingError,
         '^column "zz" of relation "cd" does not exist$', "42703"),
        ("ALTER TABLE cd ALTER COLUMN zz DROP NOT NULL", ProgrammingError,
         '^column "zz" of relation "cd" does not exist$', "42703"),
    ]
    for sql, error, message, code in refusals:
        with pytest.raises(error, match=message) as caught:
            db.execute(sql)
        assert code is None or sqlstate(caught.value) == code, sql
    assert created(db, "cd") == "CREATE TABLE cd (a int, b int, c text)"


def test_alter_type(db: matview.Connection) -> None:
    """Each value cast (or the USING expression's); refused for a column a view reads, and
    without USING where an INSERT would not convert; a failing cast changes nothing."""
    rng, oracle = random.Random(12), duckdb.connect()
    both(db, oracle, "CREATE TABLE ty (a INT, b TEXT, c NUMERIC(10, 2))")
    db.execute("CREATE MATERIALIZED VIEW ty_m AS SELECT a, count(*) AS n FROM ty GROUP BY a")
    db.execute("CREATE VIEW ty_v AS SELECT a, c FROM ty WHERE a > 1")
    changes(db, oracle, "ty", rng, "({a}, '{a}', {a}.25), ({a}, '-{a}', NULL)")
    both(db, oracle, "ALTER TABLE ty ALTER COLUMN b TYPE int USING b::int")
    changes(db, oracle, "ty", rng, "({a}, {a} * 3, 1.5)")
    assert rows(db, "SELECT * FROM ty") == rows(oracle, "SELECT * FROM ty")
    both(db, oracle, "ALTER TABLE ty ALTER b SET DATA TYPE text")  # as INSERT converts
    with pytest.raises(ProgrammingError, match='^column "b" cannot be cast automatically to '
                       r"type int \(convert it with USING b::int\)$") as caught:
        db.execute("ALTER TABLE ty ALTER b TYPE int")
    assert sqlstate(caught.value) == "42804"
    both(db, oracle, "ALTER TABLE ty ALTER b TYPE bigint USING length(b) + a")
    changes(db, oracle, "ty", rng, "({a}, {a}, {a}.5)")
    assert rows(db, "SELECT * FROM ty") == rows(oracle, "SELECT * FROM ty")
    assert rows(db, "SELECT * FROM ty_m") == rows(oracle, "SELECT a, count(*) FROM ty GROUP BY a")
    assert rows(db, "SELECT * FROM ty_v") == rows(oracle, "SELECT a, c FROM ty WHERE a > 1")
    for column in ("a", "c"):
        with pytest.raises(NotSupportedError, match="^cannot alter type of a column used by a "
                           f'view or rule: view "ty_(m|v)" depends on column "{column}"$'
                           ) as caught:
            db.execute(f"ALTER TABLE ty ALTER COLUMN {column} TYPE double precision")
        assert sqlstate(caught.value) == "0A000"
    both(db, oracle, "ALTER TABLE ty ADD COLUMN d TEXT DEFAULT 'x'")
    with pytest.raises(ProgrammingError, match='^default for column "d" cannot be cast '
                       "automatically to type int$"):
        db.execute("ALTER TABLE ty ALTER d TYPE int USING 0")
    before = rows(db, "SELECT * FROM ty"), created(db, "ty")
    with pytest.raises(DataError, match='invalid input syntax for type integer: "x"'
                       ) as caught:
        db.execute("ALTER TABLE ty ALTER d DROP DEFAULT, ALTER d TYPE int USING d::int")
    assert sqlstate(caught.value) == "22P02"
    assert (rows(db, "SELECT * FROM ty"), created(db, "ty")) == before
    assert created(db, "ty") == "CREATE TABLE ty (a int, b bigint, c numeric(10,2), d text " \
        "DEFAULT 'x')"


def test_several_actions_apply_in_order_all_or_none(db: matview.Connection) -> None:
    rng, oracle = random.Random(13), duckdb.connect()
    both(db, oracle, "CREATE TABLE ma (a INT, b INT, c INT)")
    db.execute("CREATE MATERIALIZED VIEW ma_m AS SELECT a, sum(b) AS s FROM ma GROUP BY a")
    db.execute("CREATE INDEX ma_c ON ma (c)")
    both(db, oracle, "INSERT INTO ma VALUES (1, 1, NULL), (1, 2, 3)")
    changes(db, oracle, "ma", rng, "({a}, {a}, 7)")

    def state() -> tuple[object, ...]:
        return (created(db, "ma"), rows(db, "SELECT * FROM ma"), rows(db, "SELECT * FROM ma_m"),
                db.execute("SHOW INDEXES ON ma").fetchall())

    before = state()
    failing = [
        ("ALTER TABLE ma ADD COLUMN d INT, DROP COLUMN c, ALTER COLUMN b SET DEFAULT 1, "
         "ADD COLUMN d INT", ProgrammingError, '^column "d" of relation "ma" already exists$',
         "42701"),
        ("ALTER TABLE ma DROP COLUMN c, ADD COLUMN d INT DEFAULT 1, ADD UNIQUE (d)",
         IntegrityError, r'^could not create unique index "ma_d_key": Key \(d\)=\(1\) is '
         r"duplicated\.$", "23505"),
        ("ALTER TABLE ma ALTER COLUMN b SET NOT NULL, ADD e INT, ALTER COLUMN c SET NOT NULL, "
         "DROP e",
         IntegrityError, '^column "c" of relation "ma" contains null values$', "23502"),
        ("ALTER TABLE ma ADD COLUMN d TEXT DEFAULT 'x', ALTER COLUMN d DROP DEFAULT, "
         "ALTER COLUMN d TYPE int USING d::int", DataError, "invalid input syntax", "22P02"),
        ("ALTER TABLE ma DROP COLUMN c, ALTER COLUMN c SET DEFAULT 1", ProgrammingError,
         '^column "c" of relation "ma" does not exist$', "42703"),
    ]
    for sql, error, message, code in failing:
        with pytest.raises(error, match=message) as caught:
            db.execute(sql)
        assert sqlstate(caught.value) == code, sql
        assert state() == before, sql
    db.execute("ALTER TABLE ma ADD COLUMN d INT DEFAULT 5, DROP COLUMN c, ALTER COLUMN b SET "
               "DEFAULT 1, ALTER COLUMN d TYPE bigint USING d * 2, DROP COLUMN IF EXISTS c, "
               "ADD COLUMN IF NOT EXISTS d INT")
    for sql in ("ALTER TABLE ma ADD COLUMN d BIGINT DEFAULT 10", "ALTER TABLE ma DROP COLUMN c",
                "ALTER TABLE ma ALTER COLUMN b SET DEFAULT 1",
                "ALTER TABLE ma ALTER COLUMN d SET DEFAULT 5"):
        oracle.execute(sql)
    assert created(db, "ma") == "CREATE TABLE ma (a int, b int DEFAULT 1, d bigint DEFAULT 5)"
    assert db.execute("SHOW INDEXES ON ma").fetchall() == []  # ma_c went with c
    changes(db, oracle, "ma", rng, "({a}, 2, {a})")
    both(db, oracle, "INSERT INTO ma (a) VALUES (4)")
    assert rows(db, "SELECT * FROM ma") == rows(oracle, "SELECT * FROM ma")
    assert rows(db, "SELECT * FROM ma_m") == rows(oracle, "SELECT a, sum(b) FROM ma GROUP BY a")
