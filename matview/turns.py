"""Whose turn it is at a connection shared by threads (the server's sessions, an
application's workers): statements run one at a time; a thread's open transaction owns the
connection until it ends, and meanwhile other threads' reads run beside it (at the last
committed time: ``TimestampOracle.hold``) while their writes wait."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class Turns:
    """The lock statements run under and the thread owning the open transaction;
    ``abandon`` rolls back the transaction of an owner that is gone (as a database does for
    a client that went away)."""

    def __init__(self, abandon: Callable[[], None]) -> None:
        self.lock = threading.RLock()
        self._idle = threading.Condition(self.lock)
        self.owner: threading.Thread | None = None
        """The thread whose open transaction owns the connection (None: no transaction)."""
        self._abandon = abandon

    @contextlib.contextmanager
    def turn(self, beside: bool = False) -> Iterator[None]:
        """This thread's turn: the lock, after waiting until no other thread's transaction is
        open (``beside``: not waiting, for statements that may only read; one that writes
        waits in ``await_owner``)."""
        with self.lock:
            if not beside:
                self.await_owner()
            yield

    def await_owner(self) -> None:
        """Wait (the lock released meanwhile) until no other thread's transaction is open,
        or the thread owning it is gone (its transaction then rolled back)."""
        with self.lock:
            me = threading.current_thread()
            while self.owner is not None and self.owner is not me:
                if not self.owner.is_alive():
                    self._abandon()
                    self.release()
                    break
                self._idle.wait(timeout=1.0)

    def take(self) -> None:
        """The calling thread's transaction owns the connection from now."""
        self.owner = threading.current_thread()

    def release(self) -> None:
        """End the ownership of the connection by a transaction's thread."""
        with self.lock:
            self.owner = None
            self._idle.notify_all()
