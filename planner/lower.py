"""Lowering: a planned logical plan (``pipeline.physical``) becomes the physical plan the
runtime executes and EXPLAIN PHYSICAL prints (``ir.physical``).

    lower(R) = the distinct subplans of R in post-order, numbered 0..n-1: equal subtrees
      (a decorrelated subquery's copies of its outer query, TPC-H Q20's eight of
      partsupp ⋈ part) are one operator with several consumers, computed once per step,
      its arrangements shared by their lookups; it is looked up when any consumer looks it
      up and reaches the output only when every consumer passes it there. Each has
      - its state: Reduce -> output (+ values for min/max); a temporal Linear -> pending;
      - a Reduce's layout: SUMMED aggregates with an argument accumulated in hidden columns
        (cnt, then n_j and, for a sum, s_j or, of BIGINTs, its limbs l_j_0..2), EXTREME
        ones recomputed from values; deferred iff only Linears that rearrange columns lie
        between it and the root;
      - a Linear's copies: the input column each output column copies, when its steps only
        rearrange columns (``steps.copied_columns``);
        Join -> output iff a consumer looks its output up (through Linear and Union);
        AsOfJoin -> matches, and output iff a consumer looks it up (its right input is
        looked up, its left not);
        TopK -> values (its input), prefix, and output iff a consumer looks its output up;
        Window -> values (its input) and output iff a consumer looks its output up;
        LetRec -> its inputs are the parts of its bindings that read no binding
        (``loop_invariants``), its body runs inside it (``runtime.recursion``), each join
        of the body with the delta paths below (its inputs computed by the loop: -1);
      - for a Join, its implementation: the delta paths of its JoinPlan. A path first filters
        its input's changes by the equalities and predicates reading that input alone; each
        lookup then checks the equalities it makes checkable (per equivalence class, each
        new member equals the class's first member over the inputs bound before), those
        between a bound expression and one over the looked-up input alone as its stream and
        lookup keys, at time <= t for an input before the path's own and < t for one after
        it (Alt/Neu), and applies the predicates it makes checkable (its closure). A group of
        the plan's order becomes an ``Extension``: the group's stages in each of its orders
        with one of its inputs first (the plan's own first).

Every decision about state and join paths is made here, once; the runtime and EXPLAIN read it.
"""

from __future__ import annotations

from matview.ir import physical
from matview.ir.aggregates import Maintenance, maintained
from matview.ir.joins import JoinPlan, offsets_of
from matview.ir.linear_logic import is_temporal_steps
from matview.ir.relation import (
    AsOfJoin,
    Constant,
    Get,
    Join,
    LetRec,
    Linear,
    Reduce,
    Relation,
    TopK,
    Union,
    Window,
    inputs_of,
    loop_invariants,
)
from matview.ir.scalar import Scalar, columns_used, remap, type_of
from matview.ir.steps import copied_columns
from matview.ir.types import Kind
from matview.ir.walk import post_order


def lower(plan: Relation) -> physical.Operator:
    """The physical plan of ``plan`` (see the module docstring)."""
    return _Lowering(_uses(plan)).lower(plan)


def _children(rel: Relation) -> tuple[Relation, ...]:
    """The inputs of ``rel``'s operator: a LetRec's are its loop invariants."""
    return loop_invariants(rel) if isinstance(rel, LetRec) else inputs_of(rel)


def _copies(rel: Relation) -> tuple[int, ...] | None:
    return copied_columns(rel.steps, rel.input.types) if isinstance(rel, Linear) else None


def _uses(plan: Relation) -> dict[Relation, tuple[bool, bool]]:
    """Per distinct subplan of ``plan``, whether a consumer looks its output up (reads its
    history) and whether its output is the plan's but for Linears that only rearrange
    columns, over all its consumers (each consumer's flags are final before its inputs'
    are computed: consumers first, in reverse post-order)."""
    uses = {plan: (False, True)}
    for rel in reversed(post_order(plan, _children, key=lambda rel: rel)):
        looked_up, reaches_output = uses[rel]
        below = looked_up and isinstance(rel, (Linear, Union)) or isinstance(rel, Join)
        passes = reaches_output and _copies(rel) is not None
        for position, child in enumerate(_children(rel)):
            before = uses.get(child, (False, True))
            looked = below or isinstance(rel, AsOfJoin) and position == 1
            uses[child] = (before[0] or looked, before[1] and passes)
    return uses


class _Lowering:
    def __init__(self, uses: dict[Relation, tuple[bool, bool]]) -> None:
        self.uses = uses
        self.next_id = 0
        self.lowered: dict[Relation, physical.Operator] = {}

    def lower(self, rel: Relation) -> physical.Operator:
        """``rel`` lowered, once per distinct subplan."""
        if rel not in self.lowered:
            self.lowered[rel] = self._lower(rel, *self.uses[rel])
        return self.lowered[rel]

    def _lower(self, rel: Relation, looked_up: bool,
               reaches_output: bool) -> physical.Operator:
        """``rel`` lowered; ``looked_up``: a consumer looks its output up (reads its
        history); ``reaches_output``: its output is the plan's, but for Linears that only
        rearrange columns."""
        inputs = tuple(self.lower(child) for child in _children(rel))
        op, self.next_id = self.next_id, self.next_id + 1
        if isinstance(rel, LetRec):
            ids = {child.relation: child.id for child in inputs}
            body = _body(rel)
            return physical.LetRec(op, rel, inputs, tuple(
                physical.LoopJoin(join, _delta_join(join, [
                    ids.get(child, -1) for child in join.inputs]))
                for join in body if isinstance(join, Join)), tuple(
                physical.LoopReduce(reduce, _layout(reduce, False))
                for reduce in body if isinstance(reduce, Reduce)))
        copies = _copies(rel)
        if isinstance(rel, Get):
            return physical.Get(op, rel, inputs)
        if isinstance(rel, Constant):
            return physical.Constant(op, rel, inputs)
        if isinstance(rel, Linear):
            pending = physical.Arrangement(
                op, "pending", "updates dated after the frontier, until they are due"
            ) if is_temporal_steps(rel.steps) else None
            return physical.Linear(op, rel, inputs, pending, copies)
        if isinstance(rel, Union):
            return physical.Union(op, rel, inputs)
        if isinstance(rel, Join):
            output = physical.Arrangement(
                op, "output", "the joined rows, for the lookups of a consumer", reused=False
            ) if looked_up else None
            return physical.Join(op, rel, inputs, _delta_join(rel, [i.id for i in inputs]),
                                  output)
        if isinstance(rel, AsOfJoin):
            return physical.AsOfJoin(op, rel, inputs, physical.Arrangement(
                op, "matches", "the right rows each left key got, read by its retractions"),
                physical.Arrangement(op, "output", "the joined rows, for the lookups of a "
                                     "consumer", reused=False) if looked_up else None)
        if isinstance(rel, Reduce):
            values = physical.Arrangement(
                op, "values", "the input values of min/max by group key"
            ) if any(maintained(a.func).maintenance is Maintenance.EXTREME
                     for a in rel.aggregates) else None
            output = physical.Arrangement(
                op, "output", "the output rows by group key, with their accumulators")
            return physical.Reduce(op, rel, inputs, output, values,
                                   _layout(rel, reaches_output))
        if isinstance(rel, TopK):
            output = physical.Arrangement(
                op, "output", "the output rows, for the lookups of a consumer", reused=False
            ) if looked_up else None
            values = physical.Arrangement(
                op, "values", "the input's rows, read when deletions reach into the first "
                "offset+limit rows")
            prefix = physical.Arrangement(
                op, "prefix", "the input's first rows in order, at least offset+limit of them")
            return physical.TopK(op, rel, inputs, values, prefix, output)
        if isinstance(rel, Window):
            values = physical.Arrangement(
                op, "values", "the input's rows, read by the partition keys of the changes")
            output = physical.Arrangement(
                op, "output", "the output rows, for the lookups of a consumer", reused=False
            ) if looked_up else None
            return physical.Window(op, rel, inputs, values, output)
        raise TypeError(f"cannot lower {type(rel).__name__}")


def _layout(reduce: Reduce, deferred: bool) -> physical.ReduceLayout:
    """How ``reduce`` computes its aggregates (``physical.ReduceLayout``). A sum of BIGINTs
    (a NUMERIC, as in PostgreSQL) is accumulated exactly in three BIGINT limbs of 21 bits
    each, x = l2 * 2^42 + l1 * 2^21 + l0 (``l{j}_0..2``), not in a NUMERIC(38): Spark sums
    the limbs about twice as fast as 38-digit decimals, which it holds as Java BigDecimals."""
    accumulable, extremes, hidden = [], [], ["cnt"]
    for j, aggregate in enumerate(reduce.aggregates):
        fn = maintained(aggregate.func)
        if fn.maintenance is Maintenance.EXTREME:
            extremes.append(j)
        elif aggregate.expr is not None:
            accumulable.append(j)
            hidden.append(f"n{j}")
            if fn.sums_values and type_of(aggregate.expr, reduce.input.types).kind is Kind.BIGINT:
                hidden += [f"l{j}_{i}" for i in range(3)]
            elif fn.sums_values:
                hidden.append(f"s{j}")
    return physical.ReduceLayout(tuple(accumulable), tuple(extremes), tuple(hidden), deferred)


def _body(loop: LetRec) -> list[Relation]:
    """The nodes of ``loop``'s body (outside its loop invariants), each once."""
    invariants = set(loop_invariants(loop))
    found: dict[Relation, None] = {}
    for value in loop.values:
        for rel in post_order(value, lambda rel: () if rel in invariants else inputs_of(rel),
                              key=lambda rel: rel):
            if rel not in invariants:
                found.setdefault(rel)
    return list(found)


def _delta_join(join: Join, ids: list[int]) -> physical.DeltaJoin:
    """The delta paths of ``join``'s plan (every other input in input order when it has
    none); ``ids`` are its inputs' operators."""
    plan = join.plan or JoinPlan("delta", tuple(
        tuple(j for j in range(len(ids)) if j != i) for i in range(len(ids))))
    paths = []
    for i, order in enumerate(plan.orders):
        bound, lookups, extensions = frozenset({i}), [], []
        for step in order:
            group = step if isinstance(step, tuple) else (step,)
            orders = tuple(_lookups(join, ids, i, bound, (m, *(j for j in group if j != m)))
                           for m in group)
            if len(group) > 1:
                extensions.append(physical.Extension(len(lookups), orders))
            lookups += orders[0]
            bound |= set(group)
        paths.append(physical.DeltaPath(
            i, ids[i], tuple(_checkable(join, frozenset(), i)), _closure(join, frozenset(), i),
            tuple(lookups), tuple(extensions)))
    return physical.DeltaJoin(tuple(paths))


def _lookups(join: Join, ids: list[int], i: int, bound: frozenset[int],
             order: tuple[int, ...]) -> tuple[physical.Lookup, ...]:
    """The stages of path ``i`` looking up ``order`` in turn after the inputs ``bound``."""
    offsets = offsets_of([rel.arity for rel in join.inputs])
    out = []
    for j in order:
        stream_key, key, equalities = [], [], []
        for anchor, member in _checkable(join, bound, j):
            if _reads(join, anchor) and _reads(join, anchor) <= bound \
                    and _reads(join, member) == {j}:
                stream_key.append(anchor)
                key.append(remap(member, lambda c, j=j: c - offsets[j]))
            else:
                equalities.append((anchor, member))
        out.append(physical.Lookup(
            j, ids[j], tuple(stream_key), tuple(key), "<=" if j < i else "<",
            tuple(equalities), _closure(join, bound, j)))
        bound |= {j}
    return tuple(out)


def _reads(join: Join, expr: Scalar) -> frozenset[int]:
    """The inputs whose columns ``expr`` reads."""
    return frozenset(join.input_of(c) for c in columns_used(expr))


def _checkable(join: Join, bound: frozenset[int], new: int) -> list[physical.Equality]:
    """The equalities that become checkable when input ``new`` joins the inputs ``bound``:
    per equivalence class, each member reading ``new`` (and otherwise only inputs
    ``bound``) equals the class's first member reading only inputs ``bound`` (when none
    does, its first member reading ``new``)."""
    pairs = []
    now = bound | {new}
    for cls in join.equivalences:
        before = [m for m in cls if _reads(join, m) <= bound]
        added = [m for m in cls if _reads(join, m) <= now and not _reads(join, m) <= bound]
        if added:
            anchor = before[0] if before else added[0]
            pairs += [(anchor, m) for m in added if m is not anchor]
    return pairs


def _closure(join: Join, bound: frozenset[int], new: int) -> tuple[Scalar, ...]:
    """The predicates that become checkable when input ``new`` joins the inputs ``bound``
    (``bound`` empty: those reading input ``new`` alone, or no input)."""
    now = bound | {new}
    return tuple(p for p in join.predicates
                 if _reads(join, p) <= now and (not bound or not _reads(join, p) <= bound))
