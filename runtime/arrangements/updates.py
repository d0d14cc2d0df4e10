"""Update batches on Spark: DataFrames of columns ``c0..c{n-1}``, ``_time``, ``_diff``.

This module owns what every operator does to batches besides consolidating them
(``arrangements.consolidation``): materializing them into leaves (plans with no lineage),
which is where lineage is cut, and uniting, joining and sizing them.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
from matview.runtime.arrangements.batch_files import BatchFiles, parquet_holds, written
from matview.runtime.lowering.types import col, column_names
from matview.runtime.settings import active
from matview.runtime.spark.arrow_frames import arrow_frame
from matview.runtime.spark.jvm_objects import made_once
from matview.runtime.spark.jvm_plans import (
    aggregate,
    checkpointed,
    columns,
    hint,
    select,
    to_arrow,
)
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.utils import is_remote

TIME = "_time"
DIFF = "_diff"
ROUND = "_round"
"""Inside a recursive query's loop, the round of an update's time (transaction, round)
(``runtime.recursion``); outside a loop, updates have no round."""




def data_columns(df: DataFrame) -> list[str]:
    """The data column names of update batch ``df`` (all but ``_time`` and ``_diff``)."""
    return [c for c in df.columns if c not in (TIME, DIFF)]


def cols(df: DataFrame) -> list[Column]:
    return [col(c) for c in data_columns(df)]


def advance_times(df: DataFrame, since: int) -> DataFrame:
    """Advance every time before ``since`` to ``since`` (compaction; seed 004)."""
    return df.withColumn(TIME, F.greatest(col(TIME), F.lit(since).cast("bigint")))


def at_time(table: pa.Table, time: int) -> pa.Table:
    """Update rows ``table``, every one at ``time`` (a collapsed step's: its times, none
    later, advanced to it), in Arrow."""
    return table.set_column(table.schema.get_field_index(TIME), TIME,
                            pa.repeat(pa.scalar(time, table.schema.field(TIME).type),
                                      table.num_rows))


def renamed(df: DataFrame, arity: int) -> DataFrame:
    """``df``'s first ``arity`` columns renamed positionally to ``c0..``, then time, diff."""
    names = column_names(arity)
    return df.select(*[col(old).alias(new) for old, new in zip(df.columns[:arity], names)],
                     col(TIME), col(DIFF))


def union_all(frames: Sequence[DataFrame]) -> DataFrame | None:
    """The union (by column name) of ``frames``; None when there are none."""
    return functools.reduce(DataFrame.unionByName, frames) if frames else None




def key_match(left: Sequence[str], right: Sequence[str]) -> Column:
    """Null-safe equality of key columns (GROUP BY and PARTITION BY put NULLs in one
    group)."""
    return functools.reduce(Column.__and__,
                            [col(a).eqNullSafe(col(b)) for a, b in zip(left, right)],
                            F.lit(True))


_ROWS_BOUND = (1 << 31) - 1
"""The most rows a Spark limit takes: a small step's lookup bounds its left side's estimated
size with it (``lookup``)."""


def lookup(left: DataFrame, right: DataFrame, on: Column, how: str, small: bool,
           build: str = "right", large: bool = False) -> DataFrame:
    """``left`` joined with ``right``. In a small step both sides are read in one partition
    and the ``build`` side is hashed, so the join needs neither a shuffle nor a broadcast
    (a separate Spark job per broadcast side): a whole small step runs as one job of one
    task (bench/README.md has the measurement). When the other side is ``large`` (more than
    the setting ``large_lookup_rows``), the ``build`` side is broadcast instead and the
    other scanned in all its partitions.

    Spark keeps the two sides in their one partition only while its estimate of each
    side's size is at most ``spark.sql.maxSinglePartitionBytes``, and it estimates a
    join's size as the product of its sides': from a delta path's fourth lookup on (TPC-H
    Q5's) the product passed even the largest setting and every later lookup shuffled both
    its sides, a plan that cannot be kept (``ArrowCollect``). In a small step the left side
    is therefore cut at ``_ROWS_BOUND`` rows, which it never holds: the estimate of a limit is
    its rows times a row's size."""
    if small and large:
        if build == "left":
            return F.broadcast(left).join(right, on, how)
        return left.join(F.broadcast(right), on, how)
    if small:
        left, right = left.limit(_ROWS_BOUND).coalesce(1), right.coalesce(1)
        if build == "left":
            left = hint(left, "shuffle_hash")
        else:
            right = hint(right, "shuffle_hash")
    return left.join(right, on, how)


@functools.cache
def _row_count(remote: bool) -> Column:
    return F.count(F.lit(1)).alias("rows")


def row_count() -> Column:
    """The aggregate observing a batch's number of update rows (made once)."""
    return _row_count(is_remote())


def default_size(dt: T.DataType) -> int:
    """Spark's ``DataType.defaultSize``: the size in bytes it assumes for a value of ``dt``
    when it estimates plan sizes (strings 20, decimals 8 or 16, arrays one element...)."""
    if isinstance(dt, T.StructType):
        return sum(default_size(f.dataType) for f in dt.fields)
    if isinstance(dt, T.ArrayType):
        return default_size(dt.elementType)
    if isinstance(dt, T.MapType):
        return default_size(dt.keyType) + default_size(dt.valueType)
    if isinstance(dt, T.DecimalType):
        return 8 if dt.precision <= 18 else 16
    if isinstance(dt, T.StringType | T.VarcharType | T.CharType):
        return 20
    sizes: list[tuple[type, int]] = [
        (T.BooleanType, 1), (T.ByteType, 1), (T.NullType, 1), (T.ShortType, 2),
        (T.IntegerType, 4), (T.FloatType, 4), (T.DateType, 4), (T.YearMonthIntervalType, 4),
        (T.BinaryType, 100), (T.CalendarIntervalType, 16)]
    return next((size for kind, size in sizes if isinstance(dt, kind)), 8)


@dataclass(eq=False)
class Leaf:
    """A materialized batch of ``rows`` update rows: ``frame`` is a leaf plan (local rows or
    a checkpoint); ``table`` holds the rows as Arrow when they are kept in the driver, and
    then the plan is made from it (on ``spark``) only when first asked for. ``exact`` is
    False when ``rows`` is only an upper bound (a filtered plan over a batch of that size)."""

    frame: DataFrame | None
    rows: int
    table: pa.Table | None = None
    spark: SparkSession | None = None
    exact: bool = True
    copy: pa.Table | None = None
    """The rows of a batch held in Spark, kept in the driver too, as Arrow, where a table's
    trace checks writes against them and a view's trace is read without a Spark job
    (``Trace.copy_rows``)."""
    files: BatchFiles | None = None
    """The Parquet files holding a batch held in Spark (``frame`` reads them), whose copies
    arranged by key are read by key (``arrangements.batch_files``); None for rows held in
    the driver or in a checkpoint."""

    @property
    def df(self) -> DataFrame:
        if self.frame is None:
            assert self.table is not None and self.spark is not None
            self.frame = arrow_frame(self.spark, self.table)
        return self.frame

    @property
    def in_driver(self) -> pa.Table | None:
        """The rows as Arrow when the driver holds them: the batch, or its ``copy``."""
        return self.table if self.table is not None else self.copy

    @property
    def bytes(self) -> int | None:
        """The Arrow size of rows kept in the driver (the batch, or its ``copy``)."""
        kept = self.in_driver
        return None if kept is None else kept.nbytes

    def size(self) -> int:
        """Bytes held: the exact Arrow size of rows kept in the driver; for rows held in
        Spark an estimate, ``rows`` times Spark's default size of a row of the schema (no
        Spark job: the schema is the plan's)."""
        if self.table is not None:
            return self.table.nbytes
        return self.rows * default_size(self.df.schema) if self.rows else 0


def normalized(table: pa.Table) -> pa.Table:
    """``table`` with every field nullable and timestamps without a zone (Spark hands out
    its UTC timestamps zoned, writes arrive without one), so batches of a trace concatenate."""
    fields = []
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.tz is not None:
            f = f.with_type(pa.timestamp(f.type.unit))
        fields.append(f.with_nullable(True))
    return table.cast(pa.schema(fields))


def stored(spark: SparkSession, table: pa.Table, local_rows: int | None = None,
           key: str | None = None) -> Leaf:
    """Update rows held in the driver as a leaf: a local relation when at most
    ``local_rows`` (and free of arrays), else ``held`` in the executors (arranged by
    ``key``), the Arrow rows kept as the leaf's ``copy`` (a trace keeping no copies drops
    it). The rows are kept in one chunk: a read by key takes rows across chunks some twenty
    times slower."""
    nested = any(pa.types.is_nested(f.type) for f in table.schema)
    if table.num_rows > (active().driver_batch_rows if local_rows is None else local_rows) \
            or nested:
        # Arrow cannot group by nested values (arrays), so their consolidation runs in Spark
        leaf = held(arrow_frame(spark, table), key, table.num_rows)
        assert leaf is not None
        return dataclasses.replace(
            leaf, copy=None if nested else normalized(table).combine_chunks())
    return Leaf(None, table.num_rows, normalized(table).combine_chunks(), spark)


def stored_or_none(spark: SparkSession, table: pa.Table, local_rows: int | None = None,
                   key: str | None = None) -> Leaf | None:
    """``table`` as a leaf (``stored``); None when it holds no rows."""
    return stored(spark, table, local_rows, key) if table.num_rows else None


def held(df: DataFrame, key: str | None = None, most: int | None = None) -> Leaf | None:
    """``df`` computed once (one Spark job) into a leaf held in the executors, None when
    empty: Parquet files in the state directory, arranged by ``key`` when the batch's size
    is bounded (by ``most`` rows; ``batch_files.written``); rows Parquet cannot hold
    (NULL-typed columns, calendar intervals) are checkpointed, which an executor's loss
    loses."""
    if parquet_holds(df.schema):
        files = written(df, key, most)
        return None if files is None else Leaf(files.frame, files.rows, files=files)
    leaf = checkpointed(df)
    rows = leaf.count()
    return Leaf(leaf, rows) if rows else None


def materialize(spark: SparkSession, df: DataFrame, small: bool, key: str | None = None,
                most: int | None = None) -> Leaf | None:
    """Compute ``df`` once and return it as a leaf; ``None`` when it is empty.

    ``small`` deltas go through Arrow (one job); others are ``held`` in the executors
    (arranged by ``key`` when ``most`` bounds their size), and when they turn out to hold
    at most ``fetched_batch_rows`` rows (a view's first contents, say) fetched into the
    driver (one more job), where later steps read them without a Spark job.
    """
    if small:
        table = to_arrow(df)
        return stored_or_none(spark, table, key=key)
    leaf = held(df, key, most)
    if leaf is not None and leaf.rows <= active().fetched_batch_rows \
            and not nested(leaf.df.schema):
        return stored(spark, to_arrow(leaf.df), key=key)
    return leaf


def nested(schema: T.StructType) -> bool:
    """Whether rows of ``schema`` hold nested values (arrays, maps, structs), which Arrow
    cannot group by: their batches are consolidated in Spark, not copied to the driver."""
    return any(isinstance(f.dataType, T.ArrayType | T.MapType | T.StructType) for f in schema)


def positive_rows(df: DataFrame) -> DataFrame:
    """The rows update batch ``df`` holds with positive multiplicity once consolidated over
    all times, each once (a lazy plan)."""
    spark, names = df.sparkSession, tuple(data_columns(df))
    keys, total, none, held, shown = made_once(spark, ("any_row", names), lambda: (
        columns(spark, *names), F.sum(DIFF).alias(DIFF), columns(spark), col(DIFF) > 0,
        columns(spark, *names)))
    return select(aggregate(df, keys, total, none).where(held), shown)


def any_row(df: DataFrame) -> tuple[object, ...] | None:
    """A row that update batch ``df`` holds with positive multiplicity once consolidated
    over all times (one Spark job), or None."""
    return first_row(positive_rows(df))


def first_row(df: DataFrame) -> tuple[object, ...] | None:
    """The first row of ``df`` (one Spark job), or None when it has none."""
    found = to_arrow(df.limit(1))
    return tuple(found.slice(0, 1).to_pylist()[0].values()) if found.num_rows else None
