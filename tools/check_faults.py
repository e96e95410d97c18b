"""`python -m tools.check_faults` (`nox -s check-faults`): `nox -s check` still fails on each fault it catches.

In a throwaway clone of HEAD (uncommitted changes are not in it: commit first), with
this checkout's nox environments (`nox --envdir .nox -r`), it runs the real
`nox -s check` six times:

  1. clean: it passes and writes build/check-matrix.json;
  2. clean again: the same record but for durations (a repeat run);
  3. a one-byte edit of a prod file: `generated` fails;
  4. a validator finding (an image pinned by tag, not by digest): `validate` fails,
     with a compose-hygiene finding;
  5. a variable missing from ci/dummy.env: `compose` fails, with dummy-missing findings;
  6. a compose-spec violation (`restart: 5`): `compose` fails, with a compose-config
     finding (lint's compose-spec hook is left to compose inside `check`).

Each fault is made on a clean reset of the clone. A fault counts as caught when the
check exits non-zero and its record says the named stage failed with that rule.
Prints one line per run; exits 1 when any run does not behave. stdlib only: it runs
in nox's own interpreter. Slow on purpose (six whole checks), so it is a script,
not a test; tests/tools/test_check_faults.py keeps its faults applicable.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from tierops.checkmatrix import RECORD_NAME, digest, without_durations
from tierops.exitcodes import ExitCode, epilog

ROOT = Path(__file__).resolve().parent.parent


class Fault(NamedTuple):
    name: str
    glob: str  # the fleet's files it may edit (repository-relative); the first that matches is edited
    pattern: str  # a regex: its first match is replaced
    new: str
    stage: str  # the stage whose verdict must be "fail"
    rule: str | None  # a rule id that stage must count (None: the stage counts none)


# Written against what every fleet has, never against one fleet's values: the drill runs
# on whatever prod/ holds.
FAULTS = (
    Fault(
        "a one-byte edit of a prod file",
        "prod/*.yaml",
        r"DO NOT EDIT\.",
        "DO NOT EDIT!",  # one byte, in the header comment: only the byte-identical check sees it
        "generated",
        None,
    ),
    Fault(
        "a validator finding",
        "prod/*.yaml",
        r"@sha256:[0-9a-f]{64}",
        ":latest",
        "validate",
        "compose-hygiene",
    ),
    # The first dummy a prod file needs (`${NAME}` or `${NAME:...}`) removed.
    Fault(
        "a missing dummy variable",
        "ci/dummy.env",
        r"(?m)^(?P<name>[A-Za-z_][A-Za-z0-9_]*)=.*\n",
        "",
        "compose",
        "dummy-missing",
    ),
    # Once lint's compose-spec hook; inside `check` that hook is left to compose
    # (ci/lint_scope.py), whose binary refuses `restart: 5` against its schema.
    Fault(
        "a compose-spec violation",
        "prod/*.yaml",
        r"(?m)^    restart: [a-z-]+$",
        "    restart: 5",
        "compose",
        "compose-config",
    ),
)


def apply(repo: Path, fault: Fault) -> Path:
    """Make the fault in `repo` and return the file edited; a fault that matches nothing
    raises (the fleet no longer has what it edits: the drill would prove nothing)."""
    used = "\n".join(path.read_text(encoding="utf-8") for path in sorted(repo.glob("prod/*.yaml")))
    for path in sorted(repo.glob(fault.glob)):
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(fault.pattern, text):
            name = match.groupdict().get("name")
            if name is not None and not re.search(r"\$\{" + re.escape(name) + r"\b", used):
                continue  # a dummy no prod file reads: removing it breaks nothing
            path.write_text(text[: match.start()] + fault.new + text[match.end() :], encoding="utf-8")
            return path
    raise LookupError(
        f"{fault.glob}: nothing matches {fault.pattern!r}: update tools/check_faults.py's FAULTS"
    )


def stage_of(record: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    return next(item for item in record["stages"] if item["name"] == name)


def rule_counts(stage: Mapping[str, Any]) -> dict[str, int]:
    """Findings by rule id over the stage's files and its repository cell."""
    totals: dict[str, int] = {}
    for cell in [*stage["files"].values(), stage["repository"]]:
        for rule, count in cell["counts"].items():
            totals[rule] = totals.get(rule, 0) + count
    return totals


def caught(code: int, record: Mapping[str, Any] | None, fault: Fault) -> str | None:
    """None when the check caught `fault` as it should, else what went wrong."""
    if code == 0:
        return "the check passed"
    if record is None:
        return "no record was written"
    stage = stage_of(record, fault.stage)
    if stage["verdict"] != "fail":
        return f"{fault.stage} is {stage['verdict']}, not fail"
    if fault.rule is not None and fault.rule not in rule_counts(stage):
        return f"{fault.stage} counts no {fault.rule} finding"
    return None


def failing(record: Mapping[str, Any] | None) -> str:
    if record is None:
        return "-"
    names = [item["name"] for item in record["stages"] if item["verdict"] == "fail"]
    return ", ".join(names) or "none"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def check_env() -> dict[str, str]:
    """This environment without CI's reporting hooks and with HEAD as the diff base."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("GITHUB_") and key not in ("TIEROPS_CHECK_RUN", "NOX_DEFAULT_VENV_BACKEND")
    }
    env["TIEROPS_BASE_REF"] = "HEAD"
    return env


def run_check(repo: Path, envdir: Path) -> tuple[int, float, dict[str, Any] | None]:
    """`nox -s check` in `repo`: its exit code, seconds, and the record it wrote."""
    shutil.rmtree(repo / "build", ignore_errors=True)
    argv = [sys.executable, "-m", "nox", "--envdir", str(envdir), "-r", "-s", "check"]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=repo, env=check_env(), capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    path = repo / "build" / RECORD_NAME
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    if proc.returncode != 0 and record is None:
        sys.stdout.write("".join(f"    {line}\n" for line in (proc.stdout + proc.stderr).splitlines()[-15:]))
    return proc.returncode, elapsed, record


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.check_faults",
        description=__doc__,
        epilog=epilog("a clean check failed, the two clean records differ, or a fault was not caught"),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--envdir", type=Path, default=ROOT / ".nox", help="nox's environments to use (default: .nox)"
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return ExitCode.OK if exc.code in (0, None) else ExitCode.USAGE
    bad = 0
    with tempfile.TemporaryDirectory(prefix="tierops-check-faults-") as tmp:
        repo = Path(tmp) / "repo"
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        git(ROOT, "clone", "-q", "--no-hardlinks", "--no-checkout", str(ROOT), str(repo))
        git(repo, "checkout", "-q", "--detach", commit)  # this checkout's HEAD, whatever branch
        if (ROOT / ".mypy_cache").is_dir():  # mypy's own incremental cache: a warm typecheck
            shutil.copytree(ROOT / ".mypy_cache", repo / ".mypy_cache")
        print(f"a clone of HEAD ({commit[:12]}) in {repo}; environments from {args.envdir}", flush=True)

        records: list[dict[str, Any]] = []
        for label in ("clean check", "clean check again"):
            code, elapsed, record = run_check(repo, args.envdir)
            if code != 0 or record is None:
                print(f"{label}: FAILED (exit {code}) in {elapsed:.1f} s; failing stages: {failing(record)}")
                return ExitCode.FINDINGS
            records.append(record)
            print(f"{label}: passed in {elapsed:.1f} s; record {digest(record)}", flush=True)
        same = without_durations(records[0]) == without_durations(records[1])
        print(f"the two clean records are the same but for durations: {'yes' if same else 'NO'}")
        bad += not same

        for fault in FAULTS:
            git(repo, "reset", "-q", "--hard", "HEAD")
            edited = apply(repo, fault).relative_to(repo)
            code, elapsed, record = run_check(repo, args.envdir)
            problem = caught(code, record, fault)
            verdict = "caught" if problem is None else f"NOT CAUGHT ({problem})"
            print(
                f"{fault.name} ({edited}): {verdict}: exit {code} in {elapsed:.1f} s; "
                f"{fault.stage} {'fails' if problem is None else 'expected to fail'}"
                + (f" with {fault.rule}" if fault.rule else "")
                + f"; failing stages: {failing(record)}",
                flush=True,
            )
            bad += problem is not None
    print("every fault was caught" if not bad else f"{bad} run(s) did not behave")
    return ExitCode.OK if not bad else ExitCode.FINDINGS


if __name__ == "__main__":
    raise SystemExit(main())
