"""Batches held in the executors: Parquet files in the state directory, arranged by key.

A batch too large for the driver is written by Spark as Parquet files under the state
directory (``place``: ``matview.connect(state_dir=...)``, a temporary directory by default),
and read back from them: the driver holds only their path, and an executor's loss loses
nothing (the tasks reading a lost executor's share run again from the files), where a
``localCheckpoint``'s blocks die with their executor (``bench/state_store.py`` measured the
ways Spark can hold a batch: ``bench/README.md``).

A batch read by the values of an integer column (a join's lookup of a delta's keys, a write's
check of the rows it retracts) is kept as a copy arranged by that column, made once (one
Spark job) and shared by every reader of it: its rows spread over ``buckets`` directories by
``pmod(key, buckets)``, sorted by the key within each, in row groups of about a megabyte. A
read of some values then lists only their buckets' directories (Spark prunes the others by
their name) and, within them, Parquet skips the row groups whose key statistics exclude
every value: a lookup costs in proportion to the keys it asks for, not to the batch.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import uuid
import weakref
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.settings import active
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

BUCKET = "_bucket"
"""The column (a directory level of a keyed copy) holding a row's bucket."""

ROW_GROUP_BYTES = 1 << 20
"""Bytes of a Parquet row group of a keyed copy: the unit a lookup reads or skips."""

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


_temporary_dirs: list[str] = []


def _temporary() -> str:
    if not _temporary_dirs:
        made = tempfile.mkdtemp(prefix="matview-state-")
        atexit.register(shutil.rmtree, made, True)
        _temporary_dirs.append(made)
    return _temporary_dirs[0]


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


def keyable(schema: T.StructType, column: str) -> bool:
    """Whether a batch of ``schema`` can be arranged by ``column`` (a column of integers)."""
    return column in schema.names and isinstance(
        schema[column].dataType, T.ByteType | T.ShortType | T.IntegerType | T.LongType)


@dataclass(frozen=True)
class Copy:
    """The files of one copy of a batch: arranged by ``key`` in ``buckets`` directories, or
    (``key`` None) as Spark computed it. ``frame`` reads them, bucket column included."""

    path: str
    key: str | None
    buckets: int
    frame: DataFrame


@dataclass(eq=False)
class BatchFiles:
    """A batch of ``rows`` update rows held as Parquet files (of ``schema``), in one or
    more copies by key (``copies``, the first written with the batch). Its files stay while
    the process runs: plans kept to run again may read them after the batch is merged away
    (a temporary state directory is removed when the process exits)."""

    spark: SparkSession
    schema: T.StructType
    rows: int
    directory: str
    copies: dict[str | None, Copy] = field(default_factory=dict)

    @property
    def frame(self) -> DataFrame:
        """The batch's rows (read from its first copy's files)."""
        return next(iter(self.copies.values())).frame.select(*self.schema.names)

    def arranged(self, key: str) -> Copy:
        """The copy arranged by ``key``, written from the first (one Spark job) unless there
        is one."""
        if key not in self.copies:
            self.copies[key] = _written(self.spark, self.frame, self.rows, self.directory, key)
        return self.copies[key]

    def matching(self, key: str, values: pa.Array) -> DataFrame:
        """The rows whose ``key`` holds one of ``values`` (NULL among them included), read
        from the copy arranged by ``key`` (made now if there is none): only the buckets of
        those values, and of their row groups those whose statistics may hold one."""
        copy = self.arranged(key)
        wanted = pc.unique(values.drop_null())
        buckets = pc.unique(pc.cast(wanted, pa.int64()).to_numpy() % copy.buckets
                            if len(wanted) else pa.array([], pa.int64()))
        tests = [f"{BUCKET} IN ({', '.join(map(str, buckets.tolist()))})"] if len(buckets) \
            else []
        keys = [f"{key} IN ({', '.join(map(str, wanted.to_pylist()))})"] if len(wanted) else []
        if values.null_count:
            tests.append(f"{BUCKET} IS NULL")
            keys.append(f"{key} IS NULL")
        if not tests:
            return self.frame.limit(0)
        return copy.frame.where(" OR ".join(tests)).where(" OR ".join(keys)).select(
            *self.schema.names)


def written(df: DataFrame, key: str | None = None, most: int | None = None
            ) -> BatchFiles | None:
    """``df``'s rows written as a batch's files (one Spark job), arranged by ``key`` when it
    is a column of integers and the batch's size is bounded (by ``most`` rows: its buckets
    are chosen by it), else as they are; None when it holds no rows."""
    spark = df.sparkSession
    directory = f"{state_directory(spark).rstrip('/')}/{uuid.uuid4().hex}"
    observation = Observation("rows")
    counted = df.observe(observation, F.count(F.lit(1)).alias("rows"))
    arranged_by = key if key is not None and most is not None and keyable(df.schema, key) \
        else None
    first = _written(spark, counted, most, directory, arranged_by)
    rows = int(observation.get.get("rows", 0))
    if not rows:
        _removed(directory)
        return None
    return BatchFiles(spark, df.schema, rows, directory, {arranged_by: first})


def _written(spark: SparkSession, df: DataFrame, rows: int | None, directory: str,
             key: str | None) -> Copy:
    """The files of a copy of ``df`` (``rows`` update rows, when known) arranged by ``key``
    (None: as they are), written under ``directory``."""
    path = f"{directory}/{'rows' if key is None else 'by-' + key}"
    if key is None:
        df.write.parquet(path)
        return Copy(path, None, 1, spark.read.schema(df.schema).parquet(path))
    buckets = bucket_count(rows)
    bucket = F.pmod(F.col(key), F.lit(buckets)).cast("int").alias(BUCKET)
    (df.select(*df.columns, bucket).repartition(buckets, BUCKET)
     .sortWithinPartitions(BUCKET, key)
     .write.option("parquet.block.size", ROW_GROUP_BYTES).partitionBy(BUCKET).parquet(path))
    schema = T.StructType([*df.schema.fields, T.StructField(BUCKET, T.IntegerType())])
    return Copy(path, key, buckets, spark.read.schema(schema).parquet(path))


def bucket_count(rows: int | None) -> int:
    """The buckets a copy of ``rows`` update rows is arranged in: a power of two holding
    about ``bucket_rows`` rows each (a setting), at most ``max_buckets``; unknown sizes
    get the most."""
    settings = active()
    if rows is None:
        return settings.max_buckets
    buckets = 1
    while buckets < settings.max_buckets and buckets * settings.bucket_rows < rows:
        buckets *= 2
    return buckets


def _removed(directory: str) -> None:
    """Remove the files of a batch no plan reads (on a local file system; elsewhere they stay
    until the state directory is cleaned)."""
    parsed = urlparse(directory)
    if parsed.scheme in ("", "file"):
        shutil.rmtree(parsed.path if parsed.scheme else directory, ignore_errors=True)
