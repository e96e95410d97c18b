"""The generic walk of two values: DeepDiff's report converted to paths a reviewer reads
(or one whole-value change where the report is no faithful edit, by the rules of
`_report`), and the alignment of two sequences.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

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
    """DeepDiff's report as Changes at `path`, or one whole-value change (see `_report`)."""
    if same(before, after):
        return []
    relative = _report(before, after)
    if relative is None:
        return whole(aspect, path, subject(path), before, after)
    return [
        Change(_aspect_at(aspect, (*path, *rel)), op, (*path, *rel), subject((*path, *rel)), old=old, new=new)
        for op, rel, old, new in relative
    ]


Relative = list[tuple[Op, tuple[Key, ...], Any, Any]]  # (op, path under the value, old, new)

# The report kinds that are edits of the model (changes.py); any other is a whole change.
_CHANGED = frozenset({"values_changed", "type_changes"})
_ADDED = frozenset({"dictionary_item_added", "iterable_item_added"})
_REMOVED = frozenset({"dictionary_item_removed", "iterable_item_removed"})
# At one position (a base index changed, a head index added), the change reads first.
_OP_ORDER = {Op.CHANGED: 0, Op.REMOVED: 1, Op.ADDED: 2}


def _report(before: Any, after: Any) -> Relative | None:
    """DeepDiff's tree report as edits in reading order, or None: one whole-value change.

    The report is shown as it is unless one of these holds (then it is no faithful edit
    of the model, or would mislead):

    1. two lists of scalars hold equal numbers of different types (`1`, `1.0`, `true`):
       DeepDiff aligns such lists with `==`, which takes them for one value, so it
       would miss the change or report it where it is not;
    2. it reports a kind that is no edit of the model (a moved item, set or attribute
       items, ...);
    3. a list gains or loses items and also changes inside one of them (`_cascades`).

    Otherwise the report is the model's edit: values and added or removed keys in place
    (base positions), removed items at their base index, added ones at their head index;
    DeepDiff pairs a list's items by position, or along a `difflib` alignment for lists
    of scalars, in order either way, so kept items land where the head has them. (Its
    merge of an added and a removed item at one index is turned off below.) The
    completeness tests (tests/rollout/test_diff_completeness.py) hold these rules to it.
    """
    if _blurred_numbers(before, after):
        return None
    from deepdiff import DeepDiff  # imported on first use: it is the slowest import here

    # report_repetition (which otherwise only matters with ignore_order) keeps an added
    # and a removed item at the same list index apart: DeepDiff would merge them into one
    # changed value, although the one index is a base position and the other a head one.
    tree = DeepDiff(before, after, view="tree", threshold_to_diff_deeper=0, report_repetition=True)
    result: Relative = []
    for report, levels in tree.items():
        for level in levels:
            if report in _CHANGED:
                rel = tuple(level.path(output_format="list"))
                result.append((Op.CHANGED, rel, plain(level.t1), plain(level.t2)))
            elif report in _ADDED:
                rel = tuple(level.path(output_format="list", use_t2=True))
                result.append((Op.ADDED, rel, ABSENT, plain(level.t2)))
            elif report in _REMOVED:
                rel = tuple(level.path(output_format="list"))
                result.append((Op.REMOVED, rel, plain(level.t1), ABSENT))
            else:
                return None
    if _cascades(result):
        return None
    result.sort(key=lambda item: (_path_key(item[1], before, after), _OP_ORDER[item[0]]))
    return result


def _blurred_numbers(before: Any, after: Any) -> bool:
    """Whether lists of scalars DeepDiff may align hold equal numbers (`==`) of different
    types on the two sides: `1` and `true`, `1` and `1.0`, `0` and `false`."""
    old, new = _list_numbers(before, (), {}), _list_numbers(after, (), {})
    return any(key in new and not (types == new[key] and len(types) == 1) for key, types in old.items())


def _list_numbers(
    value: Any, keys: tuple[str | None, ...], found: dict[Any, set[type]]
) -> dict[Any, set[type]]:
    """The types of the numbers (booleans included) in `value`'s lists of scalars, by the
    mapping keys above the list (list positions as None: DeepDiff may pair any two) and
    the number's value."""
    if isinstance(value, dict):
        for key, item in value.items():
            _list_numbers(item, (*keys, key), found)
    elif isinstance(value, list):
        if any(isinstance(item, (dict, list)) for item in value):
            for item in value:
                _list_numbers(item, (*keys, None), found)
        else:
            for item in value:
                if isinstance(item, (bool, int, float)):
                    found.setdefault((keys, item), set()).add(type(item))
    return found


def _cascades(relative: Relative) -> bool:
    """Whether a list gains or loses items and also changes inside one of them.

    DeepDiff then pairs the list's items by position: `extra[1].a: 3 -> 1` for an item
    that merely moved is true of the positions and misleading to a reader, and a path
    inside an item reads base positions for one kind and head positions for another.
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
