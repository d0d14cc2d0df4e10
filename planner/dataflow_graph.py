"""The physical dataflow of a plan as a networkx graph: what EXPLAIN PHYSICAL shows, draws
and reports on.

The graph is a view of a physical plan (``ir.physical``, made by ``planner.lower``): it
decides nothing, it only links what the plan says, so that renderers can walk operators and
arrangements alike.

- **Operator nodes** are the operator ids ``0..n-1`` (post-order; EXPLAIN prints operator
  ``k`` as ``%k``). Attributes: ``operator`` (the ``ir.physical`` node), ``relation`` (the
  logical node it runs), ``kind`` (that node's class name), ``inputs`` (operator ids in
  input order), and for a Join ``implementation`` and ``paths`` (its delta paths).
- **Arrangement nodes** are strings: a stored collection's name for the shared arrangement
  of a table or materialized view (``role="shared"``), ``%k.output`` / ``%k.values`` /
  ``%k.pending`` / ``%k.prefix`` for the state operator ``k`` owns (``role="owned"``;
  ``purpose`` says what it holds). ``reused`` says whether the arrangement exists anyway (a stored
  collection's, a Reduce's) rather than only for the lookups of a consumer (a Join's output).
- **Edges**: ``kind="input"`` from an input operator to its consumer (``position``);
  ``kind="reads"`` from a shared arrangement to the Get reading it; ``kind="maintains"``
  from an operator to an arrangement it owns; ``kind="lookup"`` from an arrangement to a
  Join whose delta path looks it up (``paths``: the path numbers), or to an AsOfJoin that
  looks its right input up (path 0, from its left input).
"""

from __future__ import annotations

import networkx as nx
from matview.ir import physical


def dataflow_graph(plan: physical.Operator) -> nx.DiGraph:
    """The physical dataflow of ``plan`` (see the module docstring)."""
    graph = nx.DiGraph()
    for op in physical.operators(plan):
        graph.add_node(op.id, operator=op, relation=op.relation, kind=op.kind,
                       inputs=tuple(child.id for child in op.inputs))
        for position, child in enumerate(op.inputs):
            graph.add_edge(child.id, op.id, kind="input", position=position)
        for name in op.reads():
            graph.add_node(name, role="shared", purpose=f"the updates of {name}", reused=True)
            graph.add_edge(name, op.id, kind="reads")
        for arrangement in op.state():
            graph.add_node(arrangement.name, role="owned", purpose=arrangement.purpose,
                           reused=arrangement.reused)
            graph.add_edge(op.id, arrangement.name, kind="maintains")
        if isinstance(op, physical.Join):
            graph.nodes[op.id]["implementation"] = op.implementation
            graph.nodes[op.id]["paths"] = op.implementation.paths
            _add_lookups(graph, op)
        if isinstance(op, physical.AsOfJoin):  # its one path, from its left input
            for name in op.inputs[1].history():
                graph.add_edge(name, op.id, kind="lookup", paths=(0,))
    return graph


def _add_lookups(graph: nx.DiGraph, join: physical.Join) -> None:
    by_id = {child.id: child for child in join.inputs}
    for path in join.implementation.paths:
        for lookup in path.lookups:
            for name in by_id[lookup.operator].history():
                edge = graph.edges.get((name, join.id))
                if edge is None:
                    graph.add_edge(name, join.id, kind="lookup", paths=(path.input,))
                elif path.input not in edge["paths"]:
                    edge["paths"] = (*edge["paths"], path.input)


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
    return list(graph.nodes[op]["operator"].history())
