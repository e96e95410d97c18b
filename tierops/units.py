"""Compose's value spellings that are numbers in disguise: durations, byte sizes, Go floats.

Docker Compose v2.40.3 is written in Go, and `docker compose config` prints what Go
prints: durations as `time.Duration.String()` (`300s` is `5m0s`), byte sizes as a
count of bytes (`1gb` is `1073741824`), and a YAML number that ends up in a string
(an environment value `1.50`) as Go's `%v` (`1.5`; `123456789.0` is `1.23456789e+08`).
Each conversion is pinned by tests against the real binary.
"""

from __future__ import annotations

import math
import re

# --------------------------------------------------------------------------- durations

_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "\u00b5s": 1_000,  # µs, micro sign
    "\u03bcs": 1_000,  # μs, Greek mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)([a-z\u00b5\u03bc]+)")


class UnitError(ValueError):
    """Not a duration or byte size in any spelling compose accepts."""


def parse_duration(text: str) -> int:
    """Go's time.ParseDuration, in nanoseconds (its float arithmetic for fractions included)."""
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise UnitError(f"invalid duration {text!r}")
    total = 0
    index = 0
    while index < len(s):
        match = _DURATION_PART.match(s, index)
        if match is None or match.group(1) in ("", "."):
            raise UnitError(f"invalid duration {text!r}")
        unit = _UNITS_NS.get(match.group(2))
        if unit is None:
            raise UnitError(f"unknown unit {match.group(2)!r} in duration {text!r}")
        whole, _, fraction = match.group(1).partition(".")
        value = int(whole or "0") * unit
        if fraction:
            # Go keeps at most the fraction digits that fit an int64, then scales in float64.
            digits, scale = 0, 1.0
            for char in fraction:
                if digits > (1 << 63) // 10:
                    break
                digits = digits * 10 + int(char)
                scale *= 10
            value += int(float(digits) * (float(unit) / scale))
        total += value
        if total > (1 << 63) - 1:
            raise UnitError(f"invalid duration {text!r}")
        index = match.end()
    return -total if negative else total


def format_duration(ns: int) -> str:
    """Go's time.Duration.String()."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < 1_000_000_000:
        for unit, size in (("ns", 1), ("\u00b5s", 1_000), ("ms", 1_000_000)):
            if u < size * 1000:
                return sign + _fraction(u, size) + unit
    seconds, frac = divmod(u, 1_000_000_000)
    text = _fraction(seconds % 60 * 1_000_000_000 + frac, 1_000_000_000) + "s"
    minutes = seconds // 60
    if minutes:
        text = f"{minutes % 60}m" + text
        hours = minutes // 60
        if hours:
            text = f"{hours}h" + text
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, rest = divmod(value, unit)
    if not rest:
        return str(whole)
    digits = str(rest).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


# --------------------------------------------------------------------------- byte sizes

# docker/go-units RAMInBytes: a number, an optional space, a binary prefix, optional i/b.
_BYTES = re.compile(r"^(\d+(?:\.\d+)*) ?([kKmMgGtTpP])?[iI]?[bB]?$")
_PREFIX = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


def parse_bytes(text: str) -> int:
    match = _BYTES.match(text)
    if match is None:
        raise UnitError(f"invalid size {text!r}")
    number = match.group(1)
    if number.count(".") > 1:
        raise UnitError(f"invalid size {text!r}")
    prefix = match.group(2)
    multiplier = _PREFIX[prefix.lower()] if prefix else 1
    return int(float(number) * multiplier)


# --------------------------------------------------------------------------- numbers


def go_float(value: float) -> str:  # noqa: PLR0911 (one return per form of the number)
    """Go's `%v` of a float64 (`fmt.Sprint`), as compose prints a YAML float it turns into text."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    from decimal import Decimal  # here: a float in a string field is rare, the import is not free

    sign, digits_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digits_tuple)
    point = len(digits) + exponent  # position of the decimal point in `digits`
    exp = point - 1
    minus = "-" if sign else ""
    # strconv.FormatFloat(f, 'g', -1, 64), which `%v` uses: the shortest digits, in
    # exponent form when the exponent is below -4 or at least 6 (1e6 prints `1e+06`).
    eprec = 6
    if exp < -4 or exp >= eprec:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{minus}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if point <= 0:
        return f"{minus}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return f"{minus}{digits}{'0' * (point - len(digits))}"
    return f"{minus}{digits[:point]}.{digits[point:]}"
