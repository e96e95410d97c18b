"""`python -m rollout.rehearse [--keep] [FILES...]`: each compose file up on a real daemon, probed, down."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rollout.rehearse.docker import Docker, compose_docker, ensure_daemon, stop_daemon
from rollout.rehearse.images import ensure_images
from rollout.rehearse.run import Rehearsal
from tierops import layout
from tierops.cli import guarded, parse
from tierops.errors import InputError, UsageError

DESCRIPTION = """\
Rehearse compose files on this machine's Docker daemon.

For each FILE (default: every prod/*.yaml) the stack is brought up with an override
that changes only what cannot exist here (engine images become a stand-in speaking
SGLang's/vLLM's HTTP API, other images local builds from Debian packages, GPU
reservations and host paths go, published ports become random ones on 127.0.0.1;
every change is printed with its reason), then probed from outside: up, healthy,
front-door, server-info, restart, stop. The stack is always taken down (down -v),
also on Ctrl-C or SIGTERM, unless --keep. Images are built once, by content tag.
No image registry is ever reached. See docs/rehearsal.md.
"""

EPILOG = """\
exit codes:
  0  every probe passed on every file
  1  a probe failed (its name, the reason and the container's last log lines are printed)
  2  usage error or unreadable input
  3  no Docker daemon can be had here (the reason is printed), or a bug in tierops
  129/130/143  ended by SIGHUP/SIGINT/SIGTERM (the stack is taken down first)
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rollout.rehearse",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="*", type=Path, metavar="FILE", help="compose files (default: prod/*.yaml)"
    )
    parser.add_argument("--keep", action="store_true", help="leave each stack running after its probes")
    parser.add_argument(
        "--env-file",
        type=Path,
        help="variables for the files' interpolation (default: the fleet's ci/dummy.env; never real secrets)",
    )
    parser.add_argument(
        "--timeout",
        type=_timeout,
        help="seconds to wait for health (default: from the file's healthchecks, at most 600)",
    )
    parser.add_argument(
        "--cold-start",
        type=_seconds,
        default=0.0,
        metavar="SECONDS",
        help="stand-in engines answer 503 for this long after they start, as a loading engine does (default: 0)",
    )
    return parser


def _timeout(text: str) -> float:
    value = _seconds(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 (excluded) to 3600")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to 3600")
    return value


def read_env(path: Path) -> dict[str, str]:
    """The env file as the validators and the Compose binary read it (no quotes, no
    `export`, a lone `\r` inside a line, a BOM only at the start); the first problem in it
    is refused with its line, never passed on as a value Compose would read otherwise."""
    from validators.interpolation import load_dummy_env  # here: only a run that rehearses

    env = load_dummy_env(path, str(path))
    if env.problems:
        first = env.problems[0]
        more = f" ({len(env.problems) - 1} more problems)" if len(env.problems) > 1 else ""
        raise InputError(
            f"{first.message}{more}",
            where=f"{first.path}:{first.line}:{first.col}",
            hint=f"`python -m validators.compose --env-file {path}` lists them all",
        )
    return {value.name: value.value for value in env.values}


def say(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(CLEAR)  # the progress line goes before the result replaces it
        sys.stderr.flush()
    print(text, flush=True)


# On a terminal, the probe under way is one line on stderr, rewritten in place; in a pipe
# or a log only the results are written, a line each.
CLEAR = "\r\x1b[K"


def progress(text: str) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"{CLEAR}  ...  {text}")
        sys.stderr.flush()


def run(args: argparse.Namespace) -> int:
    files = args.files or layout.prod_files()
    if not files:
        raise UsageError("no compose files given and none in the fleet's prod/", where=str(layout.prod_dir()))
    for file in files:
        if not file.is_file():
            raise UsageError("no such file", where=str(file))
    env_file = args.env_file or layout.dummy_env()
    values = read_env(env_file) if (args.env_file or env_file.is_file()) else {}
    daemon = ensure_daemon(Path("/var/tmp/tierops-rehearse"))
    try:
        return _rehearse_all(files, values, say, args)
    finally:
        if not args.keep:  # a kept stack needs its daemon
            stop_daemon(daemon)


def _rehearse_all(
    files: list[Path], values: dict[str, str], say: Callable[[str], None], args: argparse.Namespace
) -> int:
    base = compose_docker()
    docker = Docker({**base.env, **values})
    built = ensure_images(docker, say)
    state = f"built {', '.join(built.built)}" if built.built else "all cached"
    say(f"rehearse: images ready in {built.seconds:.1f} s ({state})")
    failed = []
    for file in files:
        say(f"rehearse: {file}")
        started = time.monotonic()
        result = Rehearsal(
            docker,
            file.resolve(),
            built.tags,
            say,
            timeout=args.timeout,
            keep=args.keep,
            cold_start=args.cold_start,
            progress=progress,
        ).run()
        verdict = "ok" if result.failed is None else f"FAILED at {result.failed}"
        say(f"rehearse: {file}: {verdict} in {time.monotonic() - started:.1f} s")
        if result.failed is not None:
            failed.append(f"{file} ({result.failed})")
    if failed:
        say(f"rehearse: {len(failed)} of {len(files)} file(s) failed: {', '.join(failed)}")
        return 1
    say(f"rehearse: {len(files)} file(s) rehearsed, every probe passed")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parsed = parse(_parser(), argv)
    if isinstance(parsed, int):
        return parsed
    return guarded(lambda: run(parsed), tool="rollout.rehearse")


if __name__ == "__main__":
    sys.exit(main())
