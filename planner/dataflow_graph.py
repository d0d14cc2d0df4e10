"""The physical dataflow of a plan as a networkx graph: what EXPLAIN PHYSICAL shows, draws
and reports on.

The graph is derived from a physical plan (``pipeline.physical``) by the rules the runtime
(``runtime.dataflow.build``) follows, so it names the operators and arrangements a running
dataflow of that plan has:

- **Operator nodes** are ints ``0..n-1``: the plan's nodes in post-order (inputs before
  their consumer, inputs in order), the order of ``runtime.dataflow.operators``; EXPLAIN
  prints operator ``k`` as ``%k``. Attributes: ``relation`` (the IR node), ``kind`` (its
  class name), ``inputs`` (operator ids in input order).
- **Arrangement nodes** are strings: a stored collection's name for the shared arrangement
  of a table or materialized view (``role="shared"``), ``%k.output`` / ``%k.values`` /
  ``%k.pending`` for the state operator ``k`` owns (``role="owned"``; ``purpose`` says
  what it holds). ``reused`` says whether the arrangement exists anyway (a stored
  collection's, a Reduce's) rather than only for the lookups of a consumer (a Join's output).
- **Edges**: ``kind="input"`` from an input operator to its consumer (``position``);
  ``kind="reads"`` from a shared arrangement to the Get reading it; ``kind="maintains"``
  from an operator to an arrangement it owns; ``kind="lookup"`` from an arrangement to a
  Join whose delta path looks it up (``paths``: the path numbers).

Every Join also has ``paths``: one ``DeltaPath`` per input. Path ``i`` starts from input
``i``'s changes at time ``t`` and looks the other inputs up in plan order; input ``j``
is seen at times ``<= t`` when ``j < i`` and ``< t`` when ``j > i`` (Alt/Neu order).
Looking up an input reads its history: a Get's shared arrangement, a Reduce's own output
arrangement, or a Join's output arrangement (owned only because a consumer looks it up);
through a Linear or a Union the history of their inputs, transformed on the fly.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
from matview.ir.linear_logic import is_temporal_steps
from matview.ir.relation import (
    Get,
    Join,
    JoinPlan,
    Linear,
    Reduce,
    Relation,
    Union,
    inputs_of,
    offsets_of,
)
from matview.ir.scalar import Scalar, columns_used, remap


@dataclass(frozen=True)
class Lookup:
    """One lookup of a delta path: input ``input`` (operator ``operator``) found by
    ``key`` (expressions over that input's own columns), seeing its updates at times
    ``time`` (``<=`` or ``<``) the change's time."""

    input: int
    operator: int
    key: tuple[Scalar, ...]
    time: str


@dataclass(frozen=True)
class DeltaPath:
    """Path ``input``: the changes of input ``input`` (operator ``operator``), then
    ``lookups`` in order."""

    input: int
    operator: int
    lookups: tuple[Lookup, ...]


def dataflow_graph(plan: Relation) -> nx.DiGraph:
    """The physical dataflow of ``plan`` (see the module docstring)."""
    graph = nx.DiGraph()
    _add(graph, plan)
    for op in operators(graph):
        if isinstance(graph.nodes[op]["relation"], Join):
            for j in graph.nodes[op]["inputs"]:
                _require_history(graph, j)
    for op in operators(graph):
        rel = graph.nodes[op]["relation"]
        if isinstance(rel, Join):
            graph.nodes[op]["paths"] = _paths(graph, op)
            for path in graph.nodes[op]["paths"]:
                for lookup in path.lookups:
                    for name in history_arrangements(graph, lookup.operator):
                        edge = graph.edges.get((name, op))
                        if edge is None:
                            graph.add_edge(name, op, kind="lookup", paths=(path.input,))
                        elif path.input not in edge["paths"]:
                            edge["paths"] = (*edge["paths"], path.input)
    return graph


def operators(graph: nx.DiGraph) -> list[int]:
    """The operator ids in order (post-order: inputs first)."""
    return sorted(n for n in graph.nodes if isinstance(n, int))


def root(graph: nx.DiGraph) -> int:
    """The operator producing the dataflow's output."""
    return operators(graph)[-1]


def arrangements(graph: nx.DiGraph, op: int) -> list[str]:
    """The arrangements operator ``op`` maintains, in creation order."""
    return [n for n in graph.successors(op) if graph.edges[op, n]["kind"] == "maintains"]


def history_arrangements(graph: nx.DiGraph, op: int) -> list[str]:
    """The arrangements a lookup of operator ``op``'s output reads (through Linear and Union
    operators, the arrangements of their inputs); none for a Constant."""
    rel = graph.nodes[op]["relation"]
    if isinstance(rel, Get):
        return [rel.name]
    if isinstance(rel, (Reduce, Join)):
        return [f"%{op}.output"]
    return [name for child in graph.nodes[op]["inputs"]
            for name in history_arrangements(graph, child)]


def _add(graph: nx.DiGraph, rel: Relation) -> int:
    children = [_add(graph, child) for child in inputs_of(rel)]
    op = len([n for n in graph.nodes if isinstance(n, int)])
    graph.add_node(op, relation=rel, kind=type(rel).__name__, inputs=tuple(children))
    for position, child in enumerate(children):
        graph.add_edge(child, op, kind="input", position=position)
    if isinstance(rel, Get):
        graph.add_node(rel.name, role="shared", purpose=f"the updates of {rel.name}",
                       reused=True)
        graph.add_edge(rel.name, op, kind="reads")
    elif isinstance(rel, Reduce):
        _own(graph, op, "output", "the output rows by group key, with their accumulators")
        if any(a.func in ("min", "max") for a in rel.aggregates):
            _own(graph, op, "values", "the input values of min/max by group key")
    elif isinstance(rel, Linear) and is_temporal_steps(rel.steps):
        _own(graph, op, "pending", "updates dated after the frontier, until they are due")
    return op


def _own(graph: nx.DiGraph, op: int, what: str, purpose: str, reused: bool = True) -> None:
    name = f"%{op}.{what}"
    graph.add_node(name, role="owned", purpose=purpose, reused=reused)
    graph.add_edge(op, name, kind="maintains")


def _require_history(graph: nx.DiGraph, op: int) -> None:
    """A consumer looks ``op``'s history up: a Join then arranges its output."""
    rel = graph.nodes[op]["relation"]
    if isinstance(rel, Join):
        if not arrangements(graph, op):
            _own(graph, op, "output", "the joined rows, for the lookups of a consumer",
                 reused=False)
    elif isinstance(rel, (Linear, Union)):
        for child in graph.nodes[op]["inputs"]:
            _require_history(graph, child)


def _paths(graph: nx.DiGraph, op: int) -> tuple[DeltaPath, ...]:
    join: Join = graph.nodes[op]["relation"]
    ids = graph.nodes[op]["inputs"]
    plan = join.plan or JoinPlan("delta", tuple(
        tuple(j for j in range(len(ids)) if j != i) for i in range(len(ids))))
    paths = []
    for i, order in enumerate(plan.orders):
        bound, lookups = {i}, []
        for j in order:
            lookups.append(Lookup(j, ids[j], _key(join, bound, j), "<=" if j < i else "<"))
            bound.add(j)
        paths.append(DeltaPath(i, ids[i], tuple(lookups)))
    return tuple(paths)


def _key(join: Join, bound: set[int], new: int) -> tuple[Scalar, ...]:
    """The expressions over input ``new``'s own columns by which it is looked up once the
    inputs ``bound`` are bound: each equivalence class member reading only ``new``, of the
    classes with a member over the bound inputs."""
    offsets = offsets_of([rel.arity for rel in join.inputs])
    key = []
    for cls in join.equivalences:
        reads = [{join.input_of(c) for c in columns_used(m)} for m in cls]
        if not any(r and r <= bound for r in reads):
            continue
        for member, read in zip(cls, reads):
            if read == {new}:
                key.append(remap(member, lambda c: c - offsets[new]))
                break
    return tuple(key)
