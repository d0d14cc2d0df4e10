"""ALTER TABLE ... ADD | DROP | RENAME CONSTRAINT (``matview.alter_table``): keys added to a
table holding rows (checked as PostgreSQL checks them, with its messages and SQLSTATEs),
enforced by later writes and known to the planner, dropped and renamed; CHECK and FOREIGN
KEY refused as at CREATE TABLE. The table and a view over it agree with DuckDB, written
alike (the writes the keys allow)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal

import duckdb
import pytest
from pyspark.sql import SparkSession

import matview
from matview.errors import IntegrityError, NotSupportedError, ProgrammingError
from tests.support.alter_oracle import both, created, rows, sqlstate


@pytest.fixture(scope="module")
def db(spark: SparkSession) -> Iterator[matview.Connection]:
    """One connection for the module's tests (each uses tables of its own names)."""
    with matview.connect(clock=0, spark=spark) as connection:
        yield connection


def test_keys_added_to_rows_checked_enforced_and_dropped(db: matview.Connection) -> None:
    rng, oracle = random.Random(21), duckdb.connect()
    both(db, oracle, "CREATE TABLE ky (a INT, b INT, c TEXT)")
    db.execute("CREATE MATERIALIZED VIEW ky_m AS SELECT a, count(*) AS n FROM ky GROUP BY a")
    both(db, oracle, "INSERT INTO ky VALUES (1, 1, 'x'), (1, 2, 'y'), (2, NULL, 'z')")
    refused = [
        ("ALTER TABLE ky ADD PRIMARY KEY (a)", IntegrityError,
         r'^could not create unique index "ky_pkey": Key \(a\)=\(1\) is duplicated\.$',
         "23505"),
        ("ALTER TABLE ky ADD CONSTRAINT k2 UNIQUE (b), ADD PRIMARY KEY (b)", IntegrityError,
         '^column "b" of relation "ky" contains null values$', "23502"),
        ("ALTER TABLE ky ADD UNIQUE (zz)", ProgrammingError,
         '^column "zz" named in key does not exist$', "42703"),
        ("ALTER TABLE ky ADD UNIQUE (a, c), ADD CONSTRAINT ky_m UNIQUE (c)", ProgrammingError,
         '^relation "ky_m" already exists$', "42P07"),
        ("ALTER TABLE ky ADD PRIMARY KEY (c), ADD PRIMARY KEY (b)", ProgrammingError,
         '^multiple primary keys for table "ky" are not allowed$', "42P16"),
        ("ALTER TABLE ky DROP CONSTRAINT nothing", ProgrammingError,
         '^constraint "nothing" of relation "ky" does not exist$', "42704"),
        ("ALTER TABLE ky ADD CHECK (a > 0)", NotSupportedError,
         r"^CHECK constraints are not supported yet \(a table's writes are checked against "
         r"NOT NULL, PRIMARY KEY and UNIQUE constraints only\)", "0A000"),
        ("ALTER TABLE ky ADD CONSTRAINT f FOREIGN KEY (a) REFERENCES ky_m (a)",
         NotSupportedError, "^FOREIGN KEY constraints are not supported yet", "0A000"),
        ("ALTER TABLE ky ADD COLUMN k INT DEFAULT 1 PRIMARY KEY", IntegrityError,
         r'^could not create unique index "ky_pkey": Key \(k\)=\(1\) is duplicated\.$',
         "23505"),
    ]
    for sql, error, message, code in refused:
        with pytest.raises(error, match=message) as caught:
            db.execute(sql)
        assert sqlstate(caught.value) == code, sql
        assert created(db, "ky") == "CREATE TABLE ky (a int, b int, c text)", sql
    db.execute("ALTER TABLE ky ADD UNIQUE (b), ADD CONSTRAINT ky_ac UNIQUE (a, c), "
               "ADD PRIMARY KEY (c)")  # NULLs are exempt from a unique key
    assert created(db, "ky") == (
        "CREATE TABLE ky (a int, b int, c text NOT NULL, CONSTRAINT ky_b_key UNIQUE (b), "
        "CONSTRAINT ky_ac UNIQUE (a, c), CONSTRAINT ky_pkey PRIMARY KEY (c))")
    assert db.execute("SHOW INDEXES ON ky").fetchall() == [
        ("ky_ac", "ky", "{a, c}"), ("ky_b_key", "ky", "{b}"), ("ky_pkey", "ky", "{c}")]
    plan = db.explain("SELECT * FROM ky", "optimized", "text", ["keys"])
    assert "// { keys: ((#2)) }" in plan  # the planner knows the primary key
    for sql, key in [("INSERT INTO ky VALUES (3, 1, 'w')", "ky_b_key"),
                     ("INSERT INTO ky VALUES (3, 3, 'x')", "ky_pkey")]:
        with pytest.raises(IntegrityError, match=f'violates unique constraint "{key}"'):
            db.execute(sql)
    both(db, oracle, "INSERT INTO ky VALUES (4, 4, 'k4'), (4, NULL, 'k5')")
    both(db, oracle, "DELETE FROM ky WHERE c = 'x'")
    assert rows(db, "SELECT * FROM ky_m") == rows(oracle, "SELECT a, count(*) FROM ky GROUP BY a")
    db.execute("ALTER TABLE ky DROP CONSTRAINT ky_b_key, DROP CONSTRAINT IF EXISTS nothing")
    with pytest.raises(ProgrammingError, match='^column "c" is in a primary key$') as caught:
        db.execute("ALTER TABLE ky ALTER c DROP NOT NULL")
    assert sqlstate(caught.value) == "42P16"
    db.execute("ALTER TABLE ky RENAME CONSTRAINT ky_pkey TO ky_c")
    for sql, message, code in [
            ("ALTER TABLE ky RENAME CONSTRAINT nope TO x",
             '^constraint "nope" for table "ky" does not exist$', "42704"),
            ("ALTER TABLE ky RENAME CONSTRAINT ky_c TO ky_ac", '^relation "ky_ac" already '
             "exists$", "42P07")]:
        with pytest.raises(ProgrammingError, match=message) as caught:
            db.execute(sql)
        assert sqlstate(caught.value) == code, sql
    for i in rng.sample(range(10, 40), 4):
        both(db, oracle, f"INSERT INTO ky VALUES ({i % 3}, NULL, 'c{i}')")
    both(db, oracle, f"DELETE FROM ky WHERE a = {rng.randrange(3)}")
    both(db, oracle, "INSERT INTO ky VALUES (5, 4, 'k6')")  # b's key dropped
    assert rows(db, "SELECT * FROM ky") == rows(oracle, "SELECT * FROM ky")
    assert rows(db, "SELECT * FROM ky_m") == rows(oracle, "SELECT a, count(*) FROM ky GROUP BY a")
    db.execute("ALTER TABLE ky DROP CONSTRAINT ky_c")  # its column stays NOT NULL
    assert created(db, "ky") == (
        "CREATE TABLE ky (a int, b int, c text NOT NULL, CONSTRAINT ky_ac UNIQUE (a, c))")
    assert db.execute("SHOW INDEXES ON ky").fetchall() == [("ky_ac", "ky", "{a, c}")]
    assert "// { keys: () }" in db.explain("SELECT * FROM ky", "optimized", "text", ["keys"])
    both(db, oracle, "INSERT INTO ky VALUES (6, 6, 'k4')")  # c's key dropped
    assert rows(db, "SELECT * FROM ky_m") == rows(oracle, "SELECT a, count(*) FROM ky GROUP BY a")


def test_a_key_replaced_in_one_statement(db: matview.Connection) -> None:
    """DROP CONSTRAINT and ADD of the same name in one statement; a key of columns that
    ALTER TYPE changes is checked again (casts may make values equal)."""
    db.execute("CREATE TABLE kr (a NUMERIC(4, 1), b INT, CONSTRAINT kr_k UNIQUE (a))")
    db.execute("INSERT INTO kr VALUES (1.1, 1), (1.2, 2)")
    db.execute("ALTER TABLE kr DROP CONSTRAINT kr_k, ADD CONSTRAINT kr_k UNIQUE (b)")
    assert created(db, "kr") == "CREATE TABLE kr (a numeric(4,1), b int, CONSTRAINT kr_k " \
        "UNIQUE (b))"
    db.execute("ALTER TABLE kr ADD CONSTRAINT kr_a UNIQUE (a)")
    with pytest.raises(IntegrityError, match=r'^could not create unique index "kr_a": Key '
                       r"\(a\)=\(1\) is duplicated\.$"):
        db.execute("ALTER TABLE kr ALTER a TYPE int")
    assert rows(db, "SELECT * FROM kr") == [(Decimal("1.1"), 1), (Decimal("1.2"), 2)]
