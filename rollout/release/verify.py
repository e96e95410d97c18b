"""The check at a commit before it is tagged: which command (the project's own tests and
check, or a recorded substitute), run in a temporary worktree in its own session
(process group), with git's credentials kept out of its environment. SIGTERM or SIGINT
ends that group and removes the worktree before the run stops.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from rollout import git
from rollout.release.record import DEFAULT_VERIFY, VERIFY_OVERRIDE, VERIFY_PASSED
from tierops.checkmatrix import RECORD_NAME, digest, failing, read_record
from tierops.errors import TieropsError, UsageError
from tierops.exitcodes import ExitCode, interrupted
from tierops.secrets import secret_key

VERIFY_ENV = "TIEROPS_RELEASE_VERIFY"


# How long the check's process group gets between SIGTERM and SIGKILL after a signal.
KILL_GRACE_SECONDS = 5.0
# For tests only: a shorter grace, so the SIGKILL path is covered without waiting 5 s.
KILL_GRACE_ENV = "TIEROPS_RELEASE_KILL_GRACE"


@dataclass(frozen=True)
class VerifyCommand:
    """The check to run at each commit, and where it came from.

    The honest-record rule: `verify: passed` is written only when the project's own
    test suite and check (`nox -s tests check`, from the commit's own noxfile) ran there
    and exited 0. Any other command, whether from --verify-command or $TIEROPS_RELEASE_VERIFY
    (which exist to substitute a fast check in tests, or a narrower one by hand), is an
    override: it still runs and must exit 0, but the record says `skipped (override)`
    with the command line and its source, so `true`, `:` or `sh -c 'exit 0'` can never
    make a tag look checked. No list of "no-op" commands is kept: any such list has holes.
    """

    tokens: tuple[str, ...]
    source: str  # "--verify-command", "$TIEROPS_RELEASE_VERIFY" or "default"

    @property
    def text(self) -> str:
        return shlex.join(self.tokens)

    @property
    def override(self) -> bool:
        return self.tokens != tuple(shlex.split(DEFAULT_VERIFY))

    def recorded(self) -> str:
        """The `verify:` value of a tag whose check exited 0."""
        if not self.override:
            return VERIFY_PASSED
        return f"{VERIFY_OVERRIDE}: `{self.text}` from {self.source} exited 0 instead of `{DEFAULT_VERIFY}`"


@dataclass(frozen=True)
class Verification:
    commit: str
    command: tuple[str, ...]
    returncode: int
    output: str
    # The digest of the check-matrix record the check wrote in the worktree
    # (tierops.checkmatrix), read before the worktree is removed; None without one.
    check_matrix: str | None = None
    # That record's bytes, as written: what a release attests (`release tag --records`).
    record_bytes: bytes | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def command_text(self) -> str:
        return shlex.join(self.command)


def verify_command(option: str | None, environ: Mapping[str, str]) -> VerifyCommand:
    """--verify-command, else $TIEROPS_RELEASE_VERIFY (when set and not empty), else
    `nox -s tests check`."""
    if option is not None:
        raw, source = option, "--verify-command"
    elif environ.get(VERIFY_ENV):
        raw, source = environ[VERIFY_ENV], f"${VERIFY_ENV}"
    else:
        raw, source = DEFAULT_VERIFY, "default"
    try:
        tokens = tuple(shlex.split(raw))
    except ValueError as exc:
        raise UsageError(f"cannot split the verify command {raw!r}: {exc}") from None
    if not tokens:
        raise UsageError("the verify command is empty", hint=f"unset {VERIFY_ENV} or use --no-verify")
    _program(tokens)  # fail before anything is planned or printed
    return VerifyCommand(tokens, source)


def _program(command: Sequence[str]) -> str:
    program = shutil.which(command[0])
    if program is None:
        raise UsageError(
            f"verify command {command[0]!r} not found on PATH",
            hint=f"install it (README: nox), set --verify-command or {VERIFY_ENV}, or use --no-verify",
        )
    return program


# git's per-process configuration (release.yml hands the push credential to git this
# way) and its prompts: the check never needs them.
_GIT_CREDENTIAL_ENV = re.compile(
    r"^(GIT_CONFIG_(COUNT|KEY_\d+|VALUE_\d+|PARAMETERS)|GIT_ASKPASS|SSH_ASKPASS)$"
)


def check_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment the check runs in: the caller's, without its credentials.

    The check runs code installed from PyPI; the tag's push token (GITHUB_TOKEN in
    release.yml), git's per-process credential configuration and anything named like a
    secret (tierops.secrets) stay with `release tag`. A virtualenv of the caller (nox's
    `release` session) must not leak into the check's own sessions either.
    """
    return {
        key: value
        for key, value in environ.items()
        if key != "VIRTUAL_ENV"
        and key not in git.LOCAL_ENV  # the check's git reads its worktree, never the caller's repository
        and not _GIT_CREDENTIAL_ENV.match(key)
        and not secret_key(key)
    }


class Interrupted(TieropsError):
    """SIGTERM or SIGINT arrived during the check; the check is ended and cleaned up."""

    # 128 + the signal's number (130 SIGINT, 143 SIGTERM), as the exit-code table says.
    exit_code = ExitCode.SIGTERM


class _SignalGuard:
    """While entered, SIGTERM and SIGINT do not stop this process: they are noted, and
    the running check's process group gets SIGTERM (SIGKILL after KILL_GRACE_SECONDS).
    `verify` then cleans up and raises Interrupted. The handler never raises, so no
    signal can cut the cleanup short. Outside the main thread, where Python cannot
    install handlers, it does nothing."""

    def __init__(self) -> None:
        self.received: int | None = None
        self.at = 0.0
        self.grace = kill_grace_seconds(os.environ)
        self.proc: subprocess.Popen[str] | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _SignalGuard:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, old in self._previous.items():
            signal.signal(sig, old)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received, self.at = signum, time.monotonic()
        self.terminate()

    def terminate(self) -> None:
        if self.received is not None and self.proc is not None and self.proc.returncode is None:
            _signal_group(self.proc, signal.SIGTERM)

    def overdue(self) -> bool:
        return self.received is not None and time.monotonic() - self.at > self.grace


def kill_grace_seconds(environ: Mapping[str, str]) -> float:
    """KILL_GRACE_SECONDS, or the positive number of seconds $TIEROPS_RELEASE_KILL_GRACE
    gives (the signal tests set it; anything else, or nothing, is the default)."""
    try:
        grace = float(environ.get(KILL_GRACE_ENV, ""))
    except ValueError:
        return KILL_GRACE_SECONDS
    return grace if 0 < grace < math.inf else KILL_GRACE_SECONDS


def _signal_group(proc: subprocess.Popen[str], sig: int) -> None:
    # The check leads its own session, so its pid is its process group's id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


def verify(repo: Path, commit: str, command: Sequence[str]) -> Verification:
    """Run `command` (no shell) in a temporary detached worktree of `commit`.

    The command runs in a session (process group) of its own. The worktree and everything
    the command wrote into it (nox's .nox/) are removed afterwards, whatever happened. On
    SIGTERM or SIGINT the check's whole process group is ended, the worktree removed, and
    Interrupted raised (a cancelled CI job used to leave both behind).

    When the command exits 0, the digest of the check-matrix record it wrote
    (build/check-matrix.json in the worktree, as `nox -s check` writes it) is the
    evidence the tag records; a check that wrote none gives None. When it fails, the
    output ends with one line of the stages the record says failed (a failing test's
    id among them)."""
    program = _program(command)
    tmp = Path(tempfile.mkdtemp(prefix="tierops-release-"))
    worktree = tmp / "worktree"
    output, returncode = "", -1
    check_matrix: str | None = None
    record_bytes: bytes | None = None
    with _SignalGuard() as guard:
        try:
            git.run(repo, ["worktree", "add", "--quiet", "--detach", str(worktree), commit])
            if guard.received is None:
                env = check_environment(os.environ)
                # stdin closed: a check that waits for input must fail in CI, not hang it.
                # Its own session: a signal to this process must not orphan nox's sessions,
                # and a terminal's Ctrl-C reaches the check only through the guard.
                guard.proc = subprocess.Popen(
                    [program, *command[1:]],
                    cwd=worktree,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    encoding="utf-8",
                    errors="replace",  # the check's log, shown; never a reason to crash
                    env=env,
                    start_new_session=True,
                )
                guard.terminate()  # a signal that came while it started
                output, returncode = _communicate(guard, guard.proc)
                written = read_record(worktree / "build" / RECORD_NAME)
                if returncode == 0:
                    check_matrix = digest(written) if written is not None else None
                    if written is not None:
                        record_bytes = (worktree / "build" / RECORD_NAME).read_bytes()
                elif written is not None:
                    output = _with_failures(output, commit, written)
        finally:
            if guard.proc is not None and guard.proc.returncode is None:
                # An error while it ran: never leave the check running on its own.
                _signal_group(guard.proc, signal.SIGKILL)
                guard.proc.wait()
            elif guard.proc is not None and guard.received is not None:
                # Members that outlived the leader (they ignored SIGTERM and closed stdout).
                _signal_group(guard.proc, signal.SIGKILL)
            _remove_worktree(repo, worktree, tmp)
        if guard.received is not None:
            name = signal.Signals(guard.received).name
            left = f"could not remove its worktree {worktree}" if tmp.exists() else "removed its worktree"
            error = Interrupted(
                f"{name} during the check of {commit[:12]}: ended `{shlex.join(command)}` and its process "
                f"group, {left}; {commit[:12]} and every newer commit stay untagged"
            )
            error.exit_code = ExitCode(interrupted(guard.received))
            raise error
    return Verification(commit, tuple(command), returncode, output, check_matrix, record_bytes)


def _with_failures(output: str, commit: str, record: Mapping[str, Any]) -> str:
    """The check's output ending in one line of what failed at `commit`, from the record it
    wrote: `verify at 0123456789ab: tests: 3 failed: tests/test_x.py::test_y, ...`. The
    refusal that follows it names the command and the exit code."""
    parts: list[str] = []
    for stage in record.get("stages") or ():
        if not isinstance(stage, Mapping) or stage.get("verdict") not in ("fail", "error"):
            continue
        note = " ".join(str(stage.get("note") or "").split())
        parts.append(f"{stage.get('name')}: {note}" if note else failing({"stages": [stage]})[0])
    if not parts:
        return output
    ending = "" if output.endswith("\n") or not output else "\n"
    return f"{output}{ending}verify at {commit[:12]}: {'; '.join(parts)}\n"


def _communicate(guard: _SignalGuard, proc: subprocess.Popen[str]) -> tuple[str, int]:
    """The check's output and exit code; after a signal, SIGKILL to its group once the
    grace period is over."""
    while True:
        try:
            output, _ = proc.communicate(timeout=0.5)
            return output, proc.returncode
        except subprocess.TimeoutExpired:
            if guard.overdue():
                _signal_group(proc, signal.SIGKILL)


def _remove_worktree(repo: Path, worktree: Path, tmp: Path) -> None:
    git.run(repo, ["worktree", "remove", "--force", str(worktree)], check=False)
    shutil.rmtree(tmp, ignore_errors=True)
    git.run(repo, ["worktree", "prune"], check=False)
