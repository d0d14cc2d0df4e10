"""SUBSCRIBE: every change of a materialized view (or table), at its time."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

import pyarrow as pa

from matview.errors import InterfaceError
from matview.ir.types import BIGINT, MZ_TIMESTAMP
from matview.rows import rows_of
from matview.runtime.io.peek import changes

if TYPE_CHECKING:
    from matview.engine import Engine


class Subscription:
    """Changes of ``name`` as ``(mz_timestamp, mz_diff, *columns)`` rows.

    The first ``fetch`` returns the snapshot at the time of subscribing (or at ``as_of``,
    ``Engine.read_time``; none without ``snapshot``: the changes after it), then every fetch
    brings the view up to date and returns the changes since the previous one, consolidated
    per timestamp and in timestamp order. While the view holds an evaluation error, ``fetch``
    raises it (``DataError``) and returns nothing; once the error is retracted, the next
    fetch returns every change since the last one that succeeded. An open subscription
    holds back compaction of the view's history past the time it has read.
    """

    def __init__(self, engine: Engine, name: str,
                 using: Callable[[], AbstractContextManager[Engine]],
                 as_of: int | None = None, snapshot: bool = True) -> None:
        self.engine = engine
        self.name = name
        self._using = using
        """The connection's guard: the engine for this thread alone, errors translated."""
        if as_of is not None:  # held from now: the refresh compacts the view's history
            engine.cursors[id(self)] = (name, as_of)
        try:
            engine.refresh(name)
            self.as_of = engine.read_time([name], as_of)
        except Exception:
            engine.cursors.pop(id(self), None)
            raise
        self._snapshot_pending = snapshot
        engine.cursors[id(self)] = (name, self.as_of)
        item = engine.catalog.lookup(name)
        assert item is not None
        self.columns = ("mz_timestamp", "mz_diff") + tuple(f.name for f in item.fields)
        self.arity = len(item.fields)
        self.types = (MZ_TIMESTAMP, BIGINT) + tuple(f.type for f in item.fields)

    @property
    def closed(self) -> bool:
        return id(self) not in self.engine.cursors

    def fetch(self, wire: bool = False) -> list[tuple[object, ...]]:
        """Every change since the last fetch (the snapshot first); ``wire``: with values as
        the server prints them (``rows.rows_of``)."""
        with self._using():
            table = self.changes()
        return [] if table is None else rows_of(table, self.types, wire)

    def changes(self) -> pa.Table | None:
        """``fetch``'s changes as Arrow columns named ``columns`` (None: none), for a caller
        that holds the engine already (a sink)."""
        if self.closed:
            raise InterfaceError(f"subscription to {self.name} is closed")
        self.engine.refresh(self.name)
        self.engine.check_errors(self.name)
        _, after = self.engine.cursors[id(self)]
        upper = self.engine.oracle.read()
        table = changes(self.engine.trace_of(self.name), self.arity, after, upper,
                        self.as_of if self._snapshot_pending else None)
        self._snapshot_pending = False
        self.engine.cursors[id(self)] = (self.name, upper)
        if table is None:
            return None
        named = table.rename_columns(list(self.columns))  # every batch of the same schema:
        return named.cast(pa.schema([f.with_nullable(True) for f in named.schema]))

    def close(self) -> None:
        with self._using():
            self.engine.cursors.pop(id(self), None)
