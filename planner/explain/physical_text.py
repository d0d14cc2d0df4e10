"""The TEXT form of a physical dataflow (EXPLAIN PHYSICAL PLAN) and of its statistics
(EXPLAIN ANALYZE): one renderer for both.

The dataflow prints as an indented tree under ``Explained Query:``, one operator per line,
``%k`` (its id, see ``dataflow_graph``) then the operator as ``ir.render`` prints it, inputs
two spaces deeper. An operator of several consumers (equal subplans are one operator,
``planner.lower``) prints whole once, where the walk first meets it, and as ``%k (shared,
printed above)`` below its other consumers. Lines between an operator and its inputs
describe it:

- ``implementation: delta`` for a join, then one line per delta path, every stage of it as
  the runtime runs it: ``path i from %a: %b[KEY] <= stream=(SKEY), %c[KEY] < stream=(SKEY)``:
  the changes of input ``i`` (operator ``%a``) look up ``%b`` where its ``KEY``
  (expressions over ``%b``'s own columns) equals the path row's ``SKEY`` (expressions over
  the join's columns; both empty: a cross product), seeing its updates at times ``<=`` the
  change's time, then ``%c`` at times ``<``. After the path's start (before its colon) and
  after a stage, `` on=(A = B, ...)`` lists the other equalities it checks (a stage: with
  its lookup) and `` where=(P, ...)`` the predicates then applied to its rows (its
  closure); expressions in them are over the join's columns. A group of stages run
  worst-case optimally (``physical.Extension``) prints as ``extend(count, propose: S1, S2;
  validate: V1 | V2)``: per path row, each input's matches by its stage ``Si`` are counted,
  the one with the fewest is looked up by it and the others then by their stages ``Vi``
  (those after ``Si`` when input ``i`` proposed), which check the attribute it proposed.
- for an as-of join on transaction time, ``implementation: as of each change's time``, then
  ``differentiate %a`` (its left input's changes), ``half join %b[KEY] <= stream=(SKEY) in
  NAME`` (the right input's arrangement, at times up to each change's) and ``integrate``
  (a retraction negates what its key got, read from the operator's ``matches``).
- ``lookups: %b in NAME (reused) by (KEY; ...), ...``: the arrangements each lookup reads,
  and the keys the join's paths look them up by (a stored collection's batches held in the
  executors are arranged by those columns: ``runtime.arrangements.batch_files``). ``reused``
  arrangements exist anyway (a stored collection's, a Reduce's output); ``created`` ones
  exist only for these lookups (a join's output). ``counted by (KEY; ...)`` follows a stored
  collection a worst-case optimal group proposes from: the count indexes by those columns,
  kept beside its arrangement and shared (``runtime.arrangements.count_index``).
- ``arrangements: creates NAME (what it holds)``: state the operator maintains.
- ``layout: hidden=(cnt, n1, s1) accumulable=(AGG, ...) extremes=(AGG, ...) deferred``
  for a Reduce (``physical.ReduceLayout``): the hidden accumulator columns of its output
  arrangement, the aggregates it accumulates there and those it recomputes from its
  values (each part only when it has some), ``deferred`` when the job of the refresh
  reading its changes computes them.
- for a LetRec, its loop: ``loop over (time, round): round i reads every binding at round
  i - 1``, then each binding's body (``binding NAME =``, its value as ``ir.render`` prints
  it, the parts computed outside the loop printed as the operator ``%k`` computing them),
  with the state each keeps: ``state: ...`` below a Join (its inputs' differences by time
  and round) and a Reduce, TopK or Window (its input's; in round r the ordinary operator
  over the contents of rounds <= r, less its output of the rounds before); a Join's delta
  paths (``implementation: delta over (time, round)``, ``physical.LoopJoin``) as above, an
  input the loop computes named ``input i``; a Reduce's ``layout`` as above
  (``physical.LoopReduce``).
- with statistics (ANALYZE): ``steps=S rows_in=I rows_out=O time=T.TTTs`` and
  ``arrangement NAME: rows=R bytes=B batches=N held=driver|executors|both [keys=K,...]
  [read: K by key (files~F pages~P), W whole (R rows)]`` (where its batches are; the
  columns those in the executors are arranged by; what reads of those read over its life,
  when any did: batches read by key, the files and pages that decoded, batches read
  whole).

ANALYZE starts with how the view's steps ran, under its title: ``refresh=SETTING: I
incremental steps, R recomputes`` and ``last step: STRATEGY (REASON)[; estimated
incremental Xs, recompute Ys]`` (``runtime.refresh``), and when the last step an input
changed recomputed operators, ``last change recomputed %N KIND: WHY[; ...]``
(``runtime.operator_recompute``).

Then (with no blank lines, so that goldens hold whole plans) ``Used Indexes:`` lists the
shared arrangements (stored collections) the dataflow reads, with the operators reading and
looking them up, and one ``Source NAME`` section per stored collection whose Get has steps
pushed into it (the Linear right above it), showing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import networkx as nx
from matview.ir import physical
from matview.ir.physical import DeltaPath, Equality, Lookup, ReduceLayout
from matview.ir.relation import Get, Join, Linear, Reduce, Relation, TopK, Window, inputs_of
from matview.ir.render import PLAIN, RenderOptions, render_aggregate, render_line
from matview.ir.render_scalars import render_scalar
from matview.ir.scalar import Scalar
from matview.planner.dataflow_graph import (
    arrangements,
    history_arrangements,
    operators,
    root,
)


class ArrangementSize(Protocol):
    """The size of an arrangement a running dataflow holds or reads."""

    name: str
    rows: int
    bytes: int
    batches: int
    held: str
    keys: tuple[str, ...]


class OperatorStats(Protocol):
    """What a running operator did over its life (``runtime.dataflow.Dataflow.analyze``)."""

    steps: int
    rows_in: int
    rows_out: int
    seconds: float
    arrangements: Sequence[ArrangementSize]


class Choice(Protocol):
    """How one step of a materialized view ran, and why, with the seconds each strategy
    was estimated to take (None: nothing to estimate from)."""

    strategy: str
    reason: str
    incremental: float | None
    recompute: float | None


class RefreshStats(Protocol):
    """How a materialized view's steps ran (``runtime.refresh.RefreshStats``)."""

    setting: str
    incremental: int
    recompute: int
    last: Choice | None
    recomputed: Sequence[str]


def render_dataflow(graph: nx.DiGraph, options: RenderOptions = PLAIN,
                    stats: Sequence[OperatorStats] | None = None,
                    title: str = "Explained Query:",
                    refresh: RefreshStats | None = None,
                    indexes: Mapping[str, Sequence[str]] | None = None) -> str:
    """The TEXT form of ``graph`` (see the module docstring); with ``stats`` (one entry per
    operator, in operator order) and ``refresh`` the ANALYZE form; ``indexes`` names the
    indexes of each stored collection (``Used Indexes``)."""
    lines = [title]
    if refresh is not None:
        lines.append(f"  refresh={refresh.setting}: {refresh.incremental} incremental "
                     f"steps, {refresh.recompute} recomputes")
        if refresh.last is not None:
            last = refresh.last
            estimates = ", ".join(f"{what} {seconds:.3f}s" for what, seconds in (
                ("incremental", last.incremental), ("recompute", last.recompute))
                if seconds is not None)
            lines.append(f"  last step: {last.strategy} ({last.reason})"
                         + (f"; estimated {estimates}" if estimates else ""))
        if refresh.recomputed:
            lines.append(f"  last change recomputed {'; '.join(refresh.recomputed)}")
    _render_operator(graph, root(graph), 1, options, stats, lines, set())
    lines += _used_indexes(graph, indexes or {})
    lines += _sources(graph, options)
    return "\n".join(lines)


def _render_operator(graph: nx.DiGraph, op: int, depth: int, options: RenderOptions,
                     stats: Sequence[OperatorStats] | None, lines: list[str],
                     printed: set[int]) -> None:
    node = graph.nodes[op]
    pad = "  " * depth
    if op in printed:
        lines.append(f"{pad}%{op} (shared, printed above)")
        return
    printed.add(op)
    lines.append(f"{pad}%{op} {render_line(node['relation'], options)}")
    detail = pad + "  "
    if "implementation" in node:
        lines.append(f"{detail}implementation: {node['implementation'].kind}")
        lines += [f"{detail}  {render_path(path)}" for path in node["paths"]]
        lines.append(f"{detail}lookups: " + ", ".join(_lookups(graph, op)))
    if isinstance(node["operator"], physical.AsOfJoin):
        lines += _as_of(graph, node["operator"], detail)
    for name in arrangements(graph, op):
        lines.append(f"{detail}arrangements: creates {name} ({graph.nodes[name]['purpose']})")
    if isinstance(node["operator"], physical.Reduce):
        lines.append(f"{detail}{render_layout(node['operator'].layout, node['relation'])}")
    if isinstance(node["operator"], physical.LetRec):
        lines += _loop(node["operator"], detail, options)
    if stats is not None:
        lines += _statistics(stats[op], detail)
    for child in node["inputs"]:
        _render_operator(graph, child, depth + 1, options, stats, lines, printed)


def _as_of(graph: nx.DiGraph, op: physical.AsOfJoin, pad: str) -> list[str]:
    """How as-of join ``op`` runs (see the module docstring)."""
    rel, (left, right) = op.relation, op.inputs
    looked = ", ".join(history_arrangements(graph, right.id))
    return [f"{pad}implementation: as of each change's time",
            f"{pad}  differentiate %{left.id}: each change reads %{right.id} at its time",
            f"{pad}  half join %{right.id}[{_scalars(rel.right_keys)}] <= stream=("
            f"{_scalars(rel.left_keys)}) in {looked}",
            f"{pad}  integrate: a retraction negates what its key got in {op.matches.name} by ("
            + ", ".join(f"#{c}" for c in rel.unique) + ")"]


def _loop(op: physical.LetRec, pad: str, options: RenderOptions) -> list[str]:
    """The body of LetRec ``op``, each binding's value with its loop-invariant parts
    printed as the operators computing them."""
    computed = {child.relation: child.id for child in op.inputs}
    lines = [f"{pad}loop over (time, round): round i reads every binding at round i - 1"]

    def body(rel: Relation, depth: int) -> None:
        at = pad + "  " * depth
        if rel in computed:
            lines.append(f"{at}%{computed[rel]}")
            return
        lines.append(f"{at}{render_line(rel, options)}")
        if isinstance(rel, Join):
            lines.append(f"{at}  implementation: delta over (time, round)")
            lines.extend(f"{at}    {render_path(path)}"
                         for path in op.loop_join(rel).implementation.paths)
            lines.append(f"{at}  state: each input's differences by (time, round)")
        if isinstance(rel, Reduce):
            lines.append(f"{at}  {render_layout(op.loop_reduce(rel).layout, rel)}")
        if isinstance(rel, (Reduce, TopK, Window)):
            lines.append(f"{at}  state: its input's differences by (time, round); round r: "
                         "over rounds <= r, less the rounds before")
        for child in inputs_of(rel):
            body(child, depth + 1)

    for name, value in zip(op.relation.names, op.relation.values, strict=True):
        lines.append(f"{pad}binding {name} = (state: its differences by (time, round))")
        body(value, 1)
    return lines


def render_layout(layout: ReduceLayout, reduce: Reduce) -> str:
    """The layout of ``reduce`` on one line (see the module docstring)."""
    aggregates = reduce.aggregates
    parts = [f"hidden=({', '.join(layout.hidden)})"]
    for name, chosen in (("accumulable", layout.accumulable), ("extremes", layout.extremes)):
        if chosen:
            parts.append(f"{name}=({', '.join(render_aggregate(aggregates[j]) for j in chosen)})")
    return "layout: " + " ".join(parts + (["deferred"] if layout.deferred else []))


def render_path(path: DeltaPath) -> str:
    """Delta path ``path`` on one line (see the module docstring)."""
    steps = [_stage(lk) for lk in path.lookups]
    for extension in reversed(path.extensions):
        first, orders = extension.first, extension.orders
        proposers = ", ".join(_stage(order[0]) for order in orders)
        validators = " | ".join(", ".join(map(_stage, order[1:])) for order in orders)
        steps[first:first + len(orders)] = [
            f"extend(count, propose: {proposers}; validate: {validators})"]
    return (f"path {path.input} from {_input(path.input, path.operator)}"
            f"{_filters(path.equalities, path.closure)}: " + ", ".join(steps))


def _stage(lk: Lookup) -> str:
    """A stage of a delta path: ``%b[KEY] <= stream=(SKEY)`` and its filters."""
    return (f"{_input(lk.input, lk.operator)}[{_scalars(lk.key)}] {lk.time} "
            f"stream=({_scalars(lk.stream_key)}){_filters(lk.equalities, lk.closure)}")


def _input(index: int, operator: int) -> str:
    """A join's input ``index``: ``%k``, the operator computing it, or ``input i`` for one
    a loop computes (``physical.LoopJoin``)."""
    return f"%{operator}" if operator >= 0 else f"input {index}"


def _scalars(exprs: Sequence[Scalar]) -> str:
    return ", ".join(render_scalar(e) for e in exprs)


def _filters(equalities: Sequence[Equality], closure: Sequence[Scalar]) -> str:
    """`` on=(A = B, ...)`` for ``equalities`` and `` where=(P, ...)`` for ``closure``,
    each only when there are some."""
    on = ", ".join(f"{render_scalar(a)} = {render_scalar(b)}" for a, b in equalities)
    return (f" on=({on})" if on else "") + (f" where=({_scalars(closure)})" if closure else "")


def _lookups(graph: nx.DiGraph, op: int) -> list[str]:
    """Per input of join ``op``, the arrangements its paths look up, and by which keys (the
    columns a stored collection's batches held in the executors are arranged by)."""
    node = graph.nodes[op]
    out = []
    for i, child in enumerate(node["inputs"]):
        keys = sorted({_scalars(lk.key) for path in node["paths"] for lk in path.every_lookup
                       if lk.input == i})
        by = f" by ({'; '.join(keys)})" if keys else ""
        counted = sorted({_scalars(o[0].key) for path in node["paths"] for e in path.extensions
                          for o in e.orders if o[0].input == i and o[0].counted_by is not None})
        if counted and isinstance(graph.nodes[child].get("relation"), Get):
            by += f" counted by ({'; '.join(counted)})"
        for name in history_arrangements(graph, child):
            out.append(f"%{child} in {name} "
                       f"({'reused' if graph.nodes[name]['reused'] else 'created'}){by}")
    return out or ["none"]


def _statistics(stats: OperatorStats, pad: str) -> list[str]:
    lines = [f"{pad}steps={stats.steps} rows_in={stats.rows_in} rows_out={stats.rows_out} "
             f"time={stats.seconds:.3f}s"]
    lines += [f"{pad}arrangement {a.name}: rows={a.rows} bytes={a.bytes} "
              f"batches={a.batches} held={a.held}"
              + (f" keys={','.join(a.keys)}" if a.keys else "")
              + (f" read: {a.reads.by_key} by key (files~{a.reads.files} "
                 f"pages~{a.reads.pages}), {a.reads.whole} whole ({a.reads.whole_rows} rows), "
                 f"{a.reads.remembered} remembered, {a.reads.in_driver} in the driver"
                 if a.reads.by_key or a.reads.whole or a.reads.remembered else "")
              for a in stats.arrangements]
    return lines


def _used_indexes(graph: nx.DiGraph, indexes: Mapping[str, Sequence[str]]) -> list[str]:
    shared = sorted(n for n in graph.nodes
                    if isinstance(n, str) and graph.nodes[n]["role"] == "shared")
    if not shared:
        return []
    lines = ["Used Indexes:"]
    for name in shared:
        uses = []
        for reader in sorted(graph.successors(name)):
            edge = graph.edges[name, reader]
            if edge["kind"] == "reads":
                uses.append(f"read by %{reader}")
            else:
                paths = sorted(edge["paths"])
                word = "path" if len(paths) == 1 else "paths"
                uses.append(f"looked up by %{reader} ({word} {', '.join(map(str, paths))})")
        uses += [f"index {index}" for index in indexes.get(name, ())]
        lines.append(f"  - {name} ({'; '.join(uses)})")
    return lines


def _sources(graph: nx.DiGraph, options: RenderOptions) -> list[str]:
    lines = []
    for op in operators(graph):
        rel = graph.nodes[op]["relation"]
        if not isinstance(rel, Linear) or not isinstance(rel.input, Get):
            continue
        lines += [f"Source {rel.input.name} (%{op})", f"  {render_line(rel, options)}"]
    return lines
