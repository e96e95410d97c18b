"""The history of one definition: the release tags at which a file (or some of its
services) changed, read from the tags' records only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rollout.release.record import DIGEST_LENGTH
from rollout.release.tagset import IgnoredTag, ReleaseTag, TagSet
from tierops.errors import UsageError


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
