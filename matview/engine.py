"""Statement execution: the one place that knows every layer.

Each statement is bound by ``sql``, planned by ``planner`` and run by ``runtime``. Writes
are transactions at a new time from the timestamp oracle; materialized views are brought up
to date lazily, when a read, a SUBSCRIBE fetch or a dependent view needs them. A statement
that fails changes nothing: writes append their batch only after it was computed, and a
dataflow step applies its state only after the whole step succeeded.
"""

from __future__ import annotations

import datetime
import decimal
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import sqlglot
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from sqlglot import exp

from matview.catalog import Entry, LiveCatalog
from matview.clock import TimestampOracle
from matview.errors import DataError, ProgrammingError
from matview.ir.relation import (
    Constant,
    Field,
    Filter,
    Get,
    Linear,
    Map,
    Project,
    Relation,
    gets,
)
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.ir.types import TEXT, SqlType
from matview.planner.explain import explain_analyze, explain_plan, explain_trace
from matview.planner.pipeline import STAGES, physical
from matview.runtime.dataflow import Dataflow
from matview.runtime.join import DEFAULT_JOIN_ROWS
from matview.runtime.linear import apply_steps
from matview.runtime.trace import NegativeRows, Trace
from matview.runtime.types import column_names, spark_type, update_schema
from matview.runtime.updates import DIFF, TIME, Leaf, consolidate, materialize, stored
from matview.sql.catalog import CatalogItem
from matview.sql.dialect import EXPLAIN_FORMATS, EXPLAIN_OPTIONS, Matview
from matview.sql.dialect import Explain as ExplainTree
from matview.sql.parse import bind_statement, split
from matview.sql.statements import (
    CreateTable,
    CreateView,
    Delete,
    Drop,
    Explain,
    Insert,
    Query,
    Show,
    Update,
)


@dataclass
class Transaction:
    """Writes staged at time ``at``, applied together on commit."""

    at: int
    writes: list[tuple[Trace, Leaf | None]] = field(default_factory=list)


@dataclass(frozen=True)
class Result:
    """What a statement returns: named, typed columns and rows (as Arrow), or a row count."""

    columns: tuple[str, ...] = ()
    types: tuple[SqlType, ...] = ()
    table: pa.Table | None = None
    rowcount: int = -1


def _literal(value: object) -> exp.Expression:
    """A query parameter as a SQL literal."""
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float, decimal.Decimal)):
        return exp.Literal.number(value)
    if isinstance(value, datetime.datetime):
        return exp.Cast(this=exp.Literal.string(value.isoformat(sep=" ")),
                        to=exp.DataType.build("timestamp"))
    if isinstance(value, datetime.date):
        return exp.Cast(this=exp.Literal.string(value.isoformat()),
                        to=exp.DataType.build("date"))
    if isinstance(value, str):
        return exp.Literal.string(value)
    raise ProgrammingError(f"cannot use a parameter of type {type(value).__name__}")


def _bind_parameters(tree: exp.Expression, params: Sequence[object]) -> exp.Expression:
    holes = list(tree.find_all(exp.Placeholder))
    if len(holes) != len(params):
        raise ProgrammingError(
            f"the statement has {len(holes)} parameters but {len(params)} were given")
    for hole, value in zip(holes, params):
        hole.replace(_literal(value))
    return tree


NEGATIVE_ROWS = ("the result holds a row with negative multiplicity, which no SQL row can "
                 "have (repeat_row with a negative count retracted more copies than there "
                 "were)")


def _retracts(updates: pa.Table) -> bool:
    """Whether Arrow ``updates`` hold a negative diff."""
    return updates.num_rows > 0 and pc.min(updates[DIFF]).as_py() < 0


def _diff_stats(updates: pa.Table) -> tuple[int, bool]:
    """How many rows Arrow ``updates`` change (the sum of their diffs' sizes), and whether
    they retract any."""
    return int(pc.sum(pc.abs(updates[DIFF])).as_py()), _retracts(updates)


def _refusing_negative(updates: DataFrame) -> DataFrame:
    """``updates`` (a query's consolidated result) whose computation fails with NEGATIVE_ROWS
    at a row of negative multiplicity: such a result is an error (as when read), also when
    inserted, rather than a deletion."""
    diff = F.col(DIFF)
    failed = F.raise_error(F.concat(F.lit(NEGATIVE_ROWS + " (multiplicity "),
                                    diff.cast("string"), F.lit(")")))
    return updates.withColumn(DIFF, F.when(diff < 0, failed).otherwise(diff))


def rows_of(table: pa.Table) -> list[tuple[object, ...]]:
    """Arrow rows as Python tuples (SQL TIMESTAMP has no zone: values come back naive)."""
    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type) and column.type.tz is not None:
            column = column.cast(pa.timestamp(column.type.unit))
        columns.append(column.to_pylist())
    return list(zip(*columns)) if columns else [() for _ in range(table.num_rows)]


class Engine:
    """Runs statements against one catalog on one SparkSession."""

    def __init__(self, spark: SparkSession, oracle: TimestampOracle,
                 max_table_function_rows: int = DEFAULT_ROW_LIMIT,
                 max_join_rows: int = DEFAULT_JOIN_ROWS) -> None:
        self.spark = spark
        self.oracle = oracle
        self.row_limit = max_table_function_rows
        """The most rows a table function may produce for one input row."""
        self.join_limit = max_join_rows
        """The most rows a join may produce in one step."""
        self.catalog = LiveCatalog()
        self.cursors: dict[int, tuple[str, int]] = {}
        """Open subscriptions: id -> (collection name, time up to which it has read)."""
        self.transaction: Transaction | None = None

    # --- statements ---------------------------------------------------------------------

    def execute(self, sql: str, params: Sequence[object] | None = None) -> Result:
        """Run the one statement ``sql`` (several would let text built from user input run
        statements of its own: ``executescript`` runs a script)."""
        trees = split(sql)
        if len(trees) != 1:
            raise ProgrammingError(
                "execute() takes one statement, " + ("got none" if not trees else
                                                     f"got {len(trees)}")
                + "; use executescript() to run several")
        tree = trees[0] if params is None else _bind_parameters(trees[0], params)
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
        stages = (*STAGES, "trace", "analyze")
        for value, allowed, what in ((stage, stages, "stage"), (fmt, EXPLAIN_FORMATS, "format"),
                                     *((o, EXPLAIN_OPTIONS, "option") for o in options)):
            if value.lower() not in [a.lower() for a in allowed]:
                raise ProgrammingError(f"unknown EXPLAIN {what} {value!r}; expected one of "
                                       + ", ".join(a.lower() for a in allowed))
        view = re.fullmatch(r"\s*materialized\s+view\s+(.+?)\s*;?\s*", sql, re.I | re.S)
        if view is not None:
            target = sqlglot.exp.to_table(view.group(1), dialect=Matview)
        else:
            trees = split(sql)
            if len(trees) != 1:
                raise ProgrammingError("explain() takes exactly one statement")
            target = trees[0]
        tree = ExplainTree(this=target, stage=stage.lower(), format=fmt.lower(),
                           options=[exp.var(o.lower()) for o in options],
                           view=view is not None)
        result = self.run(bind_statement(tree, self.catalog))
        assert result.table is not None
        return str(result.table.column(0)[0].as_py())

    def run(self, stmt: object) -> Result:
        if self.transaction is not None and not (
                isinstance(stmt, Insert) and isinstance(stmt.source, Constant)):
            self._outside_transaction(type(stmt).__name__.upper())
        handlers = {
            CreateTable: self._create_table, CreateView: self._create_view, Insert: self._insert,
            Delete: self._delete, Update: self._update, Drop: self._drop, Show: self._show,
            Query: self._query, Explain: self._explain,
        }
        return handlers[type(stmt)](stmt)  # type: ignore[operator]

    def _create_table(self, stmt: CreateTable) -> Result:
        if self._exists(stmt.name, stmt.if_not_exists):
            return Result()
        item = CatalogItem(stmt.name, "table", stmt.fields)
        self.catalog.add(Entry(item, trace=Trace(self.spark, len(stmt.fields))), set())
        return Result()

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
        depends = self._referenced(stmt.query_sql)
        if not stmt.materialized:
            item = CatalogItem(stmt.name, "view", fields, stmt.query_sql)
            self.catalog.add(Entry(item), depends)
            return Result()
        plan = physical(stmt.plan)
        self._refresh({g.name for g in gets(plan)})
        now = self.oracle.read()
        flow = Dataflow(plan, self.spark, self.trace_of, as_of=now, limit=self.row_limit,
                        max_join_rows=self.join_limit)
        step = flow.prepare(now)
        leaf, failed = step.materialized()
        step.commit()
        trace = Trace(self.spark, len(fields))
        trace.append(leaf, now, now)
        trace.errors = Trace(self.spark, 1)
        trace.errors.append(failed, now, now)
        item = CatalogItem(stmt.name, "materialized view", fields, stmt.query_sql)
        self.catalog.add(Entry(item, trace=trace, dataflow=flow, plan=stmt.plan), depends)
        return Result()

    def _referenced(self, query_sql: str) -> set[str]:
        tree = sqlglot.parse_one(query_sql, read=Matview)
        names = {t.name.lower() for t in tree.find_all(exp.Table)}
        return {n for n in names if self.catalog.lookup(n) is not None}

    def _drop(self, stmt: Drop) -> Result:
        doomed: list[str] = []
        for name in stmt.names:
            item = self.catalog.lookup(name)
            if item is None:
                if stmt.if_exists:
                    continue
                raise ProgrammingError(f'{stmt.kind} "{name}" does not exist')
            if item.kind != stmt.kind:
                raise ProgrammingError(f'"{name}" is a {item.kind}, not a {stmt.kind}')
            users = self.catalog.dependents(name)
            if users and not stmt.cascade:
                raise ProgrammingError(
                    f'cannot drop {stmt.kind} "{name}" because other objects depend on it: '
                    f"{', '.join(users)} (use DROP ... CASCADE to drop them too)")
            doomed.extend(n for n in reversed(users) if n not in doomed)
            if name not in doomed:
                doomed.append(name)
        for name in doomed:
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
                                   f"Dataflow of materialized view {stmt.view}:")
        else:
            plan = self._explained_plan(stmt)
            text = (explain_trace(plan, stmt.format, stmt.options) if stmt.stage == "trace"
                    else explain_plan(plan, stmt.stage, stmt.format, stmt.options))
        return Result(("plan",), (TEXT,), pa.table({"plan": [text]}))

    def _explained_plan(self, stmt: Explain) -> Relation:
        """The raw plan EXPLAIN shows: the explained query's, or the one the materialized
        view was created with."""
        if stmt.query is not None:
            return stmt.query.plan
        assert stmt.view is not None
        raw = self.catalog.entries[stmt.view].plan
        assert raw is not None
        return raw

    # --- reads --------------------------------------------------------------------------

    def _query(self, stmt: Query) -> Result:
        arity = len(stmt.column_names)
        names = column_names(arity)
        if not (stmt.order_by or stmt.offset or stmt.limit is not None):
            held = self._held_rows(stmt.plan)
            if held is not None:
                table = held.rename_columns(names)
                return Result(stmt.column_names, stmt.plan.types, table, table.num_rows)
        df = self.evaluate(stmt.plan)
        if df is None:
            schema = update_schema(stmt.plan.types)
            table = pa.table([pa.array([], f.type) for f in list(schema)[:arity]], names=names)
        else:
            # a row held with negative multiplicity (repeat_row can retract more copies than
            # exist) fails the read in the same job instead of being hidden
            copies = F.when(F.col(DIFF) < 0, F.raise_error(F.concat(
                F.lit(NEGATIVE_ROWS + " (multiplicity "), F.col(DIFF).cast("string"),
                F.lit(")")))).otherwise(F.col(DIFF))
            rows = df.select(
                *names, F.explode(F.array_repeat(F.lit(1), copies.cast("int"))).alias("_x"))
            if stmt.order_by:
                rows = rows.orderBy(*[self._order(names[i], desc, nulls_first)
                                      for i, desc, nulls_first in stmt.order_by])
            if stmt.offset:
                rows = rows.offset(stmt.offset)
            if stmt.limit is not None:
                rows = rows.limit(stmt.limit)
            table = rows.select(*names).toArrow()
        return Result(stmt.column_names, stmt.plan.types, table, table.num_rows)

    @staticmethod
    def _order(name: str, desc: bool, nulls_first: bool):  # type: ignore[no-untyped-def]
        col = F.col(name)
        if desc:
            return col.desc_nulls_first() if nulls_first else col.desc_nulls_last()
        return col.asc_nulls_first() if nulls_first else col.asc_nulls_last()

    def _held_rows(self, plan: Relation) -> pa.Table | None:
        """The rows of a read of one stored collection whose updates are all held in the
        driver, consolidated there without a Spark job; None for any other read."""
        plan = physical(plan)
        if not isinstance(plan, Get):
            return None
        self._refresh({plan.name})
        self.check_errors(plan.name)
        try:
            return self.trace_of(plan.name).held_rows(self.oracle.read())
        except NegativeRows as error:
            raise DataError(f"{plan.name}: {NEGATIVE_ROWS} (multiplicity {error.args[0]})"
                            ) from None

    def evaluate(self, plan: Relation) -> DataFrame | None:
        """``plan``'s contents at the current time, as consolidated updates, run once as a
        dataflow over the current snapshots (materialized views brought up to date first)."""
        plan = physical(plan)
        self._refresh({g.name for g in gets(plan)})
        now = self.oracle.read()
        flow = Dataflow(plan, self.spark, self.trace_of, as_of=now, limit=self.row_limit,
                        max_join_rows=self.join_limit)
        step = flow.prepare(now)
        error = step.error()
        if error is not None:
            raise DataError(error)
        return step.output

    def check_errors(self, name: str) -> None:
        """Raise the error that materialized view ``name`` holds now, if it holds one."""
        errors = self.trace_of(name).errors
        found = None if errors is None else errors.any_row(self.oracle.read())
        if found is not None:
            raise DataError(f'materialized view "{name}" holds an error: {found[0]}')

    def trace_of(self, name: str) -> Trace:
        entry = self.catalog.entries[name]
        assert entry.trace is not None, f"{name} has no trace"
        return entry.trace

    def _outside_transaction(self, what: str) -> None:
        raise ProgrammingError(
            f"{what} cannot run inside a transaction: a transaction only writes "
            "(INSERT ... VALUES, insert, delete); commit it first")

    def _refresh(self, names: set[str]) -> None:
        """Step every materialized view ``names`` depend on (and they) to the current time."""
        if self.transaction is not None:
            self._outside_transaction("a read")
        now = self.oracle.read()
        for name in self.catalog.upstream(names):
            entry = self.catalog.entries[name]
            flow = entry.dataflow
            if flow is None or flow.frontier >= now:
                continue
            step = flow.prepare(now)
            leaf, failed = step.materialized()
            step.commit()
            assert entry.trace is not None and entry.trace.errors is not None
            entry.trace.append(leaf, step.lower + 1, now)
            entry.trace.errors.append(failed, step.lower + 1, now)
        self._compact()

    def _compact(self) -> None:
        """Let every trace forget history no reader needs, and merge its batches."""
        now = self.oracle.read()
        for name, entry in self.catalog.entries.items():
            if entry.dataflow is not None:
                entry.dataflow.compact(entry.dataflow.frontier)
            if entry.trace is None:
                continue
            since = min([now] + [r.dataflow.frontier for r in self.catalog.readers(name)
                                 if r.dataflow is not None]
                        + [at for target, at in self.cursors.values() if target == name])
            entry.trace.compact(since)

    def refresh(self, name: str) -> None:
        self._refresh({name})

    # --- writes -------------------------------------------------------------------------

    def table_item(self, name: str) -> CatalogItem:
        """Table ``name``'s catalog item (ProgrammingError when there is no such table)."""
        return self._table(name)[0]

    def _table(self, name: str) -> tuple[CatalogItem, Trace]:
        entry = self.catalog.entries.get(name)
        if entry is None or entry.item.kind != "table":
            raise ProgrammingError(f'table "{name}" does not exist')
        assert entry.trace is not None
        return entry.item, entry.trace

    def write(self, name: str, updates: DataFrame | pa.Table, small: bool = True,
              own_rows: bool = False) -> int:
        """Commit update rows (data columns then ``_diff``) to table ``name`` at a new time,
        or stage them in the open transaction; returns the number of rows changed.

        No write may leave a row with a negative multiplicity: updates with negative diffs
        are checked against the table (and the transaction's staged writes to it) before
        anything is appended, Arrow updates before they are stored and DataFrames once
        computed (the job that computes or counts them finds their negative diffs). Only
        ``own_rows`` writes skip the check: SQL DELETE and UPDATE retract rows just read
        from the table itself, which cannot go negative."""
        _, trace = self._table(name)
        pending = self.transaction
        checked = own_rows
        if isinstance(updates, pa.Table) and not own_rows:
            if _retracts(updates):
                self._check_retractions(name, trace, updates)
            checked = True
        at = self.oracle.peek_write() if pending is None else pending.at
        leaf, changed, retracts = self._leaf(name, updates, small, at)
        if leaf is not None and retracts and not checked:
            self._check_retractions(name, trace, leaf.df if leaf.table is None else leaf.table)
        if pending is not None:
            pending.writes.append((trace, leaf))
        else:
            trace.append(leaf, at, at)
            self.oracle.commit_write(at)
        return changed

    def _check_retractions(self, name: str, trace: Trace,
                           updates: DataFrame | pa.Table) -> None:
        """DataError unless table ``name`` (``trace``, with the open transaction's staged
        writes to it) holds every row ``updates`` retract, as many times as they retract
        it: in Arrow when all of it is held in the driver, else with one Spark job."""
        pending = self.transaction
        staged = [] if pending is None else [
            leaf for target, leaf in pending.writes if target is trace and leaf is not None]
        missing = trace.negative_row(updates, staged)
        if missing is not None:
            raise DataError(f'cannot delete {missing} from table "{name}": the table does '
                            "not hold that many copies of it")

    def _leaf(self, name: str, updates: DataFrame | pa.Table, small: bool,
              at: int) -> tuple[Leaf | None, int, bool]:
        """The update rows as a batch at time ``at``, how many rows they change, and whether
        any of them has a negative diff."""
        item, _ = self._table(name)
        schema = update_schema([f.type for f in item.fields])
        if isinstance(updates, pa.Table):
            updates = updates.append_column(TIME, pa.array([at] * updates.num_rows, pa.int64()))
            table = updates.select(schema.names).cast(schema)
            if table.num_rows == 0:
                return None, 0, False
            return stored(self.spark, table), *_diff_stats(table)
        frame = updates.select(*column_names(len(item.fields)),
                               F.lit(at).cast("bigint").alias(TIME), DIFF)
        leaf = materialize(self.spark, frame, small)
        if leaf is None:
            return None, 0, False
        if leaf.table is not None:  # the rows are at hand: no second Spark job to count
            return leaf, *_diff_stats(leaf.table)
        changed, lowest = leaf.df.select(F.sum(F.abs(F.col(DIFF))), F.min(DIFF)).first()
        return leaf, int(changed or 0), (lowest or 0) < 0

    def begin(self) -> None:
        """Open a transaction: writes until ``commit`` share one time and land together."""
        if self.transaction is not None:
            raise ProgrammingError("a transaction is already open")
        self.transaction = Transaction(self.oracle.peek_write())

    def commit(self) -> None:
        """Make the open transaction's writes visible, all at its time."""
        pending, self.transaction = self.transaction, None
        if pending is None or not pending.writes:
            return
        for trace, leaf in pending.writes:
            trace.append(leaf, pending.at, pending.at)
        self.oracle.commit_write(pending.at)

    def rollback(self) -> None:
        """Forget the open transaction's writes."""
        self.transaction = None

    def _insert(self, stmt: Insert) -> Result:
        item, _ = self._table(stmt.table)
        if isinstance(stmt.source, Constant):
            schema = update_schema([f.type for f in item.fields])
            data = [[values[i] for values, _ in stmt.source.rows] for i in range(len(item.fields))]
            arrays = [pa.array(col, f.type) for col, f in zip(data, schema)]
            arrays.append(pa.array([m for _, m in stmt.source.rows], pa.int64()))
            table = pa.Table.from_arrays(arrays, names=column_names(len(item.fields)) + [DIFF])
            return Result(rowcount=self.write(stmt.table, table))
        df = self.evaluate(stmt.source)
        return Result(rowcount=0 if df is None else self.write(
            stmt.table, _refusing_negative(df).drop(TIME)))

    def _matching(self, table: str, predicate: object) -> DataFrame | None:
        item, _ = self._table(table)
        source: Relation = Get(table, item.fields)
        if predicate is not None:
            source = Linear(source, (Filter((predicate,)),))  # type: ignore[arg-type]
        return self.evaluate(source)

    def _delete(self, stmt: Delete) -> Result:
        rows = self._matching(stmt.table, stmt.predicate)
        if rows is None:
            return Result(rowcount=0)
        return Result(rowcount=self.write(
            stmt.table, rows.withColumn(DIFF, -F.col(DIFF)).drop(TIME), own_rows=True))

    def _update(self, stmt: Update) -> Result:
        item, _ = self._table(stmt.table)
        rows = self._matching(stmt.table, stmt.predicate)
        if rows is None:
            return Result(rowcount=0)
        arity = len(item.fields)
        assigned = dict(stmt.assignments)
        exprs = tuple(assigned[i] for i in sorted(assigned))
        positions = {i: arity + k for k, i in enumerate(sorted(assigned))}
        steps = (Map(exprs), Project(tuple(positions.get(i, i) for i in range(arity))))
        types = [f.type for f in item.fields]
        new = apply_steps(rows, steps, types)
        new = new.select(*[F.col(c).cast(spark_type(t)).alias(c)
                           for c, t in zip(column_names(arity), types)], TIME, DIFF)
        old = rows.withColumn(DIFF, -F.col(DIFF))
        matched = int(rows.select(F.sum(DIFF)).first()[0] or 0)
        self.write(stmt.table, consolidate(old.unionByName(new)).drop(TIME), own_rows=True)
        return Result(rowcount=matched)
