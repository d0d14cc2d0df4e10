"""EXPLAIN ... AS DOT: the one Graphviz DOT form of plans and physical dataflows.

``to_dot`` writes a graph of the ``planner.dataflow_graph`` form as DOT text (no pydot or
pygraphviz needed; render it with Graphviz, ``dot -Tsvg -o plan.svg``):

- an operator ``k`` is a box labelled ``%k Kind`` over its attributes (its line of the IR
  text form without the kind, wrapped between attributes and between Linear steps); a Join
  of a dataflow has its delta paths, one per line as EXPLAIN PHYSICAL's text prints them
  (``physical_text.render_path``), as tooltip;
- a shared arrangement (a table's or materialized view's) is a cylinder, an arrangement an
  operator owns a note; both labelled with the arrangement's name, their purpose as tooltip;
- an input edge is solid (from input to consumer); a lookup edge, from an arrangement to the
  Join whose delta paths look it up, is dashed and labelled ``path 0, 2``; a reads edge
  (arrangement to Get) and a maintains edge (operator to arrangement) are dotted.

``plan_graph`` turns a logical plan into a graph of the same form holding only operators
and input edges, so every EXPLAIN stage draws through ``to_dot``. The output is
deterministic: operators in order, then each arrangement once (in the order of
``explain_json.arrangement_names``), then the edges sorted by their endpoints.
"""

from __future__ import annotations

import networkx as nx
from matview.ir.relation import Relation
from matview.ir.render import render_line
from matview.planner.dataflow_graph import dataflow_graph, operators
from matview.planner.explain.as_json import arrangement_names
from matview.planner.explain.physical_text import render_path
from matview.planner.lower import lower

WRAP = 48
"""The width at which an operator's attribute text wraps in its label."""

_EDGE_STYLES = {"input": "solid", "lookup": "dashed", "reads": "dotted", "maintains": "dotted"}
_SHAPES = {"shared": "cylinder", "owned": "note"}


def plan_graph(rel: Relation) -> nx.DiGraph:
    """The plan ``rel`` as a graph of operators (numbered in post-order as in
    ``dataflow_graph``) and their input edges, without arrangements or delta paths."""
    flow = dataflow_graph(lower(rel))
    graph = nx.DiGraph(flow.subgraph(operators(flow)))
    for op in graph.nodes:
        for attribute in ("paths", "implementation"):
            graph.nodes[op].pop(attribute, None)
    return graph


def to_dot(graph: nx.DiGraph, name: str) -> str:
    """The DOT text of ``graph`` (a ``dataflow_graph`` or ``plan_graph``) as digraph ``name``,
    without a final newline (as the other EXPLAIN formats)."""
    lines = [
        f"digraph {quote(name)} {{",
        '  node [fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    lines += [f"  {_node_id(op)} {_attrs(_operator_attrs(graph, op))};"
              for op in operators(graph)]
    lines += [f"  {_node_id(a)} {_attrs(_arrangement_attrs(graph, a))};"
              for a in arrangement_names(graph)]
    lines += [f"  {_node_id(u)} -> {_node_id(v)} {_attrs(_edge_attrs(graph, u, v))};"
              for u, v in sorted(graph.edges, key=_edge_order)]
    lines.append("}")
    return "\n".join(lines)


def quote(text: str) -> str:
    """``text`` as a DOT quoted string: ``"`` and ``\\`` escaped, line breaks as ``\\n``."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    escaped = escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
    return f'"{escaped}"'


def _node_id(node: int | str) -> str:
    """The DOT id of ``node``: ``op3`` for operator 3, ``arr:NAME`` for an arrangement."""
    return quote(f"op{node}" if isinstance(node, int) else f"arr:{node}")


def _operator_attrs(graph: nx.DiGraph, op: int) -> dict[str, str]:
    node = graph.nodes[op]
    kind = node["kind"]
    details = render_line(node["relation"]).removeprefix(kind).strip()
    attrs = {"shape": "box", "label": "\n".join([f"%{op} {kind}", *_wrap(details)])}
    if "paths" in node:
        attrs["tooltip"] = "\n".join(render_path(path) for path in node["paths"])
    return attrs


def _wrap(text: str) -> list[str]:
    """``text`` in lines of at most ``WRAP`` characters where it can be: broken only between
    attributes (at spaces outside brackets and quotes) and between the steps of a Linear
    (after ``;`` inside its brackets); a longer piece keeps a line of its own."""
    lines: list[str] = []
    for piece in _pieces(text):
        if lines and len(lines[-1]) + 1 + len(piece) <= WRAP:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _pieces(text: str) -> list[str]:
    """``text`` split at the spaces ``_wrap`` may break at."""
    pieces, start, depth, quote_mark = [], 0, 0, ""
    for at, char in enumerate(text):
        if quote_mark:
            quote_mark = "" if char == quote_mark else quote_mark
        elif char in "'\"":
            quote_mark = char
        elif char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif char == " " and (depth == 0 or (depth == 1 and text[at - 1] == ";")):
            pieces.append(text[start:at])
            start = at + 1
    return [p for p in [*pieces, text[start:]] if p]


def _arrangement_attrs(graph: nx.DiGraph, name: str) -> dict[str, str]:
    node = graph.nodes[name]
    return {"shape": _SHAPES[node["role"]], "label": name, "tooltip": node["purpose"]}


def _edge_attrs(graph: nx.DiGraph, u: int | str, v: int | str) -> dict[str, str]:
    edge = graph.edges[u, v]
    attrs = {"style": _EDGE_STYLES[edge["kind"]]}
    if edge["kind"] == "lookup":
        attrs["label"] = "path " + ", ".join(str(p) for p in sorted(edge["paths"]))
    return attrs


def _edge_order(edge: tuple[int | str, int | str]) -> tuple[tuple[int, int | str], ...]:
    """Edges sort by their endpoints, operators (by number) before arrangements (by name)."""
    return tuple((0 if isinstance(n, int) else 1, n) for n in edge)


def _attrs(attrs: dict[str, str]) -> str:
    return "[" + ", ".join(f"{key}={quote(value)}" for key, value in attrs.items()) + "]"
