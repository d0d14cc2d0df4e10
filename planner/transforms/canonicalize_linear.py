"""Put the step list of each ``Linear`` into a canonical order.

With ``S`` a step list, ``p`` a predicate and ``M`` a Map, FlatMap or Repeat step:

    [Project(o), S..]             =>  [S'.., Project(o')]        S' reads the wider row
    [.., M, Filter(p), ..]        =>  [.., Filter(p), M, ..]     p reads no column of M
    [Filter(P), Filter(Q)]        =>  [Filter(P ++ Q)]           no q in Q may fail
    [Filter(p AND q)]             =>  [Filter(p, q)]
    [Map(E), Map(F)]              =>  [Map(E ++ F)]
    [Map(E ++ [#i])]              =>  [Map(E)]                   #i read where it is
    [Map(E ++ [e]), S.., Project(o)]  =>  [Map(E), S'.., Project(o')]   nothing reads e
    [Filter(TRUE)]                =>  []
    [Project(#0, .., #n-1)]       =>  []                         identity on n columns

Projects only rename columns: every interior Project is folded into the column references
of the steps after it (which then read a wider row) and one Project at the end gives the
output. A predicate moves before a Map, FlatMap or Repeat step whose columns it does not
read, temporal predicates included: each of those steps is linear and a Filter keeps or
drops the whole row either way, while times join and diffs multiply in either order. A
predicate that may fail (``scalar.may_fail``) never sees a row it did not see before: it
moves only across Maps (which drop no row), never ahead of a Filter, FlatMap or Repeat, and
it shares a Filter step only with predicates that ran with it before (a Filter evaluates all
of its predicates on every row). Dropping an unused Map expression can only remove an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from matview.ir.relation import Linear, Relation
from matview.ir.scalar import TRUE, Call, Col, Scalar, columns_used, conjuncts, may_fail, remap
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat, Step, step_scalars, step_types
from matview.ir.types import SqlType
from matview.ir.walk import bottom_up

Place = tuple[int, int]
"""Where a predicate lands: before body step ``slot``, in filter group ``group`` there."""


def renamed(step: Step, mapping: Callable[[int], int]) -> Step:
    """``step`` with every column reference ``#i`` replaced by ``#mapping(i)``."""
    def ref(expr: Scalar) -> Scalar:
        return remap(expr, mapping)

    if isinstance(step, Map):
        return Map(tuple(ref(e) for e in step.exprs))
    if isinstance(step, Filter):
        return Filter(tuple(ref(p) for p in step.predicates))
    if isinstance(step, FlatMap):
        return FlatMap(tuple(Call(c.func, tuple(ref(a) for a in c.args)) for c in step.calls),
                       step.ordinality)
    if isinstance(step, Repeat):
        return Repeat(ref(step.count))
    return Project(tuple(mapping(i) for i in step.outputs))


def _fold_projects(types: tuple[SqlType, ...], steps: Sequence[Step]
                   ) -> tuple[list[Step], list[int], list[int]]:
    """The steps without Projects (each reading the physical row, which only grows), the
    physical column of each output column, and the physical width before each step."""
    cols = list(range(len(types)))
    flat: list[Step] = []
    starts: list[int] = []
    for step in steps:
        if isinstance(step, Project):
            cols = [cols[i] for i in step.outputs]
            continue
        width = len(types)
        if isinstance(step, Map):
            exprs: list[Scalar] = []
            for expr in step.exprs:
                # Each expression reads the logical row so far, this Map's earlier ones included.
                new = remap(expr, cols.__getitem__)
                if isinstance(new, Col):
                    cols.append(new.index)
                    continue
                cols.append(width + len(exprs))
                exprs.append(new)
            if not exprs:
                continue
            new_step: Step = Map(tuple(exprs))
        else:
            new_step = renamed(step, cols.__getitem__)
        types = step_types(new_step, types)
        if isinstance(new_step, FlatMap):
            cols.extend(range(width, len(types)))
        starts.append(width)
        flat.append(new_step)
    starts.append(len(types))
    return flat, cols, starts


def _drop_unused(flat: list[Step], cols: list[int], starts: list[int]
                 ) -> tuple[list[Step], list[int], list[int]]:
    """``flat`` without the Map expressions that no later step and no output reads."""
    needed = set(cols)
    dropped: set[int] = set()
    kept: list[Step] = []
    for step, start in zip(reversed(flat), reversed(starts[:-1])):
        if isinstance(step, Map):
            exprs = []
            for k in range(len(step.exprs) - 1, -1, -1):
                if start + k in needed:
                    exprs.append(step.exprs[k])
                    needed |= columns_used(step.exprs[k])
                else:
                    dropped.add(start + k)
            if exprs:
                kept.append(Map(tuple(reversed(exprs))))
            continue
        for scalar in step_scalars(step):
            needed |= columns_used(scalar)
        kept.append(step)
    kept.reverse()
    if not dropped:
        return kept, cols, starts[-1:]
    mapping = [i - sum(1 for d in dropped if d < i) for i in range(starts[-1])]
    return ([renamed(s, mapping.__getitem__) for s in kept], [mapping[c] for c in cols],
            [starts[-1] - len(dropped)])


def canonical_steps(types: tuple[SqlType, ...], steps: Sequence[Step]) -> tuple[Step, ...]:
    """The canonical form of ``steps`` applied to rows of ``types``."""
    flat, cols, starts = _fold_projects(types, steps)
    flat, cols, ends = _drop_unused(flat, cols, starts)
    width = ends[-1]

    # Which body step (non-Filter step) makes each column: 0 for input columns, b + 1 for
    # body step b. A predicate lands in the first slot where its columns exist.
    made_by = [0] * len(types)
    body: list[Step] = []
    slots: list[list[list[Scalar]]] = [[]]
    last: Place = (0, -1)  # the place of the latest row-dropping step so far
    current = types
    for step in flat:
        if isinstance(step, Filter):
            floor = last
            for pred in (c for p in step.predicates for c in conjuncts(p)):
                if pred == TRUE:
                    continue
                slot = max((made_by[c] for c in columns_used(pred)), default=0)
                place = (slot, 0) if slot > floor[0] or not may_fail(pred) else (
                    floor[0], floor[1] + 1)
                groups = slots[place[0]]
                while len(groups) <= place[1]:
                    groups.append([])
                groups[place[1]].append(pred)
                last = max(last, place)
            continue
        body.append(step)
        slots.append([])
        after = step_types(step, current)
        made_by.extend([len(body)] * (len(after) - len(current)))
        current = after
        if isinstance(step, (FlatMap, Repeat)):
            last = max(last, (len(body), -1))

    out: list[Step] = []
    for slot, groups in enumerate(slots):
        out.extend(Filter(tuple(group)) for group in groups if group)
        if slot < len(body):
            step = body[slot]
            if isinstance(step, Map) and out and isinstance(out[-1], Map):
                out[-1] = Map(out[-1].exprs + step.exprs)
            else:
                out.append(step)
    if cols != list(range(width)):
        out.append(Project(tuple(cols)))
    return tuple(out)


def _canonicalize(plan: Relation) -> Relation:
    if not isinstance(plan, Linear):
        return plan
    steps = canonical_steps(plan.input.types, plan.steps)
    return Linear(plan.input, steps) if steps else plan.input


def canonicalize_linear(plan: Relation) -> Relation:
    """Every Linear's steps in canonical form: filters first, one map, one final project."""
    return bottom_up(plan, _canonicalize)
