"""The two ends of a comparison: which commits (or the working tree), and their files.

Defaults, in order: the base is `--base`, else `$TIEROPS_BASE_REF`, else
`$PRE_COMMIT_FROM_REF` (set by `pre-commit run --from-ref` and in pre-push hooks, so the
diff hook compares the range pre-commit checks), else the merge-base of HEAD and `origin/main`, else of HEAD and `main`, else HEAD itself; the head is
`--head`, else the working tree (untracked files included, so a new prod file shows).
The environment variable exists because nox hands its positional arguments to every
session of a chain (`nox -s check -- x` reaches pytest and the diff alike), so the
diff and plan sessions never read posargs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollout import git
from rollout.diff.changes import Side
from tierops.errors import UsageError
from tierops.yamlload import looks_like_compose, read_regular

BASE_ENV = "TIEROPS_BASE_REF"
PRE_COMMIT_ENV = "PRE_COMMIT_FROM_REF"
DEFAULT_PATHS = ("prod",)
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Snapshot:
    side: Side
    files: dict[str, bytes]  # repository-relative path -> bytes


def resolve_base(repo: Path, explicit: str | None, environ: Mapping[str, str] | None = None) -> Side:
    env = os.environ if environ is None else environ
    if explicit:
        return Side(explicit, git.resolve(repo, explicit), "--base")
    for name in (BASE_ENV, PRE_COMMIT_ENV):
        from_env = env.get(name, "").strip()
        if from_env:
            return Side(from_env, git.resolve(repo, from_env), f"${name}")
    head = git.head_commit(repo)
    if head is None:
        raise UsageError("the repository has no commits yet", hint="pass --base REF")
    for ref in ("origin/main", "main"):
        if git.ref_exists(repo, ref):
            base = git.merge_base(repo, "HEAD", ref)
            if base:
                return Side(ref, base, f"merge-base of HEAD and {ref}")
    return Side("HEAD", head, "HEAD (no origin/main or main)")


def resolve_head(repo: Path, explicit: str | None) -> Side:
    if explicit:
        return Side(explicit, git.resolve(repo, explicit), "--head")
    return Side("", None, "the working tree")


def repo_paths(repo: Path, paths: Sequence[str], cwd: Path | None = None) -> tuple[str, ...]:
    """PATHS (relative to the cwd) as repository-relative POSIX paths; default: prod/ at the root."""
    if not paths:
        return DEFAULT_PATHS
    here = (cwd or Path.cwd()).resolve()
    root = repo.resolve()
    result: list[str] = []
    for raw in paths:
        candidate = (here / raw).resolve()
        try:
            relative = candidate.relative_to(root)
        except ValueError:
            raise UsageError(f"{raw}: outside the repository {root}") from None
        text = relative.as_posix()
        result.append("." if text in ("", ".") else text)
    return tuple(dict.fromkeys(result))


def read_snapshot(repo: Path, side: Side, paths: Sequence[str]) -> Snapshot:
    """The files under `paths` at `side`: named files always, YAML files of named directories."""
    files: dict[str, bytes] = {}
    if side.commit is None:
        root = repo.resolve()
        for name in _worktree_files(repo, paths):
            _check_name(name, side)
            # Inside the repository only: a prod file that is a symbolic link to
            # /etc/shadow or another checkout is refused, never read and printed.
            if not (repo / name).resolve().is_relative_to(root):
                raise UsageError(f"{name}: a symbolic link that leads outside the repository {root}")
            # Regular files only, read without blocking and within the loader's budget:
            # a FIFO or a device named here is one line, never a hang.
            files[name] = read_regular(repo / name, name)
        return Snapshot(side, files)
    listed = git.ls_tree(repo, side.commit, [path for path in paths if path != "."] or ["."])
    for name in listed:
        if name in paths or name.endswith(YAML_SUFFIXES):
            _check_name(name, side)
            data = git.show(repo, side.commit, name)
            if data is not None:
                files[name] = data
    return Snapshot(side, files)


def _check_name(name: str, side: Side) -> None:
    """A file name with a line break or another control character would forge lines of
    the report (`prod/a.yaml\n+ image: evil`), and one with a bidi override or another
    invisible format character would show reviewers a name it is not: refused, shown
    escaped."""
    if not name.isprintable():
        raise UsageError(
            f"{name!a} at {side.describe()}: a file name with a control or invisible character",
            hint="rename it; no prod file name needs one",
        )


def _worktree_files(repo: Path, paths: Sequence[str]) -> list[str]:
    names: set[str] = set()
    for path in paths:
        target = repo / path
        if target.is_dir():
            for child in target.rglob("*"):
                relative = child.relative_to(repo)
                if ".git" in relative.parts or ".nox" in relative.parts:
                    if child.name == ".git" and child.parent != repo:
                        raise UsageError(
                            f"{child.parent.relative_to(repo).as_posix()!a}: a git submodule or nested "
                            "repository; only this repository's files are read",
                            hint="diff it in its own repository",
                        )
                    continue
                if child.name.endswith(YAML_SUFFIXES) and not child.is_dir():
                    names.add(relative.as_posix())
        elif target.exists() or target.is_symlink():
            names.add(Path(path).as_posix())  # a file, or something read_regular refuses
    return sorted(names)


def check_paths_exist(repo: Path, base: Snapshot, head: Snapshot, paths: Sequence[str]) -> None:
    """A PATH that names nothing on either side is a typo: say so instead of "no changes"."""
    for path in paths:
        if path in (".", *DEFAULT_PATHS):
            continue
        prefix = path.rstrip("/") + "/"
        known = [*base.files, *head.files]
        if not any(name == path or name.startswith(prefix) for name in known) and not (repo / path).exists():
            raise UsageError(
                f"{path}: no such file or directory at {base.side.describe()} or {head.side.describe()}"
            )
        _check_compose(path, [side.files[path] for side in (base, head) if path in side.files])


# The suffixes of a stack's data (generators/<stack>.source.yaml, .targets.yaml, and a
# pack's .pack.yaml: it has a `services:` key too), and
# the parts the stacks share (generators/parts.yaml: it has a `services:` key too).
STACK_DATA = (".source.yaml", ".targets.yaml", ".pack.yaml")
SHARED_PARTS = "generators/parts.yaml"


def _check_compose(path: str, sides: Sequence[bytes]) -> None:
    """A file named by hand that is not a compose file would read as one with no
    services ("no changes", "0 services to recreate") while its change may recreate an
    engine: refused, saying where its change shows."""
    if path.endswith(STACK_DATA) or path == SHARED_PARTS:
        raise UsageError(
            f"{path}: a stack's data, not a compose file",
            hint="its change reaches prod/ through `nox -s generate`; diff or plan the prod/ files it renders",
        )
    if sides and not any(looks_like_compose(data) for data in sides):
        raise UsageError(
            f"{path}: not a compose file (no top-level `services:` key)",
            hint="name compose files or directories that hold them (default: prod/)",
        )
