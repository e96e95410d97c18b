"""Release tags as rollback points: the record each tag carries, reading tags back,
the age gate, and the history of one definition.

**What a release tag is** (one definition, shared by `release tag|history|rollback`
and `plan`): a tag named exactly `v0.0.N`, annotated, whose message carries
the record `rollout release tag` writes, for the very commit the tag points at, and
that commit is on the first-parent history of main. Every other `v0.0.*` tag (a
lightweight one, one without a record or with another commit's record, one off
main's first-parent history such as a stray `v0.0.50` on a side branch, `v0.0.9-rc`)
is *ignored*, with the reason: it never counts for numbering, never makes a commit
"already tagged" and never reaches a compose-manager payload. rollout/tags.py makes
tags; the record is a small line-oriented text, written once:

    release v0.0.7 of 0123456789ab

    tierops-release: 1
    commit: <40 hex: the tagged commit>
    verify: passed: nox -s tests, nox -s check   (or: skipped (--no-verify), skipped (override): ...)
    check-matrix: sha256:<64 hex>         (only when the check at the commit wrote a record)
    service: prod/<file>.yaml <service> <12 hex>
    ...

`check-matrix:` is the evidence: the digest (tierops.checkmatrix.digest, durations
left out) of the build/check-matrix.json that the check at this commit wrote, so the
tag says which verdicts, inputs and tool versions it was made on, and anybody can
run the check at the commit and compare (`python -m ci.record --digest`). It is an
added line of format 1: older tools skip it (unknown lines are skipped), and records
without it (older tags, --no-verify, a check from before the record) read as None.

One `service:` line per prod file and service: a short content hash of the service's
compared form (rollout/forms.py: the canonical model, argv as flags), plus the top-level `configs:`
entries the service mounts (an nginx.conf change redeploys nginx even though its
`services:` entry is unchanged). `history` and `rollback` read only these records, so
they never re-parse old files and give the same answer whatever the generators or the
parser look like today.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rollout import git
from rollout.diff.forms import Document, from_data, read, services_of
from tierops.errors import InputError, RefusedError, UsageError

# Exactly `v0.0.<N>` without leading zeros: `v0.0.07` next to `v0.0.7` would make two
# names for one number, and a suffix (`-rc`) is somebody else's tag.
RELEASE_TAG = re.compile(r"^v0\.0\.(0|[1-9][0-9]*)$")
RECORD_FORMAT = "1"
CHECK_MATRIX = re.compile(r"^sha256:[0-9a-f]{64}$")
PROD_DIR = "prod"
DIGEST_LENGTH = 12
DEFAULT_MIN_TAG_AGE_HOURS = 48
MIN_TAG_AGE_ENV = "MIN_TAG_AGE_HOURS"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
DEFAULT_BRANCH = "main"
TAG_REFS = "refs/tags/v0.0.*"
# What `verify:` says. Only the project's own test suite and check, run at the commit
# in one nox run (so the check-matrix record has the tests stage too), are `passed`; a
# substituted command is recorded as what it is (tags.VerifyCommand.recorded).
DEFAULT_VERIFY = "nox -s tests check"
VERIFY_STAGES = ("nox -s tests", "nox -s check")
VERIFY_PASSED = f"passed: {', '.join(VERIFY_STAGES)}"
# What tags said before the tests were part of the verify: the check passed, the
# tests were never run there. Still a verified tag (its check did pass), and `history`
# says which half it covers.
VERIFY_PASSED_CHECK_ONLY = "passed: nox -s check"
VERIFY_SKIPPED = "skipped (--no-verify)"
VERIFY_OVERRIDE = "skipped (override)"
SHALLOW_HINT = "fetch the rest first: `git fetch --unshallow --tags`, then rerun"
NO_TAGS_HINT = (
    "create them with `python -m rollout release tag --remote origin --push` "
    "(the release workflow does it on every push to main; see docs/releasing.md)"
)


def utcnow() -> datetime:
    """The clock. The only thing tests replace: every other input is real git."""
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(TIME_FORMAT)


def tag_number(name: str) -> int | None:
    """N of `v0.0.N`, or None for any other name (`v0.0.7-rc`, `v0.0.07`)."""
    match = RELEASE_TAG.match(name)
    return int(match.group(1)) if match else None


def tag_name(number: int) -> str:
    return f"v0.0.{number}"


# --------------------------------------------------------------------------- record


@dataclass(frozen=True)
class Record:
    """What a release tag says about its commit."""

    commit: str
    verify: str  # VERIFY_PASSED, VERIFY_SKIPPED or "skipped (override): ..."
    digests: Mapping[str, Mapping[str, str]]  # prod file -> service -> digest
    check_matrix: str | None = None  # "sha256:<64 hex>" of the check's record; None: none was written

    @property
    def verified(self) -> bool:
        # Exactly the project's check: a record an older version wrote after running an
        # environment-supplied command (`passed: true`) is not taken at its word.
        return self.verify in (VERIFY_PASSED, VERIFY_PASSED_CHECK_ONLY)

    @property
    def tests_unverified(self) -> str | None:
        """For a verified tag whose verify did not run the tests, what `history` says."""
        if self.verify == VERIFY_PASSED_CHECK_ONLY:
            return "verified by the check only: the tests were not run at this commit"
        return None

    @property
    def unverified(self) -> str | None:
        """None when the check passed, else how the tag was made, e.g. "tagged with --no-verify"."""
        if self.verified:
            return None
        if self.verify == VERIFY_SKIPPED:
            return "tagged with --no-verify"
        if self.verify.startswith(VERIFY_OVERRIDE):
            return f"tagged with the check {VERIFY_OVERRIDE}"
        return f"tagged with verify: {self.verify}"

    def definition(self, file: str, services: Sequence[str]) -> tuple[str | None, ...] | None:
        """The digests of `services` in `file` (None for an absent service), or None when
        the file does not exist at this tag. Without services: every service of the file."""
        if file not in self.digests:
            return None
        per_service = self.digests[file]
        if not services:
            return tuple(f"{name}={digest}" for name, digest in sorted(per_service.items()))
        return tuple(per_service.get(name) for name in services)


def format_message(name: str, record: Record) -> str:
    lines = [
        f"release {name} of {record.commit[:12]}",
        "",
        f"tierops-release: {RECORD_FORMAT}",
        f"commit: {record.commit}",
        f"verify: {record.verify}",
    ]
    if record.check_matrix is not None:
        lines.append(f"check-matrix: {record.check_matrix}")
    for file in sorted(record.digests):
        for service, digest in sorted(record.digests[file].items()):
            lines.append(f"service: {file} {service} {digest}")
    return "\n".join(lines) + "\n"


class RecordError(ValueError):
    """A tag message that claims to be a release record but is not a valid one."""


def parse_message(text: str) -> Record | None:
    """The record in a tag message; None when the message is not a release record."""
    fields: dict[str, str] = {}
    digests: dict[str, dict[str, str]] = {}
    for raw in text.splitlines():
        # Unknown lines are skipped, not refused: a signature block or a field added by
        # a later format version must not make older tools lose every release.
        key, sep, value = raw.partition(": ")
        if not sep or key not in ("tierops-release", "commit", "verify", "check-matrix", "service"):
            continue
        if key == "service":
            parts = value.rsplit(" ", 2)  # the path may not contain spaces, but never assume
            if len(parts) != 3 or not re.fullmatch(r"[0-9a-f]{12}", parts[2]):
                raise RecordError(f"malformed service line {raw!r}")
            digests.setdefault(parts[0], {})[parts[1]] = parts[2]
        elif key in fields:
            raise RecordError(f"duplicate {key!r} line")
        else:
            fields[key] = value.strip()
    if "tierops-release" not in fields:
        return None
    if fields["tierops-release"] != RECORD_FORMAT:
        raise RecordError(f"record format {fields['tierops-release']!r} is not {RECORD_FORMAT!r}")
    commit = fields.get("commit", "")
    if not re.fullmatch(r"[0-9a-f]{40}", commit):
        raise RecordError("no valid 'commit:' line")
    check_matrix = fields.get("check-matrix")
    if check_matrix is not None and not CHECK_MATRIX.fullmatch(check_matrix):
        raise RecordError(f"malformed check-matrix line {check_matrix!r} (want sha256:<64 hex>)")
    return Record(commit, fields.get("verify", "unknown"), digests, check_matrix)


def definition_digests(document: Document | Mapping[str, Any]) -> dict[str, str]:
    """service -> digest of its compared form (the canonical model, argv as flags).

    A plain mapping is read like a file (InputError if compose would refuse it), so two
    spellings Compose renders alike get one digest.
    """
    form = document.form if isinstance(document, Document) else from_data(document).form
    services = services_of(form)
    configs = form.get("configs") or {}
    result: dict[str, str] = {}
    for name, service in services.items():
        definition = dict(service)
        mounted = sorted(_config_sources(service.get("configs")))
        if mounted:
            # Not a compose key, so the digest also covers the inline content of every
            # config the service mounts (Compose does not recreate for it; the plan does).
            definition["x-tierops-configs"] = {ref: configs.get(ref) for ref in mounted}
        text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
        result[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]
    return result


def _config_sources(value: Any) -> list[str]:
    refs: list[str] = []
    for item in value or ():
        if isinstance(item, str):
            refs.append(item)
        elif isinstance(item, Mapping) and "source" in item:
            refs.append(str(item["source"]))
    return refs


def record_for_commit(repo: Path, commit: str, verify: str, check_matrix: str | None = None) -> Record:
    """Hash every prod file at `commit` (read from git objects, not the working tree)."""
    digests: dict[str, dict[str, str]] = {}
    for path in git.ls_files(repo, commit, PROD_DIR):
        if not path.endswith((".yaml", ".yml")):
            continue
        data = git.show(repo, commit, path)
        where = f"{path} at {commit[:12]}"
        if data is None:
            raise InputError("cannot read the file from git", where=where)
        # Read from git objects, not the working tree: a backfill hashes commits that are
        # not checked out. The same reader as the diff, so both agree on what a file says.
        try:
            digests[path] = definition_digests(read(data, where=where))
        except InputError as exc:
            raise InputError(
                f"cannot hash its services: {exc}",
                hint="a commit whose prod files do not parse cannot be a rollback point; fix main first",
            ) from None
    if not any(digests.values()):
        # A record of no services would make every rollback to this tag "absent": prod/
        # as a submodule, a symlink or an empty directory is no release.
        kind = _prod_kind(repo, commit)
        raise RefusedError(
            f"{PROD_DIR}/ at {commit[:12]} holds no services"
            + (f" ({PROD_DIR} is {kind} there)" if kind else ""),
            hint="a release tag records the services of prod/*.yaml; tag a commit whose prod files define them",
        )
    return Record(commit, verify, digests, check_matrix)


def _prod_kind(repo: Path, commit: str) -> str | None:
    """What prod/ is at `commit` when it is not a directory: a submodule, a symlink."""
    proc = git.run(repo, ["ls-tree", "-z", commit, "--", PROD_DIR], check=False)
    mode = proc.stdout.split(" ", 1)[0] if proc.returncode == 0 else ""
    return {"160000": "a submodule", "120000": "a symbolic link"}.get(mode)


# --------------------------------------------------------------------------- tags


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
                    f"{name} is not a release tag: {ignored.reason}",
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
    parsed = _parsed_message(message)
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


# Tag messages already read, by their text: a backfill judges every tag again for each
# commit it tags, and parsing each message again made that quadratic in the tags. A tag
# message never changes meaning, so its parse is kept for the process (bounded).
_PARSED: dict[str, Record | RecordError | None] = {}
_PARSED_LIMIT = 100_000


def _parsed_message(message: str) -> Record | RecordError | None:
    if message not in _PARSED:
        if len(_PARSED) >= _PARSED_LIMIT:
            _PARSED.clear()
        try:
            _PARSED[message] = parse_message(message)
        except RecordError as exc:
            _PARSED[message] = exc
    return _PARSED[message]


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
        return f"its tag object is named {tag_field or '(nothing)'}, not {name}"
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


# --------------------------------------------------------------------------- age gate


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


# --------------------------------------------------------------------------- history


def repo_path(repo: Path, file: str) -> str:
    """A prod file argument as a repository-relative POSIX path: relative to the current
    directory when that lies inside the repository, else relative to its root. The file
    need not exist in the working tree: only the tags' records are read."""
    root = repo.resolve()
    candidate = Path(file)
    resolved = candidate if candidate.is_absolute() else Path.cwd() / candidate
    try:
        return resolved.resolve().relative_to(root).as_posix()
    except ValueError:
        if candidate.is_absolute():
            raise UsageError(f"{file} is outside the repository {repo}") from None
    return candidate.as_posix()


@dataclass(frozen=True)
class Change:
    tag: ReleaseTag
    definition: tuple[str | None, ...] | None
    digest: str  # the service's own digest for one service, else a digest of the tuple
    note: str  # "first recorded", "changed", "file absent", ...


@dataclass(frozen=True)
class History:
    file: str
    services: tuple[str, ...]
    changes: tuple[Change, ...]  # newest first
    tags_read: int
    ignored: tuple[IgnoredTag, ...] = ()


def definition_digest(definition: tuple[str | None, ...] | None, *, single: bool) -> str:
    """One service: its own digest (as in the tag message); else a digest of the tuple."""
    if definition is None:
        return "file absent"
    if single:
        return definition[0] or "service absent"
    text = json.dumps(list(definition), separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]


def history(tags: TagSet, file: str, services: Sequence[str]) -> History:
    """The tags at which the definition of `services` (or the whole file) changed."""
    usable = tags.require()
    wanted = tuple(dict.fromkeys(services))
    _require_known(usable, file, wanted)
    changes: list[Change] = []
    previous: tuple[str | None, ...] | None = None
    seen_file = False
    for tag in usable:
        definition = tag.record.definition(file, wanted)
        if not seen_file and definition is None:
            continue  # before the file existed: nothing to report
        # Equal digests on consecutive tags mean the hosts would run the same thing:
        # only a difference is a point anybody can roll back to.
        if seen_file and definition == previous:
            continue
        if not seen_file:
            note = "first recorded"
        elif definition is None:
            note = "file removed"
        elif previous is None:
            note = "file back"
        else:
            note = "changed"
        seen_file = True
        changes.append(Change(tag, definition, definition_digest(definition, single=len(wanted) == 1), note))
        previous = definition
    return History(file, wanted, tuple(reversed(changes)), len(usable), tags.ignored)


def _require_known(tags: Sequence[ReleaseTag], file: str, services: Sequence[str]) -> None:
    """A UsageError naming what exists when the file or a service is in no record."""
    newest = tags[-1]
    records = [tag.record for tag in tags]
    if not any(file in record.digests for record in records):
        files = sorted(newest.record.digests)
        raise UsageError(
            f"{file} is in no release record ({len(tags)} tags read)",
            hint=f"files at {newest.name}: {', '.join(files) or 'none'}",
        )
    for service in services:
        if not any(service in record.digests.get(file, {}) for record in records):
            known = sorted(newest.record.digests.get(file, {}))
            raise UsageError(
                f"{file} defines no service {service!r} at any release tag",
                hint=f"services at {newest.name}: {', '.join(known) or 'none'}",
            )
