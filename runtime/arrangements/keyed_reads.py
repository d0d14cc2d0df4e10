"""What a keyed read of an arrangement finds (``Trace.matching``), and the fetch of its
batches' reads into the driver: by the driver reading their files itself where it can
(``BatchFiles.in_driver``), else by one Spark job; each batch remembers what was read of it
(``BatchFiles.remember``): a later read of some of the same keys, by another view's lookup
or a write's check, picks them in Arrow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.batch_files import BatchFiles
from matview.runtime.arrangements.updates import TIME, normalized
from matview.runtime.lowering.types import col
from matview.runtime.spark.one_job import collected
from pyspark.sql import DataFrame


class FileRead(NamedTuple):
    """A read by key of a batch's files: the batch's, the key and the values it reads by,
    and the time its rows are cut at (None: not cut)."""

    files: BatchFiles
    key: str
    values: pa.Array
    upto: int | None

    def frame(self) -> DataFrame:
        """The plan reading the rows in Spark (``BatchFiles.matching``)."""
        frame = self.files.matching(self.key, self.values)
        return frame if self.upto is None else frame.where(col(TIME) <= self.upto)


class KeyedRead(NamedTuple):
    """What a keyed read of a trace finds (``Trace.matching``)."""

    table: pa.Table | None
    """The rows of the batches the driver holds, and those a batch in files remembers
    from a read of the same values (``BatchFiles.remembered``; None: no such batch)."""
    reads: list[FileRead]
    """The reads by key of the batches held in files."""
    wholes: list[DataFrame]
    """Plans reading batches held in files whole (their other keys too)."""
    rows: int
    """The rows all read, at most: of a batch read by key from its files, those of the
    pages the values may be in, about ``PAGE_ROWS`` per value (a value of more rows spans
    more pages)."""
    expected: int
    """The rows all read, as expected: of a batch read by key, the values' number times
    the rows it holds per value (``BatchFiles.expected_rows``)."""

    def frames(self) -> list[DataFrame]:
        """Plans reading the rows of the batches held in files, in Spark."""
        return [read.frame() for read in self.reads] + self.wholes

    def fetch(self) -> tuple[pa.Table | None, int]:
        """The rows found, all in the driver (``fetched``), and how many of the batches'
        reads the driver made itself."""
        fetch, in_driver = fetched(self.reads, self.wholes)
        tables = ([] if self.table is None else [self.table]) + fetch
        return (pa.concat_tables(tables, promote_options="permissive") if tables else None,
                in_driver)


def fetched(reads: Sequence[FileRead], others: Sequence[DataFrame] = ()
            ) -> tuple[list[pa.Table], int]:
    """The rows of each of ``reads`` and of ``others`` (plans), and how many of ``reads``
    the driver made itself: those it can read from their files (``BatchFiles.in_driver``),
    remembered by their batches (``BatchFiles.remember``); the others' rows, and ``others``,
    fetched by one Spark job (none if none)."""
    direct = [read.files.in_driver(read.key, read.values) for read in reads]
    spark = iter(collected([read.frame() for read, rows in zip(reads, direct)
                            if rows is None] + list(others)))
    found = []
    for read, rows in zip(reads, direct):
        if rows is None:  # Spark's: cut at a time already, when it is
            table = normalized(next(spark))
            if read.upto is None:
                read.files.remember(read.key, read.values, table)
        else:  # the driver's: every row of the values, then cut
            table = normalized(rows)
            read.files.remember(read.key, read.values, table)
            if read.upto is not None:
                table = table.filter(pc.less_equal(table[TIME], read.upto))
        found.append(table)
    return found + [normalized(rows) for rows in spark], sum(r is not None for r in direct)
