"""A database directory: its lock, its manifest, its files.

``connect(path=dir)`` keeps under ``dir``:

- ``LOCK``: locked (``flock``) by the one process that has the database open; a second
  opener is refused, never let in to write beside the first. The system releases the lock
  of a process that dies, however it dies.
- ``manifest.json``: what the database holds as of its last commit (the catalog, every
  trace's batches by file, every view's frontier: ``matview.durability``), with the format
  version and a checksum of its body. A commit writes the batch files first (each written
  and ``fsync``-ed once), then the manifest to a temporary file, ``fsync``-ed, renamed over
  the old one and the directory ``fsync``-ed: a reader (or a process opening the directory
  after a crash) sees the old manifest or the new, never half of one.
- ``log``: the transactions committed since the manifest, one synced frame each
  (``log``), emptied when a manifest holds them.
- ``batches/``: the batches held in the driver, an Arrow IPC file each (``records``).
- ``state/``: the Spark state directory (``batch_files.place``), the batches held in the
  executors as their Parquet files.

Files a manifest does not name (a crash's half-written batches, merged-away ones) are
removed when the directory is opened (``sweep``).

A directory given as a URI (``hdfs://...``) is reached through Hadoop's ``FileSystem``
(``hadoop_paths.HadoopPath``: the same files, each durable write its file system's call,
the lock a ``LOCK`` file naming its holder).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
from matview.runtime.durable.errors import StateError
from matview.runtime.durable.hadoop_paths import HadoopLock, HadoopPath, hadoop_root, write_hsynced
from matview.runtime.durable.log import Log
from pyspark.sql import SparkSession

Location = Path | HadoopPath
"""A file or directory of a database: of the driver's file system, or at a URI."""

FORMAT = 1
"""The layout of the directory this code reads and writes; a directory of another is
refused (``StateError``), never misread."""

MANIFEST = "manifest.json"


def is_uri(root: str | os.PathLike[str]) -> bool:
    """Whether a database path is a URI (``hdfs://...``: ``hadoop_paths``)."""
    return "://" in os.fspath(root)


class Store:
    """The database directory ``root`` (made if new), locked for this opener until
    ``close``; ``manifest`` is the body of its last committed manifest (None: none yet).
    A URI is reached through ``spark``'s Hadoop file systems (``hadoop_paths``)."""

    def __init__(self, root: str | os.PathLike[str], spark: SparkSession | None = None
                 ) -> None:
        self.root: Location = hadoop_root(spark, os.fspath(root)) if is_uri(root) else \
            Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise StateError(f'database path "{self.root}" is not a directory')
        self.batches = self.root / "batches"
        self.state = self.root / "state"
        for directory in (self.root, self.batches, self.state):
            directory.mkdir(parents=True, exist_ok=True)
        self._lock: Any = _locked(self.root / "LOCK")
        try:
            self.manifest = self._read()
            self.log = Log(self.root / "log")
        except BaseException:
            _unlocked(self._lock)
            raise
        self._last: str | None = None if self.manifest is None else _text(self.manifest)

    def at(self, path: str) -> Location:
        """The file or directory at ``path`` (a path or URI ``str`` of one under the
        root), of the root's kind."""
        if isinstance(self.root, HadoopPath):
            return HadoopPath(self.root.spark, path, self.root.fs)
        return Path(path)

    def _read(self) -> dict[str, Any] | None:
        """The committed manifest's body (None: the directory holds none), checked. Where a
        replacement deletes the old manifest before renaming the new one over it
        (``HadoopPath.rename_over``) and stopped in between, the new one, complete (its
        checksum matches), is the manifest."""
        path = self.root / MANIFEST
        if path.exists():
            return self._checked(path)
        temporary = path.with_name(MANIFEST + ".tmp")
        if not temporary.exists():
            return None
        try:
            return self._checked(temporary)
        except StateError:
            return None  # cut while written: no manifest was replaced by it

    def _checked(self, path: Location) -> dict[str, Any]:
        try:
            document = json.loads(path.read_text())
        except (ValueError, UnicodeDecodeError) as error:
            raise StateError(f"{path} is corrupted: {error}") from None
        found = document.get("format") if isinstance(document, dict) else None
        if found != FORMAT:
            raise StateError(f'database "{self.root}" was written in state format {found}, '
                             f"and this matview reads format {FORMAT} only: open it with the "
                             "matview that wrote it")
        body = document.get("body")
        if not isinstance(body, dict) or document.get("sha256") != _digest(_text(body)):
            raise StateError(f"{path} is corrupted: its checksum does not match its contents")
        return body

    def commit(self, body: dict[str, Any]) -> bool:
        """Make ``body`` the committed manifest (atomically, durably), unless it is the
        committed one already; returns whether it wrote."""
        text = _text(body)
        if text == self._last:
            return False
        document = f'{{"format":{FORMAT},"sha256":"{_digest(text)}","body":{text}}}'
        replace_atomically(self.root / MANIFEST, document.encode())
        self._last, self.manifest = text, body
        if self.log.size:
            self.log.empty()
        return True

    def sweep(self, files: set[str], directories: set[str]) -> None:
        """Remove the batch files and state directories not named in ``files`` (names
        under ``batches/``) and ``directories`` (names under ``state/``)."""
        for entry in self.batches.iterdir():
            if entry.name not in files:
                entry.unlink(missing_ok=True)
        for entry in self.state.iterdir():
            if entry.name not in directories:
                if isinstance(entry, HadoopPath):
                    entry.remove_tree()
                elif entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock (the directory may be opened again)."""
        self.log.close()
        _unlocked(self._lock)

    def remove(self, paths: list[Location]) -> None:
        """Remove files no manifest names any more, on a thread of the store's (a
        commit does not wait for it; a file left by a crash is swept at the next
        opening)."""
        if paths:
            _remover().submit(lambda: [p.unlink(missing_ok=True) for p in paths])


@functools.cache
def _remover() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="matview-remove")


def _locked(path: Location) -> Any:
    """The database's lock at ``path``, taken (``StateError``: another opener holds it):
    ``flock`` on a local file, which the system releases however its process dies;
    ``HadoopLock`` at a URI."""
    if isinstance(path, HadoopPath):
        return HadoopLock(path)
    file = open(path, "a+")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.close()
        raise StateError(f'database "{path.parent}" is open in another connection or '
                         "process; close it there first (one opener at a time)") from None
    return file


def _unlocked(lock: Any) -> None:
    if isinstance(lock, HadoopLock):
        lock.release()
        return
    with contextlib.suppress(OSError, ValueError):
        fcntl.flock(lock, fcntl.LOCK_UN)
    lock.close()


def replace_atomically(path: Location, data: bytes | pa.Buffer) -> None:
    """Put ``data`` at ``path`` durably, in place of what was there in one step: written to
    a temporary file beside it, synced, renamed over it, the directory synced."""
    temporary = path.with_name(path.name + ".tmp")
    write_synced(temporary, data)
    if isinstance(path, HadoopPath):
        assert isinstance(temporary, HadoopPath)
        temporary.rename_over(path)
        return
    os.replace(temporary, path)
    sync_directory(path.parent)


def write_synced(path: Location, data: bytes | pa.Buffer) -> None:
    """Write ``data`` to a new file at ``path``, on disk when this returns."""
    if isinstance(path, HadoopPath):
        write_hsynced(path, data if isinstance(data, bytes) else data.to_pybytes())
        return
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def sync_directory(path: Location) -> None:
    """Make the entries of directory ``path`` (files made, renamed, removed) durable (at a
    URI they are once made)."""
    if isinstance(path, HadoopPath):
        return
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _text(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
