"""The TPC-H workload: queries Q1, Q3, Q5, Q6, Q10 and Q14 as materialized views over the
TPC-H tables, kept up to date under refresh batches in the spirit of RF1/RF2.

The initial data comes from ``tpchgen-cli`` (a Rust port of dbgen, installed in the venv),
written once as Parquet into ``bench/.data/tpch-sf{sf}/`` and reused from there. Only the
columns the six queries read are loaded, under their standard TPC-H names.

Each batch is one transaction that, like RF1, inserts new orders (fresh keys above every key
used so far) with 1 to 7 lineitems each, their values drawn as the TPC-H specification
(clause 4.2.3) has the generator draw them, and, like RF2, deletes live orders with all their
lineitems. Each side is about 0.1% of the initial orders (150 of 150,000 at SF 0.1). An order
is deleted at most once and never in the batch that inserted it; deleted rows are whole rows
exactly as they are in the table. Everything after the data generation is deterministic in
``seed``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from datetime import date
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.workload import Batch, Table, Workload

DATA_DIR = Path(__file__).parent / ".data"

_ARROW_TYPES = {
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "NUMERIC(15,2)": pa.decimal128(15, 2),
    "DATE": pa.date32(),
    "TEXT": pa.string(),
}

# Per table: (column, SQL type) in DDL order, then the key columns.
_TABLES: dict[str, tuple[tuple[tuple[str, str], ...], tuple[str, ...]]] = {
    "lineitem": ((("l_orderkey", "BIGINT"), ("l_partkey", "BIGINT"), ("l_suppkey", "BIGINT"),
                  ("l_linenumber", "INT"), ("l_quantity", "NUMERIC(15,2)"),
                  ("l_extendedprice", "NUMERIC(15,2)"), ("l_discount", "NUMERIC(15,2)"),
                  ("l_tax", "NUMERIC(15,2)"), ("l_returnflag", "TEXT"),
                  ("l_linestatus", "TEXT"), ("l_shipdate", "DATE")),
                 ("l_orderkey", "l_linenumber")),
    "orders": ((("o_orderkey", "BIGINT"), ("o_custkey", "BIGINT"), ("o_orderdate", "DATE"),
                ("o_shippriority", "INT")),
               ("o_orderkey",)),
    "customer": ((("c_custkey", "BIGINT"), ("c_name", "TEXT"), ("c_address", "TEXT"),
                  ("c_nationkey", "BIGINT"), ("c_phone", "TEXT"),
                  ("c_acctbal", "NUMERIC(15,2)"), ("c_mktsegment", "TEXT"),
                  ("c_comment", "TEXT")),
                 ("c_custkey",)),
    "nation": ((("n_nationkey", "BIGINT"), ("n_name", "TEXT"), ("n_regionkey", "BIGINT")),
               ("n_nationkey",)),
    "region": ((("r_regionkey", "BIGINT"), ("r_name", "TEXT")), ("r_regionkey",)),
    "supplier": ((("s_suppkey", "BIGINT"), ("s_nationkey", "BIGINT")), ("s_suppkey",)),
    "part": ((("p_partkey", "BIGINT"), ("p_type", "TEXT")), ("p_partkey",)),
}

# The queries with the specification's validation parameters. A materialized view is an
# unordered set, so ORDER BY and LIMIT (Q3, Q10) are dropped. matview has no INTERVAL, so
# dates are precomputed: Q1 date '1998-12-01' - interval '90' day = date '1998-09-02';
# Q5 + interval '1' year, Q10 + interval '3' month, Q14 + interval '1' month.
VIEWS = {
    "q1": """
SELECT l_returnflag, l_linestatus,
       sum(l_quantity) AS sum_qty,
       sum(l_extendedprice) AS sum_base_price,
       sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price,
       sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty,
       avg(l_extendedprice) AS avg_price,
       avg(l_discount) AS avg_disc,
       count(*) AS count_order
FROM lineitem
WHERE l_shipdate <= date '1998-09-02'
GROUP BY l_returnflag, l_linestatus""",
    "q3": """
SELECT l_orderkey,
       sum(l_extendedprice * (1 - l_discount)) AS revenue,
       o_orderdate, o_shippriority
FROM customer, orders, lineitem
WHERE c_mktsegment = 'BUILDING'
  AND c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate < date '1995-03-15'
  AND l_shipdate > date '1995-03-15'
GROUP BY l_orderkey, o_orderdate, o_shippriority""",
    "q5": """
SELECT n_name, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM customer, orders, lineitem, supplier, nation, region
WHERE c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND l_suppkey = s_suppkey
  AND c_nationkey = s_nationkey
  AND s_nationkey = n_nationkey
  AND n_regionkey = r_regionkey
  AND r_name = 'ASIA'
  AND o_orderdate >= date '1994-01-01'
  AND o_orderdate < date '1995-01-01'
GROUP BY n_name""",
    "q6": """
SELECT sum(l_extendedprice * l_discount) AS revenue
FROM lineitem
WHERE l_shipdate >= date '1994-01-01'
  AND l_shipdate < date '1995-01-01'
  AND l_discount BETWEEN 0.06 - 0.01 AND 0.06 + 0.01
  AND l_quantity < 24""",
    "q10": """
SELECT c_custkey, c_name,
       sum(l_extendedprice * (1 - l_discount)) AS revenue,
       c_acctbal, n_name, c_address, c_phone, c_comment
FROM customer, orders, lineitem, nation
WHERE c_custkey = o_custkey
  AND l_orderkey = o_orderkey
  AND o_orderdate >= date '1993-10-01'
  AND o_orderdate < date '1994-01-01'
  AND l_returnflag = 'R'
  AND c_nationkey = n_nationkey
GROUP BY c_custkey, c_name, c_acctbal, c_phone, n_name, c_address, c_comment""",
    "q14": """
SELECT 100.00 * sum(CASE WHEN p_type LIKE 'PROMO%'
                         THEN l_extendedprice * (1 - l_discount)
                         ELSE 0 END)
       / sum(l_extendedprice * (1 - l_discount)) AS promo_revenue
FROM lineitem, part
WHERE l_partkey = p_partkey
  AND l_shipdate >= date '1995-09-01'
  AND l_shipdate < date '1995-10-01'""",
}

# Dates of the specification (clause 4.2.3), as days since 1970-01-01.
_EPOCH = date(1970, 1, 1)
_START_DATE = (date(1992, 1, 1) - _EPOCH).days
_LAST_ORDER_DATE = (date(1998, 12, 31) - _EPOCH).days - 151
_CURRENT_DATE = (date(1995, 6, 17) - _EPOCH).days


def make(sf: float = 0.1, batches: int = 10, catchup: int = 0, seed: int = 0) -> Workload:
    """The TPC-H workload at scale factor ``sf``: the six views over freshly loaded tables,
    ``batches`` refresh batches, then ``catchup`` more that continue from them."""
    directory = generate(sf)
    tables = {name: _load(directory, name) for name in _TABLES}
    refresh = _refresh_batches(tables, batches + catchup, np.random.default_rng(seed))
    return Workload(
        name="tpch",
        tables=tuple(Table(name, _ddl(name), _TABLES[name][1], rows)
                     for name, rows in tables.items()),
        views={name: sql.strip() for name, sql in VIEWS.items()},
        batches=refresh[:batches],
        catchup=refresh[batches:],
        params={"sf": sf, "batches": batches, "catchup": catchup, "seed": seed,
                "rows": {name: rows.num_rows for name, rows in tables.items()}},
    )


def generate(sf: float, tables: Iterable[str] = tuple(_TABLES), prefix: str = "tpch") -> Path:
    """The directory ``{prefix}-sf{sf}`` holding the Parquet files of TPC-H ``tables`` (by
    default those of the six views) at scale factor ``sf``, generated with ``tpchgen-cli``
    unless an earlier run left them there. Other sets of tables take another ``prefix``."""
    directory = DATA_DIR / f"{prefix}-sf{sf:g}"
    if directory.is_dir():
        return directory
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f"{directory.name}.", dir=DATA_DIR))
    try:
        subprocess.run(
            [str(Path(sys.executable).parent / "tpchgen-cli"), "parquet",
             "--scale-factor", f"{sf:g}", "--output-dir", str(scratch),
             "--tables", ",".join(tables), "--quiet"],
            check=True)
        scratch.rename(directory)  # whole or not at all, so a cached directory is complete
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return directory


def _ddl(name: str) -> str:
    """``CREATE TABLE`` for table ``name``."""
    columns = ", ".join(f"{column} {sql_type}" for column, sql_type in _TABLES[name][0])
    return f"CREATE TABLE {name} ({columns})"


def _schema(name: str) -> pa.Schema:
    """The Arrow schema of table ``name``'s rows, matching its DDL."""
    return pa.schema([(column, _ARROW_TYPES[sql_type]) for column, sql_type in _TABLES[name][0]])


def _load(directory: Path, name: str) -> pa.Table:
    """Table ``name``'s columns used by the views, read from its Parquet file."""
    schema = _schema(name)
    return pq.read_table(directory / f"{name}.parquet", columns=schema.names).cast(schema)


def _refresh_batches(tables: dict[str, pa.Table], count: int,
                     rng: np.random.Generator) -> list[Batch]:
    """``count`` batches in sequence, each inserting and deleting about 0.1% of the orders
    (with their lineitems), starting from ``tables``."""
    orders, lineitem = tables["orders"], tables["lineitem"]
    size = max(1, round(orders.num_rows / 1000))
    live = orders["o_orderkey"].to_numpy()
    next_key = int(live.max()) + 1
    custkeys = tables["customer"]["c_custkey"].to_numpy()
    custkeys = custkeys[custkeys % 3 != 0]  # the specification leaves a third without orders
    partkeys = tables["part"]["p_partkey"].to_numpy()
    suppliers = tables["supplier"].num_rows
    result = []
    for _ in range(count):
        chosen = rng.choice(len(live), size=size, replace=False)
        gone = pa.array(live[chosen])
        live = np.delete(live, chosen)
        keys = np.arange(next_key, next_key + size, dtype=np.int64)
        next_key += size
        new_orders, new_lines = _new_orders(keys, custkeys, partkeys, suppliers, rng)
        result.append(Batch(
            inserts={"orders": new_orders, "lineitem": new_lines},
            deletes={"orders": orders.filter(pc.is_in(orders["o_orderkey"], gone)),
                     "lineitem": lineitem.filter(pc.is_in(lineitem["l_orderkey"], gone))}))
        live = np.concatenate([live, keys])
        orders = pa.concat_tables([orders, new_orders])
        lineitem = pa.concat_tables([lineitem, new_lines])
    return result


def _new_orders(keys: np.ndarray, custkeys: np.ndarray, partkeys: np.ndarray, suppliers: int,
                rng: np.random.Generator) -> tuple[pa.Table, pa.Table]:
    """Orders with keys ``keys`` and their lineitems, drawn as in TPC-H clause 4.2.3."""
    orderdate = rng.integers(_START_DATE, _LAST_ORDER_DATE + 1, len(keys))
    orders = pa.Table.from_arrays(
        [pa.array(keys), pa.array(rng.choice(custkeys, len(keys))),
         pa.array(orderdate.astype(np.int32)).cast(pa.date32()),
         pa.array(np.zeros(len(keys), np.int32))],
        schema=_schema("orders"))
    lines = rng.integers(1, 8, len(keys))
    n = int(lines.sum())
    starts = np.repeat(np.cumsum(lines) - lines, lines)
    partkey = rng.choice(partkeys, n)
    # The supplier is one of the part's four in partsupp, retailprice a function of the part.
    supplier = rng.integers(0, 4, n)
    suppkey = (partkey + supplier * (suppliers // 4 + (partkey - 1) // suppliers)) % suppliers + 1
    retail_cents = 90000 + (partkey // 10) % 20001 + 100 * (partkey % 1000)
    quantity = rng.integers(1, 51, n)
    shipdate = np.repeat(orderdate, lines) + rng.integers(1, 122, n)
    receiptdate = shipdate + rng.integers(1, 31, n)
    returnflag = np.where(receiptdate <= _CURRENT_DATE,
                          np.where(rng.random(n) < 0.5, "R", "A"), "N")
    lineitem = pa.Table.from_arrays(
        [pa.array(np.repeat(keys, lines)), pa.array(partkey), pa.array(suppkey),
         pa.array((np.arange(n) - starts + 1).astype(np.int32)),
         _money(quantity * 100), _money(quantity * retail_cents),
         _money(rng.integers(0, 11, n)), _money(rng.integers(0, 9, n)),
         pa.array(returnflag), pa.array(np.where(shipdate > _CURRENT_DATE, "O", "F")),
         pa.array(shipdate.astype(np.int32)).cast(pa.date32())],
        schema=_schema("lineitem"))
    return orders, lineitem


def _money(cents: np.ndarray) -> pa.Array:
    """``NUMERIC(15,2)`` values from integer hundredths."""
    return pa.array([Decimal(int(c)).scaleb(-2) for c in cents], pa.decimal128(15, 2))
