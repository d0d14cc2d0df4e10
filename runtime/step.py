"""A computed step of a dataflow, waiting for ``commit``.

``Dataflow.prepare`` returns a ``PendingStep``: the plan's output delta and the errors its
operators found, with the operators' state staged. ``materialized`` computes the batches to
keep (a small step's from its one job, ``runtime.one_job``); ``commit`` applies the staged
state, so a step that fails midway changes nothing. ``less`` turns a first step into the
change from a trace's contents (recompute-and-diff).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import (
    DIFF,
    TIME,
    Leaf,
    first_row,
    materialize,
    positive_rows,
    stored_or_none,
    union_all,
)
from matview.runtime.lowering.checked import ERR, split_arrow_errors, split_errors
from matview.runtime.lowering.types import col
from matview.runtime.operators.base import Delta
from matview.runtime.render import operators
from matview.runtime.spark.one_job import OneJob
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

if TYPE_CHECKING:
    from matview.runtime.dataflow import Dataflow


@dataclass
class PendingStep:
    """A computed step whose state changes wait for ``commit``: its output ``delta`` and
    the ``errors`` its operators found (updates of one text column, the message). ``job``
    is where its operators asked for the results they keep (``runtime.one_job``)."""

    dataflow: Dataflow
    delta: Delta | None
    lower: int
    upper: int
    small: bool
    errors: Delta | None = None
    job: OneJob | None = None
    reread: bool = False
    """Whether it is a kept read's step (``Dataflow.reread``), whose readers' plans are kept
    (``kept``)."""
    _asked: bool = False
    _got: dict[str, Leaf | None] = field(default_factory=dict)
    """What the job returned: the batch of ``rows``, of ``errors``."""

    @property
    def output(self) -> DataFrame | None:
        """The step's output updates, consolidated (a lazy plan; a small step's in one
        partition, so that a plan without a shuffle is computed in the driver)."""
        if self.delta is None:
            return None
        delta, small = self.delta.df, self.small
        return self.kept("output", (delta,), lambda: consolidate(delta, small))

    @property
    def failures(self) -> DataFrame | None:
        """The messages of the errors the step's output holds once consolidated, each once
        (a lazy plan, a small step's in one partition), or None when it can hold none."""
        if self.errors is None:
            return None
        failed, small = self.errors.df, self.small
        return self.kept("failures", (failed,),
                         lambda: positive_rows(failed.coalesce(1) if small else failed))

    def kept(self, key: object, inputs: tuple[object, ...], make: Callable[[], DataFrame]
             ) -> DataFrame:
        """``make()``, a plan over ``inputs`` that reads the step's results: in a kept
        read's step (``reread``) made once for the same ``inputs`` (kept by the root
        operator, ``Operator.planned``), so that its collect runs a kept plan again."""
        if not self.reread:
            return make()
        return self.dataflow.root.planned(("read", key), inputs, make)

    def error(self) -> str | None:
        """An error the step's output holds once consolidated (one of its ``failures``, one
        Spark job), or None."""
        failures = self.failures
        if failures is None:
            return None
        found = first_row(failures)
        return None if found is None else str(found[0])

    def want(self) -> None:
        """Ask the step's job (a small step's) for the output updates and the errors the
        driver does not hold yet: when both, as one batch of rows with ``_err`` (NULL for
        rows, NULL rows for errors). Asks once."""
        if self._asked or not self.small or self.job is None:
            return
        self._asked = True
        spark = self.dataflow.spark
        rows, errors = not _held(self.delta), not _held(self.errors)
        if rows and errors:
            assert self.errors is not None
            self.job.want(self._consolidated(
                "merged", (None if self.delta is None else self.delta.df, self.errors.df),
                self._merged), self._split)
        elif rows:
            assert self.delta is not None
            delta = self.delta.df
            self.job.want(self._consolidated("rows", (delta,), lambda: delta),
                          lambda table: self._got.update(rows=stored_or_none(spark, table)))
        elif errors:
            assert self.errors is not None
            failed = self.errors.df
            self.job.want(self._consolidated("errors", (failed,), lambda: failed),
                          lambda table: self._got.update(errors=stored_or_none(spark, table)))

    def _consolidated(self, what: str, inputs: tuple[DataFrame | None, ...],
                      make: Callable[[], DataFrame]) -> DataFrame:
        """``consolidate(make())``, made once for the same ``inputs`` (kept by the root
        operator, ``Operator.planned``): a step of the same shape as a recent one wants the
        same frame. The step is small: its rows are consolidated in one partition
        (``consolidate(small=True)``; a union's output is several partitions)."""
        return self.dataflow.root.planned(("consolidated", what), inputs,
                                          lambda: consolidate(make(), small=True))

    def _merged(self) -> DataFrame:
        """The output updates and the errors as one batch of rows with ``_err``."""
        assert self.errors is not None
        errors = self.errors.df
        if self.delta is None:
            return errors.select(col("c0").alias(ERR), TIME, DIFF)
        rows = self.delta.df
        row_columns, error_columns = self.dataflow.merged_columns(rows.schema)
        return rows.select(*row_columns).unionByName(errors.select(*error_columns))

    def _split(self, table: pa.Table) -> None:
        """Keep the rows and errors of a ``_merged`` batch held in the driver."""
        ok, failed = split_arrow_errors(table)
        spark = self.dataflow.spark
        self._got.update(rows=None if self.delta is None else stored_or_none(spark, ok),
                         errors=stored_or_none(spark, failed))

    def materialized(self) -> tuple[Leaf | None, Leaf | None]:
        """The output updates and the errors as batches to keep. A small step's come from
        its one job (``want``), which also computes every result its operators keep, or are
        already held in the driver. A large step's updates are kept as they are when their
        plans are narrow over leaves (readers consolidate), else computed (with its errors
        when it has some); its errors are computed apart (such steps are few) and, being
        few as a rule, kept in the driver, where every read of the view checks them without
        a job."""
        self.want()
        if self.job is not None:
            self.job.run()
        if self._asked:
            return (self._got["rows"] if "rows" in self._got else _held_leaf(self.delta),
                    self._got["errors"] if "errors" in self._got else _held_leaf(self.errors))
        spark = self.dataflow.spark
        if self.errors is None or (_narrow(self.delta) and _narrow(self.errors)):
            errors = None if self.errors is None else materialize(
                spark, consolidate(self.errors.df), small=False)
            return _leaf_of(self.delta, spark, self.small), errors
        if self.delta is None:
            return None, materialize(spark, consolidate(self.errors.df), small=False)
        leaf = materialize(spark, consolidate(self._merged()), small=False)
        if leaf is None:
            return None, None
        if leaf.table is not None:
            self._split(leaf.table)
            return self._got["rows"], self._got["errors"]
        rows, errors = split_errors(leaf.df)
        return (Leaf(rows, leaf.rows, exact=False),
                materialize(spark, consolidate(errors), small=False))

    def less(self, trace: Trace, upto: int, at: int) -> PendingStep:
        """Recompute-and-diff: this step (a first step, the contents at ``upper``) less
        ``trace``'s contents (rows and errors) up to ``upto``, all at time ``at``: the
        change of a view whose trace held its contents at ``upto``. Committing it commits
        this step's dataflow."""
        assert trace.errors is not None
        return PendingStep(self.dataflow, _less(self.delta, trace, upto, at), upto,
                           self.upper, False, _less(self.errors, trace.errors, upto, at),
                           self.job)

    def commit(self) -> None:
        """Apply the state the step's operators staged (running its job first, if nothing
        has: the results they keep come from it)."""
        if self.job is not None:
            self.job.run()
        for op in operators(self.dataflow.root):
            op.commit()
            op.meter.commit()
        self.dataflow.adopt()
        self.dataflow.frontier = self.upper


def _less(delta: Delta | None, trace: Trace, upto: int, at: int) -> Delta | None:
    """``delta`` less ``trace``'s updates up to ``upto``, every update at ``at``."""
    df = difference(None if delta is None else delta.df, trace.read(upto=upto), at)
    return None if df is None else Delta(df, None)


def difference(new: DataFrame | None, old: DataFrame | None, at: int) -> DataFrame | None:
    """The updates ``new`` less the updates ``old``, every one at time ``at`` (not
    consolidated; None: neither holds any)."""
    frames = [] if new is None else [new]
    if old is not None:
        frames.append(old.withColumn(DIFF, -col(DIFF)))
    return union_all([df.withColumn(TIME, F.lit(at).cast("bigint")) for df in frames])


def _held(delta: Delta | None) -> bool:
    """Whether the driver holds ``delta``'s rows (none; a batch or its copy; ``later``)."""
    return delta is None or delta.later is not None or (
        delta.leaf is not None and delta.leaf.in_driver is not None)


def _held_leaf(delta: Delta | None) -> Leaf | None:
    """The batch of a delta the driver holds (``_held``)."""
    if delta is None:
        return None
    if delta.later is not None:
        return delta.later()
    assert delta.leaf is not None
    return delta.leaf


def _narrow(delta: Delta | None) -> bool:
    """Whether ``delta`` can be kept as it is (no delta, a batch, or narrow over leaves)."""
    return delta is None or delta.leaf is not None or delta.rows is not None


def _leaf_of(delta: Delta | None, spark: SparkSession, small: bool) -> Leaf | None:
    """``delta`` as a batch to keep (see ``PendingStep.materialized``)."""
    if delta is None:
        return None
    if delta.leaf is not None:
        return delta.leaf
    if delta.rows is not None:
        return Leaf(delta.df, delta.rows, exact=delta.count == delta.rows)
    return materialize(spark, consolidate(delta.df), small)
