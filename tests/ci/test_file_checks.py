"""ci/file_checks.py: six per-file checks in one process, each on the files its own hook would get."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ci.file_checks import assign, main

ROOT = Path(__file__).resolve().parents[2]


def test_each_check_gets_the_files_its_row_selects() -> None:
    files = ["README.md", "prod/x.yaml", ".github/workflows/check.yml", "noxfile.py"]
    assert assign(files) == {
        "check-yaml": [".github/workflows/check.yml"],
        "end-of-file-fixer": ["README.md", ".github/workflows/check.yml", "noxfile.py"],
        "trailing-whitespace": ["README.md", ".github/workflows/check.yml", "noxfile.py"],
        "check-merge-conflict": files,
        "detect-private-key": files,
        "token-shapes": files,
    }


def test_the_repository_s_tracked_text_files_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    tracked = subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    # The fleet's files are the check's to judge (`nox -s lint`), never a test's.
    fleet = ("prod/", "generators/", "validators/contracts/", "ci/dummy.env")
    text = [name for name in tracked if not name.endswith((".png", ".whl")) and not name.startswith(fleet)]
    assert main(text) == 0


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository, as pre-commit always runs in one (check-merge-conflict asks git)."""
    monkeypatch.chdir(tmp_path)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "prod").mkdir()
    return tmp_path


def test_the_fixers_fix_outside_prod_and_never_touch_prod(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (work / "notes.md").write_text("trailing   \nno newline at the end", encoding="utf-8")
    (work / "prod" / "x.yaml").write_text("a: 1   \n", encoding="utf-8")
    assert main(["notes.md", "prod/x.yaml"]) == 1
    assert (work / "notes.md").read_text(encoding="utf-8") == "trailing\nno newline at the end\n"
    assert (work / "prod" / "x.yaml").read_text(encoding="utf-8") == "a: 1   \n"
    out = capsys.readouterr().out
    assert "end-of-file-fixer: failed\n  Fixing notes.md\n" in out
    assert "trailing-whitespace: failed\n  Fixing notes.md\n" in out
    assert main(["notes.md", "prod/x.yaml"]) == 0  # fixed: the second run is clean


def test_broken_yaml_a_private_key_and_a_token_each_fail_by_name(
    work: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (work / "bad.yaml").write_text("a: [1, 2\n", encoding="utf-8")
    (work / "key.txt").write_text("-----BEGIN " + "RSA PRIVATE KEY-----\n", encoding="utf-8")
    token = "ghp" + "_" + "x1Y" * 12
    (work / "ci.env").write_text(f"GH={token}\n", encoding="utf-8")
    assert main(["bad.yaml", "key.txt", "ci.env"]) == 1
    out = capsys.readouterr().out
    assert "check-yaml: failed\n" in out
    assert "detect-private-key: failed\n  Private key found: key.txt\n" in out
    assert "token-shapes: failed\n  ci.env:1:4: token-shaped string (40 characters)\n" in out
    assert token not in out  # a finding says where, never what


def test_merge_markers_fail_during_a_merge(work: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (work / ".git" / "MERGE_MSG").write_text("merge\n", encoding="utf-8")
    (work / ".git" / "MERGE_HEAD").write_text("0" * 40 + "\n", encoding="utf-8")
    (work / "f.txt").write_text("<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n", encoding="utf-8")
    assert main(["f.txt"]) == 1
    assert (
        "check-merge-conflict: failed\n  f.txt:1: Merge conflict string '<<<<<<<' found\n"
        in capsys.readouterr().out
    )
