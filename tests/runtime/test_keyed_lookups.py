"""Keyed lookups: a join step reads, of each arrangement it looks up by a key whose values
the driver knows (those of the changes, or of rows it read by key before on the path), only
the rows holding one of them, found in Arrow in the driver (``Trace.matching``)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from matview.ir.scalar import Call, Col, Lit
from matview.ir.steps import FlatMap, Map, Project, input_column
from matview.ir.types import INT, TEXT
from matview.runtime.arrangements.keyed_reads import KeyedRead
from matview.runtime.arrangements.trace import Trace
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

    def spy(self: Trace, upto: int, column: str, values: pa.Array) -> KeyedRead | None:
        out = matching(self, upto, column, values)
        if out is not None:
            assert out.table is not None and not out.frames()  # the driver holds every batch
            found.append(out.table)
        return out

    monkeypatch.setattr(Trace, "matching", spy)
    # no rehearsal at CREATE (``Dataflow.rehearse``), whose reads would count
    con = matview.connect(clock=0, spark=spark, refresh="incremental",
                          settings={"rehearsal_rows": 0})
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


def test_every_lookup_of_a_path_whose_key_values_are_known_reads_by_key(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """TPC-H's shape: an orders change looks up customers (by the order's customer), then
    lineitems (by the order's key, a column of the change, though not the first lookup);
    a lineitem change looks up orders by key, then customers by the customer of the orders
    it found. No lookup reads a whole table; the view equals DuckDB after each change."""
    found: list[tuple[str, int]] = []
    matching = Trace.matching
    con = matview.connect(clock=0, spark=spark, refresh="incremental",
                          settings={"rehearsal_rows": 0})  # no reads but the steps'
    engine = con._engine_for_use()

    def spy(self: Trace, upto: int, column: str, values: pa.Array) -> KeyedRead | None:
        out = matching(self, upto, column, values)
        assert out is not None and out.table is not None and not out.frames()
        name = next(n for n, e in engine.catalog.entries.items() if e.trace is self)
        found.append((name, out.table.num_rows))
        return out

    monkeypatch.setattr(Trace, "matching", spy)
    con.execute("CREATE TABLE customer (c_custkey INT, c_nation TEXT)")
    con.execute("CREATE TABLE orders (o_orderkey INT, o_custkey INT)")
    con.execute("CREATE TABLE lineitem (l_orderkey INT, l_price INT)")
    con.insert("customer", [(c, f"n{c % 4}") for c in range(500)])
    con.insert("orders", [(o, o % 500) for o in range(2_000)])
    con.insert("lineitem", [(o, o % 7 + k) for o in range(2_000) for k in range(3)])
    query = ("SELECT c_nation, sum(l_price) AS revenue, count(*) AS n "
             "FROM customer, orders, lineitem "
             "WHERE c_custkey = o_custkey AND l_orderkey = o_orderkey GROUP BY c_nation")
    con.execute(f"CREATE MATERIALIZED VIEW v AS {query}")
    duck = duckdb.connect()

    def check() -> None:
        for name in ("customer", "orders", "lineitem"):
            duck.register(name, con.execute(f"SELECT * FROM {name}").fetch_arrow())
        assert sorted(con.execute("SELECT * FROM v").fetchall()) == sorted(
            duck.execute(query).fetchall())

    check()
    assert not found  # the first step reads every input whole
    with con.transaction():
        con.insert("orders", [(2_000, 3), (2_001, 4)])
        con.insert("lineitem", [(2_000, 10), (2_001, 20), (5, 30)])
        con.delete("orders", [(7, 7)])
    check()
    # the orders change finds customers 3, 4, 7 and the 3 lineitems of order 7 (the new
    # orders' lineitems are changes of the step); the lineitem change finds order 5 (2,000
    # and 2,001 are changes), then customer 5 of the order it found and 3, 4, 7 of the
    # orders changes it sees: 4 customers of 500, 3 lineitems of 6,000, 1 order of 2,000
    assert sorted(found) == [("customer", 3), ("customer", 4), ("lineitem", 3),
                             ("orders", 1)]


def test_views_looking_up_a_table_share_its_one_arrangement(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two views' joins look customers up by ``id``: both dataflows read the table's one
    trace (no copy per view or per reader), EXPLAIN ANALYZE calls it shared in both, and
    each view's step reads that trace by key."""
    readers: list[tuple[int, int]] = []
    matching = Trace.matching

    def spy(self: Trace, upto: int, column: str, values: pa.Array) -> KeyedRead | None:
        out = matching(self, upto, column, values)
        readers.append((id(self), len(values)))
        return out

    monkeypatch.setattr(Trace, "matching", spy)
    con = matview.connect(clock=0, spark=spark, refresh="incremental",
                          settings={"rehearsal_rows": 0})  # no reads but the steps'
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount INT)")
    con.insert("customers", [(i, f"r{i % 3}") for i in range(100)])
    con.insert("orders", [(i, i % 100, i) for i in range(300)])
    con.execute("CREATE MATERIALIZED VIEW per_region AS SELECT c.region, count(*) "
                "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
    con.execute("CREATE MATERIALIZED VIEW big AS SELECT o.id, c.region "
                "FROM orders o JOIN customers c ON c.id = o.cust WHERE o.amount > 250")
    engine = con._engine_for_use()
    table = engine.trace_of("customers")
    flows = [engine.catalog.entries[name].dataflow for name in ("per_region", "big")]
    for flow in flows:
        assert flow is not None
        [source] = [op for op in flow.sources() if op.name == "customers"]
        assert source.trace is table
        assert table not in flow.state()
        [(role, rows)] = [(a.role, a.rows) for stats in flow.analyze()
                          for a in stats.arrangements if a.name == "customers"]
        assert (role, rows) == ("shared", 100)
    con.insert("orders", [(300, 7, 999)])
    con.execute("SELECT * FROM per_region").fetchall()
    con.execute("SELECT * FROM big").fetchall()
    assert readers == [(id(table), 1), (id(table), 1)]
