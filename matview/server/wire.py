"""PostgreSQL protocol v3 framing: reading frontend messages off a socket (with a size cap)
and building backend messages (https://www.postgresql.org/docs/current/protocol.html)."""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Sequence

MAX_MESSAGE = 64 * 1024 * 1024
"""The largest frontend message accepted (64 MiB); a larger one is a protocol error that
closes the connection."""
MAX_STARTUP = 10_000
"""The largest startup packet accepted (PostgreSQL's own limit)."""

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102


class ProtocolError(Exception):
    """The client broke the protocol: the connection is answered with an error and closed."""


class ClientGone(Exception):
    """The client closed the connection (or it broke)."""


class Reader:
    """Frontend messages from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def exactly(self, n: int) -> bytes:
        """The next ``n`` bytes; ``ClientGone`` when the stream ends first."""
        chunks, left = [], n
        while left:
            try:
                chunk = self.sock.recv(min(left, 1 << 20))
            except OSError as error:
                raise ClientGone(str(error)) from error
            if not chunk:
                raise ClientGone("the client closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def startup(self) -> tuple[int, bytes]:
        """A startup-phase packet (no type byte): its code and the rest of its payload."""
        (length,) = struct.unpack("!i", self.exactly(4))
        if not 8 <= length <= MAX_STARTUP:
            raise ProtocolError(f"invalid length of startup packet: {length}")
        body = self.exactly(length - 4)
        return struct.unpack("!i", body[:4])[0], body[4:]

    def message(self) -> tuple[bytes, bytes]:
        """The next message: its type byte and payload."""
        head = self.exactly(5)
        kind, length = head[:1], struct.unpack("!i", head[1:])[0]
        if length < 4:
            raise ProtocolError(f"invalid message length {length}")
        if length - 4 > MAX_MESSAGE:
            raise ProtocolError(f"message of {length} bytes is larger than the limit of "
                                f"{MAX_MESSAGE} bytes")
        return kind, self.exactly(length - 4)


class Payload:
    """A cursor over a message's payload; running off its end is a ``ProtocolError``."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def _take(self, n: int) -> bytes:
        """The next ``n`` bytes."""
        if n < 0 or self.at + n > len(self.data):
            raise ProtocolError("message is shorter than its contents")
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def int16(self) -> int:
        """The next big-endian int16."""
        return int(struct.unpack("!h", self._take(2))[0])

    def int32(self) -> int:
        """The next big-endian int32."""
        return int(struct.unpack("!i", self._take(4))[0])

    def byte(self) -> bytes:
        """The next byte."""
        return self._take(1)

    def bytes(self, n: int) -> bytes:
        """The next ``n`` bytes."""
        return self._take(n)

    def cstring(self) -> str:
        """A NUL-terminated UTF-8 string."""
        end = self.data.find(b"\0", self.at)
        if end < 0:
            raise ProtocolError("string is not NUL-terminated")
        raw = self.data[self.at:end]
        self.at = end + 1
        try:
            return raw.decode()
        except UnicodeDecodeError as error:
            raise ProtocolError('invalid byte sequence for encoding "UTF8"') from error


def cstr(text: str) -> bytes:
    """``text`` as a NUL-terminated UTF-8 string."""
    return text.encode() + b"\0"


def message(kind: bytes, payload: bytes = b"") -> bytes:
    """A backend message: type byte, length, payload."""
    return kind + struct.pack("!i", len(payload) + 4) + payload


def authentication(code: int, data: bytes = b"") -> bytes:
    """An Authentication message (0 ok, 10 SASL, 11 SASL continue, 12 SASL final)."""
    return message(b"R", struct.pack("!i", code) + data)


def parameter_status(name: str, value: str) -> bytes:
    """ParameterStatus of setting ``name``."""
    return message(b"S", cstr(name) + cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    """BackendKeyData: the process id and secret of cancel requests."""
    return message(b"K", struct.pack("!iI", pid, secret))


def ready_for_query(status: str) -> bytes:
    """ReadyForQuery with transaction status I, T or E."""
    return message(b"Z", status.encode())


def command_complete(tag: str) -> bytes:
    """CommandComplete with ``tag``."""
    return message(b"C", cstr(tag))


def error_fields(kind: bytes, fields: Iterable[tuple[str, str]]) -> bytes:
    """An ErrorResponse (``E``) or NoticeResponse (``N``) with ``(code, value)`` fields."""
    return message(kind, b"".join(code.encode() + cstr(value) for code, value in fields) + b"\0")


def row_description(columns: Sequence[tuple[str, int, int, int]]) -> bytes:
    """RowDescription of ``(name, type oid, type size, type modifier)`` columns, text format."""
    body = struct.pack("!h", len(columns))
    for name, oid, size, modifier in columns:
        body += cstr(name) + struct.pack("!ihihih", 0, 0, oid, size, modifier, 0)
    return message(b"T", body)


def data_row(values: Sequence[bytes | None]) -> bytes:
    """DataRow of encoded values (None: NULL)."""
    parts = [struct.pack("!h", len(values))]
    for value in values:
        parts.append(struct.pack("!i", -1) if value is None
                     else struct.pack("!i", len(value)) + value)
    return message(b"D", b"".join(parts))


def parameter_description(oids: Sequence[int]) -> bytes:
    """ParameterDescription of the parameter type OIDs."""
    return message(b"t", struct.pack(f"!h{len(oids)}i", len(oids), *oids))


def copy_response(kind: bytes, columns: int, binary: bool = False) -> bytes:
    """CopyInResponse (``G``) or CopyOutResponse (``H``) for ``columns`` text columns."""
    fmt = 1 if binary else 0
    return message(kind, struct.pack(f"!bh{columns}h", fmt, columns, *([fmt] * columns)))


PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
PORTAL_SUSPENDED = message(b"s")
EMPTY_QUERY = message(b"I")
COPY_DONE = message(b"c")
