"""``concat``, ``concat_ws``, ``replace``, ``split_part``, ``greatest`` and ``least``, with
PostgreSQL's semantics: ``concat`` skips NULLs (never NULL itself) and prints a boolean
``t``/``f``, ``concat_ws`` skips NULLs and is NULL for a NULL separator, ``replace`` of an
empty text replaces nothing, ``split_part`` counts negative positions from the end and fails
at position zero, ``regexp_replace`` replaces the first match (every one with ``g``) with
PostgreSQL's ``\\1`` and ``\\&``, ``greatest``/``least`` skip NULLs over their arguments'
common type, NaN above every number.

Their reference meanings are checked against PostgreSQL's values and against DuckDB where
it agrees (``test_matches_duckdb``); their binding errors by message and position; and a
materialized view using them on Spark, through inserts, updates and deletes, against the
values PostgreSQL gives (DuckDB prints booleans ``true``). The oracle's ``text_functions``
shape maintains them under random transactions against DuckDB.
"""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from matview.ir.eval_error import EvalError
from matview.ir.interpret import interpret
from matview.ir.types import DOUBLE, INT, TEXT, Kind, SqlType
from matview.sql.errors import InvalidValueError, SqlError, SqlTypeError, UnsupportedError
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession

import matview
from tests.support.sql_env import (
    Environment,
    assert_denotes,
    assert_refused_at,
    assert_value,
    environment,
)

TABLE = "CREATE TABLE t (k INT, s TEXT, n BIGINT, x DOUBLE, b BOOLEAN, d DATE)"
ROWS = [
    (1, "abcabc", 5, 1.5, True, datetime.date(2024, 1, 2)),
    (2, None, None, None, None, None),
    (3, "", -3, -0.25, False, datetime.date(1999, 12, 31)),
    (4, "rr", 7, 8.0, None, None),
]


@pytest.fixture(scope="module")
def env() -> Environment:
    """Table ``t`` for the binder and the reference interpreter, and in DuckDB."""
    return environment({"t": TABLE}, {"t": ROWS}, ())


def _interpret(sql: str, env: Environment) -> list[tuple]:
    [query] = parse(sql, env[0])
    assert isinstance(query, Query)
    return list(interpret(query.plan, env[1]).elements())


DUCKDB_QUERIES = [
    "SELECT k, concat(s, '/', n, '/', k), concat(s), concat(NULL, s), concat(d, s) FROM t",
    "SELECT k, concat_ws('-', s, n, k), concat_ws(s, 'a', 'b'), concat_ws(',', d) FROM t",
    "SELECT k, replace(s, 'b', 'XY'), replace(s, 'r', ''), replace(s, s, 'z') FROM t",
    "SELECT k, greatest(n, k, 0), least(n, k), greatest(x, n), least(s, 'b'), "
    "greatest(d, DATE '2000-01-01') FROM t",
    "SELECT greatest(n, 0) AS g, count(*) FROM t GROUP BY 1",
    "SELECT k, split_part(s, 'b', 2), split_part(s, 'b', -1), split_part(s, 'bc', 3), "
    "split_part(s, 'r', -3) FROM t",
    "SELECT k, regexp_replace(s, 'b(.)', 'X\\1Y'), regexp_replace(s, 'B', 'x', 'gi'), "
    "regexp_replace(s, 'c', '$', 'g'), regexp_replace(s, '(a)|(r)', '[\\2]', 'g') FROM t",
    "SELECT k FROM t WHERE least(n, 6) > 4 OR concat(s, 'x') = 'x'",
]


@pytest.mark.parametrize("sql", DUCKDB_QUERIES)
def test_matches_duckdb(sql: str, env: Environment) -> None:
    assert_denotes(sql, "raw", env)


POSTGRES_VALUES = [
    ("concat('a', NULL, 1, true, false, 2.50)", "a1tf2.50", TEXT),
    ("concat(NULL)", "", TEXT),
    ("concat(DATE '2024-02-29', ' ', 1.5::double precision)", "2024-02-29 1.5", TEXT),
    ("concat_ws(', ', 'a', NULL, 'b', true)", "a, b, t", TEXT),
    ("concat_ws(NULL, 'a', 'b')", None, TEXT),
    ("concat_ws('-')", "", TEXT),
    ("replace('abcabc', 'bc', 'X')", "aXaX", TEXT),
    ("replace('abc', '', 'x')", "abc", TEXT),
    ("replace('abc', NULL, 'x')", None, TEXT),
    ("greatest(1, NULL, 3)", 3, INT),
    ("least(NULL, 2, 1)", 1, INT),
    ("greatest(1, 2.5)", Decimal("2.5"), SqlType(Kind.NUMERIC, 20, 1)),
    ("least('NaN'::double precision, 1)", 1.0, DOUBLE),
    ("greatest('b', 'ab', 'B')", "b", TEXT),
    ("least(7)", 7, INT),
    ("split_part('a,b,,c', ',', 3)", "", TEXT),
    ("split_part('a,b,c', ',', -1)", "c", TEXT),
    ("split_part('a<>b<>c', '<>', 2)", "b", TEXT),
    ("split_part('abc', '', 1)", "abc", TEXT),
    ("split_part('abc', '', -1)", "abc", TEXT),
    ("split_part('abc', '', 2)", "", TEXT),
    ("split_part('a,b', ',', 5)", "", TEXT),
    ("split_part('', ',', 1)", "", TEXT),
    ("split_part(NULL, ',', 1)", None, TEXT),
    ("regexp_replace('foobarbaz', 'b..', 'X')", "fooXbaz", TEXT),
    ("regexp_replace('foobarbaz', 'b..', 'X', 'g')", "fooXX", TEXT),
    ("regexp_replace('foobarbaz', 'b(..)', 'X\\1Y', 'g')", "fooXarYXazY", TEXT),
    ("regexp_replace('Thomas', '.[mN]a.', 'M')", "ThM", TEXT),
    ("regexp_replace('abc', 'B', 'x', 'i')", "axc", TEXT),
    ("regexp_replace('abcB', 'B', 'x', 'ic')", "abcx", TEXT),
    ("regexp_replace('abcB', 'B', 'x', 'ci')", "axcB", TEXT),
    ("regexp_replace('abc', 'b', '[\\&]')", "a[b]c", TEXT),
    ("regexp_replace('abc', 'b', '$1\\\\')", "a$1\\c", TEXT),
    ("regexp_replace('a1b', '(\\d)', '\\10')", "a10b", TEXT),
    ("regexp_replace('abc', '(x)?b', '[\\1\\2]')", "a[]c", TEXT),
    ("regexp_replace(NULL, 'b', 'x')", None, TEXT),
    ("regexp_replace('abc', 'b', NULL)", None, TEXT),
]


@pytest.mark.parametrize(("expression", "value", "sql_type"), POSTGRES_VALUES)
def test_postgres_values(expression: str, value: object, sql_type: SqlType,
                         env: Environment) -> None:
    assert_value(expression, value, sql_type, env)


def test_split_part_at_position_zero_fails(env: Environment) -> None:
    with pytest.raises(EvalError, match="field position must not be zero"):
        _interpret("SELECT split_part(s, ',', 0) FROM t WHERE k = 1", env)


def test_greatest_of_nan_is_nan(env: Environment) -> None:
    [[got]] = _interpret("SELECT greatest(x, 'NaN'::double precision) FROM t WHERE k = 1",
                         env)
    assert got != got


ERRORS = [
    ("SELECT greatest(k, s) FROM t", SqlTypeError,
     "GREATEST types int and text cannot be matched", 1, 8),
    ("SELECT least(d, 1) FROM t", SqlTypeError, "LEAST types date and int cannot be matched",
     1, 8),
    ("SELECT replace(s, 1, 'x') FROM t", SqlTypeError,
     "function replace(text, int, text) does not exist", 1, 8),
    ("SELECT replace(s, 'x') FROM t", SqlTypeError,
     "function replace takes 3 arguments (2 given)", 1, 8),
    ("SELECT concat_ws(k, s) FROM t", SqlTypeError,
     "function concat_ws(int, ...) does not exist", 1, 8),
    ("SELECT concat_ws() FROM t", SqlTypeError,
     "function concat_ws takes at least 1 argument (0 given)", 1, 8),
    ("SELECT concat() FROM t", SqlTypeError,
     "function concat takes at least 1 argument (0 given)", 1, 8),
    ("SELECT split_part(s, ',') FROM t", SqlTypeError,
     "function split_part takes 3 arguments (2 given)", 1, 8),
    ("SELECT x + split_part(s, ',', d) FROM t", SqlTypeError,
     "function split_part(text, text, date) does not exist", 1, 12),
    ("SELECT regexp_replace(s, 'a', 'b', 'gz') FROM t", InvalidValueError,
     'invalid regular expression option: "z"', 1, 8),
    ("SELECT regexp_replace(s, s, 'b') FROM t", UnsupportedError,
     "regexp_replace with a pattern, replacement or flags that are not constants is not "
     "supported yet", 1, 8),
    ("SELECT regexp_replace(s, 'a') FROM t", SqlTypeError,
     "function regexp_replace takes 3 or 4 arguments (2 given)", 1, 8),
    ("SELECT regexp_replace(k, 'a', 'b') FROM t", SqlTypeError,
     "function regexp_replace(int, text, text) does not exist", 1, 8),
    ("SELECT greatest() FROM t", SqlTypeError,
     "function greatest takes at least 1 argument (0 given)", 1, 8),
]


@pytest.mark.parametrize(("sql", "kind", "message", "line", "col"), ERRORS)
def test_errors(sql: str, kind: type[SqlError], message: str, line: int, col: int,
                env: Environment) -> None:
    assert_refused_at(sql, kind, message, line, col, env)


VIEW = ("SELECT k, concat(s, '|', n, '|', b) AS joined, concat_ws('/', s, b, n) AS parts, "
        "replace(s, 'bc', 'X') AS replaced, replace(s, '', 'z') AS unchanged, "
        "greatest(n, k, x) AS top, least(n, k) AS low, greatest(s, 'b') AS after_b "
        "FROM t")


def test_a_view_of_them_on_spark_gives_postgres_values(spark: SparkSession) -> None:
    """The view, maintained on Spark through inserts, an update and a delete, holds what
    PostgreSQL computes for its query (booleans ``t``/``f``, NULLs skipped)."""
    con = matview.connect(clock=0, spark=spark)
    con.execute(TABLE)
    con.execute(f"CREATE MATERIALIZED VIEW v AS {VIEW}")
    con.insert("t", ROWS)
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [
        (1, "abcabc|5|t", "abcabc/t/5", "aXaX", "abcabc", 5.0, 1, "b"),
        (2, "||", "", None, None, 2.0, 2, "b"),
        (3, "|-3|f", "/f/-3", "", "", 3.0, -3, "b"),
        (4, "rr|7|", "rr/7", "rr", "rr", 8.0, 4, "rr"),
    ]
    con.execute("UPDATE t SET s = 'bcd', b = NOT b, n = n * 2 WHERE k IN (1, 3)")
    con.execute("DELETE FROM t WHERE k = 4")
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [
        (1, "bcd|10|f", "bcd/f/10", "Xd", "bcd", 10.0, 1, "bcd"),
        (2, "||", "", None, None, 2.0, 2, "b"),
        (3, "bcd|-6|t", "bcd/t/-6", "Xd", "bcd", 3.0, -6, "bcd"),
    ]


def test_split_part_in_a_view_on_spark_gives_postgres_values(spark: SparkSession) -> None:
    """Fields counted from either end, an empty delimiter, positions beyond the fields; a
    position of zero is an error of the view while its row is there."""
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE p (k INT, s TEXT, d TEXT, n INT)")
    con.execute("CREATE MATERIALIZED VIEW f AS SELECT k, split_part(s, d, n) AS field FROM p")
    con.insert("p", [(1, "a,b,c", ",", 2), (2, "a,b,c", ",", -1), (3, "a,b,c", ",", -4),
                     (4, "abc", "", 1), (5, "abc", "", -1), (6, "abc", "", 2),
                     (7, "", ",", 1), (8, "x::y", "::", 2), (9, None, ",", 1),
                     (10, "a,b", None, 1), (11, "a,b", ",", None)])
    assert sorted(con.execute("SELECT * FROM f").fetchall()) == [
        (1, "b"), (2, "c"), (3, ""), (4, "abc"), (5, "abc"), (6, ""), (7, ""), (8, "y"),
        (9, None), (10, None), (11, None)]
    con.insert("p", [(12, "a,b", ",", 0)])
    with pytest.raises(matview.DataError, match="field position must not be zero"):
        con.execute("SELECT * FROM f")
    con.execute("DELETE FROM p WHERE n = 0")
    assert len(con.execute("SELECT * FROM f").fetchall()) == 11


def test_regexp_replace_in_a_view_on_spark_gives_postgres_values(spark: SparkSession) -> None:
    """Spark's (Java's) ``regexp_replace`` with the pattern and replacement bound from
    PostgreSQL's: ``\\1`` and ``\\&``, a literal ``$``, the first match only without
    ``g``, case folded with ``i``."""
    con = matview.connect(clock=0, spark=spark)
    con.execute(TABLE)
    con.execute("CREATE MATERIALIZED VIEW r AS SELECT k, "
                "regexp_replace(s, 'b(c)', '<\\1\\&>', 'g') AS every, "
                "regexp_replace(s, 'A', '$', 'i') AS first FROM t")
    con.insert("t", ROWS)
    assert sorted(con.execute("SELECT * FROM r").fetchall()) == [
        (1, "a<cbc>a<cbc>", "$bcabc"), (2, None, None), (3, "", ""), (4, "rr", "rr")]
    con.execute("UPDATE t SET s = 'Abcd' WHERE k IN (1, 3)")
    assert sorted(con.execute("SELECT * FROM r").fetchall()) == [
        (1, "A<cbc>d", "$bcd"), (2, None, None), (3, "A<cbc>d", "$bcd"), (4, "rr", "rr")]
