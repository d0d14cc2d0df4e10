"""BYTEA values (Python ``bytes``, Spark binary): their text forms and the functions
``encode`` and ``decode``, in the reference interpreter and in Spark, as PostgreSQL has them.

Text reads into bytes in PostgreSQL's two input formats: hex (``\\xdeadbeef``, whitespace
allowed between pairs of digits) and escape (the text's UTF-8 bytes, ``\\\\`` a backslash,
``\\ooo`` the byte of octal ``ooo``); bytes print in the hex format (``bytea_output =
hex``). ``encode``/``decode`` convert bytes to and from text in the formats ``hex``,
``base64`` (lines of 76 characters) and ``escape``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Callable
from typing import Any

from matview.ir.eval_error import EvalError

_SPACE = "[ \\t\\n\\r]"
_HEX_PREFIX = f"(?:{_SPACE}*[0-9a-fA-F]{{2}})*{_SPACE}*"
"""The longest start of a text that reads as pairs of hexadecimal digits."""
_HEX_JAVA = f"^{_HEX_PREFIX}\\z"
_HEX_FAULT = f"(?s)^{_HEX_PREFIX}(.?)(.?)"
"""The two characters after the pairs: a digit then none (an odd number of digits), else the
first of them that is no digit."""
_BASE64_BODY = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
_BASE64_SYMBOL = "[^A-Za-z0-9+/= \\t\\n\\r]"
_ESCAPE_TOKENS = "\\\\\\\\|\\\\[0-3][0-7]{2}|\\\\|[^\\\\]+"
"""The parts of escape-format text: ``\\\\``, ``\\ooo``, a lone (invalid) backslash, text."""
_DIGITS = "0123456789abcdefABCDEF"
_LINE = 76
INVALID = "invalid input syntax for type bytea"
Spark = Callable[..., Any]
"""A Spark lowering ``(F, *columns) -> Column``."""


def text_of(value: bytes) -> str:
    """``value``'s text: ``\\x`` and its bytes in lower-case hex."""
    return "\\x" + value.hex()


def spark_text(F: Any, value: Any) -> Any:
    """``text_of`` in Spark."""
    return F.concat(F.lit("\\x"), F.lower(F.hex(value)))


def parse(text: str) -> bytes:
    """The bytes spelled ``text`` (hex or escape format); ``EvalError`` when it spells none."""
    return decode_hex(text[2:]) if text.startswith("\\x") else decode_escape(text)


def decode_escape(text: str) -> bytes:
    """``decode(text, 'escape')``: the escape input format."""
    out = bytearray()
    for token in re.findall(_ESCAPE_TOKENS, text):
        if token == "\\":
            raise EvalError(INVALID)
        if token == "\\\\":
            out += b"\\"
        elif token.startswith("\\"):
            out.append(int(token[1:], 8))
        else:
            out += token.encode()
    return bytes(out)


def spark_parse(F: Any, text: Any) -> Any:
    """``parse`` in Spark: NULL where ``text`` spells no bytes."""
    return F.when(text.startswith("\\x"), spark_decode_hex(F, F.substring(text, 3, 1 << 30))
                  ).otherwise(spark_decode_escape(F, text))


def spark_decode_escape(F: Any, text: Any) -> Any:
    """``decode_escape`` in Spark: NULL where it fails."""
    tokens = F.regexp_extract_all(text, F.lit(_ESCAPE_TOKENS), F.lit(0))
    parts = F.transform(tokens, lambda t: F.when(t == "\\\\", F.unhex(F.lit("5C")))
                        .when(t == "\\", F.lit(None).cast("binary"))
                        .when(t.startswith("\\"),
                              F.unhex(F.lpad(F.conv(F.substring(t, 2, 3), 8, 16), 2, "0")))
                        .otherwise(F.encode(t, "UTF-8")))
    return F.when(~F.exists(tokens, lambda t: t == "\\"), F.aggregate(
        parts, F.unhex(F.lit("")), lambda joined, part: F.concat(joined, part)))


def spark_parse_error(F: Any, text: Any) -> Any:
    """The message of ``parse``'s error on ``text`` (where it fails)."""
    return F.when(text.startswith("\\x"), spark_hex_error(F, F.substring(text, 3, 1 << 30))
                  ).otherwise(F.lit(INVALID))


def decode_hex(text: str) -> bytes:
    """``decode(text, 'hex')``: pairs of hexadecimal digits, whitespace between pairs."""
    if re.fullmatch(_HEX_PREFIX, text) is None:
        found = re.match(_HEX_FAULT, text)
        assert found is not None
        first, second = found.groups()
        if not second and first in _DIGITS:
            raise EvalError("invalid hexadecimal data: odd number of digits")
        raise EvalError(f'invalid hexadecimal digit: "{second if first in _DIGITS else first}"')
    return bytes.fromhex(re.sub(_SPACE, "", text))


def spark_decode_hex(F: Any, text: Any) -> Any:
    """``decode_hex`` in Spark: NULL where it fails."""
    return F.when(text.rlike(_HEX_JAVA), F.unhex(F.regexp_replace(text, _SPACE, "")))


def spark_hex_error(F: Any, text: Any) -> Any:
    """The message of ``decode_hex``'s error on ``text`` (where it fails)."""
    first = F.regexp_extract(text, _HEX_FAULT, 1)
    second = F.regexp_extract(text, _HEX_FAULT, 2)
    digit = first.rlike("^[0-9a-fA-F]$")
    bad = F.when(digit, second).otherwise(first)
    return F.when(digit & (second == ""), F.lit("invalid hexadecimal data: odd number of digits")
                  ).otherwise(F.concat(F.lit('invalid hexadecimal digit: "'), bad, F.lit('"')))


def decode_base64(text: str) -> bytes:
    """``decode(text, 'base64')``: whitespace ignored, padded to groups of four."""
    symbol = re.search(_BASE64_SYMBOL, text)
    if symbol is not None:
        raise EvalError(f'invalid symbol "{symbol.group()}" found while decoding base64 '
                        "sequence")
    body = re.sub(_SPACE, "", text)
    if re.fullmatch(_BASE64_BODY, body) is None:
        raise EvalError("invalid base64 end sequence")
    return binascii.a2b_base64(body)


def spark_decode_base64(F: Any, text: Any) -> Any:
    """``decode_base64`` in Spark: NULL where it fails."""
    body = F.regexp_replace(text, _SPACE, "")
    return F.when(body.rlike(f"^{_BASE64_BODY}\\z"), F.unbase64(body))


def spark_base64_error(F: Any, text: Any) -> Any:
    """The message of ``decode_base64``'s error on ``text`` (where it fails)."""
    symbol = F.regexp_extract(text, f"({_BASE64_SYMBOL})", 1)
    return F.when(symbol != "", F.concat(F.lit('invalid symbol "'), symbol, F.lit(
        '" found while decoding base64 sequence'))).otherwise(
        F.lit("invalid base64 end sequence"))


def encode_base64(value: bytes) -> str:
    """``encode(value, 'base64')``: in lines of 76 characters."""
    text = base64.b64encode(value).decode()
    return "\n".join(text[i:i + _LINE] for i in range(0, len(text), _LINE))


def spark_encode_base64(F: Any, value: Any) -> Any:
    """``encode_base64`` in Spark (whose ``base64`` may break lines as MIME does)."""
    flat = F.regexp_replace(F.base64(value), "[\\r\\n]", "")
    return F.regexp_replace(flat, f"(.{{{_LINE}}})(?=.)", "$1\n")


def encode_escape(value: bytes) -> str:
    """``encode(value, 'escape')``: a NUL byte and bytes from 0x80 as ``\\ooo``, a
    backslash doubled, the other bytes as their characters."""
    return "".join(f"\\{b:03o}" if b == 0 or b >= 0x80 else "\\\\" if b == 0x5C else chr(b)
                   for b in value)


def spark_encode_escape(F: Any, value: Any) -> Any:
    """``encode_escape`` in Spark: byte by byte, through their hex digits."""
    pairs = F.regexp_extract_all(F.hex(value), F.lit(".."), F.lit(0))
    return F.array_join(F.transform(pairs, lambda h: F.when(
        (h == "00") | (h >= "80"), F.concat(F.lit("\\"), F.lpad(F.conv(h, 16, 8), 3, "0")))
        .when(h == "5C", F.lit("\\\\")).otherwise(F.decode(F.unhex(h), "US-ASCII"))), "")


def strict(safe: Spark, message: Spark) -> Spark:
    """The Spark lowering that fails with ``message`` where ``safe`` gives NULL for text
    that is not NULL."""
    def lowering(F: Any, text: Any) -> Any:
        value = safe(F, text)
        return F.when(text.isNull() | value.isNotNull(), value).otherwise(
            F.raise_error(message(F, text)))
    return lowering


ENCODERS: dict[str, tuple[Callable[[bytes], str], Spark]] = {
    "hex": (bytes.hex, lambda F, value: F.lower(F.hex(value))),
    "base64": (encode_base64, spark_encode_base64),
    "escape": (encode_escape, spark_encode_escape),
}
"""``encode(value, format)`` by format: its meaning and its Spark lowering."""

DECODERS: dict[str, tuple[Callable[[str], bytes], Spark, Spark]] = {
    "hex": (decode_hex, spark_decode_hex, spark_hex_error),
    "base64": (decode_base64, spark_decode_base64, spark_base64_error),
    "escape": (decode_escape, spark_decode_escape, lambda F, text: F.lit(INVALID)),
}
"""``decode(text, format)`` by format: its meaning, its Spark lowering that gives NULL where
it fails, and its error's message there."""


def _bytes(value: str | bytes) -> bytes:
    return value.encode() if isinstance(value, str) else value


def octet_length(value: str | bytes) -> int:
    """``octet_length(value)``: the number of bytes of a BYTEA or of a text's UTF-8."""
    return len(_bytes(value))


def md5(value: str | bytes) -> str:
    """``md5(value)``: the MD5 digest of a BYTEA or of a text's UTF-8, in lower-case hex."""
    return hashlib.md5(_bytes(value)).hexdigest()
