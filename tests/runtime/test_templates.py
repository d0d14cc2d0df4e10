"""Plans built once (``runtime.templates``): a slot's frame reads the rows bound last, each
collect of it included; a small step of the same shape as the one before reuses its plans
(the frames the refresh's one job computes are the same objects) and makes no DataFrame
call, while the views stay right and operators' row counts exact."""

from __future__ import annotations

import datetime
import decimal
from collections.abc import Iterator
from contextlib import contextmanager

import pyarrow as pa
import pytest
from matview.runtime.operators.join import JoinOp
from matview.runtime.render import operators
from matview.runtime.settings import DEFAULTS, using
from matview.runtime.spark import jvm_plans
from matview.runtime.spark.arrow_frames import arrow_file
from matview.runtime.spark.jvm_objects import jvm_helper
from matview.runtime.spark.jvm_plans import to_arrow
from matview.runtime.spark.templates import Slot, slot_for, slot_sizes
from matview.runtime.spark.unsafe_rows import sent_together
from py4j.java_gateway import JavaMember
from pyspark.sql import DataFrame, SparkSession

import matview
from tests.support.dataframe_calls import dataframe_calls, wanted_frames


def _table(rows: list[tuple[int, str]]) -> pa.Table:
    return pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                     "v": pa.array([r[1] for r in rows], pa.string())})


def _rows(df: DataFrame) -> list[tuple[int, str]]:
    return sorted((r["k"], r["v"]) for r in to_arrow(df).to_pylist())


def test_a_slot_frame_reads_the_rows_bound_last(spark: SparkSession) -> None:
    """Plans over a slot, collected again after another batch is bound, read that batch
    (the collect runs a copy of the plan planned the first time, whose local relations
    share their rows with the slot's: ``ArrowCollect.prepare``)."""
    first = _table([(1, "a"), (2, "b"), (3, None)])
    slot = slot_for([], spark, first)
    assert isinstance(slot, Slot) and slot.capacity == DEFAULTS.slot_min_capacity
    slot.bind(first)
    grouped = slot.frame.groupBy("v").count().withColumnRenamed("count", "k")
    plan = slot.frame.where("k > 1")
    assert _rows(plan) == [(2, "b"), (3, None)]
    assert sorted(r["k"] for r in to_arrow(grouped).to_pylist()) == [1, 1, 1]
    second = _table([(5, "x"), (6, "x")])
    assert slot_for([slot], spark, second) is slot
    slot.bind(second)
    assert _rows(plan) == [(5, "x"), (6, "x")]
    assert to_arrow(grouped).to_pylist() == [{"v": "x", "k": 2}]
    slot.bind(_table([]))
    assert _rows(plan) == []


@contextmanager
def _jvm_calls() -> Iterator[list[str]]:
    """The names of the JVM methods called through py4j in the block."""
    called: list[str] = []
    original = JavaMember.__call__

    def counting(self: JavaMember, *args: object) -> object:
        called.append(self.name)
        return original(self, *args)

    JavaMember.__call__ = counting  # type: ignore[method-assign]
    try:
        yield called
    finally:
        JavaMember.__call__ = original  # type: ignore[method-assign]


def test_binding_a_slot_and_collecting_a_plan_again_cost_a_jvm_call_each(
        spark: SparkSession) -> None:
    """A slot's rows are read from an Arrow file by a Java helper in one JVM call (making a
    DataFrame of them to take its rows took six), and a plan collected again runs a copy of
    its physical plan, planned once, in one (a new query over its analysed plan, optimized
    and planned again, took two; eight before that), reading the rows bound last, whatever
    the columns' types: NULLs, strings, decimals, dates, timestamps, booleans, doubles."""
    def batch(n: int) -> pa.Table:
        return pa.table({
            "i": pa.array([i if i % 3 else None for i in range(n)], pa.int64()),
            "s": pa.array([f"s{i}" if i % 4 else None for i in range(n)]),
            "d": pa.array([decimal.Decimal(i) / 4 for i in range(n)], pa.decimal128(10, 2)),
            "day": pa.array([datetime.date(2026, 1, 1 + i % 28) for i in range(n)]),
            "at": pa.array([datetime.datetime(2026, 1, 1, i % 24) for i in range(n)],
                           pa.timestamp("us", "UTC")),
            "b": pa.array([i % 2 == 0 for i in range(n)]),
            "f": pa.array([i / 3 for i in range(n)], pa.float64())})

    slot = slot_for([], spark, batch(3))
    assert slot is not None
    to_arrow(slot.frame)  # the helpers made, once per session; the plan prepared
    for n in (3, 200, 0, 17):
        with _jvm_calls() as bound:
            slot.bind(batch(n))
        with _jvm_calls() as collected:
            rows = to_arrow(slot.frame)
        assert bound == ["read"] and collected == ["run"], (bound, collected)
        assert rows.sort_by("f").to_pylist() == batch(n).to_pylist()


def test_fixed_width_rows_are_made_in_python_as_spark_writes_them(spark: SparkSession) -> None:
    """A slot of fixed-width columns (integers of every width, booleans, dates, timestamps,
    doubles) is bound in one JVM call with its rows' bytes made in Python
    (``runtime.unsafe_rows``), no Arrow file: the rows are byte for byte those Spark makes
    of the same batch from Arrow (NULLs, negative values, the padding rows), and plans read
    them right."""
    def batch(n: int) -> pa.Table:
        return pa.table({
            "l": pa.array([(-1) ** i * i * 2**40 if i % 3 else None for i in range(n)],
                          pa.int64()),
            "i": pa.array([-i if i % 4 else None for i in range(n)], pa.int32()),
            "h": pa.array([-i for i in range(n)], pa.int16()),
            "y": pa.array([(-1) ** i * (i % 100) for i in range(n)], pa.int8()),
            "b": pa.array([None if i % 5 == 0 else i % 2 == 0 for i in range(n)]),
            "day": pa.array([datetime.date(1969 + i % 3, 1, 1 + i % 28) for i in range(n)]),
            "at": pa.array([datetime.datetime(1969 + i % 3, 1, 1, i % 24) for i in range(n)],
                           pa.timestamp("us", "UTC")),
            "naive": pa.array([datetime.datetime(2026, 1, 1, 0, i % 60) for i in range(n)],
                              pa.timestamp("us")),
            "f": pa.array([-i / 3 if i % 6 else None for i in range(n)], pa.float64())})

    slot = slot_for([], spark, batch(5))
    assert slot is not None and slot.fixed
    slot.bind(batch(1))  # the helper made, once per session
    spark_made = Slot(spark, slot.schema, slot.capacity)  # its rows read as Spark reads them
    for n in (5, 130, 0):
        with _jvm_calls() as bound:
            slot.bind(batch(n))
        assert bound == ["point"], bound
        assert to_arrow(slot.frame).to_pylist() == (
            batch(n).cast(to_arrow(slot.frame).schema).to_pylist())
        with arrow_file(spark, slot._live(batch(n))) as (path, _):
            jvm_helper(spark, "SlotRows").read(path, spark_made.number)
        for i in range(n + 2):
            assert bytes(slot.rows[i].getBytes()) == bytes(spark_made.rows[i].getBytes()), i


def test_slots_bound_together_get_their_rows_in_one_jvm_call(spark: SparkSession) -> None:
    """Inside ``sent_together`` binding a slot makes no JVM call: the rows of all slots
    bound go in one call before the next collect (which reads them) or at the block's end;
    a slot bound twice sends its last rows."""
    def ints(values: list[int]) -> pa.Table:
        return pa.table({"k": pa.array(values, pa.int64())})

    a, b = slot_for([], spark, ints([1])), slot_for([], spark, ints([2]))
    assert a is not None and b is not None
    both = a.frame.unionByName(b.frame)
    a.bind(ints([1]))
    b.bind(ints([2]))
    assert sorted(to_arrow(both)["k"].to_pylist()) == [1, 2]
    helper = jvm_helper(spark, "SlotRows")
    with sent_together(spark, helper):
        with _jvm_calls() as bound:
            a.bind(ints([3, 4]))
            b.bind(ints([5]))
            b.bind(ints([6, 7, 8]))
        assert bound == []
        with _jvm_calls() as collected:
            rows = to_arrow(both)
        assert collected == ["point", "run"], collected
        assert sorted(rows["k"].to_pylist()) == [3, 4, 6, 7, 8]
        with _jvm_calls() as bound:
            a.bind(ints([9]))
        assert bound == []
    assert sorted(to_arrow(both)["k"].to_pylist()) == [6, 7, 8, 9]


def test_a_slot_grows_and_keeps_its_columns(spark: SparkSession) -> None:
    """A batch larger than the role's slots, of other columns, or so much smaller that
    padding it would cost more than a new slot, takes a new slot, of the next size
    (``slot_shrink`` times the one before); the role keeps the slots it had, and a batch
    that fits one of them takes the smallest."""
    with using(SMALL):
        _grows(spark)


SMALL = DEFAULTS.replaced({"slot_min_capacity": 256})
"""Slots of 256 rows at least: sizes 256, 4,096 and 65,536 (``slot_max_rows``)."""


def _grows(spark: SparkSession) -> None:
    slots: list[Slot] = []
    slot = slot_for(slots, spark, _table([(1, "a")]))
    assert slot is not None and slots == [slot] and slot.capacity == 256
    bigger = _table([(i, "a") for i in range(257)])
    grown = slot_for(slots, spark, bigger)
    assert grown is not slot and grown is not None
    assert grown.capacity == 256 * SMALL.slot_shrink
    grown.bind(bigger)
    assert len(_rows(grown.frame)) == 257
    assert slot_for(slots, spark, _table([(2, "b")])) is slot  # the smallest that fits
    assert slot_for(slots, spark, bigger) is grown
    assert slot_for(slots, spark, _table([(i, "a") for i in range(4_000)])) is grown
    other = pa.table({"k": pa.array([1], pa.int32()), "v": pa.array(["a"])})
    assert slot_for(list(slots), spark, other) not in (slot, grown)
    huge = _table([(i, "a") for i in range(4_097)])
    big = slot_for(slots, spark, huge)
    assert big is not None and big.capacity == SMALL.slot_max_rows
    assert slot_for(slots, spark, _table([(i, "a") for i in range(200)])) is slot
    assert slot_for(slots, spark, _table([(i, "a") for i in range(300)])) is grown
    assert len(slots) == 3 and slot_sizes(SMALL) == 3
    for i in range(slot_sizes(SMALL) + 1):  # more sizes than a role keeps: the oldest go
        slot_for(slots, spark, pa.table({"k": pa.array([1], pa.int32()),
                                         "v": pa.array(["a"]), f"x{i}": [i]}))
    assert len(slots) == slot_sizes(SMALL)


def _kept_from_the_third_step(step: int, called: list[str], wanted: list[list[DataFrame]],
                              previous: list[DataFrame]) -> list[DataFrame]:
    """Check a step's run: from the third step on (the second binds the slots and builds the
    plans over them), no DataFrame method ran and the one job computed the same frames as
    the step before, each in the driver. Returns the step's frames."""
    frames = [frame for job in wanted for frame in job]
    if step >= 2:
        assert called == [], (step, called)
        assert len(frames) == len(previous) and all(
            a is b for a, b in zip(frames, previous)), step
        kept = [jvm_plans._prepared.get(frame) for frame in frames]
        assert all(k and k[2] is not None for k in kept), step  # run in the driver
    return frames


@pytest.mark.parametrize("aggregate", ["sum", "max", "mean"])
def test_a_step_of_the_same_shape_reuses_its_plans(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, aggregate: str) -> None:
    """A GROUP BY over a join: from the third small step on (the second binds its slots and
    builds the plans over them), each step's one job computes the same frame objects as the
    step before, in the driver (a kept plan without a shuffle: ``ArrowCollect``), and no
    DataFrame method runs, while the view equals its expected rows and the join's row count
    in EXPLAIN ANALYZE's figures is exact. With ``max`` the reduce also reads its arranged
    (key, argument) pairs by the keys the step touches (a semi-join); with ``mean`` (an
    ``CAST(sum AS BIGINT) / count``, TPC-H's shape) a projection computes over the reduce's
    output, a batch the driver holds, which it reads bound into a slot
    (``Operator.frame_of``)."""
    wanted = wanted_frames(monkeypatch)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("customers", [(i, f"r{i % 5}") for i in range(100)])
    con.insert("orders", [(i, i % 100, i) for i in range(1_000)])
    total = ("CAST(sum(o.amount) AS BIGINT) / count(*)" if aggregate == "mean"
             else f"{aggregate}(o.amount)")
    con.execute(f"CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n, {total} "
                "AS total FROM orders o JOIN customers c ON o.cust = c.id GROUP BY c.region")
    live = {i: (i % 100, i) for i in range(1_000)}
    joined, previous = 0, []
    for step in range(5):
        new = range(1_000 + step * 10, 1_010 + step * 10)
        gone = range(step * 10, step * 10 + 10)
        with con.transaction():
            con.delete("orders", [(i, *live.pop(i)) for i in gone])
            con.insert("orders", [(i, i % 100, i) for i in new])
        live.update({i: (i % 100, i) for i in new})
        joined += len(gone) + len(new)
        wanted.clear()
        with dataframe_calls() as called:
            rows = con.execute("SELECT * FROM v").fetchall()
        expected: dict[str, list[int]] = {}
        for cust, amount in live.values():
            group = expected.setdefault(f"r{cust % 5}", [0, 0])
            group[0] += 1
            group[1] = max(group[1], amount) if aggregate == "max" else group[1] + amount
        assert sorted(rows) == sorted((k, n, t // n if aggregate == "mean" else t)
                                      for k, (n, t) in expected.items())
        previous = _kept_from_the_third_step(step, called, wanted, previous)
    flow = con._engine_for_use().catalog.entries["v"].dataflow
    assert flow is not None
    join = [op for op in operators(flow.root) if isinstance(op, JoinOp)]
    assert len(join) == 1
    # the first step joined the 1,000 orders; every later step its 20 changed orders
    assert join[0].meter.rows == 1_000 + joined



def test_a_three_way_self_join_reuses_its_plans(spark: SparkSession,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """W2's shape: triangles counted over a three-way self-join, whose step joins each of
    the three delta paths (AltNeu: each path reads the others' history before or after its
    own change). From the third small step on, inserting and deleting edges, each step's one
    job computes the same frames as the step before, in the driver, and no DataFrame method
    runs, while the count equals the triangles of the live edges."""
    wanted = wanted_frames(monkeypatch)
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src INT, dst INT)")
    edges = {(i % 40, (i * 7 + 3) % 40) for i in range(300)}
    con.insert("edges", sorted(edges))
    con.execute("CREATE MATERIALIZED VIEW triangles AS SELECT count(*) AS n FROM edges e1 "
                "JOIN edges e2 ON e1.src = e2.src JOIN edges e3 ON e1.dst = e3.src AND "
                "e2.dst = e3.dst")
    previous: list[DataFrame] = []
    for step in range(5):
        new = {((step * 11 + j) % 40, (step * 5 + j * 3) % 40) for j in range(4)} - edges
        gone = set(sorted(edges)[step * 3:step * 3 + 3])
        with con.transaction():
            con.delete("edges", sorted(gone))
            con.insert("edges", sorted(new))
        edges = (edges - gone) | new
        wanted.clear()
        with dataframe_calls() as called:
            rows = con.execute("SELECT n FROM triangles").fetchall()
        assert rows == [(sum(1 for a, b in edges for c, d in edges if a == c
                             for e, f in edges if e == b and f == d),)]
        previous = _kept_from_the_third_step(step, called, wanted, previous)
    con.close()

def test_views_stepping_in_a_new_mix_reuse_their_plans(spark: SparkSession) -> None:
    """Two views over two tables: once each has stepped alone a few times (its plans over
    slots kept), a refresh in which both step makes no DataFrame call. Each kept plan that
    runs in the driver runs alone (``OneJob.run``), not in a union of every frame the
    refresh wants, which would be a new plan for each new mix of views stepping."""
    con = matview.connect(clock=0, spark=spark, refresh="incremental")
    live: dict[str, list[tuple[int, int]]] = {}
    for name in ("a", "b"):
        con.execute(f"CREATE TABLE {name} (k INT, v BIGINT)")
        live[name] = [(i, i * 10) for i in range(50)]
        con.insert(name, live[name])
        con.execute(f"CREATE MATERIALIZED VIEW v{name} AS SELECT k % 3 AS g, sum(v) AS s "
                    f"FROM {name} GROUP BY k % 3")

    def check(name: str) -> None:
        sums: dict[int, int] = {}
        for k, v in live[name]:
            sums[k % 3] = sums.get(k % 3, 0) + v
        assert sorted(con.execute(f"SELECT * FROM v{name}").fetchall()) == sorted(
            sums.items())

    for step, names in enumerate(["a"] * 3 + ["b"] * 3 + ["ab"] * 2):
        with con.transaction():
            for name in names:
                con.insert(name, [(100 + step, step)])
                live[name].append((100 + step, step))
        with dataframe_calls() as called:
            check("a")
            check("b")
        if names == "ab":
            assert called == [], (step, called)
    con.close()


def test_a_temporal_filter_reuses_its_plans_when_steps_alternate(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> None:
    """A sliding window (W3's shape): steps inserting events alternate with steps that
    only move the clock and release the events leaving the window. The filter compares
    times with the step's bounds read from a slot (``Operator.clock``), its due updates come
    from the pending arrangement held in the driver and bound into a slot, and operators
    keep the plans of their last few shapes (``plans_kept``): once both shapes have run,
    each step's one job computes the same frames as the step two before and no DataFrame
    method runs. The view holds the events in its window after every step."""
    wanted = wanted_frames(monkeypatch)
    con = matview.connect(clock=1_000, spark=spark, refresh="incremental")
    con.execute("CREATE TABLE events (id INT, ts BIGINT)")
    con.execute("CREATE MATERIALIZED VIEW recent AS SELECT id, ts FROM events "
                "WHERE mz_now() >= ts AND mz_now() < ts + 50")
    assert con.execute("SELECT * FROM recent").fetchall() == []
    events: list[tuple[int, int]] = []
    frames_of: list[list[DataFrame]] = []
    for step in range(12):
        clock = 1_000 + 10 * (step + 1)
        con.advance_time(clock)
        if step % 2 == 0:  # they leave the window together, five steps later
            new = [(10 * step + j, clock - 2 * j) for j in range(5)]
            con.insert("events", new)
            events += new
        wanted.clear()
        with dataframe_calls() as called:
            rows = con.execute("SELECT * FROM recent").fetchall()
        assert sorted(rows) == sorted(e for e in events if e[1] <= clock < e[1] + 50), step
        frames_of.append([frame for job in wanted for frame in job])
        if step >= 7:
            assert called == [], (step, called)
            before = frames_of[step - 2]
            assert len(frames_of[step]) == len(before) and all(
                a is b for a, b in zip(frames_of[step], before)), step
    con.close()


def _reachable(edges: set[tuple[int, int]], roots: set[int]) -> set[int]:
    seen, frontier = set(roots), set(roots)
    while frontier:
        frontier = {d for s, d in edges if s in frontier} - seen
        seen |= frontier
    return seen


def test_a_recursive_view_reuses_its_rounds_plans_when_steps_alternate(
        spark: SparkSession) -> None:
    """Reachability over a ring with chords, whose steps alternately cut a stretch of it
    and restore it: each step runs a dozen rounds, each with its own mix of join pairs,
    rounds and slot sizes. A loop keeps more plans per key than other operators
    (``LetRecOp.plans_kept``), every role its slots of each size (``slot_for``), and the
    loop's input changes are bound into a slot, so once both shapes have run most steps
    build no plan; with four plans and one slot per role every step built some. A step
    may still build a reduce's plans again when its cut of the history (which grows, as
    the loop's times are not compacted) first takes a larger slot. The view is the
    reachable set after every step."""
    nodes = 120
    edges = {(i, (i + 1) % nodes) for i in range(nodes)} | {
        (i, (i + 5) % nodes) for i in range(0, nodes, 3)}
    cut = {(s, d) for s, d in edges if 30 <= s < 36}
    con = matview.connect(spark=spark, refresh="incremental")
    con.execute("CREATE TABLE edges (src BIGINT, dst BIGINT)")
    con.execute("CREATE TABLE roots (id BIGINT)")
    con.insert("edges", sorted(edges))
    con.insert("roots", [(0,)])
    con.execute("CREATE MATERIALIZED VIEW reach AS WITH RECURSIVE r(node) AS ("
                "SELECT id FROM roots UNION SELECT e.dst FROM r JOIN edges e ON e.src = r.node) "
                "SELECT node FROM r")
    assert {n for (n,) in con.execute("SELECT * FROM reach").fetchall()} == set(range(nodes))
    live = set(edges)
    quiet = []
    for step in range(10):
        if step % 2 == 0:
            con.delete("edges", sorted(cut))
            live -= cut
        else:
            con.insert("edges", sorted(cut))
            live |= cut
        with dataframe_calls() as called:
            rows = con.execute("SELECT * FROM reach").fetchall()
        assert {n for (n,) in rows} == _reachable(live, {0}), step
        if step >= 2 and not called:
            quiet.append(step)
    assert len(quiet) >= 5, quiet
    con.close()


@pytest.mark.parametrize(("rehearsal_rows", "min_rows", "rehearsed"), [
    (64, 1_000, True), (0, 0, False), (64, 1_001, False)])
def test_a_new_view_steps_first_with_the_plans_its_rehearsal_built(
        spark: SparkSession, monkeypatch: pytest.MonkeyPatch, rehearsal_rows: int,
        min_rows: int, rehearsed: bool) -> None:
    """CREATE rehearses a small step (``Dataflow.rehearse``): its sources' sample rows as the
    change, computed, then abandoned. The first real step writing the same sources then runs
    no DataFrame method, and each frame its one job computes was planned by the rehearsal
    and runs in the driver; the rehearsal's rows reach neither the view nor the operators'
    row counts. Without a rehearsal (``rehearsal_rows`` 0, or a largest input of 1,000 rows,
    fewer than ``rehearsal_min_rows``) the first step builds its plans."""
    wanted = wanted_frames(monkeypatch)
    con = matview.connect(clock=0, spark=spark, refresh="incremental", settings={
        "rehearsal_rows": rehearsal_rows, "rehearsal_min_rows": min_rows})
    con.execute("CREATE TABLE customers (id INT, region TEXT)")
    con.execute("CREATE TABLE orders (id INT, cust INT, amount BIGINT)")
    con.insert("customers", [(i, f"r{i % 5}") for i in range(100)])
    con.insert("orders", [(i, i % 100, i) for i in range(1_000)])
    con.execute("CREATE MATERIALIZED VIEW v AS SELECT c.region, count(*) AS n, "
                "sum(o.amount) AS total FROM orders o JOIN customers c ON o.cust = c.id "
                "GROUP BY c.region")
    with con.transaction():
        con.delete("customers", [(7, "r2")])
        con.insert("customers", [(7, "r0")])
        con.delete("orders", [(i, i % 100, i) for i in range(10)])
        con.insert("orders", [(i, i % 100, i) for i in range(1_000, 1_010)])
    wanted.clear()
    with dataframe_calls() as called:
        rows = con.execute("SELECT * FROM v").fetchall()
    expected: dict[str, list[int]] = {}
    for i in range(10, 1_010):
        group = expected.setdefault("r0" if i % 100 == 7 else f"r{i % 100 % 5}", [0, 0])
        group[0] += 1
        group[1] += i
    assert sorted(rows) == sorted((k, n, t) for k, (n, t) in expected.items())
    frames = [frame for job in wanted for frame in job]
    assert frames
    if rehearsed:
        assert called == []
        kept = [jvm_plans._prepared.get(frame) for frame in frames]
        assert all(k and k[2] is not None for k in kept)  # run in the driver
    else:
        assert called
    flow = con._engine_for_use().catalog.entries["v"].dataflow
    assert flow is not None
    join = [op for op in operators(flow.root) if isinstance(op, JoinOp)]
    # the first step joined the 1,000 orders; the next its 20 changed orders, and the
    # customer's old and new rows each its 12 order updates (order 7 inserted and deleted,
    # 9 others, order 1,007): the same with a rehearsal and without
    assert join[0].meter.rows == 1_000 + 20 + 2 * 12
