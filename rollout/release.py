"""Release tags as rollback points: the record each tag carries, reading tags back,
the age gate, and the history of one definition.

A release tag is an annotated tag `v0.0.N` on a first-parent commit of main (see
rollout/tags.py for how tags are made). Its message is a small line-oriented record,
written once when the tag is made:

    release v0.0.7 of 0123456789ab

    tierops-release: 1
    commit: <40 hex: the tagged commit>
    verify: passed: nox -s check          (or: skipped (--no-verify))
    service: prod/<file>.yaml <service> <12 hex>
    ...

One `service:` line per prod file and service: a short content hash of the service's
normalised definition (tierops.compose.service_digest), plus the top-level `configs:`
entries the service mounts (an nginx.conf change redeploys nginx even though its
`services:` entry is unchanged). `history` and `rollback` read only these records, so
they never re-parse old files and give the same answer whatever the generators or the
parser look like today.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rollout import git
from tierops.compose import SpellingError, service_digest
from tierops.errors import InputError, UsageError

# Exactly `v0.0.<N>` without leading zeros: `v0.0.07` next to `v0.0.7` would make two
# names for one number, and a suffix (`-rc`) is somebody else's tag.
RELEASE_TAG = re.compile(r"^v0\.0\.(0|[1-9][0-9]*)$")
RECORD_FORMAT = "1"
PROD_DIR = "prod"
DIGEST_LENGTH = 12
DEFAULT_MIN_TAG_AGE_HOURS = 48
MIN_TAG_AGE_ENV = "MIN_TAG_AGE_HOURS"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
VERIFY_SKIPPED = "skipped (--no-verify)"
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
    verify: str  # "passed: <command>" or VERIFY_SKIPPED
    digests: Mapping[str, Mapping[str, str]]  # prod file -> service -> digest

    @property
    def verified(self) -> bool:
        return self.verify.startswith("passed")

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
        if not sep or key not in ("tierops-release", "commit", "verify", "service"):
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
    return Record(commit, fields.get("verify", "unknown"), digests)


def definition_digests(document: Any) -> dict[str, str]:
    """service -> digest for one parsed compose document."""
    if not isinstance(document, Mapping):
        raise SpellingError("the document is not a mapping")
    services = document.get("services") or {}
    configs = document.get("configs") or {}
    if not isinstance(services, Mapping) or not isinstance(configs, Mapping):
        raise SpellingError("'services' and 'configs' must be mappings")
    result: dict[str, str] = {}
    for name, service in services.items():
        if not isinstance(service, Mapping):
            raise SpellingError(f"service {name!r} is not a mapping")
        mounted = sorted(_config_sources(service.get("configs")))
        definition = service
        if mounted:
            # An extension key compose ignores, so the digest also covers the inline
            # content of every config the service mounts.
            definition = {**service, "x-tierops-configs": {ref: configs.get(ref) for ref in mounted}}
        result[str(name)] = service_digest(definition, DIGEST_LENGTH)
    return result


def _config_sources(value: Any) -> list[str]:
    refs: list[str] = []
    for item in value or ():
        if isinstance(item, str):
            refs.append(item)
        elif isinstance(item, Mapping) and "source" in item:
            refs.append(str(item["source"]))
    return refs


def record_for_commit(repo: Path, commit: str, verify: str) -> Record:
    """Hash every prod file at `commit` (read from git objects, not the working tree)."""
    from rollout.normalize import load_documents

    digests: dict[str, dict[str, str]] = {}
    for path in git.ls_files(repo, commit, PROD_DIR):
        if not path.endswith((".yaml", ".yml")):
            continue
        data = git.show(repo, commit, path)
        where = f"{path} at {commit[:12]}"
        if data is None:
            raise InputError("cannot read the file from git", where=where)
        # Read from git objects, not the working tree: a backfill hashes commits that are
        # not checked out. The same loader as the diff, so both agree on what a file says.
        documents = load_documents(data, where=where)
        if len(documents) != 1:
            raise InputError(f"holds {len(documents)} YAML documents; a prod file holds one", where=where)
        try:
            digests[path] = definition_digests(documents[0])
        except SpellingError as exc:
            raise InputError(
                f"cannot hash its services: {' '.join(str(exc).split())}",
                where=where,
                hint="a commit whose prod files do not parse cannot be a rollback point; fix main first",
            ) from None
    return Record(commit, verify, digests)


# --------------------------------------------------------------------------- tags


@dataclass(frozen=True)
class ReleaseTag:
    name: str
    number: int
    commit: str
    commit_time: datetime
    tag_time: datetime | None  # None for a lightweight tag
    record: Record | None
    problem: str | None = None  # why there is no record

    @property
    def short(self) -> str:
        return self.commit[:12]


_FIELDS = (
    "%(refname:strip=2)",
    "%(objecttype)",
    "%(objectname)",
    "%(*objectname)",
    "%(taggerdate:unix)",
    "%(committerdate:unix)",
    "%(*committerdate:unix)",
    "%(contents)",
)


def read_tags(repo: Path) -> list[ReleaseTag]:
    """Every local `v0.0.N` tag, oldest number first, with its parsed record."""
    # NUL-separated fields: tag messages span lines, and no git field contains a NUL.
    fmt = "".join(f"{item}%00" for item in _FIELDS)
    out = git.run(repo, ["for-each-ref", f"--format={fmt}", "refs/tags/v0.0.*"]).stdout
    values = out.split("\0")
    width = len(_FIELDS)
    tags: list[ReleaseTag] = []
    for start in range(0, len(values) - width + 1, width):
        name, objtype, obj, peeled, tagged, committed, peeled_committed, contents = values[
            start : start + width
        ]
        name = name.lstrip("\n")
        number = tag_number(name)
        if number is None:
            continue
        if objtype == "tag":
            tags.append(_annotated(name, number, peeled, tagged, peeled_committed, contents))
        elif objtype == "commit":
            tags.append(
                ReleaseTag(name, number, obj, _time(committed), None, None, "a lightweight tag, no record")
            )
    return sorted(tags, key=lambda tag: tag.number)


def _annotated(name: str, number: int, commit: str, tagged: str, committed: str, contents: str) -> ReleaseTag:
    tag_time = _time(tagged) if tagged else None
    if not committed:  # a tag of a tree, a blob or another tag: never ours
        return ReleaseTag(name, number, commit, _EPOCH, tag_time, None, "it does not point at a commit")
    problem: str | None = None
    record: Record | None = None
    try:
        record = parse_message(contents)
        if record is None:
            problem = "no release record in its message (not made by `rollout release tag`)"
        elif record.commit != commit:
            # A copied message would lend one commit's definitions to another.
            problem = f"its record names commit {record.commit[:12]}, but it points at {commit[:12]}"
            record = None
    except RecordError as exc:
        problem = f"unreadable release record: {exc}"
    return ReleaseTag(name, number, commit, _time(committed), tag_time, record, problem)


_EPOCH = datetime.fromtimestamp(0, UTC)


def _time(unix: str) -> datetime:
    return datetime.fromtimestamp(int(unix), UTC)


def require_tags(tags: Sequence[ReleaseTag]) -> list[ReleaseTag]:
    """The tags that carry a record; a UsageError (exit 2) when there is none."""
    usable = [tag for tag in tags if tag.record is not None]
    if not usable:
        found = f" ({len(tags)} v0.0.* tags, none with a release record)" if tags else ""
        raise UsageError(f"no release tags in this clone{found}", hint=NO_TAGS_HINT)
    return usable


# --------------------------------------------------------------------------- age gate


@dataclass(frozen=True)
class AgeGate:
    """compose-manager refuses a tag whose *commit* is younger than this (SPEC 1)."""

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
    ignored: tuple[ReleaseTag, ...] = field(default=())


def definition_digest(definition: tuple[str | None, ...] | None, *, single: bool) -> str:
    """One service: its own digest (as in the tag message); else a digest of the tuple."""
    if definition is None:
        return "file absent"
    if single:
        return definition[0] or "service absent"
    text = json.dumps(list(definition), separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:DIGEST_LENGTH]


def history(tags: Sequence[ReleaseTag], file: str, services: Sequence[str]) -> History:
    """The tags at which the definition of `services` (or the whole file) changed."""
    usable = require_tags(tags)
    wanted = tuple(dict.fromkeys(services))
    _require_known(usable, file, wanted)
    changes: list[Change] = []
    previous: tuple[str | None, ...] | None = None
    seen_file = False
    for tag in usable:
        assert tag.record is not None
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
    ignored = tuple(tag for tag in tags if tag.record is None)
    return History(file, wanted, tuple(reversed(changes)), len(usable), ignored)


def _require_known(tags: Sequence[ReleaseTag], file: str, services: Sequence[str]) -> None:
    """A UsageError naming what exists when the file or a service is in no record."""
    newest = tags[-1]
    records = [tag.record for tag in tags if tag.record is not None]
    if not any(file in record.digests for record in records):
        files = sorted(newest.record.digests) if newest.record else []
        raise UsageError(
            f"{file} is in no release record ({len(tags)} tags read)",
            hint=f"files at {newest.name}: {', '.join(files) or 'none'}",
        )
    for service in services:
        if not any(service in record.digests.get(file, {}) for record in records):
            known = sorted(newest.record.digests.get(file, {})) if newest.record else []
            raise UsageError(
                f"{file} defines no service {service!r} at any release tag",
                hint=f"services at {newest.name}: {', '.join(known) or 'none'}",
            )


def find_tag(tags: Sequence[ReleaseTag], name: str) -> ReleaseTag:
    for tag in tags:
        if tag.name == name:
            if tag.record is None:
                raise UsageError(f"tag {name} has no usable release record: {tag.problem}")
            return tag
    raise UsageError(
        f"no release tag {name!r} in this clone",
        hint="list them with `git tag -l 'v0.0.*'`; `git fetch --tags` gets the remote's",
    )
