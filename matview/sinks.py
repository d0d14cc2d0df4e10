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
wait, and land with the first batch after the error is retracted. A Parquet file appears
whole or not at all (written beside, synced, renamed). ``ENVELOPE CONTENTS`` keeps a Delta
table equal to the view instead, one commit per batch replacing the rows it touches
(``lake.delta_contents``).

In a durable database a sink is kept in the manifest and resumes when the database is
opened again (``Sinks.resume``), from what it wrote, which may be ahead of the manifest:
after the last time written (a Parquet sink's last file's, a Delta sink's last commit's,
which carries it as the version of the sink's Delta app transaction, ``txn``) with the
view's changes at their times when the view still holds them (its history back to there),
else with one batch taking the replay of what it wrote (a contents table: its rows) to
the view's contents now.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from matview import files
from matview.errors import DataError, ProgrammingError
from matview.lake import delta_contents
from matview.lake.changes import DIFF, consolidated
from matview.result import Result
from matview.runtime.durable.store import replace_atomically
from matview.sql.catalog import quoted_name

try:
    from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
except ImportError:  # an optional dependency: matview[delta]
    write_deltalake = None
from matview.sql.statements import CreateSink, DropSink
from matview.subscription import Subscription

if TYPE_CHECKING:
    from matview.engine import Engine


class Sink:
    """Sink ``name`` of ``view`` into ``directory`` (``parquet`` files or a ``delta``
    table)."""

    def __init__(self, engine: Engine, stmt: CreateSink, resume: bool = False) -> None:
        directory = files.confined(stmt.path, engine.files)
        if not resume and directory.exists() and (
                not directory.is_dir() or any(directory.iterdir())):
            raise ProgrammingError(f'sink "{stmt.name}" needs an empty or new directory, and '
                                   f'"{directory}" is not one')
        if stmt.kind == "delta" and write_deltalake is None:
            raise ProgrammingError("sinks INTO DELTA need the deltalake package: pip install "
                                   "'matview[delta]'")
        if stmt.envelope == "contents":
            item = engine.catalog.lookup(stmt.view)
            assert item is not None
            delta_contents.check(stmt.view, [(f.name, f.type) for f in item.fields])
        self.stmt, self.name, self.view = stmt, stmt.name, stmt.view
        self.directory, self.kind = directory, stmt.kind
        self.app = f"matview sink {stmt.name}"
        """The Delta app transaction whose version is the last time the sink wrote."""
        last = self._last() if resume else None
        using = lambda: contextlib.nullcontext(engine)  # noqa: E731 - the engine, held
        self.replayed: pa.Table | None = None
        """The replay of what it wrote, which the first batch takes to the view's
        contents."""
        if last is not None and engine.trace_of(stmt.view).since <= last:
            self.subscription = Subscription(engine, stmt.view, using, last, snapshot=False)
        else:
            self.subscription = Subscription(engine, stmt.view, using)
            self.replayed = None if last is None else self._replay()
        directory.mkdir(parents=True, exist_ok=True)

    def _last(self) -> int | None:
        """The last time the sink wrote (None: nothing)."""
        if self.kind == "delta":
            if not DeltaTable.is_deltatable(str(self.directory)):
                return None
            return DeltaTable(str(self.directory)).transaction_version(self.app)
        return max((int(f.name.split("-")[1].split(".")[0])
                    for f in _written(self.directory)), default=None)

    def _replay(self) -> pa.Table:
        """Every change the sink wrote (a table it keeps the contents of: its rows)."""
        if self.stmt.envelope == "contents":
            rows = DeltaTable(str(self.directory)).to_pyarrow_table()
            ones = pa.repeat(pa.scalar(1, pa.int64()), rows.num_rows)
            return rows.add_column(0, "mz_diff", ones).add_column(
                0, "mz_timestamp", pa.repeat(pa.scalar(0, pa.int64()), rows.num_rows))
        if self.kind == "delta":
            return DeltaTable(str(self.directory)).to_pyarrow_table()
        return pq.read_table(_written(self.directory))

    def create_sql(self) -> str:
        """The statement creating it (a durable database keeps it)."""
        path = self.stmt.path.replace("'", "''")
        return (f"CREATE SINK {quoted_name(self.name)} FROM {quoted_name(self.view)} INTO "
                f"{self.kind.upper()} '{path}' ENVELOPE {self.stmt.envelope.upper()}")

    def flush(self) -> None:
        """Append the view's changes since the last batch (none while it holds an error)."""
        try:
            table = self.subscription.changes()
        except DataError:
            return
        if self.replayed is not None:
            table = _less(table, self.replayed, self.subscription.as_of)
            self.replayed = None
        if table is None or table.num_rows == 0:
            return
        times = table.column("mz_timestamp")
        first, last = pc.min(times).as_py(), pc.max(times).as_py()
        if self.stmt.envelope == "contents":
            delta_contents.merged(str(self.directory), table, self.app, last)
            return
        if self.kind == "delta":  # one commit, which records the time written
            write_deltalake(str(self.directory), table, mode="append", commit_properties=(
                CommitProperties(app_transactions=[Transaction(self.app, last)])))
            return
        buffer = pa.BufferOutputStream()
        pq.write_table(table, buffer)
        replace_atomically(self.directory / f"{first:020d}-{last:020d}.parquet",
                           buffer.getvalue())

    def close(self) -> None:
        """Stop following the view (its history may compact again)."""
        self.subscription.engine.cursors.pop(id(self.subscription), None)



def _written(directory: Path) -> list[Path]:
    """A Parquet sink's files, in time order."""
    return sorted(directory.glob("*.parquet")) if directory.is_dir() else []


def _less(snapshot: pa.Table | None, replayed: pa.Table, time: int) -> pa.Table:
    """The batch at ``time`` that takes ``replayed`` (a sink's files) to ``snapshot`` (the
    view's contents then, as changes; None: none): their difference, consolidated."""
    columns = [c for c in replayed.column_names if c not in ("mz_timestamp", "mz_diff")]
    parts = [replayed.select(columns).append_column(DIFF, pc.negate(replayed["mz_diff"]))]
    if snapshot is not None:
        parts.append(snapshot.select(columns).append_column(DIFF, snapshot["mz_diff"])
                     .cast(parts[0].schema))
    summed = consolidated(parts)
    if summed is None:
        return replayed.schema.empty_table()
    times = pa.array([time] * summed.num_rows, replayed.schema.field("mz_timestamp").type)
    return pa.table([times, summed[DIFF], *(summed[c] for c in columns)],
                    schema=replayed.schema)


class Sinks:
    """An engine's sinks by name: ``CREATE SINK``, ``DROP SINK``, and the batches every sink
    appends after each committed write."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.by_name: dict[str, Sink] = {}

    def create(self, stmt: CreateSink) -> Result:
        """A new sink, which writes its view's contents now."""
        engine = self.engine
        if stmt.name in self.by_name or engine.catalog.lookup(stmt.name) is not None:
            raise ProgrammingError(f'"{stmt.name}" already exists')
        sink = Sink(engine, stmt)
        self.by_name[stmt.name] = sink
        sink.flush()  # the view's contents now
        return Result()

    def resume(self, stmt: CreateSink) -> None:
        """A durable database's sink again, from what its files hold (module docstring)."""
        sink = Sink(self.engine, stmt, resume=True)
        self.by_name[stmt.name] = sink
        sink.flush()

    def drop(self, stmt: DropSink) -> Result:
        sink = self.by_name.pop(stmt.name, None)
        if sink is None and not stmt.if_exists:
            raise ProgrammingError(f'sink "{stmt.name}" does not exist')
        if sink is not None:
            sink.close()
        return Result()

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
