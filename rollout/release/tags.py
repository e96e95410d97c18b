"""Make release tags: which commits, the check at each, then create and push.

The write side of git lives here and only here. Rules:

- Only release tags count (rollout/release/record.py: `v0.0.N`, annotated, the tool's record
  of its own commit, on the branch's first-parent history), here and on the remote.
  Any other `v0.0.*` tag is ignored with its reason: it never answers "already
  tagged" and never raises the next number; its name is merely taken, so numbering
  skips it.
- Each first-parent commit of main after the newest released one, up to the requested
  commit, gets the next `v0.0.N` (numeric order), oldest first, so a missed run is
  backfilled. In a repository without any release tag only the requested commit is
  tagged: older history was never checked as a release and is not backfilled.
- A shallow clone is refused: it cannot see older commits and tags, so it would number
  the tip and leave every commit in between untaggable.
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
- The check runs at each commit before it is tagged (rollout/release/verify.py).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from rollout import git
from rollout.release.record import Record, prod_files, tag_name, tag_number
from rollout.release.tagset import (
    IgnoredTag,
    duplicate_reason,
    first_parent_line,
    judge,
    one_per_commit,
    read_tags,
    refuse_shallow,
    version_order,
)
from tierops.entry import Terminated
from tierops.errors import RefusedError, UsageError

MAX_ATTEMPTS = 5


NO_VERIFY_HINT = "fix main, or tag it anyway with --no-verify (the tag message then says so)"


@dataclass(frozen=True)
class RemoteTag:
    name: str
    obj: str  # the object the ref names
    peeled: str | None  # what an annotated tag points at; None for a lightweight tag


@dataclass(frozen=True)
class RemoteState:
    name: str
    main: str | None  # the remote branch's commit, None when it has no such branch
    refs: Mapping[str, RemoteTag]  # every v0.0.* tag on the remote


def remote_state(repo: Path, remote: str, branch: str) -> RemoteState:
    """One `git ls-remote`: the remote's branch head and every v0.0.* tag it has."""
    git.check_remote(remote)
    head_ref = f"refs/heads/{branch}"
    out = git.remote(repo, remote, ["ls-remote", remote, head_ref, "refs/tags/v0.0.*"]).stdout
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
            else:
                direct[name] = sha
    refs = {name: RemoteTag(name, sha, peeled.get(name)) for name, sha in direct.items()}
    return RemoteState(remote, main, refs)


@dataclass(frozen=True)
class TagView:
    """Both sides' `v0.0.*` tags, judged by one rule."""

    releases: Mapping[str, str]  # release tag name -> commit, local and remote together
    local_releases: frozenset[str]
    remote_names: frozenset[str]  # every v0.0.* name the remote has
    taken: frozenset[str]  # every v0.0.* name on either side: never created again
    ignored: tuple[IgnoredTag, ...]

    def next_name(self) -> tuple[str, tuple[IgnoredTag, ...]]:
        """The next release name, and the ignored tags whose names it skipped."""
        number = max((tag_number(name) or 0 for name in self.releases), default=0) + 1
        skipped: list[IgnoredTag] = []
        by_name = {tag.name: tag for tag in self.ignored}
        while tag_name(number) in self.taken:
            if tag_name(number) in by_name:
                skipped.append(by_name[tag_name(number)])
            number += 1
        return tag_name(number), tuple(skipped)

    def at(self, commits: Sequence[str]) -> tuple[IgnoredTag, ...]:
        wanted = set(commits)
        return tuple(tag for tag in self.ignored if tag.commit in wanted)


def view(repo: Path, branch: str, state: RemoteState | None) -> TagView:
    """Judge the local tags and (with a remote) the remote's by one rule, against the
    first-parent history of the local branch, origin's and the remote's."""
    extra: list[str] = []
    if state is not None and state.main is not None:
        _fetch_head(repo, state, branch)
        extra.append(state.main)
    line = first_parent_line(repo, branch, extra)
    local = read_tags(repo, branch, line=line)
    objects = _local_objects(repo)
    candidates: dict[str, str] = {tag.name: tag.commit for tag in local.releases}
    ignored: dict[str, IgnoredTag] = {tag.name: tag for tag in local.ignored}
    remote_names: frozenset[str] = frozenset()
    if state is not None:
        remote_names = frozenset(state.refs)
        for name, (commit, verdict) in _judge_remote(repo, state, objects, line, branch).items():
            released = not isinstance(verdict, str)
            if name in objects:
                here = objects[name][1]
                if here != commit and (released or name in candidates):
                    raise RefusedError(
                        f"tag {name} is {here[:12]} here but {commit[:12]} on {state.name}",
                        hint="tags never move: find out which is right before tagging again; "
                        "this command changes neither",
                    )
                if released:  # the remote's object under this name is the release
                    ignored.pop(name, None)
                    candidates[name] = commit
            elif released:
                candidates[name] = commit
            else:
                ignored[name] = IgnoredTag(name, commit, f"{verdict} (on {state.name})")
    # Every tag of local.releases is one per commit already; the remote may add a second.
    kept, dropped = one_per_commit(candidates.items())
    for name, first in dropped.items():
        ignored[name] = IgnoredTag(name, candidates[name], duplicate_reason(candidates[name], first))
    local_names = frozenset(objects)
    return TagView(
        kept,
        frozenset(name for name in kept if name in local_names),
        remote_names,
        local_names | remote_names,
        tuple(sorted(ignored.values(), key=lambda tag: version_order(tag.name))),
    )


def _local_objects(repo: Path) -> dict[str, tuple[str, str]]:
    """Local v0.0.* tag name -> (object id, the commit or object it peels to)."""
    fmt = "%(refname:strip=2) %(objectname) %(*objectname)"
    out = git.run(repo, ["for-each-ref", f"--format={fmt}", "refs/tags/v0.0.*"]).stdout
    result: dict[str, tuple[str, str]] = {}
    for line in out.splitlines():
        name, obj, *peeled = line.split(" ")
        result[name] = (obj, peeled[0] if peeled and peeled[0] else obj)
    return result


def _judge_remote(
    repo: Path,
    state: RemoteState,
    local: Mapping[str, tuple[str, str]],
    line: frozenset[str],
    branch: str,
) -> dict[str, tuple[str, Record | str]]:
    """Remote tag name -> (the commit it points at, its Record or why it is ignored),
    for every remote tag whose object differs from the local tag of that name. Tag
    objects this clone lacks are fetched first: objects only, no ref is written."""
    todo = [tag for tag in state.refs.values() if tag.name not in local or local[tag.name][0] != tag.obj]
    annotated = [tag for tag in todo if tag.peeled is not None]
    missing = [tag for tag in annotated if not _has_object(repo, tag.obj)]
    if missing:
        refspecs = [f"refs/tags/{tag.name}" for tag in missing]
        git.remote(
            repo,
            state.name,
            ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", state.name, *refspecs],
        )
    objects = _tag_objects(repo, [tag.obj for tag in annotated])
    result: dict[str, tuple[str, Record | str]] = {}
    for tag in todo:
        headers, message = objects.get(tag.obj, ({}, ""))
        commit = tag.peeled or tag.obj
        result[tag.name] = (
            commit,
            judge(
                tag.name,
                # ls-remote cannot tell a lightweight tag of a commit from one of a tree:
                # neither carries a record, so both are "lightweight".
                kind="tag" if tag.peeled is not None else "commit",
                target_kind=headers.get("type", ""),
                commit=commit,
                tag_field=headers.get("tag", ""),
                message=message,
                line=line,
                branch=branch,
            ),
        )
    return result


def _tag_objects(repo: Path, objects: Sequence[str]) -> dict[str, tuple[dict[str, str], str]]:
    """Tag object id -> (its header fields, its message), with one `git cat-file --batch`."""
    if not objects:
        return {}
    proc = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=repo,
        input="".join(f"{obj}\n" for obj in objects).encode("ascii"),
        capture_output=True,
        check=False,
        env=git.environment(),
    )
    if proc.returncode != 0:
        raise git.GitError(f"git cat-file --batch: {proc.stderr.decode(errors='replace').strip()}")
    data, at, result = proc.stdout, 0, {}
    for obj in objects:
        end = data.index(b"\n", at)
        header = data[at:end].decode("ascii").split()
        at = end + 1
        if len(header) != 3:  # "<id> missing"
            continue
        size = int(header[2])
        body = data[at : at + size].decode("utf-8", errors="replace")
        at += size + 1
        if header[1] != "tag":
            continue
        head, _, message = body.partition("\n\n")
        fields = dict(line.split(" ", 1) for line in head.splitlines() if " " in line)
        result[obj] = (fields, message)
    return result


def first_parent(repo: Path, ref: str) -> list[str]:
    """The first-parent history of `ref`, oldest first."""
    out = git.run(repo, ["rev-list", "--first-parent", "--reverse", ref]).stdout
    return out.split()


def _is_ancestor(repo: Path, commit: str, of: str) -> bool:
    return git.run(repo, ["merge-base", "--is-ancestor", commit, of], check=False).returncode == 0


def _has_commit(repo: Path, sha: str) -> bool:
    return git.run(repo, ["cat-file", "-e", f"{sha}^{{commit}}"], check=False).returncode == 0


def _has_object(repo: Path, sha: str) -> bool:
    return git.run(repo, ["cat-file", "-e", sha], check=False).returncode == 0


@dataclass(frozen=True)
class TagPlan:
    branch: str
    target: str
    commits: tuple[str, ...]  # to tag, oldest first
    already: tuple[str, ...]  # the target's release tag (then commits is empty)
    after: str | None  # the release tag the backfill starts after; None: first release
    history: tuple[str, ...]  # the branch's first-parent commits, oldest first
    remote: str | None
    push: bool
    ignored: tuple[IgnoredTag, ...] = ()  # non-release v0.0.* tags on the target or the commits to tag


def plan(repo: Path, rev: str, *, branch: str, remote: str | None, push: bool) -> TagPlan:
    """Which commits to tag, or a RefusedError/UsageError (exit 2) saying why none.

    Nothing is created here; the only writes are fetches of objects this clone lacks:
    the remote's branch head (to test ancestry) and tag objects (to read records)."""
    if remote is not None:
        git.check_remote(remote)  # before anything reaches git: `--upload-pack=...` is no remote
    git.check_ref(rev)
    git.check_ref(branch)  # a `-x` branch would otherwise be suggested to `git fetch`
    refuse_shallow(repo)
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
    tags = view(repo, branch, state)
    # A local-only tag marks its commit as released here but not on the remote; pushing
    # new tags past it would leave a hole in the remote's numbering forever.
    if push and state is not None:
        unpushed = sorted(
            (name for name in tags.local_releases if name not in tags.remote_names), key=_number
        )
        if unpushed:
            raise RefusedError(
                f"local tag{'s' if len(unpushed) > 1 else ''} {', '.join(unpushed)} "
                f"{'are' if len(unpushed) > 1 else 'is'} not on {state.name}",
                hint=f"push {'them' if len(unpushed) > 1 else 'it'} first "
                f"(`git push {state.name} {' '.join('refs/tags/' + name for name in unpushed)}`), "
                "so both sides number releases the same way",
            )

    by_commit = {commit: name for name, commit in tags.releases.items()}  # one release per commit
    index = history.index(target)
    if target in by_commit:
        return TagPlan(branch, target, (), (by_commit[target],), None, tuple(history), remote, push)
    # The first-parent chain up to the target is the same from every tip that has it, so
    # a release on any commit outside it is newer: on local main, or only on origin's.
    earlier = set(history[: index + 1])
    newer = sorted((name for name, commit in tags.releases.items() if commit not in earlier), key=_number)
    if newer:
        commit = tags.releases[newer[0]]
        raise RefusedError(
            f"{target[:12]} is older than {commit[:12]}, which is already tagged {newer[0]}",
            hint="release numbers follow first-parent order, so an older untagged commit stays untagged",
        )
    previous = [i for i, commit in enumerate(history[:index]) if commit in by_commit]
    if previous:
        start = previous[-1]
        after: str | None = by_commit[history[start]]
        commits = tuple(history[start + 1 : index + 1])
    else:
        # The first release: older commits were never checked as releases.
        after, commits = None, (target,)
    for commit in commits:
        prod_files(repo, commit)  # a file name no record can hold: refused before any check runs
    return TagPlan(branch, target, commits, (), after, tuple(history), remote, push, tags.at(commits))


def _require_on_remote(repo: Path, target: str, rev: str, state: RemoteState, branch: str) -> None:
    if state.main is None:
        raise RefusedError(
            f"{state.name} has no branch {branch!r}", hint=f"push it first: `git push {state.name} {branch}`"
        )
    _fetch_head(repo, state, branch)
    if not _is_ancestor(repo, target, state.main):
        raise RefusedError(
            f"{rev} ({target[:12]}) is not on {state.name}'s {branch} yet",
            hint=f"push {branch} first (`git push {state.name} {branch}`): a release must exist where hosts fetch it",
        )


def _fetch_head(repo: Path, state: RemoteState, branch: str) -> None:
    """The remote is ahead of this clone: fetch its branch (no tags, no ref written) to
    test ancestry and to judge the tags on its newer commits."""
    if state.main is not None and not _has_commit(repo, state.main):
        git.remote(
            repo,
            state.name,
            ["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", state.name, f"refs/heads/{branch}"],
        )


def _number(name: str) -> int:
    number = tag_number(name)
    return -1 if number is None else number


@dataclass(frozen=True)
class Created:
    commit: str
    name: str
    pushed_to: str | None
    adopted: bool  # another run tagged this commit meanwhile; nothing was created
    lost: tuple[str, ...]  # names another run took first
    skipped: tuple[IgnoredTag, ...] = ()  # names held by tags that are not releases


def create(
    repo: Path, plan: TagPlan, commit: str, message: Callable[[str], str], *, attempts: int = MAX_ATTEMPTS
) -> Created:
    """Create (and with plan.push, push) the next release tag on `commit`.

    `message(name)` gives the tag message for a name: the name changes when a race is lost."""
    # The first-parent chain up to `commit` is the same from every tip that contains it,
    # so a release on any commit outside it is newer (or on a history that diverged).
    earlier = set(plan.history[: plan.history.index(commit) + 1])
    lost: list[str] = []
    skipped: dict[str, IgnoredTag] = {}
    for _ in range(attempts):
        # Read both sides again on every attempt: after a lost race, the other run may
        # have tagged this commit, another one, or a newer one.
        state = remote_state(repo, plan.remote, plan.branch) if plan.remote else None
        if state is not None and plan.push:
            # Read at push time, not when the plan was made: main may have been
            # force-pushed back while the check ran, and a tag must mark a commit that
            # is on the remote's main when it is pushed.
            _require_on_remote(repo, commit, commit[:12], state, plan.branch)
        tags = view(repo, plan.branch, state)
        mine = [name for name, tagged in tags.releases.items() if tagged == commit]
        if mine:
            return Created(commit, mine[0], plan.remote, True, tuple(lost), tuple(skipped.values()))
        newer = sorted((name for name, tagged in tags.releases.items() if tagged not in earlier), key=_number)
        if newer:
            raise RefusedError(
                f"{newer[0]} was made meanwhile on a newer commit than {commit[:12]}; "
                f"{commit[:12]} stays untagged (release numbers follow first-parent order)"
            )
        # Names held by other v0.0.* tags are skipped, never reused: a tag is never moved.
        name, passed = tags.next_name()
        skipped.update((tag.name, tag) for tag in passed if tag.name not in lost)
        obj = make_tag_object(repo, commit, name, message(name))
        try:
            if plan.push and plan.remote:
                pushed = push_ref(repo, plan.remote, obj, name)
                if pushed == "taken":
                    lost.append(name)
                    continue
                if pushed == "same":
                    return Created(commit, name, plan.remote, True, tuple(lost), tuple(skipped.values()))
            create_ref(repo, name, obj, pushed_to=plan.remote if plan.push else None)
        except (KeyboardInterrupt, Terminated):
            if plan.push and plan.remote:
                # The push may have landed before the signal: say where to look.
                print(
                    f"interrupted while tagging {commit[:12]} as {name}: {plan.remote} may have it "
                    f"now and this clone not; `git fetch {plan.remote} tag {name}` brings it here",
                    file=sys.stderr,
                )
            raise
        pushed_to = plan.remote if plan.push else None
        return Created(commit, name, pushed_to, False, tuple(lost), tuple(skipped.values()))
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
    proc = subprocess.run(
        ["git", "mktag"],
        cwd=repo,
        input=body,
        capture_output=True,
        # A committer name that is not UTF-8 (git var read it back with surrogateescape)
        # goes into the tag byte for byte, as `git tag` would write it.
        encoding="utf-8",
        errors="surrogateescape",
        check=False,
        env=git.environment(),
    )
    if proc.returncode != 0:
        raise git.GitError(f"git mktag: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


def push_ref(repo: Path, remote: str, obj: str, name: str) -> str:
    """Push one new tag ref: "new" when this push created it; "same" when the remote
    already had this very object under that name (another run made a byte-identical
    tag: same commit, record, tagger and second); "taken" when the remote has another
    object under that name (a lost race). Any other refusal is an error."""
    ref = f"refs/tags/{name}"
    git.check_remote(remote)
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
