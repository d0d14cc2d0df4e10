"""The Spark lowering of window functions (``ir/windows.py``), by registry name and kind:
a call's value at each row of its partition, Spark's window functions over the partition
ordered by the call's ORDER BY then every other column (``sort_keys.total_order``), so the
values are deterministic. ``range`` frames and the ranking functions that read peers order
by the ORDER BY alone; a value function over a ``range`` frame takes its row from a
``rows`` frame of the same rows (``_value_over_range``). The window operator
(``operators.window``) computes them, also inside a loop.
"""

from __future__ import annotations

from collections.abc import Sequence

from matview.ir import windows
from matview.ir.scalar import Col
from matview.ir.sort_keys import total_order
from matview.ir.types import SqlType
from matview.ir.window_call import WindowCall
from matview.runtime.lowering.ordering import spark_order
from matview.runtime.lowering.types import col, column_names, spark_type
from pyspark.sql import Column
from pyspark.sql import Window as SparkWindow
from pyspark.sql import functions as F
from pyspark.sql.window import WindowSpec


def window_value(call: WindowCall, types: Sequence[SqlType], partition: Sequence[Column]
                 ) -> Column:
    """``call``'s value at each row of its partition (``partition``: its columns), over
    input rows of ``types`` (columns ``c0``, ``c1``, ...), each row once per copy."""
    names = column_names(len(types))
    fn = windows.lookup(call.func)
    order = total_order(call.order_by, len(names))
    ordered = SparkWindow.partitionBy(*partition).orderBy(
        *spark_order(names, order, types, total=True))
    peers = spark_order(names, call.order_by, types) or [F.lit(0)]
    by_peers = SparkWindow.partitionBy(*partition).orderBy(*peers)
    arg = col(names[call.args[0].index]) if call.args and isinstance(
        call.args[0], Col) else None
    if fn.kind is windows.Kind.RANKING:
        if call.func == "row_number":
            return F.row_number().over(ordered)
        if call.func == "ntile":
            buckets = windows.constant(call.args[0])
            return F.lit(None) if buckets is None else F.ntile(buckets).over(ordered)
        ranking = {"rank": F.rank, "dense_rank": F.dense_rank,
                   "percent_rank": F.percent_rank, "cume_dist": F.cume_dist}
        return ranking[call.func]().over(by_peers)
    if fn.kind is windows.Kind.OFFSET:
        offset = windows.constant(call.args[1]) if len(call.args) > 1 else 1
        default = windows.constant(call.args[2]) if len(call.args) > 2 else None
        shift = F.lag if call.func == "lag" else F.lead
        return shift(arg, offset, default).over(ordered)
    frame = call.frame
    if fn.kind is windows.Kind.AGGREGATE:
        spec = _framed(ordered, by_peers, call)
        if arg is None:
            return F.count(F.lit(1)).over(spec)
        if call.func == "sum":
            arg = arg.cast(spark_type(call.type(tuple(types))))
        return F.call_function(call.func, arg).over(spec)
    assert arg is not None
    if frame.units == "rows":
        spec = _framed(ordered, by_peers, call)
        if call.func == "nth_value":
            return F.nth_value(arg, windows.constant(call.args[1])).over(spec)
        return (F.first if call.func == "first_value" else F.last)(arg, False).over(spec)
    return _value_over_range(call, names, types, arg, partition, by_peers)


def _value_over_range(call: WindowCall, names: list[str], types: Sequence[SqlType], arg: Column,
                      partition: Sequence[Column], by_peers: WindowSpec) -> Column:
    """A value function over a ``range`` frame: the frame is the partition's rows from
    its first row or the current row's first peer, to its last row or the current
    row's last peer; its rows in the total order are the partition's (or the peers')
    rows in that order."""
    frame = call.frame
    order = spark_order(names, total_order(call.order_by, len(names)), types, total=True)
    whole = SparkWindow.partitionBy(*partition).orderBy(*order).rowsBetween(
        SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
    peer_keys = [col(names[c]) for c, _, _ in call.order_by]
    among_peers = SparkWindow.partitionBy(*partition, *peer_keys).orderBy(
        *order).rowsBetween(SparkWindow.unboundedPreceding, SparkWindow.unboundedFollowing)
    if call.func == "first_value":
        return F.first(arg, False).over(whole if frame.start is None else among_peers)
    if call.func == "last_value":
        return F.last(arg, False).over(whole if frame.end is None else among_peers)
    assert frame.start is None, "nth_value over a range frame starts at the partition's"
    position = windows.constant(call.args[1])
    value = F.nth_value(arg, position).over(whole)
    if frame.end is None:
        return value
    upto = by_peers.rangeBetween(SparkWindow.unboundedPreceding, SparkWindow.currentRow)
    return F.when(F.count(F.lit(1)).over(upto) >= position, value)

def _framed(ordered: WindowSpec, by_peers: WindowSpec, call: WindowCall) -> WindowSpec:
    """The window of ``call``'s frame: positions in the total order, or peers."""
    frame = call.frame
    start = SparkWindow.unboundedPreceding if frame.start is None else frame.start
    end = SparkWindow.unboundedFollowing if frame.end is None else frame.end
    if frame.units == "rows":
        return ordered.rowsBetween(start, end)
    return by_peers.rangeBetween(start, end)
