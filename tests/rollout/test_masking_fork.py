"""The boundary reads a run's sources in a forked child where it can (issue 9).

`Masker.add_sources` parses the sources, forks a child that reads them for secrets
while the command goes on, and takes the child's secrets before anything is masked.
Each test runs in a process of its own, as a command does: single-threaded, so the
child is really forked (a pytest-xdist worker has threads, where the masker never
forks), and so a child that misbehaves cannot disturb the test run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.rollout.diffkit import new_repo

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the child is forked on Linux only"
)

# Assembled at run time so the repository's own token-shapes hook never sees a literal.
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
BASE = f"""\
services:
  engine:
    command: [sglang, serve, --api-key, k3y-of-the-base-1]
    environment:
      HF_TOKEN: {HF}
      DB_PASSWORD: "correct horse battery staple"
"""
HEAD = (
    BASE.replace("k3y-of-the-base-1", "k3y-of-the-head-2")
    + "    labels: {note: 'DB_PASS=s3cr3t-in-a-label'}\n"
)
SECRETS = ["k3y-of-the-base-1", "k3y-of-the-head-2", HF, "correct horse battery staple", "s3cr3t-in-a-label"]

# Reads BASE and HEAD with add_sources (after SETUP), then serially in a second masker,
# and prints what both found as JSON.
SCRIPT = """\
import json, os, signal, sys, time
from rollout import masking
from rollout.masking import Masker

base, head = sys.argv[1].encode(), sys.argv[2].encode()
parent = os.getpid()
{setup}
masker = Masker()
masker.add_sources([base, head])
reading = masker._reading
masker.settle()
reaped = True
if reading is not None:
    try:
        os.waitpid(reading[0], os.WNOHANG)
        reaped = False
    except ChildProcessError:
        pass
serial = Masker()
serial.add_source(base)
serial.add_source(head)
print("after: " + str(signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])), file=sys.stderr)
print(json.dumps({{
    "forked": reading is not None,
    "reaped": reaped,
    "pending": masker._reading is not None,
    "same": list(masker._shown) == list(serial._shown),
    "found": len(masker._shown),
    "multiline": masker._multiline == serial._multiline,
}}))
"""


def _run(setup: str = "") -> tuple[dict[str, object], subprocess.CompletedProcess[str]]:
    code = SCRIPT.format(setup=textwrap.dedent(setup))
    proc = subprocess.run(
        [sys.executable, "-c", code, BASE, HEAD],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1]), proc


def test_a_child_reads_the_sources_and_finds_what_the_serial_reading_finds() -> None:
    result, _ = _run()
    assert result == {
        "forked": True,
        "reaped": True,
        "pending": False,
        "same": True,
        "found": result["found"],
        "multiline": True,
    }
    assert isinstance(result["found"], int) and result["found"] > 0


@pytest.mark.parametrize(
    ("setup", "forked"),
    [
        # no fork at all, or one that fails
        ("del os.fork", False),
        ("def fail(): raise OSError(11, 'Resource temporarily unavailable')\nos.fork = fail", False),
        # another thread alive: a fork would copy a lock it may hold
        ("import threading\nthreading.Thread(target=time.sleep, args=(2,), daemon=True).start()", False),
        # the child fails before reading, or dies while reading
        ("def fail(parent): raise OSError('no prctl here')\nmasking._die_with = fail", True),
        (
            """\
        add = Masker.add_source
        def die(self, data):
            if os.getpid() != parent:
                os.kill(os.getpid(), signal.SIGKILL)
            add(self, data)
        Masker.add_source = die
        """,
            True,
        ),
        # the child sends something that is not its result
        (
            """\
        def garbage(self, sources, parent, read_end, write_end, interrupts):
            os.write(write_end, b"not marshal data")
            os._exit(0)
        Masker._read_in_child = garbage
        """,
            True,
        ),
    ],
    ids=["no fork", "fork fails", "threads", "child fails", "child killed", "garbage"],
)
def test_without_a_working_child_the_sources_are_read_here(setup: str, forked: bool) -> None:
    result, _ = _run(setup)
    assert result["forked"] is forked
    assert result["same"] and result["multiline"]
    assert result["reaped"] and not result["pending"]
    assert result["found"]


def test_a_child_prints_nothing() -> None:
    result, proc = _run(
        """\
        add = Masker.add_source
        def noisy(self, data):
            if os.getpid() != parent:
                print("from the child", flush=True)
                print("from the child", file=sys.stderr, flush=True)
                os.write(1, b"from the child\\n")
                os.write(2, b"from the child\\n")
            add(self, data)
        Masker.add_source = noisy
        """
    )
    assert result["forked"] and result["same"]
    assert "from the child" not in proc.stdout + proc.stderr


def test_a_child_does_not_outlive_its_parent(tmp_path: Path) -> None:
    """Even a parent killed without a chance to clean up takes its child with it."""
    code = textwrap.dedent(
        """\
        import os, sys, time
        from rollout.masking import Masker
        parent = os.getpid()
        add = Masker.add_source
        def slow(self, data):
            if os.getpid() != parent:
                time.sleep(60)
            add(self, data)
        Masker.add_source = slow
        masker = Masker()
        masker.add_sources([sys.argv[1].encode()])
        print(masker._reading[0], flush=True)
        time.sleep(60)
        """
    )
    with subprocess.Popen(
        [sys.executable, "-c", code, BASE],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            child = int(proc.stdout.readline())
            assert _alive(child)
        finally:
            proc.kill()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped by init has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    state = next(line for line in status.splitlines() if line.startswith("State:"))
    return "zombie" not in state and "dead" not in state


def test_the_boundary_waits_for_its_child_when_nothing_was_masked() -> None:
    code = textwrap.dedent(
        """\
        import os, sys
        from rollout.masking import boundary
        with boundary() as masker:
            masker.add_sources([sys.argv[1].encode()])
            pid = masker._reading[0]
        try:
            os.waitpid(pid, os.WNOHANG)
            print("not reaped")
        except ChildProcessError:
            print("reaped", len(masker._shown) > 0)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, BASE],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.stdout.strip() == "reaped True", proc.stderr


def test_the_diff_command_masks_what_its_child_found(tmp_path: Path) -> None:
    """`python -m rollout diff` as an operator runs it (a process of its own: forked)."""
    repo = new_repo(tmp_path, {"prod/x.yaml": BASE}, origin=False)
    (repo / "prod" / "x.yaml").write_text(HEAD, encoding="utf-8")
    for form in ("text", "json", "markdown"):
        proc = subprocess.run(
            [sys.executable, "-m", "rollout", "diff", "--base", "HEAD", "--format", form],
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert "<secret sha256:" in proc.stdout
        for secret in SECRETS:
            assert secret not in proc.stdout + proc.stderr, (form, secret)


def test_an_interrupt_is_held_back_across_the_fork_only() -> None:
    """Ctrl-C at the fork itself would run the command's own code in the child; it is
    held back there, and let in again in both processes."""
    result, proc = _run(
        """\
        def held():
            return signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        fork = masking._fork
        def spy():
            print("at the fork:", held(), file=sys.stderr)
            return fork()
        masking._fork = spy
        add = Masker.add_source
        def child_mask(self, data):
            if os.getpid() != parent:
                os.write(write_to_test, f"in the child: {held()}\\n".encode())
            add(self, data)
        Masker.add_source = child_mask
        write_to_test = os.dup(2)
        """
    )
    assert result["forked"] and result["same"]
    assert "at the fork: True" in proc.stderr
    assert "in the child: False" in proc.stderr
    assert "in the child: True" not in proc.stderr
    assert "after: False" in proc.stderr
