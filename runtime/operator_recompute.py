"""Per-operator recompute: in a step that runs incrementally, an operator whose inputs
changed beyond a bound recomputes its output from their snapshots and diffs it with the
output it arranged, while the rest of the plan steps incrementally (``runtime.refresh``
chooses for a whole view; this chooses for one operator of it).

For an operator X owning its output arrangement (``%X.output``: a Reduce, or a Join, TopK
or Window a consumer looks up) and a step from frontier ``lower`` to ``upper`` whose
updates are all at one time ``at``:

    dX = X(inputs at upper) - X(inputs at lower)                  every update at ``at``
       = (X's subplan run from the snapshots at upper) - (%X.output up to lower)

and its errors, which are data, likewise: the subplan's errors at ``upper`` less its errors
at ``lower``, each computed from the snapshots (only when an operator of the subplan may
fail). The operators below X do not step: at commit, every arrangement of the subplan is
the fresh subplan's, which holds its contents at ``at``. X's consumers read dX as any delta.

X is chosen when
  * the view's step runs incrementally under ``auto`` (``RefreshPolicy.per_operator``);
  * the step is not small: a small step computes every operator's change in the refresh's
    one job, through Arrow, where a recompute's own Spark jobs cost more than the step
    (``bench.reload`` with 20,000 rows reloaded);
  * its updates are at one time (a subscription seeing several, or a temporal filter's,
    keeps every operator incremental);
  * the stored collections X's subplan reads changed at least ``operator_recompute_change``
    of the update rows they held before;
  * X's subplan is its own: no operator below X feeds one outside it, none is a loop, an
    as-of join or a temporal filter (their state holds more than the snapshots say), and
    it does not read every collection the plan reads (then the view's own choice is X's);
  * no operator above it is chosen (the topmost recompute).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matview.ir import physical
from matview.runtime.arrangements.consolidation import consolidate
from matview.runtime.arrangements.updates import materialize
from matview.runtime.operators.base import Delta, Operator, StepContext
from matview.runtime.operators.get import GetOp
from matview.runtime.step import difference

if TYPE_CHECKING:
    from matview.runtime.dataflow import Dataflow

ARRANGES_OUTPUT = (physical.Reduce, physical.Join, physical.TopK, physical.Window)
"""The operators that may own their output arrangement (the Join, TopK and Window only when
a consumer looks them up)."""

KEEPS_MORE = (physical.LetRec, physical.AsOfJoin)
"""Operators whose state is more than a function of their inputs' snapshots."""


@dataclass(frozen=True)
class Recomputed:
    """Operator ``node`` of a pending step, recomputed: ``flow`` is the fresh dataflow of
    its subplan, stepped and committed, whose arrangements the subplan's operators take
    when the step commits (``adopt``); ``label`` says which operator and why."""

    node: physical.Operator
    flow: Dataflow
    label: str


def chosen(plan: physical.Operator, ops: dict[int, Operator], probe: StepContext,
           share: float) -> list[tuple[physical.Operator, str]]:
    """The operators of ``plan`` (run by ``ops``, by id) that a step (``probe``: its
    context before sizes are known) recomputes, topmost first, each with what the refresh
    history says of it; none when ``share`` (``operator_recompute_change``) is 0."""
    if not share:
        return []
    nodes = list(physical.operators(plan))
    consumers = Counter(child.id for node in nodes for child in node.inputs)
    every = physical.reads(plan)
    covered: set[int] = set()
    out: list[tuple[physical.Operator, str]] = []
    for node in reversed(nodes):  # consumers before their inputs
        if node.id in covered or not _arranged(node):
            continue
        below = list(physical.operators(node))
        if not _own(node, below, consumers) or physical.reads(node) == every:
            continue
        gets = [ops[n.id] for n in below if isinstance(n, physical.Get)]
        changed = sum(op.pending_rows(probe) for op in gets if isinstance(op, GetOp))
        before = sum(op.trace.rows_between(None, probe.lower) for op in gets
                     if isinstance(op, GetOp) and op.trace is not None)
        if changed and changed >= share * before:
            covered.update(n.id for n in below)
            out.append((node, f"%{node.id} {node.kind}: {changed} changed rows, "
                              f"{before} held before"))
    return out


def _arranged(node: physical.Operator) -> bool:
    """Whether ``node`` owns its output arrangement (its old output can be read)."""
    return isinstance(node, ARRANGES_OUTPUT) and any(
        a.what == "output" for a in node.state())


def _own(node: physical.Operator, below: list[physical.Operator],
         consumers: Counter[int]) -> bool:
    """Whether the subplan ``below`` (``node``'s) is its own: each operator under ``node``
    feeds operators of the subplan alone, and none keeps more than its inputs' snapshots
    say (a loop, an as-of join, a temporal filter's pending updates)."""
    inside = Counter(child.id for n in below for child in n.inputs)
    return all(not isinstance(n, KEEPS_MORE) and not (isinstance(n, physical.Linear)
                                                      and n.state())
               and (n is node or consumers[n.id] == inside[n.id]) for n in below)


def recompute(node: physical.Operator, ops: dict[int, Operator], ctx: StepContext, at: int,
              fresh: Callable[[physical.Operator, int], Dataflow], label: str) -> Recomputed:
    """Give operator ``node`` (run by ``ops[node.id]``) its output of step ``ctx`` by
    recompute-and-diff (see the module docstring), every update at ``at``; ``fresh(node,
    as_of)`` is a new dataflow of ``node``'s subplan whose first step reads the snapshots
    at ``as_of``. Runs the Spark jobs that compute the subplan's contents and the
    difference."""
    op = ops[node.id]
    flow = fresh(node, at)
    step = flow.prepare(ctx.upper)
    contents, failed = step.materialized()
    step.commit()
    df = difference(None if contents is None else contents.df, op.history(ctx), at)
    leaf = None if df is None else materialize(ctx.spark, consolidate(df, ctx.small),
                                               ctx.small)
    delta = None if leaf is None else Delta(None, leaf.rows, leaf,
                                            count=leaf.rows if leaf.exact else None)
    errors = None
    below = list(physical.operators(node))
    if any(ops[n.id].checks for n in below):  # its errors before, a plan (no rows kept)
        before = fresh(node, ctx.lower).prepare(ctx.lower).errors
        lost = difference(None if failed is None else failed.df,
                          None if before is None else before.df, at)
        errors = None if lost is None else Delta(lost, None)
    op.given(ctx, delta, errors)
    for n in below:
        if n is not node:  # they do not step: no error of an earlier step stays
            ops[n.id].errors = None
    return Recomputed(node, flow, label)


def adopt(recomputed: Recomputed, ops: dict[int, Operator]) -> None:
    """The subplan's operators take the arrangements of its fresh dataflow."""
    owned = recomputed.flow.arrangements()
    for node in physical.operators(recomputed.node):
        for arrangement in node.state():
            ops[arrangement.owner].attach(arrangement.what, owned[arrangement.name])
