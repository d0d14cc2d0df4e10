"""``matview_refresh_history``: the latest steps of every materialized view, one row each, as
its refresh policy chose and measured them (``runtime.refresh``): the view, the time it
stepped to, the strategy and the reason, the input update rows the step read and the rows
its inputs held, the seconds each strategy was estimated to take (NULL: nothing to estimate
from yet), the seconds it took, and the operators an incremental step recomputed from their
inputs' snapshots, each with why (``runtime.operator_recompute``; NULL: none). Read as a
system relation, a constant of the moment its statement is bound (as ``pg_catalog``'s): a
read of it steps no view."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from matview.ir.relation import Field
from matview.ir.types import BIGINT, DOUBLE, MZ_TIMESTAMP, TEXT
from matview.runtime.dataflow import Dataflow
from matview.sql.catalog import CatalogItem

NAME = "matview_refresh_history"

FIELDS = (Field("name", TEXT), Field("mz_timestamp", MZ_TIMESTAMP), Field("strategy", TEXT),
          Field("reason", TEXT), Field("changed_rows", BIGINT), Field("held_rows", BIGINT),
          Field("estimated_incremental_seconds", DOUBLE),
          Field("estimated_recompute_seconds", DOUBLE), Field("seconds", DOUBLE),
          Field("recomputed_operators", TEXT))


class Maintained(Protocol):
    """A catalog entry, as far as its history goes: a materialized view's dataflow."""

    dataflow: Dataflow | None


def history_item(entries: Mapping[str, Maintained]) -> CatalogItem:
    """The relation of the steps of the materialized views among ``entries``."""
    rows = [((name, step.at, step.choice.strategy, step.choice.reason, step.measured.changed,
              step.measured.held, step.choice.incremental, step.choice.recompute,
              step.measured.seconds, "; ".join(step.measured.recomputed) or None), 1)
            for name, entry in sorted(entries.items()) if entry.dataflow is not None
            for step in entry.dataflow.policy.history]
    return CatalogItem(NAME, "system catalog", FIELDS, rows=tuple(rows))
