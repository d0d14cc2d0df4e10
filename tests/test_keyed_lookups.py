"""Keyed lookups: a join step reads, of the arrangement it looks up first, only the rows
whose key its changes may hold, found in Arrow in the driver (``Trace.matching``)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from matview.ir.relation import FlatMap, Map, Project, input_column
from matview.ir.scalar import Call, Col, Lit
from matview.ir.types import INT, TEXT
from matview.runtime.trace import Trace
from pyspark.sql import SparkSession

import matview

TYPES = (INT, TEXT)


@pytest.mark.parametrize("steps, column, expected", [
    ((), 1, 1),
    ((Project((1, 0)),), 0, 1),
    ((Map((Call("add", (Col(0), Lit(1, INT))),)),), 2, None),
    ((Map((Col(1),)), Project((2,))), 0, 1),
    ((Map((Col(0), Col(2))),), 3, 0),
    ((FlatMap((Call("generate_series", (Col(0), Col(0))),)),), 2, None),
])
def test_input_column_follows_kept_and_copied_columns(
        steps: tuple, column: int, expected: int | None) -> None:  # type: ignore[type-arg]
    assert input_column(steps, TYPES, column) == expected


def test_a_join_step_reads_only_the_rows_its_keys_match(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    found: list[pa.Table] = []
    matching = Trace.matching

    def spy(self: Trace, upto: int, column: str, values: pa.Array) -> pa.Table | None:
        out = matching(self, upto, column, values)
        if out is not None:
            found.append(out)
        return out

    monkeypatch.setattr(Trace, "matching", spy)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT)")
    con.insert("customers", [(i, f"r{i % 5}") for i in range(2_000)])
    con.insert("orders", [(i, i % 2_000) for i in range(6_000)])
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n "
                "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
    assert not found  # the first step reads every input whole
    con.insert("orders", [(6_000, 7), (6_001, 7), (6_002, 1_234)])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [
        ("r0", 1_200), ("r1", 1_200), ("r2", 1_202), ("r3", 1_200), ("r4", 1_201)]
    assert [t.num_rows for t in found] == [2]  # customers 7 and 1234, not 2,000
    assert sorted(found[0].column("c0").to_pylist()) == [7, 1_234]
    found.clear()
    with con.transaction():
        con.delete("customers", [(7, "r2")])
        con.insert("customers", [(7, "r4")])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == [
        ("r0", 1_200), ("r1", 1_200), ("r2", 1_197), ("r3", 1_200), ("r4", 1_206)]
    # the customer change looks orders up by customer: the 5 orders of customer 7 of 6,003
    assert [t.num_rows for t in found] == [5]
