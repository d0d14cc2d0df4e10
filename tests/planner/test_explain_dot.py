"""EXPLAIN ... AS DOT (``planner.explain.as_dot``): the DOT text of dataflows and plans, checked
with a small DOT reader (pydot is not installed)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from matview.ir.parse import parse_plan
from matview.ir.render import render_line
from matview.planner.dataflow_graph import dataflow_graph, operators
from matview.planner.explain.as_dot import WRAP, plan_graph, quote, to_dot
from matview.planner.lower import lower
from matview.planner.pipeline import physical

from tests.support.plan_corpus import SELF_JOIN, corpus

# ---- a small DOT reader ------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<arrow>->)'
                    r"|(?P<punct>[{}\[\];,=])|(?P<word>[A-Za-z_][A-Za-z0-9_]*|-?[0-9.]+))",
                    re.DOTALL)


@dataclass
class Dot:
    """A parsed digraph: its name, nodes with attributes, and edges in order."""

    name: str
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)
    edges: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    def edges_of(self, **attrs: str) -> list[tuple[str, str, dict[str, str]]]:
        return [e for e in self.edges if all(e[2].get(k) == v for k, v in attrs.items())]


def _unquote(token: str) -> str:
    """The text of a DOT token; ``\\n`` (a label's line break) becomes a newline."""
    if not token.startswith('"'):
        return token
    return re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), token[1:-1])


def _tokens(text: str) -> list[str]:
    tokens, at = [], 0
    while text[at:].strip():
        match = _TOKEN.match(text, at)
        assert match and match.end() > at, f"no DOT token at {text[at:at + 30]!r}"
        tokens.append(match.group(match.lastgroup or ""))
        at = match.end()
    return tokens


def read_dot(text: str) -> Dot:
    """Parse the subset of DOT that ``to_dot`` writes; fails on anything else, on unbalanced
    braces or brackets, and on an edge whose endpoint is not declared as a node."""
    tokens = _tokens(text)
    assert tokens[:1] == ["digraph"] and tokens[2] == "{" and tokens[-1] == "}"
    dot, at = Dot(_unquote(tokens[1])), 3

    def attrs() -> dict[str, str]:
        nonlocal at
        out: dict[str, str] = {}
        if tokens[at] != "[":
            return out
        at += 1
        while tokens[at] != "]":
            key, eq, value = tokens[at:at + 3]
            assert eq == "=" and value not in "[]{};,=", tokens[at:at + 3]
            out[_unquote(key)] = _unquote(value)
            at += 3
            if tokens[at] == ",":
                at += 1
        at += 1
        return out

    while tokens[at] != "}":
        first = tokens[at]
        at += 1
        if tokens[at] == "->":
            second = tokens[at + 1]
            at += 2
            dot.edges.append((_unquote(first), _unquote(second), attrs()))
        elif first in ("node", "edge", "graph"):
            attrs()
        else:
            assert _unquote(first) not in dot.nodes, f"node {first} declared twice"
            dot.nodes[_unquote(first)] = attrs()
        assert tokens[at] == ";", tokens[at:]
        at += 1
    assert at == len(tokens) - 1
    for u, v, _ in dot.edges:
        assert u in dot.nodes and v in dot.nodes, f"edge {u} -> {v} of an undeclared node"
    return dot


def test_reader_rejects_bad_dot() -> None:
    good = 'digraph "g" {\n  "a" [label="x"];\n  "a" -> "a";\n}'
    assert read_dot(good).edges == [("a", "a", {})]
    for bad in ('digraph "g" {\n  "a";\n  "a" -> "b";\n}\n',
                'digraph "g" {\n  "a" [label="x];\n}\n',
                'digraph "g" {\n  "a" [label="x"];\n',
                'digraph "g" {\n  "a" [label="x"]\n}\n'):
        with pytest.raises((AssertionError, IndexError)):
            read_dot(bad)


# ---- dataflows ---------------------------------------------------------------------------

THREE_WAY = """\
Join on=(#0 = #1 = #2) plan=delta[(1, 2), (0, 2), (0, 1)]
  Get a (x int)
  Get b (x int)
  Get c (x int)"""


def test_three_way_join_has_three_lookup_edges() -> None:
    dot = read_dot(to_dot(dataflow_graph(lower(parse_plan(THREE_WAY))), "three"))
    assert dot.name == "three"
    lookups = dot.edges_of(style="dashed")
    assert [(u, v, a["label"]) for u, v, a in lookups] == [
        ("arr:a", "op3", "path 1, 2"), ("arr:b", "op3", "path 0, 2"),
        ("arr:c", "op3", "path 0, 1")]
    assert [n for n, a in dot.nodes.items() if a["shape"] == "cylinder"] == [
        "arr:a", "arr:b", "arr:c"]
    assert dot.nodes["op3"]["label"].split("\n") == [
        "%3 Join", "on=(#0 = #1 = #2)", "plan=delta[(1, 2), (0, 2), (0, 1)]"]
    assert [(u, v) for u, v, _ in dot.edges_of(style="solid")] == [
        ("op0", "op3"), ("op1", "op3"), ("op2", "op3")]
    assert [(u, v) for u, v, _ in dot.edges_of(style="dotted")] == [
        ("arr:a", "op0"), ("arr:b", "op1"), ("arr:c", "op2")]


def test_self_join_shares_one_arrangement_node() -> None:
    """The two reads of ``a`` are one Get (equal subplans are one operator), feeding the
    temporal filter and the join's third input alike."""
    dot = read_dot(to_dot(dataflow_graph(lower(parse_plan(SELF_JOIN))), "self"))
    assert [n for n in dot.nodes if n.startswith("op")] == [f"op{i}" for i in range(6)]
    assert [n for n in dot.nodes if n.startswith("arr:")] == [
        "arr:a", "arr:%1.pending", "arr:b", "arr:%5.output", "arr:%5.values"]
    assert dot.nodes["arr:a"] == {"shape": "cylinder", "label": "a",
                                  "tooltip": "the updates of a"}
    assert [(v, a["style"], a.get("label")) for u, v, a in dot.edges if u == "arr:a"] == [
        ("op0", "dotted", None), ("op4", "dashed", "path 0, 1, 2")]
    assert [(u, v) for u, v, _ in dot.edges_of(style="solid")] == [
        ("op0", "op1"), ("op0", "op4"), ("op1", "op4"), ("op2", "op3"), ("op3", "op4"),
        ("op4", "op5")]
    owned = [n for n, a in dot.nodes.items() if a["shape"] == "note"]
    assert owned == ["arr:%1.pending", "arr:%5.output", "arr:%5.values"]
    assert [(u, v) for u, v, a in dot.edges_of(style="dotted") if v in owned] == [
        ("op1", "arr:%1.pending"), ("op5", "arr:%5.output"), ("op5", "arr:%5.values")]
    assert dot.nodes["op5"]["label"] == (
        "%5 Reduce\ngroup_key=(#0) aggregates=(count(*), min(#2))")


def test_labels_wrap_between_linear_steps() -> None:
    plan = parse_plan("Linear [filter (#0 > 1), (#0 < 100); map (#0 + 1), (#0 * 2); "
                      "map lower('a b; c d'), 'x'; project (#0, #2, #3, #4)]\n"
                      "  Get t (a int)")
    short = parse_plan("Linear [filter (#0 > 1); project (#0)]\n  Get t (a int)")
    assert read_dot(to_dot(plan_graph(short), "p")).nodes["op1"]["label"] == (
        "%1 Linear\n[filter (#0 > 1); project (#0)]")
    label = read_dot(to_dot(plan_graph(plan), "p")).nodes["op1"]["label"]
    assert label.split("\n") == [
        "%1 Linear", "[filter (#0 > 1), (#0 < 100);", "map (#0 + 1), (#0 * 2);",
        "map lower('a b; c d'), 'x';", "project (#0, #2, #3, #4)]"]
    assert " ".join(label.split("\n")[1:]) == render_line(plan).removeprefix("Linear ")
    assert all(len(line) <= WRAP for line in label.split("\n"))


def test_quoting() -> None:
    assert quote('say "hi"\\there\nnext\r\nlast') == r'"say \"hi\"\\there\nnext\nlast"'
    plan = parse_plan('Get "we""ird\\name" (x int)')
    dot = read_dot(to_dot(dataflow_graph(lower(plan)), 'a "name"'))
    assert dot.name == 'a "name"'
    assert dot.nodes['arr:we"ird\\name']["label"] == 'we"ird\\name'
    assert dot.nodes["op0"]["label"] == '%0 Get\n"we""ird\\name" (x int)'


def test_dot_over_the_fixture_corpus() -> None:
    """Every physical dataflow and logical plan: valid DOT, deterministic, one node per
    operator and arrangement, one edge per graph edge."""
    for plan in corpus():
        for graph in (dataflow_graph(lower(physical(plan))), plan_graph(plan)):
            text = to_dot(graph, "plan")
            assert text == to_dot(graph, "plan")
            dot = read_dot(text)
            assert len(dot.nodes) == graph.number_of_nodes()
            assert len(dot.edges) == graph.number_of_edges()


# ---- logical plans -----------------------------------------------------------------------


def test_plan_graph_is_the_operator_layer() -> None:
    plan = parse_plan(SELF_JOIN)
    graph = plan_graph(plan)
    flow = dataflow_graph(lower(plan))
    assert list(graph.nodes) == operators(graph) == operators(flow)
    assert all(graph.edges[e]["kind"] == "input" for e in graph.edges)
    assert "paths" not in graph.nodes[4] and "paths" in flow.nodes[4]
    dot = read_dot(to_dot(graph, "logical"))
    assert [a["shape"] for a in dot.nodes.values()] == ["box"] * 6
    assert dot.nodes["op4"]["label"].split("\n")[0] == "%4 Join"
    assert {(u, v) for u, v, _ in dot.edges} == {
        ("op0", "op1"), ("op1", "op4"), ("op2", "op3"), ("op3", "op4"), ("op0", "op4"),
        ("op4", "op5")}
