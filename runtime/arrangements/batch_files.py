"""Batches held in the executors: Parquet files in the state directory, arranged by key.

A batch too large for the driver is written by Spark as Parquet files under the state
directory (``place``: ``matview.connect(state_dir=...)``, a temporary directory by default),
and read back from them: the driver holds only their path, and an executor's loss loses
nothing (the tasks reading a lost executor's share run again from the files), where a
``localCheckpoint``'s blocks die with their executor (``bench/state_store.py`` measured the
ways Spark can hold a batch: ``bench/README.md``).

A batch read by the values of a column of integers or text (a join's lookup of a delta's
keys, a write's check of the rows it retracts) is kept as a copy arranged by that column,
made once (one Spark job, and one more sampling its keys when it spans several files) and
shared by every reader of it: its rows range-partitioned by the key into files of about
``file_rows`` rows each (a setting), sorted by the key within each, in pages of
``PAGE_ROWS`` rows. Parquet keeps every page's least and greatest key (its column index): a
read of some keys (``key IN (...)``, pushed into the scan) decodes only the pages whose range
may hold one of them, about one page per key whatever the batch's size, where a scan of a
checkpoint reads every row. A read whose rows the driver fetches is made by the driver
itself where it can open the files (``row_groups``: a page is a row group), with no Spark
job; a large copy by integers, from Arrow files it memory-maps (``mapped_copies``).
"""

from __future__ import annotations

import atexit
import functools
import math
import shutil
import tempfile
import uuid
import weakref
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import NamedTuple
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.arrangements.key_index import holding
from matview.runtime.arrangements.mapped_copies import MappedCopy, mapping
from matview.runtime.arrangements.row_groups import RowGroups, row_groups
from matview.runtime.settings import active
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

PAGE_ROWS = 1_000
"""Rows of a Parquet page of a copy arranged by key, and of a row group of a copy the
driver reads by row groups: the unit a keyed read decodes or skips. Spark skips pages by
the column index, the driver row groups by the footer's ranges (``row_groups``): W1's 500
orders by id of 10M, in row groups of 1,000 rows 0.05 s, of 4,096 0.15 s, of 16,384 0.40
s. Row groups so small slow Spark's scans down (``MAPPED_GROUP_ROWS``)."""

MAPPED_GROUP_ROWS = 1 << 20
"""Rows of a row group of a copy the driver memory-maps (``mapped_copies``), whose Parquet
row groups only Spark reads (by pages, as the column index says): a view created over an
index scans the copy whole, which takes W1's 10M orders 0.54 s in row groups of 1M rows
and 2.4-3.2 s in row groups of ``PAGE_ROWS`` (a Spark read of 500 keys: 0.58 s and 0.61 s).
Such a copy is compressed (snappy: 0.59x the bytes, a scan 1.8x the time)."""


UNCHECKED = {"fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
             "fs.file.impl.disable.cache": "true"}
"""Options writing and reading a batch's files on a local file system without Hadoop's
checksum files: by default every page a keyed read decodes also reads and verifies a chunk
of a ``.crc`` file beside it, three to four times the cost of the read (500 keys of 3M
rows: 1.1 s, 0.36 s without). Other file systems ignore them."""


ENCODED = {"parquet.writer.version": "v2"}
"""Options writing a batch's files in Parquet's second format version, whose pages encode
the integers a dictionary does not hold (ids, amounts) as bit-packed deltas where the first
stores them plain: 1M W1 orders arranged by customer in row groups of ``PAGE_ROWS``, LZ4,
10.8 MB -> 6.5 MB (0.66x the rows as one snappy file of the first version), with no
slower reads (500 row groups by pyarrow 33 -> 19-46 ms, 500 keys by Spark 1.37 -> 0.81-0.98
s, a scan 0.33 -> 0.25 s)."""


@dataclass(frozen=True)
class FileReads:
    """What the reads of one arrangement's batches held in files read, over its life
    (EXPLAIN ANALYZE): ``by_key`` batches read by key, which decode about one file
    (``files``) and one page (``pages``) per key, at most each file and page of the batch
    once; ``whole`` batches read whole, ``whole_rows`` their rows; ``remembered`` reads by
    key that read no file, their rows picked from the last read of the batch
    (``BatchFiles.remembered``); ``in_driver`` reads by key fetched by the driver reading
    the files itself, with no Spark job (``row_groups``)."""

    by_key: int = 0
    files: int = 0
    pages: int = 0
    whole: int = 0
    whole_rows: int = 0
    remembered: int = 0
    in_driver: int = 0

    def read(self, part: KeyedPart, rows: int) -> FileReads:
        """These reads and ``part``, a read by key of a batch of ``rows`` rows."""
        if part.remembered is not None:
            return replace(self, remembered=self.remembered + 1)
        return self.plus(rows, part.keys) if part.keys else self

    def direct(self, reads: int) -> FileReads:
        """These reads, ``reads`` of which the driver read itself."""
        return replace(self, in_driver=self.in_driver + reads)

    def plus(self, rows: int, keys: int | None) -> FileReads:
        """These reads and a read of a batch of ``rows`` rows: by ``keys`` distinct keys
        (its files of about ``file_rows`` rows, its pages of ``PAGE_ROWS``), or whole
        (None)."""
        if keys is None:
            return replace(self, whole=self.whole + 1, whole_rows=self.whole_rows + rows)
        files, pages = -(-rows // active().file_rows), -(-rows // PAGE_ROWS)
        return replace(self, by_key=self.by_key + 1, files=self.files + min(files, keys),
                       pages=self.pages + min(pages, keys))


class KeyedPart(NamedTuple):
    """A batch's part of a read by key (``BatchFiles.read_by_key``): the rows it remembers
    of a read of the values (``BatchFiles.remembered``, None: none), else the values its
    key range may hold, and how many distinct (none: nothing to read)."""

    remembered: pa.Table | None
    values: pa.Array
    keys: int


_places: weakref.WeakKeyDictionary[SparkSession, str] = weakref.WeakKeyDictionary()
"""Per session, the state directory its connection chose (``place``)."""


def place(spark: SparkSession, directory: str | None) -> None:
    """Hold ``spark``'s batches in ``directory`` (a path or URI every executor can read and
    write, for a cluster a shared file system); None: a temporary directory of this
    process, removed when it exits."""
    if directory is not None:
        _places[spark] = directory


def state_directory(spark: SparkSession) -> str:
    """Where ``spark``'s batches are written (``place``)."""
    if spark not in _places:
        _places[spark] = _temporary()
    return _places[spark]


@functools.cache
def _temporary() -> str:
    """This process's temporary state directory, removed when it exits."""
    made = tempfile.mkdtemp(prefix="matview-state-")
    atexit.register(shutil.rmtree, made, True)
    return made


def parquet_holds(schema: T.StructType) -> bool:
    """Whether Parquet files can hold rows of ``schema`` (not NULL-typed columns nor
    calendar intervals, at any depth)."""
    def holds(dt: T.DataType) -> bool:
        if isinstance(dt, T.StructType):
            return all(holds(f.dataType) for f in dt.fields)
        if isinstance(dt, T.ArrayType):
            return holds(dt.elementType)
        if isinstance(dt, T.MapType):
            return holds(dt.keyType) and holds(dt.valueType)
        return not isinstance(dt, T.NullType | T.CalendarIntervalType)
    return holds(schema)


_INTEGERS = T.ByteType | T.ShortType | T.IntegerType | T.LongType
"""Spark's integer types: a copy arranged by one may be mapped (``_mapped``)."""


def keyable(schema: T.StructType, column: str) -> bool:
    """Whether a batch of ``schema`` can be arranged by ``column`` (of integers or text:
    the values a keyed read asks for are then SQL literals)."""
    return column in schema.names and isinstance(schema[column].dataType,
                                                 _INTEGERS | T.StringType)


@dataclass(eq=False)
class BatchFiles:
    """A batch of ``rows`` update rows held as Parquet files (of ``schema``), in one or
    more copies, each read by a frame, by the key it is arranged by (``copies``; None: as
    Spark computed it; the first written with the batch), and of each key about how many
    distinct values its rows hold (``distinct``, counted as the copy is written). Its files
    stay while the process runs: plans kept to run again may read them after the batch is
    merged away (a temporary state directory is removed when the process exits)."""

    spark: SparkSession
    schema: T.StructType
    rows: int
    directory: str
    copies: dict[str | None, DataFrame] = field(default_factory=dict)
    distinct: dict[str, int] = field(default_factory=dict)
    bounds: dict[str, tuple[object, object]] = field(default_factory=dict)
    """Per key, the least and greatest value its rows hold (counted as its copy is
    written; none when they hold only NULL)."""
    found: tuple[str, pa.Array, pa.Table] | None = None
    """The last keyed read fetched into the driver (``remember``): its key, the values it
    read and the rows it found."""
    groups: dict[str, RowGroups | None] = field(default_factory=dict)
    """Per key, the row groups of the copy arranged by it, as the driver reads them (None:
    it cannot)."""
    mapping: dict[str, Future[MappedCopy | None] | None] = field(default_factory=dict)
    """Per key, the conversion of the copy arranged by it into files the driver maps
    (``mapped_copies``; None: not converted)."""

    @property
    def frame(self) -> DataFrame:
        """The batch's rows (read from its first copy's files)."""
        return next(iter(self.copies.values()))

    def arranged(self, key: str) -> DataFrame:
        """The copy arranged by ``key``, written from the first (one Spark job, two for
        several files) unless there is one."""
        if key not in self.copies:
            self.copies[key], stats = _written(self.spark, self.frame, self.rows,
                                               self.directory, key)
            self.copied(key, stats)
        return self.copies[key]

    def copied(self, key: str, stats: dict[str, object]) -> None:
        """The copy arranged by ``key`` is written: keep what writing it counted
        (``_written``), and begin converting it into mapped files now when it is large
        (``mapped_copies``), so that they are ready by the reads that would use them."""
        self.distinct[key] = int(stats.get("distinct") or 0)  # type: ignore[call-overload]
        if stats.get("least") is not None:
            self.bounds[key] = (stats["least"], stats["greatest"])
        if self.rows >= active().mapped_copy_rows:
            self._driver_groups(key)

    def clipped(self, key: str, values: pa.Array) -> pa.Array:
        """Those of ``values`` some row may hold in ``key``: NULL, and the others between
        the least and greatest it holds."""
        if key not in self.bounds:
            return values
        least, greatest = self.bounds[key]
        inside = pc.and_(pc.greater_equal(values, pa.scalar(least, values.type)),
                         pc.less_equal(values, pa.scalar(greatest, values.type)))
        return values.filter(pc.or_(pc.is_null(values), pc.fill_null(inside, False)))

    def read_by_key(self, key: str, values: pa.Array) -> KeyedPart:
        """A read of the rows whose ``key`` holds one of ``values`` (``KeyedPart``)."""
        wanted = self.clipped(key, values)
        table = self.remembered(key, wanted)
        keys = 0 if table is not None else pc.count_distinct(wanted, mode="all").as_py()
        return KeyedPart(table, wanted, keys)

    def remembered(self, key: str, values: pa.Array) -> pa.Table | None:
        """The rows of a read by ``values`` of ``key`` when the last read fetched
        (``remember``) read all of them, picked in Arrow; else None."""
        if self.found is None or self.found[0] != key:
            return None
        _, read, rows = self.found
        if not pc.all(pc.is_in(values, read, skip_nulls=False)).as_py():
            return None
        return holding(rows, key, values)

    def in_driver(self, key: str, values: pa.Array) -> pa.Table | None:
        """The rows whose ``key`` holds one of ``values``, read by the driver from the copy
        arranged by it (made now if there is none): from its mapped files once they are
        converted (``mapped_copies``; waited for when its row groups are large), else from
        its row groups (``row_groups``); None when the driver cannot read its files."""
        self.arranged(key)
        groups = self._driver_groups(key)
        converted = self.mapping.get(key)
        wait = groups is not None and groups.largest > PAGE_ROWS
        copy = converted.result() if converted is not None and (
            wait or converted.done()) else None
        if copy is not None:
            return copy.read(values)
        return None if groups is None else groups.read(values)

    def _driver_groups(self, key: str) -> RowGroups | None:
        """The row groups of the copy arranged by ``key`` (written), as the driver reads
        them, found once, its conversion into mapped files begun then; None when the
        driver cannot read them."""
        if key not in self.groups:
            groups = self.groups[key] = row_groups(copy_path(self.directory, key), key,
                                                   self.schema)
            if groups is not None:  # large row groups: converted whatever its rows
                least = 0 if groups.largest > PAGE_ROWS else active().mapped_copy_rows
                self.mapping[key] = mapping(groups, self.rows, least)
        return self.groups[key]

    def remember(self, key: str, values: pa.Array, rows: pa.Table) -> None:
        """Keep ``rows``, what a read by ``values`` of ``key`` fetched into the driver, in
        place of the last (a read of a subset of them picks them in Arrow, ``remembered``):
        the views stepping after a write look up the keys its check read (TPC-H: a
        delete's orders, whose lineitems the check and three views read). Up to
        ``slot_max_rows`` rows."""
        if rows.num_rows <= active().slot_max_rows:
            self.found = (key, values, rows)

    def expected_rows(self, key: str, values: int) -> int:
        """About how many rows a read of ``values`` distinct values of ``key`` finds: as
        many times the rows the batch holds per value of ``key`` (a copy arranged by it
        counted them), else a page (``PAGE_ROWS``) per value; at most the batch."""
        per_value = self.rows / max(self.distinct[key], 1) if key in self.distinct \
            else PAGE_ROWS
        return min(self.rows, math.ceil(values * per_value))

    def matching(self, key: str, values: pa.Array) -> DataFrame:
        """The rows whose ``key`` holds one of ``values`` (NULL among them included), read
        from the copy arranged by ``key`` (made now if there is none): of its pages, only
        those whose key range may hold one of them."""
        copy = self.arranged(key)
        test = holding_test(key, values)
        return copy.limit(0) if test is None else copy.where(test)


def written(df: DataFrame, key: str | None = None, most: int | None = None
            ) -> BatchFiles | None:
    """``df``'s rows written as a batch's files (one Spark job), arranged by ``key`` when it
    is ``keyable`` and the batch's size is bounded (by ``most`` rows: its files are
    counted by it), else as they are; None when it holds no rows."""
    spark = df.sparkSession
    directory = f"{state_directory(spark).rstrip('/')}/{uuid.uuid4().hex}"
    observation = Observation("rows")
    counted = df.observe(observation, F.count(F.lit(1)).alias("rows"))
    arranged_by = key if key is not None and most is not None and keyable(df.schema, key) \
        else None
    first, stats = _written(spark, counted, most, directory, arranged_by)
    rows = int(observation.get.get("rows", 0))
    if not rows:
        _removed(directory)
        return None
    files = BatchFiles(spark, df.schema, rows, directory, {arranged_by: first})
    if arranged_by is not None:
        files.copied(arranged_by, stats)
    return files


def _written(spark: SparkSession, df: DataFrame, rows: int | None, directory: str,
             key: str | None) -> tuple[DataFrame, dict[str, object]]:
    """The files of a copy of ``df`` (``rows`` update rows, when known) arranged by ``key``
    (None: as they are), written under ``directory``, and what was counted of ``key`` while
    writing them: about how many ``distinct`` values it holds, the ``least`` and the
    ``greatest`` (nothing for no key). A copy arranged by key that the driver will read by
    row groups is compressed by LZ4, which decodes as fast as no compression (500 of 1M
    W1 orders' row groups: 38 ms, uncompressed 96 ms, snappy 52 ms; pyarrow, one process)
    for 0.6x the bytes; one it will map (``_mapped``) by snappy, in row groups of
    ``MAPPED_GROUP_ROWS``."""
    path = copy_path(directory, key)
    observation = Observation("key")
    if key is None:
        df.write.options(**UNCHECKED, **ENCODED).parquet(path)
    else:
        files = -(-(rows or 1) // active().file_rows)
        counted = df.observe(observation, F.approx_count_distinct(key).alias("distinct"),
                             F.min(key).alias("least"), F.max(key).alias("greatest"))
        mapped = _mapped(directory, df.schema, key, rows)
        (counted.repartitionByRange(files, F.col(key)).sortWithinPartitions(key).write
         .options(**UNCHECKED, **ENCODED)
         .option("parquet.block.row.count.limit", MAPPED_GROUP_ROWS if mapped else PAGE_ROWS)
         .option("parquet.page.row.count.limit", PAGE_ROWS)
         .option("compression", "snappy" if mapped else "lz4_raw").parquet(path))
    stats = {} if key is None else dict(observation.get)
    return spark.read.schema(df.schema).options(**UNCHECKED).parquet(path), stats


def _mapped(directory: str, schema: T.StructType, key: str, rows: int | None) -> bool:
    """Whether the driver will read a copy of ``rows`` rows (when known) arranged by
    ``key`` under ``directory`` from its mapped files (``mapped_copies``): of at least
    ``mapped_copy_rows`` rows, arranged by integers, on the driver's file system."""
    return (rows is not None and rows >= active().mapped_copy_rows
            and isinstance(schema[key].dataType, _INTEGERS)
            and urlparse(directory).scheme in ("", "file"))


def copy_path(directory: str, key: str | None) -> str:
    """Where the files of a batch's copy arranged by ``key`` (None: as computed) are."""
    return f"{directory}/{'rows' if key is None else 'by-' + key}"


def holding_test(column: str, values: pa.Array | pa.ChunkedArray) -> str | None:
    """SQL text testing that ``column`` holds one of ``values`` (integers or strings, NULL
    among them included): one JVM call for any number of values, where a Column per value
    costs a call each; None when there are no values."""
    wanted = pc.unique(values.drop_null()).to_pylist()
    tests = [f"{column} IN ({', '.join(map(_sql_literal, wanted))})"] if wanted else []
    if values.null_count:
        tests.append(f"{column} IS NULL")
    return " OR ".join(tests) if tests else None


def _sql_literal(value: int | str) -> str:
    """``value`` (an integer or a string) as a Spark SQL literal."""
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _removed(directory: str) -> None:
    """Remove the files of a batch no plan reads (on a local file system; elsewhere they stay
    until the state directory is cleaned)."""
    parsed = urlparse(directory)
    if parsed.scheme in ("", "file"):
        shutil.rmtree(parsed.path if parsed.scheme else directory, ignore_errors=True)
