"""SUBSCRIBE against DuckDB as an oracle.

For each seed the oracle workload runs with every query shape as a materialized view, each
followed by a subscription opened right after the view is created (and a few views by a
second subscription opened midway). Each subscription fetches on its own schedule: after
every operation, or only after several, so one dataflow step covers many timestamps. Every
fetch is checked as it arrives:

* its timestamps are non-decreasing, lie after the previous fetch's and at most at the read
  time, and each (row, timestamp) appears once with a non-zero diff;
* the first fetch starts with the snapshot at subscription time (all at that timestamp);
* for every operation up to the fetch, the diffs summed up to the operation's commit time
  (``con.now`` right after it) give exactly DuckDB's evaluation of the view after it;
* the view read right after the fetch (``SELECT *``) holds DuckDB's evaluation too.

A deterministic case spells out the changes of one fetch over several transactions.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field

import pytest
from pyspark.sql import SparkSession

import matview
from matview import Subscription
from tests.support.oracle.compare import Context, mismatch_report
from tests.support.oracle.harness import Run, oracle_seeds, sampled
from tests.support.oracle.queries import QUERIES, Query
from tests.support.oracle.workload import Row, generate

LATE_SUBSCRIBERS = 3
"""Views that get a second subscription, opened after a random operation."""


Change = tuple[int, int, Row]
"""A fetched row: (mz_timestamp, mz_diff, the view's columns)."""


@dataclass
class Follower:
    """A subscription to one view, what it fetched and what is left to check."""

    label: str
    query: Query
    sub: Subscription
    as_of: int
    fetch_chance: float
    """The chance of a fetch after each operation."""
    pending: list[tuple[int, list[Row]]]
    """(time, DuckDB's view contents at that time), not yet checked."""
    state: Counter[Row] = field(default_factory=Counter)
    """The diffs fetched so far, summed up to the last time checked."""
    upper: int | None = None
    """The read time of the last fetch (None before the first)."""
    fetched: list[str] = field(default_factory=list)
    """Every fetch, for reports."""

    def fetch(self, now: int, context: Context) -> str | None:
        """Fetch and check everything the fetch makes checkable; a report of what is wrong,
        or None."""
        changes: list[Change] = [(ts, diff, tuple(values))
                                 for ts, diff, *values in self.sub.fetch()]
        self.fetched.append(f"    fetch at read time {now}: {changes!r}")
        problems = self._shape(changes, now)
        if self.upper is None and not problems:
            problems = self._starts_with_snapshot(changes)
        self.upper = now
        if problems:
            return context.render(f"SUBSCRIBE output of {self.label} is malformed",
                                  problems + ["fetches so far:"] + self.fetched)
        due = [p for p in self.pending if p[0] <= now]
        self.pending = self.pending[len(due):]
        for time, expected in due:
            for ts, diff, row in changes:
                if ts <= time:
                    self.state[row] += diff
            changes = [c for c in changes if c[0] > time]
            report = self._compare_state(time, expected, context)
            if report is not None:
                return report
        return None

    def _shape(self, changes: list[Change], now: int) -> list[str]:
        problems = []
        times = [ts for ts, _, _ in changes]
        if times != sorted(times):
            problems.append("timestamps decrease")
        if self.upper is None:
            outside = [c for c in changes if not self.as_of <= c[0] <= now]
            span = f"[{self.as_of}, {now}]"
        else:
            outside = [c for c in changes if not self.upper < c[0] <= now]
            span = f"({self.upper}, {now}]"
        if outside:
            problems.append(f"changes outside the times {span} fetched: {outside!r}")
        zero = [c for c in changes if c[1] == 0]
        if zero:
            problems.append(f"zero diffs: {zero!r}")
        repeated = [k for k, n in Counter((ts, row) for ts, _, row in changes).items() if n > 1]
        if repeated:
            problems.append(f"(timestamp, row) pairs repeated, not consolidated: {repeated!r}")
        return problems

    def _starts_with_snapshot(self, changes: list[Change]) -> list[str]:
        snapshot = [c for c in changes if c[0] == self.as_of]
        if changes[:len(snapshot)] != snapshot:
            return [f"the first fetch does not start with the snapshot at {self.as_of}"]
        negative = [c for c in snapshot if c[1] < 0]
        if negative:
            return [f"the snapshot at {self.as_of} has negative diffs: {negative!r}"]
        return []

    def _compare_state(self, time: int, expected: list[Row], context: Context) -> str | None:
        negative = {row: n for row, n in self.state.items() if n < 0}
        actual = [row for row, n in self.state.items() for _ in range(max(n, 0))]
        headline = f"{self.label}: diffs summed up to time {time} differ from DuckDB"
        report = mismatch_report(actual, expected, context, headline)
        if report is None and not negative:
            return None
        extra = [f"rows with negative multiplicity: {negative!r}"] if negative else []
        return (report or context.render(headline, [])) + "\n" + "\n".join(
            extra + ["fetches so far:"] + self.fetched)


def _follow(run: Run, query: Query, rng: random.Random, label: str) -> Follower:
    sub = run.con.subscribe(query.name)
    as_of = run.con.now
    run.log.append(f"SUBSCRIBE {query.name} (at {as_of})")
    return Follower(label, query, sub, as_of, rng.choice((0.2, 0.5, 1.0)),
                    pending=[(as_of, run.expected(query))])


@pytest.mark.slow
@pytest.mark.parametrize("seed, refresh", [(seed, "auto") for seed in oracle_seeds()]
                         + [(oracle_seeds()[0] + 1, "recompute")])
def test_subscriptions_sum_to_duckdb_snapshots(spark: SparkSession, seed: int,
                                               refresh: str) -> None:
    """Every query is followed by one of the two runs, each over an interleaved half of the
    queries (every kind of query in each; ``test_oracle`` reads all of them after every
    operation of the first seed): ``refresh="auto"`` as a user's views step, and
    ``refresh="recompute"``, where every step that may be recomputed is
    (``runtime.refresh``: recomputed from the inputs' snapshots and diffed with the view's
    contents), subscriptions still see every time, and the views read after each fetch
    are DuckDB's. Seeds past the first (``MATVIEW_ORACLE_SEEDS``) follow every query."""
    workload = generate(seed)
    rng = random.Random(f"subscribe-{seed}")
    run = Run(spark, workload, refresh)
    if refresh == "recompute":
        queries = sampled(QUERIES, 1, 2)
    else:
        queries = sampled(QUERIES, 0, 2) if seed == oracle_seeds()[0] else QUERIES
    failures = run.create_views(queries)
    live = [q for q in queries if q.name not in failures]
    followers = [_follow(run, q, rng, f"subscription to {q.name}") for q in live]
    late = {i: rng.choice(live) for i in rng.sample(range(len(workload.ops)),
                                                    min(LATE_SUBSCRIBERS, len(workload.ops)))}

    def fetch(follower: Follower) -> None:
        if follower.label in failures:
            return
        context = run.context(follower.query)
        try:
            report = follower.fetch(run.con.now, context) or mismatch_report(
                run.actual(follower.query), run.expected(follower.query), context,
                f"{follower.query.name} read after a fetch differs from DuckDB")
        except Exception as error:
            report = context.render(f"fetching {follower.label} failed", [f"error: {error!r}"])
        if report is not None:
            failures[follower.label] = report

    for index, op in enumerate(workload.ops):
        run.apply(op)
        for follower in followers:
            follower.pending.append((run.con.now, run.expected(follower.query)))
            if rng.random() < follower.fetch_chance:
                fetch(follower)
        if index in late:
            label = f"late subscription to {late[index].name} (after operation {index})"
            followers.append(_follow(run, late[index], rng, label))
    for follower in followers:
        fetch(follower)
    assert not failures, (f"{len(failures)} subscriptions failed:\n\n"
                          + "\n\n".join(failures.values()))


def test_one_fetch_over_several_transactions(spark: SparkSession) -> None:
    con = matview.connect(clock=0, spark=spark)
    con.execute("CREATE TABLE t (k TEXT, v INT)")
    con.execute("INSERT INTO t VALUES ('a', 1), ('b', 2)")
    con.execute("CREATE MATERIALIZED VIEW g AS SELECT k, sum(v) AS total FROM t GROUP BY k")
    sub = con.subscribe("g")
    start = con.now
    con.execute("INSERT INTO t VALUES ('a', 10)")
    t1 = con.now
    con.execute("DELETE FROM t WHERE k = 'b'")
    t2 = con.now
    con.insert("t", [("c", 5)])
    t3 = con.now
    con.execute("UPDATE t SET v = v + 1 WHERE k = 'c'")
    t4 = con.now
    assert start < t1 < t2 < t3 < t4
    assert sorted(sub.fetch()) == sorted([
        (start, 1, "a", 1), (start, 1, "b", 2),
        (t1, -1, "a", 1), (t1, 1, "a", 11),
        (t2, -1, "b", 2),
        (t3, 1, "c", 5),
        (t4, -1, "c", 5), (t4, 1, "c", 6),
    ])
    assert sub.fetch() == []
    con.advance_time(con.now + 1000)
    con.execute("DELETE FROM t WHERE k = 'a' AND v = 10")
    t5 = con.now
    assert t5 >= t4 + 1000
    con.execute("INSERT INTO t VALUES ('a', 10)")
    t6 = con.now
    con.execute("DELETE FROM t WHERE k = 'a' AND v = 10")
    t7 = con.now
    assert t5 < t6 < t7
    assert sorted(sub.fetch()) == sorted([(t5, -1, "a", 11), (t5, 1, "a", 1),
                                          (t6, -1, "a", 1), (t6, 1, "a", 11),
                                          (t7, -1, "a", 11), (t7, 1, "a", 1)])
