"""JSONB values: JSON text in one canonical form, the form Spark's VARIANT prints.

The canonical text has no whitespace, object keys sorted (by UTF-8 bytes, each once: the
last duplicate wins), integers and exact decimals without trailing zeros (``1.50`` is
``1.5``, ``1.0`` is ``1``), and numbers written with an exponent as Java prints a double
(``1e3`` is ``1000.0``, ``1e21`` is ``1.0E21``). Two JSONB values are equal when their
canonical texts are.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any


class JsonError(ValueError):
    """Text that is no JSON."""


class _Double(float):
    """A number written with an exponent: printed as Java prints a double."""


def loads(text: str) -> Any:
    """The JSON value of ``text``: numbers as ``int``, ``Decimal`` or ``_Double``."""
    try:
        return json.loads(text, parse_float=_number, parse_int=int,
                          parse_constant=_reject)
    except (json.JSONDecodeError, RecursionError) as error:
        raise JsonError(f"invalid input syntax for type json: {error}") from None


def _number(text: str) -> Decimal | _Double:
    return _Double(text) if "e" in text.lower() else Decimal(text)


def _reject(text: str) -> None:
    raise json.JSONDecodeError(f"unexpected {text}", text, 0)


def canonical(text: str) -> str:
    """The canonical text of the JSON ``text``."""
    return dumps(loads(text))


def dumps(value: Any) -> str:
    """The canonical text of the JSON value ``value`` (as ``loads`` returns them)."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-8"))
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{dumps(v)}"
                              for k, v in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    if isinstance(value, _Double):
        return _java_double(float(value))
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def of_scalar(value: Any) -> str:
    """``to_jsonb``: the canonical text of a non-NULL BOOLEAN, number or TEXT value (a float
    as Spark casts a DOUBLE to text, then read as JSON: ``2.0`` is ``2``; as in PostgreSQL,
    NaN and the infinities are the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``)."""
    if isinstance(value, bool | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        if value != value:
            return '"NaN"'
        if value in (float("inf"), float("-inf")):
            return '"Infinity"' if value > 0 else '"-Infinity"'
        return canonical(_java_double(value))
    if isinstance(value, Decimal):
        return _decimal(value)
    return str(int(value))


def element_text(value: Any) -> str | None:
    """A JSON value as the ``*_text`` functions return it: strings unquoted, null as NULL."""
    if value is None:
        return None
    return value if isinstance(value, str) else dumps(value)


def _decimal(value: Decimal) -> str:
    normal = value.normalize()
    if normal == normal.to_integral_value():
        return str(int(normal))
    return format(normal, "f")


def _java_double(value: float) -> str:
    """Java's ``Double.toString``: positional for 1e-3 <= |x| < 1e7, else ``d.dddE±n``."""
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        text = repr(value)
        return text if "." in text else text + ".0"
    sign, figures, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, figures))
    power = exponent + len(figures) - 1
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{power}"
