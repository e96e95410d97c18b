"""The check matrix: `nox -s check` locally, the same sessions in CI.

Every session installs exactly one pinned dependency group of pyproject.toml. With
reused environments (`nox -r`), an install is skipped while the group's pins are
unchanged (a stamp file in the venv records their hash), so a warm `nox -r -s check`
spends its time checking, not asking pip whether anything changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import nox

nox.needs_version = ">=2026.10.20"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["check"]
nox.options.error_on_external_run = True

ROOT = Path(__file__).resolve().parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")


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
    session.run("python", "-m", "generators", "--check")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check on the Python code."""
    install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the packages."""
    install(session, "typecheck")
    session.run("mypy")


@nox.session(default=False)
def tests(session: nox.Session) -> None:
    """The test suite (pytest); arguments after `--` go to pytest."""
    install(session, "test")
    session.run("python", "-m", "pytest", *session.posargs)


@nox.session
def diff(session: nox.Session) -> None:
    """Semantic diff of prod/ against $TIEROPS_BASE_REF, else the merge-base with origin/main.

    Never forwards posargs: nox hands them to every session of a chain (`nox -s check --
    -k x` would reach this one too), so the base ref comes from the environment.
    """
    install(session, "runtime")
    session.run("python", "-m", "rollout", "diff")


@nox.session
def plan(session: nox.Session) -> None:
    """The rollout plan for that diff (compose-manager payloads, commands, rollbacks)."""
    install(session, "runtime")
    session.run("python", "-m", "rollout", "plan")


@nox.session(venv_backend="none", requires=["generated", "lint", "typecheck", "diff", "plan"])
def check(session: nox.Session) -> None:
    """The main job: every check of the repository's own prod/ and code (not the tests)."""
    session.log("check: every required session passed")
