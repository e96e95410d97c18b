"""One root error class, so every entry point can turn "cannot continue" into one line.

Library code raises these; only CLI modules print them and choose the exit code.
"""

from __future__ import annotations

from tierops.exitcodes import ExitCode


class TieropsError(Exception):
    """Something the user can fix: the message says what, where, and how."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def __str__(self) -> str:
        # `where` is a path as typed or as git lists it: a line break in a file's name
        # must not start a line of its own (the entry points show the rest as \uXXXX).
        where = self.where.replace("\n", "\\u000a") if self.where else None
        text = f"{where}: {self.message}" if where else self.message
        if self.hint:
            text = f"{text}; {self.hint}"
        return text


class UsageError(TieropsError):
    """A wrong flag, target, ref or path given on the command line."""


class InputError(TieropsError):
    """An input file that is missing, unreadable or malformed."""


class RefusedError(TieropsError):
    """A request that is well-formed but would produce something wrong (refused generation)."""


class OutputError(TieropsError):
    """The machine failed us (disk full, permission denied) while writing output."""

    exit_code = ExitCode.INTERNAL
