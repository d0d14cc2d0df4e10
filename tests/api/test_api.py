"""The public Python API end to end on Spark: DB-API behaviour, statements, errors."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pandas as pd
import pytest

import matview


def test_issue_example(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("""CREATE MATERIALIZED VIEW by_region AS
                   SELECT c.region, count(*) AS n, sum(o.amount) AS total, max(o.amount) AS top
                   FROM orders o JOIN customers c ON o.cust = c.id
                   WHERE o.amount > 0 GROUP BY c.region""")
    sub = con.subscribe("by_region")
    start = con.now
    con.advance_time(10)
    con.execute("INSERT INTO orders VALUES (1, 1, 50, NULL), (2, 2, 70, 'x')")
    con.execute("DELETE FROM orders WHERE id = 1")
    con.execute("UPDATE customers SET region = 'apac' WHERE id = 2")
    cur = con.execute("SELECT * FROM by_region ORDER BY region")
    assert [d[0] for d in cur.description] == ["region", "n", "total", "top"]
    assert cur.fetchall() == [("apac", 1, Decimal(70), 70)]
    assert sub.fetch() == [
        (10, 1, "eu", 1, Decimal(50), 50), (10, 1, "us", 1, Decimal(70), 70),
        (11, -1, "eu", 1, Decimal(50), 50),
        (12, 1, "apac", 1, Decimal(70), 70), (12, -1, "us", 1, Decimal(70), 70),
    ]
    assert start == 0 and con.now == 12
    assert sub.fetch() == []


def test_cursor_protocol(con) -> None:  # type: ignore[no-untyped-def]
    assert matview.apilevel == "2.0" and matview.paramstyle == "qmark"
    cur = con.cursor()
    cur.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 1, 6, 'b'), (3, 2, 7, NULL)")
    assert cur.rowcount == 3
    cur.execute("SELECT id, note FROM orders ORDER BY id DESC")
    assert cur.fetchone() == (3, None)
    assert cur.fetchmany(1) == [(2, "b")]
    assert list(cur) == [(1, "a")]
    assert cur.fetchall() == []
    cur.execute("SELECT id FROM orders WHERE amount > ? AND note = ?", [5, "b"])
    assert cur.fetchall() == [(2,)]
    # parameters bind in the order written, however deep each sits in the expression
    cur.execute("WITH c AS (SELECT ? AS k) SELECT id, ? FROM orders, c WHERE cust = k AND "
                "amount > ? AND note = ? AND id < ?", [1, "x", 5, "b", 3])
    assert cur.fetchall() == [(2, "x")]
    cur.execute("SELECT id FROM orders ORDER BY id LIMIT 1 OFFSET 1")
    assert cur.fetchall() == [(2,)]
    assert con.execute("UPDATE orders SET amount = amount + 1 WHERE cust = 1").rowcount == 2
    assert con.execute("DELETE FROM orders WHERE amount > 5").rowcount == 3
    cur.close()
    with pytest.raises(matview.InterfaceError):
        cur.fetchall()
    with matview.connect(clock=0, spark=con.spark) as other:
        other.execute("CREATE TABLE t (a INT)")
    with pytest.raises(matview.InterfaceError):
        other.execute("SELECT 1")


def test_write_times_follow_the_oracle(con) -> None:  # type: ignore[no-untyped-def]
    before = con.now
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a')")
    assert con.now == before + 1
    con.advance_time(100)
    assert con.now == 100
    con.execute("INSERT INTO orders VALUES (2, 1, 5, 'a')")
    assert con.now == 100
    con.execute("INSERT INTO orders VALUES (3, 1, 5, 'a')")
    assert con.now == 101
    with pytest.raises(matview.ProgrammingError, match="backwards"):
        con.advance_time(50)


def test_errors_name_the_problem_and_position(con) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(matview.ProgrammingError, match=r'column "bogus".*line 2, column 8'):
        con.execute("SELECT id,\n       bogus FROM orders")
    with pytest.raises(matview.ProgrammingError, match=r'relation "nope" does not exist'):
        con.execute("SELECT * FROM nope")
    with pytest.raises(matview.ProgrammingError, match="line 1"):
        con.execute("SELEC 1")
    with pytest.raises(matview.NotSupportedError, match="LEFT SEMI JOIN"):
        con.execute("SELECT * FROM orders LEFT SEMI JOIN customers ON cust = customers.id")
    with pytest.raises(matview.ProgrammingError, match="already exists"):
        con.execute("CREATE TABLE orders (a INT)")


def test_failed_statements_change_nothing(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 0, 7, 'b')")
    before = con.now
    with pytest.raises(matview.DataError, match="division by zero"):
        con.execute("INSERT INTO orders SELECT id + 10, cust, amount / cust, note FROM orders")
    # a view over failing data is created (errors are data) and reports them on read
    con.execute("CREATE MATERIALIZED VIEW bad AS SELECT amount / cust FROM orders")
    with pytest.raises(matview.DataError, match='"bad".*division by zero'):
        con.execute("SELECT * FROM bad")
    con.execute("DROP MATERIALIZED VIEW bad")
    with pytest.raises(matview.DataError, match="out of range"):
        con.execute("INSERT INTO orders VALUES (2147483647 + 1, 1, 1, 'x')")
    with pytest.raises(matview.DataError, match="out of range"):
        con.execute("UPDATE orders SET id = id * 2147483647 WHERE id = 2")
    assert con.now == before
    assert con.execute("SHOW MATERIALIZED VIEWS").fetchall() == []
    assert sorted(con.execute("SELECT id FROM orders").fetchall()) == [(1,), (2,)]


def test_drop_show_and_dependencies(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE VIEW eu AS SELECT id FROM customers WHERE region = 'eu'")
    con.execute("CREATE MATERIALIZED VIEW eu_orders AS "
                "SELECT o.id FROM orders o JOIN eu ON o.cust = eu.id")
    con.execute("CREATE MATERIALIZED VIEW n AS SELECT count(*) FROM eu_orders")
    assert con.execute("SHOW TABLES").fetchall() == [("customers",), ("orders",)]
    assert con.execute("SHOW MATERIALIZED VIEWS").fetchall() == [("eu_orders",), ("n",)]
    assert con.execute("SHOW COLUMNS FROM orders").fetchall() == [
        ("id", "int"), ("cust", "int"), ("amount", "bigint"), ("note", "text")]
    con.execute("INSERT INTO orders VALUES (1, 1, 5, 'a'), (2, 2, 5, 'a')")
    assert con.execute("SELECT * FROM n").fetchall() == [(1,)]
    with pytest.raises(matview.ProgrammingError, match="depend on it: eu_orders, n"):
        con.execute("DROP VIEW eu")
    with pytest.raises(matview.ProgrammingError, match="not a table"):
        con.execute("DROP TABLE eu")
    con.execute("DROP VIEW eu CASCADE")
    assert con.execute("SHOW MATERIALIZED VIEWS").fetchall() == []
    con.execute("DROP TABLE IF EXISTS nothing")
    with pytest.raises(matview.ProgrammingError, match="does not exist"):
        con.execute("DROP TABLE nothing")


def test_explain(con) -> None:  # type: ignore[no-untyped-def]
    text = con.execute("EXPLAIN SELECT o.id FROM orders o, customers c WHERE o.cust = c.id"
                       ).fetchone()[0]
    assert text.splitlines()[1].strip().startswith("Join on=(#1 = #4)")
    physical = con.execute("EXPLAIN PHYSICAL PLAN FOR SELECT o.id FROM orders o, customers c "
                           "WHERE o.cust = c.id").fetchone()[0]
    assert "plan=delta[(1), (0)]" in physical


def test_bulk_insert_and_delete(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE MATERIALIZED VIEW per_cust AS "
                "SELECT cust, count(*), sum(amount) FROM orders GROUP BY cust")
    frame = pd.DataFrame({"id": range(1000), "cust": [i % 3 for i in range(1000)],
                          "amount": range(1000), "note": ["x"] * 1000})
    assert con.insert("orders", frame) == 1000
    spark_rows = con.spark.createDataFrame([(5000, 9, 1, "s"), (5001, 9, 2, None)],
                                           "a int, b int, c bigint, d string")
    assert con.insert("orders", spark_rows) == 2
    assert con.delete("orders", [(0, 0, 0, "x"), (1, 1, 1, "x")]) == 2
    rows = dict((r[0], r[1:]) for r in con.execute("SELECT * FROM per_cust").fetchall())
    assert rows[0] == (333, Decimal(sum(range(3, 1000, 3))))
    assert rows[1] == (332, Decimal(sum(range(4, 1000, 3))))
    assert rows[9] == (2, Decimal(3))


def test_named_rows_go_to_their_columns_by_name(con) -> None:  # type: ignore[no-untyped-def]
    """Rows whose columns are named (a pandas, Arrow or Spark frame) are written by name,
    in any order and case; unnamed ones (pandas' 0, 1, Spark's _1, _2) by position; names
    partly the table's are refused, not written to the wrong columns."""
    import pyarrow as pa

    con.execute("CREATE TABLE pair (a INT, b TEXT)")
    con.insert("pair", pa.table({"b": ["x"], "a": [1]}))
    con.insert("pair", pd.DataFrame({"B": ["y"], "A": [2]}))
    con.insert("pair", con.spark.createDataFrame([("z", 3)], "b string, a int"))
    con.insert("pair", pd.DataFrame([[4, "w"]]))
    con.insert("pair", con.spark.createDataFrame([(5, "v")]))
    with pytest.raises(matview.ProgrammingError, match='column "c"'):
        con.insert("pair", pa.table({"a": [6], "c": ["u"]}))
    with pytest.raises(matview.ProgrammingError, match="twice"):
        con.insert("pair", pd.DataFrame([[6, 7]], columns=["a", "A"]))
    assert sorted(con.execute("SELECT * FROM pair").fetchall()) == [
        (1, "x"), (2, "y"), (3, "z"), (4, "w"), (5, "v")]


def test_types_round_trip(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE TABLE t (a DOUBLE, b NUMERIC(10,2), c BOOLEAN, d DATE, e TIMESTAMP)")
    con.execute("INSERT INTO t VALUES (1.5, 2.25, true, DATE '2024-02-29', "
                "TIMESTAMP '2024-01-01 10:00:00')")
    assert con.execute("SELECT * FROM t").fetchall() == [
        (1.5, Decimal("2.25"), True, datetime.date(2024, 2, 29),
         datetime.datetime(2024, 1, 1, 10, 0))]


def test_missing_java_message(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(matview.OperationalError, match="needs a Java runtime"):
        matview.connect().cursor()  # (another master= is refused: a session runs here)


def test_transaction_writes_share_one_time(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE MATERIALIZED VIEW totals AS SELECT c.region, sum(o.amount) AS s "
                "FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
    con.insert("orders", [(1, 1, 5, None), (2, 2, 7, None)])
    sub = con.subscribe("totals")
    sub.fetch()
    con.advance_time(20)
    with con.transaction():
        con.delete("orders", [(1, 1, 5, None)])
        con.insert("orders", [(3, 1, 9, "new")])
        con.execute("INSERT INTO customers VALUES (3, 'apac')")
        assert sorted(con.execute("SELECT * FROM totals").fetchall()) == [
            ("eu", Decimal(9)), ("us", Decimal(7))]
        with pytest.raises(matview.ProgrammingError, match="inside a transaction"):
            con.execute("CREATE TABLE later (x INT)")
    assert sub.fetch() == [(20, -1, "eu", Decimal(5)), (20, 1, "eu", Decimal(9))]
    assert con.execute("SELECT count(*) FROM customers").fetchall() == [(3,)]


def test_transaction_failure_and_rollback_write_nothing(con) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RuntimeError), con.transaction():
        con.insert("orders", [(1, 1, 5, None)])
        raise RuntimeError("abandoned")
    con.begin()
    con.execute("INSERT INTO orders VALUES (2, 1, 6, NULL)")
    con.rollback()
    assert con.execute("SELECT count(*) FROM orders").fetchall() == [(0,)]
    with pytest.raises(matview.ProgrammingError, match="no transaction"):
        con.rollback()


def test_numeric_product_keeps_every_digit(con) -> None:  # type: ignore[no-untyped-def]
    con.execute("CREATE TABLE prices (p NUMERIC(15,2), d NUMERIC(15,2))")
    con.execute("INSERT INTO prices VALUES (19.99, 0.07), (5.25, 0.5)")
    con.execute("CREATE MATERIALIZED VIEW net AS SELECT sum(p * (1 - d)) AS s FROM prices")
    assert con.execute("SELECT * FROM net").fetchall() == [(Decimal("21.2157"),)]
    assert con.execute("SELECT p, p * d FROM prices ORDER BY p").fetchall() == [
        (Decimal("5.25"), Decimal("2.6250")), (Decimal("19.99"), Decimal("1.3993"))]


def test_a_users_session_is_left_as_it_was(spark) -> None:  # type: ignore[no-untyped-def]
    """``connect(spark=user)`` runs matview's plans in a new session of the user's context:
    the user's settings are unchanged after views are created, refreshed and read, and
    matview's results do not depend on them (ANSI off, another time zone, many shuffle
    partitions, AQE on)."""
    user = spark.newSession()
    settings = {"spark.sql.shuffle.partitions": "7", "spark.sql.ansi.enabled": "false",
                "spark.sql.session.timeZone": "America/New_York",
                "spark.sql.adaptive.enabled": "true"}
    for key, value in settings.items():
        user.conf.set(key, value)
    con = matview.connect(clock=0, spark=user)
    con.execute("CREATE TABLE t (k INT, v INT, at TIMESTAMP)")
    con.execute("CREATE MATERIALIZED VIEW q AS SELECT k, 100 / v AS r, at FROM t")
    con.execute("CREATE MATERIALIZED VIEW s AS SELECT count(*) AS n, sum(v) AS total FROM t")
    con.insert("t", user.createDataFrame(
        [(1, 4, datetime.datetime(2024, 1, 1, 12))], "k int, v int, at timestamp"))
    con.execute("INSERT INTO t VALUES (2, 0, TIMESTAMP '2024-01-02 00:00:00')")
    with pytest.raises(matview.DataError, match="division by zero"):
        con.execute("SELECT * FROM q")
    con.execute("DELETE FROM t WHERE v = 0")
    assert con.execute("SELECT * FROM q").fetchall() == [
        (1, 25, datetime.datetime(2024, 1, 1, 12))]
    assert con.execute("SELECT * FROM s").fetchall() == [(1, 4)]
    assert con.spark is not user
    for key, value in settings.items():
        assert user.conf.get(key) == value, key
    # matview's session checks its plans without PreReadCheck, the user's keeps every check
    assert _check_rules(user) - _check_rules(con.spark) == {"PreReadCheck$"}
    # matview's collects name their call site only while they run, and keep the user's
    context = user.sparkContext
    assert context.getLocalProperty("callSite.short") is None
    context.setLocalProperty("callSite.short", "the user's")
    try:
        con.execute("INSERT INTO t VALUES (3, 5, NULL)")
        assert con.execute("SELECT * FROM s").fetchall() == [(2, 9)]
        assert context.getLocalProperty("callSite.short") == "the user's"
    finally:
        context.setLocalProperty("callSite.short", None)


def _check_rules(session) -> set[str]:  # type: ignore[no-untyped-def]
    """The names of the extended checks ``session``'s analyzer runs over every plan."""
    rules = session._jsparkSession.sessionState().analyzer().extendedCheckRules().iterator()
    names = set()
    while rules.hasNext():
        names.add(rules.next().getClass().getSimpleName())
    return names
