"""`release history` reads like a changelog: per tag the commit's subject and author, when it
is deployable, and per service one line of what changed since the previous tag listed.

Real git in a temporary directory, with a small handwritten compose file (not prod/),
tagged by the tool itself (`release tag --no-verify`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.release import record as release
from tests.rollout.history_text import shown
from tests.rollout.release_world import T0, days, git, isolate_git

FILE = "prod/app.yaml"
ENGINE_FLAGS = [
    "--port",
    "30000",
    "--tp-size",
    "4",
    "--max-running-requests",
    "32",
    "--chunked-prefill-size",
    "4096",
]


def compose(
    *,
    flags: list[str] = ENGINE_FLAGS,
    web: bool = True,
    sidecar: bool = False,
    page: str = "hello",
) -> str:
    command = ", ".join(json.dumps(item) for item in ["serve", *flags])
    text = (
        "services:\n"
        "  engine:\n"
        "    image: registry.invalid/engine@sha256:" + "a" * 64 + "\n"
        f"    command: [{command}]\n"
        "    environment:\n"
        "      LOG_LEVEL: info\n"
    )
    if web:
        text += (
            "  web:\n"
            "    image: registry.invalid/web@sha256:" + "b" * 64 + "\n"
            "    configs:\n"
            "      - source: web_conf\n"
            "        target: /etc/web.conf\n"
        )
    if sidecar:
        text += "  sidecar:\n    image: registry.invalid/sidecar@sha256:" + "c" * 64 + "\n"
    if web:
        text += f"configs:\n  web_conf:\n    content: |\n      page {page}\n"
    return text


def commit(repo: Path, message: str, when: datetime, text: str, *, author: str = "Ada Ops") -> str:
    (repo / FILE).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "-c", f"user.name={author}", "commit", "-q", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


def tag(repo: Path, monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"{int(when.timestamp())} +0000")
    assert main(["release", "tag", "--repo", str(repo), "--no-verify"]) == 0


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    """v0.0.1 engine and web; v0.0.2 four engine flags; v0.0.3 the web page (a config);
    v0.0.4 only a comment; v0.0.5 sidecar added, web removed. A day apart each."""
    isolate_git(monkeypatch, tmp_path)
    repo = tmp_path / "repo"
    (repo / "prod").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "engine and web", T0, compose())
    tag(repo, monkeypatch, T0)
    flags = [
        "--port",
        "30001",
        "--tp-size",
        "8",
        "--max-running-requests",
        "24",
        "--chunked-prefill-size",
        "8192",
    ]
    steps = [
        ("engine: TP8, smaller batches", compose(flags=flags)),
        ("web: a new page", compose(flags=flags, page="world")),
        ("comment only", "# the same services\n" + compose(flags=flags, page="world")),
        ("sidecar in, web out", compose(flags=flags, web=False, sidecar=True)),
    ]
    for number, (message, text) in enumerate(steps, start=1):
        commit(repo, message, T0 + days(number), text, author="Bo Rel" if number % 2 else "Ada Ops")
        tag(repo, monkeypatch, T0 + days(number))
    monkeypatch.setattr(release, "utcnow", lambda: T0 + days(4) + days(0.5))
    capsys.readouterr()
    return repo


def history(repo: Path, *args: str) -> int:
    return main(["release", "history", FILE, *args, "--repo", str(repo)])


def test_each_tag_shows_its_subject_author_deployability_and_what_changed_per_service(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history(repo) == 0

    entries = shown(capsys.readouterr().out)
    # v0.0.4 (a comment) has the same definitions as v0.0.3: not listed
    assert [entry.tag for entry in entries] == ["v0.0.5", "v0.0.3", "v0.0.2", "v0.0.1"]
    newest, page, flags, first = entries
    assert (newest.subject, newest.author) == ("sidecar in, web out", "Ada Ops <release@example.invalid>")
    assert newest.committed == "2026-10-05T12:00:00Z"
    assert newest.deployable == "no, from 2026-10-07T12:00:00Z"
    assert newest.changes == ("sidecar: added", "web: removed")
    assert (page.subject, flags.author) == ("web: a new page", "Bo Rel <release@example.invalid>")
    assert page.deployable == "yes (since 2026-10-05T12:00:00Z)"
    assert page.changes == ("web: config web_conf changed",)
    # four flag changes: three named, the rest counted, in the diff's own words
    assert flags.changes == (
        "engine: --port: 30000 -> 30001, --tp-size: 4 -> 8, --max-running-requests: 32 -> 24, and 1 more",
    )
    assert first.changes == ("first recorded: 2 services (engine, web)",)


def test_named_services_show_only_their_own_lines_against_the_previous_tag_listed_for_them(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert history(repo, "web") == 0

    entries = shown(capsys.readouterr().out)
    assert [entry.tag for entry in entries] == ["v0.0.5", "v0.0.3", "v0.0.1"]
    assert [entry.changes for entry in entries] == [
        ("web: removed",),
        ("web: config web_conf changed",),
        ("first recorded: 1 service (web)",),
    ]
    assert entries[0].change == "changed"


def test_the_json_format_has_the_same_entries(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert history(repo, "engine", "--format", "json") == 0

    data = json.loads(capsys.readouterr().out)
    assert [item["tag"] for item in data["tags"]] == ["v0.0.2", "v0.0.1"]
    newest = data["tags"][0]
    assert newest["subject"] == "engine: TP8, smaller batches"
    assert newest["author"] == "Bo Rel <release@example.invalid>"
    assert (newest["deployable"], newest["deployable_from"]) == (True, "2026-10-04T12:00:00Z")
    assert newest["changes"][0].startswith("engine: --port: 30000 -> 30001, ")
    assert (newest["verified"], newest["verify"]) == (False, "skipped (--no-verify)")
    assert data["services"] == ["engine"] and data["ignored"] == []


def test_a_subject_with_a_terminal_escape_is_shown_inert(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(repo, "engine: \x1b[31mred\x1b[0m", T0 + days(5), compose(flags=["--port", "1"]))
    tag(repo, monkeypatch, T0 + days(5))
    capsys.readouterr()

    assert history(repo, "engine") == 0

    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert shown(out)[0].subject == "engine: \\u001b[31mred\\u001b[0m"


def test_a_file_the_diff_cannot_read_keeps_its_tag_listed_and_says_why(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A tag whose record (the history's source) is fine, on a commit whose file today's
    # reader refuses: written by hand, as an older version of the tool might have.
    broken = commit(repo, "a file the diff refuses", T0 + days(5), "services: [not, a, mapping]\n")
    record = release.Record(broken, release.VERIFY_SKIPPED, {FILE: {"engine": "0" * 12}})
    git(repo, "tag", "-a", "v0.0.6", "-m", release.format_message("v0.0.6", record), broken)
    monkeypatch.setattr(release, "utcnow", lambda: datetime(2026, 11, 1, tzinfo=UTC))

    assert history(repo, "engine") == 0

    newest = shown(capsys.readouterr().out)[0]
    assert newest.tag == "v0.0.6" and newest.changes[0].startswith(
        "(what changed is not shown: the diff cannot read it: "
    )


def test_a_tag_that_starts_reading_a_host_variable_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (repo / FILE).read_text(encoding="utf-8")
    new = text.replace("      LOG_LEVEL: info\n", "      LOG_LEVEL: info\n      RATE: ${PROXY_RPS:-50}\n")
    commit(repo, "engine: a rate limit", T0 + days(5), new)
    tag(repo, monkeypatch, T0 + days(5))
    capsys.readouterr()
    assert history(repo, "--format", "json") == 0
    newest = json.loads(capsys.readouterr().out)["tags"][0]
    assert "new host variables: PROXY_RPS (default '50')" in newest["changes"]
