"""The executed Spark plans of a dataflow using every table function, ``repeat_row`` and a
temporal filter hold no Python evaluation: every job a step runs is recorded (by wrapping
the DataFrame actions the runtime uses) and its executed plan searched for Python nodes."""

from __future__ import annotations

import sys
from datetime import date, datetime, timedelta

import pyarrow as pa
import pytest
from matview.ir.parse import parse_plan
from matview.ir.relation import Linear
from matview.planner.lower import lower
from matview.runtime.arrangements.trace import Trace
from matview.runtime.arrangements.updates import stored
from matview.runtime.dataflow import Dataflow
from matview.runtime.lowering.types import update_schema
from matview.runtime.spark import jvm_plans

PYTHON_NODES = ("BatchEvalPython", "ArrowEvalPython", "PythonUDF", "MapInPandas",
                "FlatMapGroupsInPandas", "PythonMapInArrow", "MapInArrow", "PythonUDTF",
                "BatchEvalPythonUDTF", "ArrowEvalPythonUDTF")

PLAN = parse_plan(
    "Linear [filter (mz_now() >= #1), (mz_now() < (#3 + '00:00:00.05'::interval)); "
    "flat_map generate_series(1, #0), unnest(#6) with ordinality; "
    "flat_map generate_series(#3, (#3 + '1 day'::interval), '12 hours'::interval); "
    "flat_map string_to_table(#2, ','); "
    "flat_map regexp_matches(#2, '([a-c])([0-9])', 'g'), jsonb_array_elements(#4), "
    "jsonb_array_elements_text(#4), jsonb_each(#5), jsonb_each_text(#5); "
    "repeat_row (#0 - 1); map array(#0, #1), cast(cast(#4 as text) as jsonb)]\n"
    "  Get t (a int, b bigint, s text, ts timestamp, ja jsonb, jo jsonb, arr int[], d date)")


@pytest.fixture
def executed(spark, monkeypatch):  # type: ignore[no-untyped-def]
    """The executed plans of every ``toArrow``, ``localCheckpoint`` and runtime collect
    (``jvm_plans.to_arrow``) run meanwhile."""
    plans: list[str] = []
    frame_class = type(spark.range(1))  # the session's DataFrame class (classic or connect)
    for name in ("toArrow", "localCheckpoint"):
        original = getattr(frame_class, name)

        def wrapped(self, *args, __original=original, **kwargs):  # type: ignore[no-untyped-def]
            result = __original(self, *args, **kwargs)
            plans.append(self._jdf.queryExecution().executedPlan().toString())
            return result

        monkeypatch.setattr(frame_class, name, wrapped)
    collect = jvm_plans.to_arrow  # the runtime's collect, imported by name where it is used

    def collected(df, __collect=collect):  # type: ignore[no-untyped-def]
        result = __collect(df)
        plans.append(df._jdf.queryExecution().executedPlan().toString())
        return result

    for module in list(sys.modules.values()):
        if getattr(module, "to_arrow", None) is collect:
            monkeypatch.setattr(module, "to_arrow", collected)
    return plans


def test_no_python_evaluation_in_executed_plans(spark, executed) -> None:  # type: ignore[no-untyped-def]
    assert isinstance(PLAN, Linear)
    schema = update_schema(PLAN.input.types)
    epoch = datetime(1970, 1, 1)
    rows = [(3, 1, "a1,b2", epoch + timedelta(milliseconds=10), '[1,"x",[2]]',
             '{"k":1,"a":"b"}', [7, 8], date(1970, 1, 1), 1, 1),
            (2, 4, "c3", epoch + timedelta(milliseconds=20), "[]", "{}", None, None, 1, 1)]
    columns = list(zip(*rows))
    table = pa.Table.from_arrays([pa.array(list(c), f.type) for c, f in zip(columns, schema)],
                                 schema=schema)
    trace = Trace(spark, PLAN.input.arity)
    trace.append(stored(spark, table), 1, 1)
    flow = Dataflow(lower(PLAN), spark, {"t": trace}.__getitem__, as_of=1)
    for upper in (1, 15, 100):
        step = flow.prepare(upper)
        if step.output is not None:
            step.output.toArrow()
        step.commit()
    assert len(executed) >= 3
    for plan in executed:
        found = [node for node in PYTHON_NODES if node in plan]
        assert not found, f"Python evaluation {found} in:\n{plan}"
    assert any("Generate" in plan for plan in executed)
