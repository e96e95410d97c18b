"""Helpers for the diff and plan tests: real git repositories and real compose text.

Imported as `tests.rollout.diffkit` (the repository root is on pytest's pythonpath).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.diff.boundary import mask_changeset
from rollout.diff.changes import ChangeSet, FileChange, Side
from rollout.diff.compare import compare, compare_file
from rollout.diff.report import render_text
from rollout.diff.snapshot import BASE_ENV, Snapshot
from tests.conftest import FLEET

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
PROD = FLEET / "prod"
LONG = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"
R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"

# Fixed identity and dates: commit ids, and so every printed short id, are reproducible.
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "tierops tests",
    "GIT_AUTHOR_EMAIL": "tests@tierops.invalid",
    "GIT_COMMITTER_NAME": "tierops tests",
    "GIT_COMMITTER_EMAIL": "tests@tierops.invalid",
    "GIT_AUTHOR_DATE": "2026-10-01T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-10-01T12:00:00+00:00",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    # No template: `git init` copies no sample hooks (most of a new repository's files,
    # written here and deleted again with the test's directory).
    "GIT_TEMPLATE_DIR": "",
}

BASE = Side("base", "b" * 40, "--base")
HEAD = Side("", None, "the working tree")


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def write(repo: Path, files: Mapping[str, str | bytes | None]) -> None:
    """Write (or, for None, delete) files in a working tree."""
    for name, content in files.items():
        path = repo / name
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str) -> str:
    write(repo, files)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def new_repo(tmp_path: Path, files: Mapping[str, str | bytes | None], *, origin: bool = True) -> Path:
    """A repository on `main` with one commit of `files`, pushed to a bare origin."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, files, "base")
    if origin:
        bare = tmp_path / "origin.git"
        git(tmp_path, "init", "-q", "--bare", str(bare))
        git(repo, "remote", "add", "origin", str(bare))
        git(repo, "push", "-q", "origin", "main")
        git(repo, "fetch", "-q", "origin")
    return repo


def run_cli(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    repo: Path,
    argv: Sequence[str],
    *,
    base_env: str | None = None,
) -> tuple[int, str, str]:
    """`python -m rollout ARGV` in-process, from inside `repo`: (exit code, stdout, stderr)."""
    monkeypatch.chdir(repo)
    if base_env is None:
        monkeypatch.delenv(BASE_ENV, raising=False)
    else:
        monkeypatch.setenv(BASE_ENV, base_env)
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def prod_text(name: str = LONG) -> str:
    return (FLEET / name).read_text(encoding="utf-8")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def file_change(old: str | None, new: str | None, path: str = "prod/x.yaml") -> FileChange:
    """The (unmasked) FileChange of one single-document file."""
    results = compare_file(
        path,
        None if old is None else old.encode(),
        None if new is None else new.encode(),
        BASE,
        HEAD,
    )
    assert len(results) == 1, results
    return results[0]


def changeset(old: Mapping[str, str], new: Mapping[str, str], paths: Sequence[str] = ("prod",)) -> ChangeSet:
    base = Snapshot(BASE, {name: text.encode() for name, text in old.items()})
    head = Snapshot(HEAD, {name: text.encode() for name, text in new.items()})
    return mask_changeset(compare(base, head, paths))


def text_lines(old: str, new: str, path: str = "prod/x.yaml") -> list[str]:
    """The text report's lines about one file, without the header line."""
    report = render_text(changeset({path: old}, {path: new}))
    return report.splitlines()[1:]
