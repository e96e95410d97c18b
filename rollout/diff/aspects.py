"""One service key's changes, by aspect: argv as flags (aligned, then a removed and an
added item of one flag paired into a changed value), key-value mappings key by key, GPU
device ids, ports and volumes as items, and every other key through the generic walk.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rollout.diff.changes import ABSENT, ASPECT_ORDER, Aspect, Change, Key, Op
from rollout.diff.forms import ARGV_KEYS
from rollout.diff.walk import (
    align,
    align_moves,
    deep_changes,
    presence,
    same,
    service_subject,
    whole,
)

_KEY_ASPECTS: dict[str, Aspect] = {
    "image": Aspect.IMAGE,
    "command": Aspect.ARGV,
    "entrypoint": Aspect.ENTRYPOINT,
    "environment": Aspect.ENVIRONMENT,
    "labels": Aspect.LABELS,
    "gpus": Aspect.GPUS,
    "ports": Aspect.PORTS,
    "volumes": Aspect.VOLUMES,
    "depends_on": Aspect.DEPENDS_ON,
    "healthcheck": Aspect.HEALTHCHECK,
}
_DEVICES = ("resources", "reservations", "devices")


def service_changes(
    prefix: tuple[Key, ...], old_form: Mapping[str, Any], new_form: Mapping[str, Any]
) -> list[Change]:
    """Every change between two service forms, in reading order (image, argv, ...)."""
    keys = sorted(
        {str(key) for key in (*old_form, *new_form)},
        key=lambda key: (ASPECT_ORDER[_KEY_ASPECTS.get(key, Aspect.OTHER)], key),
    )
    changes: list[Change] = []
    for key in keys:
        before, after = old_form.get(key, ABSENT), new_form.get(key, ABSENT)
        if before is not ABSENT and after is not ABSENT and same(before, after):
            continue
        changes += _key_changes(prefix, key, before, after)
    return changes


def _key_changes(  # noqa: PLR0911 (one return per aspect)
    prefix: tuple[Key, ...], key: str, before: Any, after: Any
) -> list[Change]:
    aspect = _KEY_ASPECTS.get(key, Aspect.OTHER)
    path = (*prefix, key)
    if before is ABSENT or after is ABSENT:
        return [presence(aspect, path, key, before, after)]
    if key in ARGV_KEYS:
        return _argv_changes(aspect, path, before, after)
    if key in ("environment", "labels", "depends_on"):
        return _mapping_changes(aspect, path, before, after, str)
    if key == "healthcheck":
        return _mapping_changes(aspect, path, before, after, lambda item: f"healthcheck.{item}")
    if key in ("ports", "volumes"):
        return _sequence_changes(aspect, path, key[:-1], before, after)
    if key == "deploy":
        return _deploy_changes(path, before, after)
    if key == "image":
        return [Change(aspect, Op.CHANGED, path, key, old=before, new=after)]
    return deep_changes(aspect, path, before, after, service_subject)


def _argv_changes(aspect: Aspect, path: tuple[Key, ...], before: Any, after: Any) -> list[Change]:
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return whole(aspect, path, str(path[-1]), before, after)
    changes: list[Change] = []
    if before["program"] != after["program"]:
        changes.append(
            Change(
                aspect, Op.CHANGED, (*path, "program"), "program", old=before["program"], new=after["program"]
            )
        )
    old_args: list[dict[str, Any]] = before["args"]
    new_args: list[dict[str, Any]] = after["args"]
    edits = align_moves(old_args, new_args)
    # Pair a removed and an added occurrence of the same flag: "value changed" (or
    # "moved" when the value is equal), in order for repeated flags.
    waiting: dict[str, deque[int]] = {}
    for kind, index in edits:
        flag = old_args[index].get("flag") if kind == "-" else None
        if flag is not None:
            waiting.setdefault(flag, deque()).append(index)
    pairs: dict[int, int] = {}  # head index -> base index
    for kind, index in edits:
        flag = new_args[index].get("flag") if kind == "+" else None
        if flag is not None and waiting.get(flag):
            pairs[index] = waiting[flag].popleft()
    paired_bases = set(pairs.values())
    args_path = (*path, "args")
    for kind, index in edits:
        if kind == "-" and index not in paired_bases:
            subject = _flag_subject(old_args, index)
            changes.append(Change(aspect, Op.REMOVED, (*args_path, index), subject, old=old_args[index]))
        elif kind == "+" and index in pairs:  # reported where it lands in the head
            base = pairs[index]
            changes.append(
                Change(
                    aspect,
                    Op.CHANGED,
                    (*args_path, base),
                    _flag_subject(old_args, base),
                    old=old_args[base],
                    new=new_args[index],
                    head_index=index,
                )
            )
        elif kind == "+":
            subject = _flag_subject(new_args, index)
            changes.append(Change(aspect, Op.ADDED, (*args_path, index), subject, new=new_args[index]))
    return changes


def _flag_subject(args: Sequence[Mapping[str, Any]], index: int) -> str:
    item = args[index]
    flag = item.get("flag")
    if flag is None:
        return "argument"
    occurrences = [number for number, other in enumerate(args) if other.get("flag") == flag]
    if len(occurrences) > 1:
        return f"{flag} (#{occurrences.index(index) + 1})"
    return str(flag)


def _mapping_changes(
    aspect: Aspect,
    path: tuple[Key, ...],
    before: Any,
    after: Any,
    subject: Callable[[str], str],
) -> list[Change]:
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return whole(aspect, path, str(path[-1]), before, after)
    changes: list[Change] = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, ABSENT), after.get(key, ABSENT)
        if old is ABSENT or new is ABSENT:
            changes.append(presence(aspect, (*path, key), subject(key), old, new))
        elif not same(old, new):
            changes.append(Change(aspect, Op.CHANGED, (*path, key), subject(key), old=old, new=new))
    return changes


def _sequence_changes(
    aspect: Aspect, path: tuple[Key, ...], noun: str, before: Any, after: Any
) -> list[Change]:
    if not (isinstance(before, list) and isinstance(after, list)):
        return whole(aspect, path, str(path[-1]), before, after)
    return [
        Change(aspect, Op.REMOVED, (*path, index), noun, old=before[index])
        if kind == "-"
        else Change(aspect, Op.ADDED, (*path, index), noun, new=after[index])
        for kind, index in align(before, after)
    ]


def _devices(deploy: Any) -> list[Any] | None:
    node = deploy
    for key in _DEVICES:
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node if isinstance(node, list) else None


def _has_ids(device: Any) -> bool:
    return isinstance(device, dict) and "device_ids" in device


def _deploy_changes(path: tuple[Key, ...], before: Any, after: Any) -> list[Change]:
    """GPU device ids as their own aspect; the rest of `deploy` through DeepDiff."""
    old_devices, new_devices = _devices(before), _devices(after)
    gpu_changes: list[Change] = []
    adjusted = after
    if old_devices is not None and new_devices is not None and len(old_devices) == len(new_devices):
        adjusted = copy.deepcopy(after)
        adjusted_devices = _devices(adjusted) or []
        for index, (old, new) in enumerate(zip(old_devices, new_devices, strict=True)):
            if _has_ids(old) and _has_ids(new) and not same(old["device_ids"], new["device_ids"]):
                gpu_changes.append(
                    Change(
                        Aspect.GPUS,
                        Op.CHANGED,
                        (*path, *_DEVICES, index, "device_ids"),
                        "GPUs",
                        old=old["device_ids"],
                        new=new["device_ids"],
                    )
                )
                adjusted_devices[index]["device_ids"] = old["device_ids"]
    rest = deep_changes(Aspect.OTHER, path, before, adjusted, service_subject)
    # A change of the rest that replaces a value holding changed GPU ids (the whole
    # `deploy`, when the rest is one whole change) would put the old ids back.
    gpu_paths = [change.path for change in gpu_changes]
    if any(gpu[: len(change.path)] == change.path for change in rest for gpu in gpu_paths):
        return whole(Aspect.OTHER, path, "deploy", before, after)
    return gpu_changes + rest
