"""The relational IR: collections that change over time, and the operators between them.

Every node denotes a collection, a multiset of rows that changes over time, described by
updates ``(row, time, diff)``. Each node's docstring states its meaning on a static
collection, its delta rule (how an input update batch becomes an output update batch) and
the state it keeps at run time. Nodes are frozen dataclasses and compare by value.

The parts of nodes have modules of their own: a ``Linear``'s steps (``ir.steps``), a
``Join``'s plan and row layout (``ir.joins``), a ``Reduce``'s aggregate calls
(``ir.aggregate_call``), the sort keys of ``TopK`` and window calls (``ir.sort_keys``), a
``Window``'s calls and frames (``ir.window_call``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from matview.ir.aggregate_call import Aggregate
from matview.ir.computed_once import hashed_once, typed_once
from matview.ir.joins import JoinPlan, input_at, offsets_of
from matview.ir.recursion import DEFAULT_RECURSION_LIMIT
from matview.ir.scalar import Scalar, type_of
from matview.ir.sort_keys import SortKey
from matview.ir.steps import Step, step_types
from matview.ir.types import SqlType
from matview.ir.window_call import WindowCall


@dataclass(frozen=True)
class Field:
    """A named, typed column of a stored collection."""

    name: str
    type: SqlType


class Relation:
    """Base class of relational nodes. A subclass's ``types`` is computed once per node
    (``ir.computed_once``)."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("types")
        if isinstance(own, property) and own.fget is not None:
            cls.types = typed_once(own.fget)  # type: ignore[method-assign,assignment]

    @property
    def types(self) -> tuple[SqlType, ...]:
        """The column types of the collection this node denotes."""
        raise NotImplementedError

    @property
    def arity(self) -> int:
        return len(self.types)


@hashed_once
@dataclass(frozen=True)
class Get(Relation):
    """The collection stored under ``name`` (a table or a materialized view).

    Delta rule: the updates written to ``name``. State: none of its own; the collection's
    arrangement is shared by every dataflow that reads it. ``keys``: the table's unique keys
    whose columns are NOT NULL (its primary key; ``ir.keys``), enforced at every write, so
    true at every time (not part of the text form).
    """

    name: str
    fields: tuple[Field, ...]
    keys: tuple[tuple[int, ...], ...] = ()

    @property
    def types(self) -> tuple[SqlType, ...]:
        return tuple(f.type for f in self.fields)


@hashed_once
@dataclass(frozen=True)
class Constant(Relation):
    """A fixed multiset: each of ``rows`` is ``(values, multiplicity)``.

    Delta rule: all rows once, at the time the dataflow starts; nothing after. State: none.
    """

    rows: tuple[tuple[tuple[object, ...], int], ...]
    column_types: tuple[SqlType, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.column_types


@hashed_once
@dataclass(frozen=True)
class Linear(Relation):
    """The general linear operator (``join_function``, seed 000): ``steps`` applied in order.

    Meaning: each step is a logic ``row -> [(row', time', diff')]`` (``linear_logic``), the
    steps compose by ``followed_by``, and each input update ``(r, t, d)`` becomes the updates
    ``(r', t ⊔ t', d * d')``. Map, Filter, Project and FlatMap emit ``time' = ⊥``; Repeat
    scales ``diff'``; a Filter predicate over ``mz_now()`` (a temporal filter) emits ``(r,
    lower, +1)`` and ``(r, upper, -1)``, so a row is present exactly while the predicate holds.
    Linear: ``L(A + B) = L(A) + L(B)``, so the delta rule is the operator itself applied to the
    input batch. State: none, except that with a temporal filter the updates whose time lies
    beyond the frontier wait in the operator until the frontier passes them.
    Two stacked ``Linear`` nodes are one ``Linear`` with the steps concatenated.
    """

    input: Relation
    steps: tuple[Step, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        types = self.input.types
        for step in self.steps:
            types = step_types(step, types)
        return types


@hashed_once
@dataclass(frozen=True)
class Join(Relation):
    """The n-ary equi-join of ``inputs`` (their columns concatenated in order).

    Each tuple of ``equivalences`` lists expressions over the concatenated columns that must
    all be equal (SQL ``=``: NULL never matches). ``predicates`` (none of them temporal) must
    all be TRUE on a joined row; each is evaluated in every delta path as soon as the inputs
    it reads are bound. Delta rule (delta query, seeds 001/003): path
    i joins input i's changes at time ``t`` with every other input j, seeing j's updates with
    time ``<= t`` when ``j < i`` and ``< t`` when ``j > i`` (Alt/Neu order), so simultaneous
    changes count once; the output update has time ``t`` and the product of the diffs.
    State: every input arranged by the keys it is looked up with.
    """

    inputs: tuple[Relation, ...]
    equivalences: tuple[tuple[Scalar, ...], ...]
    plan: JoinPlan | None = None
    predicates: tuple[Scalar, ...] = ()

    @property
    def types(self) -> tuple[SqlType, ...]:
        return tuple(t for rel in self.inputs for t in rel.types)

    def offsets(self) -> list[int]:
        """The position of each input's first column in the concatenated row."""
        return offsets_of([rel.arity for rel in self.inputs])

    def input_of(self, column: int) -> int:
        """The input that column ``column`` of the concatenated row comes from."""
        return input_at(self.offsets(), column)


@hashed_once
@dataclass(frozen=True)
class AsOfJoin(Relation):
    """``left [LEFT] JOIN right FOR SYSTEM_TIME AS OF mz_now() ON ...`` (seed 001's as-of
    join on transaction time). Meaning at time t: each row x of left present at t, arrived
    at time a(x), joined with the rows y of right at a(x) where ``left_keys`` (over left)
    equal ``right_keys`` (over right) and ``predicates`` (over both) hold (``outer``: x and
    NULLs when none does); a static collection (all arrived at once) gives the (left) join.
    Delta rule (differentiate, half join, integrate): an insertion (x, t, +1) joins right's
    updates at times <= t; right's changes emit nothing; a retraction (x, t, -1) emits the
    negation, at t, of what x's insertion produced (its half join again when x arrived in
    the same step, else its output rows read back by ``unique``, a NOT NULL unique key of
    left). State: right arranged by ``right_keys``, its own output by ``unique``.
    """

    left: Relation
    right: Relation
    left_keys: tuple[Scalar, ...]
    right_keys: tuple[Scalar, ...]
    predicates: tuple[Scalar, ...]
    outer: bool
    unique: tuple[int, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.left.types + self.right.types


@hashed_once
@dataclass(frozen=True)
class Reduce(Relation):
    """GROUP BY ``group_key`` computing ``aggregates``; output is keys then aggregate values.

    Meaning: one row per group with at least one input row (one row always when
    ``group_key`` is empty, as SQL's global aggregate). Delta rule: only groups whose input
    changed are touched, at every time in the batch at which their input changed
    (interesting times, seed 002): the previous row is retracted and the new one inserted.
    State: its own output arranged by key (with hidden accumulators for count and sum), and
    for min/max its input arranged by key.
    """

    input: Relation
    group_key: tuple[Scalar, ...]
    aggregates: tuple[Aggregate, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        types = self.input.types
        return tuple(type_of(k, types) for k in self.group_key) + tuple(
            a.type(types) for a in self.aggregates
        )


@hashed_once
@dataclass(frozen=True)
class Union(Relation):
    """UNION ALL: the multiset sum of ``inputs``. Delta rule: the sum of the input deltas.
    State: none."""

    inputs: tuple[Relation, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.inputs[0].types


@hashed_once
@dataclass(frozen=True)
class TopK(Relation):
    """ORDER BY ``order_by`` LIMIT ``limit`` OFFSET ``offset`` (at the top of a view).

    Meaning: sort the input's rows (a row of multiplicity m takes m consecutive positions)
    by ``order_by`` (each key (column, descending, nulls first); NULLs compare as
    PostgreSQL's, a NaN above every other number), ties broken by every other column
    ascending with NULLs last (``total_order``), so that the result is deterministic; the
    output is the multiset of the rows at positions ``offset + 1 .. offset + limit`` (to the
    end when ``limit`` is None). Its rows are a sub-multiset of its input's.

    Delta rule: let W be the first distinct rows of the input, each with its full
    multiplicity, holding at least k = ``offset + limit`` (``offset`` when there is no
    limit) positions, unless W is the whole input. At each time of a batch in order, the
    changes to rows ranked at or before W's last row update W, and the others are dropped
    (they rank after position k); when deletions leave W incomplete with fewer than k
    positions, W is read again from the input's contents at that time. The output changes
    by the rows entering or leaving the positions of the output (with no limit: the input
    delta less the changes to the first ``offset`` positions).
    State: the input arranged (read only when deletions reach into the first k positions),
    and W (``prefix``), kept to about 2k positions.
    """

    input: Relation
    order_by: tuple[SortKey, ...]
    limit: int | None
    offset: int = 0

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.input.types

    @property
    def depth(self) -> int:
        """The positions the output reads: k = offset + limit (offset with no limit)."""
        return self.offset + (self.limit or 0)


@hashed_once
@dataclass(frozen=True)
class Window(Relation):
    """Window functions: each input row followed by the value of each of ``calls`` over its
    partition, the input rows with equal ``partition_by`` columns (NULLs equal).

    Meaning: a row of multiplicity m is m rows of its partition; each call sorts the
    partition by its ``order_by`` then by every other column (``total_order``) and takes its
    value at each row (``ir/windows.py``: PostgreSQL's meaning; ties, which PostgreSQL
    leaves in no order, follow the total order, so the result is deterministic). Equal
    output rows are one row with their multiplicities summed.
    Delta rule: a partition is touched at each time of the batch at which its rows change
    (its interesting times): its output over its contents at the previous such time (the
    stored contents before the batch at the first) is retracted and its output over the
    contents at that time inserted; untouched partitions change nothing.
    State: the input arranged, read by the partition keys of a step's changes.
    """

    input: Relation
    partition_by: tuple[int, ...]
    calls: tuple[WindowCall, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        types = self.input.types
        return types + tuple(c.type(types) for c in self.calls)


@hashed_once
@dataclass(frozen=True)
class Recur(Relation):
    """Binding ``index`` (named ``name``) of the innermost enclosing ``LetRec``, read by that
    loop's values: at iteration i + 1 it holds the binding's value at iteration i (nothing at
    iteration 0).

    Meaning only inside a ``LetRec``'s values. Delta rule: the binding's differences at
    times ``(t, i)`` arrive at ``(t, i + 1)`` (the loop's feedback edge). State: none of its
    own (the loop's arrangement of the binding)."""

    index: int
    name: str
    column_types: tuple[SqlType, ...]

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.column_types


@hashed_once
@dataclass(frozen=True)
class LetRec(Relation):
    """WITH MUTUALLY RECURSIVE: bindings ``names`` defined by ``values``, each of which may
    read every binding (``Recur``); the node denotes binding ``result``.

    Meaning: at iteration 0 every binding is empty; at iteration i + 1 binding j holds
    ``values[j]`` evaluated over the bindings at iteration i. The bindings' values are those
    of the first iteration i at which R(i + 1) = R(i), a fixed point. When none is reached
    within ``limit`` iterations the query fails (``at_limit`` "error") or its bindings are
    those at iteration ``limit`` ("return", Materialize's ``RETURN AT RECURSION LIMIT``).
    ``WITH RECURSIVE r AS (base UNION [ALL] step)`` is the binding r = base + step(r)
    (distinct for UNION): PostgreSQL's working-table evaluation reaches the same rows, as
    the recursive term is linear in r.

    Delta rule (differential dataflow's iteration, seed 002): every update inside the loop
    has a time (t, i), the transaction time and the iteration, in the product order; the
    loop's inputs change at (t, 0), ``Recur`` moves (t, i) to (t, i + 1), a join's output
    changes at the least upper bound of its inputs' times and a reduce's at the joins of
    its input's times (its interesting times). The binding's value at transaction time t is
    the sum of its differences at (t', i) for all t' <= t and every i, so the output at t
    is the sum over i of its differences at (t, i): a step carrying many transactions runs
    the iterations once for all of them.
    State: the differences, with their (t, i), of every collection the loop's joins and
    reduces read and of every binding."""

    names: tuple[str, ...]
    values: tuple[Relation, ...]
    result: int
    limit: int = DEFAULT_RECURSION_LIMIT
    at_limit: str = "error"

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.values[self.result].types


def loop_invariants(loop: LetRec) -> tuple[Relation, ...]:
    """The largest parts of ``loop``'s values that read no binding (no ``Recur``), each once,
    in order: the loop's inputs, computed outside it by ordinary operators."""
    found: dict[Relation, None] = {}

    def visit(rel: Relation) -> bool:
        """Whether ``rel`` reads a binding; records its largest parts that do not."""
        if isinstance(rel, Recur):
            return True
        children = inputs_of(rel)
        reads = [visit(child) for child in children]
        if any(reads):
            for child, read in zip(children, reads, strict=True):
                if not read and not isinstance(child, Recur):
                    found.setdefault(child)
            return True
        return False

    for value in loop.values:
        if not visit(value):
            found.setdefault(value)
    return tuple(found)


def inputs_of(rel: Relation) -> tuple[Relation, ...]:
    """The direct inputs of ``rel``."""
    if isinstance(rel, (Linear, Reduce, TopK, Window)):
        return (rel.input,)
    if isinstance(rel, (Join, Union)):
        return rel.inputs
    if isinstance(rel, AsOfJoin):
        return (rel.left, rel.right)
    if isinstance(rel, LetRec):
        return rel.values
    return ()


def with_inputs(rel: Relation, new_inputs: Sequence[Relation]) -> Relation:
    """``rel`` with its direct inputs replaced by ``new_inputs``."""
    if isinstance(rel, (Linear, Reduce, TopK, Window)):
        return replace(rel, input=new_inputs[0])
    if isinstance(rel, (Join, Union)):
        return replace(rel, inputs=tuple(new_inputs))
    if isinstance(rel, AsOfJoin):
        return replace(rel, left=new_inputs[0], right=new_inputs[1])
    if isinstance(rel, LetRec):
        return replace(rel, values=tuple(new_inputs))
    return rel


def gets(rel: Relation) -> list[Get]:
    """Every ``Get`` under ``rel``, in depth-first order."""
    if isinstance(rel, Get):
        return [rel]
    return [g for child in inputs_of(rel) for g in gets(child)]
