"""A lake's changes in Arrow: Parquet files read into the driver, and update rows (data
columns, then ``_diff``) consolidated, so that a version rewriting a file for one deleted
row changes one row, not the file's every row twice (a sink's batches are consolidated
alike: ``matview.sinks``, ``lake.delta_contents``)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from matview.lake.arrow_fields import plain

DIFF = "_diff"
"""The column of an update row's multiplicity."""


def read_files(paths: Sequence[str], columns: Sequence[str]) -> pa.Table | None:
    """The rows of Parquet files ``paths`` (local paths or URIs), columns ``columns``
    (None: no file)."""
    tables = []
    for path in paths:
        filesystem, located = pafs.FileSystem.from_uri(path) if "://" in path else (None, path)
        tables.append(plain(pq.read_table(located, columns=list(columns),
                                          filesystem=filesystem)))
    return pa.concat_tables(tables, promote_options="permissive") if tables else None


def signed(table: pa.Table | None, sign: int) -> pa.Table | None:
    """``table``'s rows as update rows of multiplicity ``sign`` (None: none)."""
    if table is None:
        return None
    return table.append_column(DIFF, pa.repeat(pa.scalar(sign, pa.int64()), table.num_rows))


def consolidated(parts: Sequence[pa.Table | None]) -> pa.Table | None:
    """Update rows ``parts`` (same columns) as one table, a row's diffs summed and rows
    whose sum is 0 left out (kept as they are when Arrow cannot group the columns' types:
    lists); None when no row is left."""
    present = [p for p in parts if p is not None and p.num_rows]
    if not present:
        return None
    rows = pa.concat_tables(present, promote_options="permissive")
    names = [n for n in rows.column_names if n != DIFF]
    try:
        summed = rows.group_by(names, use_threads=False).aggregate([(DIFF, "sum")])
    except pa.ArrowNotImplementedError:
        return rows
    summed = summed.select([*names, f"{DIFF}_sum"]).rename_columns([*names, DIFF])
    summed = summed.filter(pc.not_equal(summed[DIFF], 0))
    return summed if summed.num_rows else None
