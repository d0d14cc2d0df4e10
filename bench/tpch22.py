"""TPC-H's 22 queries as materialized views (issue 15): which ones matview creates, and
for those, what a refresh costs against Spark recomputing the query.

The query texts are the specification's (clause 2.4, validation parameters), one file per
query in ``tests/fixtures/tpch/``; ``tests/oracle/test_tpch22.py`` checks matview's answers against
DuckDB's. The data is ``tpchgen-cli``'s, every column of the eight tables, cached in
``bench/.data/tpch22-sf{sf}/``. The refresh functions follow clause 2.5: RF1 inserts new
orders with their lineitems (every column drawn as clause 4.2.3 has dbgen draw it; comments
from a small vocabulary), RF2 deletes as many existing orders with their lineitems.

``python -m bench tpch22 --sf 0.1`` runs every query in turn: matview on a fresh connection
holding the tables (create the view and read it; then RF1 and RF2, each committed as one
transaction and the view read after it: the step time), and Spark recomputing the query
with ``spark.sql`` over the same tables held as checkpointed temp views (the bench's Spark
baseline, ``bench.engines.SparkRecompute``) after the same changes. Answers must agree
(``differences``), or the query's row says so.
"""

from __future__ import annotations

import re
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import matview
from bench.engines import Matview, SparkRecompute
from bench.measure import refresh_stats
from bench.run import BASE_TIME
from bench.tpch import _CURRENT_DATE, _LAST_ORDER_DATE, _START_DATE, _money, generate
from bench.workload import Batch, Table, Workload

QUERIES_DIR = Path(__file__).parent.parent / "tests" / "fixtures" / "tpch"
QUERIES = tuple(f"q{i:02d}" for i in range(1, 23))
"""The query names, ``q01`` ... ``q22``, as their files and views are named."""

Row = tuple[object, ...]

_ARROW_TYPES = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "NUMERIC(15,2)": pa.decimal128(15, 2),
    "TEXT": pa.string(),
    "DATE": pa.date32(),
}

# Per table (clause 1.4): (column, SQL type) in DDL order, then the primary key. Identifiers
# are BIGINT, integers INT, decimals NUMERIC(15,2), fixed and variable text TEXT.
TABLES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "part": ((("p_partkey", "BIGINT"), ("p_name", "TEXT"), ("p_mfgr", "TEXT"),
              ("p_brand", "TEXT"), ("p_type", "TEXT"), ("p_size", "INT"),
              ("p_container", "TEXT"), ("p_retailprice", "NUMERIC(15,2)"),
              ("p_comment", "TEXT")),
             ("p_partkey",)),
    "supplier": ((("s_suppkey", "BIGINT"), ("s_name", "TEXT"), ("s_address", "TEXT"),
                  ("s_nationkey", "BIGINT"), ("s_phone", "TEXT"),
                  ("s_acctbal", "NUMERIC(15,2)"), ("s_comment", "TEXT")),
                 ("s_suppkey",)),
    "partsupp": ((("ps_partkey", "BIGINT"), ("ps_suppkey", "BIGINT"), ("ps_availqty", "INT"),
                  ("ps_supplycost", "NUMERIC(15,2)"), ("ps_comment", "TEXT")),
                 ("ps_partkey", "ps_suppkey")),
    "customer": ((("c_custkey", "BIGINT"), ("c_name", "TEXT"), ("c_address", "TEXT"),
                  ("c_nationkey", "BIGINT"), ("c_phone", "TEXT"),
                  ("c_acctbal", "NUMERIC(15,2)"), ("c_mktsegment", "TEXT"),
                  ("c_comment", "TEXT")),
                 ("c_custkey",)),
    "orders": ((("o_orderkey", "BIGINT"), ("o_custkey", "BIGINT"), ("o_orderstatus", "TEXT"),
                ("o_totalprice", "NUMERIC(15,2)"), ("o_orderdate", "DATE"),
                ("o_orderpriority", "TEXT"), ("o_clerk", "TEXT"), ("o_shippriority", "INT"),
                ("o_comment", "TEXT")),
               ("o_orderkey",)),
    "lineitem": ((("l_orderkey", "BIGINT"), ("l_partkey", "BIGINT"), ("l_suppkey", "BIGINT"),
                  ("l_linenumber", "INT"), ("l_quantity", "NUMERIC(15,2)"),
                  ("l_extendedprice", "NUMERIC(15,2)"), ("l_discount", "NUMERIC(15,2)"),
                  ("l_tax", "NUMERIC(15,2)"), ("l_returnflag", "TEXT"),
                  ("l_linestatus", "TEXT"), ("l_shipdate", "DATE"), ("l_commitdate", "DATE"),
                  ("l_receiptdate", "DATE"), ("l_shipinstruct", "TEXT"),
                  ("l_shipmode", "TEXT"), ("l_comment", "TEXT")),
                 ("l_orderkey", "l_linenumber")),
    "nation": ((("n_nationkey", "BIGINT"), ("n_name", "TEXT"), ("n_regionkey", "BIGINT"),
                ("n_comment", "TEXT")),
               ("n_nationkey",)),
    "region": ((("r_regionkey", "BIGINT"), ("r_name", "TEXT"), ("r_comment", "TEXT")),
               ("r_regionkey",)),
}

# Value lists of clause 4.2.2.13, and words for comments (clause 4.2.2.10 draws them from a
# grammar over a larger vocabulary; these include Q13's "special" and "requests").
_PRIORITIES = ("1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW")
_INSTRUCTIONS = ("DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN")
_MODES = ("REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB")
_WORDS = ("furiously", "special", "requests", "carefully", "final", "deposits", "ironic",
          "packages", "pending", "accounts", "blithely", "regular", "foxes", "quickly",
          "express", "instructions", "slyly", "bold", "theodolites", "even", "ideas", "unusual")


def query(name: str) -> str:
    """The text of TPC-H query ``name`` (``q01`` ... ``q22``), its comment lines included."""
    return (QUERIES_DIR / f"{name}.sql").read_text()


def portable(sql: str) -> str:
    """``sql`` as DuckDB and Spark SQL accept it: without the leading-field precision of
    TPC-H's ``interval '90' day (3)``, which neither parses (same meaning)."""
    return re.sub(r"(interval\s+'[^']*'\s+day)\s*\(\s*\d+\s*\)", r"\1", sql, flags=re.I)


def ddl(name: str) -> str:
    """``CREATE TABLE`` for table ``name``."""
    columns = ", ".join(f"{column} {sql_type}" for column, sql_type in TABLES[name][0])
    return f"CREATE TABLE {name} ({columns})"


def _schema(name: str) -> pa.Schema:
    """The Arrow schema of table ``name``'s rows, matching ``ddl``."""
    return pa.schema([(column, _ARROW_TYPES[sql_type]) for column, sql_type in TABLES[name][0]])


def load(sf: float) -> dict[str, pa.Table]:
    """The eight tables at scale factor ``sf``, every column, typed as in ``ddl``
    (generated with ``tpchgen-cli`` on first use)."""
    directory = generate(sf, tables=tuple(TABLES), prefix="tpch22")
    return {name: pq.read_table(directory / f"{name}.parquet").cast(_schema(name))
            for name in TABLES}


def refresh_functions(tables: dict[str, pa.Table], orders: int, seed: int = 0
                      ) -> tuple[Batch, Batch]:
    """RF1 and RF2 (clause 2.5) over ``tables``: RF1 inserts ``orders`` new orders (keys
    above every existing one) with 1 to 7 lineitems each; RF2 deletes ``orders`` existing
    orders with all their lineitems, as whole rows of the tables. Deterministic in
    ``seed``."""
    rng = np.random.default_rng(seed)
    existing = tables["orders"]["o_orderkey"].to_numpy()
    first = int(existing.max()) + 1
    new_orders, new_lines = _new_orders(
        tables, np.arange(first, first + orders, dtype=np.int64), rng)
    gone = pa.array(rng.choice(existing, size=orders, replace=False))
    rf1 = Batch(inserts={"orders": new_orders, "lineitem": new_lines})
    rf2 = Batch(deletes={
        "orders": tables["orders"].filter(pc.is_in(tables["orders"]["o_orderkey"], gone)),
        "lineitem": tables["lineitem"].filter(pc.is_in(tables["lineitem"]["l_orderkey"], gone))})
    return rf1, rf2


def _comments(rng: np.random.Generator, count: int, low: int, high: int) -> pa.Array:
    """``count`` comments of ``low`` to ``high`` characters, words from ``_WORDS``."""
    out = []
    for length in rng.integers(low, high + 1, count):
        words = rng.choice(_WORDS, 12)
        out.append(" ".join(words)[:length].strip())
    return pa.array(out)


def _new_orders(tables: dict[str, pa.Table], keys: np.ndarray, rng: np.random.Generator
                ) -> tuple[pa.Table, pa.Table]:
    """Orders with keys ``keys`` and their lineitems, every column drawn as clause 4.2.3
    draws it (a customer whose key is not divisible by 3, a part with one of its four
    suppliers in partsupp, the price from the part's retail price, the dates, flags and
    statuses from the order date and the current date 1995-06-17)."""
    count = len(keys)
    custkeys = tables["customer"]["c_custkey"].to_numpy()
    custkeys = custkeys[custkeys % 3 != 0]
    parts = tables["part"].sort_by("p_partkey")
    partkeys = parts["p_partkey"].to_numpy()
    retail_cents = (pc.multiply(parts["p_retailprice"].cast(pa.float64()), 100).to_numpy()
                    .round().astype(np.int64))
    suppliers = tables["supplier"].num_rows
    clerks = max(1, tables["orders"].num_rows // 1500)

    orderdate = rng.integers(_START_DATE, _LAST_ORDER_DATE + 1, count)
    lines = rng.integers(1, 8, count)
    n = int(lines.sum())
    order_of = np.repeat(np.arange(count), lines)
    index = rng.integers(0, len(partkeys), n)
    partkey = partkeys[index]
    supplier = rng.integers(0, 4, n)
    suppkey = (partkey + supplier * (suppliers // 4 + (partkey - 1) // suppliers)) % suppliers + 1
    quantity = rng.integers(1, 51, n)
    price = quantity * retail_cents[index]
    discount = rng.integers(0, 11, n)
    tax = rng.integers(0, 9, n)
    shipdate = orderdate[order_of] + rng.integers(1, 122, n)
    commitdate = orderdate[order_of] + rng.integers(30, 91, n)
    receiptdate = shipdate + rng.integers(1, 31, n)
    returnflag = np.where(receiptdate <= _CURRENT_DATE,
                          np.where(rng.random(n) < 0.5, "R", "A"), "N")
    linestatus = np.where(shipdate > _CURRENT_DATE, "O", "F")
    starts = np.repeat(np.cumsum(lines) - lines, lines)

    def dates(days: np.ndarray) -> pa.Array:
        """Days since 1970-01-01 as DATEs."""
        return pa.array(days.astype(np.int32)).cast(pa.date32())

    lineitem = pa.Table.from_arrays(
        [pa.array(keys[order_of]), pa.array(partkey), pa.array(suppkey),
         pa.array((np.arange(n) - starts + 1).astype(np.int32)),
         _money(quantity * 100), _money(price), _money(discount), _money(tax),
         pa.array(returnflag), pa.array(linestatus), dates(shipdate), dates(commitdate),
         dates(receiptdate), pa.array(rng.choice(_INSTRUCTIONS, n)),
         pa.array(rng.choice(_MODES, n)), _comments(rng, n, 10, 43)],
        schema=_schema("lineitem"))
    # o_totalprice: sum of extendedprice * (1 + tax) * (1 - discount), to the cent
    charge = np.bincount(order_of, price * (100 + tax) * (100 - discount), count) / 10_000
    shipped = np.bincount(order_of, linestatus == "F", count)
    status = np.where(shipped == lines, "F", np.where(shipped == 0, "O", "P"))
    orders = pa.Table.from_arrays(
        [pa.array(keys), pa.array(rng.choice(custkeys, count)), pa.array(status),
         _money(np.round(charge).astype(np.int64)), dates(orderdate),
         pa.array(rng.choice(_PRIORITIES, count)),
         pa.array([f"Clerk#{c:09d}" for c in rng.integers(1, clerks + 1, count)]),
         pa.array(np.zeros(count, np.int32)), _comments(rng, count, 19, 78)],
        schema=_schema("orders"))
    return orders, lineitem



def _is_number(value: object) -> bool:
    """Whether ``value`` is a number (booleans are not)."""
    return isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)


def _half_unit(value: object) -> float:
    """Half a unit in the last place of a NUMERIC value (0 for integers and floats): the
    rounding error of a value rounded to its scale."""
    if isinstance(value, Decimal) and value.is_finite():
        return 0.5 * 10.0 ** value.as_tuple().exponent  # type: ignore[operator]
    return 0.0


REL_TOL = 1e-6
"""Relative difference allowed between numbers, beyond their rounding to their scales:
DuckDB answers averages and quotients in DOUBLE, and Spark computes a quotient of two
38-digit NUMERICs (sums) to 6 decimal places whatever the scale of its type."""


def values_match(a: object, b: object) -> bool:
    """Both NULL; or numbers equal up to ``REL_TOL`` and, when their scales differ, the
    rounding of each to its scale (NUMERIC averages and quotients are rounded to scales that
    differ between engines; two values of one scale are roundings to the same digits); or
    other values of one type and equal."""
    if a is None or b is None:
        return a is None and b is None
    if _is_number(a) and _is_number(b):
        x, y = float(a), float(b)  # type: ignore[arg-type]
        half_a, half_b = _half_unit(a), _half_unit(b)
        rounding = 0.0 if half_a == half_b else half_a + half_b
        return abs(x - y) <= rounding + REL_TOL * max(abs(x), abs(y))
    return type(a) is type(b) and a == b


def _numbers(row: Row) -> tuple[float, ...]:
    """The numbers of ``row``, in order: the order rows are matched in."""
    return tuple(float(v) for v in row if _is_number(v))  # type: ignore[arg-type]


def differences(actual: Sequence[Row], expected: Sequence[Row]) -> tuple[list[Row], list[Row]]:
    """The rows of ``expected`` that ``actual`` lacks and the rows ``actual`` has beyond
    ``expected``, as multisets, values compared by ``values_match``."""
    def shape(row: Row) -> Row:
        """``row`` with its numbers left out: rows of one shape may match."""
        return tuple("<number>" if _is_number(v) else v for v in row)

    buckets: dict[Row, list[Row]] = defaultdict(list)
    for row in sorted(actual, key=_numbers):
        buckets[shape(row)].append(row)
    missing = []
    for row in sorted(expected, key=_numbers):
        bucket = buckets[shape(row)]
        found = next((i for i, have in enumerate(bucket) if len(have) == len(row) and all(
            values_match(a, b) for a, b in zip(have, row))), None)
        if found is None:
            missing.append(row)
        else:
            bucket.pop(found)
    return missing, [row for bucket in buckets.values() for row in bucket]


def _rows(table: pa.Table) -> list[Row]:
    """``table``'s rows as tuples."""
    return list(zip(*[column.to_pylist() for column in table.columns]))


def _spark_recompute(spark: SparkSession, workload: Workload
                     ) -> tuple[dict[str, dict[str, Any]], list[float]]:
    """Per query, Spark's answers and query times over the loaded tables, after RF1 and
    after RF2 (``answers``, ``query_s``; or the ``error`` Spark raised); and the time each
    refresh function took to apply to Spark's tables (not counted)."""
    engine = SparkRecompute(spark, workload)
    engine.load_tables()
    out: dict[str, dict[str, Any]] = {
        name: {"answers": [], "query_s": []} for name in workload.views}
    applies = []
    for batch in [None, *workload.batches]:
        if batch is not None:
            start = time.perf_counter()
            engine.apply(batch)
            applies.append(time.perf_counter() - start)
        for name, sql in workload.views.items():
            figures = out[name]
            if "error" in figures:
                continue
            start = time.perf_counter()
            try:
                answer = spark.sql(portable(sql)).toArrow()
            except Exception as error:  # Spark's own exceptions; recorded, not fatal
                figures["error"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
                continue
            figures["query_s"].append(time.perf_counter() - start)
            figures["answers"].append(_rows(answer))
    return out, applies


def _matview_query(engine: Matview, name: str, workload: Workload,
                   expected: list[list[Row]]) -> dict[str, Any]:
    """Create view ``name`` on ``engine`` (holding the loaded tables), read it, then commit
    RF1 and RF2 and read it after each: ``build_s`` and per refresh function ``step_s``;
    ``error`` when a statement fails (after CREATE: prefixed with the step); ``differs``,
    what differs from ``expected`` (Spark's answers, when it has all three)."""
    figures: dict[str, Any] = {"created": False, "step_s": []}
    start = time.perf_counter()
    answers = []
    step = ""
    try:
        engine.con.execute(f"CREATE MATERIALIZED VIEW {name} AS {workload.views[name]}")
        figures["created"] = True
        step = "reading the view: "
        answers.append(engine.con.execute(f"SELECT * FROM {name}").fetchall())
        figures["build_s"] = time.perf_counter() - start
        for i, batch in enumerate(workload.batches):
            step = f"RF{i + 1}: "
            start = time.perf_counter()
            engine.apply(batch, BASE_TIME + i)
            answers.append(engine.con.execute(f"SELECT * FROM {name}").fetchall())
            figures["step_s"].append(time.perf_counter() - start)
    except matview.Error as error:
        figures["error"] = f"{step}{type(error).__name__}: {error}"
        return figures
    figures["refresh"] = refresh_stats(engine.con, name)
    if len(expected) == len(answers):
        for when, have, want in zip(("CREATE", "RF1", "RF2"), answers, expected):
            missing, extra = differences(have, want)
            if missing or extra:
                figures["differs"] = (f"after {when}: Spark's rows matview lacks {missing[:3]} "
                                      f"({len(missing)}), rows beyond Spark's {extra[:3]} "
                                      f"({len(extra)})")
                break
    return figures


def run(spark: SparkSession, sf: float = 0.1, seed: int = 0, refresh: str = "auto",
        queries: Sequence[str] = QUERIES) -> dict[str, Any]:
    """Every figure of the run (see the module docstring). RF1 and RF2 change
    ``SF * 1500`` orders each, as the specification's refresh functions do."""
    tables = load(sf)
    orders = max(1, round(sf * 1500))
    rf1, rf2 = refresh_functions(tables, orders, seed)
    workload = Workload(
        name="tpch22",
        tables=tuple(Table(name, ddl(name), TABLES[name][1], rows)
                     for name, rows in tables.items()),
        views={name: query(name) for name in queries},
        batches=[rf1, rf2], catchup=[],
        params={"sf": sf, "seed": seed, "refresh": refresh,
                "rows": {name: rows.num_rows for name, rows in tables.items()},
                "rf1_rows": rf1.size, "rf2_rows": rf2.size})
    baseline, applies = _spark_recompute(spark, workload)
    results: dict[str, Any] = {}
    engine: Matview | None = None
    for name in queries:
        if engine is None:  # a fresh connection for each view; a failed CREATE leaves none
            engine = Matview(spark, workload, refresh)
            engine.load_tables()
        spark_figures = baseline[name]
        figures = _matview_query(engine, name, workload, spark_figures["answers"])
        if figures["created"]:
            engine.con.close()
            engine = None
        spark_figures.pop("answers")
        spark_figures["ratio"] = [s / m for s, m in zip(spark_figures["query_s"][1:],
                                                        figures["step_s"])]
        results[name] = {"matview": figures, "spark": spark_figures}
        print(f"{name}: {'created' if figures['created'] else 'not created'}"
              f"{'' if 'error' not in figures else ': ' + figures['error']}",
              file=sys.stderr, flush=True)
    if engine is not None:
        engine.con.close()
    return {"workload": "tpch22", "params": workload.params, "spark_apply_s": applies,
            "queries": results}


def _s(values: list[float], i: int, form: str = "{:.3f}") -> str:
    """``values[i]`` formatted with ``form``, or ``-`` when there is none."""
    return form.format(values[i]) if i < len(values) else "-"


def table(result: dict[str, Any]) -> str:
    """One line per query: created or not, matview's build and RF1/RF2 step times, Spark's
    recompute times after the same changes and their ratio (above 1: matview is faster),
    how the view's steps ran; then the errors of the queries not created, and any answer
    that differs from Spark's."""
    params = result["params"]
    lines = [f"TPC-H 22 queries as materialized views, SF {params['sf']:g}: RF1 inserts "
             f"{params['rf1_rows']} rows, RF2 deletes {params['rf2_rows']}",
             "| query | created | build s | RF1 s | Spark RF1 s | x | RF2 s | Spark RF2 s | x "
             "| steps |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    notes = []
    for name, figures in result["queries"].items():
        mv, sp = figures["matview"], figures["spark"]
        build = "-" if "build_s" not in mv else f"{mv['build_s']:.3f}"
        steps = "-"
        if "refresh" in mv:
            steps = f"{mv['refresh']['incremental']} incr, {mv['refresh']['recompute']} recomp"
        lines.append(
            f"| {name} | {'yes' if mv['created'] else 'no'} | {build} "
            f"| {_s(mv['step_s'], 0)} | {_s(sp['query_s'], 1)} | {_s(sp['ratio'], 0, '{:.2f}x')} "
            f"| {_s(mv['step_s'], 1)} | {_s(sp['query_s'], 2)} | {_s(sp['ratio'], 1, '{:.2f}x')} "
            f"| {steps} |")
        if "error" in mv:
            notes.append(f"{name}: {mv['error']}")
        if "differs" in mv:
            notes.append(f"{name}: ANSWER DIFFERS from Spark's {mv['differs']}")
        if "error" in sp:
            notes.append(f"{name}: Spark failed: {sp['error']}")
    created = sum(f["matview"]["created"] for f in result["queries"].values())
    lines.append(f"\ncreated: {created} of {len(result['queries'])}")
    return "\n".join(lines + notes)


def agrees(result: dict[str, Any]) -> bool:
    """Whether every view matview created agrees with Spark after every step."""
    return not any("differs" in f["matview"] for f in result["queries"].values())
