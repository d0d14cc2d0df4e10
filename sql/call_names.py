"""The names of function calls in matview's SQL dialect (``dialect``): the ``meta`` keys under
which the parser keeps a call's name and argument count as written, and the tables of the
node kinds the binder binds from function calls (``CALL_NAMES``, ``WINDOW_CALLS``) with
PostgreSQL's names for them.
"""

from __future__ import annotations

from matview.sql.dialect_nodes import (
    DatePartCall,
    DateTruncCall,
    JsonbAggCall,
    OctetLengthCall,
    ToCharCall,
    ToJsonbCall,
)
from sqlglot import exp

ARGUMENT_COUNT = "argument_count"
"""``meta`` key of a function call: the number of arguments it was written with."""

WRITTEN_NAME = "written_name"
"""``meta`` key of a function call: its name as written, lower-case (``substr``, not
sqlglot's ``SUBSTRING``)."""


WINDOW_CALLS: dict[type[exp.Expr], str] = {
    exp.RowNumber: "row_number", exp.Rank: "rank", exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank", exp.CumeDist: "cume_dist", exp.Ntile: "ntile",
    exp.Lag: "lag", exp.Lead: "lead", exp.FirstValue: "first_value",
    exp.LastValue: "last_value", exp.NthValue: "nth_value",
}
"""The window-only functions (``sql/windows.py``), by the node sqlglot parses them into."""

CALL_NAMES: dict[type[exp.Expr], frozenset[str]] = {
    exp.Lower: frozenset({"lower"}), exp.Upper: frozenset({"upper"}),
    exp.Length: frozenset({"length", "char_length", "character_length"}),
    exp.Substring: frozenset({"substr", "substring"}), exp.Abs: frozenset({"abs"}),
    exp.StrPosition: frozenset({"strpos", "position"}),
    DatePartCall: frozenset({"date_part"}), DateTruncCall: frozenset({"date_trunc"}),
    exp.Round: frozenset({"round"}), exp.Coalesce: frozenset({"coalesce"}),
    exp.Nullif: frozenset({"nullif"}), exp.Mod: frozenset({"mod"}),
    exp.Concat: frozenset({"concat"}), exp.ConcatWs: frozenset({"concat_ws"}),
    exp.Replace: frozenset({"replace"}), exp.Greatest: frozenset({"greatest"}),
    exp.Least: frozenset({"least"}), exp.SplitPart: frozenset({"split_part"}),
    exp.RegexpReplace: frozenset({"regexp_replace"}),
    exp.Count: frozenset({"count"}), exp.Sum: frozenset({"sum"}), exp.Avg: frozenset({"avg"}),
    exp.Min: frozenset({"min"}), exp.Max: frozenset({"max"}),
    exp.LogicalAnd: frozenset({"bool_and"}), exp.LogicalOr: frozenset({"bool_or"}),
    exp.Variance: frozenset({"variance", "var_samp"}), exp.VariancePop: frozenset({"var_pop"}),
    exp.Stddev: frozenset({"stddev"}), exp.StddevSamp: frozenset({"stddev_samp"}),
    exp.StddevPop: frozenset({"stddev_pop"}), exp.Grouping: frozenset({"grouping"}),
    exp.GroupConcat: frozenset({"string_agg"}), exp.ArrayAgg: frozenset({"array_agg"}),
    JsonbAggCall: frozenset({"jsonb_agg"}), ToJsonbCall: frozenset({"to_jsonb"}),
    ToCharCall: frozenset({"to_char"}), OctetLengthCall: frozenset({"octet_length"}),
    exp.MD5: frozenset({"md5"}), exp.Encode: frozenset({"encode"}),
    exp.ArraySize: frozenset({"array_length"}),
    exp.CurrentSchemas: frozenset({"current_schemas"}),
    exp.Decode: frozenset({"decode"}),
    exp.Explode: frozenset({"unnest"}),
    exp.ExplodingGenerateSeries: frozenset({"generate_series"}),
    exp.CurrentTimestamp: frozenset({"now", "current_timestamp"}),
    exp.Localtimestamp: frozenset({"localtimestamp"}),
    exp.CurrentTime: frozenset({"current_time"}), exp.Localtime: frozenset({"localtime"}),
    exp.Uuid: frozenset({"gen_random_uuid"}),
    **{node: frozenset({name}) for node, name in WINDOW_CALLS.items()},
}
"""The node kinds the binder binds from function calls, and the names (PostgreSQL's) under
which it does; it checks their arguments' count itself (``calls.check_call``)."""


CATALOG_FUNCTIONS = frozenset({
    "format_type", "to_regtype", "pg_get_expr", "pg_get_constraintdef", "pg_get_indexdef",
    "pg_get_serial_sequence", "pg_get_userbyid", "current_setting", "current_schemas",
    "pg_encoding_to_char",
    "pg_table_is_visible", "pg_type_is_visible", "pg_collation_is_visible",
    "pg_function_is_visible", "pg_opclass_is_visible"})
"""The catalog functions ``sql.catalog_functions`` binds."""

JSON_OBJECTS = frozenset({"json_build_object", "jsonb_build_object"})
"""The object builders ``sql.json_objects`` binds."""
