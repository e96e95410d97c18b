"""The rollout plan: what to stage, preview, recreate and verify, in which order, and how to undo it.

Every call is one compose-manager can honour as its own source states it
(`rollout/compose-manager.yaml`). Derived from the change model and each service's
role (`roles.py`), never from names. Per prod file, on each of its hosts in turn (the
canary host first):

0. stage: one `up` with `materialize_only` at the new tag, for every service whose
   image or model snapshot changes: the images are pulled while every engine still
   serves, so the cutover waits for a container start, not for a download;
1. services that disappear: preview (an `up` dry run at the deployed tag, which also
   writes the deployed file back into compose-manager's work directory), then `down`,
   before anything else, because compose-manager's `up` removes orphans with a short
   timeout (the orphan rule);
2. one-shot jobs that changed (the model downloader, which downloads when it runs);
3. engines, one at a time: added engines first (those replacing a removed engine first,
   so capacity comes back before another engine goes down) unless one needs GPUs a
   changed engine still holds, then the changed engines, the highest replica number
   first (r2 before r1), unless `tierops.rollout.order` labels say otherwise;
4. telemetry, each alone: DCGM, then the collector (last, so it scrapes the new labels);
5. the proxy, the registrar, the front door and unknown roles, only if they changed,
   flagged: recreating them interrupts traffic (or, for unknown roles, needs a human).

Each changed service: preview (`up` dry run at the new tag: its `plan` event must name
no other service), `down`, `up`, verify. compose-manager's `down` has no dry run, so
a down is never previewed; the `up` dry run before it is the last read-only look, and
it writes the file that defines the service where the `down` reads it. Down and up
rather than a bare `up`, because Compose v2.40.3 does not recreate a service when only
an inline config it mounts changed (its config hash ignores the content).

The rollback of a file's plan follows the same rules in reverse, under the orphan rule:
services the plan added go down first, then removed ones come back, then the rest in
reverse order. Each rollback stage says which forward stage it undoes: when a step
fails, the stages already past their `down` are undone in the rollback's order.

Capacity: the engines serving are counted through every step of one host, and per
served model over every host the plan touches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any

from rollout.diff.changes import Aspect, ChangeSet, FileChange, Status
from rollout.plan.checks import replica_number, rollout_order, served_model
from rollout.plan.fleet import Placement
from rollout.plan.model import Capacity, FilePlan, Plan, Tags
from rollout.plan.stages import Context, Item, capacity_warning
from rollout.plan.variables import new_variables
from tierops.roles import Role, gpu_device_ids

_ROLE_ORDER = {
    Role.ONE_SHOT: 1,
    Role.ENGINE: 2,
    Role.DCGM: 3,
    Role.COLLECTOR: 4,
    Role.PROXY: 5,
    Role.REGISTRAR: 6,
    Role.FRONT_DOOR: 7,
    Role.OTHER: 8,
}


Document = Callable[[FileChange], Mapping[str, Any] | None]


def build_plan(
    changeset: ChangeSet,
    head_document: Document,
    tags: Tags,
    base_document: Document | None = None,
    placements: Mapping[str, Placement] | None = None,
) -> Plan:
    """The plan for every changed document of `changeset` (unchanged ones need none).

    `base_document` gives the base side's parsed document (the engines serving before
    the plan, the rollback's verification); `placements` the hosts and project of each
    file stem (from the fleet's data)."""
    files: list[FilePlan] = []
    for file in changeset.files:
        if file.status is Status.ERROR:
            files.append(FilePlan(file.path, file.old_path, file.document, error=file.error))
        elif file.status is not Status.UNCHANGED:
            base = (base_document(file) if base_document else None) or {}
            placement = (placements or {}).get(PurePosixPath(file.path).stem, Placement())
            files.append(plan_file(file, head_document(file) or {}, tags, base, placement))
    return Plan(changeset.base, changeset.head, changeset.paths, tags, tuple(files), _capacity(files))


def _capacity(files: Sequence[FilePlan]) -> tuple[Capacity, ...]:
    """Per served model: the engines on every host of the plan's files, and the fewest
    serving while the plan runs one host at a time."""
    totals: dict[str, list[int]] = {}  # model -> [engines, hosts, most out at once]
    unplaced: dict[str, list[tuple[str, int]]] = {}
    for file in files:
        hosts = len(file.placement.hosts)
        out = _most_out(file)
        for model, before, _after in file.models:
            entry = totals.setdefault(model, [0, 0, 0])
            entry[2] = max(entry[2], out)
            if hosts:
                entry[0] += before * hosts
                entry[1] += hosts
            else:
                unplaced.setdefault(model, []).append((file.path, before))
    result = []
    for model, (engines, hosts, out) in sorted(totals.items()):
        elsewhere = tuple(unplaced.get(model, ()))
        total = engines + sum(count for _, count in elsewhere)
        result.append(Capacity(model, engines, hosts, max(total - out, 0), elsewhere))
    return tuple(result)


def _most_out(file: FilePlan) -> int:
    start = sum(before for _model, before, _after in file.models)
    counts = [
        step.engines_serving
        for stage in file.stages
        for step in stage.steps
        if step.engines_serving is not None
    ]
    return max((start - count for count in counts), default=0)


def plan_file(
    file: FileChange,
    head: Mapping[str, Any],
    tags: Tags,
    base: Mapping[str, Any] | None = None,
    placement: Placement | None = None,
) -> FilePlan:
    base = base or {}
    placement = placement or Placement()
    reasons = _reasons(file)
    head_services, base_services = _services(head), _services(base)
    order = list(head_services) + [name for name in reasons if name not in head_services]
    statuses = {service.name: service.status for service in file.services}
    changes = {service.name: service.changes for service in file.services}
    items = [
        Item(
            name=name,
            status=statuses.get(name, Status.CHANGED),
            role=_role(file, name),
            reason=reason,
            base=base_services.get(name) or {},
            head=head_services.get(name) or {},
            changes=changes.get(name, ()),
        )
        for name, reason in reasons.items()
    ]
    chosen = _ordered(items, order)
    context = Context(file, tags, chosen, base_services, head_services, placement.project)
    stages = context.forward()
    rollback = context.reverse()
    removals = any(item.status is Status.REMOVED and item.role is Role.ENGINE for item in chosen)
    additions = any(item.status is Status.ADDED and item.role is Role.ENGINE for item in chosen)
    warnings = [
        warning
        for warning in (
            capacity_warning(
                "this plan",
                stages,
                len(context.serving_before),
                context.forward_final,
                "every engine the new file drops goes down before its first up" if removals else "",
            ),
            capacity_warning(
                "its rollback",
                rollback,
                len(context.serving_after),
                context.reverse_final,
                f"every engine this plan added goes down before the first up at {tags.old}"
                if additions
                else "",
            ),
        )
        if warning
    ]
    return FilePlan(
        path=file.path,
        old_path=file.old_path,
        document=file.document,
        stages=stages,
        untouched=tuple(name for name in order if name not in reasons),
        notes=tuple(_notes(file, reasons, tags.old)),
        rollback=rollback,
        warnings=tuple(warnings),
        placement=placement,
        models=_models(base_services, head_services, file),
        staging=context.staging,
        rollback_staging=context.rollback_staging,
        variables=new_variables(base, head, placement.host_variables) if head else (),
    )


def _models(
    base: Mapping[str, Mapping[str, Any]], head: Mapping[str, Mapping[str, Any]], file: FileChange
) -> tuple[tuple[str, int, int], ...]:
    """(model, engines before, engines after) on one host of this file."""
    counts: dict[str, list[int]] = {}
    for side, services in enumerate((base, head)):
        for name, service in services.items():
            if file.roles.get(name) == Role.ENGINE:
                counts.setdefault(served_model(name, service), [0, 0])[side] += 1
    return tuple((model, before, after) for model, (before, after) in sorted(counts.items()))


def _services(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    services = document.get("services")
    if not isinstance(services, Mapping):
        return {}
    return {str(name): value for name, value in services.items() if isinstance(value, Mapping)}


def _role(file: FileChange, name: str) -> Role:
    try:
        return Role(file.roles.get(name, Role.OTHER))
    except ValueError:
        return Role.OTHER


def _engine_key(item: Item, position: int) -> tuple[int, int, int]:
    """Changed engines: explicit `tierops.rollout.order` first (lower first), then the
    highest replica number, then the later in the file."""
    definition = item.head or item.base
    explicit = rollout_order(definition)
    if explicit is not None:
        return (0, explicit, position)
    replica = replica_number(item.name, definition)
    return (1, -(replica if replica is not None else -1), -position)


def _gpus(definition: Mapping[str, Any]) -> set[str]:
    try:
        return set(gpu_device_ids(definition) or ())
    except TypeError:  # a malformed reservation: no overlap to respect
        return set()


def _ordered(items: Sequence[Item], order: Sequence[str]) -> list[Item]:
    position = {name: index for index, name in enumerate(order)}
    removed = [item for item in items if item.status is Status.REMOVED]
    removed.sort(key=lambda item: (_ROLE_ORDER[item.role], position[item.name]))
    engines = [item for item in items if item.status is not Status.REMOVED and item.role is Role.ENGINE]
    added = sorted(
        (item for item in engines if item.status is Status.ADDED),
        key=lambda item: _engine_key(item, position[item.name]),
    )
    changed = sorted(
        (item for item in engines if item.status is not Status.ADDED),
        key=lambda item: _engine_key(item, position[item.name]),
    )
    # An added engine comes up before the changed engines go down (capacity first),
    # unless it needs GPUs a changed engine still holds: then right after that one.
    sequence: list[Item] = list(changed)
    front: list[Item] = []
    for item in added:
        holders = [index for index, other in enumerate(sequence) if _gpus(item.head) & _gpus(other.base)]
        if holders:
            sequence.insert(max(holders) + 1, item)
        else:
            front.append(item)
    paired = _pairs([item for item in removed if item.role is Role.ENGINE], front + sequence)
    engine_order = [
        replace(item, note=f"replaces {paired[item.name].name}, removed above")
        if item.name in paired
        else item
        for item in front + sequence
    ]
    rest = sorted(
        (item for item in items if item.status is not Status.REMOVED and item.role is not Role.ENGINE),
        key=lambda item: (_ROLE_ORDER[item.role], position[item.name]),
    )
    first = [item for item in rest if _ROLE_ORDER[item.role] < _ROLE_ORDER[Role.ENGINE]]
    last = [item for item in rest if _ROLE_ORDER[item.role] > _ROLE_ORDER[Role.ENGINE]]
    return removed + first + engine_order + last


def _pairs(removed: Sequence[Item], engines: Sequence[Item]) -> dict[str, Item]:
    """Which removed engine each added engine replaces: the one whose GPUs it takes,
    else the next one not yet replaced, in order."""
    left = list(removed)
    pairs: dict[str, Item] = {}
    added = [item for item in engines if item.status is Status.ADDED]
    for item in added:
        same = [old for old in left if _gpus(old.base) & _gpus(item.head)]
        if same:
            pairs[item.name] = same[0]
            left.remove(same[0])
    for item in added:
        if item.name not in pairs and left:
            pairs[item.name] = left.pop(0)
    return pairs


def _reasons(file: FileChange) -> dict[str, str]:
    """Why each affected service is in the plan, in the order the diff lists them."""
    reasons: dict[str, str] = {}
    for service in file.services:
        if service.status is Status.CHANGED:
            aspects = dict.fromkeys(change.aspect.value for change in service.changes)
            reasons[service.name] = f"definition changed ({', '.join(aspects)})"
        else:
            reasons[service.name] = service.status.value
    for change in file.others:
        if change.aspect is Aspect.CONFIG:
            source = f"{change.path[0]}/{change.path[1]}"
            noun = "secret" if change.path[0] == "secrets" else "config"
            for user in file.users.get(source, ()):
                reason = f"{noun} {change.path[1]} changed"
                current = reasons.get(user)
                if current in ("added", "removed"):
                    continue
                if current is None:
                    reasons[user] = reason
                elif reason not in current:
                    reasons[user] = f"{current}; {reason}"
    return reasons


def _notes(file: FileChange, reasons: Mapping[str, str], old_tag: str) -> list[str]:
    notes: list[str] = []
    if file.old_path:
        notes.append(
            f"renamed from {file.old_path}: down steps use the old path at {old_tag}, up steps the new one"
        )
    for change in file.others:
        if change.aspect is Aspect.TOP_LEVEL:
            key = change.path[0]
            if key == "name":
                notes.append(
                    "the compose project name changed: every container moves to a new project; "
                    "this plan does not cover that, plan it by hand"
                )
            else:
                notes.append(
                    f"top-level `{key}` changed: Compose recreates no service for it; review it by hand"
                )
        elif change.aspect is Aspect.CONFIG:
            source = f"{change.path[0]}/{change.path[1]}"
            if not file.users.get(source):
                noun = str(change.path[0]).removesuffix("s")
                notes.append(f"{noun} {change.path[1]} changed but no service mounts it")
    return list(dict.fromkeys(notes))
