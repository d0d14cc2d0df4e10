"""TopK views maintained over a table ``t`` changing at random, read in their order against
DuckDB's ordered answer (the keys, then every column): the views, the ``Mirror`` holding
them in both systems, random writes, and the check after every write that the TopK tests
and the cluster runs share."""

from __future__ import annotations

import random
from collections.abc import Callable

import duckdb
from pyspark.sql import SparkSession

import matview
from tests.support.sql_env import normal_row


def view_sqls(select: str, order: str | None, tail: str, arity: int) -> tuple[str, str]:
    """The view's query, and DuckDB's with the TopK's tie-break: every column ascending,
    NULLs last."""
    ties = ", ".join(f"{i} ASC NULLS LAST" for i in range(1, arity + 1))
    mine = f"{select} {'' if order is None else f'ORDER BY {order} '}{tail}"
    theirs = f"SELECT * FROM ({select}) s ORDER BY {'' if order is None else order + ', '}" \
             f"{ties} {tail}"
    return mine, theirs


VIEWS = {  # (select, ORDER BY by position or None, LIMIT/OFFSET)
    "top": ("SELECT k, v, s FROM t", "2 DESC, 1", "LIMIT 5"),
    "window": ("SELECT v, s FROM t", "1 NULLS FIRST", "LIMIT 4 OFFSET 3"),
    "ties": ("SELECT v FROM t", "1 DESC NULLS LAST", "LIMIT 6"),
    "groups": ("SELECT k, count(*) AS n, sum(v) AS total FROM t GROUP BY k",
               "3 DESC NULLS LAST", "LIMIT 3"),
    "rest": ("SELECT k, v FROM t", "1, 2 DESC", "OFFSET 6"),
    "any": ("SELECT s, k FROM t", None, "LIMIT 4"),
    "one": ("SELECT k, v FROM t", "2", "LIMIT 1"),
}


class Mirror:
    """A matview connection and a DuckDB database holding table ``t`` and the ``VIEWS``;
    every view's rows, read in its order, must equal DuckDB's ordered answer (the keys,
    then every column)."""

    def __init__(self, spark: SparkSession) -> None:
        self.con = matview.connect(clock=0, spark=spark, refresh="incremental")
        self.db = duckdb.connect()
        self.db.execute("SET default_null_order = 'postgres'")
        self.log: list[str] = []
        self.execute("CREATE TABLE t (k INT, v INT, s TEXT)")
        self.expected: dict[str, str] = {}
        for name, (select, order, tail) in VIEWS.items():
            arity = len(self.db.execute(select).description)
            mine, self.expected[name] = view_sqls(select, order, tail, arity)
            self.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {mine}")

    def execute(self, sql: str) -> None:
        self.log.append(sql)
        self.db.execute(sql)
        self.con.execute(sql)

    def contents(self) -> dict[str, list[tuple]]:
        """DuckDB's ordered answer for every view now."""
        return {name: [normal_row(r) for r in self.db.execute(sql).fetchall()]
                for name, sql in self.expected.items()}

    def check(self) -> None:
        failures = []
        for name, rows in self.contents().items():
            got = [normal_row(r) for r in self.con.execute(f"SELECT * FROM {name}").fetchall()]
            if got != rows:
                failures.append(f"{name}: {self.expected[name]}\n  matview {got}\n"
                                f"  duckdb  {rows}")
        assert not failures, "\n".join(failures + ["after:", *self.log])


def random_change(rng: random.Random) -> str:
    """A random write to ``t``: inserts (duplicates and NULLs among them), deletes that
    often reach the first rows, updates, and now and then deleting everything."""
    def value() -> str:
        return "NULL" if rng.random() < 0.15 else str(rng.randint(0, 12))

    roll = rng.random()
    if roll < 0.45:
        rows = ", ".join(f"({rng.randint(0, 5)}, {value()}, '{rng.choice('abcd')}')"
                         for _ in range(rng.randint(1, 4)))
        return f"INSERT INTO t VALUES {rows}"
    if roll < 0.6:
        return f"DELETE FROM t WHERE v >= {rng.randint(6, 12)}"  # the first rows of "top"
    if roll < 0.7:
        return f"DELETE FROM t WHERE v <= {rng.randint(0, 6)}"  # the first rows of "one"
    if roll < 0.85:
        return f"UPDATE t SET v = {value()} WHERE k = {rng.randint(0, 5)}"
    if roll < 0.95:
        return f"DELETE FROM t WHERE k = {rng.randint(0, 5)} OR v IS NULL"
    return "DELETE FROM t"


def check_views_after_changes(
        spark: SparkSession, runtime_settings: Callable[..., None], seed: int, held: str,
        changes: int) -> None:
    """The ``VIEWS`` equal DuckDB's answers after every one of ``changes`` random writes of
    seed ``seed``. ``held="spark"`` makes every step of more than two update rows a large one
    and keeps batches of more than two rows in Spark, so that the TopK reads its changes, its
    prefix and its input's contents from Spark (slowly: fewer changes)."""
    if held == "spark":
        runtime_settings(small_step_rows=2, fetched_batch_rows=2)
    rng = random.Random(seed)
    mirror = Mirror(spark)
    mirror.check()
    mirror.execute("INSERT INTO t VALUES (1, 3, 'a'), (1, 3, 'a'), (2, NULL, 'b'), "
                   "(3, 12, 'c'), (4, 12, 'c'), (5, 7, 'd'), (0, 9, 'a'), (2, 1, 'b')")
    mirror.check()
    for _ in range(changes):
        mirror.execute(random_change(rng))
        mirror.check()
