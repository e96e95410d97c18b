"""The semantic diff of one compose document: per service, per aspect, per flag.

Both sides are read once into the canonical model (`forms.py` over
`tierops/canonical/`), so a change Compose would not see (`shm_size: "64"` for `64`,
`$VAR` for `${VAR}`, `300s` for `5m`, short or long ports, a string healthcheck, an
empty first document) is no change here and never restarts a service. Services whose
forms are equal cost one `==`; the others are taken apart by aspect:

- argv (`command`, `entrypoint`) as flags: items aligned as a sequence, then a removed
  and an added item of the same flag paired into "value changed" (a value that moves
  from one flag to another is therefore two changes, never nothing, which is what
  `ignore_order` would report);
- environment, labels, depends_on and healthcheck key by key;
- GPU device ids, ports and volumes as items;
- every other key through DeepDiff, converted to paths a reviewer reads
  (`ulimits.memlock`), and checked by applying it: when DeepDiff's list report cannot
  be replayed exactly (it cascades on lists of mappings), the key is reported as one
  whole-value change instead, so the model stays complete.

Two kinds of note follow a service's changes (op `note`, ignored when the model is
applied): that Compose recreates the container although nothing changes at runtime
(`docker.io/` added, `CAP_` prefixes, memlock as one value or soft/hard, a flag
alias), and which top-level `x-` block fed the changed values (the block itself is
never reported: Compose runs nothing from it).

Inline configs whose content is YAML are diffed as YAML (scrape jobs by name, so a
label change reads `scrape job X: label config_variant: a -> b`); other inline content
as text, with a unified diff.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from rollout.diff.apply import ApplyError, apply_changes
from rollout.diff.changes import (
    ABSENT,
    ASPECT_ORDER,
    Aspect,
    Change,
    FileChange,
    Key,
    Op,
    ServiceChange,
    Status,
)
from rollout.diff.describe import unquoted
from rollout.diff.forms import ARGV_KEYS, CONTENT_SECTIONS, EMPTY, Document, plain, program_of
from rollout.roles import Role, mounted_by, roles_of
from tierops.argv import Argv, aliases_for, split_argv
from tierops.canonical import Service, runtime_form
from tierops.yamlload import YList, YMap

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
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def diff_document(
    base: Document | None,
    head: Document | None,
    *,
    path: str,
    old_path: str | None = None,
    document: int | None = None,
) -> FileChange:
    """The FileChange of one file; `base`/`head` None means the file is absent there."""
    before = base or EMPTY
    after = head or EMPTY
    before_view, after_view = before.roles_view(), after.roles_view()
    roles = {name: str(role) for name, role in roles_of(before_view).items()}
    roles.update({name: str(role) for name, role in roles_of(after_view).items()})
    users = dict(mounted_by(before_view))
    users.update(mounted_by(after_view))
    services = _diff_services(before, after, roles)
    others: list[Change] = []
    for section in CONTENT_SECTIONS:
        others += _diff_entries(section, before.sections, after.sections)
    others += _diff_top_level(before.sections, after.sections)
    if base is None:
        status = Status.ADDED
    elif head is None:
        status = Status.REMOVED
    elif old_path is not None:
        status = Status.RENAMED
    else:
        status = Status.CHANGED if services or others else Status.UNCHANGED
    return FileChange(
        path=path,
        status=status,
        old_path=old_path,
        document=document,
        services=tuple(services),
        others=tuple(others),
        roles=roles,
        users=users,
    )


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


def _diff_services(base: Document, head: Document, roles: Mapping[str, str]) -> list[ServiceChange]:
    before, after = base.fields, head.fields
    result: list[ServiceChange] = []
    for name, fields in after.items():
        role = roles.get(name, str(Role.OTHER))
        prefix: tuple[Key, ...] = ("services", name)
        if name not in before:
            added = Change(Aspect.SERVICE, Op.ADDED, prefix, name, new=head.service_form(name))
            result.append(ServiceChange(name, Status.ADDED, role, (added,)))
            continue
        if same(before[name], fields):
            continue  # Compose renders both alike: nothing to see, nothing to restart
        old_form, form = base.service_form(name), head.service_form(name)
        changes = [] if same(old_form, form) else service_changes(prefix, old_form, form)
        changes = [_placed(change, base, head) for change in changes]
        changes += _notes(name, base, head, changes)
        if changes:
            result.append(ServiceChange(name, Status.CHANGED, role, tuple(changes)))
    for name in before:
        if name not in after:
            form = base.service_form(name)
            removed = Change(Aspect.SERVICE, Op.REMOVED, ("services", name), name, old=form)
            result.append(ServiceChange(name, Status.REMOVED, roles.get(name, str(Role.OTHER)), (removed,)))
    return result


def _placed(change: Change, base: Document, head: Document) -> Change:
    """The change with where its value was written on each side (`line:col`), and the
    author's text there (`written`)."""
    name = str(change.path[1])
    rel = change.path[2:]
    # A moved list item is at `head_index` in the head (`path` is in base coordinates).
    head_rel = rel if change.head_index is None or not rel else (*rel[:-1], change.head_index)
    old_at, old_text = (None, None) if change.op is Op.ADDED else _written_at(base, name, rel)
    new_at, new_text = (None, None) if change.op is Op.REMOVED else _written_at(head, name, head_rel)
    return replace(change, at=(old_at, new_at), written=(old_text, new_text))


def _written_at(document: Document, name: str, rel: tuple[Key, ...]) -> tuple[str | None, str | None]:
    """Where the value at `rel` of service `name` was written, and its text as written."""
    service = document.service(name)
    if service is None or not rel:
        return None, None
    key = rel[0]
    if key in ARGV_KEYS and len(rel) >= 3 and rel[1] == "args" and isinstance(rel[2], int):
        # argv item `i` of the compared form is a flag's (or a positional's) word
        words = service.fields.get(str(key)) or []
        split = split_argv(words, aliases_for(program_of(service.fields)))
        indices = sorted(
            [option.index for option in split.options] + [index for index, _ in split.positionals]
        )
        if rel[2] >= len(indices):
            return str(service.at(key)), None
        word = indices[rel[2]]
        return str(service.at(key, word)), _quote_option(service, str(key), word, words, split)
    return str(service.at(*rel)), _quote(service, rel)


# The fields a list of `KEY=value` items can spell (environment, labels, ...).
_KEYED_LISTS = frozenset({"environment", "labels", "annotations", "sysctls", "extra_hosts"})
# Longer texts are not quoted in a line (its `at` still points at them).
QUOTE_LIMIT = 100


def _quote(service: Service, path: tuple[Key, ...]) -> str | None:
    """The author's text of the value at `path` (`Service.quote`: a scalar exactly as
    written, its quotes too; a collection in compact flow style).

    None when the author wrote no node of its own there (a default, an empty value), when
    it is longer than QUOTE_LIMIT, or when the text is not its value's own spelling (an
    escape, a folded or block scalar): the output boundary masks secrets by their value
    and its printed spellings, and a YAML escape (`"s3cr\\x65t"`) is none of them.
    """
    found = service.origins.get(path)
    if found is None or (found.span is None and not isinstance(found.raw, (YMap, YList))):
        return None
    text = service.quote(*path)
    raw = found.raw
    if isinstance(raw, str):
        if unquoted(text) != raw:
            return None
        item = f"{path[-1]}="
        if raw.startswith(item) and path[0] in _KEYED_LISTS:
            text = raw[len(item) :]  # `- KEY=value` of a list: the value is what changed
    return text if len(text) <= QUOTE_LIMIT and "\n" not in text else None


def _quote_option(service: Service, key: str, index: int, words: list[str], split: Argv) -> str | None:
    """An argv option as written: its flag word (an alias as the author spelled it) and
    its value word, each as written when the command is a list (a string command's
    words are quoted as the words)."""
    option = next((option for option in split.options if option.index == index), None)
    indices = [index] if option is None or option.attached or option.value is None else [index, index + 1]
    texts: list[str] = []
    for word in indices:
        found = service.origins.get((key, word))
        text = service.quote(key, word) if found is not None and found.raw == words[word] else words[word]
        texts.append(text if unquoted(text) == words[word] else words[word])
    text = " ".join(texts)
    return text if len(text) <= QUOTE_LIMIT and "\n" not in text else None


RUNTIME_NOTE = "Compose recreates the container, although nothing changes at runtime"


def _notes(name: str, base: Document, head: Document, changes: Sequence[Change]) -> list[Change]:
    """The notes that follow a changed service: runtime-only, and the x- blocks that fed it."""
    old, new = base.service(name), head.service(name)
    if old is None or new is None:
        return []
    notes: list[Change] = []
    prefix: tuple[Key, ...] = ("services", name)
    if not changes and not same(old.fields, new.fields):
        # Equal forms, other renderings: a flag alias or `--flag=value`; the engine reads
        # the same flags, but Compose sees another command and recreates the container.
        notes.append(Change(Aspect.NOTE, Op.NOTE, prefix, f"{RUNTIME_NOTE} (argv spelling only)"))
    elif changes and same(_runtime(old.fields, base, name), _runtime(new.fields, head, name)):
        notes.append(Change(Aspect.NOTE, Op.NOTE, prefix, RUNTIME_NOTE))
    blocks: list[str] = []
    for change in changes:
        rel = change.path[2:]
        if rel and rel[0] in ARGV_KEYS:
            rel = rel[:1]
        for document, service, side in ((base, old, change.old), (head, new, change.new)):
            if side is ABSENT and change.op is not Op.CHANGED:
                continue
            block = document.block_at(service.at(*rel)) if rel else None
            if block is not None and block not in blocks:
                blocks.append(block)
    if blocks:
        fed = ", ".join(blocks)
        notes.append(
            Change(Aspect.NOTE, Op.NOTE, prefix, f"changed through {fed} (merged into this service)")
        )
    return notes


def _runtime(fields: Mapping[str, Any], document: Document, name: str) -> dict[str, Any]:
    form = document.service_form(name)
    reading = runtime_form(fields)
    for key in ARGV_KEYS:
        reading[key] = form.get(key)
    return reading


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
        return [_presence(aspect, path, key, before, after)]
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
    return deep_changes(aspect, path, before, after, _service_subject)


def _presence(aspect: Aspect, path: tuple[Key, ...], subject: str, before: Any, after: Any) -> Change:
    if before is ABSENT:
        return Change(aspect, Op.ADDED, path, subject, new=after)
    return Change(aspect, Op.REMOVED, path, subject, old=before)


def _whole(aspect: Aspect, path: tuple[Key, ...], subject: str, before: Any, after: Any) -> list[Change]:
    return [Change(aspect, Op.CHANGED, path, subject, old=before, new=after)]


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


def _argv_changes(aspect: Aspect, path: tuple[Key, ...], before: Any, after: Any) -> list[Change]:
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return _whole(aspect, path, str(path[-1]), before, after)
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
        return _whole(aspect, path, str(path[-1]), before, after)
    changes: list[Change] = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key, ABSENT), after.get(key, ABSENT)
        if old is ABSENT or new is ABSENT:
            changes.append(_presence(aspect, (*path, key), subject(key), old, new))
        elif not same(old, new):
            changes.append(Change(aspect, Op.CHANGED, (*path, key), subject(key), old=old, new=new))
    return changes


def _sequence_changes(
    aspect: Aspect, path: tuple[Key, ...], noun: str, before: Any, after: Any
) -> list[Change]:
    if not (isinstance(before, list) and isinstance(after, list)):
        return _whole(aspect, path, str(path[-1]), before, after)
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
    rest = deep_changes(Aspect.OTHER, path, before, adjusted, _service_subject)
    combined = gpu_changes + rest
    if _replays(before, after, combined, len(path)):
        return combined
    return _whole(Aspect.OTHER, path, "deploy", before, after)


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
        if _replays(before, after, changes, len(path)):
            return changes
    return _whole(aspect, path, subject(path), before, after)


def _replays(before: Any, after: Any, changes: list[Change], depth: int) -> bool:
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


def _service_subject(path: tuple[Key, ...]) -> str:
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


def _diff_entries(section: str, base: Mapping[str, Any], head: Mapping[str, Any]) -> list[Change]:
    """Inline configs/secrets: YAML content as YAML, text content as text, fields by DeepDiff."""
    before: Mapping[str, Any] = base.get(section) or {}
    after: Mapping[str, Any] = head.get(section) or {}
    names = [str(name) for name in after] + [str(name) for name in before if name not in after]
    changes: list[Change] = []
    for name in names:
        old_raw, new_raw = before.get(name, ABSENT), after.get(name, ABSENT)
        path: tuple[Key, ...] = (section, name)
        if old_raw is ABSENT or new_raw is ABSENT:
            changes.append(_presence(Aspect.CONFIG, path, name, old_raw, new_raw))
            continue
        if same(old_raw, new_raw):
            continue
        old, new = old_raw, new_raw
        if not (isinstance(old, dict) and isinstance(new, dict)):
            changes += _whole(Aspect.CONFIG, path, name, old, new)
            continue
        for key in sorted(set(old) | set(new)):
            old_value, new_value = old.get(key, ABSENT), new.get(key, ABSENT)
            key_path = (*path, key)
            if old_value is not ABSENT and new_value is not ABSENT and same(old_value, new_value):
                continue
            if old_value is ABSENT or new_value is ABSENT:
                changes.append(_presence(Aspect.CONFIG, key_path, key, old_value, new_value))
            elif key == "content" and isinstance(old_value, str) and isinstance(new_value, str):
                changes.append(text_change(key_path, old_value, new_value))
            else:
                changes += deep_changes(Aspect.CONFIG, key_path, old_value, new_value, config_subject)
    return changes


def text_change(path: tuple[Key, ...], old: str, new: str) -> Change:
    return Change(Aspect.CONFIG, Op.CHANGED, path, "content", old=old, new=new, unified=unified(old, new))


def unified(old: str, new: str) -> tuple[str, ...]:
    """The hunks of a unified diff (3 lines of context), without the file header lines."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=3)
    return tuple(line for number, line in enumerate(lines) if number >= 2)


def _diff_top_level(base: Mapping[str, Any], head: Mapping[str, Any]) -> list[Change]:
    skip = {"services", *CONTENT_SECTIONS}
    keys = [key for key in head if key not in skip] + [
        key for key in base if key not in skip and key not in head
    ]
    changes: list[Change] = []
    for key in keys:
        old = plain(base[key]) if key in base else ABSENT
        new = plain(head[key]) if key in head else ABSENT
        if old is ABSENT or new is ABSENT:
            changes.append(_presence(Aspect.TOP_LEVEL, (key,), key, old, new))
        elif not same(old, new):
            changes += deep_changes(Aspect.TOP_LEVEL, (key,), old, new, readable)
    return changes
