"""`python -m tools.flag_manifest extract|crosscheck <wheel>`: the engine flag manifest.

`extract` writes sorted, stable JSON (same wheel, same bytes), atomically.
`crosscheck` compares a manifest with the parser sglang itself builds from the same
wheel (see crosscheck.py) and lists every disagreement.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from tierops.atomic import write_bytes_atomic
from tierops.errors import TieropsError
from tierops.exitcodes import ExitCode, epilog
from tools.flag_manifest.crosscheck import crosscheck
from tools.flag_manifest.extract import extract
from validators.manifest import HERE


def render(manifest: dict[str, object]) -> bytes:
    return (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def _shown(path: Path) -> str:
    """The path relative to the working directory when it is below it (shorter, stable)."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tools.flag_manifest",
        description="Extract the CLI flag manifest of an sglang or vllm wheel statically (ast; never imports the engine).",
        epilog=epilog("the written manifest differs from the committed one (with --check)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("extract", help="read a wheel and write its manifest")
    run.add_argument("wheel", type=Path, help="the sglang or vllm wheel (pip download sglang==X --no-deps)")
    run.add_argument(
        "-o",
        "--output",
        type=Path,
        help="where to write (default: validators/manifest/<package>-<version>.json; '-' for stdout)",
    )
    run.add_argument(
        "--check", action="store_true", help="compare with the existing output instead of writing"
    )
    cross = commands.add_parser(
        "crosscheck",
        help="compare a manifest with the argparse parser the wheel itself builds (heavy imports stubbed)",
    )
    cross.add_argument("wheel", type=Path, help="the sglang wheel the manifest was extracted from")
    cross.add_argument(
        "--manifest",
        type=Path,
        help="the manifest to check (default: validators/manifest/<package>-<version>.json for the wheel's name)",
    )
    cross.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="K=V",
        help="an environment variable for the probe (repeatable), e.g. one that enables a conditional choice",
    )
    return parser


def _crosscheck(args: argparse.Namespace) -> int:
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"error: --env wants K=V, not {item!r}", file=sys.stderr)
            return ExitCode.USAGE
        env[key] = value
    manifest: Path = (
        args.manifest or HERE / f"{args.wheel.name.split('-')[0]}-{args.wheel.name.split('-')[1]}.json"
    )
    report = crosscheck(args.wheel, manifest, env)
    for module, problem in sorted(report.failed.items()):
        print(f"note: {module} failed under the stubs and was stubbed from there on ({problem})")
    for difference in report.differences:
        print(difference.line())
    print(
        f"{_shown(manifest)}: {report.compared} flags compared with the runtime parser "
        f"({len(report.stubbed)} third-party modules stubbed): {len(report.differences)} differences"
    )
    return ExitCode.FINDINGS if report.differences else ExitCode.OK


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _crosscheck(args) if args.command == "crosscheck" else _extract(args)
    except TieropsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code


def _extract(args: argparse.Namespace) -> int:
    manifest = extract(args.wheel)
    data = render(manifest)
    source = manifest["source"]
    assert isinstance(source, dict)
    output: Path = args.output or HERE / f"{source['package']}-{source['version']}.json"
    if str(output) == "-":
        sys.stdout.write(data.decode("utf-8"))
        return ExitCode.OK
    if args.check:
        current = output.read_bytes() if output.is_file() else b""
        if current != data:
            print(
                f"{_shown(output)}: differs from what {args.wheel.name} gives; rerun without --check to rewrite it"
            )
            return ExitCode.FINDINGS
        print(f"{_shown(output)}: up to date ({manifest['flag_count']} flags)")
        return ExitCode.OK
    write_bytes_atomic(output, data)
    print(
        f"{_shown(output)}: {manifest['flag_count']} flags from {source['wheel']} (sha256 {source['sha256'][:12]}...)"
    )
    return ExitCode.OK
