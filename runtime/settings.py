"""The runtime's settings: every size threshold and count it decides by, in one frozen record.

``RuntimeSettings`` holds each threshold with its meaning (``describe``); one meaning per
setting. A connection runs every statement with its settings active (``using``), so the
runtime reads them where it decides (``active()``) without threading them through every
call; ``matview.connect(settings=...)`` and ``matview serve --setting NAME=VALUE`` override
them, and ``SHOW SETTINGS`` lists them. Settings change where work runs (the driver or the
executors), how many plans and slots are kept and when batches merge: never a result.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any


def _setting(default: int | float, doc: str, least: int = 0) -> Any:
    return field(default=default, metadata={"doc": doc, "least": least})


@dataclass(frozen=True)
class RuntimeSettings:
    """The runtime's thresholds (defaults chosen in ``bench/README.md``'s measurements)."""

    small_step_rows: int = _setting(200_000, (
        "A step whose changes total at most this many rows is small: its deltas are "
        "computed through Arrow into the driver in the refresh's one job; larger ones are "
        "checkpointed in the executors."))
    driver_batch_rows: int = _setting(20_000, (
        "A stored batch of at most this many rows stays in the driver as an Arrow-backed "
        "local relation; larger ones are checkpointed into the executors (a local relation "
        "is decoded from Arrow again at every scan)."))
    fetched_batch_rows: int = _setting(20_000, (
        "A delta computed in the executors with at most this many rows is fetched into the "
        "driver (one more job), where later steps read it with no Spark job."))
    driver_merge_rows: int = _setting(20_000, (
        "At compaction, the batches up to `since` are merged in the driver (no Spark job) "
        "when the driver holds them all and they total at most this many rows."))
    whole_state_rows: int = _setting(20_000, (
        "A GROUP BY whose state is held in the driver and totals at most this many rows "
        "reads all of it in a step; a larger one reads only the touched groups' rows."))
    retain_history: int = _setting(0, (
        "Milliseconds of history every table and materialized view keeps readable by "
        "SELECT and SUBSCRIBE ... AS OF, before the earliest time a running dataflow or "
        "subscription reads (0: only what they read); older times are compacted away."))
    max_batches: int = _setting(8, (
        "Batches a trace keeps before it merges its newest ones geometrically."))
    table_copy_rows: int = _setting(2_000_000, (
        "Update rows a table keeps in the driver beside its Spark batches, so that writes "
        "are checked and lookups cut in Arrow."))
    view_copy_rows: int = _setting(2_000_000, (
        "Update rows a materialized view keeps in the driver beside its Spark batches, so "
        "that reads, error checks and merges of it run in Arrow."))
    file_rows: int = _setting(1 << 22, (
        "Rows of each file of a batch held in the executors arranged by key (its key "
        "ranges); a lookup of some keys reads about one page of them per key."), least=1)
    footer_rows: int = _setting(1 << 26, (
        "Rows of the batches held in files whose Parquet footers the driver keeps parsed "
        "(about 4 bytes of memory a row), to read some keys' row groups with no Spark job; "
        "a read of another file parses its footer again (20 ms per 4M rows)."))
    mapped_copy_rows: int = _setting(1 << 20, (
        "A copy arranged by a column of integers of at least this many rows, held in local "
        "files, is also converted (once, in the background) into Arrow files the driver "
        "memory-maps, from which it reads some keys' rows by binary search, decoding "
        "nothing (W1's 500 orders of 10M: 4 ms, 37 ms from Parquet row groups)."))
    keyed_read_rows: int = _setting(1 << 12, (
        "A batch held in the executors of more rows than this is read by key from its "
        "copies arranged by key; a smaller one is read whole."))
    probe_values: int = _setting(10_000, (
        "Most rows a DELETE's check finds by a filter on their values; more are found by a "
        "semi-join with them broadcast."))
    indexed_rows: int = _setting(1 << 16, (
        "A driver-held batch of at least this many rows is read by key through a sorted "
        "index kept while the batch lives; smaller ones by a hash lookup."))
    large_lookup_rows: int = _setting(2_000_000, (
        "A small step looking up an arrangement of more rows than this broadcasts its own "
        "side (one more job) instead of reading the arrangement in one partition (-1: "
        "every lookup, of a size known or not)."), least=-1)
    counted_extension_rows: int = _setting(100_000, (
        "In a step that is not small, a join's group of lookups extending a delta path "
        "by one attribute runs by counts (count, propose, "
        "validate: worst-case optimal) when each of its inputs holds at least this many "
        "update rows; else in the plan's first order, as binary lookups (-1: never)."),
        least=-1)
    plans_kept: int = _setting(4, (
        "Plans an operator keeps for each of its shapes, to run again without building."))
    reads_kept: int = _setting(16, (
        "Reads (SELECTs) whose plans are kept, to run again when repeated."))
    loop_plans_kept: int = _setting(64, (
        "Plans a recursive query's loop keeps for each of its shapes (its rounds differ)."))
    driver_plan_rows: int = _setting(1 << 21, (
        "The most local rows (its slots' room included) a kept plan without exchanges reads "
        "and still runs in the driver, with no job; its partitions hold a copy of each "
        "while it is kept. A larger one runs as a job, planned anew each time when it "
        "observes row counts."))
    loop_driver_plan_rows: int = _setting(1 << 18, (
        "`driver_plan_rows` in a recursive query's loop, which keeps more plans."))
    max_waiting: int = _setting(4096, (
        "Observations of committed steps an operator keeps waiting for their Spark job."))
    history_slot_rows: int = _setting(4096, (
        "A history read whole whose driver-held updates are at most this many rows is "
        "bound into a slot (its readers' plans built once); a larger one is the trace's own "
        "read, shared by the readers of the same range."))
    pending_held_rows: int = _setting(1_000_000, (
        "A large step's updates waiting for a temporal filter's upper bound are held in the "
        "driver up to this many rows, so that later steps release them by an Arrow cut."))
    arrow_batch_rows: int = _setting(10_000, (
        "Rows of each Arrow record batch sent from the driver to Spark."))
    slot_min_capacity: int = _setting(4096, (
        "The fewest rows a slot of a kept plan holds room for: every smaller batch of its "
        "role binds into the same slot, and so reuses the same plans."), least=1)
    slot_shrink: int = _setting(16, (
        "Each size of slot holds this many times the rows of the size before; a slot with "
        "room for this many times a batch's rows gives way to a smaller one."), least=2)
    rehearsal_rows: int = _setting(64, (
        "A new materialized view rehearses a small step with this many random rows of "
        "each of its large inputs as the change, so that its first real step finds the "
        "slots and plans built (0: no rehearsal)."))
    rehearsal_min_rows: int = _setting(100_000, (
        "Only a view whose largest input holds at least this many rows rehearses: a "
        "rehearsal costs what building a step's plans does (0.5-1 s, whatever the data), "
        "more than creating a view over small inputs does."))
    slot_max_rows: int = _setting(1 << 16, (
        "Batches larger than this are not bound into slots but made local frames of their "
        "own (a power of two)."))
    refresh_small_change: float = _setting(0.1, (
        "refresh=auto steps a view incrementally, without estimates, when its step changes "
        "fewer rows than this share of what its inputs held."))
    operator_recompute_change: float = _setting(0.5, (
        "In a step refresh=auto runs incrementally that is not small, an operator owning "
        "its output "
        "arrangement (a GROUP BY; a join, TopK or window looked up) whose inputs changed at "
        "least this share of the rows they held before recomputes its output from their "
        "snapshots and diffs it with the arrangement; the rest of the plan steps "
        "incrementally (0: never)."))
    refresh_history: int = _setting(16, (
        "Steps of each refresh strategy whose sizes and times refresh=auto estimates from."))

    def replaced(self, changes: Mapping[str, object]) -> RuntimeSettings:
        """These settings with ``changes`` (setting name -> value); a name that is no
        setting or a value that is no number of its type (an integer from the setting's
        least value, 0 unless said, or a fraction between 0 and 1) is a ``ValueError``
        naming it."""
        known = {f.name: f for f in dataclasses.fields(self)}
        checked: dict[str, int | float] = {}
        for name, value in changes.items():
            if name not in known:
                raise ValueError(f"unknown runtime setting {name!r}; the settings are: "
                                 + ", ".join(sorted(known)))
            checked[name] = _checked(name, known[name], value)
        return dataclasses.replace(self, **checked)

    def described(self) -> list[tuple[str, str, str]]:
        """(name, value, meaning) of every setting, in declaration order."""
        return [(f.name, str(getattr(self, f.name)), f.metadata["doc"])
                for f in dataclasses.fields(self)]


def _checked(name: str, setting: dataclasses.Field[Any], value: object) -> int | float:
    if setting.type in ("float", float):
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not 0 <= value <= 1):
            raise ValueError(f"runtime setting {name!r} must be a fraction between 0 and 1,"
                             f" not {value!r}")
        return float(value)
    least = setting.metadata["least"]
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"runtime setting {name!r} must be an integer of at least {least},"
                         f" not {value!r}")
    return value


def parsed(text: str) -> tuple[str, int | float]:
    """``NAME=VALUE`` (the command line's form) as a name and a number."""
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"a runtime setting is NAME=VALUE, not {text!r}")
    try:
        number: int | float = int(value)
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"runtime setting {name.strip()!r} must be a number,"
                             f" not {value!r}") from None
    return name.strip(), number


DEFAULTS = RuntimeSettings()

IN_EXECUTORS: dict[str, int | float] = {
    "driver_batch_rows": 0, "fetched_batch_rows": 0, "table_copy_rows": 0,
    "view_copy_rows": 0, "pending_held_rows": 0, "keyed_read_rows": 0}
"""The settings holding every collection in the executors, whatever its size: each batch in
files arranged by key (``arrangements.batch_files``), read by key, with no driver copy (the
path large collections take; ``connect(settings=IN_EXECUTORS)``, ``matview serve
--setting``)."""

_ACTIVE: ContextVar[RuntimeSettings | None] = ContextVar("matview_runtime_settings",
                                                         default=None)


def active() -> RuntimeSettings:
    """The settings of the statement running in this thread; outside one, those a ``using``
    block set, else the defaults."""
    return _ACTIVE.get() or DEFAULTS


@contextmanager
def using(settings: RuntimeSettings) -> Iterator[None]:
    """Run the block with ``settings`` active in this thread."""
    token = _ACTIVE.set(settings)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@contextmanager
def in_loop() -> Iterator[None]:
    """Run the block as a recursive query's loop: the plans it keeps in the driver read
    at most ``loop_driver_plan_rows`` local rows each (it keeps ``loop_plans_kept``)."""
    settings = active()
    with using(dataclasses.replace(settings,
                                   driver_plan_rows=settings.loop_driver_plan_rows)):
        yield
