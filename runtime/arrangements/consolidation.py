"""Consolidation of update batches: sum the diffs of equal (row, time) pairs, drop zeros.

Two forms of the one operation: ``consolidate`` plans it in Spark over a DataFrame,
``consolidated_arrow`` computes it in the driver over an Arrow table (a trace's own batches,
an operator's driver-held state), where rows of integers are grouped by sorting them in
numpy.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.updates import DIFF, TIME, data_columns
from matview.runtime.lowering.types import col
from matview.runtime.spark.jvm_objects import made_once
from matview.runtime.spark.jvm_plans import aggregate, columns
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def consolidate(df: DataFrame, small: bool = False) -> DataFrame:
    """Sum the diffs of equal (row, time) pairs and drop those that cancel. ``small``: the
    rows of a small step, grouped in one partition, so that the plan has no shuffle (and a
    kept plan runs again in the driver: ``jvm_plans.to_arrow``)."""
    spark, names = df.sparkSession, tuple(data_columns(df))
    keys, total, none, kept = made_once(spark, ("consolidate", names), lambda: (
        columns(spark, *names, TIME), F.sum(DIFF).alias(DIFF), columns(spark), col(DIFF) != 0))
    return aggregate(df.coalesce(1) if small else df, keys, total, none).where(kept)


def consolidated_arrow(table: pa.Table) -> pa.Table:
    """``consolidate`` on rows held in the driver: sum the diffs of equal (row, time) pairs
    and drop those that cancel (storage work on a trace's own batches). Integer rows
    without NULLs are grouped by sorting them in numpy (``_consolidated_integers``): an
    Arrow ``group_by`` costs about a millisecond however few the rows, and a recursive
    view's step consolidates dozens of small batches."""
    keys = [c for c in table.column_names if c != DIFF]
    if all(pa.types.is_integer(table.schema.field(c).type) and not table[c].null_count
           for c in table.column_names):
        return _consolidated_integers(table, keys)
    summed = grouped(table, keys, [(DIFF, "sum")]).rename_columns(keys + [DIFF])
    summed = summed.filter(pc.not_equal(summed[DIFF], 0))
    return summed.select(table.column_names)


def grouped(table: pa.Table, keys: list[str], aggregations: list[tuple[str, str]]
            ) -> pa.Table:
    """``table.group_by(keys).aggregate(aggregations)``, also by struct columns (INTERVAL
    values), which Arrow cannot group by: by their fields, the struct made again."""
    structs = [k for k in keys if pa.types.is_struct(table.schema.field(k).type)]
    flat: list[str] = []
    for key in keys:
        if key not in structs:
            flat.append(key)
            continue
        for field in table.schema.field(key).type:
            flat.append(f"{key}.{field.name}")
            table = table.append_column(flat[-1], pc.struct_field(table[key], field.name))
    out = table.group_by(flat, use_threads=False).aggregate(aggregations)
    for key in structs:
        kind = table.schema.field(key).type
        names = [f"{key}.{f.name}" for f in kind]
        fields = [out[n].combine_chunks() for n in names]
        made = pa.StructArray.from_arrays(fields, fields=list(kind), mask=pc.is_null(fields[0]))
        at = out.column_names.index(names[0])
        out = out.drop_columns(names).add_column(at, key, made)
    return out


def _consolidated_integers(table: pa.Table, keys: list[str]) -> pa.Table:
    """``consolidated_arrow`` of rows of integers without NULLs: a stable sort by the keys
    puts each row's copies together; their diffs are summed, and the rows kept in the order
    of their first copies."""
    if not table.num_rows:
        return table
    columns = [table[c].to_numpy() for c in keys]
    order = np.lexsort(columns[::-1])
    starts = np.zeros(len(order), bool)  # where a row differs from the one before it
    starts[0] = True
    for values in columns:
        ordered = values[order]
        starts[1:] |= ordered[1:] != ordered[:-1]
    first = np.flatnonzero(starts)
    sums = np.add.reduceat(table[DIFF].to_numpy()[order], first)
    kept = sums != 0
    rows = order[first[kept]]
    by_first = np.argsort(rows, kind="stable")
    out = table.take(rows[by_first])
    return out.set_column(out.schema.get_field_index(DIFF), DIFF,
                          pa.array(sums[kept][by_first], table.schema.field(DIFF).type))
