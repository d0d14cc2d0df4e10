"""The operator lines of the IR's text form as its parser (``matview.ir.parse``) builds them
from parse trees: ``PlanBuilder``, the lark transformer of the grammar, which adds to
``parse_scalars.ScalarBuilder`` the rules of the operators (Get, Constant, Linear and its
steps, Join, Reduce and its aggregates, Union, TopK, Window and its frames, LetRec, Recur) and
of a ``subquery @N`` line. A line builds a ``Header``: the plan is built once its inputs, the
lines below it, are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lark import Token, v_args
from matview.ir.aggregate_call import OrderedScalar
from matview.ir.joins import PathStep
from matview.ir.parse_scalars import Invalid, ScalarBuilder, Slot, read_value, unquote
from matview.ir.relation import (
    Aggregate,
    AsOfJoin,
    Constant,
    Field,
    Get,
    Join,
    JoinPlan,
    LetRec,
    Linear,
    Recur,
    Reduce,
    Relation,
    SortKey,
    Step,
    TopK,
    Union,
    Window,
    WindowCall,
)
from matview.ir.scalar import Call, Scalar
from matview.ir.steps import Filter, FlatMap, Map, Project, Repeat
from matview.ir.types import SqlType
from matview.ir.window_call import WHOLE_PARTITION, Frame


@dataclass(frozen=True)
class _Where:
    """A join's ``where=(...)`` predicates."""

    predicates: tuple[Scalar, ...]


@dataclass(frozen=True)
class Header:
    """A parsed operator line: it takes ``inputs`` inputs (any number when None)."""

    operator: str
    inputs: int | None
    build: Callable[[tuple[Relation, ...]], Relation]


@v_args(inline=True)
class PlanBuilder(ScalarBuilder):
    """Builds operator lines from parse trees; each method is named after its grammar
    rule."""

    def header(self, header: Header) -> Header:
        return header

    def get(self, name: Token, *fields: Field) -> Header:
        get = Get(str(name), fields)
        return Header("Get", 0, lambda _: get)

    def field(self, name: Token, t: SqlType) -> Field:
        return Field(str(name), t)

    def constant(
        self, types: tuple[SqlType, ...], rows: tuple[tuple[tuple[Token, ...], Token], ...]
    ) -> Header:
        values = []
        for tokens, multiplicity in rows:
            if len(tokens) != len(types):
                message = f"a row needs {len(types)} values, found {len(tokens)}"
                raise Invalid(message, multiplicity)
            row = tuple(read_value(token, t) for token, t in zip(tokens, types, strict=True))
            values.append((row, int(multiplicity[1:])))
        constant = Constant(tuple(values), types)
        return Header("Constant", 0, lambda _: constant)

    def types(self, *types: SqlType) -> tuple[SqlType, ...]:
        return types

    def rows(
        self, *rows: tuple[tuple[Token, ...], Token]
    ) -> tuple[tuple[tuple[Token, ...], Token], ...]:
        return rows

    def row(self, *tokens: Token) -> tuple[tuple[Token, ...], Token]:
        return tokens[:-1], tokens[-1]

    def linear(self, *steps: Step) -> Header:
        return Header("Linear", 1, lambda inputs: Linear(inputs[0], steps))

    def filter(self, predicates: tuple[Scalar, ...]) -> Filter:
        return Filter(predicates)

    def map(self, exprs: tuple[Scalar, ...]) -> Map:
        return Map(exprs)

    def project(self, *columns: int) -> Project:
        return Project(columns)

    def flat_map(self, calls: tuple[Scalar, ...], ordinality: Token | None) -> FlatMap:
        if not calls or not all(isinstance(c, Call) for c in calls):
            raise Invalid("flat_map takes table function calls", ordinality or Token("", ""))
        return FlatMap(tuple(c for c in calls if isinstance(c, Call)), ordinality is not None)

    def repeat(self, count: Scalar) -> Repeat:
        return Repeat(count)

    def join(self, *children: tuple[Scalar, ...] | JoinPlan | _Where | None) -> Header:
        *classes, where, plan = children
        equivalences = tuple(c for c in classes if isinstance(c, tuple))
        assert plan is None or isinstance(plan, JoinPlan)
        predicates = () if where is None else where.predicates
        assert isinstance(predicates, tuple)
        return Header("Join", None,
                       lambda inputs: Join(inputs, equivalences, plan, predicates))

    def asof_join(self, outer: Token | None, left_keys: tuple[Scalar, ...],
                  right_keys: tuple[Scalar, ...], where: _Where | None, *unique: int) -> Header:
        predicates = () if where is None else where.predicates
        return Header("AsOfJoin", 2, lambda inputs: AsOfJoin(
            inputs[0], inputs[1], left_keys, right_keys, predicates, outer is not None, unique))

    def join_where(self, predicates: tuple[Scalar, ...]) -> _Where:
        return _Where(predicates)

    def equivalence(self, *exprs: Scalar) -> tuple[Scalar, ...]:
        return exprs

    def join_plan(self, kind: Token, *orders: tuple[int, ...]) -> JoinPlan:
        return JoinPlan(str(kind), orders)

    def order(self, *steps: PathStep) -> tuple[PathStep, ...]:
        return steps

    def path_step(self, *indexes: Token) -> PathStep:
        return int(indexes[0]) if len(indexes) == 1 else tuple(int(i) for i in indexes)

    def reduce(
        self, group_key: tuple[Scalar, ...], aggregates: tuple[Aggregate, ...]
    ) -> Header:
        return Header("Reduce", 1, lambda inputs: Reduce(inputs[0], group_key, aggregates))

    def aggregates(self, *aggregates: Aggregate) -> tuple[Aggregate, ...]:
        return aggregates

    def count_star(self, func: Token) -> Aggregate:
        return Aggregate(str(func), None)

    def aggregate(self, func: Token, expr: Scalar, separator: str | None,
                  order: tuple[OrderedScalar, ...] | None) -> Aggregate:
        return Aggregate(str(func), expr, order or (), separator)

    def agg_separator(self, token: Token) -> str:
        return unquote(token)

    def agg_order(self, *keys: OrderedScalar) -> tuple[OrderedScalar, ...]:
        return keys

    def ordered_scalar(self, expr: Scalar, desc: Token | None, nulls: Token | None
                       ) -> OrderedScalar:
        descending = desc is not None
        return (expr, descending, descending if nulls is None else nulls.endswith("first"))

    def union(self) -> Header:
        return Header("Union", None, Union)

    def topk(self, *children: SortKey | int | None) -> Header:
        *keys, limit, offset = children
        order_by = tuple(k for k in keys if isinstance(k, tuple))
        assert not isinstance(limit, tuple) and not isinstance(offset, tuple)
        return Header("TopK", 1,
                       lambda inputs: TopK(inputs[0], order_by, limit, offset or 0))

    def sort_key(self, column: int, desc: Token | None, nulls: Token | None) -> SortKey:
        descending = desc is not None
        return (column, descending, descending if nulls is None else nulls.endswith("first"))

    def topk_limit(self, count: Token) -> int:
        return int(count)

    def topk_offset(self, count: Token) -> int:
        return int(count)

    def window(self, *children: int | WindowCall) -> Header:
        partition_by = tuple(c for c in children if isinstance(c, int))
        calls = tuple(c for c in children if isinstance(c, WindowCall))
        return Header("Window", 1, lambda inputs: Window(inputs[0], partition_by, calls))

    def letrec(self, *children: Token) -> Header:
        *names, result, limit, at_limit = children
        if int(result) >= len(names):
            raise Invalid(f"result={result} names no binding of {len(names)}", result)

        def build(values: tuple[Relation, ...]) -> Relation:
            return LetRec(tuple(str(n) for n in names), values, int(result), int(limit),
                          str(at_limit))

        return Header("LetRec", len(names), build)

    def recur(self, index: Token, name: Token, types: tuple[SqlType, ...]) -> Header:
        recur = Recur(int(index), str(name), types)
        return Header("Recur", 0, lambda _: recur)

    def window_call(self, func: Token, args: tuple[Scalar, ...],
                    *rest: SortKey | Frame | None) -> WindowCall:
        order_by = tuple(k for k in rest if isinstance(k, tuple))
        frame = rest[-1] if isinstance(rest[-1], Frame) else WHOLE_PARTITION
        return WindowCall(str(func), args, order_by, frame)

    def frame(self, units: Token, start: int | None, end: int | None) -> Frame:
        return Frame(str(units), start, end)

    def unbounded_preceding(self) -> None:
        return None

    def unbounded_following(self) -> None:
        return None

    def current_row(self) -> int:
        return 0

    def preceding(self, count: Token) -> int:
        return -int(count)

    def following(self, count: Token) -> int:
        return int(count)

    def subplan(self, token: Token) -> Header:
        number = int(token[1:])
        return Header("subquery", 1, lambda inputs: Slot(number, inputs[0]))
