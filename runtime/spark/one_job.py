"""The one Spark job of a refresh: every result that the operators of the dataflows stepping
together need in the driver, computed by a single action.

A small step's operators do not collect what they keep (a Reduce's new state, a dataflow's
output and errors) one job each: they ask ``OneJob.want`` for it and get it once
``OneJob.run`` has run. ``run`` computes each frame whose kept plan runs in the driver
alone (no job to share), puts every other wanted frame in one union, each frame's rows as
a struct column of its own beside a tag telling them apart, collects it through Arrow, and
hands each asker its rows. A plan that several wanted frames read is computed once by each
within that job, so an operator defers its output to the job only when its readers take
the returned batch instead (``Delta.later``; a Reduce under a view's last projection).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from matview.runtime.spark.jvm_objects import made_once
from matview.runtime.spark.jvm_plans import Columns, columns, computed_in_driver, select, to_arrow
from matview.runtime.spark.templates import same
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

_PART = "_part"
"""The column telling apart the wanted frames' rows in the packed result."""


@dataclass
class OneJob:
    """The results wanted from one Spark job: frames, and what to do with their rows."""

    wanted: list[tuple[DataFrame, Callable[[pa.Table], None]]] = field(default_factory=list)

    def want(self, frame: DataFrame, then: Callable[[pa.Table], None]) -> None:
        """Have ``then`` called with ``frame``'s rows (an Arrow table of its columns) when
        the job runs."""
        self.wanted.append((frame, then))

    def run(self) -> None:
        """Compute every wanted frame in one Spark job (none when nothing is wanted) and
        hand each its rows, in the order they were wanted, once all are computed. A frame
        whose kept plan runs in the driver (``jvm_plans.computed_in_driver``) is computed
        alone, with no job to share: in a union with the others, each new mix of the
        frames that a refresh's views want (some views step, some do not) would be a new
        plan, planned anew (half a second for six TPC-H views)."""
        wanted, self.wanted = self.wanted, []
        packed = [i for i, (frame, _) in enumerate(wanted)
                  if len(wanted) > 1 and not computed_in_driver(frame)]
        packed = packed if len(packed) > 1 else []  # a frame alone needs no union
        tables = {i: to_arrow(frame) for i, (frame, _) in enumerate(wanted) if i not in packed}
        if packed:
            table = to_arrow(_packed(tuple(wanted[i][0] for i in packed)), nullable=True)
            for n, i in enumerate(packed):
                tables[i] = _unpacked(table.filter(pc.equal(table[_PART], n))[f"p{n}"])
        for i, (_, then) in enumerate(wanted):
            then(tables[i])


def collected(frames: list[DataFrame]) -> list[pa.Table]:
    """The rows of each of ``frames``, all computed by one Spark job."""
    found: list[pa.Table] = []
    job = OneJob()
    for frame in frames:
        job.want(frame, found.append)
    job.run()
    return found


_PACKED = 16
"""Packed unions kept for reuse: a refresh's jobs (one per group of views stepping
together) usually want the same frames again in its next step (``runtime.templates``)."""

_packed_last: list[tuple[tuple[DataFrame, ...], DataFrame]] = []


def _packed(frames: tuple[DataFrame, ...]) -> DataFrame:
    """The union of ``frames`` packed (each frame's rows a struct column beside its tag),
    built once for the same frames."""
    for i, (made_of, union) in enumerate(_packed_last):
        if same(made_of, frames):
            _packed_last.append(_packed_last.pop(i))
            return union
    packed = [select(frame, _packing(frame.sparkSession, i)) for i, frame in enumerate(frames)]
    union = packed[0]
    for part in packed[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    _packed_last.append((frames, union))
    del _packed_last[:-_PACKED]
    return union


def _packing(spark: SparkSession, i: int) -> Columns:
    """The columns of the ``i``-th wanted frame in the packed result (made once)."""
    return made_once(spark, ("one job part", i), lambda: columns(
        spark, F.lit(i).alias(_PART), F.struct("*").alias(f"p{i}")))


def _unpacked(column: pa.ChunkedArray) -> pa.Table:
    """The struct column of one wanted frame as a table of its fields."""
    struct = column.type
    assert isinstance(struct, pa.StructType)
    names = [struct.field(i).name for i in range(struct.num_fields)]
    return pa.Table.from_arrays(column.combine_chunks().flatten(), names=names)
