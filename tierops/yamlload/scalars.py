"""Plain scalars resolved as Compose's YAML library resolves them, and keys as text."""

from __future__ import annotations

import re
from typing import Any


def scalar_text(value: Any) -> str:
    """A YAML scalar as text (bools lower-case, None empty), for values read as strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def key_text(value: Any) -> str:
    """A mapping key as Compose sees it (keys are strings; `true:` is the key "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


# Plain scalars resolve like compose's YAML library (yaml.v3, resolve.go): the YAML 1.2
# core schema, where a scalar that starts like a number has its underscores removed and
# is read by Go's strconv.ParseInt with base prefixes (`0x1F`, `0b11`, `0o17`, and the
# YAML 1.1 octal `0444`), else as a float.
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL_FLOAT = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}
_BASES = {"0x": 16, "0X": 16, "0b": 2, "0B": 2, "0o": 8, "0O": 8}
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_INT64 = (-(1 << 63), (1 << 64) - 1)  # ParseInt, then ParseUint


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64) (then ParseUint): None when it is not an integer."""
    sign = 1
    body = text
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    base = 10
    if body[:2] in _BASES:
        base, body = _BASES[body[:2]], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    if not body or any(char not in _DIGITS[base] for char in body):
        return None
    if len(body.lstrip("0")) > 64:  # past int64 in any base, and never handed to int()
        return None  # (which refuses more than 4,300 digits with a ValueError)
    value = sign * int(body, base)
    return value if _INT64[0] <= value <= _INT64[1] else None


def resolve_scalar(event: Any) -> Any:
    value: str = event.value
    if event.style or event.tag == "tag:yaml.org,2002:str" or not event.implicit[0]:
        return value
    return resolve_plain(value)


def resolve_plain(value: str) -> Any:  # noqa: PLR0911 (one return per YAML type)
    if value in _NULL:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if value in _SPECIAL_FLOAT:
        return _SPECIAL_FLOAT[value]
    first = value[0]
    if not (first.isdigit() or first in "+-."):
        return value
    if value.isascii() and value.isdigit() and (first != "0" or len(value) == 1) and len(value) < 19:
        return int(value)  # a plain decimal (most numbers): what _go_int reads it as, in one call
    plain = value.replace("_", "")
    if not plain:
        return value
    number = _go_int(plain)
    if number is not None:
        return number
    if _FLOAT.fullmatch(plain):
        return float(plain)
    return value
