"""ORDER BY keys as Spark sort columns and as an Arrow sort, the same order both ways.

A key is (column, descending, nulls first), as ``sort_keys.SortKey``. Both orders place NULLs
first or last as the key says and a NaN above every other number (Spark's order, and
PostgreSQL's); text compares by its UTF-8 bytes, the other types by value. Arrow's sort
places NULLs and NaNs together at one end for all keys, so the Arrow sort orders each key
by whether the value is NULL, then (for floating point) whether it is NaN, then the value.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.sort_keys import SortKey
from matview.runtime.lowering.types import col
from pyspark.sql import Column


def spark_order(names: Sequence[str], keys: Sequence[SortKey]) -> list[Column]:
    """The sort columns of ``keys`` over the columns ``names`` (key column i is
    ``names[i]``)."""
    out = []
    for column, desc, nulls_first in keys:
        value = col(names[column])
        if desc:
            out.append(value.desc_nulls_first() if nulls_first else value.desc_nulls_last())
        else:
            out.append(value.asc_nulls_first() if nulls_first else value.asc_nulls_last())
    return out


def arrow_order(table: pa.Table, names: Sequence[str], keys: Sequence[SortKey]) -> pa.Array:
    """The indices that sort the rows of ``table`` by ``keys`` over its columns ``names``."""
    parts: list[pa.ChunkedArray] = []
    sort_keys: list[tuple[str, str]] = []

    def by(values: pa.ChunkedArray, descending: bool) -> None:
        sort_keys.append((f"k{len(parts)}", "descending" if descending else "ascending"))
        parts.append(values)

    for column, desc, nulls_first in keys:
        values = table[names[column]]
        by(pc.is_null(values), nulls_first)
        if pa.types.is_floating(values.type):
            by(pc.fill_null(pc.is_nan(values), False), desc)
        by(values, desc)
    if not parts:
        return pa.array(range(table.num_rows), pa.uint64())
    return pc.sort_indices(pa.table(parts, names=[name for name, _ in sort_keys]),
                           sort_keys=sort_keys)
