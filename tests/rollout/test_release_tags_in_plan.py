"""`plan` names release tags by the one definition `release` uses: a `-rc`
tag or a lightweight tag on the base or head commit never reaches a compose-manager
payload. Real git and real prod files (release_world.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from rollout.cli import main
from rollout.plan.model import NEW_TAG, OLD_TAG
from tests.rollout.release_world import (
    R2,
    T0,
    World,
    days,
    git,
    set_flag,
    tag_by_hand,
)

RC_REASON = "not a release name: releases are exactly v0.0.N (no suffix such as -rc, no leading zero)"
LIGHT_REASON = "a lightweight tag, no record"


def two_commits(world: World) -> tuple[str, str]:
    """base: the seed commit; head: r2 of the long-context file changed."""
    base = git(world.a, "rev-parse", "HEAD")
    head = world.commit(world.a, "r2: 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    return base, head


def plan_json(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> dict[str, Any]:
    monkeypatch.chdir(world.a)
    capsys.readouterr()
    code = main(["plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", *args])
    captured = capsys.readouterr()
    assert (code, captured.err) == (0, "")
    result: dict[str, Any] = json.loads(captured.out)
    return result


def payload_tags(value: Any) -> Iterator[str]:
    """Every `tag` of every payload anywhere in the plan (steps and rollbacks)."""
    if isinstance(value, dict):
        if "tag" in value and isinstance(value["tag"], str):
            yield value["tag"]
        for item in value.values():
            yield from payload_tags(item)
    elif isinstance(value, list):
        for item in value:
            yield from payload_tags(item)


def test_rc_and_lightweight_tags_on_base_and_head_never_reach_a_payload(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = two_commits(world)
    tag_by_hand(world.a, "v0.0.1", base)  # the release deployed now
    tag_by_hand(world.a, "v0.0.2-rc", base)  # git's version sort puts it after v0.0.1
    git(world.a, "tag", "v0.0.2", head)
    tag_by_hand(world.a, "v0.0.3-rc", head)

    plan = plan_json(world, monkeypatch, capsys)

    assert set(payload_tags(plan["files"])) == {"v0.0.1", NEW_TAG}
    assert (plan["tags"]["new"], plan["tags"]["old"]) == (NEW_TAG, "v0.0.1")
    assert plan["tags"]["notes"] == [
        f"{NEW_TAG}: the v0.0.N tag of the merge commit; the head (HEAD ({head[:7]})) is not tagged yet "
        f"(v0.0.2 ignored: {LIGHT_REASON}) (v0.0.3-rc ignored: {RC_REASON}). "
        "Substitute it, or pass --tag, once it exists and is old enough to deploy"
    ]


def test_a_base_with_only_tags_that_are_not_releases_gets_the_placeholder(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    base, _ = two_commits(world)
    git(world.a, "tag", "v0.0.1", base)
    tag_by_hand(world.a, "v0.0.1-rc", base)

    plan = plan_json(world, monkeypatch, capsys)

    assert set(payload_tags(plan["files"])) == {OLD_TAG, NEW_TAG}
    assert plan["tags"]["notes"][1] == (
        f"{OLD_TAG}: the tag deployed now; the base (HEAD~1 ({base[:7]})) carries no release tag "
        f"(v0.0.1 ignored: {LIGHT_REASON}) (v0.0.1-rc ignored: {RC_REASON}). Substitute it, or pass --base-tag"
    )


def test_plan_names_the_release_tag_that_release_tag_made(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both commands, one definition: the tag `release tag` creates is the one `plan` uses."""
    base, head = two_commits(world)
    tag_by_hand(world.a, "v0.0.1", base)
    git(world.a, "tag", "v0.0.2", head)  # holds the name; not a release
    assert main(["release", "tag", "--repo", str(world.a), "--no-verify"]) == 0

    plan = plan_json(world, monkeypatch, capsys)

    assert (plan["tags"]["new"], plan["tags"]["old"], plan["tags"]["notes"]) == ("v0.0.3", "v0.0.1", [])
    assert set(payload_tags(plan["files"])) == {"v0.0.1", "v0.0.3"}


@pytest.mark.parametrize(
    ("option", "value", "reason"),
    [
        ("--tag", "v0.0.3-rc", "not a release tag name (releases are exactly v0.0.N)"),
        ("--base-tag", "v0.0.2", f"not a release tag: {LIGHT_REASON}"),
        ("--tag", "latest", "not a release tag name (releases are exactly v0.0.N)"),
    ],
)
def test_a_tag_given_by_hand_that_is_not_a_release_is_refused(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    option: str,
    value: str,
    reason: str,
) -> None:
    _, head = two_commits(world)
    git(world.a, "tag", "v0.0.2", head)
    tag_by_hand(world.a, "v0.0.3-rc", head)
    monkeypatch.chdir(world.a)
    capsys.readouterr()

    assert main(["plan", "--base", "HEAD~1", "--head", "HEAD", "--format", "json", option, value]) == 2

    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", f"{option} {value}: {reason}\n")
