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
from matview.runtime.durable.log import Log

FORMAT = 1
"""The layout of the directory this code reads and writes; a directory of another is
refused (``StateError``), never misread."""

MANIFEST = "manifest.json"


class Store:
    """The database directory ``root`` (made if new), locked for this opener until
    ``close``; ``manifest`` is the body of its last committed manifest (None: none yet)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        if "://" in os.fspath(root):
            raise StateError(f'database path "{os.fspath(root)}": a durable database is a '
                             "directory of the driver's file system (a URI is not supported "
                             "yet)")
        self.root = Path(root).expanduser().resolve()
        if self.root.exists() and not self.root.is_dir():
            raise StateError(f'database path "{self.root}" is not a directory')
        self.batches = self.root / "batches"
        self.state = self.root / "state"
        for directory in (self.root, self.batches, self.state):
            directory.mkdir(parents=True, exist_ok=True)
        self._lock: Any = open(self.root / "LOCK", "a+")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            raise StateError(f'database "{self.root}" is open in another connection or '
                             "process; close it there first (one opener at a time)") from None
        try:
            self.manifest = self._read()
            self.log = Log(self.root / "log")
        except BaseException:
            self._lock.close()
            raise
        self._last: str | None = None if self.manifest is None else _text(self.manifest)

    def _read(self) -> dict[str, Any] | None:
        """The committed manifest's body (None: the directory holds none), checked."""
        path = self.root / MANIFEST
        if not path.exists():
            return None
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
                if entry.is_dir():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)

    def close(self) -> None:
        """Release the lock (the directory may be opened again)."""
        self.log.close()
        with contextlib.suppress(OSError, ValueError):
            fcntl.flock(self._lock, fcntl.LOCK_UN)
        self._lock.close()


    def remove(self, paths: list[Path]) -> None:
        """Remove files no manifest names any more, on a thread of the store's (a
        commit does not wait for it; a file left by a crash is swept at the next
        opening)."""
        if paths:
            _remover().submit(lambda: [p.unlink(missing_ok=True) for p in paths])


@functools.cache
def _remover() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(1, thread_name_prefix="matview-remove")


def replace_atomically(path: Path, data: bytes | pa.Buffer) -> None:
    """Put ``data`` at ``path`` durably, in place of what was there in one step: written to
    a temporary file beside it, synced, renamed over it, the directory synced."""
    temporary = path.with_name(path.name + ".tmp")
    write_synced(temporary, data)
    os.replace(temporary, path)
    sync_directory(path.parent)


def write_synced(path: Path, data: bytes | pa.Buffer) -> None:
    """Write ``data`` to a new file at ``path``, on disk when this returns."""
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def sync_directory(path: Path) -> None:
    """Make the entries of directory ``path`` (files made, renamed, removed) durable."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _text(body: dict[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()
