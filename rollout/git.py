"""git through stdlib subprocess: every failure becomes one line naming what was asked.

Read-side helpers shared by `diff`, `plan` and `release`. Never changes the
repository's state; release's write operations (tags, pushes, worktrees) live with
release.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

from tierops.errors import TieropsError, UsageError


class GitError(TieropsError):
    """git refused or failed; the message carries git's own one-line reason."""


def run(repo: Path, args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        )
    except FileNotFoundError:
        raise GitError("git is not installed or not on PATH") from None
    if check and proc.returncode != 0:
        reason = _one_line(proc.stderr) or f"exit code {proc.returncode}"
        raise GitError(f"git {' '.join(args)}: {reason}")
    return proc


def toplevel(start: Path) -> Path:
    proc = run(start, ["rev-parse", "--show-toplevel"], check=False)
    if proc.returncode != 0:
        raise UsageError(f"{start}: not inside a git repository")
    return Path(proc.stdout.strip())


def resolve(repo: Path, ref: str) -> str:
    """The commit id of `ref`, or a UsageError naming the ref."""
    proc = run(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UsageError(f"unknown git ref '{ref}'", hint="check the name with `git rev-parse --verify`")
    return proc.stdout.strip()


def ref_exists(repo: Path, ref: str) -> bool:
    proc = run(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
    return proc.returncode == 0


def merge_base(repo: Path, a: str, b: str) -> str | None:
    proc = run(repo, ["merge-base", a, b], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def show(repo: Path, commit: str, path: str) -> bytes | None:
    """The bytes of `path` at `commit`, or None when the file does not exist there."""
    proc = subprocess.run(
        ["git", "cat-file", "blob", f"{commit}:{path}"],
        cwd=repo,
        capture_output=True,
        check=False,
    )
    return proc.stdout if proc.returncode == 0 else None


def ls_files(repo: Path, commit: str, directory: str) -> list[str]:
    """Paths (repository-relative) of files directly under `directory` at `commit`."""
    proc = run(repo, ["ls-tree", "--name-only", f"{commit}:{directory}"], check=False)
    if proc.returncode != 0:
        return []
    return sorted(f"{directory.rstrip('/')}/{name}" for name in proc.stdout.splitlines() if name)


def is_clean(repo: Path) -> bool:
    return not run(repo, ["status", "--porcelain", "--untracked-files=normal"]).stdout.strip()


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1].removeprefix("fatal: ").removeprefix("error: ") if lines else ""


# --- read-side helpers for `diff` and `plan` (appended; release keeps its own) ---


def ls_tree(repo: Path, commit: str, paths: Sequence[str]) -> list[str]:
    """Repository-relative paths of the files at `commit` under `paths` (recursive)."""
    proc = run(repo, ["ls-tree", "-r", "--name-only", "-z", commit, "--", *paths])
    return sorted(name for name in proc.stdout.split("\0") if name)


def tags_at(repo: Path, commit: str, pattern: str = "v0.0.*") -> list[str]:
    """The tags matching `pattern` that point at `commit`, in version order (newest last)."""
    proc = run(repo, ["tag", "--points-at", commit, "--list", pattern, "--sort=version:refname"])
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def head_commit(repo: Path) -> str | None:
    """HEAD's commit id, or None in a repository without commits yet."""
    proc = run(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], check=False)
    if proc.returncode != 0:
        return None
    return proc.stdout.strip() or None


def commits_touching(repo: Path, path: str) -> list[tuple[str, str | None]]:
    """(commit, first parent or None) for every commit that changed `path`, oldest first."""
    proc = run(repo, ["log", "--reverse", "--format=%H %P", "--", path])
    pairs: list[tuple[str, str | None]] = []
    for line in proc.stdout.splitlines():
        ids = line.split()
        if ids:
            pairs.append((ids[0], ids[1] if len(ids) > 1 else None))
    return pairs
