"""Durable databases (``connect(path=dir)``): an engine's state saved as it commits and
resumed when the directory is opened again.

A committed transaction is durable before its write returns: appended to the store's
commit log (``commit``; ``runtime.durable.log``: one synced frame), or, for a bulk load or
a full log, saved whole. After every statement that read or defined something (a view's
step changed its state) the whole state is saved (``save``): the catalog in dependency
order (each object's ``CREATE`` statement), the timestamp oracle's times, every table's
and materialized view's trace, and of each view's dataflow its frontier and the traces
its operators own, by arrangement name, with a fingerprint of its plan
(``runtime.durable``: batch files first, then the manifest replaced atomically, then the
log emptied). A crash loses only a transaction that had not returned.

Opening the directory again (``restore``) replays the catalog: tables get their saved
batches, a materialized view a dataflow of the plan its SQL plans to now, given its saved
state and frontier, so the view steps on from there without recomputing anything; then
the log's transactions the manifest does not hold are appended to their tables. Each view
resumed rehearses a step like its last one (``Dataflow.rehearse``), so the first refresh
after reopening runs plans built already, as any later one does. A view
whose plan changed since (another matview, other settings) or whose state could not be
saved (values Parquet cannot hold) is rebuilt from its inputs instead (``rebuilt``). A
recursive query's loop keeps state beside its arrangements (``runtime.recursion.state``):
its stored collections' differences, saved as batches held in the driver.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import networkx as nx

from matview.ir import physical
from matview.planner.lower import lower
from matview.planner.pipeline import physical as planned
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import Leaf, stored
from matview.runtime.dataflow import Dataflow
from matview.runtime.durable.errors import StateError
from matview.runtime.durable.log import LOG_BYTES
from matview.runtime.durable.records import Record, Records, Unsaved, driver_table, restore
from matview.runtime.durable.store import Store
from matview.sources import is_progress, progress_name
from matview.sql.catalog import CatalogItem
from matview.sql.parse import bind_statement, one_statement
from matview.sql.statements import CreateSink, CreateSource, CreateView, Statement

if TYPE_CHECKING:
    from matview.engine import Engine

LOG_ROWS = 100_000
"""The most update rows a transaction's batches hold to be logged (``commit``); a larger
one (a bulk load) is saved with its batch files and a manifest."""


class Durability:
    """Saves ``engine``'s state into ``store`` and restores it from there."""

    def __init__(self, engine: Engine, store: Store) -> None:
        self.engine = engine
        self.store = store
        self.records = Records(store)
        self.rebuilt: list[str] = []
        """The materialized views the last ``restore`` rebuilt from their inputs."""
        self._restoring = False
        self._fingerprints: dict[int, tuple[physical.Operator, str]] = {}
        self.failed = False
        """Whether a save failed: what the engine holds may then be ahead of the manifest,
        so its connection closes (reopened, it holds the last committed state)."""

    def save(self) -> None:
        """Commit the engine's state as the store's manifest (nothing when unchanged)."""
        if self._restoring:
            return
        with self._saving():
            self._save()

    def commit(self, batches: Sequence[tuple[str, Leaf]], at: int) -> None:
        """A transaction committed at ``at`` (its ``batches`` by table): appended to the
        store's log when the driver holds them all and they are few (``LOG_ROWS``) and
        the log has room (``LOG_BYTES``), else the whole state saved."""
        if self._restoring or not batches:
            return
        held = [(name, leaf.in_driver) for name, leaf in batches]
        if any(table is None for _, table in held) or self.store.log.size > LOG_BYTES or \
                sum(leaf.rows for _, leaf in batches) > LOG_ROWS:
            self.save()
            return
        with self._saving():
            self.store.log.append(at, held)  # type: ignore[arg-type]

    @contextlib.contextmanager
    def _saving(self) -> Iterator[None]:
        """A save or an append: when it fails the engine is ahead of the directory
        (``failed``); a system error is a ``StateError`` naming the directory."""
        try:
            yield
        except OSError as error:
            self.failed = True
            raise StateError(f"could not save the database's state in {self.store.root}: "
                             f"{error}") from error
        except BaseException:
            self.failed = True
            raise

    def _save(self) -> None:
        engine, records = self.engine, self.records
        records.begin()
        catalog = []
        for name in nx.topological_sort(engine.catalog.graph):
            entry = engine.catalog.entries[name]
            if is_progress(entry.item):
                continue  # saved with its source
            item: dict[str, Any] = {"name": name, "kind": entry.item.kind,
                                    "sql": _create_sql(entry.item),
                                    "depends": sorted(engine.catalog.graph.predecessors(name))}
            if entry.item.comment is not None or entry.item.column_comments:
                item["comments"] = entry.item.comment_sql()
            if entry.item.kind in ("table", "source"):
                assert entry.trace is not None
                item["trace"] = records.trace(entry.trace)
            if entry.item.kind == "source":
                item["progress"] = records.trace(engine.trace_of(progress_name(name)))
            elif entry.dataflow is not None and entry.trace is not None:
                item["flow"] = self._flow(entry.dataflow, entry.trace)
            catalog.append(item)
        catalog += [{"name": name, "kind": "index", "sql": index.create_sql(),
                     "depends": [index.on]}
                    for name, index in sorted(engine.catalog.indexes.items())
                    if not index.constraint]  # made again by its table's CREATE
        catalog += [{"name": name, "kind": "sink", "sql": sink.create_sql(),
                     "depends": [sink.view]} for name, sink in sorted(engine.sinks.by_name.items())]
        live = {id(e.dataflow.plan) for e in engine.catalog.entries.values() if e.dataflow}
        self._fingerprints = {k: v for k, v in self._fingerprints.items() if k in live}
        oracle = engine.oracle
        body = {"catalog": catalog,
                "clock": {"last_write": oracle.last_write, "last_read": oracle.last_read}}
        records.written()
        if self.store.commit(body):
            records.committed()

    def _flow(self, flow: Dataflow, trace: Trace) -> dict[str, Any] | None:
        """A materialized view's dataflow and output trace as records; None when its state
        cannot be saved (it is rebuilt when the database is opened again)."""
        try:
            return {"as_of": flow.as_of, "frontier": flow.frontier,
                    "plan": self._fingerprint(flow.plan), "changed": sorted(flow.changed),
                    "output": self.records.trace(trace),
                    "state": {name: self.records.trace(owned)
                              for name, owned in flow.arrangements().items()},
                    "loops": [[{"rounds": rounds,
                                "batches": [self.records.table(t) for t in tables]}
                               for tables, rounds in loop.state()] for loop in flow.loops()]}
        except Unsaved:
            return None

    def _fingerprint(self, plan: physical.Operator) -> str:
        """``fingerprint(plan)``, computed once per plan (the same object every step)."""
        kept = self._fingerprints.get(id(plan))
        if kept is None or kept[0] is not plan:
            kept = self._fingerprints[id(plan)] = (plan, fingerprint(plan))
        return kept[1]

    def restore(self) -> None:
        """Replay the store's manifest into the engine (an empty catalog), then remove the
        files it does not name."""
        body = self.store.manifest
        if body is not None:
            self._restoring = True
            try:
                self._replay(body)
            finally:
                self._restoring = False
        self.save()  # the views rebuilt, the log's transactions, saved
        self.store.sweep(self.records.files, self.records.directories)

    def _replay(self, body: dict[str, Any]) -> None:
        """The tables with their batches, then the log's later transactions, then every
        other object in catalog order: a materialized view resumed from its saved state
        where it can be (``_resumable``), else rebuilt last, with what is built on it, once
        every resumed view reads the tables (a rebuild's step compacts what no view
        reads)."""
        engine = self.engine
        oracle, clock = engine.oracle, body["clock"]
        oracle.last_write = max(oracle.last_write, clock["last_write"])
        oracle.last_read = max(oracle.last_read, clock["last_read"])
        for item in body["catalog"]:
            if item["kind"] in ("table", "source"):
                stmt = bind_statement(one_statement(item["sql"]), engine.catalog)
                if isinstance(stmt, CreateSource):  # its lake is read at its first read
                    engine.sources.create(stmt, resume=True)
                    restore(engine.trace_of(progress_name(item["name"])), item["progress"],
                            self.records, engine.spark)
                else:
                    engine.run(stmt)
                restore(engine.trace_of(item["name"]), item["trace"], self.records,
                        engine.spark)
        self._replay_log(clock["last_write"])
        later: list[dict[str, Any]] = []
        for item in body["catalog"]:
            if item["kind"] in ("table", "source"):
                continue
            if later and not set(item["depends"]).isdisjoint(i["name"] for i in later):
                later.append(item)
                continue
            stmt = bind_statement(one_statement(item["sql"]), engine.catalog)
            if item["kind"] != "materialized view":
                self._made(stmt)
            elif self._resumable(stmt, item.get("flow")):
                engine.create_view(stmt, lambda plan, arity, saved=item["flow"]: self._resumed(
                    plan, arity, saved))
            else:
                later.append(item)
        for item in later:
            self._made(bind_statement(one_statement(item["sql"]), engine.catalog))
            if item["kind"] == "materialized view":
                self.rebuilt.append(item["name"])
        for item in body["catalog"]:
            for sql in item.get("comments", ()):
                engine.run(bind_statement(one_statement(sql), engine.catalog))

    def _made(self, stmt: Statement) -> None:
        """An object the manifest names made again by its statement (a sink resumed from
        its files: ``Sinks.resume``)."""
        if isinstance(stmt, CreateSink):
            self.engine.sinks.resume(stmt)
        else:
            self.engine.run(stmt)

    def _replay_log(self, saved: int) -> None:
        """Append the log's transactions after time ``saved`` (the manifest holds those
        up to it) to their tables."""
        engine = self.engine
        for at, batches in self.store.log.entries():
            if at <= saved:
                continue
            for name, table in batches:
                trace = engine.trace_of(name)
                trace.append(stored(engine.spark, table, key=trace.keys[0] if trace.keys
                                    else None), at, at)
            engine.oracle.last_write = max(engine.oracle.last_write, at)

    @staticmethod
    def _resumable(stmt: Statement, saved: Record | None) -> bool:
        """Whether the view ``stmt`` creates plans to the dataflow ``saved`` was saved
        from (None: its state was not saved)."""
        assert isinstance(stmt, CreateView)
        return saved is not None and fingerprint(lower(planned(stmt.plan))) == saved["plan"]

    def _resumed(self, plan: physical.Operator, arity: int, saved: Record
                 ) -> tuple[Dataflow, Trace]:
        """A view's dataflow of ``plan`` (``_resumable``) given its ``saved`` state and
        frontier, rehearsed (``Dataflow.rehearse``) changing the sources its last step
        changed: the plans of the first step after reopening are built before it."""
        engine = self.engine
        flow, trace = engine.controller.begun(plan, arity, saved["as_of"])
        owned = flow.arrangements()
        assert set(owned) == set(saved["state"]), "the plan saved has other arrangements"
        restore(trace, saved["output"], self.records, engine.spark)
        for name, record in saved["state"].items():
            restore(owned[name], record, self.records, engine.spark)
        loops = flow.loops()
        assert len(loops) == len(saved["loops"]), "the plan saved has other loops"
        for loop, state in zip(loops, saved["loops"]):
            loop.resume([([driver_table(t, self.records) for t in stored["batches"]],
                          stored["rounds"]) for stored in state])
        flow.frontier = saved["frontier"]
        flow.changed = frozenset(saved.get("changed", ()))
        flow.rehearse()
        return flow, trace


@functools.lru_cache(maxsize=4096)
def _create_sql(item: CatalogItem) -> str:
    """``item.create_sql()``, generated once per item (sqlglot quotes its names)."""
    return item.create_sql()


def fingerprint(plan: physical.Operator) -> str:
    """A digest of a physical plan's every decision (its text, which names them all)."""
    return hashlib.sha256(repr(plan).encode()).hexdigest()
