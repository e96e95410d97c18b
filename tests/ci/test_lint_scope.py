"""ci/lint_scope.py: which hooks `nox -s lint` leaves to other sessions, decided against a real git history."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ci.lint_scope import DUPLICATED, META, scope


def git(repo: Path, *args: str) -> str:
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("GIT_")},
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
    }
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main with a config and a file; HEAD on a branch with one more commit that changes neither."""
    git(tmp_path, "init", "-q", "-b", "main")
    (tmp_path / ".pre-commit-config.yaml").write_text("repos: []\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "topic")
    (tmp_path / "a.txt").write_text("changed\n", encoding="utf-8")
    git(tmp_path, "commit", "-q", "-am", "edit a file")
    return tmp_path


def test_duplicated_hooks_are_always_skipped_and_meta_hooks_when_nothing_they_judge_changed(
    repo: Path,
) -> None:
    result = scope(repo, {})
    assert result.skip == (*DUPLICATED, *META)
    assert result.reasons[-1] == (
        "skips check-hooks-apply, check-useless-excludes: no config change and no added or deleted "
        "file since the merge-base of HEAD and main"
    )


def test_a_config_change_runs_the_meta_hooks(repo: Path) -> None:
    (repo / ".pre-commit-config.yaml").write_text("repos: [] # edited\n", encoding="utf-8")
    result = scope(repo, {})
    assert result.skip == tuple(DUPLICATED)
    assert result.reasons[-1].startswith(
        "runs check-hooks-apply, check-useless-excludes: .pre-commit-config.yaml differs"
    )


@pytest.mark.parametrize("change", ["add", "delete"])
def test_an_added_or_deleted_file_runs_the_meta_hooks(repo: Path, change: str) -> None:
    if change == "add":
        (repo / "b.txt").write_text("b\n", encoding="utf-8")
        git(repo, "add", "b.txt")
    else:
        git(repo, "rm", "-q", "a.txt")
    result = scope(repo, {})
    assert result.skip == tuple(DUPLICATED)
    assert "1 file(s) added or deleted" in result.reasons[-1]


def test_the_base_comes_from_tierops_base_ref(repo: Path) -> None:
    git(repo, "rm", "-q", "a.txt")
    git(repo, "commit", "-q", "-m", "delete a")
    assert scope(repo, {}).skip == tuple(DUPLICATED)  # deleted since main
    assert scope(repo, {"TIEROPS_BASE_REF": "HEAD"}).skip == (*DUPLICATED, *META)


def test_without_a_base_the_meta_hooks_run(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "trunk")
    (tmp_path / "a.txt").write_text("a\n", encoding="utf-8")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "only")
    assert scope(tmp_path, {}).skip == tuple(DUPLICATED)
    unknown = scope(tmp_path, {"TIEROPS_BASE_REF": "no-such-ref"})
    assert unknown.skip == tuple(DUPLICATED)
    assert "does not name a commit" in unknown.reasons[-1]


def test_lint_all_runs_every_hook_and_a_callers_skip_is_kept(repo: Path) -> None:
    assert scope(repo, {"TIEROPS_LINT_ALL": "1"}).skip == ()
    assert scope(repo, {"TIEROPS_LINT_ALL": "1", "SKIP": "ruff-check"}).skip == ("ruff-check",)
    assert scope(repo, {"SKIP": "ruff-check"}).skip == ("ruff-check", *DUPLICATED, *META)


def test_the_skipped_ids_are_hooks_of_the_config() -> None:
    from ruamel.yaml import YAML

    config = YAML(typ="safe", pure=True).load(Path(".pre-commit-config.yaml").read_text(encoding="utf-8"))
    ids = {hook["id"] for repo in config["repos"] for hook in repo["hooks"]}
    assert set(DUPLICATED) | set(META) <= ids
