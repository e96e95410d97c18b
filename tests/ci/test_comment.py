"""The sticky comment against a real HTTP fake of GitHub's REST API (tests/ci/fake_github.py):
created once, edited in place, left alone when unchanged; and the artifact read as data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci import comment
from ci.comment import GitHub, GitHubError, load_artifact, upsert
from ci.matrix_markdown import COMMENT_LIMIT, MARKER, size
from tests.ci.fake_github import BOT, TOKEN, fake_github
from tests.ci.matrix_records import COMMIT, diff_markdown, passing_record, plan_markdown, sample_record
from tierops.errors import InputError

REPO = "tierops/tierops"
RUN_URL = "https://github.com/tierops/tierops/actions/runs/42"


def write_artifact(
    directory: Path, record: object = None, number: object = 7, diff: str | None = None
) -> Path:
    (directory / "check").mkdir(parents=True, exist_ok=True)
    (directory / "check-matrix.json").write_text(json.dumps(record or sample_record()), encoding="utf-8")
    (directory / "pull-request.json").write_text(json.dumps({"number": number}), encoding="utf-8")
    (directory / "check" / "diff.md").write_text(
        diff if diff is not None else diff_markdown(), encoding="utf-8"
    )
    (directory / "check" / "plan.md").write_text(plan_markdown(), encoding="utf-8")
    return directory


def open_pull(state: object, number: int = 7, sha: str = COMMIT) -> None:
    state.pulls[number] = {"number": number, "state": "open", "head": {"sha": sha}}  # type: ignore[attr-defined]


def cli(artifact: Path, api: str, *extra: str) -> int:
    return comment.main(
        ["--artifact", str(artifact), "--repo", REPO, "--head-sha", COMMIT, "--api-url", api, *extra]
    )


@pytest.fixture
def token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)


# --------------------------------------------------------------------------- create, update, skip


def test_create_then_update_then_skip_when_unchanged(
    tmp_path: Path, token: None, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_github(REPO) as (api, state):
        open_pull(state)
        state.add(7, "LGTM", login="a-reviewer")
        artifact = write_artifact(tmp_path / "a")

        assert cli(artifact, api, "--run-url", RUN_URL) == 0
        (ours,) = [c for c in state.comments[7] if c["user"]["login"] == BOT]
        assert capsys.readouterr().out == f"created comment {ours['id']} on {REPO}#7\n"
        assert ours["body"].startswith(MARKER + "\n### Check matrix: **fail**")
        assert state.writes() == [("POST", f"/repos/{REPO}/issues/7/comments")]

        # a new push: another record, the same comment edited in place
        record = passing_record()
        write_artifact(artifact, record)
        assert cli(artifact, api, "--run-url", RUN_URL) == 0
        assert capsys.readouterr().out == f"updated comment {ours['id']} on {REPO}#7\n"
        assert len(state.comments[7]) == 2  # the reviewer's and ours: never a second one of ours
        assert ours["body"].startswith(MARKER + "\n### Check matrix: pass")
        assert state.writes()[-1] == ("PATCH", f"/repos/{REPO}/issues/comments/{ours['id']}")

        # the same record again (a re-run): nothing is written
        writes = len(state.writes())
        assert cli(artifact, api, "--run-url", RUN_URL) == 0
        assert capsys.readouterr().out == f"unchanged comment {ours['id']} on {REPO}#7\n"
        assert len(state.writes()) == writes


def test_our_comment_is_found_on_a_later_page(tmp_path: Path) -> None:
    with fake_github(REPO) as (api, state):
        for index in range(250):
            state.add(7, f"comment {index}", login="someone")
        ours = state.add(7, MARKER + "\nold body")
        github = GitHub(api, TOKEN, REPO)
        posted = upsert(github, 7, MARKER + "\nnew body")
        assert (posted.action, posted.comment_id) == ("updated", ours["id"])
        pages = [path for method, path in state.log if method == "GET"]
        assert len(pages) == 3  # 100 + 100 + 51, following Link: rel="next"
        assert ours["body"] == MARKER + "\nnew body"


def test_a_comment_of_somebody_else_quoting_the_marker_is_not_ours() -> None:
    with fake_github(REPO) as (api, state):
        quoted = state.add(7, MARKER + "\nI copied the bot's comment", login="a-human")
        posted = upsert(GitHub(api, TOKEN, REPO), 7, MARKER + "\nbody")
        assert posted.action == "created"
        assert quoted["body"] == MARKER + "\nI copied the bot's comment"


def test_a_marker_that_is_not_at_the_start_is_not_ours() -> None:
    with fake_github(REPO) as (api, state):
        state.add(7, "see " + MARKER)
        assert upsert(GitHub(api, TOKEN, REPO), 7, MARKER + "\nbody").action == "created"


def test_a_forged_pull_request_number_posts_nothing(
    tmp_path: Path, token: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """The artifact names #8, whose head is another commit: a fork cannot comment elsewhere."""
    with fake_github(REPO) as (api, state):
        open_pull(state, 8, sha="f" * 40)
        assert cli(write_artifact(tmp_path, number=8), api) == 0
        assert capsys.readouterr().out == f"not posted to {REPO}#8: #8's head is not {COMMIT[:12]}\n"
        assert state.writes() == []


def test_a_number_that_names_no_pull_request_posts_nothing(
    tmp_path: Path, token: None, capsys: pytest.CaptureFixture[str]
) -> None:
    """GitHub answers 404 for an issue's number or an unused one: the artifact's number
    is only a hint, so that is a skip, never an internal error."""
    with fake_github(REPO) as (api, state):
        assert cli(write_artifact(tmp_path, number=9), api) == 0
        assert capsys.readouterr().out == f"not posted to {REPO}#9: #9 is no pull request of {REPO}\n"
        assert state.writes() == []


def test_exactly_the_page_limit_of_comments_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """A last page that names no next one ends the listing, at the limit too."""
    monkeypatch.setattr(comment, "MAX_PAGES", 3)
    with fake_github(REPO) as (api, state):
        for index in range(300):
            state.add(7, f"comment {index}", login="someone")
        github = GitHub(api, TOKEN, REPO)
        assert len(list(github.comments(7))) == 300
        state.add(7, "one more", login="someone")
        with pytest.raises(GitHubError, match="more than 3 pages"):
            list(github.comments(7))


def test_a_closed_pull_request_gets_no_comment(tmp_path: Path, token: None) -> None:
    with fake_github(REPO) as (api, state):
        state.pulls[7] = {"number": 7, "state": "closed", "head": {"sha": COMMIT}}
        assert cli(write_artifact(tmp_path), api) == 0
        assert state.writes() == []


def test_a_wrong_token_fails_with_the_status(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "wrong")
    with fake_github(REPO) as (api, state):
        open_pull(state)
        assert cli(write_artifact(tmp_path), api) == 3
        assert state.writes() == []


def test_a_redirect_is_refused_so_the_token_goes_nowhere_else() -> None:
    with fake_github(REPO) as (api, state):
        state.redirect_to = "http://127.0.0.1:9/elsewhere"
        with pytest.raises(GitHubError, match="HTTP 302"):
            list(GitHub(api, TOKEN, REPO).comments(7))


def test_a_next_link_to_another_host_is_refused() -> None:
    github = GitHub("http://127.0.0.1:1", TOKEN, REPO)
    with pytest.raises(GitHubError, match="refusing to send the token"):
        github.request("GET", "https://evil.invalid/repos/x")


def test_next_link_reads_githubs_link_header() -> None:
    header = '<https://api.github.com/r?page=2>; rel="next", <https://api.github.com/r?page=5>; rel="last"'
    assert comment.next_link(header) == "https://api.github.com/r?page=2"
    assert comment.next_link('<https://api.github.com/r?page=1>; rel="prev"') is None
    assert comment.next_link(None) is None


# --------------------------------------------------------------------------- the artifact is data


def test_an_artifact_that_fails_the_schema_is_refused_before_any_request(
    tmp_path: Path, token: None, capsys: pytest.CaptureFixture[str]
) -> None:
    record = sample_record()
    record["files"].append("prod/<script>.yaml")
    with fake_github(REPO) as (api, state):
        open_pull(state)
        assert cli(write_artifact(tmp_path, record), api) == 2
        assert state.log == []
    assert "does not match ci/check-matrix.schema.json" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("check-matrix.json", b"{" * 100_000),  # nesting deeper than the parser's stack
        ("check-matrix.json", b"\xff\xfe not utf-8"),
        ("pull-request.json", b'{"number": "7; rm -rf /"}'),
        ("pull-request.json", b'{"number": true}'),
        ("pull-request.json", b"x" * 2000),  # over its size limit
    ],
)
def test_a_malformed_artifact_file_is_an_input_error(tmp_path: Path, name: str, content: bytes) -> None:
    write_artifact(tmp_path)
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError):
        load_artifact(tmp_path)


def test_an_oversized_diff_is_refused(tmp_path: Path) -> None:
    write_artifact(tmp_path, diff="x" * ((1 << 20) + 1))
    with pytest.raises(InputError, match="larger than"):
        load_artifact(tmp_path)


def test_a_record_over_a_megabyte_is_refused(tmp_path: Path) -> None:
    """A record is a few KiB per prod file; a larger one is read, checked and rendered in
    time that grows with it (about a second a megabyte), so the limit bounds the job."""
    write_artifact(tmp_path)
    record = tmp_path / "check-matrix.json"
    record.write_text(record.read_text(encoding="utf-8") + " " * (1 << 20), encoding="utf-8")
    with pytest.raises(InputError, match="larger than"):
        load_artifact(tmp_path)


def test_a_symlink_in_the_artifact_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("token", encoding="utf-8")
    artifact = write_artifact(tmp_path / "a")
    (artifact / "check" / "diff.md").unlink()
    (artifact / "check" / "diff.md").symlink_to(secret)
    with pytest.raises(InputError, match="not a regular file"):
        load_artifact(artifact)


def test_mentions_and_the_marker_in_the_diff_are_defused(tmp_path: Path) -> None:
    diff = f"{MARKER}\nping @octocat and @org/team; image nginx@sha256:{'0' * 64}\n"
    artifact = load_artifact(write_artifact(tmp_path, diff=diff))
    assert artifact.diff_markdown is not None
    assert "@\u200boctocat" in artifact.diff_markdown and "@\u200borg/team" in artifact.diff_markdown
    assert "nginx@sha256:" in artifact.diff_markdown  # not a mention: left as it is
    assert MARKER not in artifact.diff_markdown
    body = comment.comment_body(artifact, RUN_URL)
    assert body.count(MARKER) == 1


def test_a_huge_plan_still_makes_a_comment_under_the_limit(tmp_path: Path) -> None:
    artifact = write_artifact(tmp_path)
    (artifact / "check" / "plan.md").write_text(plan_markdown() * 30, encoding="utf-8")
    body = comment.comment_body(load_artifact(artifact), RUN_URL)
    assert size(body) <= COMMENT_LIMIT
    assert "> **Truncated**" in body


def test_dry_run_prints_the_body_and_needs_no_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    assert cli(write_artifact(tmp_path), "http://127.0.0.1:1", "--dry-run") == 0
    assert capsys.readouterr().out.startswith(MARKER + "\n")


def test_control_characters_in_the_artifacts_markdown_are_shown_escaped(tmp_path: Path) -> None:
    """A hyperlink's OSC, a C1 CSI and a bidi override from the artifact reach neither the
    dry run's terminal nor the comment as themselves."""
    diff = "hello \x1b]8;;http://x\x07link\x1b]8;;\x07 \x9b31m \u202eevil\r\nnext\n"
    artifact = load_artifact(write_artifact(tmp_path, diff=diff))
    assert artifact.diff_markdown is not None
    for control in ("\x1b", "\x07", "\x9b", "\u202e", "\r"):
        assert control not in artifact.diff_markdown
    assert (
        "hello \\u001b]8;;http:" in artifact.diff_markdown and "\\u202eevil\nnext" in artifact.diff_markdown
    )
