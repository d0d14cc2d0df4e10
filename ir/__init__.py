"""matview's data model: types, scalar expressions, relational IR, its text form and the
reference interpreter. Pure Python: imports neither sqlglot nor Spark.

``parse_plan`` (from ``matview.ir.parse``), ``render_plan`` and ``RenderOptions`` (from
``matview.ir.render``) are exported here, loaded on first use: importing any other part of the
IR does not build the text form's parser."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matview.ir.parse import parse_plan
    from matview.ir.render import RenderOptions, render_plan

__all__ = ["RenderOptions", "parse_plan", "render_plan"]

_HOMES = {
    "parse_plan": "matview.ir.parse",
    "render_plan": "matview.ir.render",
    "RenderOptions": "matview.ir.render",
}


def __getattr__(name: str) -> object:
    """The exported name ``name``, imported from its module when first asked for."""
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_HOMES[name]), name)
    globals()[name] = value
    return value
