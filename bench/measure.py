"""What a run measures besides time: Spark jobs and py4j calls, arrangement sizes, how views
stepped (incremental or recompute), JVM memory, and result equality."""

from __future__ import annotations

import datetime
import decimal
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
from matview.runtime.arrangements.trace import Trace
from matview.runtime.operators.metering import drain_listeners
from matview.runtime.spark.arrow_frames import arrow_frame
from matview.runtime.spark.jvm_plans import to_arrow
from pyspark.sql import SparkSession

from matview.connection import Connection


@contextmanager
def counted(spark: SparkSession, group: str) -> Iterator[dict[str, int | None]]:
    """Count what the block does: ``py4j`` calls from Python to the JVM (every call through
    py4j's gateway client, in any thread), less ``py4j_gc``, the ones py4j's own garbage
    collection thread sends in the background to release JVM objects Python has dropped;
    and Spark ``jobs`` run by this thread (tagged with job group ``group``, which earlier
    blocks may have used too: only the block's new jobs count; None on Spark Connect, which
    has no SparkContext to ask)."""
    from py4j.java_gateway import GatewayClient
    from py4j.protocol import MEMORY_COMMAND_NAME, MEMORY_DEL_SUBCOMMAND_NAME

    release = MEMORY_COMMAND_NAME + MEMORY_DEL_SUBCOMMAND_NAME
    counts: dict[str, int | None] = {"py4j": 0, "py4j_gc": 0, "jobs": None}
    original: Callable[..., Any] = GatewayClient.send_command

    def send_command(client: GatewayClient, command: str, *args: Any, **kwargs: Any) -> Any:
        kind = "py4j_gc" if command.startswith(release) else "py4j"
        counts[kind] = (counts[kind] or 0) + 1
        return original(client, command, *args, **kwargs)

    context, before = None, set()
    if not type(spark).__module__.startswith("pyspark.sql.connect"):
        context = spark.sparkContext
        before = set(context.statusTracker().getJobIdsForGroup(group))
        context.setJobGroup(group, group)
    GatewayClient.send_command = send_command  # type: ignore[method-assign]
    try:
        yield counts
    finally:
        GatewayClient.send_command = original  # type: ignore[method-assign]
        if context is not None:
            context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
            drain_listeners(spark)  # the status tracker hears of jobs through the bus
            after = set(context.statusTracker().getJobIdsForGroup(group))
            counts["jobs"] = len(after - before)


def _traces(con: Connection) -> tuple[list[Trace], list[Trace]]:
    """The traces of the base tables, and those of the views and their dataflows."""
    engine = con._engine_for_use()
    tables, views = [], []
    for entry in engine.catalog.entries.values():
        if entry.trace is None:
            continue
        if entry.dataflow is None:
            tables.append(entry.trace)
        else:
            views.append(entry.trace)
            views.extend(entry.dataflow.state())
    return tables, views


def state(con: Connection) -> dict[str, int]:
    """Update rows held in arrangements: the tables' (``table_rows``, taking
    ``table_bytes``: ``Trace.bytes``, exact in the driver, estimated in Spark) and the views'
    own state (``view_rows``: outputs, reduce accumulators, join outputs), the count indexes
    kept beside them (``count_rows``: ``arrangements.count_index``), plus the bytes of
    batches held in the driver as Arrow or copied there (``local_bytes``) and the number of
    stored batches."""
    tables, views = _traces(con)
    return {
        "table_rows": sum(t.rows for t in tables),
        "table_bytes": sum(t.bytes for t in tables),
        "view_rows": sum(t.rows for t in views),
        "count_rows": sum(c.rows for t in tables + views for c in t.counts.values()),
        "local_bytes": sum(b.leaf.bytes or 0 for t in tables + views for b in t.batches),
        "batches": sum(len(t.batches) for t in tables + views),
    }


def refresh_stats(con: Connection, view: str) -> dict[str, Any]:
    """How materialized view ``view``'s steps ran (EXPLAIN ANALYZE's REFRESH object: steps
    incremental and recomputed, the last one's strategy and reason)."""
    analyzed = json.loads(con.explain(f"MATERIALIZED VIEW {view}", stage="analyze",
                                      format="json"))
    return dict(analyzed["refresh"])


def block_manager_bytes(spark: SparkSession) -> int | None:
    """Bytes of cached and checkpointed blocks in Spark's block manager (classic sessions;
    Spark Connect exposes no storage information, so None there)."""
    context = getattr(spark, "sparkContext", None)
    try:
        infos = context._jsc.sc().getRDDStorageInfo()  # type: ignore[union-attr]
    except Exception:
        return None
    return int(sum(info.memSize() + info.diskSize() for info in infos))


def action_floor(spark: SparkSession, times: int = 21) -> float:
    """The median seconds of the cheapest Spark action matview runs from Python: one row
    of a local relation collected through Arrow. A step that needs k actions one after
    another (a loop's rounds: each reads what the one before computed) costs at least k
    times this."""
    one = arrow_frame(spark, pa.table({"x": pa.array([1], pa.int64())}))
    took = []
    for _ in range(times):
        start = time.perf_counter()
        to_arrow(one)
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def jvm_memory(spark: SparkSession) -> dict[str, int | None]:
    """The JVM's peak heap use (classic sessions, from its memory pools) and the peak
    resident size of every Java process started by this one (both modes, from /proc)."""
    heap = None
    try:
        factory = spark.sparkContext._jvm.java.lang.management.ManagementFactory
        heap = int(sum(pool.getPeakUsage().getUsed() for pool in factory.getMemoryPoolMXBeans()
                       if str(pool.getType()) == "Heap memory"))
    except Exception:
        heap = None
    return {"peak_heap_bytes": heap, "peak_rss_bytes": _java_peak_rss()}


def memory_now(spark: SparkSession) -> dict[str, int | None]:
    """Memory in use now: the driver JVM's heap (``driver_heap_bytes``), this Python
    process's resident size (``python_rss_bytes``) and the storage memory of Spark's block
    managers (``storage_memory_bytes``: cached and checkpointed blocks and broadcasts, the
    executors' and the driver's). The JVM figures are None on Spark Connect."""
    rss = re.search(r"^VmRSS:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    heap = storage = None
    try:
        context = spark.sparkContext
        heap = int(context._jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
                   .getHeapMemoryUsage().getUsed())
        managers, used = context._jsc.sc().getExecutorMemoryStatus().iterator(), 0
        while managers.hasNext():
            most_free = managers.next()._2()
            used += int(most_free._1()) - int(most_free._2())
        storage = used
    except Exception:
        pass
    return {"driver_heap_bytes": heap, "storage_memory_bytes": storage,
            "python_rss_bytes": int(rss.group(1)) * 1024 if rss else None}


def _java_peak_rss() -> int | None:
    me, peak = os.getpid(), None
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        parent = re.search(r"^PPid:\s+(\d+)", text, re.M)
        name = re.search(r"^Name:\s+(\S+)", text, re.M)
        rss = re.search(r"^VmHWM:\s+(\d+) kB", text, re.M)
        if parent and name and rss and int(parent.group(1)) == me and name.group(1) == "java":
            peak = max(peak or 0, int(rss.group(1)) * 1024)
    return peak


TOLERANCE = 1e-5
"""Relative difference allowed between numbers of two engines: they differ in the scale of
averages and divisions (DuckDB answers in DOUBLE where Spark and matview keep NUMERIC)."""


def _canonical_value(value: object) -> object:
    if isinstance(value, (int, float, decimal.Decimal)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def canonical(table: pa.Table) -> list[tuple[object, ...]]:
    """A view's rows as a sorted list, numbers as floats."""
    rows = [tuple(_canonical_value(v) for v in row)
            for row in zip(*[c.to_pylist() for c in table.columns])]
    return sorted(rows, key=lambda row: [(v is None, isinstance(v, str), v if isinstance(
        v, float) else 0.0, v if isinstance(v, str) else "") for v in row])


def _close(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return abs(a - b) <= TOLERANCE * max(abs(a), abs(b), 1e-9)
    return a == b


class Mismatch(AssertionError):
    """An engine's view differs from matview's."""


def check_equal(what: str, expected: pa.Table, got: pa.Table) -> None:
    """Raise ``Mismatch`` naming ``what`` unless both tables hold the same rows (numbers
    equal within ``TOLERANCE``)."""
    want, have = canonical(expected), canonical(got)
    same = len(want) == len(have) and all(
        len(w) == len(h) and all(_close(a, b) for a, b in zip(w, h))
        for w, h in zip(want, have))
    if not same:
        missing = [r for r in want if r not in have][:3]
        extra = [r for r in have if r not in want][:3]
        raise Mismatch(f"{what}: {len(want)} rows expected, {len(have)} found; "
                       f"missing {missing}, unexpected {extra}")
