"""The physical IR: the operators a running dataflow has, the state each one owns and the
arrangements each one reads, decided once (by ``planner.lower``) and then executed by the
runtime (``runtime.dataflow``) and printed by EXPLAIN PHYSICAL (``planner.dataflow_graph``).

A physical plan is a tree of ``Operator`` nodes numbered ``0..n-1`` in post-order (inputs
before their consumer, inputs in order); EXPLAIN prints operator ``k`` as ``%k``. Each node
keeps the logical node it runs (``relation``: its meaning, its types, how it prints) and adds
what the logical plan leaves open:

- ``state()``: the arrangements it owns (``Arrangement``), which live as long as its
  dataflow: a Reduce's output (and its min/max input values), a temporal Linear's pending
  updates, a TopK's input values and prefix, a Window's input rows (each, and a Join, with
  its output when a consumer looks it up). This is the seam for persistence: the whole
  state of a dataflow is the state its operators declare.
- ``reads()``: the shared arrangements it reads (a Get's stored collection); ``history()``:
  the arrangements a lookup of its output reads.
- a Join's implementation (``DeltaJoin``), with its delta paths spelled out: per input,
  the filters on its changes, then the lookups in order, each with its stream and lookup
  keys, its Alt/Neu time comparison, the other equalities it checks and the predicates
  applied after it; groups of lookups that extend the path by one attribute run worst-case
  optimally (``Extension``: count, propose, validate). The runtime runs exactly these.
- an AsOfJoin's matches (what each left key got), always owned: its retractions read them.
- a Reduce's layout (``ReduceLayout``): which aggregates it accumulates, the hidden
  accumulator columns of its output arrangement, which it recomputes from its ``values``,
  and whether its output is deferred to its reader's job; a Linear's ``copies`` (the input
  column each output column copies, when its steps only rearrange columns).

Nodes are frozen dataclasses and compare by value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from matview.ir import relation as logical
from matview.ir.scalar import Col, Scalar
from matview.ir.types import SqlType
from matview.ir.walk import post_order


@dataclass(frozen=True)
class Arrangement:
    """State an operator owns: the updates of ``what`` it holds (``output``, ``values``,
    ``pending`` or ``prefix``), named ``%<owner>.<what>``. ``reused``: it exists anyway (a
    Reduce's output, which it needs) rather than only for a consumer's lookups (a Join's)."""

    owner: int
    what: str
    purpose: str
    reused: bool = True

    @property
    def name(self) -> str:
        return f"%{self.owner}.{self.what}"


Equality = tuple[Scalar, Scalar]
"""Two expressions over the join's columns that an equivalence class says are equal."""


@dataclass(frozen=True)
class Lookup:
    """One stage of a delta path: input ``input`` (operator ``operator``) looked up where its
    ``key`` (expressions over that input's own columns) equals the path row's
    ``stream_key`` (expressions over the join's columns of the inputs bound before this
    stage), pairwise (both empty: a cross product), together with ``equalities`` (the other
    equalities this stage makes checkable: with an expression reading more than the
    looked-up input, or between two of the looked-up input's), seeing its updates at times
    ``time`` (``<=`` or ``<``) the change's time; then ``closure``, the join predicates
    that read the looked-up input and, besides it, only inputs bound before, filters the
    joined rows."""

    input: int
    operator: int
    stream_key: tuple[Scalar, ...]
    key: tuple[Scalar, ...]
    time: str
    equalities: tuple[Equality, ...]
    closure: tuple[Scalar, ...]

    @property
    def counted_by(self) -> int | None:
        """The column of its input a count index counts it by when it proposes (its key is
        one plain column); None: counted from the rows read (``Extension``)."""
        key = self.key[0] if len(self.key) == 1 else None
        return key.index if isinstance(key, Col) else None


@dataclass(frozen=True)
class Extension:
    """Stages ``first`` to ``first + len(orders) - 1`` of a delta path, which look up a group
    of inputs that each can bind the same next attribute, run worst-case optimally (seed
    003) per path row: *count*, each input's updates matching the row by the key it would be
    looked up by first (the first stage of its order); *propose*, the input with the fewest
    (ties: the earliest) is looked up by that key; *validate*, the others are looked up
    after it, by keys that now include the proposed attribute. ``orders[m]`` are the stages
    when the group's input ``m`` proposes (its own first); ``orders[0]`` are the path's
    ``lookups`` there. Any order gives the same rows (the Alt/Neu times are the inputs',
    not the order's): the counts only bound the rows proposed, by the fewest any input of
    the group offers instead of the first's."""

    first: int
    orders: tuple[tuple[Lookup, ...], ...]

    @property
    def inputs(self) -> tuple[int, ...]:
        """The inputs of the group, in the plan's order."""
        return tuple(order[0].input for order in self.orders)


@dataclass(frozen=True)
class DeltaPath:
    """Path ``input``: the changes of input ``input`` (operator ``operator``), filtered by
    ``equalities`` and ``closure`` (the equalities and predicates reading that input alone,
    or no input), then looking the other inputs up as ``lookups`` say, in order, save the
    groups of stages ``extensions`` run by counts. Expressions are over the join's columns."""

    input: int
    operator: int
    equalities: tuple[Equality, ...]
    closure: tuple[Scalar, ...]
    lookups: tuple[Lookup, ...]
    extensions: tuple[Extension, ...] = ()

    @property
    def order(self) -> tuple[int, ...]:
        """The inputs looked up, in order."""
        return tuple(lookup.input for lookup in self.lookups)

    @property
    def every_lookup(self) -> tuple[Lookup, ...]:
        """Its stages in every order it may run (``lookups``, then its extensions' others)."""
        return self.lookups + tuple(lk for e in self.extensions for order in e.orders[1:]
                                    for lk in order)


@dataclass(frozen=True)
class DeltaJoin:
    """A join run as a delta query (seeds 001, 003): one path per input, no state of its own
    beyond its inputs' arrangements. Path ``i`` looks input ``j`` up at times ``<= t`` when
    ``j < i`` and ``< t`` when ``j > i`` (Alt/Neu order), so simultaneous changes count once."""

    kind: ClassVar[str] = "delta"

    paths: tuple[DeltaPath, ...]


JoinImplementation = DeltaJoin
"""How a join runs (a union of the variants once there are several)."""


@dataclass(frozen=True)
class Operator:
    """A node of a physical plan: operator ``id`` running logical node ``relation`` over
    ``inputs`` (the physical plans of the logical node's inputs, in order)."""

    id: int
    relation: logical.Relation
    inputs: tuple[Operator, ...]

    @property
    def kind(self) -> str:
        """The logical node it runs (``Join``, ``Reduce``, ...)."""
        return type(self.relation).__name__

    @property
    def types(self) -> tuple[SqlType, ...]:
        return self.relation.types

    def state(self) -> tuple[Arrangement, ...]:
        """The arrangements this operator owns."""
        return ()

    def reads(self) -> tuple[str, ...]:
        """The shared arrangements (stored collections) this operator reads."""
        return ()

    def history(self) -> tuple[str, ...]:
        """The arrangements a lookup of this operator's output reads."""
        return tuple(name for child in self.inputs for name in child.history())


@dataclass(frozen=True)
class Get(Operator):
    """Reads the shared arrangement of stored collection ``relation.name``: its changes in
    each step, its history when looked up. Owns nothing."""

    relation: logical.Get

    def reads(self) -> tuple[str, ...]:
        return (self.relation.name,)

    def history(self) -> tuple[str, ...]:
        return (self.relation.name,)


@dataclass(frozen=True)
class Constant(Operator):
    """Emits its rows once, in the first step. Owns nothing; a lookup of it reads nothing."""

    relation: logical.Constant


@dataclass(frozen=True)
class Linear(Operator):
    """Applies the linear steps to its input's changes; looked up, it applies them to its
    input's history on the fly. With a temporal filter it owns ``pending``: the updates dated
    after the frontier, until they are due."""

    relation: logical.Linear
    pending: Arrangement | None = None
    copies: tuple[int, ...] | None = None
    """The input column each output column copies when its steps only rearrange columns
    (the runtime then picks them in Arrow from a batch the driver holds); else None."""

    def state(self) -> tuple[Arrangement, ...]:
        return () if self.pending is None else (self.pending,)


@dataclass(frozen=True)
class Union(Operator):
    """Sums its inputs' changes; looked up, it reads its inputs' histories. Owns nothing."""

    relation: logical.Union


@dataclass(frozen=True)
class Join(Operator):
    """Joins its inputs as ``implementation`` says. Owns ``output`` (the joined rows that
    passed the predicates) only when a consumer looks its output up."""

    relation: logical.Join
    implementation: JoinImplementation
    output: Arrangement | None = None

    def state(self) -> tuple[Arrangement, ...]:
        return () if self.output is None else (self.output,)

    def history(self) -> tuple[str, ...]:
        assert self.output is not None, "a join's history is read only when it arranges it"
        return (self.output.name,)


@dataclass(frozen=True)
class AsOfJoin(Operator):
    """Joins each change of its left input with its right input's updates up to the
    change's time (its right input is looked up, so arranged); owns ``matches`` (each
    output row's left key and right columns, by that key), which a left retraction reads,
    and, only when a consumer looks its output up, ``output``."""

    relation: logical.AsOfJoin
    matches: Arrangement
    output: Arrangement | None = None

    def state(self) -> tuple[Arrangement, ...]:
        return (self.matches,) + (() if self.output is None else (self.output,))

    def history(self) -> tuple[str, ...]:
        assert self.output is not None, "an as-of join's history is read only when arranged"
        return (self.output.name,)


@dataclass(frozen=True)
class ReduceLayout:
    """How a Reduce computes its aggregates (Materialize's ``ReducePlan``): ``accumulable``
    (the SUMMED aggregates with an argument, by index) are running accumulators in the
    ``hidden`` columns its output arrangement adds after the visible ones (``cnt``, the row
    count; ``n{j}``, aggregate j's count of non-NULL values; ``s{j}``, its sum, or of BIGINTs
    ``l{j}_0..2``, the sums of the values' 21-bit limbs); ``extremes`` (the EXTREME ones) are
    recomputed at each interesting time from its ``values`` arrangement of (key, argument,
    ORDER BY keys); ``deferred``: its changes are computed by the job of the refresh reading
    them (only Linears that rearrange columns lie on its way out), not by one of its own."""

    accumulable: tuple[int, ...]
    extremes: tuple[int, ...]
    hidden: tuple[str, ...]
    deferred: bool = False


@dataclass(frozen=True)
class Reduce(Operator):
    """Groups its input's changes by key, touching only the changed groups. Owns ``output``
    (its rows by group key, with their accumulators) and, for min/max, ``values`` (the
    input's values by group key); a lookup of it reads ``output``. ``layout`` says how."""

    relation: logical.Reduce
    output: Arrangement
    values: Arrangement | None
    layout: ReduceLayout

    def state(self) -> tuple[Arrangement, ...]:
        return (self.output,) if self.values is None else (self.output, self.values)

    def history(self) -> tuple[str, ...]:
        return (self.output.name,)


@dataclass(frozen=True)
class TopK(Operator):
    """Keeps the first rows of its input in the order of its keys (``relation``'s delta
    rule). Owns ``values`` (its input's updates, read only when deletions reach into the
    first offset+limit positions), ``prefix`` (the first rows, at least offset+limit
    positions of them) and, only when a consumer looks its output up, ``output``."""

    relation: logical.TopK
    values: Arrangement
    prefix: Arrangement
    output: Arrangement | None = None

    def state(self) -> tuple[Arrangement, ...]:
        return (self.values, self.prefix) + (() if self.output is None else (self.output,))

    def history(self) -> tuple[str, ...]:
        assert self.output is not None, "a TopK's history is read only when it arranges it"
        return (self.output.name,)


@dataclass(frozen=True)
class Window(Operator):
    """Computes window functions again over the partitions its input's changes touch.
    Owns ``values`` (its input's rows, read by partition key) and, only when a consumer
    looks its output up, ``output``."""

    relation: logical.Window
    values: Arrangement
    output: Arrangement | None = None

    def state(self) -> tuple[Arrangement, ...]:
        return (self.values,) + (() if self.output is None else (self.output,))

    def history(self) -> tuple[str, ...]:
        assert self.output is not None, "a window's history is read only when it arranges it"
        return (self.output.name,)


@dataclass(frozen=True)
class LoopJoin:
    """A join of a LetRec's body, run by the ordinary join operator over times (transaction,
    round): ``implementation``'s paths as outside a loop, except that a path sees its
    looked-up inputs' differences of every earlier round and of earlier steps at every
    round (their output time the least upper bound of the pair's), and of the round being
    computed only for the inputs before its own (Alt/Neu by input order, the ``<=``/``<``
    of its lookups). An input computed outside the loop is named by its operator; one of
    the body's by ``operator`` -1."""

    relation: logical.Join
    implementation: DeltaJoin


@dataclass(frozen=True)
class LoopReduce:
    """A reduce of a LetRec's body, run by the ordinary reduce operator without
    arrangements: in round r, over the contents of its input at rounds <= r of the groups
    changing at round r, less its output of the rounds before (``runtime.recursion``);
    ``layout`` as outside a loop (never deferred)."""

    relation: logical.Reduce
    layout: ReduceLayout


@dataclass(frozen=True)
class LetRec(Operator):
    """Iterates its bindings to a fixed point over (transaction, round) times
    (``runtime.recursion``). Its inputs compute the parts of the bindings that read no
    binding (``relation.loop_invariants``); ``joins`` and ``reduces`` say how its body's joins
    and reduces run; it owns
    the differences, with their rounds, of every binding, join input and reduce input of its
    body (kept by the loop itself)."""

    relation: logical.LetRec
    joins: tuple[LoopJoin, ...] = ()
    reduces: tuple[LoopReduce, ...] = ()

    def loop_join(self, join: logical.Join) -> LoopJoin:
        """How the body's join ``join`` runs."""
        return next(each for each in self.joins if each.relation == join)

    def loop_reduce(self, reduce: logical.Reduce) -> LoopReduce:
        """How the body's reduce ``reduce`` runs."""
        return next(each for each in self.reduces if each.relation == reduce)


def operators(root: Operator) -> Iterator[Operator]:
    """Every operator under ``root`` once, in id order (inputs before consumers; an
    operator of several consumers is one node of the plan, ``planner.lower``)."""
    return iter(post_order(root, lambda op: op.inputs, key=lambda op: op.id))


def reads_arrival_times(root: Operator) -> bool:
    """Whether an operator under ``root`` reads when its input's rows arrived (an
    ``AsOfJoin``): its steps keep their updates' times apart, and it is never recomputed
    from its inputs' snapshots, which do not know them."""
    return any(isinstance(op, AsOfJoin) for op in operators(root))


def reads(root: Operator) -> set[str]:
    """The stored collections the plan under ``root`` reads."""
    return {name for op in operators(root) for name in op.reads()}
