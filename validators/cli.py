"""`python -m validators`: judge prod files against the contracts; findings and an exit code.

The only module of the package that parses arguments, prints and picks exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from tierops import layout
from tierops.cli import guarded, parse, prog
from tierops.entry import visible
from tierops.errors import UsageError
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlload import COMPOSE_ONLY_HELP, compose_files
from validators import formats
from validators.context import load_context
from validators.findings import Level
from validators.registry import ALL_IDS, CHECKS, LOADER_ID, RULES
from validators.runner import CAP, run

DEFAULT_GLOB = "prod/*.yaml"  # under the fleet's tree


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of findings")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    rules = "\n".join(f"  {rule_id:<17} {module.SUMMARY}" for rule_id, module in RULES.items())
    parser = argparse.ArgumentParser(
        prog=prog("python -m validators"),
        description=(
            "Check compose files against the contracts in validators/contracts/ (a stack's "
            "contract judges the files it claims; packs.yaml names the files of several stacks) "
            "and each engine against the flag manifest of the build its image runs. A file "
            "nothing claims gets the checks that hold for any compose file.\n\nrule families:\n"
            f"  {LOADER_ID:<17} the file reads as one YAML mapping (always on)\n{rules}"
        ),
        epilog=epilog("findings at error level (warnings too with --strict)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", type=Path, help=f"files to check (default: {DEFAULT_GLOB})")
    parser.add_argument(
        "--format",
        choices=formats.FORMATS,
        default="auto",
        help=(
            "output format; sarif is a SARIF 2.1.0 log for code scanning; json and sarif put "
            "the summary on stderr; auto is github under GitHub Actions, else text (default: auto)"
        ),
    )
    parser.add_argument(
        "--rule",
        action="append",
        choices=list(RULES),
        metavar="ID",
        help="run only this rule family (repeatable; default: all)",
    )
    parser.add_argument("--strict", action="store_true", help="warnings fail the run too (exit 1)")
    parser.add_argument("--compose-only", action="store_true", help=COMPOSE_ONLY_HELP)
    parser.add_argument(
        "--max-findings",
        type=_count,
        default=CAP,
        metavar="N",
        help=f"per file, show the first N findings and then one that counts the rest; 0 shows all (default: {CAP})",
    )
    parser.add_argument(
        "--list-rules", action="store_true", help="print the rule ids and what each checks, then exit"
    )
    parser.add_argument(
        "--list-checks",
        action="store_true",
        help="print every check, family/check, each guarded by a test (tests/validators/test_guards.py), then exit",
    )
    return parser


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    args = parse(_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: _run(args, out, err), tool="validators", stderr=err)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    if args.list_checks:
        out.write("".join(f"{check}\n" for check in CHECKS))
        return ExitCode.OK
    if args.list_rules:
        for rule_id in ALL_IDS:
            summary = (
                "the file reads as one YAML mapping (always on)"
                if rule_id == LOADER_ID
                else RULES[rule_id].SUMMARY
            )
            out.write(f"{rule_id}: {summary}\n")
        return ExitCode.OK
    named = compose_files(args.files) if args.compose_only else args.files
    if args.files and not named:
        out.write(f"no compose files among the {len(args.files)} named\n")
        return ExitCode.OK
    given = [(path, str(path)) for path in named]
    files = given or [(path, layout.shown(path)) for path in layout.prod_files()]
    if not files:
        raise UsageError(
            f"no files to check: {layout.shown(layout.prod_dir())}/*.yaml matched nothing; name files"
        )
    selected = [rule for rule in RULES if not args.rule or rule in args.rule]
    report = run(files, load_context(), selected, cap=args.max_findings)
    name = formats.resolve(args.format, dict(os.environ))
    if report.unreadable:
        code = ExitCode.USAGE
    else:
        failing = report.count(Level.ERROR) + (report.count(Level.WARNING) if args.strict else 0)
        code = ExitCode.FINDINGS if failing else ExitCode.OK
    summary = formats.summary(report.files, report.findings, report.omitted)
    try:
        out.write(visible(formats.FORMATTERS[name](report.findings)))
        for problem in report.unreadable:
            err.write(visible(f"error: {problem}\n"))
        (err if name in formats.DOCUMENTS else out).write(summary + "\n")
        out.flush()
    except BrokenPipeError:
        # `python -m validators | head -1`: the reader has what it wanted. End quietly with
        # the run's own exit code; point stdout at /dev/null so the interpreter's final
        # flush does not raise again.
        _silence(out)
    return code


def _silence(out: TextIO) -> None:
    try:
        fileno = out.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's StringIO): nothing will flush it at exit
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fileno)
    os.close(devnull)
