"""``CREATE SINK``: a materialized view's (or table's) changes appended to files as they
commit, as ``(mz_timestamp, mz_diff, columns...)`` rows, the view's contents at the sink's
creation first.

A sink follows its view with a subscription (``matview.subscription``), which holds back
the compaction of the view's history past what the sink has written. After every committed
write the engine brings the view up to date and the sink appends the changes since its last
batch: ``INTO PARQUET`` as one Parquet file per batch (``{first time}-{last time}.parquet``,
so the files sort in time order), ``INTO DELTA`` as one commit to a Delta Lake table
(``deltalake``, the delta-rs binding: Spark's own Delta jars come from Maven, which these
machines cannot reach). Replaying the files (summing ``mz_diff`` per row) gives the view's
contents at the last batch's time. While the view holds an evaluation error its changes
wait, and land with the first batch after the error is retracted.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.compute as pc
import pyarrow.parquet as pq

from matview import files
from matview.errors import DataError, ProgrammingError

try:
    from deltalake import write_deltalake
except ImportError:  # an optional dependency: matview[delta]
    write_deltalake = None
from matview.sql.statements import CreateSink, DropSink
from matview.subscription import Subscription

if TYPE_CHECKING:
    from matview.engine import Engine


class Sink:
    """Sink ``name`` of ``view`` into ``directory`` (``parquet`` files or a ``delta``
    table)."""

    def __init__(self, engine: Engine, name: str, view: str, directory: Path,
                 kind: str) -> None:
        if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
            raise ProgrammingError(f'sink "{name}" needs an empty or new directory, and '
                                   f'"{directory}" is not one')
        if kind == "delta" and write_deltalake is None:
            raise ProgrammingError("sinks INTO DELTA need the deltalake package: pip install "
                                   "'matview[delta]'")
        self.name, self.view, self.directory, self.kind = name, view, directory, kind
        self.subscription = Subscription(engine, view, lambda: contextlib.nullcontext(engine))
        directory.mkdir(parents=True, exist_ok=True)

    def flush(self) -> None:
        """Append the view's changes since the last batch (none while it holds an error)."""
        try:
            table = self.subscription.changes()
        except DataError:
            return
        if table is None or table.num_rows == 0:
            return
        if self.kind == "delta":
            write_deltalake(str(self.directory), table, mode="append")
            return
        times = table.column("mz_timestamp")
        first, last = pc.min(times).as_py(), pc.max(times).as_py()
        pq.write_table(table, self.directory / f"{first:020d}-{last:020d}.parquet")

    def close(self) -> None:
        """Stop following the view (its history may compact again)."""
        self.subscription.engine.cursors.pop(id(self.subscription), None)



class Sinks:
    """An engine's sinks by name: ``CREATE SINK``, ``DROP SINK``, and the batches every sink
    appends after each committed write."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.by_name: dict[str, Sink] = {}

    def create(self, stmt: CreateSink) -> None:
        """A new sink, which writes its view's contents now."""
        engine = self.engine
        if stmt.name in self.by_name or engine.catalog.lookup(stmt.name) is not None:
            raise ProgrammingError(f'"{stmt.name}" already exists')
        sink = Sink(engine, stmt.name, stmt.view, files.confined(stmt.path, engine.files),
                    stmt.kind)
        self.by_name[stmt.name] = sink
        sink.flush()  # the view's contents now

    def drop(self, stmt: DropSink) -> None:
        sink = self.by_name.pop(stmt.name, None)
        if sink is None and not stmt.if_exists:
            raise ProgrammingError(f'sink "{stmt.name}" does not exist')
        if sink is not None:
            sink.close()

    def flush(self) -> None:
        """After a committed write: every sink appends its view's changes."""
        for sink in self.by_name.values():
            sink.flush()

    def check_drop(self, dropped: Iterable[str], verb: str = "drop") -> None:
        """Refuse to ``verb`` (drop, replace) objects ``dropped`` when a sink reads one of
        them."""
        doomed = set(dropped)
        for sink in self.by_name.values():
            if sink.view in doomed:
                raise ProgrammingError(f'cannot {verb} "{sink.view}": sink "{sink.name}" reads '
                                       f"it (DROP SINK {sink.name} first)")
