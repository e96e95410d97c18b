"""A finding is data: where, which rule, how bad, what to do about it.

Rules yield findings; only the CLI turns them into text and an exit code. Positions
are 1-based (the loader converts the YAML library's 0-based marks in one place).
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple

from tierops.yamlload import START, Pos  # one position type for the loader and the findings

__all__ = ["START", "Finding", "Level", "Pos", "error", "flag_cause", "warning"]


class Level(StrEnum):
    ERROR = "error"
    WARNING = "warning"


class Finding(NamedTuple):
    path: str
    line: int
    col: int
    rule: str
    level: Level
    message: str
    # What went wrong, when two families can see it (`SERVICE --flag` for a flag that is
    # misspelt): findings of one file with one cause are one finding (runner.py).
    cause: str = ""
    # The stack data line that wrote the value (provenance.py), for a fleet prod file.
    source: str = ""

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.col, self.rule, self.message)


def flag_cause(service: str, flag: str) -> str:
    """The cause of every finding about `flag` being written on `service` (Finding.cause)."""
    return f"{service} {flag}"


def error(path: str, pos: Pos, rule: str, message: str) -> Finding:
    return Finding(path, pos.line, pos.col, rule, Level.ERROR, message)


def warning(path: str, pos: Pos, rule: str, message: str) -> Finding:
    return Finding(path, pos.line, pos.col, rule, Level.WARNING, message)
