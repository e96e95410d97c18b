"""Hostile input through `python -m rollout diff`: one line, exit 2, within 2 s, never a hang.

Each case runs the real program on a real repository: a FIFO or a device in the working
tree, and 100k-deep nesting, an alias bomb and a 5 MB file both as working-tree files
and as committed refs (`--base`/`--head`). The loader's budgets (tierops/yamlload/)
refuse them before anything expensive happens.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.rollout.diffkit import ROOT, commit, new_repo, run_cli, write

BUDGET_SECONDS = 2.0  # each ends in under 2 s
ONE = "services:\n  app:\n    image: app:1\n"


def deep() -> str:
    return "[" * 100_000


def alias_bomb() -> str:
    lines = ['a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 10)}]")
    lines.append("services:\n  app:\n    image: app:1\n    command: *i")
    return "\n".join(lines) + "\n"


def five_megabytes() -> str:
    block = "".join(f"  s{number}:\n    image: app:{number}\n" for number in range(1000))
    text = "services:\n"
    while len(text) < 5 * 1024 * 1024:
        text += block.replace("  s", f"  x{len(text)}s")
    return text


def run_diff(repo: Path, *args: str) -> tuple[int, str, str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TIEROPS_BASE_REF", None)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "rollout", "diff", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=30,  # a hang fails the test instead of the session
    )
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started


def assert_one_line(code: int, out: str, err: str, elapsed: float, expected: str) -> None:
    """Exit 2; the problem is one line naming the file; no traceback; within the budget."""
    assert code == 2
    assert "Traceback" not in out + err
    lines = [line for line in (out + err).splitlines() if expected in line]
    assert len(lines) == 1, out + err
    assert elapsed < BUDGET_SECONDS, f"took {elapsed:.2f} s"


def test_a_fifo_in_the_working_tree_is_one_line_never_a_hang(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    (repo / "prod" / "x.yaml").unlink()
    os.mkfifo(repo / "prod" / "x.yaml")
    code, out, err, elapsed = run_diff(repo, "--base", "HEAD")
    assert_one_line(code, out, err, elapsed, "prod/x.yaml: is a FIFO (named pipe), not a regular file")


def test_dev_zero_linked_into_the_working_tree_is_one_line(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    (repo / "prod" / "zero.yaml").symlink_to("/dev/zero")
    code, out, err, elapsed = run_diff(repo, "--base", "HEAD")
    # A link out of the repository is refused before it is opened.
    assert_one_line(
        code, out, err, elapsed, "prod/zero.yaml: a symbolic link that leads outside the repository"
    )


def test_dev_zero_named_as_a_path_is_one_line(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    code, out, err, elapsed = run_diff(repo, "--base", "HEAD", "/dev/zero")
    assert_one_line(code, out, err, elapsed, "/dev/zero: outside the repository")


HOSTILE = [
    pytest.param(deep, "nesting deeper than 64 levels", id="100k-deep nesting"),
    pytest.param(alias_bomb, "alias expansion exceeds", id="alias bomb"),
    pytest.param(five_megabytes, "file is larger than 2 MiB", id="5 MB file"),
]


@pytest.mark.parametrize(("make", "expected"), HOSTILE)
def test_hostile_yaml_in_the_working_tree_is_one_line(tmp_path: Path, make: object, expected: str) -> None:
    assert callable(make)
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    write(repo, {"prod/x.yaml": make()})
    code, out, err, elapsed = run_diff(repo, "--base", "HEAD")
    assert_one_line(code, out, err, elapsed, expected)


@pytest.mark.parametrize(("make", "expected"), HOSTILE)
def test_hostile_yaml_at_a_ref_is_one_line(tmp_path: Path, make: object, expected: str) -> None:
    assert callable(make)
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    commit(repo, {"prod/x.yaml": make()}, "hostile")
    code, out, err, elapsed = run_diff(repo, "--base", "HEAD~1", "--head", "HEAD")
    assert_one_line(code, out, err, elapsed, expected)
    assert "(in the head, HEAD (" in out


def test_a_fifo_never_hangs_release_history_or_rollback(tmp_path: Path) -> None:
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    (repo / "prod" / "x.yaml").unlink()
    os.mkfifo(repo / "prod" / "x.yaml")
    for command in (["history", "prod/x.yaml"], ["rollback", "prod/x.yaml", "app"]):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        proc = subprocess.run(
            [sys.executable, "-m", "rollout", "release", *command],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=30,  # the masking boundary once read the FIFO and waited forever
        )
        assert "Traceback" not in proc.stdout + proc.stderr
        assert proc.returncode in (1, 2), proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("old", "new"),
    [
        # str.isdigit() takes these; int() refuses them: once an internal error (exit 3)
        ("    image: app:1\n", '    image: app:1\n    shm_size: "²"\n'),
        ("    image: app:1\n", '    image: app:1\n    labels: {tierops.rollout.order: "--5"}\n'),
        ("    image: app:1\n", '    image: app:1\n    labels: {tierops.otel.instance: "²"}\n'),
    ],
    ids=["superscript-shm-size", "double-dash-order", "superscript-instance"],
)
def test_odd_digits_in_values_are_compared_never_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], old: str, new: str
) -> None:
    # In-process (the programs' start-up is pinned by the cases above): a crash is exit 3.
    repo = new_repo(tmp_path, {"prod/x.yaml": ONE}, origin=False)
    write(repo, {"prod/x.yaml": ONE.replace(old, new)})
    for command in ("diff", "plan"):
        code, out, err = run_cli(monkeypatch, capsys, repo, [command, "--base", "HEAD"])
        assert code == 0, out + err
        assert "app" in out
