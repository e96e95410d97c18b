"""Colour for the text diff on a terminal: additions green, removals red, changes yellow.

Only when stdout is a terminal and NO_COLOR is unset or empty (no-color.org): a pipe,
a file, CI logs and every other format stay plain text, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TextIO

GREEN, RED, YELLOW, BOLD, RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"
# "  service[, service...]: + what" and the like: the marker after the first ": ".
_MARKED = re.compile(r"^\s+[^:]*: ([+-]) ")


def wanted(stream: TextIO, environ: Mapping[str, str]) -> bool:
    return bool(environ.get("NO_COLOR", "") == "" and stream.isatty())


def colour(text: str) -> str:
    """The diff's text report with ANSI colours, line by line."""
    lines: list[str] = []
    for line in text.split("\n"):
        marked = _MARKED.match(line)
        if not line:
            lines.append(line)
        elif not line[0].isspace():
            lines.append(f"{BOLD}{line}{RESET}")
        elif marked:
            lines.append(f"{GREEN if marked.group(1) == '+' else RED}{line}{RESET}")
        elif " -> " in line:
            lines.append(f"{YELLOW}{line}{RESET}")
        else:
            lines.append(line)
    return "\n".join(lines)
