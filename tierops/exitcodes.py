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


def epilog(findings: str) -> str:
    """The exit-code table for an argparse epilog; `findings` says what 1 means for this tool."""
    return (
        "exit codes:\n"
        "  0  clean\n"
        f"  1  {findings}\n"
        "  2  usage error, unreadable input, or refused generation\n"
        "  3  internal error (a bug in tierops; report it with the output)\n"
    )
