"""Sources following a Delta Lake table that another process writes (``matview.sources``):
after every version (appends, deletes, updates, merges, an OPTIMIZE, a VACUUM) the views
over the source equal DuckDB over the table read at that version, each version is one
transaction (a subscription sees each at its own time), and a restart in the middle
applies no version twice and skips none. With the change data feed and without it (the
files each version added and removed)."""

from __future__ import annotations

import collections
import random
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import SparkSession

import matview
from tests.support.lake_writer import Writer, random_orders
from tests.support.oracle.compare import Context, mismatch_report
from tests.support.seeds import seeds

VIEWS = {
    "by_cust": "SELECT cust, count(*) AS n, sum(amount) AS total, count(note) AS notes "
               "FROM orders GROUP BY cust",
    "big": "SELECT o.id, o.amount, c.region FROM orders o JOIN customers c ON o.cust = c.id "
           "WHERE o.amount > 50",
    "rows": "SELECT * FROM orders",
}
CUSTOMERS = [(c, f"r{c % 3}") for c in range(6)]


def _operations(rng: random.Random) -> list[dict[str, Any]]:
    """The versions the writer commits after the first, in order."""
    return [
        {"op": "append", "rows": random_orders(rng, range(100, 110))},
        {"op": "delete", "predicate": f"cust = {rng.randrange(6)}"},
        {"op": "update", "predicate": "id % 3 = 0", "updates": {"note": "'upd'"}},
        {"op": "merge", "rows": random_orders(rng, range(105, 115))},
        {"op": "optimize"},
        {"op": "append", "rows": random_orders(rng, range(200, 203))},
        {"op": "delete", "predicate": "amount > 60"},
        {"op": "update", "predicate": f"cust = {rng.randrange(6)}", "updates": {"cust": "5"}},
        {"op": "optimize"},
        {"op": "vacuum"},
        {"op": "merge", "rows": random_orders(rng, range(0, 30, 3))},
        {"op": "append", "rows": random_orders(rng, range(300, 305))},
    ]


class Checked:
    """The views as a subscription replays them, checked at every version its changes
    reach against DuckDB over the Delta table read at that version (the version of each
    time is the one the progress relation's subscription sees inserted then)."""

    def __init__(self, con: matview.Connection, snapshots: dict[int, pa.Table],
                 seed: int) -> None:
        self.snapshots, self.seed = snapshots, seed
        """The table at each version, read when it was written (a VACUUM deletes the
        files of old versions)."""
        self.progress = con.subscribe("orders_progress")
        self.views = {name: con.subscribe(name) for name in VIEWS}
        self.state: dict[str, collections.Counter[tuple[object, ...]]] = {
            name: collections.Counter() for name in VIEWS}
        self.versions: list[int] = []

    def check(self) -> None:
        """Fetch every change since the last check; compare at each version applied."""
        applied = sorted((t, row[0]) for t, d, *row in self.progress.fetch() if d > 0)
        changes = {name: sorted(sub.fetch(), key=lambda r: r[0])
                   for name, sub in self.views.items()}
        assert applied, f"no version applied: {self.versions}"
        if not self.versions:  # the snapshots, each at its subscription's time: one state
            applied = [(max(r[0] for rows in changes.values() for r in rows), applied[-1][1])]
        for time, version in applied:
            for name, rows in changes.items():
                for t, diff, *row in rows:
                    if t <= time:
                        self.state[name][tuple(row)] += diff
                changes[name] = [r for r in rows if r[0] > time]
            self._compare(version)
            self.versions.append(version)

    def _compare(self, version: int) -> None:
        oracle = duckdb.connect()
        oracle.register("orders", self.snapshots[version])
        oracle.execute("CREATE TABLE customers (id INT, region TEXT)")
        oracle.executemany("INSERT INTO customers VALUES (?, ?)", CUSTOMERS)
        for name, sql in VIEWS.items():
            actual = list(self.state[name].elements())
            expected = oracle.execute(sql).fetchall()
            report = mismatch_report(actual, expected, Context(
                self.seed, name, sql, [f"Delta version {v}" for v in [*self.versions, version]]))
            assert report is None, report

    def close(self) -> None:
        for sub in (self.progress, *self.views.values()):
            sub.close()


def _connected(db: Path, lake: Path, spark: SparkSession) -> matview.Connection:
    return matview.connect(db, spark=spark, files=[lake])


@pytest.mark.parametrize("cdf", [False, True], ids=["files", "change-data-feed"])
@pytest.mark.parametrize("seed", seeds())
def test_views_over_a_delta_source_equal_duckdb_at_every_version(
        spark: SparkSession, tmp_path: Path, cdf: bool, seed: int) -> None:
    rng = random.Random(seed)
    db, lake = tmp_path / "db", tmp_path / "lake"
    lake.mkdir()
    path = str(lake / "orders")
    writer = Writer()
    try:
        snapshots: dict[int, pa.Table] = {}

        def write(**command: Any) -> int:
            version, now = writer(path=path, **command), DeltaTable(path).to_pyarrow_table()
            for made in range(max(snapshots, default=-1) + 1, version + 1):
                snapshots[made] = now  # a VACUUM commits twice (start, end), rows alike
            return version

        assert write(op="create", rows=random_orders(rng, range(30)), cdf=cdf) == 0
        con = _connected(db, lake, spark)
        con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
        con.execute("CREATE TABLE customers (id INT, region TEXT)")
        con.insert("customers", CUSTOMERS)
        for name, sql in VIEWS.items():
            con.execute(f"CREATE MATERIALIZED VIEW {name} AS {sql}")
        checked = Checked(con, snapshots, seed)
        checked.check()
        operations = _operations(rng)
        version = 0
        for i, operation in enumerate(operations):
            version, before = write(**operation), version
            if i in (1, 2, 6, 7, 8, 9) or version == before:  # several versions before the
                continue  # next read, each at its time (an OPTIMIZE with nothing to do: none;
                # after the VACUUM, the files of versions 6 and 7 are gone: one resync)
            if i == 5:  # a restart: the versions committed while closed, applied once
                checked.close()
                con.close()
                version = write(op="append", rows=random_orders(rng, range(400, 404)))
                con = _connected(db, lake, spark)
                checked = Checked(con, snapshots, seed)
            checked.check()
            assert con.execute("SELECT * FROM orders_progress").fetchall() == [(version, None)]
        assert checked.versions[-1] == version
        checked.close()
        con.close()
    finally:
        writer.close()


def test_an_optimize_changes_no_row(spark: SparkSession, tmp_path: Path) -> None:
    """A compaction commit rewrites files, not rows: the source changes nothing for it
    (only its progress moves on), with or without the change data feed."""
    writer = Writer()
    try:
        path = str(tmp_path / "orders")
        writer(op="create", path=path, rows=random_orders(random.Random(0), range(5)), cdf=False)
        writer(op="append", path=path, rows=random_orders(random.Random(1), range(5, 8)))
        with matview.connect(spark=spark, files=[tmp_path]) as con:
            con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
            sub = con.subscribe("orders")
            assert len(sub.fetch()) == 8
            assert writer(op="optimize", path=path) == 2
            assert sub.fetch() == []
            assert con.execute("SELECT * FROM orders_progress").fetchall() == [(2, None)]
    finally:
        writer.close()


def test_a_column_gone_from_the_table_is_an_error_naming_it(spark: SparkSession,
                                                             tmp_path: Path) -> None:
    """A version that overwrites the table with other columns: the source cannot follow,
    and says which column it lost; a source reading only columns the table kept goes on."""
    import deltalake

    path = str(tmp_path / "orders")
    deltalake.write_deltalake(path, pa.table({"id": [1, 2], "note": ["a", "b"]}))
    with matview.connect(spark=spark, files=[tmp_path]) as con:
        con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
        con.execute(f"CREATE SOURCE ids (id BIGINT) FROM DELTA '{path}'")
        assert con.execute("SELECT count(*) FROM orders").fetchall() == [(2,)]
        deltalake.write_deltalake(path, pa.table({"id": [3]}), mode="overwrite",
                                  schema_mode="overwrite")
        with pytest.raises(matview.OperationalError, match='reads the column "note", which '
                                                            "version 1 of the Delta table"):
            con.execute("SELECT * FROM orders")
        assert con.execute("SELECT * FROM ids").fetchall() == [(3,)]


def test_a_source_in_the_catalog(spark: SparkSession, tmp_path: Path) -> None:
    """Only the source writes it; it is shown, dropped with its progress relation (views
    over it with CASCADE), never renamed, and made again from the start."""
    import deltalake

    path = str(tmp_path / "orders")
    deltalake.write_deltalake(path, pa.table({"id": [1, 2]}))
    with matview.connect(spark=spark, files=[tmp_path]) as con:
        con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
        con.execute("CREATE MATERIALIZED VIEW n AS SELECT count(*) AS n FROM orders")
        assert con.execute("SHOW SOURCES").fetchall() == [("orders",), ("orders_progress",)]
        assert con.execute("SHOW CREATE SOURCE orders").fetchall() == [
            ("orders", f"CREATE SOURCE orders (id bigint) FROM DELTA '{path}'")]
        for sql, message in [
                ("INSERT INTO orders VALUES (3)", 'cannot insert into source "orders"'),
                ("DELETE FROM orders_progress", 'cannot delete from source "orders_progress"'),
                ("DROP SOURCE orders_progress", "it is the progress of source"),
                ("DROP SOURCE orders", "other objects depend on it: n"),
                ("ALTER TABLE orders RENAME TO o", 'cannot rename source "orders"'),
                (f"CREATE SOURCE orders FROM DELTA '{path}'", 'relation "orders" already exists'),
                (f"CREATE SOURCE x FROM DELTA '{tmp_path}'", "is not a Delta Lake table"),
                ("CREATE SOURCE x FROM DELTA '/elsewhere'", "outside the directories")]:
            with pytest.raises(matview.ProgrammingError, match=message):
                con.execute(sql)
        con.execute("DROP SOURCE orders CASCADE")
        assert con.execute("SHOW SOURCES").fetchall() == []
        deltalake.write_deltalake(path, pa.table({"id": [3]}), mode="append")
        con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
        assert sorted(con.execute("SELECT * FROM orders").fetchall()) == [(1,), (2,), (3,)]
        assert con.execute("SELECT * FROM orders_progress").fetchall() == [(1, None)]
