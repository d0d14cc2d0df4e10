"""The commit log: each committed transaction's batches, appended and synced before the
write returns, until the next manifest holds them.

A transaction whose batches the driver holds (a commit of some rows, not a bulk load) is
durable once one frame is appended to ``dir/log`` and the file synced (one ``fsync``),
where writing its batch files and a new manifest takes four or five. The next manifest
(``Store.commit``: after a statement that read or defined something, or once the log
passes ``LOG_BYTES``) holds those batches as files of their own, and the log is emptied.

A frame is ``MAGIC``, the payload's length and CRC-32, then the payload: a JSON header
(the transaction's time, and per table its name and the length of its batch) and the
batches as Arrow IPC files. Reading stops at a last frame that is short or whose CRC does
not match: the tail a crash cut while appending (that transaction had not returned); such
a frame with others after it is corruption, reported (``StateError``), never skipped.
Frames at times the manifest already holds (a crash between the manifest's replacement
and the log's emptying) are skipped by the reader (``Durability``).
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc
from matview.runtime.durable.errors import StateError
from matview.runtime.durable.hadoop_paths import HadoopAppender, HadoopPath

MAGIC = b"MVL1"
_HEAD = struct.Struct("<4sQI")
"""A frame's head: ``MAGIC``, the payload's length, its CRC-32."""

LOG_BYTES = 64 << 20
"""The log's size past which a commit writes a manifest instead (and empties the log)."""


class Log:
    """The commit log at ``path`` (made if new), open for appending."""

    def __init__(self, path: Path | HadoopPath) -> None:
        self.path = path
        self._file: BinaryIO | HadoopAppender = path.appended() \
            if isinstance(path, HadoopPath) else open(path, "ab")  # open while the store is

    @property
    def size(self) -> int:
        return self._file.tell()

    def append(self, at: int, batches: Sequence[tuple[str, pa.Table]]) -> None:
        """Append the transaction at ``at`` (its batches, by table name) as one frame,
        on disk when this returns."""
        parts = []
        for _, table in batches:
            sink = pa.BufferOutputStream()
            with ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            parts.append(sink.getvalue())
        header = json.dumps({"at": at, "tables": [[name, part.size] for (name, _), part
                                                  in zip(batches, parts, strict=True)]})
        payload = b"".join([struct.pack("<I", len(header)), header.encode(),
                            *(part.to_pybytes() for part in parts)])
        append_synced(self._file, _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload))
                      + payload)

    def entries(self) -> Iterator[tuple[int, list[tuple[str, pa.Table]]]]:
        """The transactions the log holds, in order: each time and its batches by table,
        up to the first frame a crash cut."""
        data = self.path.read_bytes()
        offset = 0
        while offset + _HEAD.size <= len(data):
            magic, length, crc = _HEAD.unpack_from(data, offset)
            payload = data[offset + _HEAD.size:offset + _HEAD.size + length]
            if magic != MAGIC or len(payload) != length or zlib.crc32(payload) != crc:
                if offset + _HEAD.size + length < len(data):  # frames after it: not a tail
                    raise StateError(f"commit log {self.path} is corrupted at byte {offset}")
                return
            offset += _HEAD.size + length
            (size,) = struct.unpack_from("<I", payload)
            header = json.loads(payload[4:4 + size])
            start, batches = 4 + size, []
            for name, part in header["tables"]:
                reader = ipc.open_file(pa.BufferReader(payload[start:start + part]))
                batches.append((name, reader.read_all()))
                start += part
            yield header["at"], batches

    def empty(self) -> None:
        """Forget every frame (a manifest holds their transactions now)."""
        self._file.truncate(0)
        self._file.seek(0)
        _synced(self._file)

    def close(self) -> None:
        self._file.close()


def append_synced(file: BinaryIO | HadoopAppender, data: bytes) -> None:
    """Append ``data`` to the open ``file``, on disk when this returns."""
    file.write(data)
    file.flush()
    _synced(file)


def _synced(file: BinaryIO | HadoopAppender) -> None:
    if isinstance(file, HadoopAppender):
        file.hsync()
    else:
        os.fsync(file.fileno())
