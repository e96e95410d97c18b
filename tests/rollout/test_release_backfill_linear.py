"""A backfill reads each tag's record once, however many commits it tags: its work per
commit does not grow with the tags made before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollout import release
from rollout.cli import main
from tests.rollout.release_world import (
    LONG,
    R2,
    T0,
    World,
    days,
    edit_services,
    git,
    isolate_git,
    make_world,
    release_base,
    set_flag,
    tagged_commits,
)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    isolate_git(monkeypatch, tmp_path)
    return make_world(tmp_path)


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
