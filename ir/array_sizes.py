"""Array sizes: ``cardinality(a)``, its number of elements, and ``array_length(a, d)``, its
length along dimension ``d``: NULL for an empty array and for any ``d`` but 1 (matview's
arrays have one dimension), as PostgreSQL. Both NULL for a NULL array.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from matview.ir.types import INT, INTEGER_KINDS, Kind, SqlType


def _returns(types: list[SqlType]) -> SqlType:
    if types[0].kind not in (Kind.ARRAY, Kind.NULL) or any(
            t.kind not in (*INTEGER_KINDS, Kind.NULL) for t in types[1:]):
        raise TypeError(f"function does not accept {', '.join(map(str, types))}")
    return INT


def array_length(array: Sequence[Any], dimension: int) -> int | None:
    return len(array) if dimension == 1 and array else None


def _spark_length(F: Any, array: Any, dimension: Any) -> Any:
    return F.when((dimension == 1) & (F.size(array) > 0), F.size(array))


FUNCTIONS = [
    ("cardinality", _returns, len,
     lambda F, array: F.when(array.isNotNull(), F.size(array)), (1, 1)),
    ("array_length", _returns, array_length, _spark_length, (2, 2)),
]
"""Name, type rule, Python meaning, Spark lowering and arity of each."""
