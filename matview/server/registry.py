"""The server's live sessions by backend process id, for cancel requests and shutdown."""

from __future__ import annotations

import secrets
import threading
from typing import Protocol


class Cancellable(Protocol):
    """What the registry needs of a session."""

    secret: int

    def cancel(self) -> None:
        """Cancel the running statement."""

    def disconnect(self) -> None:
        """Close the client's socket."""


class Registry:
    """Sessions by process id (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sessions: dict[int, Cancellable] = {}
        self._next = 1000

    def add(self, session: Cancellable) -> tuple[int, int]:
        """Register ``session``: its process id and secret key for BackendKeyData."""
        with self._lock:
            self._next += 1
            pid = self._next
            self._sessions[pid] = session
        return pid, secrets.randbits(32)

    def remove(self, pid: int) -> None:
        """Forget the session with process id ``pid``."""
        with self._lock:
            self._sessions.pop(pid, None)

    def cancel(self, pid: int, secret: int) -> None:
        """A CancelRequest: cancel the session's running statement when the key matches
        (a wrong key is ignored, as PostgreSQL ignores it)."""
        with self._lock:
            session = self._sessions.get(pid)
        if session is not None and session.secret == secret:
            session.cancel()

    def disconnect_all(self) -> None:
        """Close every session's socket (server shutdown)."""
        with self._lock:
            sessions = list(self._sessions.values())
        for session in sessions:
            session.disconnect()
