"""The tests' oracle: a change model applied to a compared form, proof that the diff hides nothing.

`apply_changes(base_form, changes) == head_form` is the completeness contract of
`rollout diff` (tested in test_diff_completeness.py as a property with hypothesis and
on this repository's own history); the product never applies its own report. The
semantics are those documented in `rollout/diff/changes.py`:

1. mapping edits and in-place list edits, in model order (base coordinates);
2. per list, deepest list first: remove the removed and moved items (base indices,
   highest first), then insert the added and moved items at their head indices
   (lowest first).

Step 2 is right because the items a list keeps are in the same relative order on both
sides (that is what a sequence alignment keeps), so after the removals they sit exactly
at the head positions no insertion claims.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from rollout.diff.changes import ABSENT, Change, FileChange, Key, Op, Status


class ApplyError(ValueError):
    """The model does not fit the form it is applied to (a bug in the diff, or the wrong base)."""


def apply_changes(root: Any, changes: Iterable[Change]) -> Any:
    """A copy of `root` with `changes` applied; `root` itself is not modified."""
    result = copy.deepcopy(root)
    removals: dict[tuple[Key, ...], list[int]] = {}
    insertions: dict[tuple[Key, ...], list[tuple[int, Any]]] = {}
    for change in changes:
        if change.op is Op.NOTE:
            continue  # a note edits nothing
        if not change.path:
            if change.op is Op.REMOVED:
                raise ApplyError("cannot remove the root")
            result = copy.deepcopy(change.new)
            continue
        parent_path = change.path[:-1]
        parent = _resolve(result, parent_path)
        if isinstance(parent, list):
            _list_edit(
                parent, change, removals.setdefault(parent_path, []), insertions.setdefault(parent_path, [])
            )
        elif isinstance(parent, dict):
            _mapping_edit(parent, change)
        else:
            raise ApplyError(f"{list(parent_path)} is neither a mapping nor a list")
    # Deepest lists first, so an outer list's shifts never move an inner list's path.
    for parent_path in sorted(set(removals) | set(insertions), key=len, reverse=True):
        target = _resolve(result, parent_path)
        for index in sorted(removals.get(parent_path, ()), reverse=True):
            if not 0 <= index < len(target):
                raise ApplyError(f"no item {index} to remove at {list(parent_path)}")
            del target[index]
        for index, value in sorted(insertions.get(parent_path, ()), key=lambda pair: pair[0]):
            if not 0 <= index <= len(target):
                raise ApplyError(f"cannot insert at {index} in {list(parent_path)}")
            target.insert(index, value)
    return result


def apply_file(base_form: dict[str, Any], file: FileChange) -> dict[str, Any]:
    """The head form of one document, from its base form and its FileChange."""
    if file.status is Status.ERROR:
        raise ApplyError(f"{file.label}: the diff could not read this file")
    changes = [change for service in file.services for change in service.changes]
    changes += list(file.others)
    result = apply_changes(base_form, changes)
    if not isinstance(result, dict):
        raise ApplyError("a document must stay a mapping")
    return result


def _list_edit(
    target: list[Any], change: Change, removals: list[int], insertions: list[tuple[int, Any]]
) -> None:
    """An in-place list edit now; removals and insertions collected for step 2."""
    index = change.path[-1]
    if not isinstance(index, int):
        raise ApplyError(f"list index expected at {list(change.path)}")
    if change.op is Op.ADDED:
        insertions.append((index, copy.deepcopy(change.new)))
    elif change.op is Op.REMOVED:
        removals.append(index)
    elif change.head_index is not None:  # moved (and maybe changed): out here, in there
        removals.append(index)
        insertions.append((change.head_index, copy.deepcopy(change.new)))
    else:
        _check_index(target, index, change)
        target[index] = copy.deepcopy(change.new)


def _mapping_edit(target: dict[str, Any], change: Change) -> None:
    key = change.path[-1]
    if change.op is Op.REMOVED:
        if key not in target:
            raise ApplyError(f"nothing to remove at {list(change.path)}")
        del target[key]
    else:
        target[str(key)] = copy.deepcopy(change.new)


def _resolve(root: Any, path: tuple[Key, ...]) -> Any:
    node = root
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            raise ApplyError(f"path {list(path)} does not exist") from None
    if node is ABSENT:
        raise ApplyError(f"path {list(path)} does not exist")
    return node


def _check_index(target: list[Any], index: int, change: Change) -> None:
    if not 0 <= index < len(target):
        raise ApplyError(f"no item {index} at {list(change.path)}")
