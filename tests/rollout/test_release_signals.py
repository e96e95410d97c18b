"""`release tag` stopped by a signal during its check: the check's process group ends,
the temporary worktree goes, and the run says so in one line (SIGTERM used to
leave both the worktree and an orphan `nox -s check` behind).

Real processes throughout: `python -m rollout release tag` runs as a subprocess whose
check (a Python script standing in for nox) starts a child of its own, reports the
pids and its working directory, and sleeps; the test then sends the signal.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout.release.verify import KILL_GRACE_ENV, KILL_GRACE_SECONDS, kill_grace_seconds
from tests.rollout.release_world import ROOT, World, git, without_progress

OVERRIDE_TAIL = (
    "from $TIEROPS_RELEASE_VERIFY replaces `nox -s tests check`: tags record it as skipped (override), never as passed\n"
    "no release tag on main yet: tagging only {head}; older commits stay untagged\n"
)

# argv[1]: the report file; argv[2]: "ignore-term" makes the grandchild ignore SIGTERM.
# The report is written once the grandchild is ready (has set its handler).
SLEEPING_CHECK = """\
import os, pathlib, signal, subprocess, sys, time
report = pathlib.Path(sys.argv[1])
ready = report.with_suffix(".ready")
grandchild = (
    "import pathlib, signal, sys, time\\n"
    + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\n" if sys.argv[2] == "ignore-term" else "")
    + "pathlib.Path(sys.argv[1]).touch()\\ntime.sleep(600)\\n"
)
child = subprocess.Popen([sys.executable, "-c", grandchild, str(ready)])
while not ready.exists():
    time.sleep(0.01)
report.with_suffix(".tmp").write_text(f"{os.getpid()} {child.pid} {os.getcwd()}")
report.with_suffix(".tmp").rename(report)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Running or stopped; a zombie (exited, not yet reaped) has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def gone(pids: list[int], within: float) -> bool:
    deadline = time.monotonic() + within
    while any(alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """pids to kill at the end whatever happened: a failing test leaves no orphans."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def start_tag(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> tuple[subprocess.Popen[str], Path, str]:
    report, script = tmp_path / "check.report", tmp_path / "sleeping_check.py"
    script.write_text(SLEEPING_CHECK, encoding="utf-8")
    command = shlex.join([sys.executable, str(script), str(report), mode])
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", command)
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout", "release", "tag", "--repo", str(world.a)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not report.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"the check never started (exit {proc.returncode}): {out}{err}")
        time.sleep(0.05)
    return proc, report, command


@pytest.mark.parametrize(
    ("sig", "mode"),
    [
        (signal.SIGTERM, "plain"),
        (signal.SIGINT, "plain"),
        (signal.SIGHUP, "plain"),  # the terminal or SSH session of a manual run gone
        # A member that ignores SIGTERM gets SIGKILL after the grace period.
        (signal.SIGTERM, "ignore-term"),
    ],
)
def test_a_signal_during_the_check_ends_its_process_group_and_removes_the_worktree(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    reaper: list[int],
    sig: signal.Signals,
    mode: str,
) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    # The SIGKILL path after a short grace instead of the production 5 s (pinned below).
    monkeypatch.setenv(KILL_GRACE_ENV, "0.5")
    proc, report, command = start_tag(world, tmp_path, monkeypatch, mode)
    reaper.append(proc.pid)
    check, grandchild, worktree = report.read_text(encoding="utf-8").split()
    reaper += [int(check), int(grandchild)]
    assert Path(worktree).is_dir() and alive(int(check)) and alive(int(grandchild))

    os.kill(proc.pid, sig)  # this process only, as a CI runner's cancel does
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    assert gone([int(check), int(grandchild)], within=5), "the check or its child outlived the run"
    assert not Path(worktree).exists()
    assert len(git(world.a, "worktree", "list").splitlines()) == 1
    assert git(world.a, "tag", "-l") == ""
    assert (proc.returncode, out) == (
        128 + sig,
        f"verify: `{command}` {OVERRIDE_TAIL.format(head=head[:12])}",
    )
    assert without_progress(err) == (
        f"{sig.name} during the check of {head[:12]}: ended `{command}` and its process group, "
        f"removed its worktree; {head[:12]} and every newer commit stay untagged\n"
    )


def test_the_grace_before_sigkill_is_five_seconds_unless_the_tests_shorten_it() -> None:
    assert KILL_GRACE_SECONDS == 5.0
    assert kill_grace_seconds({}) == 5.0
    assert kill_grace_seconds({KILL_GRACE_ENV: "0.5"}) == 0.5
    for junk in ("", "soon", "0", "-1", "nan", "inf"):
        assert kill_grace_seconds({KILL_GRACE_ENV: junk}) == 5.0, junk
