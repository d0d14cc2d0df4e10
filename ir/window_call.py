"""A window function call of a ``relation.Window`` (``WindowCall``): a function of
``ir/windows.py`` over a partition in an order, with its frame (``Frame``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from matview.ir.scalar import Scalar, type_of
from matview.ir.sort_keys import SortKey
from matview.ir.types import SqlType


@dataclass(frozen=True)
class Frame:
    """A window frame: ``units`` ``rows`` (positions) or ``range`` (peers: rows equal on the
    call's ``order_by``); ``start`` and ``end`` are offsets from the current row, negative
    preceding and positive following, None unbounded (preceding for ``start``, following
    for ``end``). A ``range`` frame's offsets are 0 (its current row and peers) or None."""

    units: str
    start: int | None
    end: int | None


WHOLE_PARTITION = Frame("rows", None, None)
"""The frame of every row of the partition."""


@dataclass(frozen=True)
class WindowCall:
    """A window function call (``ir/windows.py``) over the rows of a partition in the order
    ``order_by`` then ``total_order`` (so that only equal rows tie). ``args`` are columns
    of the input, or literals: lag/lead's offset and default, nth_value's position,
    ntile's bucket count. ``frame`` matters to the value functions and aggregates."""

    func: str
    args: tuple[Scalar, ...]
    order_by: tuple[SortKey, ...]
    frame: Frame = WHOLE_PARTITION

    def type(self, input_types: Sequence[SqlType]) -> SqlType:
        from matview.ir import windows

        return windows.lookup(self.func).returns(
            [type_of(a, input_types) for a in self.args])
