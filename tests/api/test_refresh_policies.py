"""A materialized view's own refresh policy, ``WITH (REFRESH POLICY = AUTO | INCREMENTAL |
INCREMENTAL STRICT | FULL)`` (``runtime.refresh``), and ``matview_refresh_history``, which
shows every step's choice, both estimates and the reason: under random transactions the
policies give the same rows; FULL recomputes every step that an input changes; STRICT
fails, naming the operator, rather than take a change its source could only recompute."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import matview
from tests.support.lake_writer import Writer, random_orders
from tests.support.seeds import seeds

POLICIES = {"auto": "AUTO", "incr": "INCREMENTAL", "strict": "INCREMENTAL STRICT",
            "full": "FULL"}
QUERY = "SELECT k, count(*) AS n, sum(v) AS s, max(v) AS top FROM t GROUP BY k"


def _history(con: matview.Connection, name: str) -> list[tuple[object, ...]]:
    return con.execute("SELECT strategy, reason, estimated_incremental_seconds, "
                       "estimated_recompute_seconds, changed_rows FROM "
                       f"matview_refresh_history WHERE name = '{name}' "
                       "ORDER BY mz_timestamp").fetchall()


@pytest.mark.parametrize("seed", seeds())
def test_every_policy_maintains_the_same_rows(spark: SparkSession, seed: int) -> None:
    rng = random.Random(seed)
    with matview.connect(spark=spark) as con:
        con.execute("CREATE TABLE t (k INT, v INT)")
        con.insert("t", [(rng.randrange(6), rng.randrange(50)) for _ in range(30)])
        for name, policy in POLICIES.items():
            con.execute(f"CREATE MATERIALIZED VIEW {name} WITH (REFRESH POLICY = {policy}) "
                        f"AS {QUERY}")
        for step in range(6):
            if step == 4:  # a change as large as the table: AUTO estimates both ways
                con.execute("INSERT INTO t SELECT k + 100, v FROM t")
            elif step == 2:
                con.execute(f"DELETE FROM t WHERE k = {rng.randrange(6)} AND v < 25")
            else:
                con.execute(f"INSERT INTO t VALUES ({rng.randrange(6)}, {rng.randrange(50)})")
            expected = sorted(con.execute(QUERY).fetchall())
            for name in POLICIES:
                assert sorted(con.execute(f"SELECT * FROM {name}").fetchall()) == expected
        full, strict, auto = _history(con, "full"), _history(con, "strict"), \
            _history(con, "auto")
        changes = len(strict) - 1  # the first step, then every step an input changed
        assert changes >= 5 and [r[0] for r in full] == ["recompute"] * (changes + 1)
        assert all(r[1] == "REFRESH POLICY = FULL" for r in full[1:])
        assert [r[0] for r in strict[1:]] == ["incremental"] * changes
        assert all(r[1] == "REFRESH POLICY = INCREMENTAL STRICT" for r in strict[1:])
        estimated = [r for r in auto if r[1].startswith("estimated")]
        assert estimated, auto  # chosen by both estimates, once steps of each kind ran
        for strategy, _, incremental, recompute, _ in estimated:
            assert strategy == ("recompute" if recompute < incremental else "incremental")
        analyzed = con.explain("MATERIALIZED VIEW auto", stage="analyze")
        assert "; estimated incremental " in analyzed and ", recompute " in analyzed


def test_a_policy_is_kept_by_a_durable_database(spark: SparkSession, tmp_path: Path) -> None:
    with matview.connect(tmp_path / "db", spark=spark) as con:
        con.execute("CREATE TABLE t (k INT, v INT)")
        con.execute(f"CREATE MATERIALIZED VIEW full WITH (REFRESH POLICY = FULL) AS {QUERY}")
        shown = con.execute("SHOW CREATE MATERIALIZED VIEW full").fetchall()[0][1]
        assert "WITH (REFRESH POLICY = FULL) AS SELECT" in shown
    with matview.connect(tmp_path / "db", spark=spark) as con:
        con.execute("INSERT INTO t VALUES (1, 1)")
        assert con.execute("SELECT * FROM full").fetchall() == [(1, 1, 1, 1)]
        assert _history(con, "full")[-1][:2] == ("recompute", "REFRESH POLICY = FULL")


@pytest.mark.parametrize(("sql", "message", "column"), [
    ("CREATE MATERIALIZED VIEW x WITH (REFRESH POLICY = SOMETIMES) AS SELECT 1",
     "unknown refresh policy 'SOMETIMES'", 34),
    ("CREATE VIEW x WITH (REFRESH POLICY = FULL) AS SELECT 1",
     "a view that is not materialized has no refresh policy", 21),
])
def test_a_wrong_policy_is_refused_where_it_is_written(con: matview.Connection, sql: str,
                                                       message: str, column: int) -> None:
    with pytest.raises(matview.ProgrammingError, match=f"{message}.*column {column}"):
        con.execute(sql)


def test_strict_fails_naming_the_operator_rather_than_recompute(spark: SparkSession,
                                                                tmp_path: Path) -> None:
    """A Delta source whose unread versions a VACUUM deleted can only be recomputed: a
    STRICT view over it fails and nothing is applied; without it, the source resyncs."""
    writer = Writer()
    try:
        path = str(tmp_path / "orders")
        rng = random.Random(5)
        writer(op="create", path=path, rows=random_orders(rng, range(20)), cdf=False)
        with matview.connect(spark=spark, files=[tmp_path]) as con:
            con.execute(f"CREATE SOURCE orders FROM DELTA '{path}'")
            con.execute("CREATE MATERIALIZED VIEW totals WITH (REFRESH POLICY = INCREMENTAL "
                        "STRICT) AS SELECT cust, sum(amount) AS s FROM orders GROUP BY cust")
            writer(op="delete", path=path, predicate="cust = 1")
            writer(op="optimize", path=path)
            latest = writer(op="vacuum", path=path)
            for read in ("totals", "orders"):  # nothing applied: every read fails alike
                with pytest.raises(matview.OperationalError,
                                   match='"totals" has REFRESH POLICY = INCREMENTAL STRICT, and '
                                         "its operator Get orders cannot be incremental"):
                    con.execute(f"SELECT * FROM {read}")
            con.execute("DROP MATERIALIZED VIEW totals")
            con.execute("CREATE MATERIALIZED VIEW totals AS SELECT cust, sum(amount) AS s "
                        "FROM orders GROUP BY cust")
            assert con.execute("SELECT * FROM orders_progress").fetchall() == [(latest, None)]
            assert 1 not in {row[0] for row in con.execute("SELECT * FROM totals").fetchall()}
    finally:
        writer.close()
