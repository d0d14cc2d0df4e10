"""What a keyed read of an arrangement finds (``Trace.matching``), and the fetch of its
batches' reads into the driver, which each batch remembers (``BatchFiles.remember``): a
later read of some of the same keys, by another view's lookup or a write's check, picks
them in Arrow."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import pyarrow as pa
from matview.runtime.arrangements.batch_files import BatchFiles
from matview.runtime.arrangements.updates import normalized
from matview.runtime.spark.one_job import collected
from pyspark.sql import DataFrame


class KeyedRead(NamedTuple):
    """What a keyed read of a trace finds (``Trace.matching``)."""

    table: pa.Table | None
    """The rows of the batches the driver holds, and those a batch in files remembers
    from a read of the same values (``BatchFiles.remembered``; None: no such batch)."""
    frames: list[DataFrame]
    """Plans reading those of the batches held in files."""
    rows: int
    """The rows both read, at most: of a batch read by key from its files, those of the
    pages the values may be in, about ``PAGE_ROWS`` per value (a value of more rows spans
    more pages)."""
    whole: bool
    """Whether some of ``frames`` read a batch whole (its other keys too)."""
    expected: int
    """The rows both read, as expected: of a batch read by key, the values' number times
    the rows it holds per value (``BatchFiles.expected_rows``)."""
    reads: list[tuple[BatchFiles, str, pa.Array] | None]
    """Per frame, the batch's files, the key and the values it reads by, when the rows it
    finds may be remembered (``fetch``; None: it reads a batch whole, or cut at a time)."""

    def fetch(self) -> pa.Table | None:
        """The rows found, all in the driver: those of ``frames`` fetched (one Spark job,
        ``fetched``)."""
        tables = ([] if self.table is None else [self.table]) + fetched(self.frames, self.reads)
        return pa.concat_tables(tables, promote_options="permissive") if tables else None


def fetched(frames: list[DataFrame], reads: Sequence[tuple[BatchFiles, str, pa.Array] | None]
            ) -> list[pa.Table]:
    """The rows of each of ``frames``, fetched by one Spark job; those of the first, read
    by key (``reads``: the batch's files, the key and the values; None: not a keyed read),
    remembered by their batches (``BatchFiles.remember``)."""
    found = [normalized(t) for t in collected(frames)] if frames else []
    for rows, read in zip(found, reads, strict=False):
        if read is not None:
            read[0].remember(read[1], read[2], rows)
    return found
