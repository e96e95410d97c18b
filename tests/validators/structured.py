"""Structured single mutations of a compose file, for the hardening property.

A mutation acts on the parsed document, not on its bytes, so every one is a different
*shape* of file: a key deleted, a scalar turned into another type, a list item
duplicated, two services' values at one key swapped. The inline configs (the
collector's YAML above all) are documents too: a path may go inside them, and the
content is written back as YAML text.

Used by tests/validators/test_hardening.py (a modest hypothesis run) and by
benchmarks/bench_validators.py --sweep (every path, every kind).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import yaml

# What a scalar (or a whole subtree) becomes in a "wrong type" mutation.
WRONG_TYPES: tuple[Any, ...] = (5, 2.5, True, None, "x", [5], {"x": 5}, [], {})
KINDS = ("delete", "retype", "duplicate", "swap")

Path = tuple[Any, ...]
# A path element that steps into an inline config's parsed content.
INLINE = "<content>"


# libyaml's loader and dumper when present: the property runs many mutations.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # _LOADER is a safe loader


def dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=10_000)


def _inline(value: Any) -> Any:
    """An inline config's content parsed, when it is a YAML mapping (the collector's)."""
    if not isinstance(value, str) or "\n" not in value:
        return None
    try:
        parsed = load(value)
    except yaml.YAMLError:
        return None
    return parsed if isinstance(parsed, dict) else None


def paths(data: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every node's path, depth first (inline YAML configs included)."""
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*prefix, key))
            if key == "content":
                inner = _inline(value)
                if inner is not None:
                    yield from paths(inner, (*prefix, key, INLINE))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*prefix, index))


def _edit(data: Any, path: Path, change: Any) -> bool:  # noqa: PLR0911 (one return per way a path can miss)
    """Apply `change(parent, key)` at `path`, through inline configs; False if not applicable."""
    if not path:
        return False
    if INLINE in path:
        split = path.index(INLINE)
        outer, inner = path[:split], path[split + 1 :]
        parent = _walk(data, outer[:-1])
        if parent is None:
            return False
        content = _inline(parent[outer[-1]])
        if content is None or not inner:
            return False
        if not _edit(content, inner, change):
            return False
        parent[outer[-1]] = dump(content)
        return True
    parent = _walk(data, path[:-1])
    if parent is None:
        return False
    return bool(change(parent, path[-1]))


def _walk(data: Any, path: Path) -> Any:
    node = data
    for step in path:
        if (isinstance(node, dict) and step in node) or (
            isinstance(node, list) and isinstance(step, int) and step < len(node)
        ):
            node = node[step]
        else:
            return None
    return node if isinstance(node, dict | list) else None


def delete(data: Any, path: Path) -> bool:
    def change(parent: Any, key: Any) -> bool:
        del parent[key]
        return True

    return _edit(data, path, change)


def retype(data: Any, path: Path, value: Any) -> bool:
    def change(parent: Any, key: Any) -> bool:
        if parent[key] == value and type(parent[key]) is type(value):
            return False
        parent[key] = copy.deepcopy(value)
        return True

    return _edit(data, path, change)


def duplicate(data: Any, path: Path) -> bool:
    """Duplicate a list item (path ends at the item)."""

    def change(parent: Any, key: Any) -> bool:
        if not isinstance(parent, list):
            return False
        parent.insert(key, copy.deepcopy(parent[key]))
        return True

    return _edit(data, path, change)


def swap(data: Any, first: str, second: str, key: str) -> bool:
    """Swap two services' values at one top-level key of their definitions."""
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict):
        return False
    one, two = services.get(first), services.get(second)
    if not (isinstance(one, dict) and isinstance(two, dict) and key in one and key in two):
        return False
    if one[key] == two[key]:
        return False
    one[key], two[key] = two[key], one[key]
    return True


def mutate(text: str, kind: str, choice: int, wrong: int = 0) -> str | None:
    """One mutation of `text`: the `choice`-th applicable target of `kind` (modulo the count).

    None when the mutation changed nothing (the caller skips it).
    """
    data = load(text)
    if kind == "swap":
        services = data.get("services") if isinstance(data, dict) else None
        if not isinstance(services, dict):
            return None
        names = list(services)
        pairs = [
            (a, b, key)
            for i, a in enumerate(names)
            for b in names[i + 1 :]
            for key in (services[a] or {})
            if isinstance(services[b], dict) and key in services[b]
        ]
        if not pairs:
            return None
        a, b, key = pairs[choice % len(pairs)]
        return dump(data) if swap(data, a, b, key) else None
    targets = [path for path in paths(data) if path and path[-1] != INLINE]
    if kind == "duplicate":
        targets = [path for path in targets if isinstance(path[-1], int)]
    if not targets:
        return None
    path = targets[choice % len(targets)]
    if kind == "delete":
        applied = delete(data, path)
    elif kind == "retype":
        applied = retype(data, path, WRONG_TYPES[wrong % len(WRONG_TYPES)])
    else:
        applied = duplicate(data, path)
    return dump(data) if applied else None


def count(text: str, kind: str) -> int:
    """How many targets `kind` has in `text` (for an exhaustive sweep)."""
    data = load(text)
    if kind == "swap":
        services = data.get("services") or {}
        names = list(services)
        return sum(
            1
            for i, a in enumerate(names)
            for b in names[i + 1 :]
            for key in (services[a] or {})
            if isinstance(services[b], dict) and key in services[b]
        )
    targets = [path for path in paths(data) if path and path[-1] != INLINE]
    if kind == "duplicate":
        targets = [path for path in targets if isinstance(path[-1], int)]
    return len(targets)
