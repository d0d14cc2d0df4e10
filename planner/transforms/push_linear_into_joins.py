"""Push the leading steps of a ``Linear`` into the inputs of the join (or union) below it.

Over a join, the leading steps move one at a time, while each reads the columns of one
input ``k`` only (``s'`` is ``s`` renumbered from the input's offset):

    Linear(Join(I1..In, E, W), [Filter(p), S..])
        =>  Linear(Join(I1..Linear(Ik, [Filter(p')])..In, E, W), [S..])
    Linear(Join(I1..In, E, W), [M, S..])                      M a Map, FlatMap or Repeat
        =>  Linear(Join(I1..Linear(Ik, [M'])..In, E', W'), [Project(o), S..])

A Map or FlatMap appends its columns to input ``k``, so the columns of the later inputs
shift: ``E'`` and ``W'`` are renumbered, and ``Project(o)`` puts every column back where the
remaining steps read it. A Repeat multiplies the diff of the row, and so of every joined row
it is part of. Predicates that read several inputs do not move down but into the join:

    Linear(Join(I, E, W), [Filter(a = b), S..])  =>  Linear(Join(I, E ⊕ {a, b}, W), [S..])
    Linear(Join(I, E, W), [Filter(p), S..])      =>  Linear(Join(I, E, W ++ [p]), [S..])

the first when ``a`` and ``b`` each read one input and not the same one (SQL ``=`` never
matches NULL, and neither does a join equivalence; ``⊕`` merges the classes that share a
member), the second for other predicates that are not temporal (a temporal
predicate over several inputs stays above the join). Every rewrite holds because the
steps are linear and act on each joined row through the columns of one input only (or, for
the join's predicates, on the joined rows exactly). Predicates that read no column stay
where they are; once one stays, the steps after it move down only if they cannot fail, so
that they see no row the predicate drops before them.

Over a union, the whole step list moves into each input:

    Linear(Union(I1..In), S)  =>  Union(Linear(I1, S)..Linear(In, S))

Pushing may evaluate a fallible expression of one input on rows that find no partner in
the join, as SQL leaves the order of evaluation open.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from matview.ir.linear_logic import is_temporal
from matview.ir.relation import Join, Linear, Relation, Union
from matview.ir.scalar import Call, Scalar, columns_used, conjuncts, may_fail, remap
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step, step_scalars, step_types
from matview.ir.walk import bottom_up
from matview.planner.transforms.canonicalize_linear import renamed

_SPAN = 1 << 32
"""Columns are tracked as ``k * _SPAN + j``: column ``j`` of input ``k``."""


@dataclass
class _Input:
    """One join input and the steps pushed into it so far."""

    relation: Relation
    steps: list[Step] = field(default_factory=list)

    @property
    def arity(self) -> int:
        types = self.relation.types
        for step in self.steps:
            types = step_types(step, types)
        return len(types)

    def add(self, step: Step) -> None:
        """Append ``step``; Filters pushed from one step and Maps merge."""
        if self.steps and type(self.steps[-1]) is type(step) and isinstance(step, Filter):
            self.steps[-1] = Filter(self.steps[-1].predicates + step.predicates)  # type: ignore[union-attr]
        elif self.steps and isinstance(self.steps[-1], Map) and isinstance(step, Map):
            self.steps[-1] = Map(self.steps[-1].exprs + step.exprs)
        else:
            self.steps.append(step)

    def build(self) -> Relation:
        return _push(linear(self.relation, tuple(self.steps))) if self.steps else self.relation


def merge_classes(classes: list[tuple[Scalar, ...]]) -> tuple[tuple[Scalar, ...], ...]:
    """Union equivalence classes that share a member; members stay in first-seen order."""
    merged: list[list[Scalar]] = []
    for cls in classes:
        hits = [m for m in merged if any(x in m for x in cls)]
        target: list[Scalar] = []
        for group in hits:
            target.extend(x for x in group if x not in target)
            merged.remove(group)
        target.extend(x for x in cls if x not in target)
        merged.append(target)
    return tuple(tuple(m) for m in merged)


def is_cross_input_equality(input_of: Callable[[int], int], pred: Scalar) -> bool:
    """Whether ``pred`` is ``a = b`` with ``a`` and ``b`` each reading the columns of one
    input (``input_of(column)``), not the same one, and neither reading ``mz_now()``."""
    if not (isinstance(pred, Call) and pred.func == "eq") or is_temporal(pred):
        return False
    sides = [{input_of(c) for c in columns_used(arg)} for arg in pred.args]
    return all(len(s) == 1 for s in sides) and sides[0] != sides[1]


def linear(input: Relation, steps: tuple[Step, ...]) -> Relation:
    """``Linear(input, steps)``, fused with ``input`` when that is a Linear too."""
    if isinstance(input, Linear):
        return Linear(input.input, input.steps + steps)
    return Linear(input, steps) if steps else input


def _owners(expr: Scalar) -> set[int]:
    return {c // _SPAN for c in columns_used(expr)}


def _local(expr: Scalar) -> Scalar:
    return remap(expr, lambda c: c % _SPAN)


def _push_join(plan: Linear, join: Join) -> Relation:
    inputs = [_Input(i) for i in join.inputs]
    offsets = join.offsets()
    old = [join.input_of(c) * _SPAN + c - offsets[join.input_of(c)] for c in range(join.arity)]
    cols = list(old)  # the tracked column of each column the next step reads

    def tracked(expr: Scalar) -> Scalar:
        return remap(expr, lambda i: cols[i])

    equivalences = [tuple(remap(e, lambda i: old[i]) for e in cls) for cls in join.equivalences]
    predicates = [remap(p, lambda i: old[i]) for p in join.predicates]
    kept: list[Scalar] = []  # predicates that stay above the join, over tracked columns
    changed = False
    steps = list(plan.steps)
    at = 0
    while at < len(steps):
        step = steps[at]
        if kept and not isinstance(step, (Filter, Project)) and any(
                may_fail(s) for s in step_scalars(step)):
            break
        if isinstance(step, Project):
            cols = [cols[i] for i in step.outputs]
        elif isinstance(step, Filter):
            pushed: dict[int, list[Scalar]] = {}
            for pred in (c for p in step.predicates for c in conjuncts(tracked(p))):
                owners = _owners(pred)
                if len(owners) == 1:
                    pushed.setdefault(owners.pop(), []).append(_local(pred))
                elif len(owners) > 1 and is_cross_input_equality(lambda c: c // _SPAN, pred):
                    equivalences.append(tuple(pred.args))  # type: ignore[attr-defined]
                elif len(owners) > 1 and not is_temporal(pred):
                    predicates.append(pred)
                else:
                    kept.append(pred)
                    continue
                changed = True
            for k, preds in pushed.items():
                inputs[k].add(Filter(tuple(preds)))
        elif isinstance(step, Map):
            done = 0
            for expr in step.exprs:
                new = tracked(expr)
                owners = _owners(new)
                if len(owners) != 1:
                    break
                k = owners.pop()
                cols.append(k * _SPAN + inputs[k].arity)
                inputs[k].add(Map((_local(new),)))
                done += 1
                changed = True
            if done < len(step.exprs):
                steps[at] = Map(step.exprs[done:])
                break
        elif isinstance(step, (FlatMap, Repeat)):
            new_step = renamed(step, cols.__getitem__)
            owners = {k for s in step_scalars(new_step) for k in _owners(s)}
            if len(owners) != 1:
                break
            k = owners.pop()
            before = inputs[k].arity
            inputs[k].add(renamed(new_step, lambda c: c % _SPAN))
            cols.extend(k * _SPAN + j for j in range(before, inputs[k].arity))
            changed = True
        at += 1
    if not changed:
        return plan

    new_inputs = tuple(i.build() for i in inputs)
    new_offsets, total = [], 0
    for rel in new_inputs:
        new_offsets.append(total)
        total += rel.arity

    def place(c: int) -> int:
        return new_offsets[c // _SPAN] + c % _SPAN

    def placed(expr: Scalar) -> Scalar:
        return remap(expr, place)

    new_join = replace(
        join, inputs=new_inputs,
        equivalences=merge_classes([tuple(placed(e) for e in cls) for cls in equivalences]),
        predicates=tuple(placed(p) for p in predicates))
    rest: list[Step] = []
    if kept:
        rest.append(Filter(tuple(placed(p) for p in kept)))
    positions = tuple(place(c) for c in cols)
    if positions != tuple(range(total)):
        rest.append(Project(positions))
    rest.extend(steps[at:])
    return Linear(new_join, tuple(rest)) if rest else new_join


def _push(plan: Relation) -> Relation:
    if not isinstance(plan, Linear):
        return plan
    if isinstance(plan.input, Union):
        return Union(tuple(_push(linear(i, plan.steps)) for i in plan.input.inputs))
    if isinstance(plan.input, Join):
        return _push_join(plan, plan.input)
    return plan


def push_linear_into_joins(plan: Relation) -> Relation:
    """The filters and projections above each join pushed into its inputs and equivalences."""
    return bottom_up(plan, _push)
