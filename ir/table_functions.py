"""The registry of table functions: each is declared once with its output columns, its Python
meaning (the rows it yields for one argument tuple, used by the reference semantics) and its
Spark lowering.

The Spark lowering ``spark(F, arg_types, limit, literals, *columns) -> Column`` builds an
ARRAY column holding the function's rows (scalars when it has one column, else structs with
fields ``c0, c1, ...``); the ``FlatMap`` step explodes it. ``literals`` holds the value of
each argument that is a literal (``NOT_LITERAL`` for the others). It receives
``pyspark.sql.functions`` as ``F`` so that this module never imports Spark, and it uses native
functions only.

A function whose arguments ask for more than ``limit`` rows from one input row raises
``TooManyRows`` (Python) or fails the Spark job with the same message, before building them.
NULL arguments yield no rows, as in PostgreSQL (except where a function says otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from matview.ir import jsonb
from matview.ir.functions import EvalError
from matview.ir.intervals import Interval, shift
from matview.ir.scalar import Call, Lit, type_of
from matview.ir.types import (
    BIGINT,
    INT,
    INTEGER_KINDS,
    JSONB,
    TEXT,
    TIMESTAMP,
    TIMESTAMPTZ,
    Kind,
    SqlType,
    array_of,
)

DEFAULT_ROW_LIMIT = 1_000_000
"""Rows one input row may ask of one table function unless the connection sets another."""


class TooManyRows(EvalError):
    """A table function's arguments ask for more rows than the limit."""


def too_many_rows_message(name: str, limit: int) -> str:
    return (f"{name} would produce more than {limit} rows for one input row "
            "(raise the limit with matview.connect(max_table_function_rows=...))")


@dataclass(frozen=True)
class TableFunction:
    """A registered table function; ``columns`` maps argument types to output column types
    (raising ``TypeError`` when the arguments do not fit) and ``names`` gives the default
    names of its columns (None: the function's name, for one column)."""

    name: str
    columns: Callable[[list[SqlType]], tuple[SqlType, ...]]
    python: Callable[..., list[tuple[object, ...]]]
    spark: Callable[..., Any]
    arity: tuple[int, int]
    names: tuple[str, ...] | None = None
    handles_null: bool = False
    costly: bool = False
    """Whether its cost is unbounded in its arguments (a regular expression can backtrack
    without end): its rows are computed only in Spark, never in the driver while planning."""

    def column_names(self, arg_types: list[SqlType]) -> tuple[str, ...]:
        if self.names is not None:
            return self.names
        return (self.name,) * len(self.columns(arg_types))


REGISTRY: dict[str, TableFunction] = {}


def register(fn: TableFunction) -> TableFunction:
    REGISTRY[fn.name] = fn
    return fn


def lookup(name: str) -> TableFunction:
    if name not in REGISTRY:
        raise KeyError(f"unknown table function {name}")
    return REGISTRY[name]


def output_types(call: Call, input_types: Sequence[SqlType]) -> tuple[SqlType, ...]:
    """The types of the columns ``call`` appends, over rows of ``input_types``."""
    return lookup(call.func).columns([type_of(a, input_types) for a in call.args])


def rows(call_name: str, args: Sequence[object], limit: int) -> list[tuple[object, ...]]:
    """The rows table function ``call_name`` yields for evaluated ``args``."""
    fn = lookup(call_name)
    if not fn.handles_null and any(a is None for a in args):
        return []
    return fn.python(limit, *args)


# ---- generate_series --------------------------------------------------------------------


def _series_types(types: list[SqlType]) -> tuple[SqlType, ...]:
    kinds = {t.kind for t in types[:2]} - {Kind.NULL}
    if kinds <= {Kind.DATE, Kind.TIMESTAMP, Kind.TIMESTAMPTZ} and kinds:
        if len(types) != 3 or types[2].kind not in (Kind.INTERVAL, Kind.NULL):
            raise TypeError("generate_series over timestamps needs an interval step")
        return (TIMESTAMPTZ,) if Kind.TIMESTAMPTZ in kinds else (TIMESTAMP,)
    if not all(t.kind in INTEGER_KINDS + (Kind.NULL,) for t in types):
        shown = ", ".join(str(t) for t in types)
        raise TypeError(f"function generate_series({shown}) does not exist")
    return (BIGINT,) if any(t.kind is Kind.BIGINT for t in types) else (INT,)


def _series_count(start: int, stop: int, step: int) -> int:
    if step == 0:
        raise EvalError("step size cannot equal zero")
    return max(0, (stop - start) // step + 1)


def _approx_micros(step: Interval) -> int:
    """A step's length in microseconds, counting a month as 30 days (for the row limit)."""
    return (step.months * 30 + step.days) * 86_400_000_000 + step.micros


def _series(limit: int, start: Any, stop: Any, step: Any = 1) -> list[tuple[object, ...]]:
    if isinstance(start, date | datetime):
        if step.is_zero:
            raise EvalError("step size cannot equal zero")
        first = datetime(start.year, start.month, start.day) if type(start) is date else start
        last = datetime(stop.year, stop.month, stop.day) if type(stop) is date else stop
        approx = _approx_micros(step)
        span = (last - first) // timedelta(microseconds=1)
        if approx != 0 and span * approx >= 0 and abs(span) // abs(approx) + 1 > limit:
            raise TooManyRows(too_many_rows_message("generate_series", limit))
        out: list[tuple[object, ...]] = []
        k = 0
        while True:
            value = shift(first, step.scaled(k))
            if (approx > 0 and value > last) or (approx < 0 and value < last) or approx == 0:
                break
            out.append((value,))
            k += 1
        return out
    count = _series_count(start, stop, step)
    if count > limit:
        raise TooManyRows(too_many_rows_message("generate_series", limit))
    return [(start + i * step,) for i in range(count)]


def _spark_series(F: Any, types: list[SqlType], limit: int, literals: Sequence[object],
                  start: Any, stop: Any, step: Any = None) -> Any:
    if _series_types(types)[0] in (TIMESTAMP, TIMESTAMPTZ):
        return _spark_timestamp_series(F, _literal_interval(literals[2]), limit, start, stop)
    out_type = "bigint" if _series_types(types) == (BIGINT,) else "int"
    start, stop = start.cast("bigint"), stop.cast("bigint")
    step = F.lit(1).cast("bigint") if step is None else step.cast("bigint")
    count = F.when((stop == start) | ((stop > start) == (step > 0)),
                   F.floor((stop - start) / step) + 1).otherwise(F.lit(0))
    message = too_many_rows_message("generate_series", limit)
    empty = F.array().cast(f"array<{out_type}>")
    return (F.when(step == 0, F.raise_error(F.lit("step size cannot equal zero")))
            .when(start.isNull() | stop.isNull() | step.isNull(), F.lit(None))
            .when(count > limit, F.raise_error(F.lit(message)))
            .when(count == 0, empty)
            .otherwise(F.sequence(start, stop, step).cast(f"array<{out_type}>")))


def _spark_timestamp_series(F: Any, interval: Interval, limit: int, start: Any,
                            stop: Any) -> Any:
    """Over timestamps the step must be a literal interval (its direction decides which
    bound is the end, and Spark's ``sequence`` rejects a step pointing away from it)."""
    approx = _approx_micros(interval)
    start, stop = start.cast("timestamp"), stop.cast("timestamp")
    span = F.unix_micros(stop) - F.unix_micros(start)
    message = too_many_rows_message("generate_series", limit)
    empty = F.array().cast("array<timestamp>")
    if approx == 0:
        return F.when(start.isNull() | stop.isNull(), F.lit(None)).otherwise(
            F.raise_error(F.lit("step size cannot equal zero")))
    toward = span >= 0 if approx > 0 else span <= 0
    spark_step = F.make_interval(F.lit(0), F.lit(interval.months), F.lit(0),
                                 F.lit(interval.days), F.lit(0), F.lit(0),
                                 F.lit(interval.micros / 1_000_000).cast("decimal(18,6)"))
    return (F.when(start.isNull() | stop.isNull(), F.lit(None))
            .when(~toward, empty)
            .when(F.abs(span) / abs(approx) + 1 > limit, F.raise_error(F.lit(message)))
            .otherwise(F.sequence(start, stop, spark_step)))


def _literal_interval(value: object) -> Interval:
    if not isinstance(value, Interval):
        raise TypeError("generate_series over timestamps needs a literal interval step")
    return value


register(TableFunction("generate_series", _series_types, _series, _spark_series, (2, 3)))


# ---- unnest -------------------------------------------------------------------------------


def _unnest_types(types: list[SqlType]) -> tuple[SqlType, ...]:
    if types[0].kind is Kind.NULL:
        return (TEXT,)
    if types[0].kind is not Kind.ARRAY or types[0].element is None:
        raise TypeError(f"function unnest({types[0]}) does not exist")
    element = types[0].element
    return (TEXT if element.kind is Kind.NULL else element,)


register(TableFunction(
    "unnest", _unnest_types, lambda limit, values: [(v,) for v in values],
    lambda F, types, limit, literals, array: array, (1, 1)))


# ---- string_to_table ------------------------------------------------------------------------


def _text_args(name: str) -> Callable[[list[SqlType]], tuple[SqlType, ...]]:
    def columns(types: list[SqlType]) -> tuple[SqlType, ...]:
        for t in types:
            if t.kind not in (Kind.TEXT, Kind.NULL):
                raise TypeError(f"function {name} does not accept {t}")
        return (TEXT,)
    return columns


def _string_to_table(limit: int, text: str | None,
                     sep: str | None) -> list[tuple[object, ...]]:
    if text is None or text == "":
        return []
    if sep is None:
        return [(ch,) for ch in text]
    if sep == "":
        return [(text,)]
    return [(part,) for part in text.split(sep)]


_REGEX_SPECIAL = r"([\\^$.|?*+()\[\]{}])"


def _spark_string_to_table(F: Any, types: list[SqlType], limit: int,
                           literals: Sequence[object], text: Any, sep: Any) -> Any:
    quoted = F.regexp_replace(sep, _REGEX_SPECIAL, r"\\\\$1")
    return (F.when(text.isNull(), F.lit(None))
            .when(text == "", F.array().cast("array<string>"))
            .when(sep.isNull(), F.split(text, F.lit("")))
            .when(sep == "", F.array(text))
            .otherwise(F.split(text, quoted, -1)))


register(TableFunction("string_to_table", _text_args("string_to_table"), _string_to_table,
                       _spark_string_to_table, (2, 2), handles_null=True))


# ---- regexp_matches ---------------------------------------------------------------------------


def _regexp_types(types: list[SqlType]) -> tuple[SqlType, ...]:
    _text_args("regexp_matches")(types)
    return (array_of(TEXT),)


def _flags(flags: str | None) -> tuple[bool, bool]:
    """(global, case-insensitive) of regexp_matches' ``flags``."""
    flags = flags or ""
    unknown = set(flags) - {"g", "i"}
    if unknown:
        raise EvalError(f"invalid regular expression option: \"{''.join(sorted(unknown))}\"")
    return "g" in flags, "i" in flags


def _regexp_matches(limit: int, text: str, pattern: str,
                    flags: str | None = None) -> list[tuple[object, ...]]:
    every, fold = _flags(flags)
    try:
        regex = re.compile(pattern, re.IGNORECASE if fold else 0)
    except re.error as error:
        raise EvalError(f"invalid regular expression: {error}") from None
    out: list[tuple[object, ...]] = []
    for match in regex.finditer(text):
        groups = match.groups() if regex.groups else (match.group(0),)
        out.append((tuple(groups),))
        if not every:
            break
    return out


def _spark_regexp_matches(F: Any, types: list[SqlType], limit: int,
                          literals: Sequence[object], text: Any, pattern: Any,
                          flags: Any = None) -> Any:
    """The pattern (and flags) must be literals: the number of capture groups decides the
    shape of each row."""
    source = literals[1]
    flag_text = None if flags is None else literals[2]
    if not isinstance(source, str) or (flags is not None and not isinstance(flag_text, str)):
        raise TypeError("regexp_matches needs a literal pattern and flags")
    every, fold = _flags(flag_text)
    groups = re.compile(source).groups
    regex = F.lit(("(?i)" if fold else "") + source)
    if groups == 0:
        matches = F.transform(F.regexp_extract_all(text, regex, 0), lambda m: F.array(m))
    else:
        parts = [F.regexp_extract_all(text, regex, g) for g in range(1, groups + 1)]
        zipped = F.arrays_zip(*parts)
        matches = F.transform(zipped, lambda s: F.array(*[s[str(i)] for i in range(groups)]))
    return matches if every else F.slice(matches, 1, 1)


register(TableFunction("regexp_matches", _regexp_types, _regexp_matches, _spark_regexp_matches,
                       (2, 3), costly=True))


# ---- jsonb ----------------------------------------------------------------------------------


def _json_args(name: str, out: tuple[SqlType, ...]) -> Callable[[list[SqlType]],
                                                               tuple[SqlType, ...]]:
    def columns(types: list[SqlType]) -> tuple[SqlType, ...]:
        if types[0].kind not in (Kind.JSONB, Kind.TEXT, Kind.NULL):
            raise TypeError(f"function {name}({types[0]}) does not exist")
        return out
    return columns


def _json_value(text: str, name: str, want: type) -> Any:
    value = jsonb.loads(text)
    if not isinstance(value, want):
        what = "an array" if want is list else "an object"
        raise EvalError(f"cannot call {name} on a value that is not {what}")
    return value


def _array_elements(as_text: bool) -> Callable[..., list[tuple[object, ...]]]:
    name = "jsonb_array_elements" + ("_text" if as_text else "")

    def elements(limit: int, text: str) -> list[tuple[object, ...]]:
        values = _json_value(text, name, list)
        return [(jsonb.element_text(v) if as_text else jsonb.dumps(v),) for v in values]
    return elements


def _each(as_text: bool) -> Callable[..., list[tuple[object, ...]]]:
    name = "jsonb_each" + ("_text" if as_text else "")

    def each(limit: int, text: str) -> list[tuple[object, ...]]:
        values = _json_value(text, name, dict)
        keys = sorted(values, key=lambda k: k.encode("utf-8"))
        return [(k, jsonb.element_text(values[k]) if as_text else jsonb.dumps(values[k]))
                for k in keys]
    return each


def _spark_elements(as_text: bool) -> Callable[..., Any]:
    def lower(F: Any, types: list[SqlType], limit: int, literals: Sequence[object],
              text: Any) -> Any:
        values = F.parse_json(text).cast("array<variant>")
        # a one-argument lambda: ``transform`` passes the index to a two-parameter function
        return F.transform(values, (lambda v: v.cast("string")) if as_text
                           else (lambda v: F.to_json(v)))
    return lower


def _spark_each(as_text: bool) -> Callable[..., Any]:
    def lower(F: Any, types: list[SqlType], limit: int, literals: Sequence[object],
              text: Any) -> Any:
        values = F.parse_json(text).cast("map<string,variant>")
        pairs = F.map_entries(values)
        return F.transform(pairs, lambda e: F.struct(
            e["key"].alias("c0"),
            (e["value"].cast("string") if as_text else F.to_json(e["value"])).alias("c1")))
    return lower


for _text in (False, True):
    _suffix = "_text" if _text else ""
    _value = TEXT if _text else JSONB
    register(TableFunction(f"jsonb_array_elements{_suffix}",
                           _json_args(f"jsonb_array_elements{_suffix}", (_value,)),
                           _array_elements(_text), _spark_elements(_text), (1, 1), ("value",)))
    register(TableFunction(f"jsonb_each{_suffix}",
                           _json_args(f"jsonb_each{_suffix}", (TEXT, _value)),
                           _each(_text), _spark_each(_text), (1, 1), ("key", "value")))


NOT_LITERAL = object()
"""The marker of an argument that is not a literal, in a Spark lowering's ``literals``."""


def literal_values(call: Call) -> tuple[object, ...]:
    """The value of each literal argument of ``call``, ``NOT_LITERAL`` for the others."""
    return tuple(a.value if isinstance(a, Lit) else NOT_LITERAL for a in call.args)
