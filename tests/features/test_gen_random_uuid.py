"""``gen_random_uuid()`` (PostgreSQL 13): a random version-4 UUID, computed by Spark's native
``uuid()`` (the reference interpreter's meaning: ``uuid.uuid4()``). A one-shot query gives
every row, every copy of a row and every call its own value; a write (INSERT ... VALUES,
INSERT ... SELECT, UPDATE, a column's DEFAULT, ALTER TABLE ... ADD COLUMN ... DEFAULT)
computes it once and stores it, so later reads and views see the stored value; a view
refuses it, as it refuses ``now()``."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from matview.ir.interpret import interpret
from matview.ir.scalar import Call
from matview.planner.transforms.fold_constants import fold_scalar
from matview.sql.parse import parse
from matview.sql.statements import Query
from pyspark.sql import SparkSession

import matview
from tests.support.sql_env import environment


@pytest.fixture(scope="module")
def con(spark: SparkSession) -> matview.Connection:
    con = matview.connect(spark=spark, clock=0)
    con.execute("CREATE TABLE d (x INT)")
    con.execute("INSERT INTO d VALUES (1), (2)")
    for _ in range(2):  # the second writes the row (1) once with multiplicity 2
        con.execute("INSERT INTO d SELECT x FROM d WHERE x = 1")
    return con


def _distinct_v4(values: list[object]) -> bool:
    """Whether ``values`` are distinct version-4 UUIDs."""
    return len(set(values)) == len(values) and all(
        isinstance(v, uuid.UUID) and v.version == 4 for v in values)


def test_the_reference_meaning_is_a_new_uuid4_each_time() -> None:
    catalog, tables, _ = environment({"d": "CREATE TABLE d (x int)"}, {"d": [(1,), (1,)]}, ())
    [query] = parse("SELECT gen_random_uuid(), gen_random_uuid() FROM d", catalog)
    assert isinstance(query, Query) and [str(t) for t in query.plan.types] == ["uuid", "uuid"]
    rows = list(interpret(query.plan, tables).elements())
    assert len(rows) == 2 and _distinct_v4([uuid.UUID(v) for r in rows for v in r])
    call = Call("gen_random_uuid", ())
    assert fold_scalar(call, ()) == call  # never folded into one constant for all rows


def test_each_row_copy_and_call_has_its_own(con: matview.Connection) -> None:
    cursor = con.execute("SELECT x, gen_random_uuid(), gen_random_uuid() AS g FROM d")
    assert [d[:2] for d in cursor.description] == [("x", "int"), ("gen_random_uuid", "uuid"),
                                                   ("g", "uuid")]
    rows = cursor.fetchall()
    assert Counter(r[0] for r in rows) == Counter({1: 4, 2: 1})
    assert _distinct_v4([v for r in rows for v in r[1:]])
    again = con.execute("SELECT gen_random_uuid() FROM d").fetchall()
    assert not {r[0] for r in again} & {v for r in rows for v in r[1:]}
    [(alone,)] = con.execute("SELECT gen_random_uuid()").fetchall()  # no FROM: one row
    assert _distinct_v4([alone, *(r[0] for r in again)])
    # a value read twice is one value: the subquery's column is computed once per row
    both = con.execute("SELECT g, g::text, g = g FROM (SELECT gen_random_uuid() AS g "
                       "FROM d) AS s").fetchall()
    assert all(str(g) == text and same for g, text, same in both) and _distinct_v4(
        [g for g, _, _ in both])
    con.execute("CREATE TABLE gone (x INT)")
    con.execute("INSERT INTO gone VALUES (1)")
    con.execute("DELETE FROM gone WHERE x = 1")  # an insertion and its retraction cancel
    assert con.execute("SELECT gen_random_uuid() FROM gone").fetchall() == []


def test_writes_store_the_value_they_computed(con: matview.Connection) -> None:
    con.execute("CREATE TABLE u (id INT, u UUID DEFAULT gen_random_uuid(), n INT)")
    con.execute("CREATE MATERIALIZED VIEW uv AS SELECT id, u FROM u")
    con.execute("INSERT INTO u (id) VALUES (1), (2)")
    for _ in range(2):  # the same statement again: other values
        con.execute("INSERT INTO u (id) VALUES (3)")
    con.execute("INSERT INTO u VALUES (4, gen_random_uuid(), 0), (5, DEFAULT, 0)")
    con.execute("INSERT INTO u (id, u) SELECT x + 10, gen_random_uuid() FROM d")
    first = sorted(con.execute("SELECT id, u FROM u").fetchall())
    assert [i for i, _ in first] == [1, 2, 3, 3, 4, 5, 11, 11, 11, 11, 12]
    assert _distinct_v4([u for _, u in first])
    assert sorted(con.execute("SELECT id, u FROM u").fetchall()) == first  # stored, not redrawn
    assert sorted(con.execute("SELECT * FROM uv").fetchall()) == first
    con.execute("UPDATE u SET u = gen_random_uuid(), n = 1 WHERE id = 11")
    updated = sorted(con.execute("SELECT id, u FROM u WHERE n = 1").fetchall())
    assert len(updated) == 4 and _distinct_v4([u for _, u in updated])
    assert not {u for _, u in updated} & {u for _, u in first}
    assert sorted(con.execute("SELECT id, u FROM uv WHERE id = 11").fetchall()) == updated
    con.execute("ALTER TABLE u ADD COLUMN v UUID DEFAULT gen_random_uuid()")
    added = con.execute("SELECT v FROM u").fetchall()
    assert len(added) == 11 and _distinct_v4([v for (v,) in added])
    assert sorted(con.execute("SELECT v FROM u").fetchall()) == sorted(added)


@pytest.mark.parametrize("sql", [
    "CREATE VIEW w AS SELECT gen_random_uuid() AS u",
    "CREATE MATERIALIZED VIEW w AS SELECT x, gen_random_uuid() AS u FROM d",
    "CREATE MATERIALIZED VIEW w AS SELECT x FROM d WHERE x IN (SELECT 1 FROM d "
    "WHERE gen_random_uuid() IS NOT NULL)",
])
def test_a_view_refuses_it(con: matview.Connection, sql: str) -> None:
    with pytest.raises(matview.NotSupportedError,
                       match="gen_random_uuid\\(\\) cannot be used in a view: it gives a new "
                             "value each time it is computed, so a maintained view could not "
                             "retract the rows it gave"):
        con.execute(sql)
    assert con.execute("SHOW VIEWS").fetchall() == []
    with pytest.raises(matview.ProgrammingError, match="takes 0 arguments"):
        con.execute("SELECT gen_random_uuid(1)")
