"""The Spark lowering of ``Linear`` (``runtime.linear.apply_steps``) against the reference
semantics (``ir.linear_logic.join_function``).

Random step lists (maps, plain and temporal filters, projections, every table function,
``repeat_row``) run on random input updates with random times and negative diffs; the
consolidated outputs must be equal. Many cases share one Spark job: each case's output rows
are turned into JSON text and the cases are unioned.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import date, datetime, timedelta
from decimal import Decimal

import pyarrow as pa
import pytest
from matview.ir import table_functions
from matview.ir.linear_logic import join_function, steps_logic
from matview.ir.parse import parse_plan
from matview.ir.relation import Linear
from matview.runtime.lowering.linear_steps import apply_steps
from matview.runtime.lowering.types import column_names, update_schema
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from tests.support.seeds import seeds

SOURCE = "Get t (a int, b bigint, s text, ts timestamp, ja jsonb, jo jsonb, arr int[], d date)"
EPOCH = datetime(1970, 1, 1)

# Step templates over the source columns, which every step keeps in place (projections
# come last). ``{n}`` is the number of columns before the step.
MAPS = ["(#0 + 1)", "lower(#2)", "(#3 + '1 day 02:00:00'::interval)", "array(#0, null::int, 3)",
        "cast('{\"b\":[1,2],\"a\":\"x\"}' as jsonb)", "cast(#4 as text)",
        "(#7 + '00:00:00.0015'::interval)"]
FILTERS = ["(#0 > 0)", "(#2 LIKE '%b%')", "(NOT is_null(#1))"]
TEMPORAL = ["(mz_now() >= #1)", "(mz_now() < (#1 + 40::bigint))", "(mz_now() <= #3)",
            "(mz_now() > #3)", "(mz_now() = #1)", "(mz_now() < #7)", "(mz_now() >= #7)",
            "(mz_now() > #1)", "(mz_now() <= #1)", "(mz_now() < #3)", "(mz_now() >= #3)"]
CALLS = ["generate_series(1, #0)", "generate_series(#0, -1, -1)",
         "generate_series(#1, (#1 + 3::bigint), 2::bigint)",
         "generate_series(#3, (#3 + '1 day'::interval), '8 hours'::interval)",
         "unnest(#6)", "unnest(array(#0, null::int, 3))",
         "string_to_table(#2, ',')", "string_to_table(#2, null::text)",
         "regexp_matches(#2, '([a-c])([0-9])', 'g')", "regexp_matches(#2, 'b+')",
         "jsonb_array_elements(#4)", "jsonb_array_elements_text(#4)", "jsonb_each(#5)",
         "jsonb_each_text(#5)"]
REPEATS = ["#0", "(#0 - 1)", "2"]

TEXTS = [None, "", "a1,b2", "b,,c3", "bb", "xyz", "a1b2c3"]
ARRAYS = ['[1,"a",[2,3]]', "[]", '[{"k":1},null,"x"]', None, '[5]']
OBJECTS = ['{"b":1,"a":"x"}', "{}", '{"n":{"m":[1,2]},"z":null}', None, '{"k":"v"}']


def _random_steps(rng: random.Random) -> str:
    steps = []
    for _ in range(rng.randint(1, 4)):
        kind = rng.choice(["map", "filter", "temporal", "flat_map", "repeat"])
        if kind == "map":
            steps.append("map " + ", ".join(rng.sample(MAPS, rng.randint(1, 2))))
        elif kind == "filter":
            preds = [rng.choice(FILTERS)] + rng.sample(TEMPORAL, rng.randint(0, 1))
            steps.append("filter " + ", ".join(preds))
        elif kind == "temporal":
            steps.append("filter " + ", ".join(rng.sample(TEMPORAL, rng.randint(1, 2))))
        elif kind == "flat_map":
            calls = rng.sample(CALLS, rng.choice([1, 1, 2, 3]))
            ordinality = " with ordinality" if rng.random() < 0.4 else ""
            steps.append("flat_map " + ", ".join(calls) + ordinality)
        else:
            steps.append("repeat_row " + rng.choice(REPEATS))
    if rng.random() < 0.3:
        steps.append("project (#7, #0, #2, #0)")
    return "Linear [" + "; ".join(steps) + "]\n  " + SOURCE


def _random_updates(rng: random.Random, count: int) -> list[tuple[tuple[object, ...], int, int]]:
    out = []
    for _ in range(count):
        row = (
            rng.choice([None, -2, -1, 0, 1, 2, 3]),
            rng.choice([None, -5, 0, 7, 20, 33, 60, 95]),
            rng.choice(TEXTS),
            rng.choice([None, EPOCH + timedelta(microseconds=rng.randint(-20_000, 120_000))]),
            rng.choice(ARRAYS),
            rng.choice(OBJECTS),
            rng.choice([None, (), (1, None, 2), (4,)]),
            rng.choice([None, date(1969, 12, 31), date(1970, 1, 1), date(1970, 1, 2)]),
        )
        out.append((row, rng.randint(0, 100), rng.choice([-2, -1, 1, 1, 2])))
    return out


def _frame(spark, plan: Linear, updates) -> DataFrame:  # type: ignore[no-untyped-def]
    schema = update_schema(plan.input.types)
    columns = list(zip(*[row + (time, diff) for row, time, diff in updates]))
    table = pa.table([pa.array([list(v) if isinstance(v, tuple) else v for v in c], f.type)
                      for c, f in zip(columns, schema)], schema=schema)
    return spark.createDataFrame(table)


def _plain(value: object) -> object:
    """A reference value in the form the JSON of Spark's row has."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return float(value)
    return value


def _expected(plan: Linear, updates) -> Counter[tuple[str, int]]:  # type: ignore[no-untyped-def]
    logic = steps_logic(plan.steps, plan.input.types, table_functions.DEFAULT_ROW_LIMIT)
    out: Counter[tuple[str, int]] = Counter()
    for row, time, diff in join_function(logic, updates):
        out[(json.dumps(_plain(list(row))), time)] += diff
    return Counter({k: v for k, v in out.items() if v})


JSON_OPTIONS = {"ignoreNullFields": "false", "timestampFormat": "yyyy-MM-dd HH:mm:ss.SSSSSS",
                "dateFormat": "yyyy-MM-dd"}


def _as_json(df: DataFrame, case: int, arity: int) -> DataFrame:
    row = F.to_json(F.array(*[F.to_json(F.struct(F.col(c).alias("v")), JSON_OPTIONS)
                              for c in column_names(arity)]))
    return df.select(F.lit(case).alias("case"), row.alias("row"), "_time", "_diff")


def _actual(table: pa.Table, cases: int) -> list[Counter[tuple[str, int]]]:
    out: list[Counter[tuple[str, int]]] = [Counter() for _ in range(cases)]
    for case, row, time, diff in zip(*(table[c].to_pylist()
                                       for c in ("case", "row", "_time", "_diff"))):
        values = [json.loads(cell)["v"] for cell in json.loads(row)]
        out[case][(json.dumps(values), time)] += diff
    return [Counter({k: v for k, v in c.items() if v}) for c in out]


@pytest.mark.slow
@pytest.mark.parametrize("seed", seeds(1))
def test_lowering_equals_reference(spark, seed: int) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    plans = [parse_plan(_random_steps(rng)) for _ in range(30)]
    updates = _random_updates(rng, 40)
    source = _frame(spark, plans[0], updates)  # type: ignore[arg-type]
    frames = []
    for case, plan in enumerate(plans):
        assert isinstance(plan, Linear)
        out = apply_steps(source, plan.steps, plan.input.types)
        frames.append(_as_json(out, case, plan.arity))
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    actual = _actual(union.toArrow(), len(plans))
    for case, plan in enumerate(plans):
        assert isinstance(plan, Linear)
        expected = _expected(plan, updates)
        assert actual[case] == expected, f"case {case}: {plan.steps}"


def test_row_limit_fails_with_a_clear_error(spark) -> None:  # type: ignore[no-untyped-def]
    plan = parse_plan("Linear [flat_map generate_series(1, #0)]\n  " + SOURCE)
    assert isinstance(plan, Linear)
    updates = [((50, None, None, None, None, None, None, None), 1, 1)]
    out = apply_steps(_frame(spark, plan, updates), plan.steps, plan.input.types, limit=10)
    with pytest.raises(Exception, match="more than 10 rows"):
        out.toArrow()
    assert len(apply_steps(_frame(spark, plan, updates), plan.steps, plan.input.types,
                           limit=50).toArrow()) == 50
