"""Rendering: the operator tree running a physical plan.

This module is the only place mapping the nodes of a physical plan (``ir.physical``) to the
operator classes that run them (``runtime.operators``, ``runtime.recursion``); it gives each
operator a trace for every arrangement the plan says it owns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from matview.ir import physical
from matview.ir.table_functions import DEFAULT_ROW_LIMIT
from matview.ir.walk import post_order
from matview.runtime.arrangements.trace import Trace
from matview.runtime.operators.asof_join import AsOfJoinOp
from matview.runtime.operators.base import Operator
from matview.runtime.operators.constant import ConstantOp
from matview.runtime.operators.get import GetOp
from matview.runtime.operators.join import DEFAULT_JOIN_ROWS, JoinOp
from matview.runtime.operators.linear import LinearOp
from matview.runtime.operators.reduce import ReduceOp
from matview.runtime.operators.top_k import TopKOp
from matview.runtime.operators.union import UnionOp
from matview.runtime.operators.window import WindowOp
from matview.runtime.recursion.let_rec import LetRecOp
from pyspark.sql import SparkSession


class PlanError(ValueError):
    """The plan cannot be run (a node the runtime does not execute)."""


def build(node: physical.Operator, spark: SparkSession, trace_of: Callable[[str], Trace],
          limit: int = DEFAULT_ROW_LIMIT, max_join_rows: int = DEFAULT_JOIN_ROWS) -> Operator:
    """The operators running physical plan ``node`` (one per plan node: an operator of
    several consumers is shared by them), each operator given a trace for
    every arrangement the plan says it owns; ``trace_of`` finds the trace of a stored name,
    ``limit`` is the most rows a table function may produce for one input row,
    ``max_join_rows`` the most rows a join may produce in one step."""
    built: dict[int, Operator] = {}
    for each in physical.operators(node):
        op = _operator(each, tuple(built[child.id] for child in each.inputs), trace_of, limit,
                       max_join_rows)
        for arrangement in each.state():
            op.attach(arrangement.what, Trace(
                spark, op.arrangement_arity(arrangement.what),
                local_rows=op.arrangement_local_rows(arrangement.what)))
        built[each.id] = op
    return built[node.id]


def _operator(node: physical.Operator, inputs: tuple[Operator, ...],
              trace_of: Callable[[str], Trace], limit: int, max_join_rows: int) -> Operator:
    rel = node.relation
    if isinstance(node, physical.Get):
        return GetOp(rel.types, trace=trace_of(node.relation.name), name=node.relation.name)
    if isinstance(node, physical.Constant):
        return ConstantOp(rel.types, rows=node.relation.rows)
    if isinstance(node, physical.Linear):
        return LinearOp(rel.types, input=inputs[0], steps=node.relation.steps, limit=limit,
                        copies=node.copies)
    if isinstance(node, physical.Union):
        return UnionOp(rel.types, inputs=inputs)
    if isinstance(node, physical.Join):
        return JoinOp(rel.types, inputs=inputs, paths=node.implementation.paths,
                      predicates=node.relation.predicates,
                      keep_history=node.output is not None, max_rows=max_join_rows,
                      label=f"Join %{node.id}")
    if isinstance(node, physical.AsOfJoin):
        return AsOfJoinOp(rel.types, left=inputs[0], right=inputs[1],
                          left_keys=node.relation.left_keys,
                          right_keys=node.relation.right_keys,
                          predicates=node.relation.predicates, outer=node.relation.outer,
                          unique=node.relation.unique)
    if isinstance(node, physical.Reduce):
        return ReduceOp(rel.types, input=inputs[0], group_key=node.relation.group_key,
                        aggregates=node.relation.aggregates, layout=node.layout)
    if isinstance(node, physical.TopK):
        return TopKOp(rel.types, input=inputs[0], order_by=node.relation.order_by,
                      limit=node.relation.limit, offset=node.relation.offset)
    if isinstance(node, physical.Window):
        return WindowOp(rel.types, input=inputs[0], partition_by=node.relation.partition_by,
                        calls=node.relation.calls)
    if isinstance(node, physical.LetRec):
        return LetRecOp(rel.types, inputs=inputs, loop=node.relation, plan=node,
                        invariants=tuple(child.relation for child in node.inputs), limit=limit,
                        max_join_rows=max_join_rows)
    raise PlanError(f"the runtime cannot execute {node.kind}")


def operators(root: Operator) -> Iterator[Operator]:
    """Every operator under ``root`` once (inputs before consumers; in the order of
    ``physical.operators``)."""
    return iter(post_order(root, lambda op: op.children()))
