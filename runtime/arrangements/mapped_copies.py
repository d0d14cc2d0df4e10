"""Copies arranged by key that the driver memory-maps: reads of some keys that decode nothing.

A read the driver makes from a copy's Parquet files (``row_groups``) decodes a row group
per key it finds, 40-75 µs each whatever its rows (W1's 500 deleted orders of 10M: 37 ms
on two cores), and pyarrow decodes nothing smaller than a row group (it cannot read single
pages by Parquet's offset index: apache/arrow#45284). So a copy of at least
``mapped_copy_rows`` rows (a setting) arranged by a column of integers, whose files are on
the driver's local file system, is also converted into Arrow IPC files beside them — once,
in the background, by one driver thread, begun when the copy is written
(``BatchFiles.copied``; W1's 30M orders: about 10 s while the next steps run); until it is
done, reads decode row groups (of a copy written in large row groups for Spark's scans,
``batch_files.MAPPED_GROUP_ROWS``, they wait for it instead); the files of a copy
converted before (a durable database opened again) are mapped as they are. The driver
memory-maps them: a record batch's key column is then a sorted array in place, each key's
rows (of the keys within the batch's range) are found by binary search and taken from the
mapped columns, touching only their pages (the same read: 4-10 ms). The pages a read
touched are let go of after it (``madvise``): they stay in the operating system's page
cache, not in the driver's memory, which grows with the rows read, not with the copies (W1
at 10M, 40 reads: 336 MB of mapped pages kept without it; keeping up to 256 MiB of them
halved a read's time, but not W1's step at 30M, and doubled the driver's resident memory).
"""

from __future__ import annotations

import functools
import mmap
import os
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from matview.runtime.arrangements.key_index import positions
from matview.runtime.arrangements.row_groups import RowGroups

BATCH_ROWS = 1 << 20
"""Rows of each record batch of a mapped copy: the range one binary search covers."""


@dataclass(frozen=True)
class SortedBatch:
    """A record batch of a mapped copy: ``rows``, sorted by the key, the ``nulls`` rows
    holding NULL first; ``keys`` the others' keys (a view of the mapped file), from
    ``least`` to ``greatest`` (kept apart: reading them would touch the file)."""

    rows: pa.RecordBatch
    nulls: int
    keys: np.ndarray
    least: int | None
    greatest: int | None


@dataclass(frozen=True)
class MappedCopy:
    """A copy arranged by ``key`` as the driver maps it: the record batches of all its
    files, of rows of ``schema`` (typed as Spark hands them out)."""

    key: str
    schema: pa.Schema
    batches: tuple[SortedBatch, ...]
    maps: tuple[mmap.mmap, ...]
    """The mapped files."""

    def read(self, values: pa.Array) -> pa.Table:
        """The rows whose key holds one of ``values`` (integers; NULL among them
        included)."""
        kind = np.iinfo(self.schema.field(self.key).type.to_pandas_dtype())
        wanted = pc.unique(values.drop_null()).to_numpy(zero_copy_only=False)
        wanted = np.sort(wanted[(wanted >= kind.min) & (wanted <= kind.max)].astype(kind.dtype))
        found = []
        for batch in self.batches:
            inside = wanted[:0] if batch.least is None else wanted[
                np.searchsorted(wanted, batch.least):
                np.searchsorted(wanted, batch.greatest, "right")]  # a few of them
            at = positions(batch.keys, inside) + batch.nulls
            if values.null_count:
                at = np.concatenate([np.arange(batch.nulls), at])
            if len(at):
                found.append(batch.rows.take(pa.array(at)))
        for mapped in self.maps:  # the rows found are copies
            mapped.madvise(mmap.MADV_DONTNEED)
        return pa.Table.from_batches(found, self.schema)


@functools.cache
def _converter() -> ThreadPoolExecutor:
    """The thread converting copies (``mapping``), one copy at a time."""
    return ThreadPoolExecutor(1, thread_name_prefix="mapped-copies")


def mapping(groups: RowGroups, rows: int, least: int) -> Future[MappedCopy | None] | None:
    """The conversion of the copy whose Parquet files ``groups`` reads (of ``rows`` rows)
    into mapped files, begun on the converting thread; None when it is not converted: of
    fewer than ``least`` rows, arranged by a column of no integers, or on a file system
    the driver cannot map (not its own)."""
    if (rows < least or not pa.types.is_integer(groups.schema.field(groups.key).type)
            or not isinstance(groups.filesystem, pafs.LocalFileSystem) or not groups.paths):
        return None
    return _converter().submit(_converted, groups)


def _converted(groups: RowGroups) -> MappedCopy | None:
    """The copy ``groups`` reads, written as Arrow IPC files in a directory beside its own
    and mapped; None when it cannot be (the disk full, or files whose row groups' key
    ranges are out of order: not a copy arranged by the key). The memory decoding took is
    given back to the system."""
    if not all(_in_order(groups, i) for i in range(len(groups.paths))):
        return None
    place = os.path.dirname(groups.paths[0]) + ".arrow"
    batches: list[SortedBatch] = []
    maps = []
    try:
        os.makedirs(place, exist_ok=True)
        for i, path in enumerate(groups.paths):
            target = os.path.join(place, f"part-{i:05d}.arrow")
            if not os.path.exists(target):  # else converted before this process opened it
                _written(path, target, groups.schema)
            with open(target, "rb") as file:
                maps.append(mmap.mmap(file.fileno(), 0, prot=mmap.PROT_READ))
            reader = ipc.open_file(pa.BufferReader(pa.py_buffer(maps[-1])))
            batches.extend(_sorted(reader.get_batch(b), groups.key)
                           for b in range(reader.num_record_batches))
    except (OSError, pa.ArrowException):
        return None
    finally:
        pa.default_memory_pool().release_unused()
    return MappedCopy(groups.key, groups.schema, tuple(batches), tuple(maps))


def _in_order(groups: RowGroups, file: int) -> bool:
    """Whether the row groups of ``file`` hold ascending key ranges, NULLs first (as the
    files of a copy arranged by the key, each sorted by it)."""
    known, nulls = groups.known[file], groups.nulls[file]
    least, greatest = groups.least[file][known], groups.greatest[file][known]
    first = np.flatnonzero(known)
    after_nulls = not len(first) or not nulls[first[0] + 1:].any()
    return bool(np.all(least[1:] >= greatest[:-1])) and after_nulls


def _written(path: str, target: str, schema: pa.Schema) -> None:
    """The Parquet file at ``path`` written at ``target`` as an Arrow IPC file of rows of
    ``schema``, in record batches of ``BATCH_ROWS`` rows (complete or not there)."""
    partial = target + ".partial"
    with pa.OSFile(partial, "wb") as sink, ipc.new_file(sink, schema) as writer:
        for batch in pq.ParquetFile(path).iter_batches(BATCH_ROWS, use_threads=False):
            writer.write_table(pa.Table.from_batches([batch]).cast(schema))
    os.replace(partial, target)


def _sorted(rows: pa.RecordBatch, key: str) -> SortedBatch:
    """``rows``, sorted by ``key`` with NULLs first, as a ``SortedBatch``."""
    column = rows.column(key)
    nulls = column.null_count
    keys = column.slice(nulls).to_numpy(zero_copy_only=True)
    least, greatest = (int(keys[0]), int(keys[-1])) if len(keys) else (None, None)
    return SortedBatch(rows, nulls, keys, least, greatest)
