"""ci/base_ref.py: a push to main diffs against the commit before the push, with fallbacks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ci.base_ref import ZERO, base_for, main


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


def commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name, encoding="utf-8")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def three(tmp_path: Path) -> tuple[Path, list[str]]:
    git(tmp_path, "init", "-q", "-b", "main")
    return tmp_path, [commit(tmp_path, name) for name in ("a", "b", "c")]


def test_a_push_compares_with_the_commit_before_the_push(three: tuple[Path, list[str]]) -> None:
    repo, (first, _, _) = three
    assert base_for(repo, "push", first)[0] == first  # a push of two commits: b and c


@pytest.mark.parametrize("before", [ZERO, "", "1" * 40])
def test_a_first_push_or_a_vanished_before_falls_back_to_the_first_parent(
    three: tuple[Path, list[str]], before: str
) -> None:
    repo, (_, second, _) = three
    base, why = base_for(repo, "push", before)
    assert base == second
    assert "HEAD's first parent" in why


def test_a_root_commit_has_no_base(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path, "a")
    assert base_for(tmp_path, "push", ZERO) == (
        "",
        "push: the branch's first push (no commit before it), and HEAD is a root commit; the default base",
    )


def test_pull_requests_keep_the_tools_default(three: tuple[Path, list[str]]) -> None:
    repo, commits = three
    assert base_for(repo, "pull_request", commits[0])[0] == ""


def test_main_appends_to_github_output_and_prints_a_notice(
    three: tuple[Path, list[str]],
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    repo, (first, _, _) = three
    output = tmp_path_factory.mktemp("gh") / "output"
    output.write_text("earlier=1\n", encoding="utf-8")
    monkeypatch.chdir(repo)
    assert main([], {"EVENT_NAME": "push", "BEFORE": first, "GITHUB_OUTPUT": str(output)}) == 0
    assert output.read_text(encoding="utf-8") == f"earlier=1\nref={first}\n"
    assert (
        capsys.readouterr().out
        == f"::notice title=diff base::push: the commit before the push ({first[:12]})\n"
    )


def test_a_clone_git_refuses_is_named_not_taken_for_a_force_push(
    three: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, (first, _, _) = three
    monkeypatch.chdir(repo)
    # git's own switch for its ownership check, as if another user owned the clone.
    monkeypatch.setenv("GIT_TEST_ASSUME_DIFFERENT_OWNER", "1")
    assert main([], {"EVENT_NAME": "push", "BEFORE": first}) == 2
    out = capsys.readouterr().out
    assert out.startswith("::error title=diff base::git refuses this clone: ")
    assert "dubious ownership" in out and "force-push" not in out and "ref=" not in out
