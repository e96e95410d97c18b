"""`python -m validators.manifest extract <wheel>`: write the engine flag manifest.

The output is sorted, stable JSON (same wheel, same bytes), written atomically.
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
from validators.manifest import HERE
from validators.manifest.extract import extract


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
        prog="python -m validators.manifest",
        description="Extract the CLI flag manifest of an sglang wheel statically (ast; never imports sglang).",
        epilog=epilog("the written manifest differs from the committed one (with --check)"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("extract", help="read a wheel and write its manifest")
    run.add_argument("wheel", type=Path, help="the sglang wheel (pip download sglang==X --no-deps)")
    run.add_argument(
        "-o",
        "--output",
        type=Path,
        help=f"where to write (default: {HERE.name}/<package>-<version>.json beside this module; '-' for stdout)",
    )
    run.add_argument(
        "--check", action="store_true", help="compare with the existing output instead of writing"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
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
    except TieropsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    print(
        f"{_shown(output)}: {manifest['flag_count']} flags from {source['wheel']} (sha256 {source['sha256'][:12]}...)"
    )
    return ExitCode.OK
