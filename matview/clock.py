"""The timestamp oracle: logical times are int64 milliseconds since the Unix epoch."""

from __future__ import annotations

import time


class TimestampOracle:
    """Hands out write times strictly greater than every time written or read before (so a
    write is never hidden behind a read that already happened), and the current read time.

    ``clock=None`` follows the wall clock; an integer starts a manual clock there, moved
    only by ``advance``. While a transaction is open (``hold``), reads stay before its
    time: its writes land there on commit, after every read made meanwhile.
    """

    def __init__(self, clock: int | None) -> None:
        self.manual = clock
        self.last_write = -1
        self.last_read = -1
        self.held: int | None = None
        """The time of the open transaction's writes, if one is open."""

    def clock(self) -> int:
        return self.manual if self.manual is not None else int(time.time() * 1000)

    def advance(self, to: int) -> None:
        if self.manual is None:
            raise ValueError("advance_time needs a manual clock: connect(clock=<int>)")
        if to < self.manual:
            raise ValueError(f"time cannot move backwards (from {self.manual} to {to})")
        self.manual = to

    @property
    def now(self) -> int:
        """The read time: every write so far is visible at it."""
        now = max(self.clock(), self.last_write)
        return now if self.held is None else min(now, self.held - 1)

    def read(self) -> int:
        """The read time, remembered so that later writes come after it."""
        self.last_read = max(self.last_read, self.now)
        return self.last_read

    def peek_write(self) -> int:
        """The time the next write will get."""
        return max(self.clock(), self.last_write + 1, self.last_read + 1)

    def commit_write(self, at: int) -> None:
        self.last_write = at

    def hold(self, at: int | None) -> None:
        """Keep reads before ``at`` (an open transaction's time; None: no longer)."""
        self.held = at
