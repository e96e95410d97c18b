"""`python -m rollout <command>`: the only module that parses arguments and exits.

Subcommands are listed in `COMMANDS`, a plain dict (no discovery magic); each lives in
`rollout/commands/<name>.py`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from types import ModuleType

from rollout.commands import diff, plan, release
from rollout.masking import boundary
from tierops.cli import guarded, parse
from tierops.exitcodes import epilog
from tierops.yamlload import no_gc

COMMANDS: dict[str, ModuleType] = {
    diff.NAME: diff,
    plan.NAME: plan,
    release.NAME: release,
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
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    # Everything the command prints, by any path, passes the masking boundary (issue 11).
    # The cyclic collector is paused for the run: a diff holds hundreds of thousands of
    # small containers and makes no cycles worth collecting, and the collector's passes
    # over them cost a tenth of the run (issue 9).
    with boundary(), no_gc():
        return guarded(lambda: int(COMMANDS[args.command].run(args)), tool="rollout")
