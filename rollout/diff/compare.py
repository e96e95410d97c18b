"""From two snapshots to a ChangeSet: pair the files, find renames, diff each document.

A file that cannot be read or parsed on one side becomes a FileChange with status
`error` (the run goes on with the other files; the command exits 2 at the end). A file
present only in the base and one present only in the head are a rename when at least
half of their lines match (git's default similarity), so moving a file reads as
"renamed" plus what changed, not as every service removed and added again.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from rollout.diff.changes import ChangeSet, FileChange, Side, Status
from rollout.diff.document import diff_document
from rollout.diff.forms import Document, read
from rollout.diff.snapshot import Snapshot
from tierops.errors import InputError
from tierops.yamlload import MAX_BYTES

RENAME_SIMILARITY = 0.5


def compare(base: Snapshot, head: Snapshot, paths: Sequence[str]) -> ChangeSet:
    """The unmasked ChangeSet between two snapshots (mask it before printing)."""
    files: list[FileChange] = []
    removed = sorted(set(base.files) - set(head.files))
    added = sorted(set(head.files) - set(base.files))
    renames = find_renames(
        {name: base.files[name] for name in removed}, {name: head.files[name] for name in added}
    )
    for name in sorted(set(base.files) & set(head.files)):
        if base.files[name] != head.files[name]:
            files += compare_file(name, base.files[name], head.files[name], base.side, head.side)
    for old_name, new_name in renames:
        files += compare_file(
            new_name, base.files[old_name], head.files[new_name], base.side, head.side, old_path=old_name
        )
    renamed_old = {old for old, _ in renames}
    renamed_new = {new for _, new in renames}
    for name in removed:
        if name not in renamed_old:
            files += compare_file(name, base.files[name], None, base.side, head.side)
    for name in added:
        if name not in renamed_new:
            files += compare_file(name, None, head.files[name], base.side, head.side)
    files.sort(key=lambda file: (file.path, file.document or 0))
    return ChangeSet(base=base.side, head=head.side, paths=tuple(paths), files=tuple(files))


def compare_file(
    path: str,
    old: bytes | None,
    new: bytes | None,
    base: Side,
    head: Side,
    *,
    old_path: str | None = None,
) -> list[FileChange]:
    """The FileChange of one file (a list: the callers collect every file's changes).

    A file with several YAML documents is one project, merged as Compose merges them,
    so inserting a document that changes nothing changes nothing here either.
    """
    base_path = old_path or path
    try:
        before = _document(old, base_path, base, "base")
        after = _document(new, path, head, "head")
        return [diff_document(before, after, path=path, old_path=old_path)]
    except InputError as error:
        return [FileChange(path=path, status=Status.ERROR, old_path=old_path, error=str(error))]


def _document(data: bytes | None, path: str, side: Side, which: str) -> Document | None:
    if data is None:
        return None
    try:
        return read(data, where=path)
    except InputError as error:
        raise InputError(f"{error} (in the {which}, {side.describe()})") from None


def find_renames(removed: dict[str, bytes], added: dict[str, bytes]) -> list[tuple[str, str]]:
    """(old, new) pairs whose lines are at least RENAME_SIMILARITY alike, best first."""
    if not removed or not added:
        return []
    # A file the loader refuses anyway is never worth a quadratic line match.
    removed = {name: data for name, data in removed.items() if len(data) <= MAX_BYTES}
    added = {name: data for name, data in added.items() if len(data) <= MAX_BYTES}
    lines = {
        name: data.decode("utf-8", "replace").splitlines() for name, data in {**removed, **added}.items()
    }
    scored: list[tuple[float, str, str]] = []
    for old in removed:
        for new in added:
            matcher = difflib.SequenceMatcher(None, lines[old], lines[new], autojunk=False)
            if matcher.quick_ratio() >= RENAME_SIMILARITY and matcher.ratio() >= RENAME_SIMILARITY:
                scored.append((matcher.ratio(), old, new))
    scored.sort(key=lambda item: (-item[0], item[1], item[2]))
    pairs: list[tuple[str, str]] = []
    used_old: set[str] = set()
    used_new: set[str] = set()
    for _, old, new in scored:
        if old not in used_old and new not in used_new:
            pairs.append((old, new))
            used_old.add(old)
            used_new.add(new)
    return sorted(pairs)
