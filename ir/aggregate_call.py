"""An aggregate call of a ``relation.Reduce`` (``Aggregate``): a SUMMED or EXTREME
aggregate of ``ir/aggregates.py`` (``AGGREGATES``) over an expression, with the ORDER BY
and separator of an aggregate of the values in order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from matview.ir import aggregates
from matview.ir.scalar import Scalar, type_of
from matview.ir.types import SqlType

AGGREGATES = tuple(name for name, fn in aggregates.REGISTRY.items()
                   if fn.maintenance is not aggregates.Maintenance.DERIVED)
"""The aggregates a ``Reduce`` computes (``ir/aggregates.py``: SUMMED and EXTREME)."""


OrderedScalar = tuple[Scalar, bool, bool]
"""An ORDER BY key inside an aggregate call: (expression, descending, nulls first)."""


@dataclass(frozen=True)
class Aggregate:
    """An aggregate: ``func`` (a SUMMED or EXTREME aggregate of ``ir/aggregates.py``) of
    ``expr`` over a group; ``expr`` None means ``count(*)``. An aggregate of the group's
    values in order (``string_agg``, ``array_agg``) takes them in ``order_by`` then by value
    (so the result is deterministic), and ``string_agg`` joins them with ``separator``."""

    func: str
    expr: Scalar | None
    order_by: tuple[OrderedScalar, ...] = ()
    separator: str | None = None

    def type(self, input_types: Sequence[SqlType]) -> SqlType:
        arg = None if self.expr is None else type_of(self.expr, input_types)
        return aggregates.lookup(self.func).returns(arg)

    def scalars(self) -> tuple[Scalar, ...]:
        """The expressions it evaluates on each row: its argument, then its ORDER BY."""
        return (() if self.expr is None else (self.expr,)) + tuple(e for e, _, _ in self.order_by)

    def mapped(self, fn: Callable[[Scalar], Scalar]) -> Aggregate:
        """The aggregate with ``fn`` applied to each of its expressions."""
        return replace(self, expr=None if self.expr is None else fn(self.expr),
                       order_by=tuple((fn(e), d, n) for e, d, n in self.order_by))
