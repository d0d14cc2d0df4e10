"""Traces as records of a manifest, and back.

A trace's record lists its batches (their time ranges and leaves), the keys it is arranged
by, its ``since`` and its errors' trace. A leaf is recorded by where its rows are on disk:

- ``arrow``: a batch held in the driver, written once (when first saved) as an Arrow IPC
  file of its own under ``batches/``, with its size and CRC-32, checked when it is read
  back;
- ``files``: a batch held in the executors, whose Parquet files (``batch_files``) are under
  ``state/`` already: their directory, the copies arranged by key it has, what writing them
  counted, and every file's size, synced to disk when first saved and checked when read
  back (a missing or truncated file is reported, never read). A batch held otherwise (a
  checkpoint, a filtered plan) is first written as such files (one Spark job, once).

A batch whose rows Parquet cannot hold (NULL-typed columns, calendar intervals) cannot be
recorded (``Unsaved``): its collection is rebuilt when the database is opened again.
"""

from __future__ import annotations

import json
import os
import uuid
import weakref
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from matview.runtime.arrangements.batch_files import (
    UNCHECKED,
    BatchFiles,
    copy_path,
    parquet_holds,
    written,
)
from matview.runtime.arrangements.spine import Batch
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import Leaf, normalized
from matview.runtime.durable.errors import StateError
from matview.runtime.durable.hadoop_paths import HadoopPath
from matview.runtime.durable.store import Location, Store, sync_directory, write_synced
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

Record = dict[str, Any]


class Unsaved(ValueError):
    """A batch that cannot be recorded: Parquet cannot hold its rows."""


class Records:
    """Records the traces of one store (``trace``), writing each batch's file once; after a
    save, ``files`` and ``directories`` are what its records name under ``batches/`` and
    ``state/``."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._tables: dict[int, tuple[weakref.ref[pa.Table], Record]] = {}
        """By ``id``, every batch held in the driver that was saved (written once) and its
        record (tables cannot be keys of a weak dictionary: they are not hashable)."""
        self._spilled: weakref.WeakKeyDictionary[Leaf, BatchFiles] = \
            weakref.WeakKeyDictionary()
        """The files written for batches held otherwise (once)."""
        self._synced: dict[str, dict[str, int]] = {}
        """Per directory of a copy synced to disk, its files' sizes."""
        self._written: set[str] = set()
        """The files this process wrote under ``batches/`` and has not removed."""
        self.files: set[str] = set()
        self.directories: set[str] = set()
        self.wrote = False
        """Whether the save wrote a file under ``batches/`` (its entry then synced)."""

    def begin(self) -> None:
        """Start a save: what it names is gathered anew."""
        self.files, self.directories, self.wrote = set(), set(), False

    def written(self) -> None:
        """The save's files are written: their directory entries made durable, before a
        manifest names them."""
        if self.wrote:
            sync_directory(self.store.batches)

    def committed(self) -> None:
        """The save's manifest is committed: remove the files this process wrote that it no
        longer names (batches merged away; nothing reads them, their rows are in memory),
        on the store's thread (``Store.remove``)."""
        self.store.remove([self.store.batches / name for name in self._written - self.files])
        self._written &= self.files
        for at, (table, record) in list(self._tables.items()):
            if record["file"] not in self.files or table() is None:
                del self._tables[at]

    def trace(self, trace: Trace) -> Record:
        """``trace``'s record (its batches' files written where they are not yet)."""
        return {"keys": list(trace.keys), "since": trace.since,
                "batches": [{"lower": b.lower, "upper": b.upper, "leaf": self.leaf(b.leaf)}
                            for b in trace.batches],
                "errors": None if trace.errors is None else self.trace(trace.errors)}

    def leaf(self, leaf: Leaf) -> Record:
        if leaf.table is not None:
            return self.table(leaf.table)
        files = leaf.files if leaf.files is not None and leaf.exact else self._spill(leaf)
        record = self._files(files, leaf.copy is not None)
        self.directories.add(record["dir"])
        return record

    def adopt(self, table: pa.Table, record: Record) -> None:
        """``table``, read back from the file of ``record``: saved already, so that a save
        names that file rather than writing the batch again."""
        self._tables[id(table)] = (weakref.ref(table), record)
        self._written.add(record["file"])

    def table(self, table: pa.Table) -> Record:
        """A batch held in the driver (written when first saved, ``_arrow``)."""
        kept = self._tables.get(id(table))
        if kept is None or kept[0]() is not table:
            kept = self._tables[id(table)] = (weakref.ref(table), self._arrow(table))
        self.files.add(kept[1]["file"])
        return kept[1]

    def _arrow(self, table: pa.Table) -> Record:
        """A batch held in the driver, written as an Arrow IPC file of its own (W1's
        batches of 1,000 rows: 0.07 ms to encode, where Parquet takes 0.6 ms, and a commit
        writes two or three)."""
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        data = sink.getvalue()
        name = f"{uuid.uuid4().hex}.arrow"
        write_synced(self.store.batches / name, data)
        self._written.add(name)
        self.wrote = True
        return {"kind": "arrow", "file": name, "rows": table.num_rows, "bytes": data.size,
                "crc": zlib.crc32(data)}

    def _spill(self, leaf: Leaf) -> BatchFiles:
        """A batch held otherwise than in files (a checkpoint, a filtered plan), written as
        files (one Spark job, once)."""
        files = self._spilled.get(leaf)
        if files is None:
            if not parquet_holds(leaf.df.schema):
                raise Unsaved("a batch of values Parquet cannot hold")
            files = written(leaf.df)
            if files is None:
                raise Unsaved("an empty batch held in Spark")
            self._spilled[leaf] = files
        return files

    def _files(self, files: BatchFiles, copy: bool) -> Record:
        """A batch held in files: its copies' files synced (once) and sized."""
        directory = self.store.at(files.directory)
        if directory.parent != self.store.state:
            raise Unsaved(f"a batch held outside the database directory ({directory})")
        sizes = {}
        for key in files.copies:
            path = copy_path(files.directory, key)
            if path not in self._synced:
                self._synced[path] = _synced_sizes(self.store.at(path))
            sizes["" if key is None else key] = self._synced[path]
        return {"kind": "files", "dir": directory.name, "rows": files.rows,
                "schema": files.schema.json(), "distinct": files.distinct,
                "bounds": {k: list(v) for k, v in files.bounds.items()}, "copy": copy,
                "sizes": sizes}


def _synced_sizes(directory: Location) -> dict[str, int]:
    """The data files of a copy's directory, each synced to disk, by size (at a URI, Spark
    closed them: on HDFS, on every replica)."""
    if not directory.is_dir():
        raise StateError(f"batch files {directory} are missing")
    sizes = {}
    for entry in _data_files(directory):
        if isinstance(entry, Path):
            descriptor = os.open(entry, os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
        sizes[entry.name] = entry.stat().st_size
    sync_directory(directory)
    return sizes


def _data_files(directory: Location) -> list[Location]:
    """The data files of a copy's directory (not Spark's markers nor hidden files), in
    order of name."""
    return sorted((entry for entry in directory.iterdir()
                   if entry.is_file() and not entry.name.startswith((".", "_"))),
                  key=lambda entry: entry.name)


def restore(trace: Trace, record: Record, records: Records, spark: SparkSession) -> None:
    """Put the batches of ``record`` (saved from a trace of the same collection) into
    ``trace``, a new one; every file checked before it is read (those of ``records``'
    store), each batch held in the driver kept as saved (``Records.adopt``)."""
    trace.keys = list(record["keys"])
    trace.since = record["since"]
    trace.batches = [Batch(_leaf(b["leaf"], records, spark), b["lower"], b["upper"])
                     for b in record["batches"]]
    if record["errors"] is not None:
        if trace.errors is None:
            trace.errors = Trace(spark, 1)
        restore(trace.errors, record["errors"], records, spark)


def driver_table(record: Record, records: Records) -> pa.Table:
    """The batch held in the driver of ``record`` (``Records.table``), its file checked,
    kept as saved (``Records.adopt``: a reopening writes it no second time)."""
    path = records.store.batches / record["file"]
    data = _checked(path, record["bytes"])
    if zlib.crc32(data) != record["crc"]:
        raise StateError(f"batch file {path} is corrupted (its CRC-32 does not match)")
    table = ipc.open_file(pa.BufferReader(data)).read_all()
    records.adopt(table, record)
    return table


def _leaf(record: Record, records: Records, spark: SparkSession) -> Leaf:
    store = records.store
    if record["kind"] == "arrow":
        return Leaf(None, record["rows"], driver_table(record, records), spark)
    directory = str(store.state / record["dir"])
    for key, sizes in record["sizes"].items():
        _all_sized(store.at(copy_path(directory, key or None)), sizes)
    schema = T.StructType.fromJson(json.loads(record["schema"]))
    copies = {key or None: spark.read.schema(schema).options(**UNCHECKED).parquet(
        copy_path(directory, key or None)) for key in record["sizes"]}
    files = BatchFiles(spark, schema, record["rows"], directory, copies)
    for key in copies:
        if key is not None:  # what writing it counted; its mapped copy begun (``copied``)
            least, greatest = record["bounds"].get(key, (None, None))
            files.copied(key, {"distinct": record["distinct"].get(key), "least": least,
                               "greatest": greatest})
    kept = None
    if record["copy"]:
        first = next(iter(copies))
        arrow = to_arrow_schema(schema, error_on_duplicated_field_names_in_struct=True,
                                timezone="UTC")
        read = to_arrow(copies[first]) if isinstance(store.root, HadoopPath) else \
            pq.read_table(copy_path(directory, first))  # no Spark job on a local disk
        kept = normalized(read.select(arrow.names).cast(arrow)).combine_chunks()
    return Leaf(files.frame, files.rows, files=files, copy=kept)


def _all_sized(directory: Location, sizes: dict[str, int]) -> None:
    """Refuse the copy in ``directory`` unless each of its files ``sizes`` names holds as
    many bytes (``_compared``), read from one listing of the directory."""
    if not directory.is_dir():
        raise StateError(f"batch files {directory} are missing")
    found = {entry.name: entry.stat().st_size for entry in _data_files(directory)}
    for name, size in sizes.items():
        _compared(directory / name, found.get(name), size)


def _checked(path: Location, size: int) -> bytes:
    """The bytes of file ``path``, which must hold ``size`` of them (``_compared``)."""
    _compared(path, path.stat().st_size if path.is_file() else None, size)
    return path.read_bytes()


def _compared(path: Location, found: int | None, size: int) -> None:
    """Refuse file ``path`` found holding ``found`` bytes (None: missing) unless that is
    ``size`` (StateError: missing, truncated or grown)."""
    if found is None:
        raise StateError(f"batch file {path} is missing")
    if found != size:
        raise StateError(f"batch file {path} is truncated or damaged: {found} bytes, "
                         f"{size} expected")
