"""Write transactions on tables: a write is a batch at a time from the timestamp oracle,
committed alone or staged in the open transaction, whose batches are appended together, all
at its one time, on commit. A write is made and checked (``writes``) before anything is
appended or staged, so a write that fails changes nothing."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa
from matview.ir.types import SqlType
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import Leaf
from matview.runtime.io import writes
from matview.runtime.io.constraints import Constraints
from pyspark.sql import DataFrame, SparkSession


class WriteTimes(Protocol):
    """The timestamp oracle as writes see it: the time the next write gets, and the write
    committed at a time."""

    def peek_write(self) -> int: ...

    def commit_write(self, at: int) -> None: ...

    def hold(self, at: int | None) -> None:
        """Keep reads before ``at``, the time of an open transaction's writes (None: no
        transaction is open)."""


@dataclass
class Transaction:
    """Writes staged at time ``at``, applied together on commit."""

    at: int
    writes: list[tuple[str, Trace, Leaf | None]] = field(default_factory=list)

    def staged(self, trace: Trace) -> list[Leaf]:
        """The batches staged for ``trace``."""
        return [leaf for _, target, leaf in self.writes
                if target is trace and leaf is not None]

    def overlay(self, trace: Trace) -> Trace:
        """``trace`` as this transaction's own reads see it: its staged batches appended at
        the transaction's time (a copy; ``trace`` itself is unchanged until commit)."""
        staged = self.staged(trace)
        return trace.overlaid(staged, self.at) if staged else trace

    @property
    def tables(self) -> set[str]:
        """The tables it writes."""
        return {name for name, _, leaf in self.writes if leaf is not None}

    def commit(self) -> None:
        """Append every staged batch to its trace, at the transaction's time."""
        for _, trace, leaf in self.writes:
            trace.append(leaf, self.at, self.at)

    @property
    def batches(self) -> list[tuple[str, Leaf]]:
        """The batches it writes, by table name."""
        return [(name, leaf) for name, _, leaf in self.writes if leaf is not None]


class Transactions:
    """The writes to one catalog's tables on ``spark``, at times from ``times``; ``open`` is
    the calling thread's open transaction (None: each write commits alone), ``committed`` is
    called after every commit, with its batches by table name and its time.

    One transaction is open at a time, owned by the thread that began it; while it is open,
    reads stay before its time (``WriteTimes.hold``), so other threads read the last
    committed state beside it, and it alone writes."""

    def __init__(self, spark: SparkSession, times: WriteTimes,
                 committed: Callable[[list[tuple[str, Leaf]], int], None]) -> None:
        self.spark = spark
        self.times = times
        self.committed = committed
        self._open: Transaction | None = None
        self.owner: threading.Thread | None = None
        """The thread whose transaction is open (None: none is)."""

    @property
    def open(self) -> Transaction | None:
        """The calling thread's open transaction (None: none is open, or another thread's
        is)."""
        return self._open if self.owner is threading.current_thread() else None

    @property
    def elsewhere(self) -> bool:
        """Whether another thread's transaction is open (this thread's writes must wait
        until it ends)."""
        return self._open is not None and self.owner is not threading.current_thread()

    def write(self, name: str, trace: Trace, types: Sequence[SqlType],
              updates: DataFrame | pa.Table, small: bool = True, own_rows: bool = False,
              constraints: Constraints | None = None) -> int:
        """Commit update rows (data columns of ``types``, then ``_diff``) to table ``name``
        (``trace``) at a new time, or stage them in the open transaction; returns the number
        of rows changed.

        A DataFrame's rows held in the executors are also copied to the driver (one Spark
        job) while the table's copies stay within ``table_copy_rows``, as Arrow rows are: its
        writes are then checked, and it is read, in Arrow.

        No write may leave a row with a negative multiplicity: updates with negative diffs
        are checked against the table (and the transaction's staged writes to it) before
        anything is appended, Arrow updates before they are stored and DataFrames once
        computed. Only ``own_rows`` writes skip the check: SQL DELETE and UPDATE retract
        rows just read from the table itself, which cannot go negative. The table's
        ``constraints`` are checked then too (``Constraints.check``)."""
        pending = self.open
        staged = [] if pending is None else pending.staged(trace)
        checked = own_rows or isinstance(updates, pa.Table)
        if isinstance(updates, pa.Table) and not own_rows and writes.retracts(updates):
            writes.check_retractions(name, trace, updates, staged)
        at = self.times.peek_write() if pending is None else pending.at
        leaf, changed, retracts = writes.batch(self.spark, updates, types, small, at,
                                               trace.keys[0] if trace.keys else None)
        if leaf is not None and retracts and not checked:
            writes.check_retractions(name, trace, leaf.df if leaf.table is None
                                     else leaf.table, staged)
        if isinstance(updates, DataFrame):  # copied to the driver while the table has room
            leaf = trace.with_copy(leaf)
        if leaf is not None and constraints is not None:
            constraints.check(trace, leaf, staged)
        if pending is not None:
            pending.writes.append((name, trace, leaf))
        else:
            trace.append(leaf, at, at)
            self.times.commit_write(at)
            self.committed([] if leaf is None else [(name, leaf)], at)
        return changed

    def begin(self) -> None:
        """Open a transaction (none is open): writes until ``commit`` share one time and land
        together."""
        assert self._open is None
        self._open = Transaction(self.times.peek_write())
        self.owner = threading.current_thread()
        self.times.hold(self._open.at)

    def commit(self) -> None:
        """Make this thread's open transaction's writes visible, all at its time."""
        pending = self.open
        if pending is not None:
            self.rollback()
            if pending.writes:
                pending.commit()
                self.times.commit_write(pending.at)
                self.committed(pending.batches, pending.at)

    def rollback(self) -> None:
        """Forget the open transaction's writes (any thread's: a connection rolls back the
        transaction of a thread that is gone)."""
        self._open, self.owner = None, None
        self.times.hold(None)

    def mark(self) -> int:
        """How many writes the open transaction has staged (0: none is open): a savepoint."""
        return 0 if self.open is None else len(self.open.writes)

    def rewind(self, mark: int) -> None:
        """Forget the open transaction's writes staged after its first ``mark`` (a savepoint
        rolled back to)."""
        if self.open is not None:
            del self.open.writes[mark:]
