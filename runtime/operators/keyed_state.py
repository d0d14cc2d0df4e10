"""An operator's keyed read of an arrangement within a step: the rows of a trace (a stored
collection's, a reduce's state) whose column holds one of some values the driver knows
(``Trace.matching``), fetched into the driver and bound into one of the operator's slots
where they can be, so that the step's plans over them are the ones kept from the step
before (``runtime.templates``); else Spark's plans reading them."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pyarrow as pa
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import union_all
from matview.runtime.operators.base import Operator, StepContext, templated
from matview.runtime.settings import active
from pyspark.sql import DataFrame
from pyspark.sql.utils import is_remote


class StateRead(NamedTuple):
    """What a keyed read found (``read_matching``)."""

    frame: DataFrame | None
    """Every row found (None: none): the driver's bound into a slot, and Spark's plans."""
    table: pa.Table | None
    """The rows the driver holds (all those found when ``spark`` is False)."""
    spark: bool
    """Whether some rows are read by Spark's plans (keyed reads of files, or batches read
    whole: ``whole``)."""
    whole: bool
    """Whether some batch is read whole (its other keys too)."""
    rows: int
    """About how many rows it read, at most (``KeyedRead.rows``)."""


def read_matching(op: Operator, ctx: StepContext, trace: Trace, slot: object, column: str,
                  values: pa.Array) -> StateRead | None:
    """The updates of ``trace`` up to the step's ``lower`` whose ``column`` holds one of
    ``values`` (and maybe others), those in the driver bound into ``op``'s slot ``slot``;
    None when the trace cannot be read by ``column`` (``Trace.matching``)."""
    found = None if ctx.first else trace.matching(ctx.lower, column, values)
    if found is None:
        return None
    table, frames, whole = found.table, [], bool(found.wholes)
    if found.reads or whole:
        if fetched(ctx, found.expected, whole):
            table, in_driver = found.fetch()
            trace.file_reads = trace.file_reads.direct(in_driver)
        else:
            frames = found.frames()
    held = [] if table is None or not table.num_rows else [op.bound(ctx, slot, table)]
    return StateRead(union_all(held + frames), table, bool(frames), whole, found.rows)


def large(trace: Trace) -> bool:
    """Whether a step reads only the touched keys' rows of ``trace`` (a GROUP BY's state, a
    window's arranged rows): when some batch is not in the driver, or they total more than
    ``whole_state_rows``; a small state held in the driver is read whole."""
    return (any(b.leaf.table is None for b in trace.batches)
            or sum(b.leaf.rows for b in trace.batches) > active().whole_state_rows)


def read_touched(op: Operator, ctx: StepContext, trace: Trace, slot: str, column: str | None,
                 values: Callable[[], pa.Array | None]) -> DataFrame | None:
    """The updates of ``trace`` up to the step's ``lower`` that ``op`` reads: when
    ``column`` is given and the driver knows the ``values`` it takes in the step's changes,
    the rows holding one of them, read by key (``read_matching``, into slot ``touched
    <slot>``: a superset of the touched keys' rows, which the reader's semi-join cuts);
    else all of them, through slot ``slot`` when the driver holds them."""
    known = None if column is None else values()
    found = None if known is None else read_matching(op, ctx, trace, f"touched {slot}", column,
                                                     known)
    if found is not None:
        return found.frame
    return op.read_bound(ctx, slot, trace, upto=ctx.lower)[0]


def fetched(ctx: StepContext, rows: int, whole: bool) -> bool:
    """Whether a keyed read of batches held in files, of about ``rows`` rows (as expected,
    ``KeyedRead.expected``), is fetched into the driver (``KeyedRead.fetch``: read by the
    driver from the files, else one Spark job of its own, a small plan, a filtered scan)
    and bound into a slot: in a ``templated`` step of a classic
    session, when it reads no batch whole and its rows would fit a slot
    (``slot_max_rows``). The step's plans are then the ones built the step before over the
    same slots, run again with no planning (the pages a step reads have new keys: a plan
    reading them is planned anew, 0.3-0.4 s of Spark's optimizer and analyzer for W1's
    refresh), and run in the driver when they have no exchange."""
    return templated(ctx) and not is_remote() and not whole \
        and rows <= active().slot_max_rows
