"""The oracle of table functions, ``repeat_row`` and temporal filters: views over a small
``events`` table and a ``cats`` table, each with the DuckDB query computing its rows at a
read time, and ``check_linear_views``, the randomized workload of one seed checked after
every transaction and clock advance."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import duckdb
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import Context, mismatch_report

T0 = datetime(2024, 1, 1)
T0_MS = 1_704_067_200_000
"""The manual clock starts at T0, in milliseconds since the epoch."""

EVENTS = ("id INT, n INT, k INT, ts TIMESTAMP, ms BIGINT, arr {array}, tags TEXT, doc TEXT")
CATS = "k INT, name TEXT"


@dataclass(frozen=True)
class Query:
    """A view: its matview SQL and the DuckDB SQL computing the same rows (None: the same)."""

    name: str
    sql: str
    duckdb: str | None = None

    def oracle_sql(self, now_ms: int) -> str:
        now = T0 + timedelta(milliseconds=now_ms - T0_MS)
        return (self.duckdb or self.sql).format(
            now_ts=f"TIMESTAMP '{now.isoformat(sep=' ')}'", now_ms=now_ms)


QUERIES: tuple[Query, ...] = (
    Query("series_from",
          "SELECT e.id, s.g FROM events e, generate_series(1, e.n) AS s(g)"),
    Query("series_ordinality",
          "SELECT e.id, s.g, s.o FROM events e, generate_series(e.n, 3) WITH ORDINALITY "
          "AS s(g, o)"),
    Query("series_select", "SELECT id, generate_series(1, n) AS g FROM events",
          "SELECT id, unnest(generate_series(1, n)) AS g FROM events"),
    Query("series_step", "SELECT e.id, s.g FROM events e, generate_series(e.n, 10, 4) AS s(g)"),
    Query("unnest_array", "SELECT e.id, u.x FROM events e, unnest(e.arr) AS u(x)"),
    Query("unnest_literal", "SELECT e.id, u.x FROM events e, unnest(ARRAY[e.n, e.k]) AS u(x)",
          "SELECT e.id, u.x FROM events e, unnest([e.n, e.k]) AS u(x)"),
    Query("split_tags",
          "SELECT e.id, p.part FROM events e, string_to_table(e.tags, ',') AS p(part)",
          "SELECT id, unnest(string_split(tags, ',')) AS part FROM events WHERE tags <> ''"),
    Query("regexp_words",
          "SELECT e.id, r.m FROM events e, regexp_matches(e.tags, '([a-z]+)', 'g') AS r(m)",
          "SELECT id, [m] FROM events, unnest(regexp_extract_all(tags, '([a-z]+)', 1)) "
          "AS r(m)"),
    Query("json_elements",
          "SELECT e.id, j.value FROM events e, jsonb_array_elements_text(e.doc) AS j(value)",
          "SELECT id, v FROM events, unnest(json_extract_string(doc::JSON, '$[*]')) AS u(v)"),
    Query("repeat_positive", "SELECT e.id, e.k FROM events e, repeat_row(e.k) WHERE e.k > 0",
          "SELECT id, k FROM events, generate_series(1, k) AS s(g) WHERE k > 0"),
    Query("repeat_signed_count", "SELECT count(*) AS n FROM events e, repeat_row(e.k)",
          "SELECT coalesce(sum(k), 0) AS n FROM events"),
    Query("recent_ts",
          "SELECT id, ts FROM events "
          "WHERE mz_now() >= ts AND mz_now() < ts + INTERVAL '5 minutes'",
          "SELECT id, ts FROM events "
          "WHERE {now_ts} >= ts AND {now_ts} < ts + INTERVAL '5 minutes'"),
    Query("window_ms", "SELECT id, ms FROM events WHERE mz_now() BETWEEN ms AND ms + 120000",
          "SELECT id, ms FROM events WHERE {now_ms} BETWEEN ms AND ms + 120000"),
    Query("strict_bounds", "SELECT id FROM events WHERE mz_now() > ms AND ms + 60000 >= mz_now()",
          "SELECT id FROM events WHERE {now_ms} > ms AND ms + 60000 >= {now_ms}"),
    Query("temporal_join",
          "SELECT e.id, c.name FROM events e JOIN cats c ON e.k = c.k "
          "WHERE mz_now() < e.ts + INTERVAL '10 minutes'",
          "SELECT e.id, c.name FROM events e JOIN cats c ON e.k = c.k "
          "WHERE {now_ts} < e.ts + INTERVAL '10 minutes'"),
    Query("temporal_count",
          "SELECT k, count(*) AS n FROM events "
          "WHERE mz_now() >= ts AND mz_now() < ts + INTERVAL '3 minutes' GROUP BY k",
          "SELECT k, count(*) AS n FROM events "
          "WHERE {now_ts} >= ts AND {now_ts} < ts + INTERVAL '3 minutes' GROUP BY k"),
    Query("lateral_join",
          "SELECT e.id, c.name, s.g FROM events e JOIN cats c ON e.k = c.k, "
          "generate_series(1, c.k) AS s(g)"),
)

Row = tuple[object, ...]


def _event(rng: random.Random, ident: int) -> Row:
    def maybe(value: object) -> object:
        return None if rng.random() < 0.1 else value

    ts = T0 + timedelta(seconds=rng.randrange(-180, 1500, 15))
    ms = T0_MS + rng.randrange(-120, 1500, 10) * 1000
    arr = maybe([maybe(rng.randint(0, 4)) for _ in range(rng.randint(0, 3))])
    tags = maybe(",".join(rng.choice(["a1", "bc", "x", "", "d9e"])
                          for _ in range(rng.randint(1, 3))))
    doc = maybe(json.dumps([rng.choice([1, "x", None, 22, "y z"])
                            for _ in range(rng.randint(0, 3))]))
    return (ident, maybe(rng.randint(-1, 4)), maybe(rng.randint(-2, 3)), maybe(ts), maybe(ms),
            arr, tags, doc)


class Oracle:
    """matview and DuckDB holding the same tables."""

    def __init__(self, spark: SparkSession, seed: int) -> None:
        self.seed = seed
        self.con = matview.connect(clock=T0_MS, spark=spark)
        self.db = duckdb.connect()
        self.log: list[str] = []
        self.con.execute(f"CREATE TABLE events ({EVENTS.format(array='INT[]')})")
        self.con.execute(f"CREATE TABLE cats ({CATS})")
        self.db.execute(f"CREATE TABLE events ({EVENTS.format(array='INTEGER[]')})")
        self.db.execute(f"CREATE TABLE cats ({CATS})")
        self.events: list[Row] = []

    def insert(self, table: str, rows: Sequence[Row]) -> None:
        self.log.append(f"insert into {table}: {rows}")
        marks = ", ".join("?" * len(rows[0]))
        self.db.executemany(f"INSERT INTO {table} VALUES ({marks})", [list(r) for r in rows])
        self.con.insert(table, [tuple(r) for r in rows])
        if table == "events":
            self.events.extend(rows)

    def delete_events(self, rows: Sequence[Row]) -> None:
        self.log.append(f"delete from events: {rows}")
        for row in rows:
            self.events.remove(row)
            self.db.execute("DELETE FROM events WHERE id = ?", [row[0]])
        self.con.delete("events", [tuple(r) for r in rows])

    def advance(self, by_ms: int) -> None:
        self.log.append(f"advance_time(+{by_ms} ms)")
        self.con.advance_time(self.con.now + by_ms)

    def check(self, queries: Sequence[Query], failures: dict[str, str]) -> None:
        for query in queries:
            if query.name in failures:
                continue
            now = self.con.now
            context = Context(self.seed, query.name, query.sql,
                              tuple(self.log) + (f"read at {now}",))
            try:
                actual = self.con.execute(f"SELECT * FROM {query.name}").fetchall()
            except Exception as error:
                failures[query.name] = context.render("reading the view failed",
                                                      [f"error: {error!r}"])
                continue
            expected = self.db.execute(query.oracle_sql(now)).fetchall()
            report = mismatch_report(_tuples(actual), _tuples(expected), context)
            if report is not None:
                failures[query.name] = report


def _tuples(rows: Sequence[Row]) -> list[Row]:
    """Rows with array values as tuples, so matview's and DuckDB's compare."""
    return [tuple(tuple(v) if isinstance(v, list) else v for v in row) for row in rows]


def check_linear_views(spark: SparkSession, seed: int) -> None:
    """Every query of ``QUERIES`` as a view over seed ``seed``'s workload, checked against
    DuckDB after every transaction and every clock advance."""
    rng = random.Random(seed)
    run = Oracle(spark, seed)
    next_id = 0

    def fresh(count: int) -> list[Row]:
        nonlocal next_id
        rows = [_event(rng, next_id + i) for i in range(count)]
        next_id += count
        return rows

    run.insert("events", fresh(8))
    run.insert("cats", [(k, f"cat{k}") for k in range(-1, 4)] + [(2, "second")])
    failures: dict[str, str] = {}
    for query in QUERIES:
        run.con.execute(f"CREATE MATERIALIZED VIEW {query.name} AS {query.sql}")
    run.check(QUERIES, failures)
    kinds = ["insert", "delete", "advance", "advance"] + [
        rng.choice(["insert", "delete", "advance"]) for _ in range(5)]
    rng.shuffle(kinds)
    for kind in kinds:
        if kind == "insert":
            run.insert("events", fresh(rng.randint(1, 3)))
        elif kind == "delete" and run.events:
            run.delete_events(rng.sample(run.events, min(len(run.events), rng.randint(1, 2))))
        else:
            run.advance(rng.choice([30_000, 90_000, 150_000, 240_000]))
        run.check(QUERIES, failures)
    assert not failures, (f"{len(failures)} of {len(QUERIES)} views failed:\n\n"
                          + "\n\n".join(failures.values()))

