"""`release tag` verifies a commit with its test suite and its check (`nox -s tests check`),
records both, and refuses a commit whose tests fail, naming them in one line.

A stub `nox` on PATH stands in for the real one (which takes minutes): it writes the
check-matrix record the real run writes, with a tests stage that passed or failed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from rollout.cli import main
from rollout.release import record as release
from tests.rollout.release_world import T0, World, days, git, isolate_git, make_world
from tierops.checkmatrix import digest


def _record(tests_verdict: str, note: str = "") -> dict[str, Any]:
    tests_counts = {"passed": 40, "failed": 1} if tests_verdict == "fail" else {"passed": 41}
    return {
        "format": 1,
        "verdict": "fail" if tests_verdict == "fail" else "not run",
        "stages": [
            {"name": "validate", "verdict": "pass", "note": "", "files": {}, "repository": {"verdict": "pass", "counts": {}}},
            {"name": "collector", "verdict": "not run", "note": "no Docker", "files": {},
             "repository": {"verdict": "not run", "counts": {}}},
            {"name": "tests", "verdict": tests_verdict, "note": note, "files": {},
             "repository": {"verdict": tests_verdict, "counts": tests_counts}},
        ],
    }  # fmt: skip


FAILED_NOTE = "1 failed: tests/rollout/test_x.py::test_breaks"


def _stub_nox(directory: Path) -> Path:
    """`nox -s tests check` that writes a record where the real one does: its tests fail
    when a file TESTS_FAIL is committed (and nox then exits 1), else they pass."""
    directory.mkdir()
    stub = directory / "nox"
    passing, failing = json.dumps(_record("pass")), json.dumps(_record("fail", FAILED_NOTE))
    stub.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        "assert sys.argv[1:] == ['-s', 'tests', 'check'], sys.argv\n"
        "broken = pathlib.Path('TESTS_FAIL').exists()\n"
        "pathlib.Path('build').mkdir(exist_ok=True)\n"
        f"pathlib.Path('build/check-matrix.json').write_text({failing!r} if broken else {passing!r})\n"
        "print('pytest: 1 failed' if broken else 'pytest: 41 passed')\n"
        "sys.exit(int(broken))\n",
        encoding="utf-8",
    )
    stub.chmod(0o755)
    return directory


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    isolate_git(monkeypatch, tmp_path)
    monkeypatch.delenv("TIEROPS_RELEASE_VERIFY")
    monkeypatch.setenv("PATH", f"{_stub_nox(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    return make_world(tmp_path)


def _message(repo: Path, name: str) -> str:
    return git(repo, "cat-file", "-p", name).split("\n\n", 1)[1]


def test_the_tag_records_that_the_tests_and_the_check_passed(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    head = git(world.a, "rev-parse", "HEAD")
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0

    message = _message(world.a, "v0.0.1")
    assert "verify: passed: nox -s tests, nox -s check\n" in message
    assert f"check-matrix: {digest(_record('pass'))}\n" in message
    record = release.parse_message(message)
    assert record is not None and record.verified and record.tests_unverified is None
    assert (
        f"created v0.0.1 on {head[:12]} (check passed: nox -s tests, nox -s check; "
        in capsys.readouterr().out
    )


def test_a_failing_test_refuses_the_tag_and_names_it_in_one_line(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0
    capsys.readouterr()
    broken = world.commit(world.a, "a change whose tests fail", T0 + days(1), extra={"TESTS_FAIL": "x\n"})

    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 1

    err = capsys.readouterr().err.splitlines()
    assert err[-2] == f"verify at {broken[:12]}: tests: {FAILED_NOTE}"
    assert err[-1].startswith(
        f"{broken[:12]}: `nox -s tests check` failed (exit 1) in its worktree; not tagged"
    )
    assert "v0.0.2" not in world.remote_tags() and "v0.0.2" not in world.local_tags(world.a)


def test_a_tag_made_before_the_tests_were_verified_says_so_but_stays_verified() -> None:
    old = release.Record("a" * 40, "passed: nox -s check", {})
    assert old.verified and old.unverified is None
    assert old.tests_unverified == "verified by the check only: the tests were not run at this commit"
    new = release.Record("a" * 40, release.VERIFY_PASSED, {})
    assert new.verified and new.tests_unverified is None
