"""The statements that only read (queries): SELECT (a stored collection's rows straight
from the driver when it holds them all, else the query run once, one Spark job), COPY TO (a
query's rows into a file), SHOW (the catalog) and EXPLAIN (plans, or a view's running
dataflow, as text). Each brings the materialized views it reads up to date first."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from matview import comments, files, indexes
from matview.errors import ProgrammingError
from matview.ir.mz_now import reads_mz_now
from matview.ir.relation import Get, Relation, SortKey, TopK
from matview.ir.sort_keys import total_order
from matview.ir.types import BIGINT, MZ_TIMESTAMP, TEXT
from matview.planner.explain import explain_analyze, explain_plan, explain_trace
from matview.result import Result
from matview.runtime.io import peek
from matview.runtime.lowering.types import column_names
from matview.runtime.settings import active
from matview.sql.statements import CopyTo, Explain, Query, Show, SubscribeTo

if TYPE_CHECKING:
    from matview.engine import Engine


def query(engine: Engine, stmt: Query) -> Result:
    """``SELECT`` (now, or ``AS OF`` a time: ``Engine.read_time``)."""
    plan, table = engine.planned(stmt.plan), None
    order = stmt.order_by or _view_order(engine, plan)
    if isinstance(plan, Get) and not (stmt.order_by or stmt.offset or stmt.limit is not None):
        engine.refresh(plan.name)  # a stored collection's rows may all be in the driver
        at = engine.read_time([plan.name], stmt.as_of)
        engine.check_errors(plan.name, at)
        table = peek.held_rows(engine.reading(plan.name), plan.name, at, order)
    if table is None:  # its rows and the errors its evaluation holds in one job
        step = engine.controller.read_once(*engine.read_plan(plan, stmt.as_of),
                                           kept=not reads_mz_now(plan))  # else new each time
        table = peek.rows(step.output, stmt.plan.types, order, stmt.offset, stmt.limit,
                          step.failures, step.kept)
    shown = len(stmt.column_names)  # without the columns only sorted by
    table = table.select(list(range(shown))).rename_columns(column_names(shown))
    return Result(stmt.column_names, stmt.plan.types[:shown], table, table.num_rows)


def _view_order(engine: Engine, plan: Relation) -> tuple[SortKey, ...]:
    """The order in which a query reading ``plan`` (planned) returns its rows when it
    has no ORDER BY: a materialized view kept as a ``TopK`` read whole is read in the
    TopK's order (ties broken by every other column), anything else in no order."""
    entry = engine.catalog.entries.get(plan.name) if isinstance(plan, Get) else None
    view = None if entry is None else entry.plan
    return total_order(view.order_by, view.arity) if isinstance(view, TopK) else ()


def copy_to(engine: Engine, stmt: CopyTo) -> Result:
    path = files.confined(stmt.path, engine.files)
    result = query(engine, stmt.query)
    assert result.table is not None
    files.write_rows(result.table, result.columns, result.types, path, stmt.format)
    return Result(rowcount=result.table.num_rows)


def show(engine: Engine, stmt: Show) -> Result:
    if stmt.what == "indexes":
        return indexes.show(engine, stmt.name)
    if stmt.what == "comments":
        return comments.show(engine)
    if stmt.what == "columns":
        assert stmt.name is not None
        item = engine.catalog.lookup(stmt.name)
        if item is None:
            raise ProgrammingError(f'relation "{stmt.name}" does not exist')
        table = pa.table({"name": [f.name for f in item.fields],
                          "type": [str(f.type) for f in item.fields]})
        return Result(("name", "type"), (TEXT, TEXT), table)
    if stmt.what.startswith("create "):
        assert stmt.name is not None
        kind = stmt.what.removeprefix("create ")
        item = engine.catalog.lookup(stmt.name)
        if item is None:
            raise ProgrammingError(f'{kind} "{stmt.name}" does not exist')
        if item.kind != kind:
            raise ProgrammingError(f'"{stmt.name}" is a {item.kind}, not a {kind}')
        return Result(("name", "create_sql"), (TEXT, TEXT),
                      pa.table({"name": [item.name], "create_sql": [item.create_sql()]}))
    if stmt.what == "settings":
        names, values, meanings = zip(*active().described(), strict=True)
        return Result(("name", "setting", "description"), (TEXT, TEXT, TEXT),
                      pa.table({"name": names, "setting": values, "description": meanings}))
    kind = {"tables": "table", "views": "view", "sources": "source",
            "materialized views": "materialized view"}[stmt.what]
    return Result(("name",), (TEXT,), pa.table({"name": engine.catalog.of_kind(kind)}))


def explain(engine: Engine, stmt: Explain) -> Result:
    if stmt.stage == "analyze":
        assert stmt.view is not None
        engine.refresh(stmt.view)
        flow = engine.catalog.entries[stmt.view].dataflow
        assert flow is not None
        text = explain_analyze(flow.plan, flow.analyze(), stmt.format,
                               f"Dataflow of materialized view {stmt.view}:",
                               flow.policy.stats())
    else:
        plan = (stmt.query.plan if stmt.query is not None  # else the view's raw plan
                else engine.catalog.entries[str(stmt.view)].plan)
        assert plan is not None
        text = (explain_trace(plan, stmt.format, stmt.options) if stmt.stage == "trace"
                else explain_plan(plan, stmt.stage, stmt.format, stmt.options,
                                  indexes.described(engine)))
    return Result(("plan",), (TEXT,), pa.table({"plan": [text]}))


def subscribe(engine: Engine, stmt: SubscribeTo) -> Result:
    """SUBSCRIBE's columns, ``mz_timestamp``, ``mz_diff`` and the object's; the cursor
    follows its changes (``Connection.subscribe``), from ``AS OF`` time if given."""
    item = engine.catalog.lookup(stmt.name)
    if item is None:
        raise ProgrammingError(f'relation "{stmt.name}" does not exist')
    return Result(("mz_timestamp", "mz_diff", *(f.name for f in item.fields)),
                  (MZ_TIMESTAMP, BIGINT, *(f.type for f in item.fields)), subscribe=stmt.name,
                  as_of=stmt.as_of)
