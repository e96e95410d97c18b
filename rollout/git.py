"""git through stdlib subprocess: every failure becomes one line naming what was asked.

Read-side helpers shared by `diff`, `plan` and `release`. Never changes the
repository's state; release's write operations (tags, pushes, worktrees) live with
release.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from tierops.errors import TieropsError, UsageError


class GitError(TieropsError):
    """git refused or failed; the message carries git's own one-line reason."""


# What `git rev-parse --local-env-vars` lists: variables that point git at another
# repository, index or object store. A git hook sets some for its own repository (a
# pre-commit hook's GIT_INDEX_FILE would make a worktree rewrite the clone's index), and
# every command here names its repository itself.
LOCAL_ENV = frozenset(
    {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_INTERNAL_SUPER_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
    }
)


def environment() -> dict[str, str]:
    """The environment every git call runs in: the caller's, without LOCAL_ENV; the
    objects as committed (`git replace` would make a record describe another tree than
    the commit it tags); no terminal prompt (a remote asking for a password fails with a
    line, never hangs a release job until its timeout)."""
    env = {key: value for key, value in os.environ.items() if key not in LOCAL_ENV}
    return {**env, "GIT_NO_REPLACE_OBJECTS": "1", "GIT_TERMINAL_PROMPT": "0"}


def run(repo: Path, args: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = environment()
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=repo,
            stdin=subprocess.DEVNULL,  # with GIT_TERMINAL_PROMPT=0: nothing waits for input
            capture_output=True,
            # git's own bytes, whatever the locale: paths and messages are UTF-8 here, and
            # a byte that is not round-trips (surrogateescape) instead of crashing a run
            # under LC_ALL=C or ISO-8859-1.
            encoding="utf-8",
            errors="surrogateescape",
            check=False,
            env=env,
        )
    except OSError as exc:
        # subprocess reports a missing working directory like a missing program:
        # tell them apart, or `--repo /nonexistent` says git is not installed.
        if not Path(repo).is_dir():
            raise UsageError(f"{repo}: {_no_directory(Path(repo))}") from None
        if shutil.which("git") is None:
            raise GitError("git is not installed or not on PATH") from None
        raise GitError(f"cannot run git in {repo}: {exc.strerror or exc}") from None
    if check and proc.returncode != 0:
        reason = _one_line(proc.stderr) or f"exit code {proc.returncode}"
        raise GitError(f"git {' '.join(args)}: {reason}")
    return proc


def _unsafe(value: str) -> str | None:
    """Why `value` must not reach git as an argument, or None: git would read a leading
    `-` as an option (`--upload-pack=CMD` runs CMD), and a control character has no place
    in a ref or a remote's name."""
    if not value:
        return "is empty"
    if value.startswith("-"):
        return "starts with '-', which git would read as an option"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in value):
        return "contains a control character"
    return None


def check_ref(ref: str) -> str:
    """`ref` when it may be handed to git as a revision; else a UsageError naming it."""
    reason = _unsafe(ref)
    if reason:
        raise UsageError(f"not a git ref: {ref!r} {reason}")
    return ref


def check_remote(name: str) -> str:
    """`name` when it may be handed to git as a remote (a name, URL or path); else a
    UsageError naming it."""
    reason = _unsafe(name) or ("contains whitespace" if any(char.isspace() for char in name) else None)
    if reason:
        raise UsageError(f"not a git remote: {name!r} {reason}")
    return name


def _no_directory(path: Path) -> str:
    return "is not a directory" if path.exists() else "no such directory"


def toplevel(start: Path) -> Path:
    if not start.is_dir():
        raise UsageError(
            f"{start}: {_no_directory(start)}", hint="pass a path inside a clone of this repository"
        )
    proc = run(start, ["rev-parse", "--show-toplevel"], check=False)
    if proc.returncode != 0:
        reason = _one_line(proc.stderr)
        if "dubious ownership" in reason:
            # git refuses a repository another user owns (safe.directory): say that, not
            # "not a repository", or the fix is never found.
            raise UsageError(
                f"{start}: git refuses the repository: {reason}",
                hint="if you trust it: `git config --global --add safe.directory <its path>`",
            )
        raise UsageError(f"{start}: not inside a git repository")
    return Path(proc.stdout.strip())


def is_shallow(repo: Path) -> bool:
    """True in a shallow clone (`git clone --depth N`, CI's default checkout)."""
    return run(repo, ["rev-parse", "--is-shallow-repository"]).stdout.strip() == "true"


def remote(repo: Path, name: str, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """A git command that talks to remote `name`; failing, one line that says the remote
    could not be reached and why (git's first line, not its last: that one is a generic
    "make sure you have the correct access rights ... and the repository exists")."""
    check_remote(name)
    proc = run(repo, args, check=False)
    if proc.returncode != 0:
        raise GitError(
            f"cannot reach remote {name!r} ({remote_url(repo, name)}): "
            f"{_one_line(proc.stderr) or f'git {args[0]} exit code {proc.returncode}'}",
            hint=f"check its URL (`git remote get-url {name}`) and the network, then rerun",
        )
    return proc


def remote_url(repo: Path, name: str) -> str:
    """The URL of remote `name`, or `name` itself when it is a URL or path, not a remote."""
    proc = run(repo, ["remote", "get-url", name], check=False)
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else name


def resolve(repo: Path, ref: str) -> str:
    """The commit id of `ref`, or a UsageError naming the ref."""
    check_ref(ref)
    proc = run(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise UsageError(f"unknown git ref '{ref}'", hint="check the name with `git rev-parse --verify`")
    return proc.stdout.strip()


def ref_exists(repo: Path, ref: str) -> bool:
    check_ref(ref)
    proc = run(repo, ["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], check=False)
    return proc.returncode == 0


def merge_base(repo: Path, a: str, b: str) -> str | None:
    check_ref(a)
    check_ref(b)
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
        env=environment(),
    )
    return proc.stdout if proc.returncode == 0 else None


def ls_files(repo: Path, commit: str, directory: str) -> list[str]:
    """Paths (repository-relative) of files directly under `directory` at `commit`: its
    blobs, never a directory (or submodule) whose name looks like a file's."""
    proc = run(repo, ["ls-tree", "-z", f"{commit}:{directory}"], check=False)
    if proc.returncode != 0:
        return []
    # Each entry: "<mode> <type> <object>\t<name>".
    entries = (entry.split("\t", 1) for entry in proc.stdout.split("\0") if "\t" in entry)
    return sorted(
        f"{directory.rstrip('/')}/{name}" for info, name in entries if info.split(" ")[1:2] == ["blob"]
    )


def is_clean(repo: Path) -> bool:
    return not run(repo, ["status", "--porcelain", "--untracked-files=normal"]).stdout.strip()


def _one_line(text: str) -> str:
    """git's first line that says something: later lines repeat it in general terms."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(("hint:", "warning:"))] or lines
    return meaningful[0].removeprefix("fatal: ").removeprefix("error: ") if meaningful else ""


# --- read-side helpers for `diff` and `plan` (appended; release keeps its own) ---


def ls_tree(repo: Path, commit: str, paths: Sequence[str]) -> list[str]:
    """Repository-relative paths of the files at `commit` under `paths` (recursive). A
    submodule there is refused: its files are another repository's, which the working
    tree's side would read and a commit's side could not."""
    proc = run(repo, ["ls-tree", "-r", "-z", commit, "--", *paths])
    names: list[str] = []
    for entry in proc.stdout.split("\0"):
        if not entry:
            continue
        info, _, name = entry.partition("\t")
        if info.startswith("120000 ") and name.endswith((".yaml", ".yml")):
            # git holds a link's target path, which would be read as a one-line YAML file.
            raise UsageError(
                f"{name!a} at {commit[:12]}: a symbolic link, committed as the path it names",
                hint="commit the file itself",
            )
        if info.split(" ")[1:2] == ["commit"]:
            raise UsageError(
                f"{name!a} at {commit[:12]}: a git submodule; only this repository's files are read",
                hint="diff the submodule in its own repository",
            )
        names.append(name)
    return sorted(names)


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
