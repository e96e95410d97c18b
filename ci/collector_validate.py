"""`python -m ci.collector_validate [FILES]` (`nox -s collector`): the collector judges its own config.

For each prod file (default `prod/*.yaml`):

1. render it with the real `docker compose config --format json`, every profile on,
   with nothing but `ci/dummy.env` (tierops.composebin, as `nox -s compose` does);
2. take the top-level config `otelcol_app_config`'s content and the service that
   mounts it: its image (which must be pinned by digest: the very reference the prod
   file deploys, read from it, never a second copy), the mount target, and its
   environment as compose resolved it (dummy values and the file's own defaults);
3. undo compose's `$$` escaping, so the text is what the container reads: the
   collector-side `${env:VAR}` references stay for the collector to resolve;
4. run that image's own `validate --config=<target>` with the file mounted read-only
   at the target, the service's environment, and no network.

Where no Docker daemon answers (`docker info`), step 4 is *not run*: every file is
reported as "not run (no Docker)", as a notice under GitHub Actions, never as a pass.
With --require-docker (what check.yml passes: GitHub's runners have Docker), that is
an error instead. A file whose config cannot be extracted fails in either case.

The result per file (passed, failed, not-run, with a message) is also written as JSON
to --json (default build/collector-validate.json), format 1:
`{"format": 1, "check": "collector-validate", "docker": bool, "files": [{"file",
"result", "message", "image"}]}`.
"""

from __future__ import annotations

if __name__ == "__main__":
    # Before the imports below: `launch` imports this module again under its signal
    # handlers, so an interrupt during those imports ends with 130 and one line.
    from tierops.entry import launch

    launch("ci.collector_validate")

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple

from tierops import layout
from tierops.atomic import write_bytes_atomic
from tierops.cli import guarded, parse
from tierops.composebin import DUMMY_ENV, ROOT, ComposeBinary, ComposeUnavailable, find_compose, run_config
from tierops.errors import InputError
from tierops.exitcodes import ExitCode, epilog

CONFIG_NAME = "otelcol_app_config"
RESULT_FILE = ROOT / "build" / "collector-validate.json"
FORMAT = 1
PINNED_IMAGE = re.compile(r"^[^\s@]+@sha256:[0-9a-f]{64}$")
DOCKER_PROBE_TIMEOUT_S = 20.0
# A first run pulls the collector image (a few hundred MB on a runner).
VALIDATE_TIMEOUT_S = 600.0
NOT_RUN = "not run (no Docker)"

Status = Literal["passed", "failed", "not-run"]


class Extracted(NamedTuple):
    image: str  # name[:tag]@sha256:<64 hex>, exactly as the prod file deploys it
    target: str  # where the service mounts the config
    content: str  # the config as the container reads it ($$ unescaped)
    environment: dict[str, str]  # the service's environment as compose resolved it


class Result(NamedTuple):
    file: str
    result: Status
    message: str
    image: str | None = None


def unescape(value: str) -> str:
    """compose's JSON output writes every literal `$` as `$$`; the container sees one."""
    return value.replace("$$", "$")


def extract(rendered: Mapping[str, Any], where: str) -> Extracted:
    """The collector config of one rendered file and the service that mounts it."""
    content = (rendered.get("configs") or {}).get(CONFIG_NAME, {}).get("content")
    if not isinstance(content, str):
        raise InputError(
            f"no top-level `configs.{CONFIG_NAME}.content` (inline collector config)", where=where
        )
    mounts = [
        (name, service, mount)
        for name, service in (rendered.get("services") or {}).items()
        for mount in (service.get("configs") or [])
        if isinstance(mount, Mapping) and mount.get("source") == CONFIG_NAME
    ]
    if len(mounts) != 1:
        raise InputError(f"{len(mounts)} services mount `{CONFIG_NAME}`; expected exactly one", where=where)
    name, service, mount = mounts[0]
    image = service.get("image")
    if not isinstance(image, str) or not PINNED_IMAGE.match(image):
        raise InputError(
            f"service {name}: image {image!r} is not pinned by digest (@sha256:...)", where=where
        )
    target = mount.get("target") or f"/{CONFIG_NAME}"
    environment = {
        key: unescape(value) for key, value in (service.get("environment") or {}).items() if value is not None
    }
    return Extracted(image, str(target), unescape(content), environment)


def render(binary: ComposeBinary, file: Path) -> dict[str, Any]:
    result = run_config(binary, file, env_file=DUMMY_ENV, profiles=("*",))
    if not result.ok:
        raise InputError(f"docker compose config failed: {result.error_line()}", where=layout.shown(file))
    rendered: dict[str, Any] = json.loads(result.stdout)
    return rendered


def docker_problem(docker: str) -> str | None:
    """Why no Docker daemon can run the collector here (None: one answers)."""
    try:
        probe = subprocess.run(
            [docker, "info", "--format", "{{.ServerVersion}}"],
            capture_output=True,
            text=True,
            check=False,
            timeout=DOCKER_PROBE_TIMEOUT_S,
        )
    except FileNotFoundError:
        return f"`{docker}` is not installed"
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"`{docker} info` did not answer: {error}"
    if probe.returncode != 0 or not probe.stdout.strip():
        lines = [line for line in probe.stderr.splitlines() if line.strip()]
        return (
            f"`{docker} info` found no daemon ({lines[-1].strip() if lines else f'exit {probe.returncode}'})"
        )
    return None


def docker_argv(docker: str, extracted: Extracted, config_file: Path) -> list[str]:
    argv = [docker, "run", "--rm", "--network", "none"]
    argv += ["--volume", f"{config_file}:{extracted.target}:ro"]
    for key, value in sorted(extracted.environment.items()):
        argv += ["--env", f"{key}={value}"]
    return [*argv, extracted.image, "validate", f"--config={extracted.target}"]


def run_validate(docker: str, file: str, extracted: Extracted) -> Result:
    with tempfile.TemporaryDirectory(prefix="tierops-otelcol-") as tmp:
        config_file = Path(tmp) / "config.yaml"
        config_file.write_text(extracted.content, encoding="utf-8")
        # The collector image runs as a non-root user: the mount must be readable by it.
        Path(tmp).chmod(0o755)
        config_file.chmod(0o644)
        try:
            proc = subprocess.run(
                docker_argv(docker, extracted, config_file),
                capture_output=True,
                text=True,
                check=False,
                timeout=VALIDATE_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return Result(
                file, "failed", f"validate did not finish within {VALIDATE_TIMEOUT_S:.0f} s", extracted.image
            )
    if proc.returncode == 0:
        return Result(file, "passed", "the collector's validate accepted the config", extracted.image)
    lines = [line.strip() for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    detail = " | ".join(lines[-5:]) or f"exit code {proc.returncode}"
    return Result(file, "failed", f"validate exited {proc.returncode}: {detail}", extracted.image)


def check_files(
    files: Sequence[Path], *, docker: str, binary: ComposeBinary | None, docker_missing: str | None
) -> list[Result]:
    results: list[Result] = []
    for path in files:
        shown = layout.shown(path)
        try:
            if binary is None:
                raise InputError("no Docker Compose v2 binary to render it with", where=shown)
            extracted = extract(render(binary, path), shown)
        except InputError as error:
            results.append(Result(shown, "failed", str(error)))
            continue
        except (OSError, json.JSONDecodeError) as error:
            results.append(Result(shown, "failed", f"{shown}: cannot render: {error}"))
            continue
        if docker_missing is not None:
            results.append(Result(shown, "not-run", f"{NOT_RUN}: {docker_missing}", extracted.image))
            continue
        results.append(run_validate(docker, shown, extracted))
    return results


def to_json(results: Sequence[Result], *, docker: bool) -> bytes:
    record = {
        "format": FORMAT,
        "check": "collector-validate",
        "docker": docker,
        "files": [result._asdict() for result in results],
    }
    return (json.dumps(record, indent=2) + "\n").encode("utf-8")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ci.collector_validate",
        description=__doc__,
        epilog=epilog(
            "a collector config failed validate, could not be extracted, or (--require-docker) was not run"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("files", nargs="*", type=Path, help="prod files (default: prod/*.yaml)")
    parser.add_argument(
        "--require-docker", action="store_true", help="no Docker daemon is an error, not a notice (CI)"
    )
    parser.add_argument("--docker", default="docker", help="the docker CLI (default: docker on PATH)")
    parser.add_argument(
        "--json",
        type=Path,
        default=RESULT_FILE,
        help=f"the result record (default {layout.shown(RESULT_FILE)})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    return guarded(lambda: _run(args), tool="ci.collector_validate")


def _run(args: argparse.Namespace) -> int:
    files = list(args.files) or layout.prod_files()
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    missing = docker_problem(args.docker)
    try:
        binary: ComposeBinary | None = find_compose()
    except ComposeUnavailable as error:  # every file fails, saying why
        print(f"collector validate: {error}", file=sys.stderr)
        binary = None
    results = check_files(files, docker=args.docker, binary=binary, docker_missing=missing)
    # The default's directory is the build tree's; a path the user names must have its own.
    write_bytes_atomic(args.json, to_json(results, docker=missing is None), parents=args.json == RESULT_FILE)

    for result in results:
        image = f" [{result.image}]" if result.image else ""
        print(f"{result.result:<8} {result.file}: {result.message}{image}")
    counts = {status: sum(r.result == status for r in results) for status in ("passed", "failed", "not-run")}
    print(
        f"collector validate: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['not-run']} not run; record in {layout.shown(args.json)}"
    )
    if github:
        for result in results:
            if result.result == "failed":
                print(f"::error file={result.file},title=collector validate::{_escape(result.message)}")
        if missing is not None:
            level = "error" if args.require_docker else "notice"
            print(f"::{level} title=collector validate::{NOT_RUN}: {_escape(missing)}")
    elif missing is not None:
        print(f"collector validate: {NOT_RUN}: {missing}; nothing was validated (this is not a pass)")
    failed = counts["failed"] > 0 or (missing is not None and args.require_docker)
    return ExitCode.FINDINGS if failed else ExitCode.OK


def _escape(message: str) -> str:
    return message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
