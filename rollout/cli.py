"""`python -m rollout <command>`: the only module that parses arguments and exits.

Subcommands are listed in `COMMANDS`, a plain dict of names and modules (no discovery
magic); each lives in `rollout/commands/<name>.py`. A command's module is imported when
it is needed: a diff never pays for the release tools' imports.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from rollout.diff.boundary import boundary
from tierops.cli import guarded, parse, prog
from tierops.exitcodes import epilog

COMMANDS: dict[str, str] = {
    "diff": "rollout.commands.diff",
    "plan": "rollout.commands.plan",
    "release": "rollout.commands.release",
    "apply": "rollout.commands.apply",
    "status": "rollout.commands.status",
}


def command(name: str) -> ModuleType:
    """The module of the command `name` (one of COMMANDS)."""
    return importlib.import_module(COMMANDS[name])


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with the command first in `argv` (as it is always typed), only that
    command's module is imported: of the others the top-level parser reads only names."""
    parser = argparse.ArgumentParser(
        prog=prog("python -m rollout"),
        description="Compare production files between git refs, plan their rollout, tag releases.",
        epilog=epilog("changes found (diff --exit-code) or a check failed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    chosen = argv[0] if argv and argv[0] in COMMANDS else None
    for name in COMMANDS:
        if chosen is not None and name != chosen:
            sub.add_parser(name)
            continue
        module = command(name)
        child = sub.add_parser(
            name,
            help=module.HELP,
            description=getattr(module, "DESCRIPTION", module.HELP),
            epilog=getattr(module, "EPILOG", epilog("see the command's description")),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(child)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(sys.argv[1:] if argv is None else argv), argv)
    if isinstance(args, int):
        return args
    if args.command == "release":
        # A backfill runs for minutes, one line per commit it tags: each line is its
        # progress, so it goes out when written, not when a pipe's buffer fills (CI
        # reads a pipe, which Python buffers in 8 KiB blocks).
        reconfigure = getattr(sys.stdout, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(line_buffering=True)
    # Everything the command prints, by any path, passes the masking boundary.
    with boundary():
        return guarded(lambda: int(command(args.command).run(args)), tool="rollout")
