"""`python -m rollout release tag`: numbering, backfill, refusals, verification, races.

Real git throughout: a bare origin and two clones in tmp_path (release_world.py).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rollout.cli import main
from rollout.release import record as release
from rollout.release import tags, tagset
from tests.rollout.history_text import shown
from tests.rollout.release_world import (
    CHECK,
    LONG,
    OVERRIDDEN,
    OVERRIDE_LINE,
    R1,
    R2,
    ROOT,
    T0,
    VIA_CHECK,
    World,
    days,
    edit_services,
    git,
    release_base,
    set_flag,
    tag_by_hand,
    tagged_commits,
    without_progress,
)
from tierops.entry import Terminated
from tierops.errors import RefusedError
from tierops.exitcodes import ExitCode


def tag(repo: Path, *args: str) -> int:
    return main(["release", "tag", "--repo", str(repo), *args])


def first_release(world: World, capsys: pytest.CaptureFixture[str]) -> str:
    """v0.0.1 on the base commit, pushed; returns the base commit.

    For a world straight from the fixture: it becomes a copy of one that `release tag
    --push` released once per test process (release_world.release_base). A test that
    changed its world first runs the tool itself (first_release_run)."""
    release_base(world)
    capsys.readouterr()
    return git(world.a, "rev-parse", "HEAD")


def first_release_run(world: World, capsys: pytest.CaptureFixture[str]) -> str:
    """first_release, by running `release tag --push` in this world."""
    assert tag(world.a, "--push") == 0
    capsys.readouterr()
    return git(world.a, "rev-parse", "HEAD")


def assert_unchanged(world: World, before: dict[str, str], *clones: Path) -> None:
    """Nothing created or moved on origin or in the clones, no worktree left behind."""
    assert world.remote_tags() == before
    for clone in clones:
        assert world.local_tags(clone) == {k: v for k, v in before.items() if k in world.local_tags(clone)}
        assert len(git(clone, "worktree", "list").splitlines()) == 1


# --------------------------------------------------------------------------- tagging


def test_first_release_tags_only_the_requested_commit_and_pushes_it(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git(world.a, "rev-parse", "HEAD")
    head = world.commit(
        world.a, "r2: 24 running requests", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24")
    )

    assert tag(world.a, "--push") == 0

    assert capsys.readouterr().out == (
        OVERRIDE_LINE + f"no release tag on main yet: tagging only {head[:12]}; older commits stay untagged\n"
        f"created v0.0.1 on {head[:12]} ({VIA_CHECK}), pushed to origin\n"
    )
    assert tagged_commits(world.origin) == {"v0.0.1": head}
    assert world.local_tags(world.a) == world.remote_tags()
    assert base not in tagged_commits(world.a).values()


def test_the_tag_message_records_the_commit_the_check_and_every_service_digest(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    head = first_release(world, capsys)

    message = git(world.a, "cat-file", "-p", "v0.0.1").split("\n\n", 1)[1]
    record = release.parse_message(message)

    assert record == release.record_for_commit(world.a, head, OVERRIDDEN)
    assert record is not None and record.commit == head and not record.verified
    assert sorted(record.digests) == ["prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml", LONG]
    assert len(record.digests[LONG]) == 8
    assert git(world.a, "cat-file", "-t", "v0.0.1") == "tag"  # annotated


def test_three_untagged_commits_are_backfilled_oldest_first(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = first_release(world, capsys)
    c2 = world.commit(world.a, "r2 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    c3 = world.commit(world.a, "r1 24", T0 + days(2), edit=set_flag(R1, "--max-running-requests", "24"))
    c4 = world.commit(world.a, "r2 16", T0 + days(3), edit=set_flag(R2, "--max-running-requests", "16"))

    assert tag(world.a, "--push") == 0

    assert capsys.readouterr().out == (
        OVERRIDE_LINE + "backfilling 3 untagged first-parent commits of main after v0.0.1, oldest first\n"
        f"created v0.0.2 on {c2[:12]} ({VIA_CHECK}), pushed to origin\n"
        f"created v0.0.3 on {c3[:12]} ({VIA_CHECK}), pushed to origin\n"
        f"created v0.0.4 on {c4[:12]} ({VIA_CHECK}), pushed to origin\n"
    )
    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": c2, "v0.0.3": c3, "v0.0.4": c4}


def test_rerunning_on_a_tagged_commit_says_so_and_changes_nothing(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    head = first_release(world, capsys)
    before = world.remote_tags()

    assert tag(world.a, "--push") == 0
    assert tag(world.b, "--remote", "origin") == 0  # b has no local tag: it reads origin's

    assert capsys.readouterr().out == (
        f"{head[:12]} is already tagged v0.0.1; nothing to do\n{head[:12]} is already tagged v0.0.1; nothing to do\n"
    )
    assert_unchanged(world, before, world.a, world.b)
    assert world.local_tags(world.b) == {}


def test_numbers_are_ordered_numerically_so_v0_0_9_is_followed_by_v0_0_10_and_v0_0_11(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = git(world.a, "rev-parse", "HEAD")
    tag_by_hand(world.a, "v0.0.8", base)  # an old release, made before this clone's time
    git(world.a, "push", "-q", "origin", "v0.0.8")
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    assert tag(world.a, "--push") == 0
    c2 = world.commit(world.a, "two", T0 + days(2), extra={"notes/2": "2\n"})
    c3 = world.commit(world.a, "three", T0 + days(3), extra={"notes/3": "3\n"})
    assert tag(world.a, "--push") == 0

    assert tagged_commits(world.origin) == {"v0.0.8": base, "v0.0.9": c1, "v0.0.10": c2, "v0.0.11": c3}
    assert [t.name for t in tagset.read_tags(world.a).releases] == ["v0.0.8", "v0.0.9", "v0.0.10", "v0.0.11"]
    assert "created v0.0.11" in capsys.readouterr().out


def test_without_a_remote_tags_are_made_locally_only(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    head = git(world.a, "rev-parse", "HEAD")

    assert tag(world.a) == 0

    assert tagged_commits(world.a) == {"v0.0.1": head}
    assert world.remote_tags() == {}
    assert "pushed" not in capsys.readouterr().out


# --------------------------------------------------------------------------- refusals


def refused(capsys: pytest.CaptureFixture[str], code: int, *, out: str = "") -> str:
    captured = capsys.readouterr()
    err = without_progress(captured.err)
    assert code == 2
    assert captured.out == out
    assert len(err.splitlines()) == 1, captured.err
    assert "Traceback" not in captured.err
    return err.strip()


def test_a_dirty_working_tree_is_refused(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    first_release(world, capsys)
    world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    before = world.remote_tags()
    (world.a / LONG).write_text("services: {}\n", encoding="utf-8")

    message = refused(capsys, tag(world.a, "--push"))

    assert message == (
        f"{world.a}: the working tree has uncommitted or untracked changes; commit or stash them first "
        "(`git status`); release tags mark commits, never a working tree"
    )
    assert_unchanged(world, before, world.a)


def test_an_untracked_file_makes_the_tree_dirty_too(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    (world.a / "stray.txt").write_text("x\n", encoding="utf-8")

    assert "uncommitted or untracked" in refused(capsys, tag(world.a))
    assert world.local_tags(world.a) == {}


def test_a_commit_off_the_first_parent_history_of_main_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    git(world.a, "switch", "-q", "-c", "feature")
    side = world.commit(world.a, "feature work", T0 + days(1), extra={"notes/f": "f\n"}, push=False)
    git(world.a, "switch", "-q", "main")
    git(world.a, "merge", "-q", "--no-ff", "-m", "merge feature", "feature", when=T0 + days(2))
    git(world.a, "push", "-q", "origin", "main")
    before = world.remote_tags()

    message = refused(capsys, tag(world.a, "--commit", "feature", "--push"))

    assert message == (
        f"feature ({side[:12]}) is not on the first-parent history of main; release tags mark merges to "
        "main: pick a commit from `git log --first-parent main`"
    )
    assert_unchanged(world, before, world.a)


def test_a_commit_not_yet_on_the_remotes_main_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    local = world.commit(world.a, "not pushed", T0 + days(1), extra={"notes/l": "l\n"}, push=False)
    before = world.remote_tags()

    message = refused(capsys, tag(world.a, "--remote", "origin"))

    assert message == (
        f"HEAD ({local[:12]}) is not on origin's main yet; push main first (`git push origin main`): "
        "a release must exist where hosts fetch it"
    )
    assert_unchanged(world, before, world.a)


def test_a_remote_ahead_of_the_clone_is_fetched_to_test_ancestry(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    git(world.b, "pull", "-q", "--ff-only")
    world.commit(world.b, "b is ahead", T0 + days(1), extra={"notes/b": "b\n"})
    mine = world.commit(world.a, "a diverged", T0 + days(2), extra={"notes/a": "a\n"}, push=False)

    message = refused(capsys, tag(world.a, "--remote", "origin"))

    assert message.startswith(f"HEAD ({mine[:12]}) is not on origin's main yet")


def test_a_tag_name_that_exists_on_the_remote_for_another_commit_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # b tagged its own, never pushed commit v0.0.1 locally; a then released origin's.
    git(world.b, "commit", "-q", "--allow-empty", "-m", "b only", when=T0 + days(1))
    assert tag(world.b) == 0
    git(world.b, "reset", "-q", "--hard", "origin/main")
    head = first_release_run(world, capsys)
    capsys.readouterr()
    before, before_b = world.remote_tags(), world.local_tags(world.b)

    message = refused(capsys, tag(world.b, "--remote", "origin"))

    b_commit = tagged_commits(world.b)["v0.0.1"]
    assert message == (
        f"tag v0.0.1 is {b_commit[:12]} here but {head[:12]} on origin; tags never move: find out which is "
        "right before tagging again; this command changes neither"
    )
    assert world.remote_tags() == before and world.local_tags(world.b) == before_b


def test_pushing_while_a_local_tag_is_missing_on_the_remote_is_refused(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tag(world.a) == 0  # local only
    world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    capsys.readouterr()
    before = world.local_tags(world.a)

    message = refused(capsys, tag(world.a, "--push"))

    assert message == (
        "local tag v0.0.1 is not on origin; push it first (`git push origin refs/tags/v0.0.1`), "
        "so both sides number releases the same way"
    )
    assert world.remote_tags() == {} and world.local_tags(world.a) == before


def test_an_older_commit_than_a_tagged_one_stays_untagged(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    old = git(world.a, "rev-parse", "HEAD")
    world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    assert tag(world.a, "--push") == 0  # first release: only HEAD
    capsys.readouterr()
    before = world.remote_tags()

    message = refused(capsys, tag(world.a, "--commit", old, "--push"))

    assert "is older than" in message and "already tagged v0.0.1" in message
    assert message.startswith(old[:12])
    assert_unchanged(world, before, world.a)


def test_a_release_on_a_newer_commit_only_origin_main_has_keeps_the_older_commit_untagged(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """The local main is behind origin's, whose newer commit is released: tagging the
    local tip would give an older commit a larger number."""
    first_release(world, capsys)
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    git(world.b, "pull", "-q", "--ff-only")
    c2 = world.commit(world.b, "two", T0 + days(2), extra={"notes/2": "2\n"})
    tag_by_hand(world.b, "v0.0.3", c2)
    git(world.b, "push", "-q", "origin", "v0.0.3")
    git(world.a, "fetch", "-q", "origin")  # origin/main and its tags; main stays at c1
    before = world.remote_tags()

    message = refused(capsys, tag(world.a))

    assert message == (
        f"{c1[:12]} is older than {c2[:12]}, which is already tagged v0.0.3; release numbers follow "
        "first-parent order, so an older untagged commit stays untagged"
    )
    assert_unchanged(world, before, world.a)


def test_an_existing_tag_name_is_never_overwritten_locally_or_on_the_remote(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    head = world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    before_local, before_remote = world.local_tags(world.a), world.remote_tags()
    obj = tags.make_tag_object(world.a, head, "v0.0.1", "an impostor\n")

    with pytest.raises(RefusedError, match=r"cannot create tag v0\.0\.1"):
        tags.create_ref(world.a, "v0.0.1", obj, pushed_to=None)
    assert tags.push_ref(world.a, "origin", obj, "v0.0.1") == "taken"

    assert world.local_tags(world.a) == before_local
    assert world.remote_tags() == before_remote


def test_an_unknown_commit_and_a_missing_branch_are_usage_errors(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refused(capsys, tag(world.a, "--commit", "nope")).startswith("unknown git ref 'nope'")
    assert refused(capsys, tag(world.a, "--branch", "release")).startswith("no local branch 'release'")
    assert world.local_tags(world.a) == {}


# --------------------------------------------------------------------------- verification


def test_a_failing_check_stops_the_backfill_at_that_commit_and_exits_1(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    good = world.commit(world.a, "good", T0 + days(1), extra={"notes/1": "1\n"})
    bad = world.commit(world.a, "bad", T0 + days(2), extra={"BROKEN": "x\n"})
    world.commit(world.a, "fixed", T0 + days(3), extra={"notes/3": "3\n"})

    assert tag(world.a, "--push") == 1

    captured = capsys.readouterr()
    assert captured.out == (
        OVERRIDE_LINE + "backfilling 3 untagged first-parent commits of main after v0.0.1, oldest first\n"
        f"created v0.0.2 on {good[:12]} ({VIA_CHECK}), pushed to origin\n"
    )
    assert captured.err.startswith(f"checking {good[:12]} (1 of 3): `{CHECK}` in its worktree\n")
    assert without_progress(captured.err) == (
        "BROKEN is committed\n"
        f"{bad[:12]}: `{CHECK}` failed (exit 1) in its worktree; not tagged, and no newer commit is; "
        "fix main, or tag it anyway with --no-verify (the tag message then says so)\n"
    )
    assert sorted(tagged_commits(world.origin)) == ["v0.0.1", "v0.0.2"]
    assert len(git(world.a, "worktree", "list").splitlines()) == 1


def test_no_verify_tags_a_failing_commit_and_the_tag_message_says_so(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    bad = world.commit(world.a, "bad", T0 + days(2), extra={"BROKEN": "x\n"})

    assert tag(world.a, "--push", "--no-verify") == 0

    assert (
        capsys.readouterr().out
        == f"created v0.0.2 on {bad[:12]} (NOT verified: skipped (--no-verify)), pushed to origin\n"
    )
    assert "verify: skipped (--no-verify)" in git(world.a, "cat-file", "-p", "v0.0.2")
    assert tagset.read_tags(world.a).releases[-1].record.verified is False


def test_the_check_runs_at_the_commit_being_tagged_not_in_the_working_tree(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    world.commit(world.a, "bad", T0 + days(1), extra={"BROKEN": "x\n"})
    git(world.a, "rm", "-q", "BROKEN")
    world.commit(world.a, "fixed", T0 + days(2))

    # HEAD is fine, but the commit before it is not: the worktree shows that.
    assert tag(world.a, "--push") == 1
    assert "BROKEN is committed" in capsys.readouterr().err


def test_a_missing_verify_command_is_a_usage_error(world: World, capsys: pytest.CaptureFixture[str]) -> None:
    message = refused(capsys, tag(world.a, "--verify-command", "no-such-checker --all"))

    assert message.startswith("verify command 'no-such-checker' not found on PATH")
    assert world.local_tags(world.a) == {}


# --------------------------------------------------------------------------- what counts as a release tag


NOT_A_RECORD = "no release record in its message (not made by `rollout release tag`)"


def test_a_stray_record_on_a_merged_side_branch_never_raises_the_next_number(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stray v0.0.50 on a side branch once made the next tag v0.0.51."""
    base = first_release(world, capsys)
    git(world.a, "switch", "-q", "-c", "feature")
    side = world.commit(world.a, "feature work", T0 + days(1), extra={"notes/f": "f\n"}, push=False)
    tag_by_hand(world.a, "v0.0.50", side)  # a well-made record, of a commit main only merged
    git(world.a, "push", "-q", "origin", "v0.0.50")
    git(world.a, "switch", "-q", "main")
    git(world.a, "merge", "-q", "--no-ff", "-m", "merge feature", "feature", when=T0 + days(2))
    git(world.a, "push", "-q", "origin", "main")
    merge = git(world.a, "rev-parse", "HEAD")

    assert tag(world.a, "--push") == 0

    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": merge, "v0.0.50": side}
    assert (
        capsys.readouterr().out
        == OVERRIDE_LINE + f"created v0.0.2 on {merge[:12]} ({VIA_CHECK}), pushed to origin\n"
    )


def _lightweight(world: World, commit: str) -> str:
    git(world.a, "tag", "v0.0.2", commit)
    return "a lightweight tag, no record"


def _no_record(world: World, commit: str) -> str:
    git(world.a, "tag", "-a", "v0.0.2", "-m", "release 2 (by hand)", commit)
    return NOT_A_RECORD


def _record_of_another_commit(world: World, commit: str) -> str:
    base = git(world.a, "rev-parse", "HEAD~1")
    tag_by_hand(world.a, "v0.0.2", commit, record_of=base)
    return f"its record names commit {base[:12]}, but it points at {commit[:12]}"


@pytest.mark.parametrize("make", [_lightweight, _no_record, _record_of_another_commit])
@pytest.mark.parametrize("where", ["here and on origin", "on origin only"])
def test_a_v0_0_n_tag_that_is_not_a_release_never_makes_head_already_tagged(
    world: World, capsys: pytest.CaptureFixture[str], make: Callable[[World, str], str], where: str
) -> None:
    """A lightweight v0.0.10 on HEAD once made `tag` answer "already tagged"."""
    base = first_release(world, capsys)
    head = world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    reason = make(world, head)
    git(world.a, "push", "-q", "origin", "v0.0.2")
    if where == "on origin only":
        git(world.a, "tag", "-d", "v0.0.2")
        reason += " (on origin)"
    stray = world.remote_tags()["v0.0.2"]

    assert tag(world.a, "--push") == 0

    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": head, "v0.0.3": head}
    assert world.remote_tags()["v0.0.2"] == stray  # never moved
    assert capsys.readouterr().out == (
        f"note: v0.0.2 on {head[:12]} ignored: {reason}\n"
        + OVERRIDE_LINE
        + f"v0.0.2 is held by a tag that is not a release ({reason}); skipped the name\n"
        f"created v0.0.3 on {head[:12]} ({VIA_CHECK}), pushed to origin\n"
    )
    assert [t.name for t in tagset.read_tags(world.a).releases] == ["v0.0.1", "v0.0.3"]


def test_an_rc_tag_on_head_is_named_as_ignored_and_head_gets_its_release(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = first_release(world, capsys)
    head = world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    tag_by_hand(world.a, "v0.0.2-rc", head)  # the record is fine; the name is not a release's
    git(world.a, "push", "-q", "origin", "v0.0.2-rc")

    assert tag(world.a, "--push") == 0

    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2-rc": head, "v0.0.2": head}
    assert capsys.readouterr().out == (
        f"note: v0.0.2-rc on {head[:12]} ignored: not a release name: releases are exactly v0.0.N "
        "(no suffix such as -rc, no leading zero)\n"
        + OVERRIDE_LINE
        + f"created v0.0.2 on {head[:12]} ({VIA_CHECK}), pushed to origin\n"
    )


def test_a_shallow_clone_is_refused_with_the_fix_and_tags_everything_once_unshallowed(
    world: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """In a shallow clone `tag` once said there was no release tag yet, tagged the
    tip, and left the commits in between untaggable forever."""
    first_release(world, capsys)
    commits = [
        world.commit(world.a, f"change {n}", T0 + days(n), extra={f"notes/{n}": f"{n}\n"}) for n in (1, 2, 3)
    ]
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{world.origin}", str(shallow))
    before = world.remote_tags()

    message = refused(capsys, tag(shallow, "--push"))

    assert message == (
        f"{shallow}: this clone is shallow: release tags need main's whole first-parent history and every tag; "
        "fetch the rest first: `git fetch --unshallow --tags`, then rerun"
    )
    assert_unchanged(world, before, shallow)
    for action in (["history", LONG], ["rollback", LONG, R2]):
        assert refused(capsys, main(["release", *action, "--repo", str(shallow)])) == message

    git(shallow, "fetch", "-q", "--unshallow", "--tags")
    assert tag(shallow, "--push") == 0
    assert [tagged_commits(world.origin)[f"v0.0.{n}"] for n in (2, 3, 4)] == commits


@pytest.mark.parametrize("how", ["moved away", "nothing listens"])
def test_a_remote_that_cannot_be_reached_is_one_true_line(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """An unreachable remote once printed the cut-off end of git's message."""
    first_release(world, capsys)
    world.commit(world.a, "two", T0 + days(1), extra={"notes/2": "2\n"})
    if how == "moved away":
        url = str(world.origin)
        world.origin.rename(world.origin.with_name("elsewhere.git"))
        reason = f"'{url}' does not appear to be a git repository"
    else:
        for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
            monkeypatch.delenv(name, raising=False)
        url = "http://127.0.0.1:1/origin.git"  # port 1 on loopback: refused at once, no network
        git(world.a, "remote", "set-url", "origin", url)
        reason = f"unable to access '{url}/': Failed to connect to 127.0.0.1 port 1"
    before = world.local_tags(world.a)

    for args in (["--remote", "origin"], ["--push"]):
        message = refused(capsys, tag(world.a, *args))

        assert message.startswith(f"cannot reach remote 'origin' ({url}): {reason}")
        assert message.endswith("; check its URL (`git remote get-url origin`) and the network, then rerun")
        assert world.local_tags(world.a) == before


@pytest.mark.parametrize("action", [["tag"], ["history", LONG], ["rollback", LONG, R2]])
def test_a_repo_path_that_is_no_repository_is_one_true_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: list[str]
) -> None:
    """`--repo /nonexistent` once said git was not installed."""
    plain, afile = tmp_path / "plain", tmp_path / "a-file"
    plain.mkdir()
    afile.write_text("x\n", encoding="utf-8")
    hint = "; pass a path inside a clone of this repository"

    for path, message in (
        (tmp_path / "nonexistent", f"{tmp_path / 'nonexistent'}: no such directory{hint}"),
        (afile, f"{afile}: is not a directory{hint}"),
        (plain, f"{plain}: not inside a git repository"),
    ):
        assert refused(capsys, main(["release", *action, "--repo", str(path)])) == message


# --------------------------------------------------------------------------- what a record may call passed


def _record(repo: Path, name: str) -> release.Record:
    record = release.parse_message(git(repo, "cat-file", "-p", name).split("\n\n", 1)[1])
    assert record is not None
    return record


@pytest.mark.parametrize(
    ("env", "option", "source"),
    [
        ("true", None, "$TIEROPS_RELEASE_VERIFY"),
        (None, "sh -c 'exit 0'", "--verify-command"),
        (f"{sys.executable} -c pass", None, "$TIEROPS_RELEASE_VERIFY"),
    ],
)
def test_no_substituted_check_is_ever_recorded_as_passed(
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    env: str | None,
    option: str | None,
    source: str,
) -> None:
    """TIEROPS_RELEASE_VERIFY=true once recorded `verify: passed` though no check ran."""
    if env is None:
        monkeypatch.delenv("TIEROPS_RELEASE_VERIFY")
    else:
        monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", env)
    command = shlex.join(shlex.split(env or option or ""))
    head = git(world.a, "rev-parse", "HEAD")

    assert tag(world.a, *(["--verify-command", option] if option else [])) == 0

    record = _record(world.a, "v0.0.1")
    assert (
        record.verify
        == f"skipped (override): `{command}` from {source} exited 0 instead of `nox -s tests check`"
    )
    assert not record.verified
    assert capsys.readouterr().out == (
        f"verify: `{command}` from {source} replaces `nox -s tests check`: tags record it as skipped (override), "
        "never as passed\n"
        f"no release tag on main yet: tagging only {head[:12]}; older commits stay untagged\n"
        f"created v0.0.1 on {head[:12]} (NOT verified: skipped (override))\n"
    )
    assert main(["release", "history", LONG, R2, "--repo", str(world.a)]) == 0
    (entry,) = shown(capsys.readouterr().out)
    assert (entry.change, entry.notes) == ("first recorded", ("tagged with the check skipped (override)",))


def _stub_nox(directory: Path) -> Path:
    """A `nox` for the test's PATH (the real one takes minutes): it runs the cheap check,
    and only for `-s tests check` (the suite and the check in one run)."""
    directory.mkdir()
    stub = directory / "nox"
    stub.write_text(
        f"#!{sys.executable}\n"
        "import pathlib, sys\n"
        "assert sys.argv[1:] == ['-s', 'tests', 'check'], sys.argv\n"
        "sys.exit(int(pathlib.Path('BROKEN').exists()))\n",
        encoding="utf-8",
    )
    stub.chmod(0o755)
    return directory


@pytest.mark.parametrize("env", [None, ""])
def test_only_the_projects_own_check_is_recorded_as_passed(
    world: World,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env: str | None,
) -> None:
    if env is None:
        monkeypatch.delenv("TIEROPS_RELEASE_VERIFY")
    else:
        monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", env)  # empty: the same as unset
    monkeypatch.setenv("PATH", f"{_stub_nox(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    head = git(world.a, "rev-parse", "HEAD")

    assert tag(world.a) == 0

    assert _record(world.a, "v0.0.1").verify == "passed: nox -s tests, nox -s check"
    assert capsys.readouterr().out.endswith(
        f"created v0.0.1 on {head[:12]} (check passed: nox -s tests, nox -s check)\n"
    )


def test_a_record_that_calls_another_command_passed_is_not_taken_at_its_word() -> None:
    """Records an older version wrote after `TIEROPS_RELEASE_VERIFY=true` say `passed: true`."""
    old = release.Record("a" * 40, "passed: true", {})

    assert not old.verified
    assert old.unverified == "tagged with verify: passed: true"


# --------------------------------------------------------------------------- races


def _hook(repo: Path, body: str) -> None:
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text(
        "#!/bin/sh\n"
        "# runs between `rollout release tag`'s read of origin's tags and its push\n"
        "unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_OBJECT_DIRECTORY\n" + body,
        encoding="utf-8",
    )
    hook.chmod(0o755)


def test_a_run_that_loses_the_race_for_its_own_commit_does_not_tag_it_again(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = first_release(world, capsys)
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    git(world.b, "pull", "-q", "--ff-only")
    c2 = world.commit(world.b, "two", T0 + days(2), extra={"notes/2": "2\n"})
    # While a pushes its tag for c1, b runs the whole release (c1 and c2) to the end.
    _hook(
        world.a,
        f'if [ ! -e "{world.a}/.git/raced" ]; then\n'
        f'  touch "{world.a}/.git/raced"\n'
        f'  cd "{world.b}" && PYTHONPATH="{ROOT}" "{sys.executable}" -m rollout release tag --push '
        f'> "{world.a}/.git/b.log" 2>&1\n'
        "fi\ncat > /dev/null\n",
    )

    assert tag(world.a, "--push") == 0

    assert capsys.readouterr().out == (
        OVERRIDE_LINE + f"{c1[:12]} was tagged v0.0.2 on origin by another run meanwhile; not tagged again\n"
    )
    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": c1, "v0.0.3": c2}
    assert (world.a / ".git" / "b.log").read_text(encoding="utf-8").count("created") == 2
    # the winner's tag objects are the ones on origin: nothing was moved
    for name, obj in world.local_tags(world.b).items():
        assert world.remote_tags()[name] == obj


def test_a_run_that_loses_its_number_to_another_commit_takes_the_next_one(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = first_release(world, capsys)
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    # b releases from another branch (say a release branch cut from the base commit).
    git(world.b, "switch", "-q", "-c", "hotfix")
    side = world.commit(world.b, "hotfix", T0 + days(1), extra={"notes/h": "h\n"}, push=False)
    git(world.b, "push", "-q", "origin", "hotfix")
    git(world.b, "fetch", "-q", "--tags")
    _hook(
        world.a,
        f'if [ ! -e "{world.a}/.git/raced" ]; then\n'
        f'  touch "{world.a}/.git/raced"\n'
        f'  cd "{world.b}" && PYTHONPATH="{ROOT}" "{sys.executable}" -m rollout release tag --branch hotfix '
        f'--remote origin --push > "{world.a}/.git/b.log" 2>&1\n'
        "fi\ncat > /dev/null\n",
    )

    assert tag(world.a, "--push") == 0

    assert capsys.readouterr().out == (
        OVERRIDE_LINE + "origin got v0.0.2 first (another run, another commit); took the next number\n"
        f"created v0.0.3 on {c1[:12]} ({VIA_CHECK}), pushed to origin\n"
    )
    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": side, "v0.0.3": c1}
    assert world.local_tags(world.b)["v0.0.2"] == world.remote_tags()["v0.0.2"]


def test_losing_every_race_gives_up_after_a_bounded_number_of_attempts(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    first_release(world, capsys)
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    git(world.b, "switch", "-q", "-c", "elsewhere")
    side = world.commit(world.b, "elsewhere", T0 + days(1), extra={"notes/e": "e\n"}, push=False)
    git(world.b, "push", "-q", "origin", "elsewhere")
    # Every push of a: someone else pushes that very name first (on another commit).
    _hook(
        world.a,
        "while read local_ref local_sha remote_ref remote_sha; do\n"
        f'  git -C "{world.b}" push -q origin {side}:"$remote_ref"\n'
        "done\n",
    )
    before_local = world.local_tags(world.a)

    message = refused(capsys, tag(world.a, "--push"), out=OVERRIDE_LINE)

    assert message == (
        f"gave up on {c1[:12]} after {tags.MAX_ATTEMPTS} attempts: origin took v0.0.2, v0.0.3, v0.0.4, "
        "v0.0.5, v0.0.6 first each time; another run is tagging right now; rerun this command when it has finished"
    )
    assert world.local_tags(world.a) == before_local
    assert c1 not in tagged_commits(world.origin).values()


def test_two_clones_tagging_at_once_end_with_distinct_numbers_and_no_moved_tag(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    base = first_release(world, capsys)
    c1 = world.commit(world.a, "one", T0 + days(1), extra={"notes/1": "1\n"})
    c2 = world.commit(world.a, "two", T0 + days(2), extra={"notes/2": "2\n"})
    git(world.b, "pull", "-q", "--ff-only")
    git(world.b, "fetch", "-q", "--tags")
    codes: dict[str, int] = {}
    start = threading.Barrier(2)

    def run(name: str, repo: Path) -> None:
        start.wait()
        codes[name] = tag(repo, "--push", "--no-verify")

    threads = [
        threading.Thread(target=run, args=(name, repo)) for name, repo in (("a", world.a), ("b", world.b))
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert codes == {"a": 0, "b": 0}
    out = capsys.readouterr().out
    assert (out.count("created v0.0.2 "), out.count("created v0.0.3 ")) == (1, 1), out
    assert tagged_commits(world.origin) == {"v0.0.1": base, "v0.0.2": c1, "v0.0.3": c2}
    remote = world.remote_tags()
    for clone in (world.a, world.b):
        for name, obj in world.local_tags(clone).items():
            assert remote[name] == obj, f"{name} differs between {clone.name} and origin"


# --------------------------------------------------------------------------- entry point


def test_every_release_help_shows_the_exit_codes_and_what_runs(capsys: pytest.CaptureFixture[str]) -> None:
    for action in ("tag", "history", "rollback"):
        assert main(["release", action, "--help"]) == 0
        out = capsys.readouterr().out
        assert "exit codes:\n  0  clean\n" in out
        assert "  3  internal error" in out
        if action == "tag":
            assert "$TIEROPS_RELEASE_VERIFY" in out and "`nox -s tests check`" in out


def test_python_m_rollout_release_tag_runs_as_a_module(world: World) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "rollout", "release", "tag", "--repo", str(world.a), "--remote", "origin"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )

    assert proc.returncode == 0, proc.stderr
    head = git(world.a, "rev-parse", "HEAD")
    assert proc.stdout.endswith(f"created v0.0.1 on {head[:12]} ({VIA_CHECK})\n")


def test_a_committer_name_that_is_not_utf_8_goes_into_the_tag_byte_for_byte(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    head = world.commit(world.a, "two", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    # os.environ turns the escaped bytes back into the bytes git sees: a Latin-1 name.
    monkeypatch.setenv("GIT_COMMITTER_NAME", b"Jos\xe9".decode("utf-8", "surrogateescape"))
    assert tag(world.a) == 0
    raw = subprocess.run(
        ["git", "cat-file", "-p", "v0.0.1"], cwd=world.a, capture_output=True, check=True
    ).stdout
    assert b"\ntagger Jos\xe9 <" in raw
    assert tagged_commits(world.a) == {"v0.0.1": head}


def test_a_prod_file_name_with_a_line_break_is_refused_before_any_tag(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = "prod/x\ncommit: " + "0" * 40 + "\ny.yaml"
    text = (world.a / LONG).read_text(encoding="utf-8")
    world.commit(world.a, "a forged name", T0 + days(1), extra={forged: text})
    assert tag(world.a, "--push") == 2
    err = capsys.readouterr().err
    assert "\\u000a" in err and "control or invisible character" in err and len(err.splitlines()) == 1
    assert world.remote_tags() == {} and world.local_tags(world.a) == {}


def test_a_replaced_commit_is_recorded_as_committed_not_as_its_replacement(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """`git replace` makes git show another tree for a commit; a tag's record must hash
    what the commit holds, or a rollback to it would restore something else."""
    first_release(world, capsys)
    head = world.commit(world.a, "r2: 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    # A commit with the same parent whose prod file says 16, put in place of HEAD.
    edit_services(world.a / LONG, set_flag(R2, "--max-running-requests", "16"))
    git(world.a, "add", LONG)
    tree = git(world.a, "write-tree")
    git(world.a, "reset", "-q", "--hard", "HEAD")
    impostor = git(world.a, "commit-tree", tree, "-p", f"{head}~1", "-m", "impostor")
    committed = git(world.a, "show", f"{head}:{LONG}")
    git(world.a, "replace", head, impostor)
    assert git(world.a, "show", f"{head}:{LONG}") != committed  # git now shows the impostor's file

    assert tag(world.a) == 0

    message = git(world.a, "cat-file", "-p", "v0.0.2").split("\n\n", 1)[1]
    git(world.a, "replace", "-d", head)
    recorded = release.parse_message(message)
    assert recorded is not None and recorded.digests == release.record_for_commit(world.a, head, "x").digests


def test_a_hook_s_index_variable_never_rewrites_the_clone_s_index(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git sets GIT_INDEX_FILE for a pre-commit hook; the check's worktree must not write
    the clone's own index with it."""
    first_release(world, capsys)
    world.commit(world.a, "r2: 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    world.commit(world.a, "r2: 16", T0 + days(2), edit=set_flag(R2, "--max-running-requests", "16"))
    monkeypatch.setenv("GIT_INDEX_FILE", str(world.a / ".git" / "index"))
    assert tag(world.a, "--verify-command", "false") == 1
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert git(world.a, "status", "--porcelain") == ""


def test_a_directory_named_like_a_prod_file_is_not_a_prod_file(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    """A backfill reads each commit's prod files: a directory `prod/x.yaml/` there is no
    file to hash (it stopped the run after earlier tags were made)."""
    first_release(world, capsys)
    text = (world.a / LONG).read_text(encoding="utf-8")
    world.commit(world.a, "a directory", T0 + days(1), extra={"prod/odd.yaml/inner.yaml": text})
    assert tag(world.a) == 0
    assert "v0.0.2" in tagged_commits(world.a)


def test_a_signal_as_the_push_lands_says_where_the_tag_is(
    world: World, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM while `git push` runs: the remote may have the tag and the clone not."""
    first_release(world, capsys)
    world.commit(world.a, "r2: 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    real_push = tags.push_ref

    def push_then_signal(*args: Any, **kwargs: Any) -> str:
        real_push(*args, **kwargs)
        raise Terminated(signal.SIGTERM)

    monkeypatch.setattr(tags, "push_ref", push_then_signal)
    assert tag(world.a, "--push") == ExitCode.SIGTERM
    err = capsys.readouterr().err
    assert "origin may have it now and this clone not; `git fetch origin tag v0.0.2` brings it here" in err
    assert "v0.0.2" in world.remote_tags() and "v0.0.2" not in world.local_tags(world.a)
