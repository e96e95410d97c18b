"""The exit-code table, in one place, shown in every `--help`.

Scripts and CI branch on these numbers; they never change meaning between tools.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FINDINGS = 1  # stale/missing/orphaned files, validator findings, changes with --exit-code
    USAGE = 2  # usage error, unreadable input, refused generation
    INTERNAL = 3  # a bug in tierops: please report it with the output
    # Interrupted by a signal: 128 + its number, the shell's convention (CI cancels with SIGTERM;
    # SIGHUP: the terminal or SSH session went away).
    SIGHUP = 129
    SIGINT = 130
    PIPE = 141  # the reader closed the pipe (`| head`): ended quietly, as SIGPIPE would
    SIGTERM = 143


def interrupted(signum: int) -> int:
    """The exit code of a run a signal ended: 128 + the signal's number."""
    return 128 + signum


def epilog(findings: str) -> str:
    """The exit-code table for an argparse epilog; `findings` says what 1 means for this tool."""
    return (
        "exit codes:\n"
        "  0  clean\n"
        f"  1  {findings}\n"
        "  2  usage error, unreadable input, or refused generation\n"
        "  3  internal error (a bug in tierops; report it with the output)\n"
        "  129/130/143  ended by SIGHUP/SIGINT/SIGTERM (128 + the signal's number)\n"
        "  141  the reader closed the pipe (`| head`); ended quietly\n"
    )
