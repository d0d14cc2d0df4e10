"""``CREATE SOURCE``: relations that follow a lake table's changes, read in SQL as tables.

``CREATE SOURCE name [(column type, ...)] FROM DELTA 'uri'`` follows a Delta Lake table
(``lake.delta_versions``), ``FROM PARQUET 'folder'`` an append-only folder of Parquet
files (``lake.parquet_folder``); their columns are the lake's (or those written, picked by
name). ``FROM STREAM`` (columns written) takes the batches a Spark stream writes through
``Connection.feed`` (``foreachBatch``). Nothing but the source writes its rows.

A source follows lazily, as views step: every read (a query, a view's step, a SUBSCRIBE
fetch) first brings the sources it reads up to date (``poll``). The first loads the
snapshot (Spark reads its files); each later Delta version, new Parquet file (both read
in the driver, in Arrow) or stream batch is one transaction, in order, so a subscription
sees each at its own time.

Each source has a progress relation, ``name_progress (version bigint, file text)``, that
says how far it has read: a Delta source's last version applied, a stream's last batch id
(one row each), a folder's files applied (one row per file, numbered). It is written in the
same transaction as the changes it accounts for, so in a durable database (where each
transaction commits whole) nothing is applied twice or skipped after a restart, and a
stream's batch replayed after a failure (the same batch id) is applied once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from sqlglot import exp

from matview import files
from matview.catalog import Entry
from matview.errors import OperationalError, ProgrammingError
from matview.ir.relation import Field, Get
from matview.ir.types import BIGINT, TEXT
from matview.lake import arrow_fields
from matview.lake.changes import DIFF, read_files, signed
from matview.lake.delta_versions import DeltaVersions, Vacuumed
from matview.lake.parquet_folder import ParquetFolder
from matview.result import Result
from matview.rows import update_rows
from matview.runtime.arrangements.updates import TIME
from matview.runtime.lowering.types import column_names
from matview.sql.catalog import CatalogItem, quoted_name
from matview.sql.dialect import Matview
from matview.sql.statements import CreateSource

if TYPE_CHECKING:
    from matview.engine import Engine

PROGRESS_FIELDS = (Field("version", BIGINT), Field("file", TEXT))
"""The columns of a source's progress relation (module docstring)."""


def progress_name(name: str) -> str:
    """The name of source ``name``'s progress relation."""
    return f"{name}_progress"


def is_progress(item: CatalogItem) -> bool:
    """Whether ``item`` is a source's progress relation (saved and dropped with it)."""
    return (item.origin or "").startswith("PROGRESS OF")


@dataclass
class Source:
    """Source ``item`` of ``kind`` at ``path`` following ``lake`` (None: a stream, or not
    opened yet), its progress so far:
    ``version`` the last Delta version or stream batch applied (None: none yet),
    ``applied`` a folder's files applied (None: not read from the progress relation
    yet)."""

    item: CatalogItem
    kind: str
    path: str | None
    lake: DeltaVersions | ParquetFolder | None
    version: int | None = None
    applied: list[str] | None = None
    columns: list[str] = field(default_factory=list)
    """The lake's names of the source's columns."""


class Sources:
    """An engine's sources by name: ``CREATE SOURCE``, their following (``poll``) and the
    batches fed to a stream's (``feed``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.by_name: dict[str, Source] = {}
        self._polling = False

    def create(self, stmt: CreateSource, resume: bool = False) -> Result:
        """A new source and its progress relation, both empty until the first read
        (``resume``: a durable database's, whose lake is not read until then)."""
        engine, progress = self.engine, progress_name(stmt.name)
        if engine.catalog.lookup(stmt.name) is not None:
            if stmt.if_not_exists:
                return Result()
            raise ProgrammingError(f'relation "{stmt.name}" already exists')
        if engine.catalog.lookup(progress) is not None:
            raise ProgrammingError(f'relation "{progress}" already exists: source '
                                   f'"{stmt.name}" needs the name for its progress')
        origin = "STREAM" if stmt.path is None else \
            f"{stmt.kind.upper()} {exp.Literal.string(stmt.path).sql(dialect=Matview)}"
        lake = None if resume else self._lake(stmt.kind, stmt.path)
        fields = stmt.fields
        if lake is not None:
            lake_fields = arrow_fields.fields(lake.schema(), f'"{stmt.path}"')
            fields = fields or lake_fields
            names = {f.name: f for f in lake_fields}
            for column in fields:
                if column.name not in names:
                    raise ProgrammingError(f'"{stmt.path}" has no column "{column.name}"')
        item = CatalogItem(stmt.name, "source", fields, origin=origin)
        follows = CatalogItem(progress, "source", PROGRESS_FIELDS,
                              origin=f"PROGRESS OF {quoted_name(stmt.name)}")
        for made in (item, follows):
            engine.catalog.add(Entry(made, trace=engine.table_trace(made)), set())
        self.by_name[stmt.name] = Source(item, stmt.kind, stmt.path, lake)
        return Result()

    def _lake(self, kind: str, path: str | None) -> DeltaVersions | ParquetFolder | None:
        """What a source of ``kind`` at ``path`` follows (a local path must lie in the
        connection's directories for files, as COPY's)."""
        if path is None:
            return None
        located = path if "://" in path else str(files.confined(path, self.engine.files))
        return DeltaVersions(located) if kind == "delta" else ParquetFolder(Path(located))

    def companions(self, dropped: list[str]) -> list[str]:
        """The progress relations of the sources in ``dropped`` (dropped with them); a
        progress relation is refused alone."""
        for name in dropped:
            item = self.engine.catalog.lookup(name)
            if item is not None and is_progress(item):
                owner = name.removesuffix("_progress")
                if owner not in dropped:
                    raise ProgrammingError(f'cannot drop "{name}": it is the progress of source '
                                           f'"{owner}" (DROP SOURCE {owner} drops both)')
        return [progress_name(n) for n in dropped
                if n in self.live() and progress_name(n) not in dropped]

    def live(self) -> dict[str, Source]:
        """The sources in the catalog now (one dropped is forgotten here; one made again
        replaced its entry when it was)."""
        entries = self.engine.catalog.entries
        self.by_name = {name: source for name, source in self.by_name.items()
                        if name in entries and entries[name].item.origin == source.item.origin}
        return self.by_name

    # --- following ----------------------------------------------------------------------

    def poll(self, names: set[str]) -> None:
        """Bring the sources ``names`` read (or whose progress relations they read) up to
        date with their lakes, each change one transaction (not inside a transaction, nor beside
        another thread's, nor while a poll is under way: a sink's refresh after a commit of
        this one)."""
        transactions = self.engine.transactions
        if not self.by_name:  # no source: nothing to look up
            return
        named = {n.removesuffix("_progress") if n.endswith("_progress") else n
                 for n in self.engine.catalog.upstream(names)}
        wanted = [source for name, source in self.live().items() if name in named]
        if not wanted or self._polling or transactions.open is not None or \
                transactions.elsewhere:
            return
        self._polling = True
        try:
            for source in wanted:
                if source.lake is None:
                    source.lake = self._lake(source.kind, source.path)
                self._progress(source)
                if isinstance(source.lake, DeltaVersions):
                    self._follow_delta(source, source.lake)
                elif isinstance(source.lake, ParquetFolder):
                    self._follow_folder(source, source.lake)
        finally:
            self._polling = False

    def _progress(self, source: Source) -> None:
        """Read the source's progress from its relation, once."""
        if source.applied is not None:
            return
        rows = self.engine.evaluate(Get(progress_name(source.item.name), PROGRESS_FIELDS))
        found = [] if rows is None else rows.drop(TIME).collect()
        versions = sorted((r[0], r[1]) for r in found)
        source.version = versions[-1][0] if versions else None
        source.applied = [file for _, file in versions if file is not None]
        if source.lake is not None:
            lake_names = {n.lower(): n for n in source.lake.schema().names}
            source.columns = [lake_names.get(f.name, f.name) for f in source.item.fields]

    def _follow_delta(self, source: Source, lake: DeltaVersions) -> None:
        latest = lake.latest()
        missing = set(source.columns) - set(lake.schema().names)
        if missing:
            raise OperationalError(
                f'source "{source.item.name}" reads the column "{min(missing)}", which version '
                f"{latest} of the Delta table {source.item.origin} no longer has: DROP SOURCE "
                "and CREATE it again")
        if source.version is None:
            self._apply(source, self._snapshot(source, lake.files(latest)), latest)
            return
        if latest <= source.version:
            return
        try:
            for version, changes in lake.changes(source.version, latest, source.columns):
                self._apply(source, changes, version)
        except Vacuumed as gone:  # the versions' files are gone: the latest snapshot, diffed
            self._refuse_strict(source, f"the files of its Delta versions after "
                                        f"{source.version} are gone ({gone})")
            self._apply(source, self._replaced(source, lake.files(latest)), latest)

    def _refuse_strict(self, source: Source, why: str) -> None:
        """Fail when a materialized view with ``REFRESH POLICY = INCREMENTAL STRICT`` reads
        ``source``, which cannot give its change incrementally (``why``): its scan of the
        source would receive a recompute's diff."""
        catalog = self.engine.catalog
        for name in catalog.dependents(source.item.name):
            flow = catalog.entries[name].dataflow
            if flow is not None and flow.policy.strict:
                raise OperationalError(
                    f'materialized view "{name}" has REFRESH POLICY = INCREMENTAL STRICT, and '
                    f'its operator Get {source.item.name} cannot be incremental: source '
                    f'"{source.item.name}" could only be recomputed, as {why}. Nothing was '
                    "applied; create the view with another refresh policy, or the source again")

    def _follow_folder(self, source: Source, lake: ParquetFolder) -> None:
        assert source.applied is not None
        done = set(source.applied)
        new = [name for name in lake.listed() if name not in done]
        if not new:
            return
        if not source.applied:  # the first read: every file, by Spark
            self._apply(source, self._snapshot(source, [lake.path(n) for n in new]),
                        len(new), new)
            return
        for name in new:  # a file's rows, read in the driver as a Delta version's are
            self._apply(source, signed(read_files([lake.path(name)], source.columns), 1),
                        len(source.applied) + 1, [name])

    def _snapshot(self, source: Source, paths: list[str]) -> DataFrame | None:
        """The rows of Parquet files ``paths`` as inserts, read by Spark."""
        if not paths:
            return None
        rows = self.engine.spark.read.parquet(*paths).select(*source.columns)
        return update_rows(rows, source.item, 1)

    def _replaced(self, source: Source, paths: list[str]) -> DataFrame | None:
        """The changes taking the source's rows to those of files ``paths``."""
        new = self._snapshot(source, paths)
        old = self.engine.evaluate(Get(source.item.name, source.item.fields))
        parts = [] if new is None else [new]
        if old is not None:
            parts.append(old.drop(TIME).withColumn(DIFF, -F.col(DIFF)))
        if not parts:
            return None
        names = column_names(len(source.item.fields))
        union = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        return union.groupBy(*names).agg(F.sum(DIFF).alias(DIFF)).where(F.col(DIFF) != 0)

    # --- applying -----------------------------------------------------------------------

    def feed(self, name: str, rows: object, batch: int) -> int:
        """Apply batch ``batch`` of a stream's rows to source ``name`` (FROM STREAM) as one
        transaction, unless a batch at least as late was applied (a replay); returns the
        rows inserted."""
        source = self.live().get(name)
        if source is None or source.kind != "stream":
            raise ProgrammingError(f'"{name}" is not a source FROM STREAM')
        transactions = self.engine.transactions
        if transactions.open is not None:
            raise ProgrammingError("a stream's batch is a transaction of its own: commit the "
                                   "open transaction first")
        if transactions.elsewhere:
            self.engine.await_writer()
        self._progress(source)
        if source.version is not None and batch <= source.version:
            return 0
        updates = update_rows(rows, source.item, 1)
        return self._apply(source, updates, batch)

    def _apply(self, source: Source, changes: pa.Table | DataFrame | None, version: int,
               new_files: list[str] | None = None) -> int:
        """Commit ``changes`` (update rows: data columns, ``_diff``) to the source and its
        progress (``version``, a folder's ``new_files``) as one transaction."""
        engine, item = self.engine, source.item
        if isinstance(changes, pa.Table):
            diffs = changes.column(DIFF)
            changes = update_rows(changes.drop_columns([DIFF]), item, 1)
            changes = changes.set_column(changes.num_columns - 1, DIFF, diffs)
        progress = self._progress_rows(source, version, new_files)
        transactions, written = engine.transactions, 0
        transactions.begin()
        try:
            if changes is not None:
                written = transactions.write(item.name, engine.trace_of(item.name),
                                             [f.type for f in item.fields], changes,
                                             small=isinstance(changes, pa.Table))
            name = progress_name(item.name)
            transactions.write(name, engine.trace_of(name),
                               [f.type for f in PROGRESS_FIELDS], progress, own_rows=True)
        except BaseException:
            transactions.rollback()
            raise
        transactions.commit()
        source.version = version
        if new_files is not None and source.applied is not None:
            source.applied += new_files
        return written

    def _progress_rows(self, source: Source, version: int,
                       new_files: list[str] | None) -> pa.Table:
        """The progress relation's changes for ``version`` (a folder: its ``new_files``
        numbered after those applied)."""
        item = CatalogItem(progress_name(source.item.name), "source", PROGRESS_FIELDS)
        if new_files is not None:
            first = len(source.applied or ())
            return update_rows([(first + i + 1, n) for i, n in enumerate(new_files)], item, 1)
        new = update_rows([(version, None)], item, 1)
        if source.version is None:
            return new
        return pa.concat_tables([update_rows([(source.version, None)], item, -1), new])

