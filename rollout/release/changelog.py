"""`release history` as a changelog: per tag its commit (subject, author) and what changed.

The tags listed, and their order, come from the tags' records alone
(rollout/release/history.py): a definition digest that differs from the previous
listed tag's. What this module adds is the reading a person wants next to each: the commit's first line and
author (one `git log`), and per service one line of what changed since the previous
tag listed, in the semantic diff's own words (rollout/diff/document.py through
rollout/diff/compare.py, the lines `rollout diff` prints, folded to one line per
service and capped at MAX_CHANGES, then "and N more").

The diff reads the file at both tags with today's parser. When it cannot (a file an
older version wrote that no longer parses), the entry says so and the tag stays
listed: its place in the history is the record's, never the diff's.

Library code: it returns values; rollout/commands/release.py prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rollout import git
from rollout.diff.boundary import mask_file
from rollout.diff.changes import Aspect, FileChange, Op, Side, Status
from rollout.diff.compare import compare_file
from rollout.diff.describe import describe
from rollout.diff.forms import load_documents
from rollout.plan.variables import new_variables
from rollout.release.history import Change, History
from tierops.entry import visible
from tierops.errors import InputError

MAX_CHANGES = 3  # changes named per service; the rest are counted
MAX_CHANGE_TEXT = 100  # characters of one change's line; a long value is cut
MAX_SERVICES_NAMED = 5  # services named in a "first recorded" line


@dataclass(frozen=True)
class Commit:
    subject: str  # the first line of the commit message
    author: str  # "Name <email>"


@dataclass(frozen=True)
class Entry:
    """One listed tag: its History change, its commit, and what changed since the previous one."""

    change: Change
    commit: Commit
    lines: tuple[str, ...]  # "service: what changed", one per service (or one for the file)
    error: str | None = None  # why the diff could not say what changed


def commits(repo: Path, ids: Sequence[str]) -> dict[str, Commit]:
    """Commit id -> its subject and author, with one `git log` for all of them."""
    unique = list(dict.fromkeys(ids))
    if not unique:
        return {}
    # NUL between fields and records: a subject may hold any other character.
    out = git.run(repo, ["log", "--no-walk=unsorted", "--format=%H%x00%an <%ae>%x00%s%x00", *unique]).stdout
    fields = out.split("\0")
    found: dict[str, Commit] = {}
    for start in range(0, len(fields) - 2, 3):
        commit, author, subject = fields[start : start + 3]
        found[commit.strip()] = Commit(visible(subject), visible(author))
    return found


def changelog(repo: Path, found: History) -> list[Entry]:
    """The entries of `found` (newest first), each compared with the next older one listed."""
    details = commits(repo, [change.tag.commit for change in found.changes])
    entries: list[Entry] = []
    listed = found.changes
    for index, change in enumerate(listed):
        older = listed[index + 1] if index + 1 < len(listed) else None
        commit = details.get(change.tag.commit, Commit("(no subject)", "(unknown)"))
        if older is None:
            entries.append(Entry(change, commit, (first_recorded(change, found),)))
            continue
        try:
            lines = summary(repo, found.file, older.tag.commit, change.tag.commit, found.services)
        except Unreadable as error:
            entries.append(Entry(change, commit, (), str(error)))
            continue
        entries.append(Entry(change, commit, tuple(lines)))
    return entries


def first_recorded(change: Change, found: History) -> str:
    """The line of the oldest listed tag: nothing before it to compare with."""
    defined = sorted(change.tag.record.digests.get(found.file, {}))
    names = [name for name in defined if not found.services or name in found.services]
    shown = ", ".join(names[:MAX_SERVICES_NAMED])
    if len(names) > MAX_SERVICES_NAMED:
        shown += f" and {len(names) - MAX_SERVICES_NAMED} more"
    return f"first recorded: {len(names)} service{'s' if len(names) != 1 else ''} ({shown or 'none'})"


class Unreadable(Exception):
    """The diff could not read the file at one of the two tags."""


def summary(repo: Path, file: str, older: str, newer: str, services: Sequence[str]) -> list[str]:
    """One line per service (of `services`, or every one) whose definition changed
    between the commits `older` and `newer`: `name: added`, `name: removed`, or the
    diff's lines for it, folded and capped."""
    before, after = git.show(repo, older, file), git.show(repo, newer, file)
    if before is None and after is None:
        return []
    (changed,) = compare_file(file, before, after, Side(older[:12], older), Side(newer[:12], newer))
    if changed.status is Status.ERROR:
        raise Unreadable(f"the diff cannot read it: {changed.error}")
    changed = mask_file(changed)
    if changed.status is Status.UNCHANGED:
        return ["no semantic change (formatting, comments or spelling only)"]
    wanted = set(services)
    lines = [
        f"{service.name}: {_service_line(service.status, [describe(c) for c in service.changes if c.op is not Op.NOTE])}"
        for service in changed.services
        if not wanted or service.name in wanted
    ]
    lines += _config_lines(changed, wanted, {service.name for service in changed.services})
    if not wanted:
        lines += _top_level_lines(changed)
    lines += _variable_lines(file, before, after, wanted)
    return lines or ["no change to these services' definitions the diff can name"]


def _variable_lines(file: str, before: bytes | None, after: bytes | None, wanted: set[str]) -> list[str]:
    """The host variables the newer definition reads and the older did not: every host
    needs them before this tag's `up` (rollout/plan/variables.py)."""
    try:
        old = load_documents(before, where=file)[0] if before is not None else {}
        new = load_documents(after, where=file)[0] if after is not None else {}
    except InputError:
        return []  # the diff above already said the file cannot be read
    found = [
        variable for variable in new_variables(old, new) if not wanted or wanted & set(variable.services)
    ]
    return [f"new host variables: {', '.join(variable.describe() for variable in found)}"] if found else []


def _service_line(status: Status, texts: Sequence[str]) -> str:
    if status is Status.ADDED:
        return "added"
    if status is Status.REMOVED:
        return "removed"
    unique = [_cut(text) for text in dict.fromkeys(texts)]
    if not unique:
        return "changed"
    shown = ", ".join(unique[:MAX_CHANGES])
    rest = len(unique) - MAX_CHANGES
    return f"{shown}, and {rest} more" if rest > 0 else shown


def _config_lines(changed: FileChange, wanted: set[str], listed: set[str]) -> list[str]:
    """`nginx: config nginx_conf changed` for a service whose mounted inline config changed
    (its digest covers the config) and that has no line of its own yet."""
    sections = sorted(
        {
            (str(change.path[0]), str(change.path[1]))
            for change in changed.others
            if change.aspect is Aspect.CONFIG and len(change.path) > 1
        }
    )
    by_service: dict[str, list[str]] = {}
    for section, name in sections:
        for user in changed.users.get(f"{section}/{name}", ()):
            if (not wanted or user in wanted) and user not in listed:
                noun = "secret" if section == "secrets" else "config"
                by_service.setdefault(user, []).append(f"{noun} {name}")
    return [f"{user}: {', '.join(names)} changed" for user, names in sorted(by_service.items())]


def _top_level_lines(changed: FileChange) -> list[str]:
    keys = sorted({str(change.path[0]) for change in changed.others if change.aspect is Aspect.TOP_LEVEL})
    return [f"top-level {', '.join(keys)} changed"] if keys else []


def _cut(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_CHANGE_TEXT else flat[: MAX_CHANGE_TEXT - 3] + "..."
