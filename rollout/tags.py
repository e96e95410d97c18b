"""Make release tags: which commits, the check at each, then create and push.

The write side of git lives here and only here. Rules (SPEC 7, issue 6):

- Each first-parent commit of main after the newest tagged one, up to the requested
  commit, gets the next `v0.0.N` (numeric order), oldest first, so a missed run is
  backfilled. In a repository without any release tag only the requested commit is
  tagged: older history was never checked as a release and is not backfilled.
- A tag is never moved, deleted or overwritten, and nothing is ever force-pushed. The
  local ref is created with `git update-ref <ref> <object> ""` (create-only), and with
  --push only *after* the remote accepted it: the tag object is made with `git mktag`
  (no ref), pushed as the single ref `<object>:refs/tags/v0.0.N` (`--atomic`, no
  force, so the remote refuses a name it already has), and only then made local. A
  lost race therefore leaves nothing behind but an unreferenced object that git's gc
  collects.
- On a lost race the remote's tags are read again: if the other run tagged this very
  commit, nothing more is done; otherwise the next free number is tried, a bounded
  number of times. Numbers must follow first-parent order, so if the other run tagged
  a *newer* commit meanwhile, this one is refused instead of getting a larger number.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollout import git
from rollout.release import tag_name, tag_number
from tierops.errors import RefusedError, UsageError

DEFAULT_VERIFY = "nox -s check"
VERIFY_ENV = "TIEROPS_RELEASE_VERIFY"
MAX_ATTEMPTS = 5
NO_VERIFY_HINT = "fix main, or tag it anyway with --no-verify (the tag message then says so)"


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class RemoteState:
    name: str
    main: str | None  # the remote branch's commit, None when it has no such branch
    tags: Mapping[str, str]  # release tag name -> the commit it points at


def local_tags(repo: Path) -> dict[str, str]:
    """Local `v0.0.N` tags -> the commit each points at (peeled)."""
    fmt = "%(refname:strip=2) %(objectname) %(*objectname)"
    out = git.run(repo, ["for-each-ref", f"--format={fmt}", "refs/tags/v0.0.*"]).stdout
    result: dict[str, str] = {}
    for line in out.splitlines():
        name, obj, *peeled = line.split(" ")
        if tag_number(name) is not None:
            result[name] = peeled[0] if peeled and peeled[0] else obj
    return result


def remote_state(repo: Path, remote: str, branch: str) -> RemoteState:
    """One `git ls-remote`: the remote's branch head and its release tags (peeled)."""
    head_ref = f"refs/heads/{branch}"
    out = git.run(repo, ["ls-remote", remote, head_ref, "refs/tags/v0.0.*"]).stdout
    main: str | None = None
    direct: dict[str, str] = {}
    peeled: dict[str, str] = {}
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == head_ref:
            main = sha
        elif ref.startswith("refs/tags/"):
            name = ref.removeprefix("refs/tags/")
            if name.endswith("^{}"):
                peeled[name.removesuffix("^{}")] = sha
            elif tag_number(name) is not None:
                direct[name] = sha
    return RemoteState(remote, main, {name: peeled.get(name, sha) for name, sha in direct.items()})


def first_parent(repo: Path, ref: str) -> list[str]:
    """The first-parent history of `ref`, oldest first."""
    out = git.run(repo, ["rev-list", "--first-parent", "--reverse", ref]).stdout
    return out.split()


def _is_ancestor(repo: Path, commit: str, of: str) -> bool:
    return git.run(repo, ["merge-base", "--is-ancestor", commit, of], check=False).returncode == 0


def _has_commit(repo: Path, sha: str) -> bool:
    return git.run(repo, ["cat-file", "-e", f"{sha}^{{commit}}"], check=False).returncode == 0


# --------------------------------------------------------------------------- planning


@dataclass(frozen=True)
class TagPlan:
    branch: str
    target: str
    commits: tuple[str, ...]  # to tag, oldest first
    already: tuple[str, ...]  # the target's existing release tags (then commits is empty)
    after: str | None  # the release tag the backfill starts after; None: first release
    history: tuple[str, ...]  # the branch's first-parent commits, oldest first
    remote: str | None
    push: bool


def plan(repo: Path, rev: str, *, branch: str, remote: str | None, push: bool) -> TagPlan:
    """Which commits to tag, or a RefusedError/UsageError (exit 2) saying why none.

    Nothing is created here; the only write is a `git fetch` of the remote's branch
    when its head is not yet known locally (to test ancestry)."""
    # The check runs in a worktree of the commit anyway; a dirty tree is refused because
    # whoever runs this believes they are releasing what they see, and they are not.
    if not git.is_clean(repo):
        raise RefusedError(
            "the working tree has uncommitted or untracked changes",
            where=str(repo),
            hint="commit or stash them first (`git status`); release tags mark commits, never a working tree",
        )
    if not git.ref_exists(repo, f"refs/heads/{branch}"):
        raise UsageError(
            f"no local branch {branch!r}", hint=f"fetch it: `git fetch origin {branch}:{branch}`"
        )
    target = git.resolve(repo, rev)
    # First-parent: the merges to main, one per pull request; the commits of a merged
    # branch were never deployed as such and never checked together with main.
    history = first_parent(repo, f"refs/heads/{branch}")
    if target not in history:
        raise RefusedError(
            f"{rev} ({target[:12]}) is not on the first-parent history of {branch}",
            hint=f"release tags mark merges to {branch}: pick a commit from `git log --first-parent {branch}`",
        )

    state: RemoteState | None = None
    if remote is not None:
        state = remote_state(repo, remote, branch)
        _require_on_remote(repo, target, rev, state, branch)
    local = local_tags(repo)
    tags = _merge_tags(local, state)
    # A local-only tag marks its commit as released here but not on the remote; pushing
    # new tags past it would leave a hole in the remote's numbering forever.
    if push and state is not None:
        unpushed = sorted((name for name in local if name not in state.tags), key=_number)
        if unpushed:
            raise RefusedError(
                f"local tag{'s' if len(unpushed) > 1 else ''} {', '.join(unpushed)} "
                f"{'are' if len(unpushed) > 1 else 'is'} not on {state.name}",
                hint=f"push {'them' if len(unpushed) > 1 else 'it'} first "
                f"(`git push {state.name} {' '.join('refs/tags/' + name for name in unpushed)}`), "
                "so both sides number releases the same way",
            )

    by_commit: dict[str, list[str]] = {}
    for name, commit in tags.items():
        by_commit.setdefault(commit, []).append(name)
    index = history.index(target)
    if target in by_commit:
        names = tuple(sorted(by_commit[target], key=_number))
        return TagPlan(branch, target, (), names, None, tuple(history), remote, push)
    newer = [commit for commit in history[index + 1 :] if commit in by_commit]
    if newer:
        name = min(by_commit[newer[0]], key=_number)
        raise RefusedError(
            f"{target[:12]} is older than {newer[0][:12]}, which is already tagged {name}",
            hint="release numbers follow first-parent order, so an older untagged commit stays untagged",
        )
    previous = [i for i, commit in enumerate(history[:index]) if commit in by_commit]
    if previous:
        start = previous[-1]
        after: str | None = max(by_commit[history[start]], key=_number)
        commits = tuple(history[start + 1 : index + 1])
    else:
        # The first release: older commits were never checked as releases.
        after, commits = None, (target,)
    return TagPlan(branch, target, commits, (), after, tuple(history), remote, push)


def _require_on_remote(repo: Path, target: str, rev: str, state: RemoteState, branch: str) -> None:
    if state.main is None:
        raise RefusedError(
            f"{state.name} has no branch {branch!r}", hint=f"push it first: `git push {state.name} {branch}`"
        )
    if not _has_commit(repo, state.main):
        # The remote is ahead of this clone: fetch its branch (no tags) to test ancestry.
        git.run(repo, ["fetch", "--quiet", "--no-tags", state.name, f"refs/heads/{branch}"])
    if not _is_ancestor(repo, target, state.main):
        raise RefusedError(
            f"{rev} ({target[:12]}) is not on {state.name}'s {branch} yet",
            hint=f"push {branch} first (`git push {state.name} {branch}`): a release must exist where hosts fetch it",
        )


def _merge_tags(local: Mapping[str, str], state: RemoteState | None) -> dict[str, str]:
    """Local and remote release tags together; a name on two commits is refused."""
    merged = dict(local)
    if state is None:
        return merged
    for name, commit in state.tags.items():
        if name in merged and merged[name] != commit:
            raise RefusedError(
                f"tag {name} is {merged[name][:12]} here but {commit[:12]} on {state.name}",
                hint="tags never move: find out which is right before tagging again; this command changes neither",
            )
        merged[name] = commit
    return merged


def _number(name: str) -> int:
    number = tag_number(name)
    return -1 if number is None else number


# --------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class Verification:
    commit: str
    command: tuple[str, ...]
    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    @property
    def command_text(self) -> str:
        return shlex.join(self.command)


def verify_command(option: str | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """--verify-command, else $TIEROPS_RELEASE_VERIFY, else `nox -s check`."""
    raw = option if option is not None else environ.get(VERIFY_ENV) or DEFAULT_VERIFY
    try:
        tokens = tuple(shlex.split(raw))
    except ValueError as exc:
        raise UsageError(f"cannot split the verify command {raw!r}: {exc}") from None
    if not tokens:
        raise UsageError("the verify command is empty", hint=f"unset {VERIFY_ENV} or use --no-verify")
    _program(tokens)  # fail before anything is planned or printed
    return tokens


def _program(command: Sequence[str]) -> str:
    program = shutil.which(command[0])
    if program is None:
        raise UsageError(
            f"verify command {command[0]!r} not found on PATH",
            hint=f"install it (README: nox), set --verify-command or {VERIFY_ENV}, or use --no-verify",
        )
    return program


def verify(repo: Path, commit: str, command: Sequence[str]) -> Verification:
    """Run `command` (no shell) in a temporary detached worktree of `commit`.

    The worktree and everything the command wrote into it (nox's .nox/) are removed
    afterwards, whatever happened."""
    program = _program(command)
    tmp = Path(tempfile.mkdtemp(prefix="tierops-release-"))
    worktree = tmp / "worktree"
    try:
        git.run(repo, ["worktree", "add", "--quiet", "--detach", str(worktree), commit])
        # A virtualenv of the caller (e.g. nox's `release` session) must not leak into
        # the check's own sessions.
        env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
        # stdin closed: a check that waits for input must fail in CI, not hang it.
        proc = subprocess.run(
            [program, *command[1:]],
            cwd=worktree,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            check=False,
        )
        return Verification(commit, tuple(command), proc.returncode, proc.stdout)
    finally:
        git.run(repo, ["worktree", "remove", "--force", str(worktree)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)
        git.run(repo, ["worktree", "prune"], check=False)


# --------------------------------------------------------------------------- creating


@dataclass(frozen=True)
class Created:
    commit: str
    name: str
    pushed_to: str | None
    adopted: bool  # another run tagged this commit meanwhile; nothing was created
    lost: tuple[str, ...]  # names another run took first


def create(
    repo: Path, plan: TagPlan, commit: str, message: Callable[[str], str], *, attempts: int = MAX_ATTEMPTS
) -> Created:
    """Create (and with plan.push, push) the next release tag on `commit`.

    `message(name)` gives the tag message for a name: the name changes when a race is lost."""
    later = set(plan.history[plan.history.index(commit) + 1 :])
    lost: list[str] = []
    for _ in range(attempts):
        # Read both sides again on every attempt: after a lost race, the other run may
        # have tagged this commit, another one, or a newer one.
        state = remote_state(repo, plan.remote, plan.branch) if plan.remote else None
        tags = _merge_tags(local_tags(repo), state)
        mine = sorted((name for name, tagged in tags.items() if tagged == commit), key=_number)
        if mine:
            return Created(commit, mine[0], plan.remote, True, tuple(lost))
        newer = sorted((name for name, tagged in tags.items() if tagged in later), key=_number)
        if newer:
            raise RefusedError(
                f"{newer[0]} was made meanwhile on a newer commit than {commit[:12]}; "
                f"{commit[:12]} stays untagged (release numbers follow first-parent order)"
            )
        name = tag_name(max((_number(name) for name in tags), default=0) + 1)
        if git.ref_exists(repo, f"refs/tags/{name}"):
            raise RefusedError(f"tag {name} already exists in this clone", hint="tags are never overwritten")
        obj = make_tag_object(repo, commit, name, message(name))
        if plan.push and plan.remote:
            pushed = push_ref(repo, plan.remote, obj, name)
            if pushed == "taken":
                lost.append(name)
                continue
            if pushed == "same":
                return Created(commit, name, plan.remote, True, tuple(lost))
        create_ref(repo, name, obj, pushed_to=plan.remote if plan.push else None)
        return Created(commit, name, plan.remote if plan.push else None, False, tuple(lost))
    raise RefusedError(
        f"gave up on {commit[:12]} after {attempts} attempts: {plan.remote} took "
        f"{', '.join(lost)} first each time",
        hint="another run is tagging right now; rerun this command when it has finished",
    )


def make_tag_object(repo: Path, commit: str, name: str, message: str) -> str:
    """An annotated tag object for `commit` with no ref pointing at it yet."""
    # The committer identity, as `git tag` uses (CI sets GIT_COMMITTER_NAME/EMAIL).
    ident = git.run(repo, ["var", "GIT_COMMITTER_IDENT"]).stdout.strip()
    body = f"object {commit}\ntype commit\ntag {name}\ntagger {ident}\n\n{message}"
    proc = subprocess.run(["git", "mktag"], cwd=repo, input=body, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise git.GitError(f"git mktag: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


def push_ref(repo: Path, remote: str, obj: str, name: str) -> str:
    """Push one new tag ref: "new" when this push created it; "same" when the remote
    already had this very object under that name (another run made a byte-identical
    tag: same commit, record, tagger and second); "taken" when the remote has another
    object under that name (a lost race). Any other refusal is an error."""
    ref = f"refs/tags/{name}"
    proc = git.run(repo, ["push", "--atomic", "--porcelain", remote, f"{obj}:{ref}"], check=False)
    flags = [line.split("\t")[0] for line in proc.stdout.splitlines() if "\t" in line]
    if proc.returncode == 0:
        return "same" if flags == ["="] else "new"
    # Decide by the remote's state, not by the wording of the refusal: it differs
    # between git versions and hosting services ("already exists", "failed to lock").
    after = git.run(repo, ["ls-remote", remote, ref], check=False).stdout
    if ref in after.split():
        return "taken"
    reason = " ".join((proc.stderr.strip() or proc.stdout.strip()).split()) or f"exit code {proc.returncode}"
    raise git.GitError(f"git push {remote} {ref}: {reason}")


def create_ref(repo: Path, name: str, obj: str, *, pushed_to: str | None) -> None:
    # An empty old value makes update-ref create-only: it fails if the ref exists.
    proc = git.run(repo, ["update-ref", f"refs/tags/{name}", obj, ""], check=False)
    if proc.returncode != 0:
        reason = " ".join(proc.stderr.split())
        if pushed_to:
            raise RefusedError(
                f"{name} was pushed to {pushed_to} but could not be created here: {reason}",
                hint=f"fetch it: `git fetch {pushed_to} tag {name}`",
            )
        raise RefusedError(f"cannot create tag {name}: {reason}", hint="tags are never overwritten")
