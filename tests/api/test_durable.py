"""Durable databases (``connect(path=...)``, ``matview.durability``): a reopened directory
holds every committed write and resumes its views without recomputing them; one opener at a
time; another format, a corrupted manifest and damaged batch files are refused, never read.

Crashes at every kind of point (batch files, the manifest's replacement, a view's step, a
merge) are tested in ``test_durable_crashes.py``."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from matview.runtime.controller import Controller
from matview.runtime.recursion.let_rec import LetRecOp
from pyspark.sql import SparkSession

import matview
from matview import durability
from matview.errors import DataError, OperationalError, ProgrammingError
from tests.support.dataframe_calls import dataframe_calls
from tests.support.region_totals import created, totals

SPILLED = {"driver_batch_rows": 1, "fetched_batch_rows": 0, "table_copy_rows": 0,
           "view_copy_rows": 0, "keyed_read_rows": 0, "driver_merge_rows": 0,
           "mapped_copy_rows": 1}
"""Settings holding every batch of more than one row in the executors' files, read by key
from them (and from their mapped copies): the state a large database holds."""

COPIED = {"driver_batch_rows": 1, "fetched_batch_rows": 0, "keyed_read_rows": 0}
"""Batches held in files and copied into the driver (a table's and a view's copies)."""

TABLES = {"orders": "id INT, cust INT, amount INT, due BIGINT", "customers": "cust INT, name TEXT"}

VIEWS = {
    "by_cust": "SELECT cust, count(*) AS n, sum(amount) AS total FROM orders GROUP BY cust",
    "by_name": "SELECT c.name, sum(o.amount) AS total, max(o.id) AS last FROM orders o "
               "JOIN customers c ON o.cust = c.cust GROUP BY c.name",
    "top3": "SELECT id, amount FROM orders ORDER BY amount DESC, id LIMIT 3",
    "ranked": "SELECT id, cust, rank() OVER (PARTITION BY cust ORDER BY amount) AS r "
              "FROM orders",
    "big": "SELECT count(*) AS n FROM by_cust WHERE total > 50",
    "shares": "SELECT id, 1000 / amount AS share FROM orders",
    "reach": "WITH RECURSIVE r (a, b) AS (SELECT cust, amount % 5 FROM orders UNION "
             "SELECT r.a, o.amount % 5 FROM r JOIN orders o ON r.b = o.cust) SELECT * FROM r",
}
"""Materialized views of every kind of state: a GROUP BY, a join under one, a TopK, a
window, a view over a view, errors as data (``shares`` divides by zero) and a recursive
query (whose loop keeps state beside its arrangements)."""

OPEN = "SELECT id, amount FROM orders WHERE mz_now() <= due"
"""A temporal filter (its future rows wait in its operator's ``pending`` arrangement)."""


def test_a_reopened_database_resumes_every_view_without_recomputing(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Across two reopenings, with writes between, every table and view equals DuckDB's;
    no view is computed from scratch when the database is opened (``Controller.start``
    refused then), and each goes on stepping from its saved frontier."""
    _resumes(spark, tmp_path / "db", {}, monkeypatch, reopenings=2)


@pytest.mark.parametrize("settings", [SPILLED, COPIED], ids=["spilled", "copied"])
def test_batches_held_in_files_survive_reopening(
        spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        settings: dict[str, int]) -> None:
    """As above, reopened once, every batch held in files (``SPILLED``) or copied there
    (``COPIED``)."""
    _resumes(spark, tmp_path / "db", settings, monkeypatch, reopenings=1)


def _resumes(spark: SparkSession, path: Path, settings: dict[str, int],
             monkeypatch: pytest.MonkeyPatch, reopenings: int) -> None:
    rng, clock = random.Random(7), 1_000
    oracle = duckdb.connect()
    with matview.connect(path, spark=spark, clock=clock, settings=settings) as con:
        for name, columns in TABLES.items():
            con.execute(f"CREATE TABLE {name} ({columns})")
            oracle.execute(f"CREATE TABLE {name} ({columns})")
        _write(con, oracle, rng, 0, 12)
        for name, sql in VIEWS.items():
            con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
        con.execute(f"CREATE MATERIALIZED VIEW open_orders AS {OPEN}")
        con.execute("CREATE VIEW cheap AS SELECT id FROM orders WHERE amount < 20")
        _write(con, oracle, rng, 12, 6)
        _check(con, oracle, clock)
        _write(con, oracle, rng, 18, 4)  # written, not yet read: the views step after reopening
        frontiers = {n: _flow(con, n).frontier for n in [*VIEWS, "open_orders"]}
    for reopening in range(reopenings):
        clock += 700
        with monkeypatch.context() as refusing:
            refusing.setattr(Controller, "start", _recomputes)
            con = matview.connect(path, spark=spark, clock=clock, settings=settings)
            assert _flow(con, "by_cust").frontier == frontiers["by_cust"]
        assert con._engine is not None and con._engine.durability is not None
        assert con._engine.durability.rebuilt == []
        assert all(not _flow(con, n).first for n in frontiers)
        _check(con, oracle, clock)
        _write(con, oracle, rng, 22 + 10 * reopening, 10)
        con.advance_time(clock + 300)
        _check(con, oracle, clock + 300)
        frontiers = {n: _flow(con, n).frontier for n in frontiers}
        con.close()


def _recomputes(*_: object) -> None:
    raise AssertionError("a view was computed from scratch when the database was opened")


def _flow(con: matview.Connection, name: str):  # type: ignore[no-untyped-def]
    flow = con._engine_for_use().catalog.entries[name].dataflow
    assert flow is not None
    return flow


def _write(con: matview.Connection, oracle: duckdb.DuckDBPyConnection, rng: random.Random,
           first: int, count: int) -> None:
    """``count`` transactions (inserts, deletes, updates), applied to both databases."""
    for i in range(first, first + count):
        if i % 5 == 0:
            statements = [f"INSERT INTO customers VALUES ({i % 4}, 'c{i % 3}')"]
        elif i % 7 == 3:
            statements = ["DELETE FROM orders WHERE amount < 10"]
        elif i % 7 == 5:
            statements = [f"UPDATE orders SET amount = amount + 3 WHERE cust = {i % 4}"]
        else:
            statements = [f"INSERT INTO orders VALUES ({i * 10 + k}, {rng.randrange(4)}, "
                          f"{rng.choice([0, 5, 15, 40, 90]) if k else rng.randrange(1, 99)}, "
                          f"{1_000 + rng.randrange(3_000)})" for k in range(3)]
        for statement in statements:
            con.execute(statement)
            oracle.execute(statement)


def _check(con: matview.Connection, oracle: duckdb.DuckDBPyConnection, now: int) -> None:
    """Every table and view of ``con`` equals DuckDB's from scratch (``shares`` raises
    the division by zero exactly when a row has amount 0)."""
    for name in TABLES:
        assert _rows(con, f"SELECT * FROM {name}") == _rows(oracle, f"SELECT * FROM {name}")
    for name, sql in VIEWS.items():
        if name == "shares":
            continue
        expected = sql.replace("FROM by_cust", f"FROM ({VIEWS['by_cust']})")
        assert _rows(con, f"SELECT * FROM {name}") == _rows(oracle, expected), name
    zero = oracle.execute("SELECT count(*) FROM orders WHERE amount = 0").fetchone()
    if zero is not None and zero[0]:
        with pytest.raises(DataError, match="division by zero"):
            con.execute("SELECT * FROM shares")
    else:
        assert _rows(con, "SELECT * FROM shares") == _rows(
            oracle, "SELECT id, 1000 // amount FROM orders")
    assert _rows(con, "SELECT * FROM open_orders") == _rows(
        oracle, OPEN.replace("mz_now()", str(now)))
    assert _rows(con, "SELECT * FROM cheap") == _rows(
        oracle, "SELECT id FROM orders WHERE amount < 20")


def _rows(con: object, sql: str) -> Counter[tuple[object, ...]]:
    return Counter(con.execute(sql).fetchall())  # type: ignore[attr-defined]


def test_a_reopening_writes_no_batch_again(spark: SparkSession, tmp_path: Path) -> None:
    """A batch held in the driver is written once: a reopening reads it back and its saves
    name the same file (``Records.adopt``), instead of writing every batch again."""
    path = tmp_path / "db"
    with matview.connect(path, spark=spark) as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1), (2)")
        con.execute("CREATE MATERIALIZED VIEW v AS SELECT count(*) AS n FROM t")
        assert con.execute("SELECT * FROM v").fetchall() == [(2,)]
    files = sorted(p.name for p in (path / "batches").iterdir())
    assert files
    with matview.connect(path, spark=spark) as con:
        assert con.execute("SELECT * FROM v").fetchall() == [(2,)]
    assert sorted(p.name for p in (path / "batches").iterdir()) == files


def test_one_opener_at_a_time(spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "db"
    first = matview.connect(path, spark=spark)
    with pytest.raises(OperationalError, match="open in another connection or process"):
        matview.connect(path, spark=spark)
    first.close()
    with matview.connect(path, spark=spark) as again:
        assert again.execute("SELECT 1").fetchall() == [(1,)]


def test_a_directory_of_another_format_or_a_corrupted_manifest_is_refused(
        spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "db"
    with matview.connect(path, spark=spark) as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1)")
    manifest = path / "manifest.json"
    document = json.loads(manifest.read_text())
    manifest.write_text(json.dumps({**document, "format": 0}))
    with pytest.raises(OperationalError, match="state format 0, and this matview reads "
                                               "format 1"):
        matview.connect(path, spark=spark)
    document["body"]["clock"]["last_write"] += 1
    manifest.write_text(json.dumps(document))
    with pytest.raises(OperationalError, match="checksum does not match"):
        matview.connect(path, spark=spark)


@pytest.mark.parametrize("damage", ["truncated", "flipped", "removed"])
def test_a_damaged_batch_file_is_reported_never_read(
        spark: SparkSession, tmp_path: Path, damage: str) -> None:
    path = tmp_path / "db"
    with matview.connect(path, spark=spark) as con:
        con.execute("CREATE TABLE t (a INT, b TEXT)")
        con.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two')")
    (batch,) = (path / "batches").iterdir()
    data = batch.read_bytes()
    if damage == "truncated":
        batch.write_bytes(data[:-9])
    elif damage == "flipped":  # same size, one byte changed inside the data
        batch.write_bytes(data[:30] + bytes([data[30] ^ 0xFF]) + data[31:])
    else:
        batch.unlink()
    with pytest.raises(OperationalError, match=f"batch file {batch}"):
        matview.connect(path, spark=spark).execute("SELECT * FROM t")
    with matview.connect(path, spark=spark):
        pass  # the failed opening let the directory go


def test_the_commit_log_s_cut_tail_is_dropped_and_its_corruption_reported(
        spark: SparkSession, tmp_path: Path) -> None:
    """A commit appends one frame to the log (no manifest); a frame a crash cut is the
    transaction that had not returned, dropped; a damaged frame before others is reported."""
    path, log = tmp_path / "db", tmp_path / "db" / "log"
    con = matview.connect(path, spark=spark)
    con.execute("CREATE TABLE t (a INT)")
    manifest = (path / "manifest.json").read_bytes()
    for i in range(3):
        con.insert("t", [(i,)])
    assert (path / "manifest.json").read_bytes() == manifest and log.stat().st_size
    assert con._store is not None
    con._store.close()  # the process dies
    log.write_bytes(log.read_bytes()[:-5])  # while appending the third
    again = matview.connect(path, spark=spark)
    assert sorted(again.execute("SELECT a FROM t").fetchall()) == [(0,), (1,)]
    for i in range(3, 6):
        again.insert("t", [(i,)])
    assert again._store is not None
    again._store.close()  # dies too
    data = log.read_bytes()
    log.write_bytes(data[:40] + bytes([data[40] ^ 1]) + data[41:])
    with pytest.raises(OperationalError, match="commit log .* is corrupted at byte 0"):
        matview.connect(path, spark=spark).execute("SELECT 1")


@pytest.mark.parametrize("damage", ["truncated", "removed"])
def test_a_damaged_file_of_a_batch_held_in_spark_is_reported(
        spark: SparkSession, tmp_path: Path, damage: str) -> None:
    path = tmp_path / "db"
    with matview.connect(path, spark=spark, settings=SPILLED) as con:
        con.execute("CREATE TABLE t (a INT, b TEXT)")
        con.execute("INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three')")
    (data,) = [f for f in (path / "state").rglob("*.parquet") if ".arrow" not in str(f)][:1]
    if damage == "removed":
        data.unlink()
    else:
        data.write_bytes(data.read_bytes()[:-20])
    said = "missing" if damage == "removed" else "truncated or damaged"
    with pytest.raises(OperationalError, match=f"batch file .*{data.name} is {said}"):
        matview.connect(path, spark=spark).execute("SELECT * FROM t")


def test_a_statement_that_fails_changes_nothing_on_disk(
        spark: SparkSession, tmp_path: Path) -> None:
    path = tmp_path / "db"
    with matview.connect(path, spark=spark, clock=0) as con:
        con.execute("CREATE TABLE t (a INT)")
        con.execute("INSERT INTO t VALUES (1)")
        before = (path / "manifest.json").read_bytes()
        with pytest.raises(DataError):
            con.delete("t", [(5,)])
        with pytest.raises(ProgrammingError, match="does not exist"):
            con.execute(f"CREATE SINK s FROM nothing INTO PARQUET '{tmp_path / 'out'}'")
        assert (path / "manifest.json").read_bytes() == before


def test_a_recursive_view_resumes_its_loop(spark: SparkSession, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A recursive query's loop keeps its stored collections' differences beside its
    arrangements: saved with them and taken back when the database is opened (nothing
    computed from scratch), so that edges added and removed after reopening extend and cut
    the paths found before, as DuckDB's recursive query finds them."""
    path, oracle = tmp_path / "db", duckdb.connect()
    reach = ("WITH RECURSIVE r (a, b) AS (SELECT a, b FROM e UNION "
             "SELECT r.a, e.b FROM r JOIN e ON r.b = e.a) SELECT * FROM r")
    oracle.execute("CREATE TABLE e (a INT, b INT)")
    with matview.connect(path, spark=spark, clock=100) as con:
        con.execute("CREATE TABLE e (a INT, b INT)")
        con.execute(f"CREATE MATERIALIZED VIEW reach AS {reach}")
        for edges in ["(1, 2), (2, 3)", "(3, 4), (7, 8)"]:
            for db in (con, oracle):
                db.execute(f"INSERT INTO e VALUES {edges}")
            assert _rows(con, "SELECT * FROM reach") == _rows(oracle, reach)
        [loop] = _flow(con, "reach").loops()
        saved = _loop_state(loop)
    with monkeypatch.context() as refusing:
        refusing.setattr(Controller, "start", _recomputes)
        con = matview.connect(path, spark=spark, clock=200)
        [loop] = _flow(con, "reach").loops()
    assert _loop_state(loop) == saved and any(rows for rows, _ in saved)
    for change in ["INSERT INTO e VALUES (4, 5), (8, 1)", "DELETE FROM e WHERE a = 2",
                   "INSERT INTO e VALUES (2, 7)"]:
        for db in (con, oracle):
            db.execute(change)
        assert _rows(con, "SELECT * FROM reach") == _rows(oracle, reach), change
    con.close()


def _loop_state(loop: LetRecOp) -> list[tuple[list[tuple[object, ...]], int]]:
    """Per stored collection of ``loop``, its differences' rows (sorted) and rounds."""
    return [(sorted(row for t in tables for row in zip(*t.to_pydict().values())), rounds)
            for tables, rounds in loop.state()]


def test_a_view_whose_plan_changed_is_rebuilt(spark: SparkSession, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A view whose plan is not the one its state was saved from (a recursive query's,
    here, as another matview would plan it): it, and every view over it, is rebuilt from
    its inputs when the database is opened, after the views resumed (whose inputs the
    rebuild must not compact past their frontiers), and equals them."""
    path = tmp_path / "db"
    reach = ("WITH MUTUALLY RECURSIVE r (a INT, b INT) AS (SELECT a, b FROM e UNION "
             "SELECT r.a, e.b FROM r JOIN e ON r.b = e.a) SELECT * FROM r")
    with matview.connect(path, spark=spark, clock=100) as con:
        con.execute("CREATE TABLE e (a INT, b INT)")
        con.execute("INSERT INTO e VALUES (1, 2), (2, 3)")
        con.execute(f"CREATE MATERIALIZED VIEW reach AS {reach}")
        con.execute("CREATE MATERIALIZED VIEW reached AS SELECT count(*) AS n FROM reach")
        con.execute("CREATE MATERIALIZED VIEW edges AS SELECT count(*) AS n FROM e")
        con.execute("INSERT INTO e VALUES (3, 4)")
        assert con.execute("SELECT * FROM edges").fetchall() == [(3,)]
        con.execute("INSERT INTO e VALUES (4, 5)")  # logged: edges steps after reopening
    planned = durability.fingerprint
    monkeypatch.setattr(durability, "fingerprint", lambda plan: "another" if "LetRec" in repr(
        plan) else planned(plan))
    with matview.connect(path, spark=spark) as con:
        assert con._engine_for_use().durability is not None
        assert con._engine_for_use().durability.rebuilt == ["reach", "reached"]
        assert sorted(con.execute("SELECT * FROM reach").fetchall()) == [
            (1, 2), (1, 3), (1, 4), (1, 5), (2, 3), (2, 4), (2, 5), (3, 4), (3, 5), (4, 5)]
        assert con.execute("SELECT * FROM reached").fetchall() == [(10,)]
        assert con.execute("SELECT * FROM edges").fetchall() == [(4,)]


def test_the_first_refresh_after_reopening_runs_plans_built_by_then(
        spark: SparkSession, tmp_path: Path) -> None:
    """Reopening rehearses each resumed view's step like its last one (the sources it
    changed are saved with its state: ``Dataflow.changed``), so the first refresh after it
    calls no DataFrame method. Each transaction moves a customer and changes orders; the
    customers, a twentieth of the orders, are no input a new view's rehearsal would change
    (``LARGE_INPUT``), and ``rehearsal_min_rows`` lets 1,000 orders rehearse."""
    settings = {"rehearsal_min_rows": 500}
    path = str(tmp_path / "db")
    orders = {i: (i % 50, i) for i in range(1_000)}
    customers = {c: f"r{c % 4}" for c in range(50)}

    def written(con: matview.Connection, step: int) -> None:
        moved = step % 50
        with con.transaction():
            con.delete("customers", [(moved, customers[moved])])
            customers[moved] = f"moved{step}"
            con.insert("customers", [(moved, customers[moved])])
            con.delete("orders", [(step, *orders.pop(step))])
            orders[2_000 + step] = (moved, step)
            con.insert("orders", [(2_000 + step, moved, step)])

    con = matview.connect(path=path, clock=0, spark=spark, settings=settings)
    created(con, customers, orders)
    written(con, 1)
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == totals(customers, orders)
    con.close()
    con = matview.connect(path=path, clock=0, spark=spark, settings=settings)
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == totals(customers, orders)
    written(con, 2)
    with dataframe_calls() as called:
        rows = sorted(con.execute("SELECT * FROM v").fetchall())
    assert rows == totals(customers, orders)
    assert called == []
    con.close()
