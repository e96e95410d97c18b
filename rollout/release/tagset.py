"""Release tags read back: every `v0.0.*` tag of a clone judged, a release tag or ignored
with the reason (rollout/release/record.py says what a release tag is), and the age gate
compose-manager applies to them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rollout import git
from rollout.release.record import (
    DEFAULT_BRANCH,
    DEFAULT_MIN_TAG_AGE_HOURS,
    MIN_TAG_AGE_ENV,
    NO_TAGS_HINT,
    SHALLOW_HINT,
    TAG_REFS,
    Record,
    RecordError,
    format_time,
    parsed_message,
    tag_number,
)
from tierops.entry import visible
from tierops.errors import RefusedError, UsageError


@dataclass(frozen=True)
class ReleaseTag:
    """A release tag: `v0.0.N`, annotated, with a record of its own commit, on main's
    first-parent history."""

    name: str
    number: int
    commit: str
    commit_time: datetime
    tag_time: datetime | None  # None only for a tag object without a tagger line
    record: Record

    @property
    def short(self) -> str:
        return self.commit[:12]


@dataclass(frozen=True)
class IgnoredTag:
    """A `v0.0.*` tag that is not a release tag, and why."""

    name: str
    commit: str | None  # the commit it points at; None when it points at no commit
    reason: str

    @property
    def number(self) -> int | None:
        return tag_number(self.name)

    @property
    def shown(self) -> str:
        """The name as a report prints it: a ref name may hold a bidi override."""
        return visible(self.name)


@dataclass(frozen=True)
class TagSet:
    """Every `v0.0.*` tag of a clone, judged: the release tags and the ignored ones."""

    branch: str
    releases: tuple[ReleaseTag, ...]  # oldest number first
    ignored: tuple[IgnoredTag, ...]  # in name order (numbers compared as numbers)

    def at(self, commit: str) -> ReleaseTag | None:
        """The release tag of `commit` (there is at most one), or None."""
        return next((tag for tag in self.releases if tag.commit == commit), None)

    def ignored_at(self, commit: str) -> tuple[IgnoredTag, ...]:
        return tuple(tag for tag in self.ignored if tag.commit == commit)

    def require(self) -> tuple[ReleaseTag, ...]:
        """The release tags; a UsageError (exit 2) when there is none."""
        if not self.releases:
            found = f" ({len(self.ignored)} v0.0.* tags, none of them a release tag)" if self.ignored else ""
            raise UsageError(f"no release tags in this clone{found}", hint=NO_TAGS_HINT)
        return self.releases

    def find(self, name: str) -> ReleaseTag:
        for tag in self.releases:
            if tag.name == name:
                return tag
        for ignored in self.ignored:
            if ignored.name == name:
                raise UsageError(
                    f"{ignored.shown} is not a release tag: {ignored.reason}",
                    hint="name a release tag (`python -m rollout release history FILE` lists them)",
                )
        raise UsageError(
            f"no release tag {name!r} in this clone",
            hint="list them with `git tag -l 'v0.0.*'`; `git fetch --tags` gets the remote's",
        )


def judge(
    name: str,
    *,
    kind: str,
    target_kind: str,
    commit: str,
    tag_field: str,
    message: str,
    line: Collection[str],
    branch: str,
) -> Record | str:
    """The record of a `v0.0.*` tag that is a release tag, else the reason it is not.

    `kind` is the type of the object the ref names (`tag` for an annotated tag),
    `target_kind` and `commit` what an annotated tag points at, `tag_field` the name
    inside the tag object, `line` the first-parent history of `branch` (a set)."""
    shape = _shape_problem(name, kind, target_kind, tag_field)
    if shape is not None:
        return shape
    parsed = parsed_message(message)
    if isinstance(parsed, RecordError):
        return f"unreadable release record: {parsed}"
    record = parsed
    if record is None:
        return "no release record in its message (not made by `rollout release tag`)"
    if record.commit != commit:
        # A copied message would lend one commit's definitions to another.
        return f"its record names commit {record.commit[:12]}, but it points at {commit[:12]}"
    if commit not in line:
        # A side branch's commits were never deployed as such: a stray v0.0.50 there
        # must not make main's next release v0.0.51.
        return f"its commit {commit[:12]} is not on the first-parent history of {branch}"
    return record


def _shape_problem(name: str, kind: str, target_kind: str, tag_field: str) -> str | None:
    """Why a tag cannot be a release whatever its message says, or None."""
    if tag_number(name) is None:
        return "not a release name: releases are exactly v0.0.N (no suffix such as -rc, no leading zero)"
    if kind == "commit":
        return "a lightweight tag, no record"
    if kind != "tag":
        return f"it points at a {kind}, not a commit"
    if target_kind != "commit":
        return "it does not point at a commit"
    if tag_field != name:
        # A tag object copied under another name would lend its record to that name.
        return f"its tag object is named {visible(tag_field) or '(nothing)'}, not {visible(name)}"
    return None


def first_parent_line(repo: Path, branch: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The commits on the first-parent history of the local `branch` and of
    `origin/<branch>` (whichever exist), and of the `extra` commits: one set.

    Both refs, because a clone whose local main is behind origin's (after `git fetch
    --tags`) still has every release tag origin has."""
    proc = git.run(
        repo,
        ["for-each-ref", "--format=%(objectname)", f"refs/heads/{branch}", f"refs/remotes/origin/{branch}"],
    )
    tips = [*proc.stdout.split(), *extra]
    if not tips:
        return frozenset()
    return frozenset(git.run(repo, ["rev-list", "--first-parent", *dict.fromkeys(tips)]).stdout.split())


def one_per_commit(tags: Iterable[tuple[str, str]]) -> tuple[dict[str, str], dict[str, str]]:
    """Of (name, commit) release candidates, the lowest number per commit is the
    release; the rest -> the name that released their commit first."""
    kept: dict[str, str] = {}
    winner: dict[str, str] = {}
    dropped: dict[str, str] = {}
    for name, commit in sorted(tags, key=lambda pair: _number_of(pair[0])):
        if commit in winner:
            dropped[name] = winner[commit]
        else:
            winner[commit] = name
            kept[name] = commit
    return kept, dropped


def duplicate_reason(commit: str, winner: str) -> str:
    return f"its commit {commit[:12]} is already released as {winner}"


def _number_of(name: str) -> int:
    number = tag_number(name)
    return -1 if number is None else number


def version_order(name: str) -> tuple[int, str]:
    """Sort key: release names by number, anything else after them by name."""
    number = tag_number(name)
    return (number, "") if number is not None else (1 << 62, name)


_FIELDS = (
    "%(refname:strip=2)",
    "%(objecttype)",
    "%(objectname)",
    "%(*objecttype)",
    "%(*objectname)",
    "%(tag)",
    "%(taggerdate:unix)",
    "%(*committerdate:unix)",
    "%(contents)",
)


def read_tags(repo: Path, branch: str = DEFAULT_BRANCH, *, line: Collection[str] | None = None) -> TagSet:
    """Every local `v0.0.*` tag, judged (see `judge`). `line` is the first-parent
    history to judge against (default: `first_parent_line(repo, branch)`)."""
    # NUL-separated fields: tag messages span lines, and no git field contains a NUL.
    fmt = "".join(f"{item}%00" for item in _FIELDS)
    out = git.run(repo, ["for-each-ref", f"--format={fmt}", TAG_REFS]).stdout
    values = out.split("\0")
    width = len(_FIELDS)
    rows = [values[start : start + width] for start in range(0, len(values) - width + 1, width)]
    if rows and line is None:
        line = first_parent_line(repo, branch)
    candidates: dict[str, tuple[str, Record, str, str]] = {}
    ignored: list[IgnoredTag] = []
    for raw_name, kind, obj, target_kind, target, tag_field, tagged, committed, contents in rows:
        name = raw_name.lstrip("\n")
        commit = target if kind == "tag" else obj
        verdict = judge(
            name,
            kind=kind,
            target_kind=target_kind,
            commit=commit,
            tag_field=tag_field,
            message=contents,
            line=line or (),
            branch=branch,
        )
        if isinstance(verdict, str):
            points_at = commit if (target_kind if kind == "tag" else kind) == "commit" else None
            ignored.append(IgnoredTag(name, points_at, verdict))
        else:
            candidates[name] = (commit, verdict, tagged, committed)
    kept, dropped = one_per_commit((name, item[0]) for name, item in candidates.items())
    for name, first in dropped.items():
        ignored.append(IgnoredTag(name, candidates[name][0], duplicate_reason(candidates[name][0], first)))
    releases = []
    for name in kept:
        commit, record, tagged, committed = candidates[name]
        tag_time = _time(tagged) if tagged else None
        number = tag_number(name)
        assert number is not None  # judge() accepts v0.0.N names only
        releases.append(ReleaseTag(name, number, commit, _time(committed), tag_time, record))
    return TagSet(
        branch,
        tuple(sorted(releases, key=lambda tag: tag.number)),
        tuple(sorted(ignored, key=lambda tag: version_order(tag.name))),
    )


def _time(unix: str) -> datetime:
    return datetime.fromtimestamp(int(unix), UTC)


def refuse_shallow(repo: Path) -> None:
    """A RefusedError (exit 2) in a shallow clone: it lacks older first-parent commits
    and their tags, so it would take the newest tag it happens to have for the newest
    release, and a `tag` would number the tip and leave everything between untaggable."""
    if git.is_shallow(repo):
        raise RefusedError(
            "this clone is shallow: release tags need main's whole first-parent history and every tag",
            where=str(repo),
            hint=SHALLOW_HINT,
        )


@dataclass(frozen=True)
class AgeGate:
    """compose-manager refuses a tag whose *commit* is younger than this."""

    hours: int

    # The committer date, as compose-manager measures it: the date the commit entered
    # history (a rebase or a merge makes a new one), not when its author wrote it.
    def deployable_from(self, tag: ReleaseTag) -> datetime:
        return tag.commit_time + timedelta(hours=self.hours)

    def deployable(self, tag: ReleaseTag, now: datetime) -> bool:
        return now >= self.deployable_from(tag)

    def describe(self, tag: ReleaseTag, now: datetime) -> str:
        if self.deployable(tag, now):
            return "yes"
        return f"no, from {format_time(self.deployable_from(tag))}"


def age_gate(option: str | None, environ: Mapping[str, str]) -> AgeGate:
    """The gate from --min-tag-age-hours, else $MIN_TAG_AGE_HOURS, else 48."""
    raw, source = option, "--min-tag-age-hours"
    if raw is None:
        raw, source = environ.get(MIN_TAG_AGE_ENV), MIN_TAG_AGE_ENV
    if raw is None or raw == "":
        return AgeGate(DEFAULT_MIN_TAG_AGE_HOURS)
    if not re.fullmatch(r"[0-9]+", raw.strip()):
        raise UsageError(
            f"{source}={raw!r} is not a whole number of hours",
            hint="use the value compose-manager runs with (48 by default)",
        )
    return AgeGate(int(raw.strip()))
