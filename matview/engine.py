"""Statement execution: the facade that dispatches each statement to the layer that runs it.

Each statement is bound by ``sql`` (with its parameters and dependencies), planned by
``planner`` and run by the ``runtime``: its controller runs plans once and steps the
materialized views' dataflows, ``peek`` reads results out of Spark, ``transactions`` makes,
checks and commits the writes. Writes are transactions at a new time from the timestamp
oracle; materialized views are brought up to date lazily, when a read, a SUBSCRIBE fetch or
a dependent view needs them. A statement that fails changes nothing: writes append their
batch only once computed and checked, a dataflow step applies its state only once it all
succeeded. The engine runs the statements that define objects (each forgets the reads the
controller keeps); reads run in ``queries``, writes of a table's rows in ``changes``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from matview import alter, alter_table, changes, comments, indexes, queries
from matview.catalog import Entry, LiveCatalog
from matview.clock import TimestampOracle
from matview.durability import Durability
from matview.errors import ProgrammingError
from matview.ir.mz_now import bind_mz_now, reads_mz_now
from matview.ir.physical import Operator as PhysicalOperator
from matview.ir.physical import reads
from matview.ir.relation import Field, Get, Relation
from matview.ir.walk import bottom_up
from matview.planner.lower import lower
from matview.planner.pipeline import physical
from matview.progress import Reporter, described
from matview.result import Result
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import TIME, Leaf
from matview.runtime.controller import Controller, Limits
from matview.runtime.dataflow import Dataflow
from matview.runtime.io import peek
from matview.runtime.io.constraints import Constraints
from matview.runtime.io.transactions import Transactions
from matview.runtime.settings import active
from matview.sinks import Sinks
from matview.sources import Sources
from matview.sql.catalog import CatalogItem
from matview.sql.parameters import bind_parameters
from matview.sql.parse import bind_statement, explain_statement, one_statement, split
from matview.sql.statements import (
    AlterRename,
    AlterTable,
    AlterTableRenameColumn,
    AlterTableRenameConstraint,
    CommentOn,
    CopyFrom,
    CopyTo,
    CreateIndex,
    CreateSink,
    CreateSource,
    CreateTable,
    CreateTableAs,
    CreateView,
    Delete,
    Drop,
    DropIndex,
    DropSink,
    Explain,
    Insert,
    Query,
    Show,
    SubscribeTo,
    Update,
    Upsert,
)


class Engine:
    """Runs statements against one catalog on one SparkSession."""

    def __init__(self, spark: SparkSession, oracle: TimestampOracle, limits: Limits,
                 refresh: str = "auto", files: Sequence[Path] = (),
                 progress: bool = True) -> None:
        self.spark = spark
        self.progress = Reporter(spark) if progress else None
        """Shows the progress of long statements on a terminal (``matview.progress``)."""
        self.files = tuple(files)
        """The directories COPY may read and write files in (resolved)."""
        self.oracle = oracle
        self.catalog = LiveCatalog()
        self.controller = Controller(spark, self.trace_of, limits, refresh)
        self.cursors: dict[int, tuple[str, int]] = {}
        """Open subscriptions: id -> (collection name, time up to which it has read)."""
        self.sinks = Sinks(self)
        self.sources = Sources(self)
        self.transactions = Transactions(spark, oracle, self._committed)
        self.durability: Durability | None = None
        """Where its state is saved, for a durable database (``matview.durability``)."""
        self.await_writer: Callable[[], None] = lambda: None
        """Waits until no other thread's transaction is open (set by the connection, whose
        lock it releases meanwhile)."""

    # --- statements ---------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Result:
        """Run the one statement ``sql`` (several would let text built from user input run
        statements of its own: ``executescript`` runs a script)."""
        tree = one_statement(sql)
        if params is not None:
            tree = bind_parameters(tree, params)
        return self.run(bind_statement(tree, self.catalog))

    def execute_script(self, sql: str) -> Result:
        """Run every statement of ``sql`` in order, each on its own, stopping at the first
        that fails; the result is the last one's."""
        result = Result()
        for tree in split(sql):
            result = self.run(bind_statement(tree, self.catalog))
        return result

    def explain(self, sql: str, stage: str, fmt: str, options: Sequence[str]) -> str:
        """EXPLAIN of one statement (or ``MATERIALIZED VIEW name``) at ``stage`` (a plan
        stage, ``trace`` or ``analyze``) in ``fmt``, as text."""
        tree = explain_statement(sql, stage, fmt, options)
        result = self.run(bind_statement(tree, self.catalog))
        assert result.table is not None
        return str(result.table.column(0)[0].as_py())

    def run(self, stmt: object) -> Result:
        """Run bound statement ``stmt``: in the calling thread's transaction, reads and
        writes (which see its writes: ``reading``); beside another thread's, reads of the
        last committed state, while anything else waits for it to end (``await_writer``)."""
        if self.transactions.open is not None and not isinstance(stmt, IN_TRANSACTION):
            raise ProgrammingError(
                f"{described(stmt)} cannot run inside a transaction (a transaction reads "
                "and writes tables; CREATE, DROP, SUBSCRIBE and the like run outside one): "
                "commit it first")
        if self.transactions.elsewhere and not isinstance(stmt, READS):
            self.await_writer()
        if not isinstance(stmt, READS + WRITES):
            self.controller.forget_reads()
        with self.showing(described(stmt)):
            result = HANDLERS[type(stmt)](self, stmt)
        if not isinstance(stmt, WRITES):  # a write's commit made it durable
            self.save()
        return result

    def save(self) -> None:
        """Save the state of a durable database (``Durability.save``: nothing when
        unchanged, or when the database lives in this process only)."""
        if self.durability is not None:
            self.durability.save()

    def _committed(self, batches: list[tuple[str, Leaf]], at: int) -> None:
        """After every committed write (its ``batches`` by table, at ``at``): made durable
        (``Durability.commit``: a write returns once it is), the sinks append."""
        if self.durability is not None:
            self.durability.commit(batches, at)
        self.sinks.flush()

    def showing(self, what: str) -> contextlib.AbstractContextManager[None]:
        """The progress of a step ``what`` shown while it runs long (``matview.progress``)."""
        return contextlib.nullcontext() if self.progress is None else \
            self.progress.showing(what)

    def _create_table(self, stmt: CreateTable) -> Result:
        if not self._exists(stmt.name, stmt.if_not_exists):
            for key in stmt.keys:
                indexes.free(self, key.name)
            item = CatalogItem(stmt.name, "table", stmt.fields, keys=stmt.keys,
                               not_null=stmt.not_null, defaults=stmt.defaults)
            self.catalog.add(Entry(item, trace=self.table_trace(item)), set())
            indexes.backing(self.catalog, item)
        return Result()

    def table_trace(self, item: CatalogItem) -> Trace:
        """An empty trace of table ``item``, arranged by its first column, which its writes
        are checked by, or its keys'."""
        firsts = [f"c{key.columns[0]}" for key in item.keys] or ["c0"]
        trace = Trace(self.spark, len(item.fields), copy_rows=active().table_copy_rows,
                      key=firsts[0])
        for first in firsts[1:]:
            trace.arrange(first)
        return trace

    def _create_table_as(self, stmt: CreateTableAs) -> Result:
        """The query runs first: when it fails, no table is created."""
        if self._exists(stmt.table.name, stmt.table.if_not_exists):
            return Result()
        rows = self.evaluate(stmt.query.plan)
        self._create_table(stmt.table)
        try:
            count = 0 if rows is None else self.write(stmt.table.name,
                                                      peek.refusing_negative(rows).drop(TIME))
        except Exception:
            self.catalog.remove(stmt.table.name)
            raise
        return Result(rowcount=count)

    def _exists(self, name: str, if_not_exists: bool) -> bool:
        if self.catalog.lookup(name) is None:
            return False
        if if_not_exists:
            return True
        raise ProgrammingError(f'relation "{name}" already exists')

    def create_view(self, stmt: CreateView, resume: Resume | None = None) -> Result:
        """Create the view, or with OR REPLACE put it in the place of the one of its name
        (``LiveCatalog.replaceable``): its new dataflow built first, so readers never miss
        it, then the old one's subscriptions ended. ``resume``: a materialized view's
        dataflow and output trace with saved state (``matview.durability``), or None to
        compute its contents now."""
        fields = tuple(Field(n, t) for n, t in zip(stmt.column_names, stmt.plan.types))
        kind = "materialized view" if stmt.materialized else "view"
        replacing = stmt.or_replace and self.catalog.lookup(stmt.name) is not None
        if replacing:
            self.catalog.replaceable(stmt.name, kind, fields, stmt.depends_on)
            self.sinks.check_drop([stmt.name], "replace")
        elif self._exists(stmt.name, stmt.if_not_exists):
            return Result()
        item = CatalogItem(stmt.name, kind, fields, stmt.query_sql, refresh=stmt.refresh)
        entry = Entry(item)
        if stmt.materialized:
            plan = lower(physical(stmt.plan))
            resumed = None if resume is None else resume(plan, len(fields))
            if resumed is None:
                self._refresh(reads(plan))
                flow, trace = self.controller.start(plan, len(fields), self.oracle.read())
            else:
                flow, trace = resumed
            flow.policy.written(stmt.refresh)
            entry = Entry(item, trace=trace, dataflow=flow, plan=stmt.plan)
        if replacing:
            self.catalog.remove(stmt.name)
            self.end_cursors(stmt.name)
        self.catalog.add(entry, set(stmt.depends_on))
        return Result()

    def _drop(self, stmt: Drop) -> Result:
        dropped = self.catalog.dropped(stmt)
        dropped += self.sources.companions(dropped)
        self.sinks.check_drop(dropped)
        for name in dropped:
            self.catalog.remove(name)
            self.end_cursors(name)
        return Result()

    def end_cursors(self, name: str) -> None:
        """End the subscriptions following ``name`` (dropped or replaced)."""
        for key, (target, _) in list(self.cursors.items()):
            if target == name:
                del self.cursors[key]

    # --- reads --------------------------------------------------------------------------

    def evaluate(self, plan: Relation) -> DataFrame | None:
        """``plan``'s contents at the current time, as consolidated updates, run once as a
        dataflow over the current snapshots (materialized views brought up to date first)."""
        return self.evaluate_planned(self.planned(plan))

    def planned(self, plan: Relation) -> Relation:
        """``plan`` planned (``physical``) for a read now: in a transaction that wrote, each
        materialized view built on a table it wrote is read as its query (its dataflow has
        not seen the writes, which reach it on commit)."""
        pending = self.transactions.open
        if pending is not None and pending.writes:
            stale = {v for t in pending.tables for v in self.catalog.dependents(t)}

            def inline(node: Relation) -> Relation:
                view = self.catalog.entries[node.name].plan if isinstance(node, Get) and \
                    node.name in stale else None
                return node if view is None else bottom_up(view, inline)

            plan = bottom_up(plan, inline)
        return physical(plan)

    def reading(self, name: str) -> Trace:
        """The trace a read of ``name`` reads: in a transaction, with its writes
        (``Transaction.overlay``)."""
        pending = self.transactions.open
        trace = self.trace_of(name)
        return trace if pending is None else pending.overlay(trace)

    def evaluate_planned(self, plan: Relation, as_of: int | None = None) -> DataFrame | None:
        """``evaluate`` of a plan already planned (``physical``), at time ``as_of`` (now
        when None; ``read_time``)."""
        return self.controller.run_once(*self.read_plan(plan, as_of))

    def read_plan(self, plan: Relation, as_of: int | None
                  ) -> tuple[PhysicalOperator, int, Callable[[str], Trace] | None]:
        """A read of ``plan`` (planned) at ``as_of`` (now when None) as a run once reads it:
        its lowered plan, its time and where it reads stored collections (None: the
        catalog), its materialized views brought up to date first. One filtering a
        collection to some keys of an index reads only their rows (``indexes.peeked``);
        ``mz_now()`` is its time."""
        lowered = lower(plan)
        self._refresh(reads(lowered))
        now = self.read_time(reads(lowered), as_of)
        if reads_mz_now(plan):
            plan = bind_mz_now(plan, now)
            lowered = lower(plan)
        peek = indexes.peeked(self, plan, now)
        if peek is None and self.transactions.open is None:
            return lowered, now, None
        return lowered, now, lambda name: peek[1] if (
            peek is not None and name == peek[0]) else self.reading(name)

    def check_errors(self, name: str, at: int | None = None) -> None:
        """Raise the error that materialized view ``name`` holds now (or at ``at``), if it
        holds one."""
        peek.check_errors(self.trace_of(name), name, self.oracle.read() if at is None else at)

    def read_time(self, names: Iterable[str], as_of: int | None) -> int:
        """The time a read of collections ``names`` is made at: now, or ``as_of`` (``AS
        OF``) when every one of them still holds it: not after now, not before its
        ``since`` (times compacted away, ``retain_history``; a view's first time)."""
        now = self.oracle.read()
        if as_of is None:  # in a transaction: its time, where its writes are
            pending = self.transactions.open
            return now if pending is None else pending.at
        if as_of > now:
            raise ProgrammingError(f"AS OF {as_of} is later than the latest time, {now}")
        for name in names:
            entry = self.catalog.entries[name]
            assert entry.trace is not None
            earliest = entry.trace.since
            if as_of < earliest:
                raise ProgrammingError(
                    f'AS OF {as_of} is earlier than the earliest time "{name}" can be read '
                    f"at, {earliest} (history before it is compacted: the retain_history "
                    "setting keeps more)")
        return as_of

    def trace_of(self, name: str) -> Trace:
        entry = self.catalog.entries[name]
        assert entry.trace is not None, f"{name} has no trace"
        return entry.trace

    def refresh(self, name: str) -> None:
        """Bring materialized view ``name`` (and what it reads) up to date, its progress
        shown when long."""
        with self.showing(f"refresh {name}"):
            self._refresh({name})
        self.save()

    def _refresh(self, names: set[str]) -> None:
        """Step the materialized views ``names`` depend on (and they) to the current time
        (``Controller.refresh``), the sources they read brought up to date first."""
        self.sources.poll(names)
        self.controller.refresh(names, self.catalog, self.oracle.read(),
                                list(self.cursors.values()))

    # --- writes -------------------------------------------------------------------------

    def table_item(self, name: str) -> CatalogItem:
        """Table ``name``'s catalog item (ProgrammingError when there is no such table)."""
        entry = self.catalog.entries.get(name)
        if entry is None or entry.item.kind != "table":
            raise ProgrammingError(f'table "{name}" does not exist')
        return entry.item

    def write(self, name: str, updates: DataFrame | pa.Table, small: bool = True,
              own_rows: bool = False) -> int:
        """Commit update rows (data columns then ``_diff``) to table ``name`` at a new time,
        or stage them in the open transaction (``Transactions.write``, which checks them);
        returns the number of rows changed."""
        item = self.table_item(name)
        constraints = None if not (item.keys or item.not_null) else Constraints(
            name, tuple(f.name for f in item.fields), tuple(sorted(item.not_null)),
            tuple((key.name, key.columns) for key in item.keys))
        return self.transactions.write(name, self.trace_of(name), [f.type for f in item.fields],
                                       updates, small, own_rows, constraints)


WRITES = (Insert, Upsert, Delete, Update, CopyFrom)
"""The statements that only write (their commits are made durable as they commit)."""

READS = (Query, Show, Explain, CopyTo, SubscribeTo)
"""The statements that only read: they run beside another thread's open transaction."""

IN_TRANSACTION = (*WRITES, Query, Show, Explain, CopyTo)
"""The statements a transaction may run."""

Resume = Callable[[PhysicalOperator, int], tuple[Dataflow, Trace] | None]
"""A view's resumption from saved state (``Engine.create_view``)."""

HANDLERS: dict[type, Callable[[Engine, Any], Result]] = {
    CreateTable: Engine._create_table, CreateView: Engine.create_view, Insert: changes.insert,
    Upsert: changes.upsert, Delete: changes.delete, Update: changes.update, Drop: Engine._drop,
    Show: queries.show, Query: queries.query, Explain: queries.explain,
    CreateTableAs: Engine._create_table_as, CopyFrom: changes.copy_from,
    CopyTo: queries.copy_to, CreateSink: lambda engine, stmt: engine.sinks.create(stmt),
    DropSink: lambda engine, stmt: engine.sinks.drop(stmt), SubscribeTo: queries.subscribe,
    CreateIndex: indexes.create, DropIndex: indexes.drop, AlterTable: alter_table.alter_table,
    AlterTableRenameColumn: alter.rename_column, AlterRename: alter.rename,
    AlterTableRenameConstraint: alter.rename_constraint, CommentOn: comments.comment,
    CreateSource: lambda engine, stmt: engine.sources.create(stmt),
}
"""The handler of each type of bound statement."""
