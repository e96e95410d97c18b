"""Whole files: added, removed, renamed, empty, multi-document, unreadable on one side, bad refs."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollout.diff.changes import Status
from tests.rollout.diffkit import LONG, changeset, commit, file_change, new_repo, prod_text, run_cli, write

ONE = "services:\n  app:\n    image: app:1\n"
TWO = "services:\n  app:\n    image: app:2\n"


def test_an_added_and_a_removed_file_list_their_services() -> None:
    added = changeset({}, {"prod/new.yaml": ONE}).files[0]
    assert (added.status, [s.status for s in added.services]) == (Status.ADDED, [Status.ADDED])
    removed = changeset({"prod/old.yaml": ONE}, {}).files[0]
    assert (removed.status, [s.status for s in removed.services]) == (Status.REMOVED, [Status.REMOVED])


def test_a_renamed_file_is_one_rename_with_what_changed() -> None:
    text = prod_text()
    result = changeset({LONG: text}, {"prod/long.yaml": text.replace('"0.80"', '"0.85"')})
    (file,) = result.files
    assert (file.status, file.old_path, file.path) == (Status.RENAMED, LONG, "prod/long.yaml")
    assert [service.name for service in file.services] == [
        "model-sg-glm53-w4afp8-tp4-r1",
        "model-sg-glm53-w4afp8-tp4-r2",
    ]


def test_unrelated_files_are_not_taken_for_a_rename() -> None:
    result = changeset({"prod/a.yaml": ONE}, {"prod/b.yaml": prod_text()})
    assert sorted(file.status for file in result.files) == [Status.ADDED, Status.REMOVED]


def test_a_url_in_a_flow_sequence_parses_as_compose_reads_it() -> None:
    # libyaml (ruamel.yaml.clib) rejects this YAML 1.2 plain scalar; Compose accepts it.
    old = "services:\n  app:\n    healthcheck:\n      test: [CMD, curl, http://localhost:8000/health]\n"
    new = old.replace("/health", "/ready")
    (change,) = file_change(old, new).services[0].changes
    assert (change.old, change.new) == (
        ["CMD", "curl", "http://localhost:8000/health"],
        ["CMD", "curl", "http://localhost:8000/ready"],
    )


def test_an_empty_file_is_refused_as_compose_refuses_it() -> None:
    file = file_change("", ONE)
    assert file.status is Status.ERROR
    assert file.error == (
        "prod/x.yaml:1:1: empty compose file; expected a mapping (services: ...) (in the base, base (bbbbbbb))"
    )


def test_a_multi_document_file_is_compared_as_compose_merges_its_documents() -> None:
    old = f"{ONE}---\nservices:\n  other:\n    image: other:1\n"
    new = f"{TWO}---\nservices:\n  other:\n    image: other:1\n---\n{ONE}"
    (file,) = changeset({"prod/m.yaml": old}, {"prod/m.yaml": new}).files
    # The third document sets app back to app:1, as `-f a -f b -f c` would: no change.
    assert (file.document, file.status, file.services) == (None, Status.UNCHANGED, ())
    merged = f"{ONE}---\nservices:\n  app:\n    image: app:2\n"
    (file,) = changeset({"prod/m.yaml": ONE}, {"prod/m.yaml": merged}).files
    assert [service.name for service in file.services] == ["app"]
    assert file.label == "prod/m.yaml"


def test_an_inserted_empty_first_document_changes_nothing() -> None:
    text = prod_text()
    assert file_change(text, "{}\n---\n" + text).status is Status.UNCHANGED


def test_a_file_that_does_not_parse_on_one_side_is_an_error_line_and_the_rest_goes_on() -> None:
    result = changeset(
        {"prod/a.yaml": ONE, "prod/b.yaml": ONE},
        {"prod/a.yaml": "services:\n  app: [unclosed\n", "prod/b.yaml": TWO},
    )
    bad, good = result.files
    assert bad.status is Status.ERROR
    assert bad.error == (
        "prod/a.yaml:3:1: invalid YAML: expected ',' or ']', but got '<stream end>' "
        "(in the head, the working tree)"
    )
    assert good.status is Status.CHANGED


def test_a_duplicate_key_error_never_quotes_the_values() -> None:
    file = file_change(ONE, "services:\n  app:\n    image: a\n    image: hf_AbCdEfGhIjKlMnOpQrStUv\n")
    assert file.error == (
        "prod/x.yaml:4:5: duplicate key 'image' (first at line 3); Compose refuses it: "
        'mapping key "image" already defined at line 3 (in the head, the working tree)'
    )


def test_a_top_level_that_is_not_a_mapping_is_refused_with_its_place() -> None:
    file = file_change(ONE, "- just\n- a list\n")
    assert file.error == (
        "prod/x.yaml:1:1: document 1 is a sequence; every document of a compose file must be a mapping "
        "(Compose: top-level object must be a mapping) (in the head, the working tree)"
    )


def test_cli_exits_2_with_one_line_for_a_file_that_does_not_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE, "prod/b.yaml": ONE})
    write(repo, {"prod/a.yaml": "services: [\n", "prod/b.yaml": TWO})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["diff"])
    assert code == 2
    assert err == ""
    assert out.splitlines()[1:] == [
        "prod/a.yaml: cannot compare: prod/a.yaml:2:1: invalid YAML: expected the node content, "
        "but found '<stream end>' (in the head, the working tree)",
        "prod/b.yaml: 1 service(s) changed",
        "  app: image: app:1 -> app:2",
    ]
    code, out, err = run_cli(monkeypatch, capsys, repo, ["diff", "--format", "json"])
    assert code == 2
    assert err.splitlines() == [
        "prod/a.yaml: prod/a.yaml:2:1: invalid YAML: expected the node content, but found '<stream end>' "
        "(in the head, the working tree)"
    ]


def test_a_ref_that_does_not_exist_is_exit_2_and_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["diff", "--base", "no-such-ref"])
    assert (code, out) == (2, "")
    assert err == "unknown git ref 'no-such-ref'; check the name with `git rev-parse --verify`\n"
    code, out, err = run_cli(monkeypatch, capsys, repo, ["plan"], base_env="v9.9.9")
    assert (code, out, err) == (
        2,
        "",
        "unknown git ref 'v9.9.9'; check the name with `git rev-parse --verify`\n",
    )


def test_a_path_that_exists_nowhere_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {"prod/a.yaml": ONE})
    code, out, err = run_cli(monkeypatch, capsys, repo, ["diff", "prod/typo.yaml"])
    assert (code, out) == (2, "")
    assert err == (
        "prod/typo.yaml: no such file or directory at the merge-base of HEAD and origin/main (de48f44) "
        "or the working tree\n"
    )


def test_a_file_renamed_between_two_commits_is_reported_as_renamed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = new_repo(tmp_path, {LONG: prod_text()})
    commit(repo, {LONG: None, "prod/long.yaml": prod_text()}, "rename")
    code, out, _ = run_cli(monkeypatch, capsys, repo, ["diff", "--base", "HEAD~1", "--head", "HEAD"])
    assert code == 0
    assert out.splitlines()[1] == f"{LONG} -> prod/long.yaml: renamed from {LONG}: no semantic change"


@pytest.mark.parametrize("command", ["diff", "plan"])
def test_a_named_file_that_is_not_a_compose_file_is_refused_saying_where_its_change_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # Read as compose files they would have no services: "no changes", "0 services to
    # recreate", for a change that recreates an engine once generated.
    targets = "base:\n  tier: base\n  hosts: [h1]\n"
    repo = new_repo(
        tmp_path,
        {"prod/a.yaml": ONE, "generators/s.targets.yaml": targets, "ci.yaml": "on: push\n"},
    )
    write(repo, {"generators/s.targets.yaml": targets.replace("[h1]", "[h1, h2]"), "ci.yaml": "on: [push]\n"})
    code, out, err = run_cli(monkeypatch, capsys, repo, [command, "generators/s.targets.yaml"])
    assert (code, out) == (2, "")
    assert err == (
        "generators/s.targets.yaml: a stack's data, not a compose file; its change reaches prod/ through "
        "`nox -s generate`; diff or plan the prod/ files it renders\n"
    )
    # The shared parts hold a `services:` mapping too, but of parts, not of a file.
    parts = "services:\n  proxy: {image: proxy}\n"
    write(repo, {"generators/parts.yaml": parts})
    code, out, err = run_cli(monkeypatch, capsys, repo, [command, "generators/parts.yaml"])
    assert (code, out) == (2, "")
    assert err.startswith("generators/parts.yaml: a stack's data, not a compose file;")
    code, out, err = run_cli(monkeypatch, capsys, repo, [command, "ci.yaml"])
    assert (code, out) == (2, "")
    assert err == (
        "ci.yaml: not a compose file (no top-level `services:` key); "
        "name compose files or directories that hold them (default: prod/)\n"
    )
