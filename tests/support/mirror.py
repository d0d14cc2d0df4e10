"""``Mirror``: a matview connection and a DuckDB database holding the same tables, every
change applied to both and every view compared with DuckDB's answer for its query (the
maintained-view checks of the SQL feature tests)."""

from __future__ import annotations

import random
from collections.abc import Sequence

import duckdb
from pyspark.sql import SparkSession

import matview
from tests.support.oracle.compare import difference
from tests.support.oracle.workload import Op


class Mirror:
    """A matview connection and a DuckDB database holding the same tables, each change
    applied to both; ``check`` compares every view with DuckDB's answer for its query. The
    views step incrementally (tables this small would often be recomputed), so that their
    delta rules are what is checked; ``settings`` override the runtime's thresholds."""

    def __init__(self, spark: SparkSession, *ddl: str, **settings: int) -> None:
        self.con = matview.connect(clock=0, spark=spark, refresh="incremental",
                                   settings=settings)
        self.db = duckdb.connect()
        self.db.execute("SET default_null_order = 'postgres'")  # NULLs first descending
        self.views: dict[str, str] = {}
        self.log: list[str] = []
        for statement in ddl:
            self.execute(statement)

    def execute(self, change: str | tuple[Op, ...]) -> None:
        """Apply ``change``: a statement, or bulk writes in one transaction."""
        if isinstance(change, str):
            self.log.append(change)
            self.db.execute(change)
            self.con.execute(change)
            return
        self.log.append(" and ".join(str(op) for op in change))
        with self.con.transaction():
            for op in change:
                op.on_duckdb(self.db)
                op.on_matview(self.con)

    def view(self, name: str, sql: str) -> None:
        self.views[name] = sql
        self.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")

    def check(self) -> None:
        failures = []
        for name, sql in self.views.items():
            missing, extra = difference(self.con.execute(f"SELECT * FROM {name}").fetchall(),
                                        self.db.execute(sql).fetchall())
            if missing or extra:
                failures.append(f"{name}: {sql}\n  lacks {missing}\n  has beyond {extra}")
        assert not failures, "\n".join(failures + ["after:", *self.log])

    def steps(self, changes: Sequence[str | tuple[Op, ...]]) -> None:
        """Apply each change, checking every view before and after it."""
        self.check()
        for change in changes:
            self.execute(change)
            self.check()

    def steps_grouped(self, changes: Sequence[str], rng: random.Random) -> None:
        """Apply the changes one to three at a time (each its own transaction), checking
        every view before and after each group: a view then steps over several
        transactions at once."""
        self.check()
        at = 0
        while at < len(changes):
            taken = rng.randint(1, 3)
            for change in changes[at:at + taken]:
                self.execute(change)
            at += taken
            self.check()

