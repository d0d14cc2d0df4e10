"""The Spark jobs a small step runs, counted (``bench.measure.counted``): a transaction
deleting rows held in Spark checks them with one job per table, rows held in the driver
(or copied there) or in files the driver reads by key with none, and reading a
GROUP BY-over-join view after it refreshes and reads in one (none when every row it reads
is held in the driver or read by it from files: its plan is computed there,
``runtime/spark/ArrowCollect.java``), with at most 60 py4j calls once its plans are built
over slots; a view read from the driver copy of its contents runs no job; every view a
small transaction changes refreshes in one plan, run in the driver when it has no shuffle,
else in one job (temporal filters' splits of updates due now and later included), a view
failing to step fails only its own reads, and an ad hoc query over tables the driver holds
runs no job."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
from matview.runtime.settings import DEFAULTS
from pyspark.sql import SparkSession

import matview
from bench.measure import counted

ORDERS = DEFAULTS.driver_batch_rows + 10_000
"""Orders enough that the table's rows are held in Spark, not in the driver."""


WHOLE = {"table_copy_rows": 0, "keyed_read_rows": 1 << 20}
"""orders' batch read whole, by Spark (it is smaller than ``keyed_read_rows``)."""

KEYED = {"table_copy_rows": 0, "keyed_read_rows": 1_000, "large_lookup_rows": 5_000}
"""orders read by key from its files, and a lookup of more than 5,000 rows broadcast its
other side (a job of its own): a keyed read of a step's one customer, about a page of
rows, is not one."""


@pytest.mark.parametrize("settings, frames, commit_jobs, read_jobs, calls",
                         [({}, False, 0, 0, 60), ({}, True, 0, 0, 60),
                          (WHOLE, False, 1, 1, 60),
                          (KEYED, False, 0, 0, 30)],
                         ids=["copies", "copies-of-frames", "in-spark", "keyed"])
def test_a_small_step_runs_at_most_one_job_to_commit_and_one_to_refresh(
        spark: SparkSession, settings: dict[str, int], frames: bool,
        commit_jobs: int, read_jobs: int, calls: int) -> None:
    """With the tables' driver copies, the commit checks its deletes in Arrow and the
    refresh reads the tables' rows from the driver: no job, also when the tables were
    loaded as Spark DataFrames (``frames``: their rows held in files, and copied); without,
    and with orders' batch read whole, one job for the table whose rows are held in Spark,
    and one to refresh. When orders'
    batch is read by key from its files, the driver reads the pages of the keys itself,
    with no job, for the check and the refresh alike (its rows many, the pages read few),
    its rows bound into a slot: the step's plans are those of the step before, run in the
    driver, and the read makes at most 30 py4j calls (46 when the plans are built anew
    over the keyed read)."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings=settings)
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    customers = [(i, f"r{i % 7}") for i in range(3_000)]
    orders = [(i, i % 3_000, i % 97) for i in range(ORDERS)]
    con.insert("customers", spark.createDataFrame(customers, "id INT, region STRING")
               if frames else customers)
    con.insert("orders", spark.createDataFrame(orders, "id INT, cust INT, amount BIGINT")
               if frames else orders)
    if frames:  # orders' rows held in files and copied to the driver (customers' fetched)
        trace = con._engine_for_use().catalog.entries["orders"].trace
        assert trace is not None
        assert all(b.leaf.files is not None and b.leaf.copy is not None for b in trace.batches)
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n, "
                "sum(o.amount) AS total FROM orders o JOIN customers c ON o.cust = c.id "
                "GROUP BY c.region")
    expected = {f"r{r}": [0, 0] for r in range(7)}
    for i in range(ORDERS):
        expected[f"r{i % 3_000 % 7}"][0] += 1
        expected[f"r{i % 3_000 % 7}"][1] += i % 97
    for step in range(4):
        with counted(spark, f"commit-{sorted(settings)}-{step}") as commit:
            with con.transaction():
                gone = range(step * 20, step * 20 + 20)
                con.delete("orders", [(i, i % 3_000, i % 97) for i in gone])
                con.insert("orders", [(ORDERS + step * 20 + i, i, 5) for i in range(20)])
                con.delete("customers", [(1_000 + step, f"r{(1_000 + step) % 7}")])
                con.insert("customers", [(1_000 + step, "moved")])
        with counted(spark, f"read-{sorted(settings)}-{step}") as read:
            rows = con.execute("SELECT * FROM v").fetchall()
        assert commit["jobs"] == commit_jobs and read["jobs"] == read_jobs, \
            (step, commit, read)
        if step >= 2:  # the first steps make the plans and their slots, later steps reuse
            assert (read["py4j"] or 0) <= calls, (step, read)  # them (runtime.templates)
        for i in gone:
            expected[f"r{i % 3_000 % 7}"][0] -= 1
            expected[f"r{i % 3_000 % 7}"][1] -= i % 97
        for i in range(20):
            expected[f"r{i % 7}"][0] += 1
            expected[f"r{i % 7}"][1] += 5
        moved = [i for i in range(ORDERS) if i % 3_000 == 1_000 + step]
        expected[f"r{(1_000 + step) % 7}"][0] -= len(moved)
        expected[f"r{(1_000 + step) % 7}"][1] -= sum(i % 97 for i in moved)
        expected.setdefault("moved", [0, 0])
        expected["moved"][0] += len(moved)
        expected["moved"][1] += sum(i % 97 for i in moved)
        assert sorted(rows) == sorted((k, n, total) for k, (n, total) in expected.items())


def test_a_small_reduce_step_with_errors_and_extremes_runs_no_job(
        spark: SparkSession) -> None:
    """A GROUP BY whose arguments may fail (errors are data) and with min/max (their
    (key, argument) pairs are arranged) computes its output, its errors and its pairs in
    one plan per small step, which has no shuffle and so runs in the driver, with no Spark
    job (``ArrowCollect``), failing or not."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i % 50, i % 13 + 1) for i in range(2_000)])
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT k, min(v), max(v), sum(100 / v) "
                "FROM t GROUP BY k")
    expected = {k: [v for i, v in ((i, i % 13 + 1) for i in range(2_000)) if i % 50 == k]
                for k in range(50)}

    def rows() -> list[tuple[int, int, int, int]]:
        return sorted((k, min(vs), max(vs), sum(100 // v for v in vs))
                      for k, vs in expected.items() if vs)

    for step, (gone, new) in enumerate([((3, 1), (3, 20)), ((7, 2), (60, 4)),
                                        ((3, 20), (61, 5))]):
        with con.transaction():
            con.delete("t", [gone])
            con.insert("t", [new])
        expected[gone[0]].remove(gone[1])
        expected.setdefault(new[0], []).append(new[1])
        with counted(spark, f"reduce-read-{step}") as read:
            got = con.execute("SELECT * FROM v").fetchall()
        assert read["jobs"] == 0, (step, read)
        assert sorted(got) == rows()
    con.insert("t", [(5, 0)])
    with counted(spark, "reduce-read-failing") as read:
        with pytest.raises(matview.DataError, match="division by zero"):
            con.execute("SELECT * FROM v").fetchall()
    assert read["jobs"] == 0, read
    con.delete("t", [(5, 0)])
    assert sorted(con.execute("SELECT * FROM v").fetchall()) == rows()


@pytest.mark.parametrize("copy_rows, read_jobs", [(DEFAULTS.view_copy_rows, 0), (0, 1)])
def test_a_large_view_is_read_from_its_driver_copy(
        spark: SparkSession, copy_rows: int,
        read_jobs: int) -> None:
    """A view's first contents, too many rows to keep in the driver as its batch, are held
    in Spark and copied to the driver: reading the view runs no Spark job then, nor after
    a small step, whose GROUP BY reads the state of the groups it touches by key (from the
    copy, or from the state's files by the driver) and runs in the driver; without the
    copy each read of the view's rows runs one job."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental",
                          settings={"view_copy_rows": copy_rows})
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.insert("t", [(i, i % 10) for i in range(ORDERS)])
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n, sum(v) AS s "
                "FROM t GROUP BY k")
    expected = {i: (1, i % 10) for i in range(ORDERS)}
    with counted(spark, f"first-read-{copy_rows}") as first:
        rows = con.execute("SELECT * FROM v").fetchall()
    assert first["jobs"] == read_jobs and len(rows) == ORDERS
    for step in range(2):
        con.insert("t", [(step, 5), (ORDERS + step, 7)])
        with counted(spark, f"read-{copy_rows}-{step}") as read:
            rows = con.execute("SELECT * FROM v").fetchall()
        n, s = expected[step]
        expected[step] = (n + 1, s + 5)
        expected[ORDERS + step] = (1, 7)
        assert read["jobs"] == read_jobs, (step, read)
        assert sorted(rows) == sorted((k, n, s) for k, (n, s) in expected.items())


def test_the_views_a_transaction_changes_refresh_in_one_plan(spark: SparkSession) -> None:
    """A small transaction's refresh steps every materialized view it changes in one plan
    (a GROUP BY over a join, a filter whose expression may fail, a GROUP BY with min/max),
    whichever view is read first, which has no shuffle and so runs in the driver with no
    Spark job (``ArrowCollect``); the others are then read without a job."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("customers", [(i, f"r{i % 7}") for i in range(300)])
    orders = {i: (i % 300, i % 97) for i in range(3_000)}
    con.insert("orders", [(i, c, a) for i, (c, a) in orders.items()])
    con.execute("CREATE MATERIALIZED VIEW by_region AS SELECT c.region, count(*) AS n, "
                "sum(o.amount) AS total FROM orders o JOIN customers c ON o.cust = c.id "
                "GROUP BY c.region")
    con.execute("CREATE MATERIALIZED VIEW ratios AS SELECT id, 1000 / amount AS r "
                "FROM orders WHERE amount > 90")
    con.execute("CREATE MATERIALIZED VIEW extremes AS SELECT cust, min(amount) AS lo, "
                "max(amount) AS hi FROM orders GROUP BY cust")

    def expected() -> dict[str, list[tuple[object, ...]]]:
        regions: dict[str, list[int]] = {}
        for c, a in orders.values():
            regions.setdefault(f"r{c % 7}", []).append(a)
        custs: dict[int, list[int]] = {}
        for c, a in orders.values():
            custs.setdefault(c, []).append(a)
        return {"by_region": sorted((r, len(a), sum(a)) for r, a in regions.items()),
                "ratios": sorted((i, 1000 // a) for i, (_, a) in orders.items() if a > 90),
                "extremes": sorted((c, min(a), max(a)) for c, a in custs.items())}

    for step, first in enumerate(["by_region", "ratios", "extremes"]):
        gone = range(step * 10, step * 10 + 10)
        new = {5_000 + step * 10 + i: (i * 7 % 300, 91 + i) for i in range(10)}
        with con.transaction():
            con.delete("orders", [(i, *orders[i]) for i in gone])
            con.insert("orders", [(i, c, a) for i, (c, a) in new.items()])
        for i in gone:
            del orders[i]
        orders.update(new)
        want = expected()
        with counted(spark, f"one-job-{step}") as read:
            got = {name: sorted(con.execute(f"SELECT * FROM {name}").fetchall())
                   for name in [first, *sorted(set(want) - {first})]}
        assert read["jobs"] == 0, (step, read)
        assert got == want


def test_a_small_step_of_a_long_join_runs_in_the_driver(spark: SparkSession) -> None:
    """A small step's delta path of five lookups keeps every join in its one partition (no
    shuffle: Spark's estimate of a join's size, the product of its sides', is bounded by a
    limit on the path, ``updates.lookup``), so its plan is kept and computed in the driver:
    no Spark job."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    for i in range(5):
        con.execute(f"CREATE TABLE t{i} (k INT, next INT, pad TEXT)")
        con.insert(f"t{i}", [(k, k % 50, f"p{k}") for k in range(500)])
    con.execute("CREATE TABLE g (k INT, grp TEXT)")
    con.insert("g", [(k, f"g{k % 5}") for k in range(50)])
    # keys of expressions: each lookup reads its table whole, 500 rows
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT g.grp, count(*) AS n FROM t0 "
                "JOIN t1 ON t0.next = t1.k + 0 JOIN t2 ON t1.next = t2.k + 0 "
                "JOIN t3 ON t2.next = t3.k + 0 JOIN t4 ON t3.next = t4.k + 0 "
                "JOIN g ON t4.next = g.k + 0 GROUP BY g.grp")
    rows = {k: k % 50 for k in range(500)}
    for step in range(3):
        with con.transaction():
            con.delete("t0", [(step, rows[step], f"p{step}")])
            con.insert("t0", [(1_000 + step, 7, "new")])
        del rows[step]
        rows[1_000 + step] = 7
        with counted(spark, f"long-join-{step}") as read:
            got = sorted(con.execute("SELECT * FROM v").fetchall())
        want: dict[str, int] = {}
        for nxt in rows.values():  # every t*'s k % 50 chain ends at g.k = nxt % 50
            grp = f"g{nxt % 50 % 5}"
            want[grp] = want.get(grp, 0) + 1
        assert got == sorted(want.items())
        if step:  # the first step builds the plan and its slots
            assert read["jobs"] == 0, (step, read)


def test_a_view_that_fails_to_step_does_not_stop_the_others(spark: SparkSession) -> None:
    """Views step together, but a view whose step fails (a table function asked for more
    rows than the limit) fails its own reads only: the views a read needs then step alone."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental",
                          max_table_function_rows=100)
    con.execute("CREATE TABLE t (v INT)")
    con.execute("INSERT INTO t VALUES (1), (2)")
    con.execute("CREATE MATERIALIZED VIEW series AS SELECT generate_series(1, v) AS s FROM t")
    con.execute("CREATE MATERIALIZED VIEW total AS SELECT sum(v) AS s FROM t")
    con.execute("INSERT INTO t VALUES (1000)")
    assert con.execute("SELECT * FROM total").fetchall() == [(1003,)]
    with pytest.raises(matview.Error, match="more than 100 rows"):
        con.execute("SELECT * FROM series").fetchall()
    con.execute("INSERT INTO t VALUES (4)")
    assert con.execute("SELECT * FROM total").fetchall() == [(1007,)]
    with pytest.raises(matview.Error, match="more than 100 rows"):
        con.execute("SELECT * FROM series").fetchall()


def test_a_small_step_of_a_temporal_filter_runs_no_job(spark: SparkSession) -> None:
    """A sliding window (events counted per kind while less than 60 s old): each small
    step releases the updates due, splits the new events' updates into those due now and
    those that must wait (computed, then split in Arrow) and counts, in the driver with no
    Spark job, also when an event's expression fails (a division by zero, an error of the
    view), and when the clock alone moves."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE events (id INT, kind TEXT, ts BIGINT, w INT)")
    window = ("SELECT kind, count(*) AS n FROM events WHERE mz_now() < ts + 60000 "
              "GROUP BY kind")
    con.execute(f"CREATE MATERIALIZED VIEW recent AS {window}")
    con.execute("CREATE MATERIALIZED VIEW weighted AS SELECT id, 100 / w AS x FROM events "
                "WHERE mz_now() < ts + 30000")
    events: list[tuple[int, str, int, int]] = []
    for step in range(6):
        now = 20_000 * (step + 1)
        con.advance_time(now)
        if step != 3:  # step 3 only moves the clock
            new = [(step * 10 + i, f"k{i % 3}", now - 1_000 * i, 1 + i) for i in range(10)]
            con.insert("events", new)
            events.extend(new)
        with counted(spark, f"temporal-{step}") as read:
            got = sorted(con.execute("SELECT * FROM recent").fetchall())
            weighted = sorted(con.execute("SELECT * FROM weighted").fetchall())
        # plans over slots, without a shuffle nor the step's times: run in the driver
        assert read["jobs"] == 0, (step, read)
        kinds: dict[str, int] = {}
        for _, kind, ts, _ in events:
            if now < ts + 60_000:
                kinds[kind] = kinds.get(kind, 0) + 1
        assert got == sorted(kinds.items())
        assert weighted == sorted((i, 100 // w) for i, _, ts, w in events if now < ts + 30_000)
    con.execute("INSERT INTO events VALUES (100, 'k0', 130000, 0)")
    with pytest.raises(matview.DataError, match="division by zero"):
        con.execute("SELECT * FROM weighted").fetchall()
    assert sorted(con.execute("SELECT * FROM recent").fetchall())[0] == (
        "k0", 1 + sum(1 for _, k, ts, _ in events if k == "k0" and 120_000 < ts + 60_000))


@pytest.mark.parametrize("query, expected", [
    ("SELECT count(*) FROM t WHERE v > 5", [(494,)]),
    ("SELECT k, sum(v) FROM t WHERE k < 2 GROUP BY k", [(0, 2_250), (1, 2_260)]),
    ("SELECT t.k, u.w FROM t JOIN u ON t.k = u.k WHERE t.v = 7", [(7, "w7")]),
    ("SELECT v, 1000 / v FROM t WHERE k = 3", [(v, 1000 // v) for v in range(3, 500, 50)]),
    ("SELECT v, 1000 / (v - 53) FROM t WHERE k = 3", "division by zero")])
def test_an_ad_hoc_query_over_small_tables_runs_no_job(
        spark: SparkSession, query: str, expected: list[tuple[object, ...]] | str) -> None:
    """A SELECT over tables whose rows the driver holds is computed by a dataflow run once
    whose plan has no shuffle (its one small step consolidated in one partition, no
    meters observing its rows, a global aggregate's empty-input row a local row too):
    ``ArrowCollect`` computes it in the driver, with no Spark job. The errors a query's
    evaluation may hold (a division by zero) are computed with its rows, in one plan, and
    one is raised instead of the rows."""
    con = matview.connect(spark=spark)
    con.execute("CREATE TABLE t (k INT, v INT)")
    con.execute("CREATE TABLE u (k INT, w TEXT)")
    con.insert("t", [(i % 50, i) for i in range(500)])
    con.insert("u", [(i, f"w{i}") for i in range(50)])
    with counted(spark, f"ad hoc {query}") as read:
        if isinstance(expected, str):
            with pytest.raises(matview.DataError, match=expected):
                con.execute(query)
        else:
            assert sorted(con.execute(query).fetchall()) == expected
    assert read["jobs"] == 0, read
    con.close()


def test_a_kept_plan_with_a_limit_over_local_rows_collects_its_rows(spark: SparkSession) -> None:
    """A limit, an ordered limit and a tail move their rows into one partition by a shuffle
    the physical plan does not show: ``ArrowCollect`` collects such a plan by a job, never
    in the driver, where it read no rows at all."""
    import pyarrow as pa
    from matview.runtime.spark.arrow_frames import arrow_frame
    from matview.runtime.spark.jvm_plans import computed_in_driver, to_arrow

    df = arrow_frame(spark, pa.table({"a": list(range(10))}))
    for frame, expected in [(df.limit(3), [0, 1, 2]), (df.orderBy(df.a.desc()).limit(2), [9, 8]),
                            (df.offset(8), [8, 9])]:
        assert not computed_in_driver(frame)
        assert to_arrow(frame)["a"].to_pylist() == expected
        assert to_arrow(frame)["a"].to_pylist() == expected  # its kept plan run again
    assert computed_in_driver(df.where(df.a > 6))
    assert to_arrow(df.where(df.a > 6))["a"].to_pylist() == [7, 8, 9]


CLIQUES = ("SELECT count(*) AS n FROM edges ab JOIN edges ac ON ab.src = ac.src "
           "JOIN edges ad ON ab.src = ad.src JOIN edges bc ON ab.dst = bc.src "
           "AND ac.dst = bc.dst JOIN edges bd ON ab.dst = bd.src AND ad.dst = bd.dst "
           "JOIN edges cd ON ac.dst = cd.src AND ad.dst = cd.dst")
"""The 4-cliques of a directed graph (``bench/cyclic.py``'s ``cliques4``)."""


def test_a_small_step_of_a_cyclic_join_over_many_slots_runs_in_the_driver(
        spark: SparkSession, runtime_settings: Callable[..., None]) -> None:
    """A 4-clique view's small step: six delta paths of five lookups, over about fifty
    slots; of 8,192 rows each, they hold some 400,000 local rows (mostly room), fewer than
    ``driver_plan_rows``, so after its first step the view steps with no Spark job (with
    262,144, the bound before, its plan was a new query at every step, 6-7x slower)."""
    runtime_settings(slot_min_capacity=8192)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src INT, dst INT)")
    rng = random.Random(4)
    edges = {(a, b) for a, b in ((rng.randrange(40), rng.randrange(40)) for _ in range(500))
             if a != b}
    con.insert("edges", sorted(edges))
    con.execute(f"CREATE MATERIALIZED VIEW cliques AS {CLIQUES}")
    for step in range(3):
        gone, new = rng.choice(sorted(edges)), (40 + step, rng.randrange(40))
        con.delete("edges", [gone])
        con.insert("edges", [new])
        edges = (edges - {gone}) | {new}
        with counted(spark, f"cliques-{step}") as read:
            got = con.execute("SELECT * FROM cliques").fetchall()
        out = {a: {b for x, b in edges if x == a} for a, _ in edges}
        want = sum(len(out[a] & out.get(b, set()) & out.get(c, set()))
                   for a in out for b in out[a] for c in out[a] & out.get(b, set()))
        assert got == [(want,)]
        if step:  # the first step builds the plan and its slots
            assert read["jobs"] == 0, (step, read)
