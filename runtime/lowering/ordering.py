"""ORDER BY keys as Spark sort columns and as an Arrow sort, the same order both ways.

A key is (column, descending, nulls first), as ``sort_keys.SortKey``. Both orders place NULLs
first or last as the key says and a NaN above every other number (Spark's order, and
PostgreSQL's); text compares by its UTF-8 bytes, an INTERVAL by its length (its struct's
``key``: ``interval_values``), a TIMETZ by its struct's fields in order (its time in UTC,
then its zone: ``timetz``), the other types by value. Arrow's sort
places NULLs and NaNs together at one end for all keys, so the Arrow sort orders each key
by whether the value is NULL, then (for floating point) whether it is NaN, then the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.sort_keys import SortKey
from matview.ir.types import INTERVAL, SqlType
from matview.runtime.lowering.types import ARROW_TIMETZ, col
from pyspark.sql import Column


def spark_order(names: Sequence[str], keys: Sequence[SortKey], types: Sequence[SqlType],
                total: bool = False) -> list[Column]:
    """The sort columns of ``keys`` over the columns ``names`` of ``types`` (key column i is
    ``names[i]``). ``total``: the keys are a total order (``sort_keys.total_order``), whose
    ties of equally long intervals spelled apart are broken by their fields, last."""
    out = []
    for column, desc, nulls_first in keys:
        value = col(names[column])
        if types[column] == INTERVAL:
            value = value["key"]
        if desc:
            out.append(value.desc_nulls_first() if nulls_first else value.desc_nulls_last())
        else:
            out.append(value.asc_nulls_first() if nulls_first else value.asc_nulls_last())
    if total:
        out += [col(names[c]).asc() for c, _, _ in keys if types[c] == INTERVAL]
    return out


def arrow_order(table: pa.Table, names: Sequence[str], keys: Sequence[SortKey],
                total: bool = False) -> pa.Array:
    """The indices that sort the rows of ``table`` by ``keys`` over its columns ``names``
    (``total`` as ``spark_order``'s)."""
    parts: list[pa.ChunkedArray] = []
    sort_keys: list[tuple[str, str]] = []

    def by(values: pa.ChunkedArray, descending: bool) -> None:
        sort_keys.append((f"k{len(parts)}", "descending" if descending else "ascending"))
        parts.append(values)

    intervals = []
    for column, desc, nulls_first in keys:
        values = table[names[column]]
        by(pc.is_null(values), nulls_first)
        if values.type == ARROW_TIMETZ:  # by its time in UTC, then its zone
            by(pc.struct_field(values, "key"), desc)
            values = pc.struct_field(values, "zone")
        elif pa.types.is_struct(values.type):  # an INTERVAL, ordered by its length
            intervals.append(values)
            values = pc.struct_field(values, "key")
        if pa.types.is_floating(values.type):
            by(pc.fill_null(pc.is_nan(values), False), desc)
        by(values, desc)
    for values in intervals if total else []:
        for field in ("months", "days", "micros"):
            by(pc.struct_field(values, field), False)
    if not parts:
        return pa.array(range(table.num_rows), pa.uint64())
    return pc.sort_indices(pa.table(parts, names=[name for name, _ in sort_keys]),
                           sort_keys=sort_keys)
