"""Window function calls of a select list, bound to ``Window`` nodes.

A call ``f(args) OVER (PARTITION BY p ORDER BY o [frame])`` binds its arguments, partition
and order expressions with the select list's binder, over the row the select list is
evaluated on (in a grouped query the ``Reduce``'s output, so ``sum(sum(x)) OVER ()`` is a
window over the groups), and stands for a column appended to that row. With the row of
width A, the expressions ``e`` the calls read and the distinct PARTITION BY lists
``p_1..p_n``, the select list is evaluated on

    Window_{p_n}( ... Window_{p_1}( Linear[map e](row) ) ... )

each ``Window`` appending the values of the calls partitioned by its list; columns
0..A-1 stay the row's (an expression that is one of them is read there, not copied).
While the select list is bound, the row's width is not known (a grouped query adds
aggregates as it binds), so a call's column is ``Col(SLOT + k)`` for the k-th call and
``calls_placed`` moves it once the row is built.

Aggregates over a window are ``ir/aggregates.py``'s: count, sum, min and max are
``Window`` calls; the derived ones (avg, bool_and, the variances...) their expression over
windowed counts and sums, as in a ``Reduce`` (``sum`` and ``avg`` of intervals too:
``interval_keys.aggregated``); ``f(x) FILTER (WHERE c)`` is ``f(CASE WHEN c THEN x END)``.
PARTITION BY and ORDER BY an interval partition and order by its length: equal lengths
are one partition, and peers. Frames are PostgreSQL's: ``ROWS`` with offsets, ``RANGE``
between UNBOUNDED and CURRENT ROW (the default is ``RANGE BETWEEN UNBOUNDED PRECEDING AND
CURRENT ROW`` under an ORDER BY, the whole partition without one, where every row is a
peer of every other).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from matview.ir import aggregates, windows
from matview.ir.evaluate import EvalError, evaluate
from matview.ir.plans import compute
from matview.ir.relation import Relation, Window
from matview.ir.scalar import (
    Case,
    Col,
    Exists,
    InSubquery,
    Lit,
    Outer,
    Scalar,
    ScalarSubquery,
    children,
    columns_used,
    remap,
    type_of,
)
from matview.ir.types import BIGINT, BOOLEAN, INTEGER_KINDS, INTERVAL
from matview.ir.window_call import WHOLE_PARTITION, Frame, WindowCall
from matview.sql import calls, interval_keys
from matview.sql.call_names import WINDOW_CALLS
from matview.sql.coerce import TypedScalar, require
from matview.sql.errors import SqlError, SqlTypeError, UnsupportedError
from sqlglot import exp

if TYPE_CHECKING:
    from matview.sql.scalars import ExprBinder

SLOT = 1 << 30
"""The first placeholder column of a call's value (see the module docstring)."""

_LITERAL_ARGS = ("offset", "default")
"""The arguments after the first of lag/lead (offset, default) and nth_value (offset)."""


class SelectListWindows:
    """The window calls of one select list: ``exprs`` are the expressions they read (over
    the select list's row), ``calls`` each call's partition (positions in ``exprs``) and
    the call itself (its columns positions in ``exprs``)."""

    def __init__(self) -> None:
        self.exprs: list[Scalar] = []
        self.calls: list[tuple[tuple[int, ...], WindowCall]] = []
        self._inside = False

    def bind(self, binder: ExprBinder, node: exp.Window) -> TypedScalar:
        """The column of the window call ``node``, bound with ``binder``."""
        if self._inside:
            raise SqlError.at("window function calls cannot be nested", node)
        if node.args.get("alias") is not None or isinstance(node.this, exp.Identifier):
            raise UnsupportedError.at("named windows (OVER w, WINDOW w AS ...) are not "
                                      "supported yet: write the window in OVER (...)", node)
        self._inside = True
        try:
            return self._bind(binder, node)
        finally:
            self._inside = False

    def _bind(self, binder: ExprBinder, node: exp.Window) -> TypedScalar:
        func, condition = node.this, None
        if isinstance(func, exp.Filter):
            condition = binder.predicate(func.expression.this, "FILTER")
            func = func.this
        calls.check_call(func)
        partition = tuple(self._compared(binder, p)
                          for p in node.args.get("partition_by") or [])
        order_items = node.args["order"].expressions if node.args.get("order") else []
        order = tuple((self._compared(binder, o.this), bool(o.args.get("desc")),
                       bool(o.args.get("nulls_first"))) for o in order_items)
        frame = _frame(node.args.get("spec"), bool(order))
        if type(func) in WINDOW_CALLS:
            if condition is not None:
                raise SqlError.at("FILTER is not implemented for non-aggregate window "
                                  "functions", node)
            return self._window_only(binder, WINDOW_CALLS[type(func)], func, partition, order,
                                     frame, node)
        if not isinstance(func, exp.AggFunc):
            raise SqlError.at(f"OVER specified, but {calls.function_name(func)} is not a "
                              "window function nor an aggregate function", node)
        return self._aggregate(binder, func, condition, partition, order, frame)

    def _window_only(self, binder: ExprBinder, name: str, func: exp.Expr,
                     partition: tuple[int, ...], order: tuple[tuple[int, bool, bool], ...],
                     frame: Frame, node: exp.Window) -> TypedScalar:
        """A ranking, offset or value function."""
        fn = windows.lookup(name)
        given = [a for a in (func.this, *(func.args.get(k) for k in _LITERAL_ARGS))
                 if a is not None]
        if len(given) not in fn.arity:
            raise SqlError.at(f"function {name} takes {_counts(fn.arity)} argument(s), "
                              f"not {len(given)}", func)
        args: list[Scalar] = []
        if name == "ntile":
            args.append(_integer(binder.bind(given[0]), given[0], "ntile's bucket count",
                                    positive=True))
        elif given:
            value = binder.bind(given[0])
            args.append(Col(self._column(value.expr)))
            if len(given) > 1:
                what = "nth_value's position" if name == "nth_value" else f"{name}'s offset"
                args.append(_integer(binder.bind(given[1]), given[1], what,
                                        positive=name == "nth_value"))
            if len(given) > 2:
                default = require(binder.bind(given[2]), value.type, f"{name}'s default",
                                  given[2])
                args.append(_constant(default, given[2], f"{name}'s default"))
        if fn.kind is windows.Kind.VALUE:
            if (frame.units == "range" and name == "nth_value" and frame.start is not None):
                raise UnsupportedError.at(
                    "nth_value over a RANGE frame starting at CURRENT ROW is not supported "
                    "yet: use a ROWS frame", node)
        else:
            frame = WHOLE_PARTITION  # ranking and offset functions read no frame
        call = WindowCall(name, tuple(args), order, frame)
        return self._add(partition, call, binder)

    def _aggregate(self, binder: ExprBinder, func: exp.AggFunc, condition: TypedScalar | None,
                   partition: tuple[int, ...], order: tuple[tuple[int, bool, bool], ...],
                   frame: Frame) -> TypedScalar:
        """An aggregate over the frame (see the module docstring)."""
        name, argument = calls.function_name(func), func.this
        fn = aggregates.lookup(name)
        if isinstance(argument, exp.Distinct):
            raise UnsupportedError.at("DISTINCT is not implemented for window functions", func)
        if fn.derive is None and fn.name not in windows.REGISTRY:
            raise UnsupportedError.at(f"{name} over a window is not supported yet", func)
        if argument is None or isinstance(argument, exp.Star):
            if condition is None:
                return self._add(partition, WindowCall("count", (), order, frame), binder)
            arg = TypedScalar(Lit(True, BOOLEAN), BOOLEAN)
        else:
            arg = binder.bind(argument)
        of_intervals = arg.type == INTERVAL and fn.name in interval_keys.AGGREGATES
        if not (fn.accepts(arg.type) or of_intervals):
            raise SqlTypeError.at(f"function {name}({arg.type}) does not exist", func)
        if condition is not None:
            arg = TypedScalar(Case(((condition.expr, arg.expr),), Lit(None, arg.type)),
                              arg.type)

        def add(func: str, expr: Scalar | None) -> Scalar:
            args = () if expr is None else (Col(self._column(expr)),)
            return self._add(partition, WindowCall(func, args, order, frame), binder).expr

        if of_intervals:
            return TypedScalar(interval_keys.aggregated(fn.name, arg.expr, add), INTERVAL)
        if fn.derive is None:
            return TypedScalar(add(fn.name, arg.expr), fn.returns(arg.type))
        return TypedScalar(fn.derive(arg.expr, arg.type, add), fn.returns(arg.type))

    def row_number(self, binder: ExprBinder, partition: Sequence[Scalar],
                   order: Sequence[tuple[Scalar, bool, bool]]) -> TypedScalar:
        """The column of ``row_number() OVER (PARTITION BY partition ORDER BY order)``
        (DISTINCT ON keeps the rows numbered 1)."""
        call = WindowCall("row_number", (), tuple((self._column(e), d, n) for e, d, n in order))
        return self._add(tuple(self._column(e) for e in partition), call, binder)

    def _compared(self, binder: ExprBinder, node: exp.Expr) -> int:
        """The position of the PARTITION BY or ORDER BY expression ``node``, an interval's
        length (``interval_keys.grouped``): equal lengths share a partition and are
        peers."""
        value = binder.bind(node)
        return self._column(interval_keys.grouped(value.expr, value.type))

    def _column(self, expr: Scalar) -> int:
        """The position of ``expr`` among the expressions the calls read."""
        if expr not in self.exprs:
            self.exprs.append(expr)
        return self.exprs.index(expr)

    def _add(self, partition: tuple[int, ...], call: WindowCall,
             binder: ExprBinder) -> TypedScalar:
        """The placeholder column of ``call`` (one per distinct call)."""
        if (partition, call) not in self.calls:
            self.calls.append((partition, call))
        k = self.calls.index((partition, call))
        row = binder.row_types()
        return TypedScalar(Col(SLOT + k), call.type([type_of(e, row) for e in self.exprs]))

    def plan(self, rel: Relation) -> tuple[Relation, dict[int, int]]:
        """The ``Window`` nodes over ``rel`` (the select list's row) and, for each call, the
        column of its value in their output."""
        width = rel.arity
        computed = [e for e in self.exprs if not isinstance(e, Col)]
        at = [e.index if isinstance(e, Col) else width + computed.index(e) for e in self.exprs]
        plan = compute(rel, [*(Col(i) for i in range(width)), *computed])

        def shifted(call: WindowCall) -> WindowCall:
            return WindowCall(call.func, tuple(remap(a, lambda c: at[c]) for a in call.args),
                              tuple((at[c], d, n) for c, d, n in call.order_by), call.frame)

        partitions = list(dict.fromkeys(p for p, _ in self.calls))
        placed: dict[int, int] = {}
        for partition in partitions:
            members = [k for k, (p, _) in enumerate(self.calls) if p == partition]
            for k in members:
                placed[k] = plan.arity + members.index(k)
            plan = Window(plan, tuple(at[c] for c in partition),
                          tuple(shifted(self.calls[k][1]) for k in members))
        return plan, placed


def calls_placed(expr: Scalar, placed: dict[int, int]) -> Scalar:
    """``expr`` with each call's placeholder column moved to the call's column."""
    return remap(expr, lambda c: placed[c - SLOT] if c >= SLOT else c)


def _frame(spec: exp.WindowSpec | None, ordered: bool) -> Frame:
    """The frame ``spec`` says (PostgreSQL's default without one), normalized: with no
    ORDER BY every row is a peer, so a RANGE frame is the whole partition."""
    if spec is None:
        return Frame("range", None, 0) if ordered else WHOLE_PARTITION
    units = str(spec.args.get("kind")).lower()
    start = _bound(spec, "start", "start_side")
    end = _bound(spec, "end", "end_side") if spec.args.get("end") is not None else 0
    if units == "range":
        if any(b not in (None, 0) for b in (start, end)):
            raise UnsupportedError.at("RANGE frames with an offset are not supported yet: "
                                      "use ROWS, or RANGE with UNBOUNDED and CURRENT ROW", spec)
        if not ordered:
            return WHOLE_PARTITION
    sides = [str(spec.args.get(side) or "").lower() for side in ("start_side", "end_side")]
    if spec.args.get("start") == "UNBOUNDED" and sides[0] == "following":
        raise SqlError.at("frame start cannot be UNBOUNDED FOLLOWING", spec)
    if spec.args.get("end") == "UNBOUNDED" and sides[1] == "preceding":
        raise SqlError.at("frame end cannot be UNBOUNDED PRECEDING", spec)
    return Frame(units, start, end)


def _bound(spec: exp.WindowSpec, which: str, side: str) -> int | None:
    """A frame bound as an offset from the current row (None: unbounded)."""
    value, direction = spec.args.get(which), str(spec.args.get(side) or "").lower()
    if value == "UNBOUNDED":
        return None
    if value == "CURRENT ROW":
        return 0
    if not (isinstance(value, exp.Literal) and value.is_int) or int(value.this) < 0:
        raise UnsupportedError.at("a frame offset must be a non-negative integer literal",
                                  spec)
    return -int(value.this) if direction == "preceding" else int(value.this)


def _constant(value: TypedScalar, node: exp.Expr, what: str) -> Lit:
    """``value``, an expression of no column, as a literal (``what`` names it in errors)."""
    if columns_used(value.expr) or not _closed(value.expr):
        raise UnsupportedError.at(f"{what} must be a constant", node)
    try:
        return Lit(evaluate(value.expr, (), ()), value.type)
    except EvalError as error:
        raise SqlError.at(str(error), node) from None


def _integer(value: TypedScalar, node: exp.Expr, what: str, positive: bool = False) -> Lit:
    """``value`` as a constant BIGINT at least 0 (``positive``: greater than 0)."""
    if value.type.kind not in INTEGER_KINDS:
        raise SqlTypeError.at(f"{what} must be an integer, not type {value.type}", node)
    result = _constant(value, node, what).value
    if result is not None and (result <= 0 if positive else result < 0):  # type: ignore[operator]
        raise SqlError.at(f"{what} must be {'greater than zero' if positive else 'at least 0'}",
                          node)
    return Lit(result, BIGINT)


def _closed(expr: Scalar) -> bool:
    """Whether ``expr`` reads nothing outside itself (no outer reference, no subquery)."""
    if isinstance(expr, (Outer, Exists, InSubquery, ScalarSubquery)):
        return False
    return all(_closed(c) for c in children(expr))


def _counts(arity: tuple[int, ...]) -> str:
    return " or ".join(map(str, arity))
