"""EXPLAIN ... AS JSON: the one JSON form of plans, physical dataflows and optimizer traces.

Every function returns a JSON-ready value (dicts, lists, ``str``, ``int``, ``bool`` and
``None`` only; ANALYZE's ``seconds`` is a ``float``) that is deterministic: no object ids, no
set order, no paths. Keys appear in the order given here. Scalar expressions are strings in
the IR text form (``matview.ir.render.render_scalar``: ``#3`` is column 3, ``(#0 + 1)``,
``cast(#1 as text)``); types are strings in the IR text form (``int``, ``numeric(10,2)``,
``text[]``).

**Document** (``explain_document``): the body object of the stage, with two keys in front::

    {"version": 1, "stage": STAGE, ...body}

``version`` is 1 for this schema; it changes only when a key changes meaning or goes away
(new keys may be added). ``STAGE`` is ``raw``, ``decorrelated`` or ``optimized`` (the body
is a PLAN), ``physical`` or ``analyze`` (a DATAFLOW) or ``trace`` (a TRACE).

**PLAN** (``plan_json``): one object per operator, the plan's root first::

    {"operator": KIND, ...attributes..., "arity": N, "types": [TYPE, ...],
     "inputs": [PLAN, ...]}

with ``KIND`` and its attributes:

- ``"Get"``: ``"name"`` (the stored collection, unquoted), ``"fields"``:
  ``[{"name": NAME, "type": TYPE}, ...]``.
- ``"Constant"``: ``"rows"``: ``[{"values": [VALUE, ...], "multiplicity": INT}, ...]``, each
  value the text of the value as inside a Constant of the IR text form (``1``, ``'a'``,
  ``null``, ``'2024-01-31'``; the column's type is in ``types``).
- ``"Linear"``: ``"steps"``, in order, each one of
  ``{"step": "filter", "predicates": [SCALAR, ...]}``,
  ``{"step": "map", "exprs": [SCALAR, ...]}``,
  ``{"step": "project", "columns": [INT, ...]}``,
  ``{"step": "flat_map", "calls": [SCALAR, ...], "ordinality": BOOL}``,
  ``{"step": "repeat_row", "count": SCALAR}``.
- ``"Join"``: ``"equivalences"``: ``[[SCALAR, ...], ...]`` (each class's expressions over the
  concatenated input columns are all equal), ``"predicates"``: ``[SCALAR, ...]``, ``"plan"``:
  ``{"kind": "delta", "orders": [[STEP, ...], ...]}`` (``orders[i]``: the inputs path ``i``
  looks up, in order, each STEP an input ``INT`` or a group ``[INT, ...]`` extending the
  path by counts) or ``null`` before physical planning.
- ``"AsOfJoin"``: ``"left_keys"``, ``"right_keys"`` (over the right input's own columns),
  ``"predicates"``: ``[SCALAR, ...]``, ``"outer"``: BOOL, ``"unique"``: ``[INT, ...]``.
- ``"Reduce"``: ``"group_key"``: ``[SCALAR, ...]``, ``"aggregates"``:
  ``[{"func": "count" | "sum" | "min" | "max", "expr": SCALAR | null}, ...]`` (``null``
  for ``count(*)``).
- ``"Union"``: no attributes.
- ``"TopK"``: ``"order_by"``: ``[{"column": INT, "descending": BOOL, "nulls_first": BOOL},
  ...]``, ``"limit"``: ``INT | null`` (none), ``"offset"``: ``INT``.
- ``"Window"``: ``"partition_by"``: ``[INT, ...]``, ``"calls"``: ``[{"func": NAME, "args":
  [SCALAR, ...], "order_by": [SORT_KEY, ...], "frame": {"units": "rows" | "range",
  "start": INT | null, "end": INT | null}}, ...]`` (frame offsets from the current row,
  negative preceding, ``null`` unbounded).
- ``"LetRec"``: ``"bindings"``: ``[NAME, ...]`` (its inputs are their values, in order),
  ``"result"``: ``INT`` (the binding it denotes), ``"limit"``: ``INT``, ``"at_limit"``:
  ``"error" | "return"``.
- ``"Recur"``: ``"binding"``: ``INT``, ``"name"``: ``NAME``, ``"types"``: ``[TYPE, ...]``.

An operator whose expressions hold subqueries (a RAW or DECORRELATED-before plan: ``@N`` in
its SCALARs) also has ``"subqueries"``: ``[PLAN, ...]``, the plan of ``@N`` at index ``N``.

**DATAFLOW** (``dataflow_json``), the physical dataflow of ``planner.dataflow_graph``::

    {"operators": [OPERATOR, ...], "arrangements": [ARRANGEMENT, ...], "root": ID}

``ID`` is an operator's number ``k`` (printed ``%k`` in text), inputs before consumers.

- OPERATOR: ``{"id": ID, "operator": KIND, "text": LINE, "inputs": [ID, ...],
  "arrangements": [NAME, ...], "paths": [PATH, ...], "layout": LAYOUT, "statistics":
  STATISTICS}``: ``LINE`` is the operator's own line of the IR text form
  (``ir.render.render_line``); ``arrangements`` those it maintains; ``paths`` only on a
  Join, one per input; ``layout`` only on a Reduce: ``{"hidden": [NAME, ...],
  "accumulable": [J, ...], "extremes": [J, ...], "deferred": BOOL}`` (``physical.ReduceLayout``,
  aggregates by index); ``loop_joins`` only on a LetRec: ``[{"text": LINE, "paths": [PATH,
  ...]}, ...]``, each join of its body with the delta paths it runs over (time, round)
  (``physical.LoopJoin``; an input the loop computes has operator -1 and no arrangements),
  and ``loop_reduces``: ``[{"text": LINE, "layout": LAYOUT}, ...]``, each reduce of its body
  with its layout (``physical.LoopReduce``); ``statistics`` only in ANALYZE.
- PATH: ``{"input": I, "operator": ID, "equalities": [[SCALAR, SCALAR], ...], "closure":
  [SCALAR, ...], "lookups": [LOOKUP, ...], "extensions": [{"first": K, "orders": [[LOOKUP,
  ...], ...]}, ...]}``: path ``I`` starts from the changes of input ``I`` (operator
  ``ID``), keeps those on which ``equalities`` (pairs of equal expressions) and ``closure``
  (predicates) hold, and looks the other inputs up in order; the lookups from ``K`` on that
  an extension's first order holds run per row in the order whose first lookup counts the
  fewest matches (``physical.Extension``).
- LOOKUP: ``{"input": J, "operator": ID, "key": [SCALAR, ...], "stream_key": [SCALAR, ...],
  "time": "<=" | "<", "equalities": [[SCALAR, SCALAR], ...], "closure": [SCALAR, ...],
  "arrangements": [NAME, ...]}``: input ``J`` (operator ``ID``) found where ``key``
  (expressions over input ``J``'s own columns) equals ``stream_key`` (expressions over the
  join's columns) pairwise (both ``[]``: a cross product) and ``equalities`` hold, its
  updates seen at times ``<=`` or ``<`` the change's time, read from ``arrangements``; then
  ``closure`` filters the joined rows. Expressions other than ``key`` are over the join's
  columns.
- ARRANGEMENT: ``{"name": NAME, "role": "shared" | "owned", "purpose": TEXT,
  "reused": BOOL, "maintained_by": ID | null, "read_by": [ID, ...],
  "looked_up_by": [{"operator": ID, "paths": [I, ...]}, ...]}``: a shared arrangement is a
  table's or materialized view's (``name`` is the collection's), read by the Gets
  ``read_by``; an owned one (``%k.output``, ``%k.values``, ``%k.pending``,
  ``%k.prefix``) is maintained
  by operator ``k``. ``looked_up_by``: the Joins whose delta paths ``paths`` look it up.
  Arrangements are listed in the order of the operators that read or maintain them
  (``arrangement_names``). ``reused`` is false for an arrangement that exists only for the
  lookups of a consumer (a join's output).
- REFRESH (ANALYZE, the key ``"refresh"`` beside the DATAFLOW's): ``{"setting": "auto" |
  "incremental" | "recompute", "incremental": INT, "recompute": INT, "last": {"strategy":
  "incremental" | "recompute", "reason": TEXT} | null, "recomputed": [TEXT]}``: how many
  of the view's steps ran each way (``runtime.refresh``), how the last one ran, why, and
  the operators the last step an input changed recomputed.
- STATISTICS (ANALYZE): ``{"steps": INT, "rows_in": INT, "rows_out": INT, "seconds": FLOAT,
  "arrangements": [{"name": NAME, "rows": INT, "bytes": INT, "batches": INT, "held":
  "driver" | "executors" | "both" | "none", "keys": [COLUMN, ...], "reads": {"by_key":
  INT, "files": INT, "pages": INT, "whole": INT, "whole_rows": INT, "remembered": INT,
  "in_driver": INT}},
  ...]}``: what the operator did over the dataflow's committed steps, and the size of the
  arrangements it holds or reads, where their batches are, the columns those in the
  executors are arranged by, and what reads of those read over its life: batches read by
  key and the files and pages that decoded (about one of each per key), batches read
  whole and their rows, reads by key whose rows a batch remembered, and those the driver
  read from the files itself (``batch_files.FileReads``).

**TRACE** (``trace_json``), for EXPLAIN OPTIMIZER TRACE::

    {"steps": [{"transform": NAME, "changed": BOOL, "plan": PLAN | null}, ...]}

one step per transform in the order they run, with the plan after it, ``null`` when the
transform changed nothing (the plan is the previous one). The first step is the plan the
transforms start from, named ``raw``, with ``changed`` true.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import networkx as nx
from matview.ir import physical
from matview.ir.physical import DeltaPath, Equality, Lookup
from matview.ir.relation import (
    AsOfJoin,
    Constant,
    Get,
    Join,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
    inputs_of,
)
from matview.ir.render import own_subplans, render_line
from matview.ir.render_scalars import numbered, render_scalar, render_type, render_value
from matview.ir.scalar import Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step
from matview.planner.dataflow_graph import (
    arrangements,
    history_arrangements,
    operators,
    root,
)

if TYPE_CHECKING:
    from matview.planner.explain.physical_text import OperatorStats, RefreshStats

VERSION = 1
"""The version of the schema documented above."""

Json = dict[str, Any]


def explain_document(stage: str, body: Json) -> Json:
    """The EXPLAIN document of ``stage`` holding ``body`` (see the module docstring)."""
    clash = sorted(body.keys() & {"version", "stage"})
    if clash:
        raise ValueError(f"an EXPLAIN body must not hold {', '.join(clash)}")
    return {"version": VERSION, "stage": stage, **body}


def plan_json(rel: Relation) -> Json:
    """The logical plan ``rel`` as a PLAN object."""
    plans = own_subplans(rel)
    with numbered(plans):
        attributes = _attributes(rel)
    doc = {
        "operator": type(rel).__name__,
        **attributes,
        "arity": rel.arity,
        "types": [render_type(t) for t in rel.types],
        "inputs": [plan_json(child) for child in inputs_of(rel)],
    }
    if plans:
        doc["subqueries"] = [plan_json(plan) for plan in plans]
    return doc


def dataflow_json(graph: nx.DiGraph, stats: Sequence[OperatorStats] | None = None) -> Json:
    """The physical dataflow ``graph`` (``planner.dataflow_graph``) as a DATAFLOW object;
    with ``stats`` (one entry per operator, in operator order) each operator's STATISTICS."""
    if stats is not None and len(stats) != len(operators(graph)):
        raise ValueError(f"{len(stats)} statistics for {len(operators(graph))} operators")
    return {
        "operators": [_operator_json(graph, op, None if stats is None else stats[op])
                      for op in operators(graph)],
        "arrangements": [_arrangement_json(graph, name) for name in arrangement_names(graph)],
        "root": root(graph),
    }


def refresh_json(refresh: RefreshStats) -> Json:
    """How a view's steps ran as a REFRESH object."""
    last = refresh.last
    return {"setting": refresh.setting, "incremental": refresh.incremental,
            "recompute": refresh.recompute,
            "last": None if last is None else dataclasses.asdict(last),
            "recomputed": list(refresh.recomputed)}


def arrangement_names(graph: nx.DiGraph) -> list[str]:
    """The arrangement nodes in the order of the operators that read or maintain them."""
    names: dict[str, None] = {}
    for op in operators(graph):
        for name in (*_edges_into(graph, op, "reads"), *arrangements(graph, op)):
            names.setdefault(name, None)
    return list(names)


def trace_json(steps: Sequence[tuple[str, Relation, bool]]) -> Json:
    """The optimizer trace ``steps`` (transform name, plan after it, whether it changed the
    plan) as a TRACE object."""
    return {"steps": [
        {"transform": name, "changed": changed, "plan": plan_json(plan) if changed else None}
        for name, plan, changed in steps]}


# ---- plans -------------------------------------------------------------------------------


def _attributes(rel: Relation) -> Json:
    """The attributes of operator ``rel`` (see PLAN in the module docstring)."""
    if isinstance(rel, Get):
        return {"name": rel.name,
                "fields": [{"name": f.name, "type": render_type(f.type)} for f in rel.fields]}
    if isinstance(rel, Constant):
        return {"rows": [
            {"values": [render_value(v, t) for v, t in zip(values, rel.column_types,
                                                            strict=True)],
             "multiplicity": multiplicity}
            for values, multiplicity in rel.rows]}
    if isinstance(rel, Linear):
        return {"steps": [_step_json(step) for step in rel.steps]}
    if isinstance(rel, Join):
        plan = None if rel.plan is None else {
            "kind": rel.plan.kind, "orders": [
                [list(step) if isinstance(step, tuple) else step for step in order]
                for order in rel.plan.orders]}
        return {"equivalences": [_scalars(cls) for cls in rel.equivalences],
                "predicates": _scalars(rel.predicates), "plan": plan}
    if isinstance(rel, AsOfJoin):
        return {"left_keys": _scalars(rel.left_keys), "right_keys": _scalars(rel.right_keys),
                "predicates": _scalars(rel.predicates), "outer": rel.outer,
                "unique": list(rel.unique)}
    if isinstance(rel, Reduce):
        return {"group_key": _scalars(rel.group_key), "aggregates": [
            {"func": a.func, "expr": None if a.expr is None else render_scalar(a.expr)}
            for a in rel.aggregates]}
    if isinstance(rel, Union):
        return {}
    if isinstance(rel, TopK):
        return {"order_by": [{"column": c, "descending": d, "nulls_first": n}
                             for c, d, n in rel.order_by],
                "limit": rel.limit, "offset": rel.offset}
    if isinstance(rel, Window):
        return {"partition_by": list(rel.partition_by), "calls": [
            {"func": c.func, "args": _scalars(c.args),
             "order_by": [{"column": k, "descending": d, "nulls_first": n}
                          for k, d, n in c.order_by],
             "frame": {"units": c.frame.units, "start": c.frame.start, "end": c.frame.end}}
            for c in rel.calls]}
    if isinstance(rel, LetRec):
        return {"bindings": list(rel.names), "result": rel.result, "limit": rel.limit,
                "at_limit": rel.at_limit}
    if isinstance(rel, Recur):
        return {"binding": rel.index, "name": rel.name,
                "types": [render_type(t) for t in rel.column_types]}
    raise TypeError(f"not a relation: {rel!r}")


def _step_json(step: Step) -> Json:
    if isinstance(step, Filter):
        return {"step": "filter", "predicates": _scalars(step.predicates)}
    if isinstance(step, Map):
        return {"step": "map", "exprs": _scalars(step.exprs)}
    if isinstance(step, Project):
        return {"step": "project", "columns": list(step.outputs)}
    if isinstance(step, FlatMap):
        return {"step": "flat_map", "calls": _scalars(step.calls),
                "ordinality": step.ordinality}
    if isinstance(step, Repeat):
        return {"step": "repeat_row", "count": render_scalar(step.count)}
    raise TypeError(f"not a linear step: {step!r}")


def _scalars(exprs: Sequence[Scalar]) -> list[str]:
    return [render_scalar(e) for e in exprs]


# ---- dataflows ---------------------------------------------------------------------------


def _operator_json(graph: nx.DiGraph, op: int, stats: OperatorStats | None) -> Json:
    node = graph.nodes[op]
    out: Json = {"id": op, "operator": node["kind"], "text": render_line(node["relation"]),
                 "inputs": list(node["inputs"]), "arrangements": arrangements(graph, op)}
    if "paths" in node:
        out["paths"] = [_path_json(graph, path) for path in node["paths"]]
    if isinstance(node["operator"], physical.LetRec):
        out["loop_joins"] = [
            {"text": render_line(join.relation),
             "paths": [_path_json(graph, path) for path in join.implementation.paths]}
            for join in node["operator"].joins]
        out["loop_reduces"] = [
            {"text": render_line(reduce.relation), "layout": _layout_json(reduce.layout)}
            for reduce in node["operator"].reduces]
    if isinstance(node["operator"], physical.Reduce):
        out["layout"] = _layout_json(node["operator"].layout)
    if stats is not None:
        out["statistics"] = _statistics_json(stats)
    return out


def _layout_json(layout: physical.ReduceLayout) -> Json:
    return {"hidden": list(layout.hidden), "accumulable": list(layout.accumulable),
            "extremes": list(layout.extremes), "deferred": layout.deferred}


def _statistics_json(stats: OperatorStats) -> Json:
    return {
        "steps": stats.steps, "rows_in": stats.rows_in, "rows_out": stats.rows_out,
        "seconds": stats.seconds,
        "arrangements": [{"name": a.name, "rows": a.rows, "bytes": a.bytes,
                          "batches": a.batches, "held": a.held, "keys": list(a.keys),
                          "reads": dataclasses.asdict(a.reads)}
                         for a in stats.arrangements],
    }


def _path_json(graph: nx.DiGraph, path: DeltaPath) -> Json:
    return {
        "input": path.input,
        "operator": path.operator,
        "equalities": _equalities(path.equalities),
        "closure": _scalars(path.closure),
        "lookups": [_lookup_json(graph, lookup) for lookup in path.lookups],
        "extensions": [
            {"first": e.first,
             "orders": [[_lookup_json(graph, lookup) for lookup in order] for order in e.orders]}
            for e in path.extensions],
    }


def _lookup_json(graph: nx.DiGraph, lookup: Lookup) -> Json:
    return {"input": lookup.input, "operator": lookup.operator, "key": _scalars(lookup.key),
            "stream_key": _scalars(lookup.stream_key), "time": lookup.time,
            "equalities": _equalities(lookup.equalities), "closure": _scalars(lookup.closure),
            "arrangements": history_arrangements(graph, lookup.operator)
            if lookup.operator >= 0 else []}


def _equalities(pairs: Sequence[Equality]) -> list[list[str]]:
    return [_scalars(pair) for pair in pairs]


def _arrangement_json(graph: nx.DiGraph, name: str) -> Json:
    node = graph.nodes[name]
    maintainers = _edges_into(graph, name, "maintains")
    return {
        "name": name,
        "role": node["role"],
        "purpose": node["purpose"],
        "reused": node["reused"],
        "maintained_by": maintainers[0] if maintainers else None,
        "read_by": sorted(_edges_from(graph, name, "reads")),
        "looked_up_by": [
            {"operator": op, "paths": sorted(graph.edges[name, op]["paths"])}
            for op in sorted(_edges_from(graph, name, "lookup"))],
    }


def _edges_into(graph: nx.DiGraph, node: int | str, kind: str) -> list[Any]:
    """The sources of the ``kind`` edges into ``node``."""
    return [n for n in graph.predecessors(node) if graph.edges[n, node]["kind"] == kind]


def _edges_from(graph: nx.DiGraph, node: int | str, kind: str) -> list[Any]:
    """The targets of the ``kind`` edges out of ``node``."""
    return [n for n in graph.successors(node) if graph.edges[node, n]["kind"] == kind]
