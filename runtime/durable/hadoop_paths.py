"""A durable database on a Hadoop-compatible file system (``connect(path="hdfs://...")``).

A database directory given as a URI (``hdfs://``, ``file://``, any scheme the Spark
session's Hadoop configuration can open) is reached through Hadoop's ``FileSystem`` in the
driver's JVM: ``HadoopPath`` offers the few ``pathlib.Path`` operations the store, the log
and the records use, so they run unchanged on either kind of path. What each durable write
becomes there (``store``, ``log``):

- a file written durably: created, written, ``hsync``-ed (on HDFS: on the disks of every
  replica), closed;
- the manifest replaced: written to a temporary file, then renamed over the old one; a file
  system whose rename does not replace (HDFS) has the old one deleted first, and a reader
  finding no manifest takes a complete temporary one (its checksum says so);
- the log appended to: the file opened for append (the file system must support it, as
  HDFS and the local one do; object stores do not), each frame ``hsync``-ed;
- directory entries need no sync: the file system's metadata changes are durable once the
  call returns.

The lock (``HadoopLock``) is a ``LOCK`` file created exclusively (``overwrite=false``, one
step on HDFS) naming its holder's host and process. A second opener is refused; the lock of
a process that died (killed, crashed) on the same host is taken over, since that host can
tell it is gone. One left by a process of another host stays until removed by hand: the
error names the file and its holder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from matview.runtime.arrangements.batch_files import UNCHECKED
from matview.runtime.durable.errors import StateError
from matview.runtime.spark.jvm_objects import java_class
from pyspark.sql import SparkSession
from pyspark.sql.utils import is_remote

RECOVERY_TRIES = 60
"""Seconds an opener waits for HDFS to recover the log's lease from a writer that died."""


@dataclass(frozen=True)
class _Stat:
    st_size: int


class HadoopPath:
    """The file or directory at ``uri`` of ``fs`` (a JVM ``FileSystem``; by default the one
    the session's Hadoop configuration gives ``uri``). Its JVM ``Path`` is made when first
    used: a save names many files and calls the file system for few of them."""

    def __init__(self, spark: SparkSession, uri: str, fs: Any = None,
                 listed: tuple[bool, int] | None = None) -> None:
        self.spark = spark
        self.uri = uri.rstrip("/")
        self.listed = listed
        """Whether it is a file, and its length, as the listing that found it said
        (``iterdir``): no more calls for them."""
        if fs is None:
            jvm: Any = spark._jvm  # type: ignore[attr-defined]
            conf = jvm.org.apache.hadoop.conf.Configuration(
                spark._jsc.hadoopConfiguration())  # type: ignore[attr-defined]
            for key, value in UNCHECKED.items():  # as Spark's files are: no checksum files
                conf.set(key, value)
            fs = jvm.org.apache.hadoop.fs.Path(self.uri).getFileSystem(conf)
        self.fs = fs

    @functools.cached_property
    def _path(self) -> Any:
        return java_class(self.spark, "org.apache.hadoop.fs.Path")(self.uri)

    def __truediv__(self, name: str) -> HadoopPath:
        return HadoopPath(self.spark, f"{self.uri}/{name}", self.fs)

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"HadoopPath({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HadoopPath) and self.uri == other.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    @property
    def name(self) -> str:
        return self.uri.rsplit("/", 1)[-1]

    @property
    def parent(self) -> HadoopPath:
        return HadoopPath(self.spark, self.uri.rsplit("/", 1)[0], self.fs)

    def with_name(self, name: str) -> HadoopPath:
        return self.parent / name

    def exists(self) -> bool:
        return bool(self.fs.exists(self._path))

    def is_dir(self) -> bool:
        if self.listed is not None:
            return not self.listed[0]
        return self.exists() and bool(self.fs.getFileStatus(self._path).isDirectory())

    def is_file(self) -> bool:
        if self.listed is not None:
            return self.listed[0]
        return self.exists() and bool(self.fs.getFileStatus(self._path).isFile())

    def mkdir(self, parents: bool = True, exist_ok: bool = True) -> None:
        self.fs.mkdirs(self._path)

    def iterdir(self) -> Iterator[HadoopPath]:
        for status in self.fs.listStatus(self._path):
            yield HadoopPath(self.spark, f"{self.uri}/{status.getPath().getName()}", self.fs,
                             (bool(status.isFile()), int(status.getLen())))

    def stat(self) -> _Stat:
        if self.listed is not None:
            return _Stat(self.listed[1])
        return _Stat(int(self.fs.getFileStatus(self._path).getLen()))

    def read_bytes(self) -> bytes:
        stream = self.fs.open(self._path)
        try:
            utils = java_class(self.spark, "org.apache.commons.io.IOUtils")
            return bytes(utils.toByteArray(stream))
        finally:
            stream.close()

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def unlink(self, missing_ok: bool = False) -> None:
        if not self.fs.delete(self._path, False) and not missing_ok:
            raise FileNotFoundError(self.uri)

    def remove_tree(self) -> None:
        self.fs.delete(self._path, True)

    def create(self, overwrite: bool = True) -> Any:
        """A new file here, open for writing (a JVM ``FSDataOutputStream``)."""
        return self.fs.create(self._path, overwrite)

    def appended(self) -> HadoopAppender:
        """This file (made if new) open for appending."""
        return HadoopAppender(self)

    def rename_over(self, target: HadoopPath) -> None:
        """Rename this file to ``target``, replacing it: where the file system's rename
        does not replace (HDFS), ``target`` is deleted first (a reader finding no manifest
        then takes its complete temporary one: ``store``)."""
        if not self.fs.rename(self._path, target._path):
            target.unlink(missing_ok=True)
            if not self.fs.rename(self._path, target._path):
                raise OSError(f"could not rename {self.uri} to {target.uri}")


def write_hsynced(path: HadoopPath, data: bytes, overwrite: bool = True) -> None:
    """Write ``data`` to a new file at ``path``, on the file system's disks when this
    returns (refused when a file is there and not ``overwrite``)."""
    stream = path.create(overwrite)
    try:
        stream.write(bytearray(data))
        stream.hsync()
    finally:
        stream.close()


class HadoopAppender:
    """A file open for appending, as the log uses a local one (``write``, ``flush``,
    ``tell``, ``truncate(0)``, ``seek(0)``, ``close``), synced by ``hsync``."""

    def __init__(self, path: HadoopPath) -> None:
        self.path = path
        if not path.exists():
            self._stream = path.create(False)
            return
        for _ in range(RECOVERY_TRIES):
            try:
                self._stream = path.fs.append(path._path)
                return
            except Exception as error:
                if path.fs.getClass().getSimpleName() != "DistributedFileSystem":
                    raise StateError(f"{path} cannot be appended to ({_reason(error)}): a "
                                     "durable database needs a file system that appends "
                                     "(HDFS, a local one)") from None
                path.fs.recoverLease(path._path)  # a writer that died holds its lease
                time.sleep(1)
        raise StateError(f"{path} is still held by a writer that is gone; retry later")

    def write(self, data: bytes) -> None:
        self._stream.write(bytearray(data))

    def flush(self) -> None:
        self._stream.flush()

    def hsync(self) -> None:
        self._stream.hsync()

    def tell(self) -> int:
        return int(self._stream.getPos())

    def truncate(self, size: int) -> None:
        """Forget the file's contents (``size`` 0 only): it is made anew, empty."""
        assert size == 0
        self._stream.close()
        self._stream = self.path.create(True)
        self._stream.hsync()

    def seek(self, offset: int) -> None:
        assert offset == 0 and self.tell() == 0

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._stream.close()


class HadoopLock:
    """The database's ``LOCK`` file at ``path``, held by this process until ``release``
    (the module's docstring says how)."""

    def __init__(self, path: HadoopPath) -> None:
        self.path = path
        self.holder = {"host": socket.gethostname(), "pid": os.getpid(),
                       "token": uuid.uuid4().hex}
        if not self._created():
            found = self._holder()
            if found is None or not self._gone(found):
                raise StateError(_refusal(path, found))
            stale = path.with_name(f"LOCK.stale-{self.holder['token']}")
            with contextlib.suppress(Exception):
                if self._holder() == found:  # not taken over meanwhile
                    path.rename_over(stale)  # one taker moves it; another finds it gone
                stale.unlink(missing_ok=True)
            if not self._created():
                raise StateError(_refusal(path, self._holder()))
        if self._holder() != self.holder:
            raise StateError(_refusal(path, self._holder()))

    def _created(self) -> bool:
        try:
            write_hsynced(self.path, json.dumps(self.holder).encode(), overwrite=False)
        except Exception as error:  # the JVM's FileAlreadyExistsException
            if "AlreadyExists" in str(error) or self.path.exists():
                return False
            raise
        return True

    def _holder(self) -> dict[str, Any] | None:
        try:
            found = json.loads(self.path.read_text())
        except Exception:
            return None
        return found if isinstance(found, dict) else None

    @staticmethod
    def _gone(holder: dict[str, Any]) -> bool:
        """Whether the process holding the lock is known to be gone: of this host, and
        no process has its id."""
        if holder.get("host") != socket.gethostname() or not isinstance(holder.get("pid"), int):
            return False
        try:
            os.kill(holder["pid"], 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def release(self) -> None:
        if self._holder() == self.holder:
            self.path.unlink(missing_ok=True)


def _refusal(path: HadoopPath, holder: dict[str, Any] | None) -> str:
    who = "" if holder is None else \
        f" (by process {holder.get('pid')} of host {holder.get('host')})"
    return (f'database "{path.parent}" is open in another connection or process{who}; '
            f"close it there first (one opener at a time), or, if that process is gone, "
            f"remove {path}")


def hadoop_root(spark: SparkSession | None, uri: str) -> HadoopPath:
    """The database directory at ``uri``, reached through ``spark``'s Hadoop file
    systems (a classic session's: a Spark Connect client has no JVM of its own)."""
    if spark is None or is_remote():
        raise StateError(f'database path "{uri}": a durable database at a URI needs a '
                         "classic SparkSession (a Spark Connect client reaches no file "
                         "system of the cluster's)")
    try:
        root = HadoopPath(spark, uri)
        root.exists()
    except Exception as error:  # the JVM's: no file system for the scheme, no such host
        raise StateError(f'database path "{uri}" cannot be reached: {_reason(error)}'
                         ) from None
    return root


def _reason(error: Exception) -> str:
    """What a JVM exception says (py4j's first line names the call that raised it)."""
    lines = str(error).strip().splitlines()
    return lines[1].lstrip(": ") if len(lines) > 1 else str(error)
