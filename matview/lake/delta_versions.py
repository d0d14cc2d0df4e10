"""A Delta Lake table's versions as changes (``deltalake``, the delta-rs binding: Spark's
own Delta jars come from Maven, which these machines cannot reach).

A source over a Delta table loads the snapshot of the version it starts at (its files,
read by Spark), then applies each later version as one transaction. A version's changes
come from the table's change data feed when it is enabled (``delta.enableChangeDataFeed``:
inserts and update post-images add a row, deletes and update pre-images remove one), else
from the files the version added and removed (read in Arrow, the removed files' rows
retracted and the added files' inserted, consolidated). A commit that rewrites files
without changing rows (``OPTIMIZE``, whose actions say ``dataChange: false``) changes
nothing either way: the change data feed has no rows for it, and its files are not read.
Files a version needs that a ``VACUUM`` deleted cannot be read: ``Vacuumed`` says so, and
the source then takes its contents to the latest snapshot's in one transaction.

Refused when created: partitioned tables (their partition values are not in the files),
deletion vectors and column mapping (the files alone do not give the rows).
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from matview.errors import ProgrammingError
from matview.lake.arrow_fields import plain
from matview.lake.changes import DIFF, consolidated, read_files, signed

try:
    from deltalake import DeltaTable
except ImportError:  # an optional dependency: matview[delta]
    DeltaTable = None

_CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
_ADDS, _REMOVES = pa.array(["insert", "update_postimage"]), pa.array(["delete",
                                                                      "update_preimage"])
_NO_DATA_CHANGE = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})
"""The operations whose commits change no row (their actions' ``dataChange`` is false)."""


class Vacuumed(Exception):
    """A file a version's changes are read from is gone (a ``VACUUM`` deleted it)."""


class DeltaVersions:
    """The versions of the Delta table at ``uri``."""

    def __init__(self, uri: str) -> None:
        if DeltaTable is None:
            raise ProgrammingError("sources FROM DELTA need the deltalake package: pip install "
                                   "'matview[delta]'")
        if not DeltaTable.is_deltatable(uri):
            raise ProgrammingError(f'"{uri}" is not a Delta Lake table')
        self.uri = uri
        self.table = DeltaTable(uri)
        metadata, protocol = self.table.metadata(), self.table.protocol()
        if metadata.partition_columns:
            raise ProgrammingError(f'the Delta table "{uri}" is partitioned (by '
                                   f"{', '.join(metadata.partition_columns)}), which sources "
                                   "do not read yet")
        features = set(protocol.reader_features or ()) & {"deletionVectors", "columnMapping"}
        if features or metadata.configuration.get("delta.columnMapping.mode", "none") != "none":
            raise ProgrammingError(f'the Delta table "{uri}" uses '
                                   f"{', '.join(sorted(features)) or 'column mapping'}, which "
                                   "sources do not read yet")

    def latest(self) -> int:
        """The table's latest version (read from its log now)."""
        self.table.update_incremental()
        return self.table.version()

    def schema(self) -> pa.Schema:
        """The latest version's schema."""
        return pa.schema(self.table.schema().to_arrow())

    def files(self, version: int) -> list[str]:
        """The data files of ``version``."""
        return DeltaTable(self.uri, version=version).file_uris()

    def changes(self, after: int, latest: int, columns: list[str]
                ) -> Iterator[tuple[int, pa.Table | None]]:
        """Each version after ``after`` up to ``latest``, in order, with its changes as
        update rows of ``columns`` (None: none). ``Vacuumed`` when a file they need is
        gone."""
        feed = None
        if self.table.metadata().configuration.get("delta.enableChangeDataFeed") == "true":
            try:
                feed = plain(pa.table(self.table.load_cdf(
                    starting_version=after + 1, ending_version=latest).read_all()))
            except Exception:  # noqa: BLE001 - delta-rs's errors: the feed does not reach back
                feed = None
        if feed is not None:
            yield from _from_feed(feed, after, latest, columns)
        else:
            yield from self._from_files(after, latest, columns)

    def _from_files(self, after: int, latest: int, columns: list[str]
                    ) -> Iterator[tuple[int, pa.Table | None]]:
        """The versions' changes from the files each added and removed."""
        operations = {h["version"]: h.get("operation")
                      for h in self.table.history(latest - after + 1) if "version" in h}
        walker = DeltaTable(self.uri, version=after)
        before = set(walker.file_uris())
        for version in range(after + 1, latest + 1):
            walker.load_as_version(version)
            now = set(walker.file_uris())
            changes = None
            if operations.get(version) not in _NO_DATA_CHANGE:
                try:
                    changes = consolidated([
                        signed(read_files(sorted(before - now), columns), -1),
                        signed(read_files(sorted(now - before), columns), 1)])
                except FileNotFoundError as missing:
                    raise Vacuumed(str(missing)) from None
            yield version, changes
            before = now


def _from_feed(feed: pa.Table, after: int, latest: int, columns: list[str]
               ) -> Iterator[tuple[int, pa.Table | None]]:
    """The versions' changes from the change data feed's rows ``feed``."""
    kinds = feed["_change_type"]
    signs = pc.if_else(pc.is_in(kinds, _ADDS), 1, pc.if_else(pc.is_in(kinds, _REMOVES), -1, 0)
                       ).cast(pa.int64())
    rows = feed.select(columns).append_column(DIFF, signs)
    rows = rows.filter(pc.not_equal(rows[DIFF], 0))
    versions = feed["_commit_version"].filter(pc.not_equal(signs, 0))
    for version in range(after + 1, latest + 1):
        yield version, consolidated([rows.filter(pc.equal(versions, version))])
