"""Table functions, ``repeat_row`` and temporal filters against DuckDB as an oracle.

For each seed, every query of ``support/oracle/linear.py`` is a materialized view over
a small ``events`` table and a ``cats`` table. A randomized workload inserts and deletes
rows and advances the manual clock with no writes; after every transaction and every clock
advance each view must hold what DuckDB computes for the same query from scratch, with
``mz_now()`` replaced by the read time (``{now_ts}`` as a TIMESTAMP, ``{now_ms}`` as
milliseconds) and, where DuckDB lacks a function, an equivalent rewrite (``repeat_row(k)``
as ``generate_series(1, k)`` or as a sum, ``string_to_table`` as
``unnest(string_split(...))``, ...).
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from tests.support.oracle.harness import oracle_seeds
from tests.support.oracle.linear import check_linear_views


@pytest.mark.slow
@pytest.mark.parametrize("seed", oracle_seeds())
def test_linear_views_match_duckdb_after_every_transaction_and_clock_advance(
        spark: SparkSession, seed: int) -> None:
    check_linear_views(spark, seed)
