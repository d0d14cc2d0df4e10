"""Tests of the ``matview`` sqlglot dialect: its own statements parse and print back, and
generated SQL binds to the same plans as the text it came from."""

from __future__ import annotations

import pytest
import sqlglot
from matview.sql.call_names import ARGUMENT_COUNT, WRITTEN_NAME
from matview.sql.dialect import Matview
from matview.sql.dialect_nodes import Explain, Subscribe
from matview.sql.errors import SqlSyntaxError
from matview.sql.parse import bind_statement, split
from matview.sql.statements import Query
from sqlglot import exp

from tests.support.sql_env import QUERIES, DictCatalog, environment


@pytest.mark.parametrize(("sql", "printed"), [
    ("explain select 1", "EXPLAIN SELECT 1"),
    ("EXPLAIN PLAN FOR SELECT 1", "EXPLAIN SELECT 1"),
    ("explain raw plan for select a from t", "EXPLAIN RAW PLAN FOR SELECT a FROM t"),
    ("EXPLAIN OPTIMIZED PLAN FOR CREATE MATERIALIZED VIEW v AS SELECT 1",
     "EXPLAIN OPTIMIZED PLAN FOR CREATE MATERIALIZED VIEW v AS SELECT 1"),
    ("EXPLAIN PHYSICAL PLAN FOR SELECT 1", "EXPLAIN PHYSICAL PLAN FOR SELECT 1"),
    ("explain decorrelated plan with (arity, humanized expressions) as json for select 1",
     "EXPLAIN DECORRELATED PLAN WITH (ARITY, HUMANIZED EXPRESSIONS) AS JSON FOR SELECT 1"),
    ("EXPLAIN WITH (types) FOR SELECT 1", "EXPLAIN WITH (TYPES) FOR SELECT 1"),
    ("EXPLAIN AS DOT FOR MATERIALIZED VIEW v", "EXPLAIN AS DOT FOR MATERIALIZED VIEW v"),
    ("explain optimizer trace with (keys) for select 1",
     "EXPLAIN OPTIMIZER TRACE WITH (KEYS) FOR SELECT 1"),
    ("explain analyze materialized view v", "EXPLAIN ANALYZE MATERIALIZED VIEW v"),
    ("EXPLAIN ANALYZE AS JSON MATERIALIZED VIEW v", "EXPLAIN ANALYZE AS JSON MATERIALIZED VIEW v"),
    ("EXPLAIN WITH w AS (SELECT 1) SELECT * FROM w",
     "EXPLAIN WITH w AS (SELECT 1) SELECT * FROM w"),
    ("show tables", "SHOW TABLES"),
    ("SHOW VIEWS", "SHOW VIEWS"),
    ("show materialized views", "SHOW MATERIALIZED VIEWS"),
    ("SHOW COLUMNS FROM t", "SHOW COLUMNS FROM t"),
    ("SHOW COLUMNS IN t", "SHOW COLUMNS FROM t"),
    ("show create table t", "SHOW CREATE TABLE t"),
    ("SHOW CREATE VIEW v", "SHOW CREATE VIEW v"),
    ('SHOW CREATE MATERIALIZED VIEW "M"', 'SHOW CREATE MATERIALIZED VIEW "M"'),
    ("subscribe to m with (snapshot = false)", "SUBSCRIBE m with (snapshot = false)"),
    ('SUBSCRIBE "M"', 'SUBSCRIBE "M"'),
])
def test_statements_round_trip(sql: str, printed: str) -> None:
    tree = sqlglot.parse_one(sql, dialect=Matview)
    assert tree.sql(dialect=Matview) == printed
    assert sqlglot.parse_one(printed, dialect="matview") == tree


def test_subscribe_tree() -> None:
    tree = sqlglot.parse_one("SUBSCRIBE TO Totals", dialect=Matview)
    assert isinstance(tree, Subscribe) and tree.this == exp.table_("Totals")
    assert sqlglot.parse_one("SUBSCRIBE (SELECT 1)", dialect=Matview) == Subscribe()


def test_calls_keep_their_written_name_and_argument_count() -> None:
    """Arity is the binder's to check (``calls.check_call``), with the name as written."""
    tree = sqlglot.parse_one("SELECT substr(b, 1, 2, 3), lower(), char_length(b)",
                             dialect=Matview)
    assert [(e.key, e.meta[WRITTEN_NAME], e.meta[ARGUMENT_COUNT]) for e in tree.expressions] == [
        ("substring", "substr", 4), ("lower", "lower", 0), ("length", "char_length", 1)]


def test_explain_tree() -> None:
    tree = sqlglot.parse_one("EXPLAIN RAW PLAN FOR SELECT 1", dialect=Matview)
    assert isinstance(tree, Explain) and tree.args["stage"] == "raw"
    assert isinstance(tree.this, exp.Select)


@pytest.mark.parametrize(("sql", "message"), [
    ("EXPLAIN RAW SELECT 1", "Expected PLAN"),
    ("EXPLAIN PLAN SELECT 1", "Expected FOR"),
    ("EXPLAIN AS XML FOR SELECT 1", "Expected TEXT, JSON or DOT"),
    ("EXPLAIN ANALYZE SELECT 1", "expected MATERIALIZED VIEW name"),
    ("EXPLAIN WITH (arity FOR SELECT 1", "unknown EXPLAIN option"),
])
def test_malformed_explain(sql: str, message: str) -> None:
    with pytest.raises((sqlglot.ParseError, SqlSyntaxError), match=message):
        sqlglot.parse_one(sql, dialect=Matview)


def test_other_statements_stay_postgres() -> None:
    assert isinstance(sqlglot.parse_one("DESCRIBE t", dialect=Matview), exp.Describe)
    assert sqlglot.parse_one("SELECT a::int FROM t", dialect=Matview).sql(
        dialect=Matview) == "SELECT CAST(a AS INT) FROM t"


@pytest.fixture(scope="module")
def catalog() -> DictCatalog:
    return environment()[0]


@pytest.mark.parametrize("sql", QUERIES)
def test_printed_query_binds_to_the_same_plan(sql: str, catalog: DictCatalog) -> None:
    [tree] = split(sql)
    printed = tree.sql(dialect=Matview)
    [again] = split(printed)
    first, second = bind_statement(tree, catalog), bind_statement(again, catalog)
    assert isinstance(first, Query) and first == second


@pytest.mark.parametrize(("sql", "text", "unit"), [
    ("SELECT INTERVAL '1 day 02:00'", "1 day 02:00", None),
    ("SELECT INTERVAL '1 day 2 hours'", "1 day 2 hours", None),
    ("SELECT INTERVAL '5 minutes'", "5", "MINUTES"),
    ("SELECT INTERVAL '5' MINUTE", "5", "MINUTE"),
])
def test_interval_literals_keep_their_text(sql: str, text: str, unit: str | None) -> None:
    tree = sqlglot.parse_one(sql, dialect=Matview)
    interval = tree.expressions[0]
    assert isinstance(interval, exp.Interval) and interval.this.name == text
    assert (interval.args.get("unit").name if interval.args.get("unit") else None) == unit
    assert sqlglot.parse_one(tree.sql(dialect=Matview), dialect=Matview) == tree
