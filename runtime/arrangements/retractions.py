"""Finding the held copies of the rows a write retracts.

A write's check that no multiplicity goes negative (``Trace.negative_row``) sums the rows
it retracts with their copies the trace holds. Copies held in the driver are found in Arrow
by the values of one column (``probe_column``); copies held only in Spark are fetched with
one job that scans them (``found_in_spark``), filtered on that column's values by SQL text
when they are few (``RuntimeSettings.probe_values``), else by a broadcast semi-join.
"""

from __future__ import annotations

import functools

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.lowering.types import col
from matview.runtime.spark.arrow_frames import arrow_frame
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F


def found_in_spark(spark: SparkSession, held: DataFrame, retracted: pa.Table,
                   probe: str | None) -> DataFrame:
    """Held update rows that include every copy of the ``retracted`` rows (and maybe
    others, which ``negative_row`` does not count). When a column of integers or text
    (``probe``) tells the retracted rows apart, a filter on its values scans the rows
    held in one job (the filter is SQL text: one JVM call for any number of values,
    where a Column per value costs a call each); otherwise a semi-join with the
    retracted rows broadcast, which costs a second job (the broadcast)."""
    if probe is None:
        found = arrow_frame(spark, retracted).alias("r")
        same = [col(f"h.{n}").eqNullSafe(col(f"r.{n}")) for n in retracted.column_names]
        return held.alias("h").join(F.broadcast(found),
                                    functools.reduce(Column.__and__, same), "left_semi")
    values = pc.unique(retracted[probe]).drop_null().to_pylist()
    tests = [f"{probe} IS NULL"] if retracted[probe].null_count else []
    if values:
        tests.append(f"{probe} IN ({', '.join(map(_sql_literal, values))})")
    return held.where(" OR ".join(tests))


def probe_column(rows: pa.Table) -> str | None:
    """The column of integers or text with the most distinct values among ``rows``, or None
    when there is no such column."""
    best, distinct = None, 0
    for name in rows.column_names:
        kind = rows.schema.field(name).type
        if pa.types.is_integer(kind) or pa.types.is_string(kind):
            count = pc.count_distinct(rows[name], mode="all").as_py()
            if count > distinct:
                best, distinct = name, count
    return best


def _sql_literal(value: int | str) -> str:
    """``value`` (an integer or a string) as a Spark SQL literal."""
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
