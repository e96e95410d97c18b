"""Benchmark of `rollout release` on real git: prints its numbers, asserts no timing.

    PYTHONPATH=. .nox/tests/bin/python tests/rollout/release_bench.py [COMMITS]

Builds a world (release_world.py) in a temporary directory, tags the base commit with
the cheap verify command, backfills COMMITS (default 100) commits that each change r2
in one `tag --push --no-verify` run, then times history and rollback over all tags.
"""

from __future__ import annotations

import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.release import record as release
from tests.rollout.release_world import (
    LONG,
    R2,
    T0,
    days,
    edit_services,
    git,
    isolate_git,
    make_world,
    set_flag,
)


def timed(label: str, argv: list[str]) -> None:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    print(f"{label}: {time.perf_counter() - start:.3f} s (exit {code})")


def bench(commits: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as monkeypatch:
        home = Path(tmp)
        isolate_git(monkeypatch, home)
        world = make_world(home)
        repo = str(world.a)
        timed("tag: first release, cheap verify, push", ["release", "tag", "--repo", repo, "--push"])
        for index in range(commits):
            edit_services(world.a / LONG, set_flag(R2, "--max-running-requests", str(100 + index)))
            git(world.a, "commit", "-qam", f"r2 {100 + index}", when=T0 + days(1 + index / 1000))
        git(world.a, "push", "-q", "origin", "main")
        timed(
            f"tag: backfill of {commits} commits, --no-verify --push",
            ["release", "tag", "--repo", repo, "--push", "--no-verify"],
        )
        monkeypatch.setattr(release, "utcnow", lambda: T0 + days(30))
        timed(f"history of r2 over {commits + 1} tags", ["release", "history", LONG, R2, "--repo", repo])
        timed(
            f"history of the whole file over {commits + 1} tags", ["release", "history", LONG, "--repo", repo]
        )
        timed(
            f"rollback of r2 over {commits + 1} tags (renders with compose)",
            ["release", "rollback", LONG, R2, "--repo", repo],
        )


if __name__ == "__main__":
    bench(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
