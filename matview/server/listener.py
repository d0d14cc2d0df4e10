"""The listening socket: one thread accepts connections and starts a ``Session`` thread for
each; ``serve`` starts it in the background."""

from __future__ import annotations

import logging
import socket
import threading

import matview
from matview.server.registry import Registry
from matview.server.session import Session

log = logging.getLogger("matview.server")

SUBSCRIBE_POLL = 0.2
"""Seconds between a SUBSCRIBE's looks for new changes."""


class Server:
    """A PostgreSQL wire-protocol server for ``connection`` listening on ``host``:``port``
    (port 0: a free one, then ``port`` is the one chosen)."""

    def __init__(self, connection: matview.Connection, host: str = "127.0.0.1",
                 port: int = 6875, password: str | None = None,
                 poll: float = SUBSCRIBE_POLL) -> None:
        self.connection = connection
        self.password = password
        self.poll = poll
        self.registry = Registry()
        self._listener = socket.create_server((host, port), reuse_port=False)
        self._listener.settimeout(0.2)
        self.host, self.port = self._listener.getsockname()[:2]
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="matview-server",
                                        daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        """Accept connections until closed, each served on a new thread."""
        while not self._closed.is_set():
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self._closed.is_set():
                    return
                log.exception("accepting a connection failed")
                continue
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            session = Session(sock, self.connection, self.registry, self.password, self.poll)
            threading.Thread(target=session.run, name="matview-session", daemon=True).start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the server is closed (or ``timeout`` seconds pass); whether it is."""
        return self._closed.wait(timeout)

    def close(self) -> None:
        """Stop accepting connections and disconnect every client."""
        self._closed.set()
        self._thread.join(timeout=5)
        self._listener.close()
        self.registry.disconnect_all()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def serve(connection: matview.Connection, host: str = "127.0.0.1", port: int = 6875,
          password: str | None = None, poll: float = SUBSCRIBE_POLL) -> Server:
    """Serve ``connection`` over the PostgreSQL protocol in background threads; the running
    ``Server`` (``.port``, ``.close()``)."""
    return Server(connection, host, port, password, poll)
