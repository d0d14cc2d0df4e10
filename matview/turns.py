"""Whose turn it is at a connection shared by threads (the server's sessions, an
application's workers): statements run one at a time; a thread's open transaction owns the
connection until it ends, and meanwhile other threads' reads run beside it (at the last
committed time: ``TimestampOracle.hold``) while their writes wait."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


class Turns:
    """The lock statements run under, and waiting on the thread whose transaction is open
    (``owner``: the transactions' own record of it); ``abandon`` rolls back the transaction
    of an owner that is gone (as a database does for a client that went away)."""

    def __init__(self, owner: Callable[[], threading.Thread | None],
                 abandon: Callable[[], None]) -> None:
        self.lock = threading.RLock()
        self._idle = threading.Condition(self.lock)
        self._owner = owner
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
            while (owner := self._owner()) is not None and owner is not me:
                if not owner.is_alive():
                    self._abandon()
                    self.ended()
                    break
                self._idle.wait(timeout=1.0)

    def ended(self) -> None:
        """A transaction ended (committed, rolled back, abandoned): wake the waiting."""
        with self.lock:
            self._idle.notify_all()
