"""Plans built once: a small step of the same shape as the one before reuses its Spark plans,
with the step's batches bound into placeholder leaves.

Building a plan from Python costs a JVM call per DataFrame method, and in a classic session
Spark analyses the whole plan again at each call: W1's step of about 40 calls spent 0.15-0.26 s
there, more than its one Spark job. The driver-held batches a step reads (its input changes,
the history read by key, a Reduce's state; a few keys' rows of batches held in files,
fetched first, ``operators.get.fetched``) enter its plans through ``Slot``s, placeholder leaves
of fixed columns whose rows each step replaces; an operator builds its plans over them through
``Operator.planned``, which returns the plans built the last time when their inputs are the
same objects. A step whose inputs keep their shape so makes no DataFrame call at all, and its
one job runs the plans of the first such step over the rows now bound: a frame collected
again runs the physical plan planned the first time again (``jvm_plans.to_arrow``; computed
in the driver, where its rows are, when it has no exchange), and the slots' rows enter it
at each run, as the optimizer was kept from folding them into the
plan and ``bind`` overwrites the rows themselves, which the plan shares.

A plan over slots reads whatever they hold when its job runs, so slots are bound only in a
small step whose results all come back from the refresh's one job (``StepContext.job``) as
batches in the driver: no plan over a slot outlives its step. Spark Connect sessions send each
plan whole in one call and keep no JVM objects here: there batches are plain local frames.
"""

from __future__ import annotations

import pyarrow as pa
from matview.runtime.settings import RuntimeSettings, active
from matview.runtime.spark.arrow_frames import arrow_file
from matview.runtime.spark.jvm_objects import jvm_helper, made_once
from matview.runtime.spark.unsafe_rows import fixed_width, point, unsafe_rows
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.utils import is_remote

LIVE = "_live"
"""The column telling a slot's rows (true) from its padding (false)."""


class Slot:
    """A placeholder leaf: a local relation with room for ``capacity`` rows of ``schema``
    whose rows ``bind`` replaces. Spark keeps a local relation's rows in an immutable
    sequence; the slot's is a JVM array wrapped without a copy, whose rows ``bind``
    overwrites in place: the batch's rows, then padding rows (NULLs, ``_live`` false) up to
    the capacity, set in one JVM call (``SlotRows.java``): UnsafeRow bytes made in Python
    when its columns are of fixed width (``unsafe_rows``), else read from an Arrow file.
    Its ``frame`` keeps the live rows: a filter that a plan run again evaluates at each run
    (``ArrowCollect.prepare`` plans it so), and that a plan made anew has Spark's optimizer
    evaluate on the local rows (``ConvertToLocalRelation``)."""

    def __init__(self, spark: SparkSession, schema: pa.Schema, capacity: int) -> None:
        self.spark = spark
        self.schema = schema
        self.fields = _fields(schema)
        self.capacity = capacity
        self.held: pa.Table | None = None
        """The rows bound last."""
        number, frame, self.rows = jvm_helper(spark, "SlotRows").make(
            spark._jsparkSession, _spark_schema(spark, schema), capacity)
        self.number: int = number
        """Its number in the JVM (``SlotRows.make``)."""
        self.fixed = fixed_width(schema)
        """Whether its rows are made as UnsafeRow bytes in Python (``unsafe_rows``)."""
        self.frame = DataFrame(frame, spark)

    def fits(self, table: pa.Table) -> bool:
        """Whether ``table`` is bound here: its columns are the slot's, it has room, and
        not so much (``slot_shrink`` times its rows) that padding would cost more than a new
        slot."""
        rows, settings = table.num_rows, active()
        return (rows <= self.capacity and _fields(table.schema) == self.fields
                and (self.capacity == settings.slot_min_capacity
                     or rows * settings.slot_shrink >= self.capacity))

    def bind(self, table: pa.Table) -> None:
        """Make ``table`` (which ``fits``) the slot's rows (no JVM call when they are the
        rows it holds)."""
        if self.held is not None and self.held.equals(table):
            return
        if self.fixed:
            if table.schema.types != self.schema.types:
                table = table.cast(_loose(self.schema))
            point(self.spark, jvm_helper(self.spark, "SlotRows"), self.number,
                  unsafe_rows(table), table.num_columns + 1)
        else:
            with arrow_file(self.spark, self._live(table)) as (path, _):
                jvm_helper(self.spark, "SlotRows").read(path, self.number)
        self.held = table

    def _live(self, table: pa.Table) -> pa.Table:
        """``table``'s rows with ``_live`` true (``SlotRows.read`` pads the rest)."""
        return table.cast(_loose(self.schema)).append_column(
            LIVE, pa.repeat(pa.scalar(True), table.num_rows))


def _spark_schema(spark: SparkSession, schema: pa.Schema) -> str:
    """The JSON of the Spark schema of a slot's rows of ``schema`` (made once per schema):
    its fields, every one nullable, then ``_live``."""
    fields = tuple(_fields(schema))
    return made_once(spark, ("slot schema", fields), lambda: from_arrow_schema(
        _loose(schema).append(pa.field(LIVE, pa.bool_())), prefer_timestamp_ntz=False).json())


def _loose(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable."""
    return pa.schema([f.with_nullable(True) for f in schema])


def _fields(schema: pa.Schema) -> list[tuple[str, pa.DataType]]:
    return [(f.name, f.type) for f in schema]


def slot_for(slots: list[Slot], spark: SparkSession, table: pa.Table) -> Slot | None:
    """The smallest of ``slots`` that ``table`` fits, else a new slot with room for it, added
    to them (None: too large to bind, or a Spark Connect session). A role's batches grow and
    shrink from step to step (a loop's rounds gather more of them); keeping a slot per size
    lets a step reuse the plans built over the slot its batch fits, not build them again
    over a new one. The sizes are few, each ``slot_shrink`` times the one before from
    ``slot_min_capacity`` up to ``slot_max_rows`` (4,096 and 65,536 rows with the
    defaults), so that batches of sizes far apart share a slot and its plans (those of a
    rehearsal: ``Dataflow.rehearse``), for some padding. ``slots`` keeps one slot per size,
    those used last."""
    settings = active()
    if is_remote() or table.num_rows > settings.slot_max_rows:
        return None
    slot = min((s for s in slots if s.fits(table)), key=lambda s: s.capacity, default=None)
    if slot is None:
        capacity = settings.slot_min_capacity
        while capacity < table.num_rows:
            capacity = min(capacity * settings.slot_shrink, settings.slot_max_rows)
        slot = Slot(spark, table.schema, capacity)
    else:
        slots.remove(slot)
    slots.insert(0, slot)
    del slots[slot_sizes(settings):]
    return slot


def same(a: object, b: object) -> bool:
    """Whether two plan inputs are the same: frames and columns the same objects, tuples
    item by item, other values equal."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, DataFrame | Column) or isinstance(b, DataFrame | Column):
        return a is b
    return type(a) is type(b) and a == b


def slot_sizes(settings: RuntimeSettings) -> int:
    """How many sizes a slot may have (``slot_for``; two with the defaults), one slot kept
    per size."""
    sizes, capacity = 1, settings.slot_min_capacity
    while capacity < settings.slot_max_rows:
        sizes, capacity = sizes + 1, capacity * settings.slot_shrink
    return sizes
