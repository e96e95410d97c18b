"""A backfill reads each tag's record once, however many commits it tags: its work per
commit does not grow with the tags made before it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.release import record as release
from tests.rollout.release_world import (
    LONG,
    R2,
    T0,
    World,
    days,
    edit_services,
    git,
    release_base,
    set_flag,
    tagged_commits,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_backfill_parses_each_tag_message_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    release_base(world)
    commits = 8
    for index in range(commits):
        edit_services(world.a / LONG, set_flag(R2, "--max-running-requests", str(100 + index)))
        git(world.a, "commit", "-qam", f"r2 {100 + index}", when=T0 + days(1 + index / 1000))
    git(world.a, "push", "-q", "origin", "main")
    parsed: list[str] = []
    real = release.parse_message

    def counting(text: str) -> release.Record | None:
        parsed.append(text)
        return real(text)

    monkeypatch.setattr(release, "parse_message", counting)
    monkeypatch.setattr(release, "_PARSED", {})
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--no-verify"]) == 0
    assert len(tagged_commits(world.origin)) == commits + 1
    # One parse per distinct tag message (the first release's and the eight new ones);
    # judging every tag again for every commit made that grow with each tag (45 and more).
    assert len(parsed) == len(set(parsed)) <= commits + 1


# The check of each commit: the first passes at once, every later one waits until the
# test has read the first commit's line (or 20 s, and then the test fails).
GATED_CHECK = """
import pathlib, sys, time
counter, gate = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
runs = int(counter.read_text()) + 1 if counter.exists() else 1
counter.write_text(str(runs))
deadline = time.monotonic() + 20
while runs > 1 and not gate.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
if runs > 1:
    counter.with_name("second-check").write_text("saw the line" if gate.exists() else "timed out")
"""


def test_a_backfill_shows_each_tag_as_it_is_made_through_a_pipe(world: World, tmp_path: Path) -> None:
    release_base(world)
    for index in range(2):
        edit_services(world.a / LONG, set_flag(R2, "--max-running-requests", str(100 + index)))
        git(world.a, "commit", "-qam", f"r2 {100 + index}", when=T0 + days(1 + index / 1000))
    git(world.a, "push", "-q", "origin", "main")
    gate = tmp_path / "seen-the-first-line"
    check = shlex.join([sys.executable, "-c", GATED_CHECK, str(tmp_path / "runs"), str(gate)])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rollout",
            "release",
            "tag",
            "--repo",
            str(world.a),
            "--verify-command",
            check,
        ],
        cwd=ROOT,
        # As in CI: stdout a pipe, and Python's own buffering (no PYTHONUNBUFFERED).
        env={**{k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("created "):
            gate.touch()  # the first tag's line arrived while the run goes on
            break
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert int((tmp_path / "runs").read_text()) == 2
    # The second commit's check was still running when the first tag's line was read.
    assert (tmp_path / "second-check").read_text() == "saw the line"
