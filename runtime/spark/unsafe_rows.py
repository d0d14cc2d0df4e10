"""Arrow rows as the bytes of Spark's ``UnsafeRow``s, made in the driver's Python process.

An ``UnsafeRow`` of n fields is a null bit set (``ceil(n / 64)`` little-endian 64-bit words,
bit i of the set for field i) and then one 8-byte word per field. A field of a fixed-width
type keeps its value in its word: a ``long``, ``double`` or timestamp (microseconds since
the epoch, in UTC) all eight bytes; an ``int`` or date (days since the epoch), ``short``,
``byte`` or ``boolean`` its low 4, 2 or 1 bytes, the rest zero; a NULL field a zero word
(with its bit set). This is what Spark's ``UnsafeRowWriter`` writes for those types, so rows
made here are the same bytes, compared and hashed alike. Rows of other types (text,
decimals, 4-byte floats, nested values) keep variable-length parts or are written other
ways: those tables are converted by Spark itself (``templates.Slot`` reads them from
Arrow in the JVM).

A slot's live rows so enter the JVM as a byte array (``SlotRows.point``, which points its
padding rows at one row of NULLs), with no Arrow file written and read and no conversion of
Arrow batches to rows there. Inside ``sent_together`` the rows of every slot bound wait and
go in one JVM call, made before the next collect (``jvm_plans.to_arrow``: ``send``) or at
its end: a recursive view's step binds some 150 slots in 25 rounds, and a JVM call costs
about a millisecond.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

_MASKS = {1: 0xFF, 2: 0xFFFF, 4: 0xFFFFFFFF}
"""The bits a word keeps of a value of 1, 2 or 4 bytes (its low bytes, the rest zero)."""


def fixed_width(schema: pa.Schema) -> bool:
    """Whether every field of ``schema`` is of a type whose rows ``unsafe_rows`` makes."""
    return all(_word_type(f.type) is not None for f in schema)


def row_size(fields: int) -> int:
    """The bytes of an ``UnsafeRow`` of ``fields`` fixed-width fields."""
    return 8 * ((fields + 63) // 64 + fields)


def unsafe_rows(table: pa.Table) -> bytes:
    """The ``UnsafeRow`` bytes of ``table``'s rows (of a ``fixed_width`` schema), each with
    one more boolean field, true (a slot's live rows: ``templates.Slot``), one after the
    other, each ``row_size(table.num_columns + 1)`` bytes."""
    fields = table.num_columns + 1
    bits = (fields + 63) // 64
    words = np.zeros((table.num_rows, bits + fields), np.uint64)
    for i, column in enumerate(table.columns):
        array = column.combine_chunks()
        kind = _word_type(array.type)
        assert kind is not None, f"{array.type} has no fixed-width UnsafeRow word"
        words[:, bits + i] = _words(array, kind)
        if array.null_count:
            nulls = np.asarray(array.is_null().to_numpy(zero_copy_only=False))
            words[nulls, i >> 6] |= np.uint64(1 << (i & 63))
    words[:, bits + fields - 1] = 1
    return words.tobytes()


@dataclass
class _Waiting:
    """Slots' rows not sent yet: per slot number (``SlotRows.register``), the bytes of its
    rows, of a row, and its number of fields; ``helper`` the session's ``SlotRows``."""

    helper: Any
    rows: dict[int, tuple[bytes, int, int]] = field(default_factory=dict)


_waiting: weakref.WeakKeyDictionary[SparkSession, _Waiting] = weakref.WeakKeyDictionary()
"""Per session inside ``sent_together``, the rows waiting."""


def point(spark: SparkSession, helper: Any, slot: int, rows: bytes, fields: int) -> None:
    """Make ``rows`` (``unsafe_rows``' bytes, with ``fields`` fields) the rows of slot number
    ``slot``: now, or with the other rows waiting inside ``sent_together``."""
    waiting = _waiting.get(spark)
    if waiting is None:
        helper.point(rows, f"{slot} {len(rows)} {row_size(fields)} {fields}")
    else:
        waiting.rows[slot] = (rows, row_size(fields), fields)


@contextmanager
def sent_together(spark: SparkSession, helper: Any) -> Iterator[None]:
    """Slots bound in the block send their rows together (``send``), the rest at its end."""
    if spark in _waiting:
        yield
        return
    _waiting[spark] = _Waiting(helper)
    try:
        yield
    finally:
        send(spark)
        del _waiting[spark]


def send(spark: SparkSession) -> None:
    """Send the rows waiting for the session's slots, in one JVM call (none when none wait):
    before a plan that may read them runs."""
    waiting = _waiting.get(spark)
    if waiting is None or not waiting.rows:
        return
    parts = ";".join(f"{slot} {len(rows)} {size} {fields}"
                     for slot, (rows, size, fields) in waiting.rows.items())
    data = b"".join(rows for rows, _, _ in waiting.rows.values())
    waiting.rows = {}
    waiting.helper.point(data, parts)


def _word_type(kind: pa.DataType) -> pa.DataType | None:
    """The type ``kind``'s values are read as to fill their words (None: not fixed-width)."""
    if pa.types.is_boolean(kind):
        return pa.uint8()
    if pa.types.is_date32(kind):
        return pa.int32()
    if pa.types.is_timestamp(kind) and kind.unit == "us":
        return pa.int64()
    if pa.types.is_integer(kind) and pa.types.is_signed_integer(kind):
        return kind
    if pa.types.is_float64(kind):
        return kind
    return None


def _words(array: pa.Array, kind: pa.DataType) -> np.ndarray:
    """The words of ``array``'s values (NULLs zero), read as ``kind``."""
    if array.type != kind:
        array = array.cast(kind)
    if array.null_count:
        array = array.fill_null(pa.scalar(0, kind))
    flat = np.asarray(array.to_numpy(zero_copy_only=False))
    if flat.dtype.itemsize == 8:
        return flat.view(np.uint64)
    return flat.astype(np.int64).view(np.uint64) & np.uint64(_MASKS[flat.dtype.itemsize])
