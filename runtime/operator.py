"""The contract between the dataflow and its operators.

In each step the dataflow asks every operator for its output delta: the updates with times
in ``(lower, upper]`` (on the first step, the whole snapshot at ``as_of``). Operators that
look up other collections also ask their inputs for ``history``: the input collection's
updates with times ``<= lower``. Operators with state stage their new state during the step
and apply it in ``commit``, which the dataflow calls only once the whole step succeeded.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from matview.ir.types import SqlType
from matview.runtime.updates import Leaf
from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class StepContext:
    """One step of a dataflow: from frontier ``lower`` to ``upper``."""

    spark: SparkSession
    lower: int
    upper: int
    as_of: int
    small: bool
    """Whether the step's input deltas are small enough to broadcast and pass through Arrow."""
    single_time: bool = False
    """Whether every input update of the step has the same time (no running sums needed)."""

    @property
    def first(self) -> bool:
        """The first step, which reads every input's snapshot at ``as_of`` as its delta."""
        return self.lower < self.as_of


@dataclass(frozen=True)
class Delta:
    """An output delta. ``rows`` is set when its plan is only narrow operators over
    materialized leaves holding at most that many rows, so keeping it as it is costs no
    recomputation of earlier work; None when keeping it needs a materialization. ``leaf``
    is set when the delta is a stored batch itself (then ``frame`` may be left out)."""

    frame: DataFrame | None
    rows: int | None
    leaf: Leaf | None = None

    @property
    def df(self) -> DataFrame:
        if self.frame is not None:
            return self.frame
        assert self.leaf is not None
        return self.leaf.df

    @property
    def leafy(self) -> bool:
        return self.rows is not None


@dataclass
class Operator:
    """A node of a running dataflow."""

    types: tuple[SqlType, ...]
    _memo: tuple[StepContext, Delta | None] | None = field(default=None, init=False, repr=False)

    @property
    def arity(self) -> int:
        return len(self.types)

    def delta(self, ctx: StepContext) -> Delta | None:
        """The output updates of this step (memoized per step), or None when there are none."""
        if self._memo is None or self._memo[0] is not ctx:
            self._memo = (ctx, self.compute(ctx))
        return self._memo[1]

    def compute(self, ctx: StepContext) -> Delta | None:
        raise NotImplementedError

    def history(self, ctx: StepContext) -> DataFrame | None:
        """The output updates with times ``<= ctx.lower`` (None on the first step)."""
        raise NotImplementedError

    def require_history(self) -> None:
        """Called at build time by a consumer that will ask for ``history``."""

    def commit(self) -> None:
        """Apply the state staged in the last step."""

    def abandon(self) -> None:
        """Forget state staged by a step that was not committed (it failed)."""

    def children(self) -> tuple[Operator, ...]:
        return ()
