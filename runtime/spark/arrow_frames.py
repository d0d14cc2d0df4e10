"""Arrow tables held in the driver as Spark DataFrames of local rows.

``spark.createDataFrame(table)`` makes about 38 JVM calls for any table: it reads eight SQL
settings, looks its JVM classes and methods up by reflection and reads the schema back
item by item. A step turns several driver-held batches into plans (the new writes, small
state batches), so ``arrow_frame`` does the same with two calls: the Arrow stream written
to a file (as PySpark does), read by the JVM and made a DataFrame with the JVM methods
looked up once per Spark context. matview's sessions keep their time zone at UTC
(``runtime.session``), so a timestamp without a zone is one in UTC, which is what PySpark
makes of it there too. Spark Connect sessions send the table as it is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
from matview.runtime.settings import active
from matview.runtime.spark.jvm_objects import java_class, made_once
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.serializers import ArrowStreamSerializer
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType
from pyspark.sql.utils import is_remote


def arrow_frame(spark: SparkSession, table: pa.Table) -> DataFrame:
    """``table`` as a DataFrame of local rows on ``spark`` (what ``createDataFrame`` makes)."""
    if is_remote():
        return spark.createDataFrame(table)
    read, to_frame = _jvm_methods(spark)
    with arrow_file(spark, table) as (path, schema):
        batches = read(path)
    return DataFrame(to_frame(batches, schema.json(), spark._jsparkSession), spark)


@contextmanager
def arrow_file(spark: SparkSession, table: pa.Table) -> Iterator[tuple[str, StructType]]:
    """``table`` written to an Arrow stream file the driver's JVM reads (removed after),
    as its Spark schema's types: the file's path and that schema. Its empty record batches
    are left out: Spark's reader of such a file's rows (``ArrowConverters.fromBatchIterator``,
    which ``SlotRows.read`` and ``toDataFrame`` use) ends at the first empty batch, dropping
    the rows after it, and a table put together from several reads (a keyed read's batches,
    some of which matched nothing) has empty chunks."""
    schema = from_arrow_schema(table.schema, prefer_timestamp_ntz=False)
    table = table.cast(to_arrow_schema(schema, timezone="UTC"))
    with scratch_file(spark) as path:
        with open(path, "wb") as out:
            batches = [b for b in table.to_batches(max_chunksize=active().arrow_batch_rows)
                       if b.num_rows]
            ArrowStreamSerializer().dump_stream(batches, out)
        yield path, schema


@contextmanager
def scratch_file(spark: SparkSession) -> Iterator[str]:
    """The path of a new empty file in the Spark context's scratch directory, removed
    after."""
    with tempfile.NamedTemporaryFile(delete=False, dir=spark.sparkContext._temp_dir) as out:
        pass
    try:
        yield out.name
    finally:
        os.unlink(out.name)


def _jvm_methods(spark: SparkSession) -> tuple[Any, Any]:
    """The JVM methods reading an Arrow stream file and making it a DataFrame."""
    def made() -> tuple[Any, Any]:
        utils = java_class(spark, "org.apache.spark.sql.api.python.PythonSQLUtils")
        return utils.readArrowStreamFromFile, utils.toDataFrame

    return made_once(spark, "arrow frame methods", made)
