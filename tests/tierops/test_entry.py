"""Every entry point survives the terminal it runs in: locale, closed pipe, Ctrl-C, SIGTERM.

Each behaviour is checked once on a real `python -m` process (tierops/entry.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import FLEET
from tests.rollout.diffkit import GIT_ENV, git
from tierops.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[2]
PROD_FILE = "GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"


def _env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in GIT_ENV.items() if not key.startswith(("LC_", "PYTHON"))}
    env.pop("LANG", None)
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def _repo_with_cafe(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "prod").mkdir(parents=True)
    text = (FLEET / "prod" / PROD_FILE).read_text(encoding="utf-8")
    (repo / "prod" / PROD_FILE).write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    first = text.index("    container_name:")
    edited = text[:first] + '    labels: {note: "café ☕ 😀"}\n' + text[first:]
    (repo / "prod" / PROD_FILE).write_text(edited, encoding="utf-8")
    return repo


def test_diff_writes_in_any_locale_escaping_what_it_cannot_encode(tmp_path: Path) -> None:
    repo = _repo_with_cafe(tmp_path)
    argv = [sys.executable, "-m", "rollout", "diff", "--base", "HEAD"]
    ascii_run = subprocess.run(
        argv, cwd=repo, env=_env(LC_ALL="C", PYTHONUTF8="0"), capture_output=True, check=False
    )
    assert ascii_run.returncode == ExitCode.OK, ascii_run.stderr
    # An ASCII locale gets UTF-8, as Python's UTF-8 mode would give it.
    assert 'note="café ☕ 😀"'.encode() in ascii_run.stdout
    latin_run = subprocess.run(
        argv, cwd=repo, env=_env(LC_ALL="C", PYTHONIOENCODING="iso-8859-1"), capture_output=True, check=False
    )
    assert latin_run.returncode == ExitCode.OK, latin_run.stderr
    # ISO-8859-1 has the e-acute as one byte; the cup of coffee is escaped, as JSON
    # would escape it, and so is a character beyond the BMP (a pair of escapes).
    assert b'note="caf\xe9 \\u2615 \\ud83d\\ude00"' in latin_run.stdout
    json_run = subprocess.run(
        [*argv, "--format", "json"],
        cwd=repo,
        env=_env(LC_ALL="C", PYTHONIOENCODING="iso-8859-1"),
        capture_output=True,
        check=False,
    )
    assert json_run.returncode == ExitCode.OK, json_run.stderr
    assert "café ☕ 😀" in json.dumps(json.loads(json_run.stdout.decode("iso-8859-1")), ensure_ascii=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["validators.compose", "--list-variables", "--compose", "pinned"],
        # argparse itself swallows a write error; the help still ends with 141.
        ["rollout", "diff", "--help"],
    ],
)
def test_a_closed_pipe_ends_the_run_quietly_with_141(argv: list[str]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first write: every write fails
    try:
        proc = subprocess.run(
            [sys.executable, "-m", *argv],
            cwd=ROOT,
            # Unbuffered, as CI often runs: argparse's own write meets the closed pipe.
            env=_env(PYTHONUNBUFFERED="1"),
            stdout=write_end,
            stderr=subprocess.PIPE,
            check=False,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == ExitCode.PIPE
    assert proc.stderr == b""


@pytest.mark.parametrize(
    ("argv", "closed", "code"),
    [
        (["validators", "--list-rules"], ">&-", ExitCode.OK),
        (["rollout", "diff", "--help"], ">&-", ExitCode.OK),
        (["ci.record", "--help"], ">&-", ExitCode.OK),
        (["rollout", "--no-such-option"], "2>&-", ExitCode.USAGE),
        (["validators", "--list-rules"], "2>&-", ExitCode.OK),
    ],
)
def test_a_command_started_without_stdout_or_stderr_keeps_its_exit_code(
    tmp_path: Path, argv: list[str], closed: str, code: int
) -> None:
    """`>&-` and `2>&-`: Python starts with no such stream; the command writes nowhere
    and its exit code is still its own."""
    shell = f'exec "$@" {closed}'
    proc = subprocess.run(
        ["sh", "-c", shell, "sh", sys.executable, "-m", *argv],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        check=False,
    )
    assert proc.returncode == code, proc.stderr
    assert b"Traceback" not in proc.stdout + proc.stderr


def _start(tmp_path: Path, script: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    marker = tmp_path / "reached"
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(marker), *args],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return proc, marker


# Pauses the import of one of a command's modules (its start-up) until the test signals it.
SLOW_START = """
import importlib.abc, pathlib, runpy, sys, time
marker = pathlib.Path(sys.argv[1])
module, paused = sys.argv[2], sys.argv[3]
class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == paused:
            marker.write_text("importing")
            time.sleep(30)
        return None
sys.meta_path.insert(0, Slow())
sys.argv = [module, *sys.argv[4:]]
runpy.run_module(module, run_name="__main__")
"""


@pytest.mark.parametrize(
    ("module", "paused", "args"),
    [
        ("rollout", "rollout.cli", ["diff"]),
        ("validators.compose", "validators.interpolation", ["--which"]),
        ("ci.comment", "ci.matrix_markdown", ["--help"]),
        ("ci.stage", "ci.stages", ["--help"]),
        ("ci.collector_validate", "tierops.composebin", ["--help"]),
    ],
)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_during_start_up_exits_130_or_143_with_one_line_and_no_traceback(
    tmp_path: Path, module: str, paused: str, args: list[str], signum: int
) -> None:
    proc, _ = _start(tmp_path, SLOW_START, module, paused, *args)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    sigint = signum == signal.SIGINT
    assert proc.returncode == (ExitCode.SIGINT if sigint else ExitCode.SIGTERM)
    assert stderr.decode().strip() == ("interrupted" if sigint else "terminated")


# Pauses the generators' atomic write between the temporary file's write and its rename.
SLOW_WRITE = """
import os, pathlib, runpy, sys, time
from tests.conftest import FLEET
marker = pathlib.Path(sys.argv[1])
def slow_fsync(fd):
    marker.write_text("writing")
    time.sleep(30)
os.fsync = slow_fsync
sys.argv = ["generators", "--write", "--prod-dir", sys.argv[2]]
runpy.run_module("generators", run_name="__main__")
"""


@pytest.mark.parametrize(
    ("signum", "code"), [(signal.SIGTERM, ExitCode.SIGTERM), (signal.SIGHUP, ExitCode.SIGHUP)]
)
def test_a_signal_during_an_atomic_write_removes_the_temporary_file(
    tmp_path: Path, signum: int, code: int
) -> None:
    """SIGTERM (CI cancelling) and SIGHUP (the terminal or session gone) alike."""
    prod = tmp_path / "prod"
    prod.mkdir()
    proc, _ = _start(tmp_path, SLOW_WRITE, str(prod))
    assert [path.name for path in prod.iterdir() if path.name.endswith(".tmp")]  # caught mid-write
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert b"Traceback" not in stderr
    assert stderr.decode().strip() == "terminated"
    assert list(prod.iterdir()) == []  # nothing half-written, no temporary file left
