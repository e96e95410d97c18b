"""`release history` and `release rollback`: reading tag records, the age gate, and
choosing and rendering the previous definition (real git, the real compose binary)."""

from __future__ import annotations

import atexit
import functools
import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from rollout.cli import main
from rollout.plan import deployer
from rollout.release import record as release
from rollout.release import tagset
from tests.rollout.history_text import shown
from tests.rollout.release_world import (
    CANARY,
    LONG,
    R1,
    R2,
    T0,
    WORLD_DIRS,
    World,
    copy_world,
    days,
    git,
    isolate_git,
    make_world,
    set_flag,
    set_tag_time,
    tag_by_hand,
)
from tierops.composebin import find_compose
from tierops.yamlio import load_roundtrip

MINUTES_10 = days(10 / (24 * 60))


def at(monkeypatch: pytest.MonkeyPatch, now: datetime) -> None:
    """The clock: the one thing these tests fake."""
    monkeypatch.setattr(release, "utcnow", lambda: now)


def tag_now(world: World, monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    set_tag_time(monkeypatch, when + MINUTES_10)
    assert main(["release", "tag", "--repo", str(world.a), "--push", "--no-verify"]) == 0


def six_releases(world: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """v0.0.1 base; r2 changes at v0.0.2, v0.0.4, v0.0.5; r1 at v0.0.3; v0.0.6 changes
    only the canary file. Each commit a day after the last, tagged 10 minutes later."""
    commits = {"v0.0.1": git(world.a, "rev-parse", "HEAD")}
    tag_now(world, monkeypatch, T0)
    edits: list[tuple[str, Any, str]] = [
        ("r2: 24 running requests", set_flag(R2, "--max-running-requests", "24"), LONG),
        ("r1: 24 running requests", set_flag(R1, "--max-running-requests", "24"), LONG),
        ("r2: queue 4", set_flag(R2, "--max-queued-requests", "4"), LONG),
        ("r2: 16 running requests", set_flag(R2, "--max-running-requests", "16"), LONG),
        ("canary r2: 16 running requests", set_flag(R2, "--max-running-requests", "16"), CANARY),
    ]
    for number, (message, edit, file) in enumerate(edits, start=2):
        when = T0 + days(number - 1)
        commits[f"v0.0.{number}"] = world.commit(world.a, message, when, edit=edit, file=file)
        tag_now(world, monkeypatch, when)
    return commits


@functools.cache
def _six() -> tuple[Path, dict[str, str]]:
    """One world with six_releases per test process, in a directory of its own."""
    home = Path(tempfile.mkdtemp(prefix="tierops-release-six-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, home)
        world = make_world(home)
        return home, six_releases(world, monkeypatch)


@pytest.fixture(scope="module")
def six() -> tuple[World, dict[str, str]]:
    """The world with six_releases, shared by the tests that only read it."""
    home, commits = _six()
    return World(home / "origin.git", home / "a", home / "b"), dict(commits)


def six_releases_copied(world: World, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """six_releases for `world` (make_world's, untouched), as a copy of the process's one,
    with the environment six_releases leaves behind (its last tag time)."""
    home, commits = _six()
    for name in WORLD_DIRS:
        shutil.rmtree(world.a.parent / name)
    copy_world(home, world.a.parent)
    set_tag_time(monkeypatch, T0 + days(len(commits) - 1) + MINUTES_10)
    return dict(commits)


@pytest.fixture
def shared(
    six: tuple[World, dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[World, dict[str, str]]:
    isolate_git(monkeypatch, tmp_path)
    return six


def run(world: World, *args: str) -> int:
    return main(["release", *args, "--repo", str(world.a)])


# --------------------------------------------------------------------------- history


def test_history_of_r2_lists_its_three_changes_and_its_first_record_newest_first(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, commits = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    digests = {tag.name: tag.record.digests[LONG][R2] for tag in tagset.read_tags(world.a).releases}
    short = {name: commit[:12] for name, commit in commits.items()}
    by = "  by Release Test <release@example.invalid>; tagged"
    assert capsys.readouterr().out == (
        f"{LONG} {R2}: 4 definitions in 6 release tags, newest first\n"
        "age gate: MIN_TAG_AGE_HOURS=48 on the commit date; now 2026-10-11T12:00:00Z\n"
        "\n"
        f"v0.0.5  {short['v0.0.5']}  2026-10-05T12:00:00Z  r2: 16 running requests\n"
        f"{by} 2026-10-05T12:10:00Z\n"
        f"  deployable: yes (since 2026-10-07T12:00:00Z); changed; definition {digests['v0.0.5']}; check matrix -\n"
        "  note: tagged with --no-verify\n"
        f"  - {R2}: --max-running-requests: 24 -> 16\n"
        "\n"
        f"v0.0.4  {short['v0.0.4']}  2026-10-04T12:00:00Z  r2: queue 4\n"
        f"{by} 2026-10-04T12:10:00Z\n"
        f"  deployable: yes (since 2026-10-06T12:00:00Z); changed; definition {digests['v0.0.4']}; check matrix -\n"
        "  note: tagged with --no-verify\n"
        f"  - {R2}: --max-queued-requests: 8 -> 4\n"
        "\n"
        # compared with v0.0.1, the previous tag listed: v0.0.3 changed r1 only
        f"v0.0.2  {short['v0.0.2']}  2026-10-02T12:00:00Z  r2: 24 running requests\n"
        f"{by} 2026-10-02T12:10:00Z\n"
        f"  deployable: yes (since 2026-10-04T12:00:00Z); changed; definition {digests['v0.0.2']}; check matrix -\n"
        "  note: tagged with --no-verify\n"
        f"  - {R2}: --max-running-requests: 32 -> 24\n"
        "\n"
        f"v0.0.1  {short['v0.0.1']}  2026-10-01T12:00:00Z  base: two prod files\n"
        f"{by} 2026-10-01T12:10:00Z\n"
        f"  deployable: yes (since 2026-10-03T12:00:00Z); first recorded; definition {digests['v0.0.1']}; "
        "check matrix -\n"
        "  note: tagged with --no-verify\n"
        f"  - first recorded: 1 service ({R2})\n"
    )
    assert len({digests[name] for name in ("v0.0.5", "v0.0.4", "v0.0.2", "v0.0.1")}) == 4
    assert digests["v0.0.6"] == digests["v0.0.5"] and digests["v0.0.3"] == digests["v0.0.2"]


def test_history_of_r1_lists_its_one_change(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R1) == 0

    entries = shown(capsys.readouterr().out)
    assert [entry.tag for entry in entries] == ["v0.0.3", "v0.0.1"]
    # v0.0.3 against v0.0.1, the previous tag listed for r1
    assert entries[0].changes == (f"{R1}: --max-running-requests: 32 -> 24",)


def test_history_of_a_whole_file_lists_every_tag_that_changed_any_of_its_services(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", str(world.a / LONG)) == 0  # a path works as well as a repo path

    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"{LONG} (all services): 5 definitions in 6 release tags, newest first"
    entries = shown(out)
    assert [entry.tag for entry in entries] == ["v0.0.5", "v0.0.4", "v0.0.3", "v0.0.2", "v0.0.1"]
    # each against the one below it: the whole file's changes, one line per service
    assert entries[2].changes == (f"{R1}: --max-running-requests: 32 -> 24",)
    assert entries[2].subject == "r1: 24 running requests"
    assert entries[-1].changes[0].startswith("first recorded: 8 services (")


def test_history_reports_tags_younger_than_the_gate_as_not_deployable_yet(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(4) + days(0.5))  # v0.0.5 is 12 h old, v0.0.4 36 h, v0.0.2 3.5 days
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    deployable = [entry.deployable for entry in shown(capsys.readouterr().out)]
    assert deployable[0] == "no, from 2026-10-07T12:00:00Z"
    assert deployable[1] == "no, from 2026-10-06T12:00:00Z"
    assert deployable[2] == "yes (since 2026-10-04T12:00:00Z)"


def test_the_gate_is_configurable_by_environment_and_by_option(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(4) + days(0.5))
    capsys.readouterr()
    monkeypatch.setenv("MIN_TAG_AGE_HOURS", "12")

    assert run(world, "history", LONG, R2) == 0
    env_out = capsys.readouterr().out
    assert run(world, "history", LONG, R2, "--min-tag-age-hours", "72") == 0
    option_out = capsys.readouterr().out

    assert "MIN_TAG_AGE_HOURS=12" in env_out and shown(env_out)[0].deployable.startswith("yes")
    assert "MIN_TAG_AGE_HOURS=72" in option_out and shown(option_out)[1].deployable.startswith("no,")


def test_a_gate_that_is_not_a_whole_number_is_a_usage_error(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MIN_TAG_AGE_HOURS", "two days")

    assert run(world, "history", LONG) == 2

    assert capsys.readouterr().err == (
        "MIN_TAG_AGE_HOURS='two days' is not a whole number of hours; "
        "use the value compose-manager runs with (48 by default)\n"
    )


def test_a_tag_whose_record_names_another_commit_is_ignored_and_reported(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    commits = six_releases_copied(world, monkeypatch)
    record = git(world.a, "cat-file", "-p", "v0.0.5").split("\n\n", 1)[1]
    git(world.a, "tag", "-a", "v0.0.7", "-m", record, commits["v0.0.6"])
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    assert capsys.readouterr().out.splitlines()[-1] == (
        f"note: v0.0.7 ignored: its record names commit {commits['v0.0.5'][:12]}, "
        f"but it points at {commits['v0.0.6'][:12]}"
    )


def test_tags_without_a_record_are_reported_not_used(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    git(world.a, "tag", "-a", "v0.0.2", "-m", "a tag of a tree", "HEAD^{tree}")
    git(world.a, "tag", "-a", "v0.0.3", "-m", "made by hand", "HEAD")
    git(world.a, "tag", "v0.0.4", "HEAD")
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    assert capsys.readouterr().out.splitlines()[-3:] == [
        "note: v0.0.2 ignored: it does not point at a commit",
        "note: v0.0.3 ignored: no release record in its message (not made by `rollout release tag`)",
        "note: v0.0.4 ignored: a lightweight tag, no record",
    ]


def test_every_v0_0_tag_that_is_not_a_release_is_listed_with_the_reason_and_never_counted(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only an annotated v0.0.N with the record of its own first-parent commit
    is a release tag; history names every other v0.0.* tag and why."""
    tag_now(world, monkeypatch, T0)
    base = git(world.a, "rev-parse", "HEAD")
    tag_by_hand(world.a, "v0.0.1-rc", base)
    tag_by_hand(world.a, "v0.0.07", base)
    tag_by_hand(world.a, "v0.0.5", base)  # a second tag of a released commit
    git(world.a, "switch", "-q", "-c", "feature")
    side = world.commit(
        world.a, "side", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "8"), push=False
    )
    tag_by_hand(world.a, "v0.0.50", side)  # a fine record, but of a commit main only merges
    git(world.a, "switch", "-q", "main")
    git(world.a, "merge", "-q", "--no-ff", "-m", "merge feature", "feature", when=T0 + days(2))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    text = capsys.readouterr().out
    out = text.splitlines()
    assert out[0] == f"{LONG} {R2}: 1 definitions in 1 release tags, newest first"
    assert [entry.tag for entry in shown(text)] == ["v0.0.1"]
    assert out[-4:] == [
        f"note: v0.0.5 ignored: its commit {base[:12]} is already released as v0.0.1",
        f"note: v0.0.50 ignored: its commit {side[:12]} is not on the first-parent history of main",
        "note: v0.0.07 ignored: not a release name: releases are exactly v0.0.N (no suffix such as -rc, "
        "no leading zero)",
        "note: v0.0.1-rc ignored: not a release name: releases are exactly v0.0.N (no suffix such as -rc, "
        "no leading zero)",
    ]


def test_a_tag_object_copied_under_another_name_is_ignored(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    head = world.commit(world.a, "two", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    tag_by_hand(world.a, "v0.0.2", head)
    git(world.a, "update-ref", "refs/tags/v0.0.3", git(world.a, "rev-parse", "v0.0.2"))  # the same object
    git(world.a, "tag", "-d", "v0.0.2")
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    assert (
        capsys.readouterr().out.splitlines()[-1]
        == "note: v0.0.3 ignored: its tag object is named v0.0.2, not v0.0.3"
    )


def test_a_tag_header_or_name_with_terminal_controls_is_printed_inert(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tag object's `tag` header is free text: an escape sequence or a bidi override
    in it (or a bidi override in the ref's own name) reaches the report as `\\uXXXX`."""
    tag_now(world, monkeypatch, T0)
    head = world.commit(world.a, "two", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    body = (
        f"object {head}\ntype commit\ntag v0.0.2\x1b]8;;x\x07\u202e\n"
        "tagger T <t@example.com> 1700000000 +0000\n\nforged\n"
    )
    forged = (
        subprocess.run(
            ["git", "hash-object", "-t", "tag", "-w", "--literally", "--stdin"],
            cwd=world.a,
            input=body.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    git(world.a, "update-ref", "refs/tags/v0.0.3", forged)
    git(world.a, "update-ref", "refs/tags/v0.0.4\u202e", head)
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0

    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert sorted(notes) == [
        "note: v0.0.3 ignored: its tag object is named v0.0.2\\u001b]8;;x\\u0007\\u202e, not v0.0.3",
        "note: v0.0.4\\u202e ignored: not a release name: releases are exactly v0.0.N (no suffix such as -rc, "
        "no leading zero)",
    ]


def test_a_lightweight_tag_on_head_no_longer_hides_heads_release_from_rollback(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lightweight v0.0.3 on HEAD once made `tag` answer "already tagged", and
    `rollback` then took v0.0.2 for the newest release and rolled back the wrong change."""
    tag_now(world, monkeypatch, T0)
    world.commit(world.a, "r2 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    tag_now(world, monkeypatch, T0 + days(1))
    head = world.commit(world.a, "r2 16", T0 + days(2), edit=set_flag(R2, "--max-running-requests", "16"))
    git(world.a, "tag", "v0.0.3", head)
    tag_now(world, monkeypatch, T0 + days(2))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert (plan["deployed"]["tag"], plan["deployed"]["commit"], plan["target"]["tag"]) == (
        "v0.0.4",
        head,
        "v0.0.2",
    )
    assert plan["ignored"] == [{"tag": "v0.0.3", "reason": "a lightweight tag, no record"}]
    assert run(world, "rollback", LONG, R2) == 0
    assert "  note: v0.0.3 ignored: a lightweight tag, no record\n" in capsys.readouterr().out
    assert run(world, "rollback", LONG, R2, "--from", "v0.0.3") == 2
    assert capsys.readouterr().err == (
        "v0.0.3 is not a release tag: a lightweight tag, no record; "
        "name a release tag (`python -m rollout release history FILE` lists them)\n"
    )


def test_history_shows_a_check_override_and_rollback_warns_about_it(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    world.commit(world.a, "r2 24", T0 + days(1), edit=set_flag(R2, "--max-running-requests", "24"))
    set_tag_time(monkeypatch, T0 + days(1))
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", "true")
    assert main(["release", "tag", "--repo", str(world.a), "--push"]) == 0
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "history", LONG, R2) == 0
    history_out = capsys.readouterr().out.splitlines()
    assert run(world, "rollback", LONG, R2, "--from", "v0.0.2", "--format", "json") == 0
    deployed = json.loads(capsys.readouterr().out)["deployed"]

    newer, older = shown("\n".join(history_out))
    assert (newer.change, newer.notes) == ("changed", ("tagged with the check skipped (override)",))
    assert (older.change, older.notes) == ("first recorded", ("tagged with --no-verify",))
    assert (deployed["verified"], deployed["verify"]) == (
        False,
        "skipped (override): `true` from $TIEROPS_RELEASE_VERIFY exited 0 instead of `nox -s tests check`",
    )


def test_history_without_any_release_tag_says_how_to_create_them(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(world, "history", LONG) == 2

    assert capsys.readouterr().err == (
        "no release tags in this clone; create them with `python -m rollout release tag --remote origin --push` "
        "(the release workflow does it on every push to main; see docs/releasing.md)\n"
    )


def test_an_unknown_service_or_file_is_a_usage_error_naming_what_exists(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    capsys.readouterr()

    assert run(world, "history", LONG, "model-sg-r3") == 2
    service_err = capsys.readouterr().err
    assert run(world, "history", "prod/nope.yaml") == 2
    file_err = capsys.readouterr().err

    assert service_err.startswith(
        f"{LONG} defines no service 'model-sg-r3' at any release tag; services at v0.0.1: "
    )
    assert R2 in service_err
    assert file_err.startswith("prod/nope.yaml is in no release record (1 tags read); files at v0.0.1: ")


# --------------------------------------------------------------------------- rollback


def expected_rollback(commits: dict[str, str], world: World) -> str:
    """The rollback's header, exactly: which tag, why, and the render check."""
    tags = {tag.name: tag for tag in tagset.read_tags(world.a).releases}
    before = tags["v0.0.6"].record.digests[LONG][R2]
    after = tags["v0.0.4"].record.digests[LONG][R2]
    origin = find_compose().origin
    return (
        f"rollback of {R2} in {LONG}\n"
        f"  deployed:     v0.0.6 (commit {commits['v0.0.6'][:12]}; the newest release tag in this clone; "
        "--from TAG if the host runs another)\n"
        f"  roll back to: v0.0.4 (commit {commits['v0.0.4'][:12]}, committed 2026-10-04T12:00:00Z, "
        "deployable since 2026-10-06T12:00:00Z under MIN_TAG_AGE_HOURS=48)\n"
        "  passed over:  v0.0.5 (same definition as v0.0.6)\n"
        f"  {R2}: definition {before} -> {after}\n"
        f"  rendered {LONG} at v0.0.4: docker compose config ok ({origin} with its ci/dummy.env)\n"
        "  warning: v0.0.4 was tagged with --no-verify: its check never passed\n"
    )


def steps_of(plan: dict[str, Any]) -> list[tuple[str, str, str | None, dict[str, Any] | None]]:
    # Every call is one compose-manager reads as written (its contract: no dropped field).
    for step in plan["steps"]:
        if "payload" in step:
            assert deployer.problems(step["endpoint"], step["payload"]) == []
    return [
        (step["service"], step["action"], step.get("endpoint"), step.get("payload")) for step in plan["steps"]
    ]


def service_steps(service: str, deployed: str, target: str) -> list[tuple[str, str, str | None, Any]]:
    """Preview (an up dry run at the old tag), the real down, the up, the verification."""
    only = {"file": LONG, "services": [service]}
    return [
        (service, "preview", "POST /compose/up", {"tag": target, **only, "dry_run": True}),
        (service, "down", "POST /compose/down", {"tag": deployed, **only}),
        (service, "up", "POST /compose/up", {"tag": target, **only}),
        (service, "verify", None, None),
    ]


def test_rolling_back_r2_of_the_long_context_file_prints_safe_ordered_steps(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's definition of done: v0.0.5 is the previous *tag*, but it carries the
    deployed r2; the previous r2 *definition* is at v0.0.4."""
    world, commits = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    code = main(
        [
            "release",
            "rollback",
            "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml",
            R2,
            "--repo",
            str(world.a),
        ]
    )

    out = capsys.readouterr().out
    assert out.startswith(expected_rollback(commits, world))
    steps = [line for line in out.splitlines() if line[:3].strip().rstrip(".").isdigit()]
    assert [line.split(":")[0] for line in steps] == [
        f" 1. preview {R2}",
        f" 2. down {R2}",
        f" 3. up {R2}",
        f" 4. verify {R2}",
    ]
    assert "--dry-run" not in out.split(" 2. down")[1].split(" 3. up")[0]
    # What it reverts, in the diff's words: back to v0.0.4's 24 running requests.
    applies = out.split("  it applies (v0.0.6 -> v0.0.4, the diff's words):\n")[1].splitlines()[0]
    assert applies.startswith(f"    {R2}: ") and "--max-running-requests" in applies and "-> 24" in applies
    assert code == 0


def test_the_chosen_definition_really_is_the_old_one(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    old = git(world.a, "show", f"{plan['target']['tag']}:{LONG}")
    assert plan["target"]["tag"] == "v0.0.4"
    assert '- --max-running-requests\n      - "24"' in old.split(f"  {R2}:")[1].split("  proxy-glm53:")[0]
    assert steps_of(plan) == service_steps(R2, "v0.0.6", "v0.0.4")


def test_rolling_back_r1_goes_back_to_before_its_only_change(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R1, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert (plan["deployed"]["tag"], plan["target"]["tag"]) == ("v0.0.6", "v0.0.2")
    assert plan["passed_over"] == ["v0.0.5", "v0.0.4", "v0.0.3"]


def test_from_names_the_deployed_tag(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--from", "v0.0.4", "--format", "json") == 0
    from_4 = json.loads(capsys.readouterr().out)
    assert run(world, "rollback", LONG, R2, "--from", "v0.0.3", "--format", "json") == 0
    from_3 = json.loads(capsys.readouterr().out)

    assert (from_4["deployed"]["tag"], from_4["target"]["tag"], from_4["passed_over"]) == (
        "v0.0.4",
        "v0.0.3",
        [],
    )
    assert (from_3["deployed"]["tag"], from_3["target"]["tag"], from_3["passed_over"]) == (
        "v0.0.3",
        "v0.0.1",
        ["v0.0.2"],
    )


def test_services_the_old_tag_defines_identically_are_not_touched(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, R1, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert plan["target"]["tag"] == "v0.0.4"
    assert (plan["changed"], plan["unchanged"]) == ([R2], [R1])
    assert {step["service"] for step in plan["steps"]} == {R2}


def test_several_services_are_rolled_back_one_at_a_time_in_the_order_given(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)

    def both(document: dict[str, Any]) -> None:
        set_flag(R1, "--max-running-requests", "24")(document)
        set_flag(R2, "--max-running-requests", "24")(document)

    world.commit(world.a, "r1 and r2: 24 running requests", T0 + days(1), edit=both)
    tag_now(world, monkeypatch, T0 + days(1))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, R1, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert (plan["target"]["tag"], plan["changed"]) == ("v0.0.1", [R2, R1])
    assert steps_of(plan) == service_steps(R2, "v0.0.2", "v0.0.1") + service_steps(R1, "v0.0.2", "v0.0.1")


def test_a_service_behind_a_compose_profile_renders_and_rolls_back(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", CANARY, R2, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert (plan["deployed"]["tag"], plan["target"]["tag"]) == ("v0.0.6", "v0.0.5")
    # compose-manager passes no --profile: naming the service enables its profile.
    calls = [step for step in plan["steps"] if "payload" in step]
    assert [step["action"] for step in calls] == ["preview", "down", "up"]
    for step in calls:
        assert "--profile" not in step["command"]
        assert step["payload"]["services"] == [R2]


def test_a_previous_definition_younger_than_the_gate_is_refused_with_when_it_will_be_deployable(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, commits = shared
    at(monkeypatch, T0 + days(4) + days(0.5))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--from", "v0.0.5") == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"v0.0.4 (commit {commits['v0.0.4'][:12]}, committed 2026-10-04T12:00:00Z) is not deployable until "
        "2026-10-06T12:00:00Z (MIN_TAG_AGE_HOURS=48, measured on the commit date); an emergency before then "
        "follows docs/releasing.md (Emergency path), never a lower gate\n"
    )


def test_an_old_file_that_compose_rejects_is_refused(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)

    def needs_a_variable(document: dict[str, Any]) -> None:
        document["services"][R2]["environment"]["EXTRA"] = "${NOT_IN_THE_DUMMIES:?set it}"

    world.commit(world.a, "r2 needs a new variable", T0 + days(1), edit=needs_a_variable)
    tag_now(world, monkeypatch, T0 + days(1))
    world.commit(world.a, "r2: 24", T0 + days(2), edit=set_flag(R2, "--max-running-requests", "24"))
    tag_now(world, monkeypatch, T0 + days(2))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2) == 2

    err = capsys.readouterr().err
    assert err.startswith(f"{LONG} at v0.0.2 does not render with docker compose config: ")
    assert "NOT_IN_THE_DUMMIES" in err
    assert err.endswith("that tag is not a safe rollback point; choose another with --from or fix forward\n")


def test_nothing_to_roll_back_to_is_refused(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, "model-downloader") == 2

    assert capsys.readouterr().err == (
        f"no release tag older than v0.0.6 defines model-downloader in {LONG} differently "
        "(read back to v0.0.1): there is nothing to roll back to\n"
    )


def test_a_service_the_old_tag_lacks_is_refused_not_removed(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)

    def add_service(document: dict[str, Any]) -> None:
        extra = dict(document["services"]["nginx"])
        extra["container_name"] = "nginx-extra"
        del extra["ports"]
        document["services"]["nginx-extra"] = extra

    world.commit(world.a, "a second nginx", T0 + days(1), edit=add_service)
    tag_now(world, monkeypatch, T0 + days(1))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, "nginx-extra") == 2

    assert capsys.readouterr().err == (
        f"the previous definition is at v0.0.1, where {LONG} has no service nginx-extra: rolling back would "
        "remove it, not restore it; roll it back by hand or pick --from\n"
    )


def test_a_rollback_whose_old_file_lacks_a_deployed_service_is_refused_by_the_orphan_rule(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)

    def add_service_and_change_r2(document: dict[str, Any]) -> None:
        extra = dict(document["services"]["nginx"])
        extra["container_name"] = "nginx-extra"
        del extra["ports"]
        document["services"]["nginx-extra"] = extra
        set_flag(R2, "--max-running-requests", "24")(document)

    world.commit(world.a, "a second nginx; r2 24", T0 + days(1), edit=add_service_and_change_r2)
    tag_now(world, monkeypatch, T0 + days(1))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2) == 2

    assert capsys.readouterr().err == (
        f"{LONG} at v0.0.1 lacks nginx-extra, which v0.0.2 defines: compose/up from v0.0.1 would remove it "
        "as orphans; roll back by hand with the orphan rule in mind, or fix forward\n"
    )


def test_a_newest_tag_younger_than_the_gate_is_not_taken_as_deployed(
    shared: tuple[World, dict[str, str]], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    world, _ = shared
    at(monkeypatch, T0 + days(6))  # v0.0.6 was committed a day ago

    assert run(world, "rollback", LONG, R2) == 2

    assert capsys.readouterr().err == (
        "the newest release tag v0.0.6 is not deployable until 2026-10-08T12:00:00Z (MIN_TAG_AGE_HOURS=48), "
        "so no host runs it under the gate; pass --from TAG with the tag the host runs (compose-manager shows it)\n"
    )


def test_rollback_without_any_release_tag_says_so_and_how_to_create_them(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(world, "rollback", LONG, R2) == 2

    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("no release tags in this clone; create them with ")


def test_an_unknown_from_tag_or_service_is_a_usage_error(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--from", "v0.0.9") == 2
    from_err = capsys.readouterr().err
    assert run(world, "rollback", LONG, "model-sg-r3") == 2
    service_err = capsys.readouterr().err

    assert from_err.startswith("no release tag 'v0.0.9' in this clone; ")
    assert service_err.startswith(f"{LONG} at v0.0.1 has no service model-sg-r3; its services: ")


# --------------------------------------------------------------------------- records and digests


def test_a_record_survives_formatting_and_parsing() -> None:
    record = release.Record(
        "a" * 40, "passed: nox -s check", {LONG: {R1: "0123456789ab", R2: "ba9876543210"}}
    )

    assert release.parse_message(release.format_message("v0.0.3", record)) == record
    assert release.parse_message("just a tag message\n") is None
    with pytest.raises(release.RecordError, match="malformed service line"):
        release.parse_message(f"tierops-release: 1\ncommit: {'a' * 40}\nservice: {LONG} {R1}\n")


def test_a_digest_follows_meaning_not_spelling() -> None:
    document = load_roundtrip(Path(__file__).resolve().parents[2] / LONG)
    before = release.definition_digests(document)
    document["services"][R1]["command"] = " ".join(document["services"][R1]["command"])
    document["services"][R1]["environment"] = [
        f"{key}={value}" for key, value in document["services"][R1]["environment"].items()
    ]

    assert release.definition_digests(document) == before


def test_a_digest_covers_the_configs_a_service_mounts() -> None:
    document = load_roundtrip(Path(__file__).resolve().parents[2] / LONG)
    before = release.definition_digests(document)
    document["configs"]["nginx_conf"]["content"] += "# one more line\n"

    after = release.definition_digests(document)

    assert {name for name in before if before[name] != after[name]} == {"nginx"}


def set_variant(service: str, suffix: str) -> Callable[[dict[str, Any]], None]:
    """An edit that gives `service` a new config_variant, on its label and in the
    collector's scrape job, as the generators write both."""

    def edit(document: dict[str, Any]) -> None:
        labels = document["services"][service]["labels"]
        old = labels["tierops.otel.config_variant"]
        labels["tierops.otel.config_variant"] = old + suffix
        config = document["configs"]["otelcol_app_config"]
        config["content"] = str(config["content"]).replace(
            f"config_variant: {old}\n", f"config_variant: {old + suffix}\n"
        )

    return edit


def test_the_collector_whose_labels_the_rollback_reverts_goes_back_with_it_last(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)
    world.commit(world.a, "r2: a new variant", T0 + days(1), edit=set_variant(R2, "-x"))
    tag_now(world, monkeypatch, T0 + days(1))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert (plan["changed"], plan["followers"], plan["warnings"]) == ([R2], ["otelcol-contrib"], [])
    assert [step["service"] for step in plan["steps"] if step["action"] == "up"] == [R2, "otelcol-contrib"]
    steps_of(plan)  # every call read against compose-manager's contract


def test_the_collector_is_left_alone_when_rolling_it_back_would_mislabel_another_engine(
    world: World, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tag_now(world, monkeypatch, T0)

    def both(document: dict[str, Any]) -> None:
        set_variant(R2, "-x")(document)
        set_variant(R1, "-y")(document)

    world.commit(world.a, "r1 and r2: new variants", T0 + days(1), edit=both)
    tag_now(world, monkeypatch, T0 + days(1))
    at(monkeypatch, T0 + days(10))
    capsys.readouterr()

    assert run(world, "rollback", LONG, R2, "--format", "json") == 0

    plan = json.loads(capsys.readouterr().out)
    assert plan["followers"] == []
    assert plan["warnings"] == [
        f"otelcol-contrib differ at v0.0.1 too, but so do {R1}, which this rollback leaves alone: rolling the "
        "telemetry back would mislabel them; recreate it by hand once every engine runs its final definition"
    ]
