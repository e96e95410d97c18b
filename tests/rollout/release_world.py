"""Real git worlds for the release tests: a bare origin and two clones of it.

The repositories hold the repository's real prod files (copied, then mutated between
commits with the same round-trip YAML the generators use) and its ci/dummy.env, so
digests and `docker compose config` see exactly what production would.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FLEET
from tierops.yamlio import roundtrip

ROOT = Path(__file__).resolve().parents[2]
LONG = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-LongContext.yaml"
CANARY = "prod/GLM-5.3-Flash-SGL-TP4-W4AFP8-Canary.yaml"
R1 = "model-sg-glm53-w4afp8-tp4-r1"
R2 = "model-sg-glm53-w4afp8-tp4-r2"
T0 = datetime(2026, 10, 1, 12, 0, tzinfo=UTC)

# The cheap real check the tests verify with: it fails when a file BROKEN is committed.
CHECK = shlex.join(
    [
        sys.executable,
        "-c",
        "import pathlib, sys; broken = pathlib.Path('BROKEN').exists(); "
        "print('BROKEN is committed' if broken else 'ok'); sys.exit(int(broken))",
    ]
)

# What `tag` prints and records for CHECK: it is an override of `nox -s check`, so the
# tag records it as that, never as `passed`.
OVERRIDE_LINE = (
    f"verify: `{CHECK}` from $TIEROPS_RELEASE_VERIFY replaces `nox -s tests check`: "
    "tags record it as skipped (override), never as passed\n"
)
OVERRIDDEN = (
    f"skipped (override): `{CHECK}` from $TIEROPS_RELEASE_VERIFY exited 0 instead of `nox -s tests check`"
)
VIA_CHECK = "NOT verified: skipped (override)"

# Variables a git hook sets for its own repository; a nested git in another clone
# must not inherit them.
_GIT_LOCAL_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
    "GIT_PREFIX",
)


def git(cwd: Path, *args: str, when: datetime | None = None) -> str:
    env = dict(os.environ)
    if when is not None:
        stamp = f"{int(when.timestamp())} +0000"
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout.strip()


def isolate_git(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No user or system git config, a fixed identity, tag dates at T0 unless a test
    moves them; the verify command is the cheap CHECK."""
    config = home / "gitconfig"
    config.write_text(
        "[user]\n\tname = Release Test\n\temail = release@example.invalid\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        # No housekeeping child processes (`gc --auto`, `maintenance run --auto`) after
        # every commit, fetch and push, nor origin's receive-pack starting `gc --auto`
        # only to find it off: the worlds are small and short-lived.
        "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n[receive]\n\tautogc = false\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in (*_GIT_LOCAL_ENV, "GIT_AUTHOR_DATE", "MIN_TAG_AGE_HOURS"):
        monkeypatch.delenv(name, raising=False)
    set_tag_time(monkeypatch, T0)
    monkeypatch.setenv("TIEROPS_RELEASE_VERIFY", CHECK)


def set_tag_time(monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    """Tags made from now on carry this tagger date (git honours GIT_COMMITTER_DATE)."""
    monkeypatch.setenv("GIT_COMMITTER_DATE", f"{int(when.timestamp())} +0000")


@dataclass(frozen=True)
class World:
    origin: Path
    a: Path
    b: Path

    def commit(
        self,
        repo: Path,
        message: str,
        when: datetime,
        *,
        edit: Callable[[dict[str, Any]], None] | None = None,
        file: str = LONG,
        extra: dict[str, str] | None = None,
        push: bool = True,
    ) -> str:
        """Commit an edit of `file`'s services (and extra files) at `when`; push main."""
        if edit is not None:
            edit_services(repo / file, edit)
        for name, text in (extra or {}).items():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text, encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", message, when=when)
        if push:
            git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
        return git(repo, "rev-parse", "HEAD")

    def remote_tags(self) -> dict[str, str]:
        """origin's refs/tags/* -> object id (a moved tag changes its object id)."""
        return _ref_map(
            git(self.origin, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/tags")
        )

    def local_tags(self, repo: Path) -> dict[str, str]:
        return _ref_map(git(repo, "for-each-ref", "--format=%(refname:strip=2) %(objectname)", "refs/tags"))


def _ref_map(text: str) -> dict[str, str]:
    return dict(line.split(" ", 1) for line in text.splitlines() if line)


def tagged_commits(repo: Path) -> dict[str, str]:
    """tag name -> the commit it points at (peeled)."""
    out = git(repo, "for-each-ref", "--format=%(refname:strip=2) %(objectname) %(*objectname)", "refs/tags")
    result: dict[str, str] = {}
    for line in out.splitlines():
        name, obj, *peeled = line.split(" ")
        result[name] = peeled[0] if peeled and peeled[0] else obj
    return result


def tag_by_hand(repo: Path, name: str, commit: str, *, record_of: str | None = None) -> None:
    """An annotated tag `name` on `commit` whose message is the tool's record of
    `record_of` (default: `commit`): a release tag when the commit is on main's
    first-parent history and the names fit, and a well-made impostor otherwise."""
    from rollout.release import record as release

    record = release.record_for_commit(repo, record_of or commit, release.VERIFY_SKIPPED)
    message = repo / ".git" / f"tag-message-{name}"
    message.write_text(release.format_message(name, record), encoding="utf-8")
    git(repo, "tag", "-a", name, "-F", str(message), commit)
    message.unlink()


def make_world(tmp_path: Path) -> World:
    """origin (bare) with one commit at T0 holding two real prod files; clones a and b.

    Built once per test process (`_template`) and copied: every world starts as the
    same bytes, so only the copy and the remote URLs are per test.
    """
    return copy_world(_template(), tmp_path)


def release_base(world: World) -> None:
    """Make `world`, which must be make_world's and untouched, the world after `release
    tag --push` on its base commit: v0.0.1, here and on origin.

    The tag is made by the tool once per test process, on a world of its own, with the
    same verify command, identity and dates as every test's (isolate_git), so it is the
    same tag object a test's own run would make; then it is copied like make_world's.
    """
    home = world.a.parent
    for name in WORLD_DIRS:
        shutil.rmtree(home / name)
    copy_world(_released(), home)


WORLD_DIRS = ("origin.git", "a", "b")  # the seed is left out: no test reads it


def copy_world(template: Path, tmp_path: Path) -> World:
    for name in WORLD_DIRS:
        shutil.copytree(template / name, tmp_path / name, symlinks=True)
    # The clones name their remote by absolute path (as `git clone` wrote it): point
    # them at this test's origin. The bare origin names the seed the same way.
    old, new = str(template), str(tmp_path)
    for git_dir in (tmp_path / "a" / ".git", tmp_path / "b" / ".git", tmp_path / "origin.git"):
        for name in ("config", "FETCH_HEAD"):
            path = git_dir / name
            if path.is_file():
                path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    return World(tmp_path / "origin.git", tmp_path / "a", tmp_path / "b")


@functools.cache
def _template() -> Path:
    """The world of make_world, built in a directory of its own, removed at exit."""
    home = Path(tempfile.mkdtemp(prefix="tierops-release-world-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, home)
        _build_world(home)
    return home


@functools.cache
def _released() -> Path:
    """make_world's world after the tool's own `release tag --push` (release_base)."""
    from rollout.cli import main

    home = Path(tempfile.mkdtemp(prefix="tierops-release-world-v0.0.1-"))
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate_git(monkeypatch, home)
        world = copy_world(_template(), home)
        code = main(["release", "tag", "--repo", str(world.a), "--push"])
        if code != 0:
            raise AssertionError(f"release tag --push of the base world exited {code}")
    return home


def _build_world(tmp_path: Path) -> World:
    seed = tmp_path / "seed"
    (seed / "prod").mkdir(parents=True)
    (seed / "ci").mkdir()
    for name in (LONG, CANARY, "ci/dummy.env"):
        shutil.copyfile(FLEET / name, seed / name)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, "commit", "-q", "-m", "base: two prod files", when=T0)
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    a, b = tmp_path / "a", tmp_path / "b"
    git(tmp_path, "clone", "-q", str(origin), str(a))
    git(tmp_path, "clone", "-q", str(origin), str(b))
    # git's sample hooks are a third of a world's files, copied and deleted per test.
    for sample in tmp_path.glob("*/**/hooks/*.sample"):
        sample.unlink()
    return World(origin, a, b)


def edit_services(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    yaml = roundtrip()
    document = yaml.load(path.read_text(encoding="utf-8"))
    edit(document)
    out = StringIO()
    yaml.dump(document, out)
    path.write_text(out.getvalue(), encoding="utf-8")


def set_flag(service: str, flag: str, value: str) -> Callable[[dict[str, Any]], None]:
    """An edit that sets `flag`'s value in `service`'s exec-form command."""

    def edit(document: dict[str, Any]) -> None:
        command = document["services"][service]["command"]
        command[command.index(flag) + 1] = value

    return edit


def days(n: float) -> timedelta:
    return timedelta(days=n)


_PROGRESS = re.compile(r"(checking [0-9a-f]{12} \(\d+ of \d+\): .*|  [0-9a-f]{12}: (passed|failed) in \d+ s)")


def without_progress(err: str) -> str:
    """stderr without `release tag`'s progress lines (one before and one after each
    commit's check), which the tests of the progress itself pin."""
    return "".join(line for line in err.splitlines(True) if not _PROGRESS.fullmatch(line.rstrip("\n")))
