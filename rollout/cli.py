"""`python -m rollout <command>`: the only module that parses arguments and exits.

Subcommands are listed in `COMMANDS`, a plain dict (no discovery magic); each lives in
`rollout/commands/<name>.py`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from types import ModuleType

from rollout.commands import diff as diff_command
from rollout.commands import plan as plan_command
from tierops.errors import TieropsError
from tierops.exitcodes import ExitCode, epilog

COMMANDS: dict[str, ModuleType] = {
    diff_command.NAME: diff_command,
    plan_command.NAME: plan_command,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rollout",
        description="Compare production files between git refs, plan their rollout, tag releases.",
        epilog=epilog("changes found (diff --exit-code) or a check failed"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module in COMMANDS.items():
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
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed a one-line usage error
        return ExitCode.OK if exc.code == 0 else ExitCode.USAGE
    try:
        result: int = COMMANDS[args.command].run(args)
        return result
    except TieropsError as error:
        print(str(error), file=sys.stderr)
        return int(error.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return ExitCode.INTERNAL
    except Exception as exc:  # a bug: one line, the traceback only on request
        print(
            f"internal error: {type(exc).__name__}: {exc} (a bug in rollout; rerun with TIEROPS_DEBUG=1 and report it)",
            file=sys.stderr,
        )
        if os.environ.get("TIEROPS_DEBUG"):
            traceback.print_exc()
        return ExitCode.INTERNAL
