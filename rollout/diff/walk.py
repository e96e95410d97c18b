"""The generic walk of two values: DeepDiff's report converted to paths a reviewer reads,
kept only when applying it replays the change exactly (else one whole-value change), and
the alignment of two sequences.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from rollout.diff.apply import ApplyError, apply_changes
from rollout.diff.changes import ABSENT, Aspect, Change, Key, Op
from rollout.diff.forms import plain


def same(a: Any, b: Any) -> bool:
    """Equal data, with `1`, `1.0` and `true` kept apart (Python's == mixes them)."""
    if a is b:
        return True
    if a != b:
        return False
    # Equal reprs mean equal types too (True/1/1.0 print differently); only a mapping
    # with another key order needs the slow walk.
    return repr(a) == repr(b) or _type_shape(a) == _type_shape(b)


def _type_shape(value: Any) -> Any:
    # Only reached when the values are already ==: walks them once to tell bool/int/float apart.
    if isinstance(value, dict):
        return [(key, _type_shape(item)) for key, item in sorted(value.items(), key=lambda kv: str(kv[0]))]
    if isinstance(value, list):
        return [_type_shape(item) for item in value]
    if isinstance(value, (bool, int, float)):
        return type(value).__name__
    return None


def presence(aspect: Aspect, path: tuple[Key, ...], subject: str, before: Any, after: Any) -> Change:
    if before is ABSENT:
        return Change(aspect, Op.ADDED, path, subject, new=after)
    return Change(aspect, Op.REMOVED, path, subject, old=before)


def whole(aspect: Aspect, path: tuple[Key, ...], subject: str, before: Any, after: Any) -> list[Change]:
    return [Change(aspect, Op.CHANGED, path, subject, old=before, new=after)]


_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def align(before: Sequence[Any], after: Sequence[Any]) -> list[tuple[str, int]]:
    """The edits of a longest-matching alignment, in reading order.

    `("-", i)` removes base item i, `("+", j)` adds head item j; within one replaced
    block the removals come first, as in a unified diff.
    """
    a = [_hashable(item) for item in before]
    b = [_hashable(item) for item in after]
    edits: list[tuple[str, int]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            edits += [("-", index) for index in range(i1, i2)]
            edits += [("+", index) for index in range(j1, j2)]
    return edits


# Above this many items the quadratic search for the best kept order is not worth it.
_MOVES_LIMIT = 400


def align_moves(before: Sequence[Any], after: Sequence[Any]) -> list[tuple[str, int]]:
    """Like `align`, but among the longest kept orders it keeps the items whose position
    did not change, so a move names where an item really was and where it really went.

    Reversing `--a 1 --b 2 --c 3` keeps `--b 2` (argument 2 on both sides) and moves
    `--a 1` from 1 to 3 and `--c 3` from 3 to 1; `difflib` would keep `--a 1` and report
    `--b 2` as moved from 2 to 2.
    """
    if len(before) > _MOVES_LIMIT or len(after) > _MOVES_LIMIT:
        return align(before, after)
    a = [_hashable(item) for item in before]
    b = [_hashable(item) for item in after]
    waiting: dict[Any, deque[int]] = {}
    for index, item in enumerate(b):
        waiting.setdefault(item, deque()).append(index)
    pairs = [(i, waiting[item].popleft()) for i, item in enumerate(a) if waiting.get(item)]
    # Longest chain of pairs increasing on both sides; ties broken by unmoved items.
    best: list[tuple[int, int, int]] = []  # (length, unmoved, previous pair) per pair
    for k, (i, j) in enumerate(pairs):
        score = (1, int(i == j), -1)
        for p in range(k):
            if pairs[p][1] < j and pairs[p][0] < i:
                length, unmoved, _ = best[p]
                candidate = (length + 1, unmoved + int(i == j), p)
                if candidate[:2] > score[:2]:
                    score = candidate
        best.append(score)
    kept: list[tuple[int, int]] = []
    if best:
        k = max(range(len(best)), key=lambda index: best[index][:2])
        while k >= 0:
            kept.append(pairs[k])
            k = best[k][2]
        kept.reverse()
    edits: list[tuple[str, int]] = []
    last_i = last_j = -1
    for i, j in [*kept, (len(a), len(b))]:
        edits += [("-", index) for index in range(last_i + 1, i)]
        edits += [("+", index) for index in range(last_j + 1, j)]
        last_i, last_j = i, j
    return edits


def _hashable(item: Any) -> Any:
    # argv items and short-syntax ports/volumes are cheap to key exactly; the rest as JSON.
    if isinstance(item, str):
        return ("s", item)
    if isinstance(item, dict) and all(isinstance(value, str) or value is None for value in item.values()):
        return ("d", tuple(sorted(item.items())))
    return ("j", json.dumps(item, sort_keys=True))


def deep_changes(
    aspect: Aspect,
    path: tuple[Key, ...],
    before: Any,
    after: Any,
    subject: Callable[[tuple[Key, ...]], str],
) -> list[Change]:
    """DeepDiff's report as Changes at `path`, or one whole-value change if it cannot be replayed."""
    if same(before, after):
        return []
    relative = _mapping_walk(before, after)
    if relative is None:
        relative = _deepdiff(before, after)
    if relative is not None and not _cascades(relative):
        changes = [
            Change(
                _aspect_at(aspect, (*path, *rel)),
                op,
                (*path, *rel),
                subject((*path, *rel)),
                old=old,
                new=new,
            )
            for op, rel, old, new in relative
        ]
        if replays(before, after, changes, len(path)):
            return changes
    return whole(aspect, path, subject(path), before, after)


def replays(before: Any, after: Any, changes: list[Change], depth: int) -> bool:
    """Whether `changes` (paths under a prefix of `depth` keys) turn `before` into `after`."""
    relative = [replace(change, path=change.path[depth:]) for change in changes]
    try:
        return same(apply_changes(before, relative), after)
    except ApplyError:
        return False


def _mapping_walk(before: Any, after: Any) -> list[tuple[Op, tuple[Key, ...], Any, Any]] | None:
    """Nested mappings of scalars diffed key by key, in reading order; None when a list
    (or a type change between a list and something else) differs: DeepDiff's turn.

    Most keys without an aspect of their own (`ulimits`, `logging`, `deploy` once its
    GPU ids are taken out) are mappings, and this saves importing DeepDiff for them.
    """
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return None
    result: list[tuple[Op, tuple[Key, ...], Any, Any]] = []

    def walk(old: dict[str, Any], new: dict[str, Any], rel: tuple[Key, ...]) -> bool:
        for key in [*new, *(key for key in old if key not in new)]:
            if key not in old:
                result.append((Op.ADDED, (*rel, key), ABSENT, new[key]))
            elif key not in new:
                result.append((Op.REMOVED, (*rel, key), old[key], ABSENT))
            elif same(old[key], new[key]):
                continue
            elif isinstance(old[key], dict) and isinstance(new[key], dict):
                if not walk(old[key], new[key], (*rel, key)):
                    return False
            elif isinstance(old[key], list) or isinstance(new[key], list):
                return False
            else:
                result.append((Op.CHANGED, (*rel, key), old[key], new[key]))
        return True

    return result if walk(before, after, ()) else None


def _deepdiff(before: Any, after: Any) -> list[tuple[Op, tuple[Key, ...], Any, Any]] | None:
    """(op, relative path, old, new) from DeepDiff's tree view; None for reports we do not replay."""
    from deepdiff import DeepDiff  # imported on first use: it is the slowest import here

    tree = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0)
    result: list[tuple[Op, tuple[Key, ...], Any, Any]] = []
    for report, levels in tree.items():
        for level in levels:
            if report in ("values_changed", "type_changes"):
                rel = tuple(level.path(output_format="list"))
                result.append((Op.CHANGED, rel, plain(level.t1), plain(level.t2)))
            elif report in ("dictionary_item_added", "iterable_item_added"):
                rel = tuple(level.path(output_format="list", use_t2=True))
                result.append((Op.ADDED, rel, ABSENT, plain(level.t2)))
            elif report in ("dictionary_item_removed", "iterable_item_removed"):
                rel = tuple(level.path(output_format="list"))
                result.append((Op.REMOVED, rel, plain(level.t1), ABSENT))
            else:  # moves, set items, attributes: replay as one whole-value change
                return None
    result.sort(key=lambda item: _path_key(item[1], before, after))
    return result


def _cascades(relative: list[tuple[Op, tuple[Key, ...], Any, Any]]) -> bool:
    """Whether DeepDiff paired list items by position after an insertion or removal.

    It then reports `extra[1].a: 3 -> 1` for an item that merely moved: true of the
    positions, misleading to a reader. Such a list is reported as one whole change.
    """
    resized = {
        rel[:-1] for op, rel, _, _ in relative if rel and isinstance(rel[-1], int) and op is not Op.CHANGED
    }
    for _, rel, _, _ in relative:
        for depth in range(len(rel) - 1):
            if isinstance(rel[depth], int) and rel[:depth] in resized:
                return True
    return False


def _path_key(path: tuple[Key, ...], before: Any, after: Any) -> tuple[int, ...]:
    """Reading order of a path: the position of each key in the head (else the base)."""
    positions: list[int] = []
    old, new = before, after
    for key in path:
        if isinstance(key, int):
            positions.append(key)
        else:
            new_keys = list(new) if isinstance(new, dict) else []
            old_keys = list(old) if isinstance(old, dict) else []
            if key in new_keys:
                positions.append(new_keys.index(key))
            else:
                positions.append(len(new_keys) + (old_keys.index(key) if key in old_keys else 0))
        old = _child(old, key)
        new = _child(new, key)
    return tuple(positions)


def _child(node: Any, key: Key) -> Any:
    if isinstance(node, dict):
        return node.get(key)
    if isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
        return node[key]
    return None


def _aspect_at(default: Aspect, path: tuple[Key, ...]) -> Aspect:
    # A DeepDiff path that reaches into GPU reservations is still about GPUs.
    if "deploy" in path and "devices" in path:
        return Aspect.GPUS
    return default


def readable(path: Sequence[Key]) -> str:
    """`('ulimits', 'memlock')` -> `ulimits.memlock`; `('cap_add', 1)` -> `cap_add[1]`."""
    text = ""
    for key in path:
        if isinstance(key, int):
            text += f"[{key}]"
        elif _PLAIN_KEY.match(key):
            text += f".{key}" if text else key
        else:
            text += f"[{json.dumps(key)}]"
    return text


def service_subject(path: tuple[Key, ...]) -> str:
    return readable(path[2:])  # ("services", name, key, ...) -> key...


def config_subject(path: tuple[Key, ...]) -> str:
    """Inside a config: `scrape job X: label config_variant`, else a readable path."""
    rest = path[3:] if len(path) > 3 and path[2] == "content" else path[2:]
    keys = list(rest)
    if "scrape_configs" in keys:
        at = keys.index("scrape_configs")
        if len(keys) > at + 1:
            job = keys[at + 1]
            tail = keys[at + 2 :]
            if len(tail) >= 3 and tail[0] == "static_configs" and tail[2] == "labels":
                detail = f"label {tail[3]}" if len(tail) > 3 else "labels"
            elif tail and "targets" in tail:
                detail = "targets"
            else:
                detail = readable(tail)
            return f"scrape job {job}: {detail}" if detail else f"scrape job {job}"
        return "scrape_configs"
    return readable(keys) or str(path[1])
