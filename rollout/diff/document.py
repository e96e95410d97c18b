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
  (`ulimits.memlock`); where its report is no faithful edit (a list that gains items
  and changes inside one, a moved item, numbers it takes for equal: the rules of
  `walk._report`), the key is reported as one whole-value change instead, so the
  model stays complete.

Two kinds of note follow a service's changes (op `note`, ignored when the model is
applied): that Compose recreates the container although nothing changes at runtime
(`docker.io/` added, `CAP_` prefixes, memlock as one value or soft/hard, a flag
alias), and which top-level `x-` block fed the changed values (the block itself is
never reported: Compose runs nothing from it).

Inline configs whose content is YAML are diffed as YAML (scrape jobs by name, so a
label change reads `scrape job X: label config_variant: a -> b`); other inline content
as text, with a unified diff.

This module compares documents and services, quotes the author's text and writes the
notes; one service key's changes by aspect are rollout/diff/aspects.py, the generic
walk (DeepDiff, alignment, readable paths) rollout/diff/walk.py.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from rollout.diff.aspects import service_changes
from rollout.diff.changes import ABSENT, Aspect, Change, FileChange, Key, Op, ServiceChange, Status
from rollout.diff.describe import unquoted
from rollout.diff.forms import ARGV_KEYS, CONTENT_SECTIONS, EMPTY, Document, plain, program_of
from rollout.diff.walk import config_subject, deep_changes, presence, readable, same, whole
from tierops.argv import Argv, aliases_for, split_argv
from tierops.canonical import Service, runtime_form
from tierops.roles import Role, mounted_by, roles_of
from tierops.yamlload import YList, YMap


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
            changes.append(presence(Aspect.CONFIG, path, name, old_raw, new_raw))
            continue
        if same(old_raw, new_raw):
            continue
        old, new = old_raw, new_raw
        if not (isinstance(old, dict) and isinstance(new, dict)):
            changes += whole(Aspect.CONFIG, path, name, old, new)
            continue
        for key in sorted(set(old) | set(new)):
            old_value, new_value = old.get(key, ABSENT), new.get(key, ABSENT)
            key_path = (*path, key)
            if old_value is not ABSENT and new_value is not ABSENT and same(old_value, new_value):
                continue
            if old_value is ABSENT or new_value is ABSENT:
                changes.append(presence(Aspect.CONFIG, key_path, key, old_value, new_value))
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
            changes.append(presence(Aspect.TOP_LEVEL, (key,), key, old, new))
        elif not same(old, new):
            changes += deep_changes(Aspect.TOP_LEVEL, (key,), old, new, readable)
    return changes
