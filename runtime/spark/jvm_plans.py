"""DataFrame operations over column lists made once.

In a classic session every DataFrame method converts its column arguments into JVM objects
one call at a time: a select of k named columns costs about 3k JVM calls, a
``groupBy(...).agg(...)`` over three names about thirty (bench's py4j counter measures it).
A dataflow's operators select, group and aggregate the same columns every step, so a
``Columns`` holds its list made once together with its JVM ``Seq``, and ``select`` and
``aggregate`` over it cost one or two calls whatever the number of columns. Spark Connect
sessions build plans without JVM calls; there the plain DataFrame methods run.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from matview.runtime.lowering.types import col
from matview.runtime.settings import active
from matview.runtime.spark.arrow_frames import scratch_file
from matview.runtime.spark.jvm_objects import java_class, jvm_helper, made_once
from matview.runtime.spark.unsafe_rows import send
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.utils import is_remote


@dataclass(frozen=True)
class Columns:
    """A fixed list of columns; ``seq`` is its JVM ``Seq[Column]`` in a classic session."""

    columns: tuple[Column, ...]
    seq: Any = None


def columns(spark: SparkSession, *items: Column | str) -> Columns:
    """``items`` (columns, or names of columns) as a ``Columns`` of ``spark``'s kind."""
    made = tuple(col(c) if isinstance(c, str) else c for c in items)
    if is_remote():
        return Columns(made)
    from pyspark.sql.classic.column import _to_java_column, _to_seq

    return Columns(made, _to_seq(spark.sparkContext, made, _to_java_column))


def select(df: DataFrame, cols: Columns) -> DataFrame:
    """``df.select(*cols)``."""
    if cols.seq is None:
        return df.select(*cols.columns)
    return DataFrame(df._jdf.select(cols.seq), df.sparkSession)


def aggregate(df: DataFrame, keys: Columns, first: Column, rest: Columns) -> DataFrame:
    """``df.groupBy(*keys).agg(first, *rest)`` (Spark's ``agg`` takes one aggregate, then
    the others)."""
    if keys.seq is None or rest.seq is None:
        return df.groupBy(*keys.columns).agg(first, *rest.columns)
    grouped = df._jdf.groupBy(keys.seq)
    return DataFrame(grouped.agg(first._jc, rest.seq), df.sparkSession)


def to_arrow(df: DataFrame, nullable: bool = False) -> pa.Table:
    """``df.toArrow()``: its rows collected (in one Spark job, or in the driver for a kept
    plan without exchanges, below). In a classic session without
    the SQL settings PySpark reads first (matview's sessions keep its defaults: no large
    variable-width types, no self-destruct) and the call site it records, about a dozen
    JVM calls fewer per collect. A frame whose plan can run again (over local rows only:
    ``ArrowCollect.prepare``) is planned once, and each of its collects runs that plan
    again in one JVM call, in the driver when it has no exchange (its rows are there): a W4
    round's collect as a new query cost 0.07 s, a copy of its physical plan 0.045 s, its
    RDD run again as a job 0.02 s (0.03-0.07 s with the cores busy), computed in the driver
    0.015 s (0.02 s busy). The metrics such a run observes complete the session's
    observations and are read by ``row_counts`` from its query.
    ``nullable``: every field of the result's schema, nested ones too, may hold NULLs (a
    NULL struct's fields are NULL though Spark's schema may say they cannot be)."""
    from pyspark.sql.pandas.types import to_arrow_schema

    if is_remote():
        # the rows as the server sends them: the client's toArrow casts them to Spark's
        # schema first, which fails on a NULL struct whose fields Spark says are not NULL
        schema = to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True,
                                 timezone="UTC")
        table, _ = df._to_table()  # type: ignore[attr-defined]
        return table.cast(_nullable(schema) if nullable else schema)
    from pyspark.errors.exceptions.captured import unwrap_spark_exception
    from pyspark.sql.pandas.serializers import ArrowCollectSerializer
    from pyspark.util import _load_from_socket

    spark = df.sparkSession
    schema = to_arrow_schema(df.schema, error_on_duplicated_field_names_in_struct=True,
                             timezone="UTC")
    if nullable:
        schema = _nullable(schema)
    send(spark)  # slots' rows waiting to be sent (``unsafe_rows.sent_together``)
    collect = jvm_helper(spark, "ArrowCollect")
    prepared = _prepare(df)
    if prepared:  # its physical plan run again, over the rows its slots hold now
        with scratch_file(spark) as path:
            with unwrap_spark_exception():
                observed = collect.run(prepared, path)
            with pa.OSFile(path) as source:
                table = pa.ipc.open_stream(source).read_all()
        if observed is not None:
            row_counts.read(spark, observed)
        return table.cast(schema) if table.num_rows else schema.empty_table()
    # a new query over the analysed plan (not analysed again): Spark caches a query's
    # physical plan with the rows of its local relations, and a plan over slots is run
    # again with other rows bound (``runtime.templates``)
    port, secret, started = collect.start(df._jdf).split()
    try:
        with _load_from_socket((int(port), secret), ArrowCollectSerializer()) as stream:
            batches = list(stream)
    finally:
        with unwrap_spark_exception():
            query = collect.finish(int(started))  # the job's failure, raised as PySpark does
    row_counts.read(spark, query)
    table = pa.Table.from_batches(batches) if batches else schema.empty_table()
    return table.cast(schema)


_prepared: weakref.WeakKeyDictionary[DataFrame, Any] = weakref.WeakKeyDictionary()
"""Per frame collected in a classic session, its plan prepared to run again
(``ArrowCollect.prepare``), or False when it cannot be: a frame collected again (a plan over
slots, reused by a step of the same shape: ``runtime.templates``) is not planned again."""

_here: weakref.WeakKeyDictionary[DataFrame, bool] = weakref.WeakKeyDictionary()
"""Per frame prepared, whether its kept plan runs in the driver (``computed_in_driver``)."""


def _prepare(df: DataFrame) -> Any:
    """``df``'s plan prepared to run again (``_prepared``), prepared at its first collect."""
    from pyspark.errors.exceptions.captured import unwrap_spark_exception

    if df not in _prepared:
        with unwrap_spark_exception():  # a failure planning it (folding constants)
            prepared = jvm_helper(df.sparkSession, "ArrowCollect").prepare(
                df._jdf, active().driver_plan_rows) or False
        _prepared[df] = prepared
        _here[df] = bool(prepared) and prepared[2] is not None
    return _prepared[df]


def computed_in_driver(df: DataFrame) -> bool:
    """Whether a collect of ``df`` (``to_arrow``) runs its kept plan in the driver, with no
    job (preparing it now when it is not yet). Never in Spark Connect sessions."""
    if is_remote():
        return False
    _prepare(df)
    return _here[df]


class RowCounts:
    """Row counts of frames observed by name (``DataFrame.observe(name, ...)``), read from
    the job that computed them: a frame observed once and reused by later steps' plans
    cannot carry PySpark's single-use ``Observation``. Each name waits for a count while its
    ``owner`` lives and has not taken it: a dataflow dropped with a step staged leaves no
    name for later collects to look up."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[weakref.ref[Any], int | None]] = {}

    def expect(self, name: str, owner: object) -> None:
        self.pending[name] = (weakref.ref(owner), None)

    def read(self, spark: SparkSession, query: Any) -> None:
        """Take the counts of the pending names from ``query`` (a JVM Dataset of ``spark``),
        which ran, in one JVM call (``ObservedCounts.java``)."""
        for name in [n for n, (owner, _) in self.pending.items() if owner() is None]:
            del self.pending[name]
        waiting = [n for n, (_, count) in self.pending.items() if count is None]
        if not waiting:
            return
        counts = jvm_helper(spark, "ObservedCounts").counts(
            query, "\n".join(waiting)).split(" ")
        for name, count in zip(waiting, counts, strict=True):
            if count != "-":
                self.pending[name] = (self.pending[name][0], int(count))

    def take(self, name: str) -> int:
        """The count of ``name`` (0 when no job computed it: Spark's optimizer left its
        frame out) and forget it."""
        return self.pending.pop(name, (None, None))[1] or 0


row_counts = RowCounts()


def of_rows(spark: SparkSession) -> Any:
    """``Dataset.ofRows`` (a query over a logical plan), looked up once per Spark context."""
    return made_once(spark, "Dataset.ofRows",
                     lambda: java_class(spark, "org.apache.spark.sql.classic.Dataset").ofRows)


def checkpointed(df: DataFrame) -> DataFrame:
    """``df.localCheckpoint(eager=True)``: its rows computed once and kept in the executors,
    read by plans of ``df``'s session. Spark Connect's client binds the checkpointed frame
    to the client's active session, not ``df``'s (``proto_to_remote_cached_dataframe``): in
    a session of matview's own beside the user's, joining it with the session's other
    frames then fails (``SESSION_NOT_SAME``) and reading it finds no such relation in the
    active session; the frame is bound back to ``df``'s session, which holds it (and
    releases it when the frame is gone)."""
    leaf = df.localCheckpoint(eager=True)
    if is_remote() and leaf.sparkSession is not df.sparkSession:
        leaf._plan._spark_session = df.sparkSession  # type: ignore[attr-defined]
        leaf._session = df.sparkSession  # type: ignore[attr-defined]
    return leaf


def _nullable(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field, nested ones too, nullable."""
    def loose(t: pa.DataType) -> pa.DataType:
        if isinstance(t, pa.StructType):
            return pa.struct([t.field(i).with_type(loose(t.field(i).type)).with_nullable(True)
                              for i in range(t.num_fields)])
        return t

    return pa.schema([f.with_type(loose(f.type)).with_nullable(True) for f in schema])


def hint(df: DataFrame, name: str) -> DataFrame:
    """``df.hint(name)`` (a hint without parameters)."""
    if is_remote():
        return df.hint(name)
    spark = df.sparkSession
    none = made_once(spark, "no columns", lambda: columns(spark))
    return DataFrame(df._jdf.hint(name, none.seq), spark)
