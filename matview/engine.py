"""Statement execution: the facade that dispatches each statement to the layer that runs it.

Each statement is bound by ``sql`` (with its parameters and dependencies), planned by
``planner`` and run by the ``runtime``: its controller runs plans once and steps the
materialized views' dataflows, ``peek`` reads results out of Spark, ``writes`` makes and
checks batches. Writes are transactions at a new time from the timestamp oracle;
materialized views are brought up to date lazily, when a read, a SUBSCRIBE fetch or a
dependent view needs them. A statement that fails changes nothing: writes append their batch
only after it was computed and checked, and a dataflow step applies its state only after the
whole step succeeded.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from matview import files
from matview.catalog import Entry, LiveCatalog
from matview.clock import TimestampOracle
from matview.errors import ProgrammingError
from matview.ir.physical import reads
from matview.ir.relation import Constant, Field, Get, Relation, TopK
from matview.ir.sort_keys import SortKey, total_order
from matview.ir.types import TEXT, SqlType
from matview.planner.explain import explain_analyze, explain_plan, explain_trace
from matview.planner.lower import lower
from matview.planner.pipeline import physical
from matview.progress import Reporter
from matview.rows import update_rows
from matview.runtime.arrangements.trace import TABLE_COPY_ROWS, Trace
from matview.runtime.arrangements.updates import DIFF, TIME
from matview.runtime.controller import Controller, Limits
from matview.runtime.io import peek, writes
from matview.runtime.lowering.types import column_names
from matview.sinks import Sink
from matview.sql.catalog import CatalogItem
from matview.sql.parameters import bind_parameters
from matview.sql.parse import bind_statement, explain_statement, one_statement, split
from matview.sql.statements import (
    CopyFrom,
    CopyTo,
    CreateSink,
    CreateTable,
    CreateTableAs,
    CreateView,
    Delete,
    Drop,
    DropSink,
    Explain,
    Insert,
    Query,
    Show,
    Update,
)


@dataclass(frozen=True)
class Result:
    """What a statement returns: named, typed columns and rows (as Arrow), or a row count."""

    columns: tuple[str, ...] = ()
    types: tuple[SqlType, ...] = ()
    table: pa.Table | None = None
    rowcount: int = -1


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
        self.transaction: writes.Transaction | None = None
        self.sinks: dict[str, Sink] = {}

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
        if self.transaction is not None and not isinstance(stmt, CopyFrom) and not (
                isinstance(stmt, Insert) and isinstance(stmt.source, Constant)):
            self._outside_transaction(type(stmt).__name__.upper())
        handlers = {
            CreateTable: self._create_table, CreateView: self._create_view, Insert: self._insert,
            Delete: self._delete, Update: self._update, Drop: self._drop, Show: self._show,
            Query: self._query, Explain: self._explain, CreateTableAs: self._create_table_as,
            CopyFrom: self._copy_from, CopyTo: self._copy_to, CreateSink: self._create_sink,
            DropSink: self._drop_sink,
        }
        with self.showing(_described(stmt)):
            return handlers[type(stmt)](stmt)  # type: ignore[operator]

    def showing(self, what: str) -> contextlib.AbstractContextManager[None]:
        """The progress of a step ``what`` shown while it runs long (``matview.progress``)."""
        return contextlib.nullcontext() if self.progress is None else \
            self.progress.showing(what)

    def _create_table(self, stmt: CreateTable) -> Result:
        if not self._exists(stmt.name, stmt.if_not_exists):
            item = CatalogItem(stmt.name, "table", stmt.fields)
            trace = Trace(self.spark, len(stmt.fields), copy_rows=TABLE_COPY_ROWS)
            self.catalog.add(Entry(item, trace=trace), set())
        return Result()

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

    def _copy_from(self, stmt: CopyFrom) -> Result:
        item = self.table_item(stmt.table)
        rows = files.read_rows(files.confined(stmt.path, self.files), stmt.format, item,
                               stmt.columns)
        return Result(rowcount=self.write(stmt.table, update_rows(rows, item, 1)))

    def _copy_to(self, stmt: CopyTo) -> Result:
        path = files.confined(stmt.path, self.files)
        result = self._query(stmt.query)
        assert result.table is not None
        files.write_rows(result.table, result.columns, path, stmt.format)
        return Result(rowcount=result.table.num_rows)

    def _create_sink(self, stmt: CreateSink) -> Result:
        if stmt.name in self.sinks or self.catalog.lookup(stmt.name) is not None:
            raise ProgrammingError(f'"{stmt.name}" already exists')
        sink = Sink(self, stmt.name, stmt.view, files.confined(stmt.path, self.files),
                    stmt.kind)
        self.sinks[stmt.name] = sink
        sink.flush()  # the view's contents now
        return Result()

    def _drop_sink(self, stmt: DropSink) -> Result:
        sink = self.sinks.pop(stmt.name, None)
        if sink is None and not stmt.if_exists:
            raise ProgrammingError(f'sink "{stmt.name}" does not exist')
        if sink is not None:
            sink.close()
        return Result()

    def _flush_sinks(self) -> None:
        """After a committed write: every sink appends its view's changes."""
        for sink in self.sinks.values():
            sink.flush()

    def _exists(self, name: str, if_not_exists: bool) -> bool:
        if self.catalog.lookup(name) is None:
            return False
        if if_not_exists:
            return True
        raise ProgrammingError(f'relation "{name}" already exists')

    def _create_view(self, stmt: CreateView) -> Result:
        if self._exists(stmt.name, stmt.if_not_exists):
            return Result()
        fields = tuple(Field(n, t) for n, t in zip(stmt.column_names, stmt.plan.types))
        if not stmt.materialized:
            item = CatalogItem(stmt.name, "view", fields, stmt.query_sql)
            self.catalog.add(Entry(item), set(stmt.depends_on))
            return Result()
        plan = lower(physical(stmt.plan))
        self._refresh(reads(plan))
        flow, trace = self.controller.start(plan, len(fields), self.oracle.read())
        item = CatalogItem(stmt.name, "materialized view", fields, stmt.query_sql)
        self.catalog.add(Entry(item, trace=trace, dataflow=flow, plan=stmt.plan),
                         set(stmt.depends_on))
        return Result()

    def _drop(self, stmt: Drop) -> Result:
        dropped = self.catalog.dropped(stmt)
        for sink in self.sinks.values():
            if sink.view in dropped:
                raise ProgrammingError(f'cannot drop "{sink.view}": sink "{sink.name}" reads '
                                       f"it (DROP SINK {sink.name} first)")
        for name in dropped:
            self.catalog.remove(name)
            for key, (target, _) in list(self.cursors.items()):
                if target == name:
                    del self.cursors[key]
        return Result()

    def _show(self, stmt: Show) -> Result:
        if stmt.what == "columns":
            assert stmt.name is not None
            item = self.catalog.lookup(stmt.name)
            if item is None:
                raise ProgrammingError(f'relation "{stmt.name}" does not exist')
            table = pa.table({"name": [f.name for f in item.fields],
                              "type": [str(f.type) for f in item.fields]})
            return Result(("name", "type"), (TEXT, TEXT), table)
        kind = {"tables": "table", "views": "view",
                "materialized views": "materialized view"}[stmt.what]
        return Result(("name",), (TEXT,), pa.table({"name": self.catalog.of_kind(kind)}))

    def _explain(self, stmt: Explain) -> Result:
        if stmt.stage == "analyze":
            assert stmt.view is not None
            self._refresh({stmt.view})
            flow = self.catalog.entries[stmt.view].dataflow
            assert flow is not None
            text = explain_analyze(flow.plan, flow.analyze(), stmt.format,
                                   f"Dataflow of materialized view {stmt.view}:",
                                   flow.policy.stats())
        else:
            plan = (stmt.query.plan if stmt.query is not None  # else the view's raw plan
                    else self.catalog.entries[str(stmt.view)].plan)
            assert plan is not None
            text = (explain_trace(plan, stmt.format, stmt.options) if stmt.stage == "trace"
                    else explain_plan(plan, stmt.stage, stmt.format, stmt.options))
        return Result(("plan",), (TEXT,), pa.table({"plan": [text]}))

    # --- reads --------------------------------------------------------------------------

    def _query(self, stmt: Query) -> Result:
        plan, table = physical(stmt.plan), None
        order = stmt.order_by or self._view_order(plan)
        if isinstance(plan, Get) and not (stmt.order_by or stmt.offset or stmt.limit is not None):
            self._refresh({plan.name})  # a stored collection's rows may all be in the driver
            self.check_errors(plan.name)
            table = peek.held_rows(self.trace_of(plan.name), plan.name, self.oracle.read(),
                                   order)
        if table is None:
            table = peek.rows(self._run(plan), stmt.plan.types, order, stmt.offset,
                              stmt.limit)
        table = table.rename_columns(column_names(len(stmt.column_names)))
        return Result(stmt.column_names, stmt.plan.types, table, table.num_rows)

    def _view_order(self, plan: Relation) -> tuple[SortKey, ...]:
        """The order in which a query reading ``plan`` (planned) returns its rows when it
        has no ORDER BY: a materialized view kept as a ``TopK`` read whole is read in the
        TopK's order (ties broken by every other column), anything else in no order."""
        entry = self.catalog.entries.get(plan.name) if isinstance(plan, Get) else None
        view = None if entry is None else entry.plan
        return total_order(view.order_by, view.arity) if isinstance(view, TopK) else ()

    def evaluate(self, plan: Relation) -> DataFrame | None:
        """``plan``'s contents at the current time, as consolidated updates, run once as a
        dataflow over the current snapshots (materialized views brought up to date first)."""
        return self._run(physical(plan))

    def _run(self, plan: Relation) -> DataFrame | None:
        """``evaluate`` of a plan already planned (``physical``)."""
        lowered = lower(plan)
        self._refresh(reads(lowered))
        return self.controller.run_once(lowered, self.oracle.read())

    def check_errors(self, name: str) -> None:
        """Raise the error that materialized view ``name`` holds now, if it holds one."""
        peek.check_errors(self.trace_of(name), name, self.oracle.read())

    def trace_of(self, name: str) -> Trace:
        entry = self.catalog.entries[name]
        assert entry.trace is not None, f"{name} has no trace"
        return entry.trace

    def _outside_transaction(self, what: str) -> None:
        raise ProgrammingError(
            f"{what} cannot run inside a transaction: a transaction only writes "
            "(INSERT ... VALUES, insert, delete); commit it first")

    def refresh(self, name: str) -> None:
        """Bring materialized view ``name`` (and what it reads) up to date, its progress
        shown when long."""
        with self.showing(f"refresh {name}"):
            self._refresh({name})

    def _refresh(self, names: set[str]) -> None:
        """Step every materialized view ``names`` depend on (and they) to the current time,
        in dependency order, then compact. Every other materialized view steps with them,
        in the same Spark job (``Controller.refresh``), as a database maintaining its views
        at each commit would; when one of those fails to step, the views ``names`` need
        step alone, and only their own failure is raised. A read of tables alone steps no
        view (their changes wait, to step together with later ones)."""
        if self.transaction is not None:
            self._outside_transaction("a read")
        needed = self.catalog.upstream(names)
        every = needed if all(self.catalog.entries[n].dataflow is None for n in needed) else (
            self.catalog.upstream(set(self.catalog.of_kind("materialized view")) | names))
        for order in (every, needed) if every != needed else (needed,):
            try:
                self.controller.refresh(order, self.catalog.entries, self.oracle.read(),
                                        list(self.cursors.values()), self.catalog.dependents)
                return
            except Exception:
                if order is needed:
                    raise

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
        or stage them in the open transaction; returns the number of rows changed.

        No write may leave a row with a negative multiplicity: updates with negative diffs
        are checked against the table (and the transaction's staged writes to it) before
        anything is appended, Arrow updates before they are stored and DataFrames once
        computed. Only ``own_rows`` writes skip the check: SQL DELETE and UPDATE retract
        rows just read from the table itself, which cannot go negative."""
        item, trace, pending = self.table_item(name), self.trace_of(name), self.transaction
        staged = [] if pending is None else pending.staged(trace)
        checked = own_rows or isinstance(updates, pa.Table)
        if isinstance(updates, pa.Table) and not own_rows and writes.retracts(updates):
            writes.check_retractions(name, trace, updates, staged)
        at = self.oracle.peek_write() if pending is None else pending.at
        leaf, changed, retracts = writes.batch(self.spark, updates,
                                               [f.type for f in item.fields], small, at)
        if leaf is not None and retracts and not checked:
            writes.check_retractions(name, trace, leaf.df if leaf.table is None
                                     else leaf.table, staged)
        if pending is not None:
            pending.writes.append((trace, leaf))
        else:
            trace.append(leaf, at, at)
            self.oracle.commit_write(at)
            self._flush_sinks()
        return changed

    def begin(self) -> None:
        """Open a transaction: writes until ``commit`` share one time and land together."""
        if self.transaction is not None:
            raise ProgrammingError("a transaction is already open")
        self.transaction = writes.Transaction(self.oracle.peek_write())

    def commit(self) -> None:
        """Make the open transaction's writes visible, all at its time."""
        pending, self.transaction = self.transaction, None
        if pending is not None and pending.writes:
            pending.commit()
            self.oracle.commit_write(pending.at)
            self._flush_sinks()

    def rollback(self) -> None:
        """Forget the open transaction's writes."""
        self.transaction = None

    def _insert(self, stmt: Insert) -> Result:
        if isinstance(stmt.source, Constant):
            return Result(rowcount=self.write(stmt.table, writes.constant_updates(stmt.source)))
        df = self.evaluate(stmt.source)
        return Result(rowcount=0 if df is None else self.write(
            stmt.table, peek.refusing_negative(df).drop(TIME)))

    def _delete(self, stmt: Delete) -> Result:
        changes = self.evaluate(stmt.changes)
        return Result(rowcount=0 if changes is None else self.write(
            stmt.table, changes.drop(TIME), own_rows=True))

    def _update(self, stmt: Update) -> Result:
        matched = self.evaluate(stmt.matched)
        if matched is None:
            return Result(rowcount=0)
        count = int(matched.select(F.sum(DIFF)).first()[0] or 0)
        changes = self.evaluate(stmt.changes)
        if changes is not None:
            self.write(stmt.table, changes.drop(TIME), own_rows=True)
        return Result(rowcount=count)


def _described(stmt: object) -> str:
    """How progress names a statement: its kind and the object it is about."""
    words = re.sub(r"(?<!^)(?=[A-Z])", " ", type(stmt).__name__).upper()
    if getattr(stmt, "materialized", False):
        words = words.replace("VIEW", "MATERIALIZED VIEW")
    name = next((getattr(stmt, a) for a in ("name", "table", "view")
                 if isinstance(getattr(stmt, a, None), str)), None)
    return words if name is None else f"{words} {name}"
