"""The live catalog: stored objects, their traces and dataflows, and the dependency graph
between them (a networkx DiGraph with an edge from each object to every object using it)."""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from matview import refresh_history
from matview.errors import ProgrammingError
from matview.indexes import Index
from matview.ir.relation import Field, Relation
from matview.runtime.arrangements.trace import Trace
from matview.runtime.dataflow import Dataflow
from matview.sql.catalog import CatalogItem
from matview.sql.statements import Drop
from matview.system_catalog import catalog_item, catalog_name


@dataclass
class Entry:
    """A stored object; tables and materialized views have a trace (their arrangement),
    materialized views also the dataflow maintaining it and the raw plan it was created
    with (what EXPLAIN ... FOR MATERIALIZED VIEW shows)."""

    item: CatalogItem
    trace: Trace | None = None
    dataflow: Dataflow | None = None
    plan: Relation | None = None


class LiveCatalog:
    """Objects by normalized name, implementing the binder's ``Catalog`` protocol."""

    def __init__(self) -> None:
        self.entries: dict[str, Entry] = {}
        self.graph: nx.DiGraph = nx.DiGraph()
        self.indexes: dict[str, Index] = {}
        """The indexes by name (``matview.indexes``), dropped with their collection."""

    def lookup(self, name: str) -> CatalogItem | None:
        if name == refresh_history.NAME:
            return refresh_history.history_item(self.entries)
        system = catalog_name(name)
        if system is not None:  # pg_catalog is searched first, as in PostgreSQL
            return catalog_item(system, [entry.item for entry in self.entries.values()],
                                self.graph.edges)
        entry = self.entries.get(name)
        return None if entry is None else entry.item

    def add(self, entry: Entry, depends_on: set[str]) -> None:
        name = entry.item.name
        self.entries[name] = entry
        self.graph.add_node(name)
        for dep in depends_on:
            self.graph.add_edge(dep, name)

    def dropped(self, stmt: Drop) -> list[str]:
        """The objects ``stmt`` drops, users before what they use: its names (those that
        exist, with IF EXISTS) and, with CASCADE, everything built on them."""
        doomed: list[str] = []
        for name in stmt.names:
            item = self.lookup(name)
            if item is None:
                if stmt.if_exists:
                    continue
                raise ProgrammingError(f'{stmt.kind} "{name}" does not exist')
            if item.kind != stmt.kind:
                raise ProgrammingError(f'"{name}" is a {item.kind}, not a {stmt.kind}')
            users = self.dependents(name)
            if users and not stmt.cascade:
                raise ProgrammingError(
                    f'cannot drop {stmt.kind} "{name}" because other objects depend on it: '
                    f"{', '.join(users)} (use DROP ... CASCADE to drop them too)")
            doomed.extend(n for n in reversed(users) if n not in doomed)
            if name not in doomed:
                doomed.append(name)
        return doomed

    def replaceable(self, name: str, kind: str, fields: tuple[Field, ...],
                    depends_on: frozenset[str]) -> None:
        """Refuse to replace ``name`` by a ``kind`` of ``fields`` reading ``depends_on``
        unless it is a ``kind`` no other object is built on and the new definition does not
        read it; a view (as PostgreSQL's) keeps its columns, names and types, and may add
        some after them."""
        item = self.lookup(name)
        assert item is not None
        if item.kind != kind:
            raise ProgrammingError(f'"{name}" is a {item.kind}, not a {kind}')
        users = self.dependents(name)
        if users:
            raise ProgrammingError(f'cannot replace {kind} "{name}" because other objects '
                                   f"depend on it: {', '.join(users)}")
        if name in depends_on:
            raise ProgrammingError(f'cannot replace {kind} "{name}": its new definition '
                                   "reads it")
        if kind == "view":
            _kept_columns(name, item.fields, fields)

    def remove(self, name: str) -> None:
        del self.entries[name]
        self.graph.remove_node(name)
        for index in [i for i in self.indexes.values() if i.on == name]:
            del self.indexes[index.name]

    def dependents(self, name: str) -> list[str]:
        """Every object built on ``name``, directly or not, users after what they use."""
        below = nx.descendants(self.graph, name)
        return [n for n in nx.topological_sort(self.graph) if n in below]

    def upstream(self, names: set[str]) -> list[str]:
        """``names`` and everything they are built on, in dependency order."""
        needed = set(names)
        for name in names:
            needed |= nx.ancestors(self.graph, name)
        return [n for n in nx.topological_sort(self.graph) if n in needed]

    def of_kind(self, kind: str) -> list[str]:
        return sorted(n for n, e in self.entries.items() if e.item.kind == kind)


def _kept_columns(name: str, old: tuple[Field, ...], new: tuple[Field, ...]) -> None:
    """Refuse a view ``name``'s new columns ``new`` unless they begin with its ``old`` ones
    (PostgreSQL's rule and messages)."""
    if len(new) < len(old):
        raise ProgrammingError("cannot drop columns from view")
    for before, after in zip(old, new):
        if before.name != after.name:
            raise ProgrammingError(f'cannot change name of view column "{before.name}" to '
                                   f'"{after.name}"')
        if before.type != after.type:
            raise ProgrammingError(f'cannot change data type of view column "{before.name}" '
                                   f"from {before.type} to {after.type}")
