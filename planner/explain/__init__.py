"""EXPLAIN: a plan at a stage, in a format. This module only chooses; each format has one
renderer: TEXT in ``ir.render`` (logical stages) and ``physical_text`` (the physical
dataflow), JSON in ``as_json``, DOT in ``as_dot``.

Options (``arity``, ``types``, ``keys``, ``humanized expressions``) annotate TEXT; JSON
always carries arity and types; DOT ignores them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from matview.ir import physical
from matview.ir.relation import Relation
from matview.ir.render import RenderOptions, render_plan
from matview.planner.dataflow_graph import dataflow_graph
from matview.planner.explain.as_dot import plan_graph, to_dot
from matview.planner.explain.as_json import (
    dataflow_json,
    explain_document,
    plan_json,
    refresh_json,
    trace_json,
)
from matview.planner.explain.physical_text import (
    OperatorStats,
    RefreshStats,
    render_dataflow,
)
from matview.planner.lower import lower
from matview.planner.pipeline import at_stage, trace

OPTIONS = {"arity": "arity", "types": "types", "keys": "keys",
           "humanized expressions": "humanized"}


def render_options(options: Sequence[str]) -> RenderOptions:
    """The TEXT rendering options named by EXPLAIN's ``WITH (...)``."""
    unknown = [o for o in options if o not in OPTIONS]
    if unknown:
        raise ValueError(f"unknown EXPLAIN option {unknown[0]!r}")
    return RenderOptions(**{OPTIONS[o]: True for o in options})


def explain_plan(plan: Relation, stage: str, fmt: str, options: Sequence[str] = (),
                 indexes: Mapping[str, Sequence[str]] | None = None) -> str:
    """``plan`` (raw) at ``stage`` in format ``fmt`` (``text``, ``json`` or ``dot``);
    ``indexes``: per stored collection, its indexes (named under ``Used Indexes``)."""
    staged = at_stage(plan, stage)
    if stage == "physical":
        graph = dataflow_graph(lower(staged))
        if fmt == "text":
            return render_dataflow(graph, render_options(options), indexes=indexes)
        if fmt == "json":
            return _json(explain_document(stage, dataflow_json(graph)))
        return to_dot(graph, "dataflow")
    if fmt == "text":
        return render_plan(staged, render_options(options))
    if fmt == "json":
        return _json(explain_document(stage, plan_json(staged)))
    return to_dot(plan_graph(staged), stage)


def explain_trace(plan: Relation, fmt: str, options: Sequence[str] = ()) -> str:
    """The plan after each optimizer transform, ``(no change)`` where one changed nothing."""
    steps, before = [], plan
    for name, after in trace(plan):
        steps.append((name, after, after != before))
        before = after
    if fmt == "json":
        return _json(explain_document("trace", trace_json([("raw", plan, True), *steps])))
    rendering = render_options(options)
    lines = ["raw:", _indented(render_plan(plan, rendering))]
    for name, after, changed in steps:
        lines += [f"{name}:", _indented(render_plan(after, rendering))] if changed else [
            f"{name}: (no change)"]
    return "\n".join(lines)


def explain_analyze(plan: physical.Operator, stats: Sequence[OperatorStats], fmt: str,
                    title: str, refresh: RefreshStats) -> str:
    """The running dataflow of physical ``plan`` with each operator's statistics and how
    its view's steps ran (``refresh``)."""
    graph = dataflow_graph(plan)
    if fmt == "json":
        return _json(explain_document("analyze", {**dataflow_json(graph, stats),
                                                  "refresh": refresh_json(refresh)}))
    return render_dataflow(graph, stats=stats, title=title, refresh=refresh)


def _indented(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _json(document: dict[str, object]) -> str:
    return json.dumps(document, indent=2)
