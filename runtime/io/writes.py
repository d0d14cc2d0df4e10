"""Writes to tables: update rows made into a batch at a time, and the check that no write
leaves a row with negative multiplicity (``transactions`` commits or stages the batches)."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc
from matview.ir.functions import EvalError
from matview.ir.relation import Constant
from matview.ir.types import SqlType
from matview.runtime.arrangements.retractions import negative_row
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import DIFF, TIME, Leaf, materialize, stored
from matview.runtime.lowering.types import arrow_values, column_names, update_schema
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F


def constant_updates(rows: Constant) -> pa.Table:
    """The rows of ``rows`` as Arrow update rows (data columns, then ``_diff``)."""
    schema = update_schema(rows.column_types)
    arrays = [pa.array(arrow_values([values[i] for values, _ in rows.rows]), schema.field(i).type)
              for i in range(len(rows.column_types))]
    arrays.append(pa.array([m for _, m in rows.rows], pa.int64()))
    return pa.Table.from_arrays(arrays, names=column_names(len(rows.column_types)) + [DIFF])


def retracts(updates: pa.Table) -> bool:
    """Whether Arrow ``updates`` hold a negative diff."""
    return updates.num_rows > 0 and pc.min(updates[DIFF]).as_py() < 0


def batch(spark: SparkSession, updates: DataFrame | pa.Table, types: Sequence[SqlType],
          small: bool, at: int, key: str | None = None) -> tuple[Leaf | None, int, bool]:
    """Update rows (data columns of ``types``, then ``_diff``) as a batch at time ``at``, how
    many rows they change (the sum of their diffs' sizes), and whether any retracts. A
    DataFrame is computed here (``small``: into the driver), one Spark job. Rows held in
    the executors are arranged by ``key`` when their number is known."""
    schema = update_schema(types)
    if isinstance(updates, pa.Table):
        updates = updates.append_column(TIME, pa.array([at] * updates.num_rows, pa.int64()))
        table = updates.select(schema.names).cast(schema)
        if table.num_rows == 0:
            return None, 0, False
        return stored(spark, table, key=key), *_diff_stats(table)
    frame = updates.select(*column_names(len(types)), F.lit(at).cast("bigint").alias(TIME),
                           DIFF)
    leaf = materialize(spark, frame, small, key=key)
    if leaf is None:
        return None, 0, False
    if leaf.table is not None:  # the rows are at hand: no second Spark job to count
        return leaf, *_diff_stats(leaf.table)
    changed, lowest = leaf.df.select(F.sum(F.abs(F.col(DIFF))), F.min(DIFF)).first()
    return leaf, int(changed or 0), (lowest or 0) < 0


def check_retractions(name: str, trace: Trace, updates: DataFrame | pa.Table,
                      staged: Sequence[Leaf] = ()) -> None:
    """An error unless table ``name`` (``trace``, with the batches ``staged`` for it) holds
    every row ``updates`` retract, as many times as they retract it."""
    missing = negative_row(trace, updates, staged)
    if missing is not None:
        raise EvalError(f'cannot delete {missing} from table "{name}": the table does not '
                        "hold that many copies of it")


def _diff_stats(updates: pa.Table) -> tuple[int, bool]:
    """How many rows Arrow ``updates`` change, and whether they retract any."""
    return int(pc.sum(pc.abs(updates[DIFF])).as_py()), retracts(updates)
