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
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from rollout.diff.changes import (
    Aspect,
    Change,
    ChangeSet,
    FileChange,
    Op,
    Side,
    Status,
    file_identity,
    file_label,
)
from rollout.plan.checks import Check, checks_for, replica_number, rollout_order, served_model
from rollout.plan.fleet import Placement
from rollout.plan.steps import Action, ComposeCall, Mode
from rollout.plan.variables import Variable, new_variables
from rollout.roles import INTERRUPTS_TRAFFIC, Role, gpu_device_ids

NEW_TAG = "<NEW_TAG>"
OLD_TAG = "<OLD_TAG>"

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
_WARNINGS = {
    Role.PROXY: "interrupts traffic: every request of this host goes through the proxy",
    Role.REGISTRAR: "interrupts traffic: the gateway may drop this host until it registers again",
    Role.FRONT_DOOR: "interrupts traffic: the TLS front door of this host",
    Role.OTHER: "unknown role: read its definition before running these steps",
}
# Flags whose value names the model's weights: a new value means a new snapshot to fetch.
MODEL_FLAGS = frozenset({"--model-path", "--model"})
NO_DOWN_PREVIEW = (
    "compose-manager's down has no dry run: a down cannot be previewed, it stops the "
    "service at once; the up dry run before it is the last read-only look"
)


@dataclass(frozen=True)
class Tags:
    new: str
    old: str
    notes: tuple[str, ...] = ()
    # When compose-manager accepts the new tag ("" when the tag does not exist yet).
    deployable: str = ""


@dataclass(frozen=True)
class Step:
    number: str
    action: str  # "stage", "preview", "down", "up", "verify"
    call: ComposeCall | None
    expect: str = ""
    checks: tuple[Check, ...] = ()
    # Engines of this host serving while this step runs (None when the file has no engine).
    engines_serving: int | None = None
    # A preview's verdict for its service in the `plan` event: create, recreate, unchanged.
    verdict: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "action": self.action}
        if self.call is not None:
            out.update(self.call.to_json())
        if self.expect:
            out["expect"] = self.expect
        if self.verdict:
            out["verdict"] = self.verdict
        if self.checks:
            out["checks"] = [check.to_json() for check in self.checks]
        if self.engines_serving is not None:
            out["engines_serving"] = self.engines_serving
        return out


@dataclass(frozen=True)
class Stage:
    number: int | str
    service: str
    role: str
    reason: str
    interrupts_traffic: bool
    steps: tuple[Step, ...]
    note: str = ""
    warning: str = ""
    undoes: int | None = None  # a rollback stage: the forward stage it undoes

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "number": self.number,
            "service": self.service,
            "role": self.role,
            "reason": self.reason,
            "interrupts_traffic": self.interrupts_traffic,
            "note": self.note,
            "warning": self.warning,
            "steps": [step.to_json() for step in self.steps],
        }
        if self.undoes is not None:
            out["undoes"] = self.undoes
        return out

    @property
    def actions(self) -> str:
        """`stage, preview, down, up, verify` as this stage runs them."""
        return ", ".join(step.action for step in self.steps)


@dataclass(frozen=True)
class FilePlan:
    path: str
    old_path: str | None = None
    document: int | None = None
    stages: tuple[Stage, ...] = ()
    untouched: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    # The rollback of the whole file's plan: the same rules in reverse, orphan-safe.
    rollback: tuple[Stage, ...] = ()
    # Capacity warnings (engines serving through the steps of one host), forward and rollback.
    warnings: tuple[str, ...] = ()
    placement: Placement = field(default_factory=Placement)
    # The engines of each served model on one host, before and after the plan.
    models: tuple[tuple[str, int, int], ...] = ()
    # The one `materialize_only` call before the first stage (and before the rollback).
    staging: Step | None = None
    rollback_staging: Step | None = None
    # Variables the new definition reads that the old did not: every host needs them first.
    variables: tuple[Variable, ...] = ()

    @property
    def label(self) -> str:
        return file_label(self.path, self.old_path, self.document)

    @property
    def project(self) -> str | None:
        return self.placement.project

    def to_json(self) -> dict[str, Any]:
        out = file_identity(self.path, self.old_path, self.document, self.error)
        out["hosts"] = list(self.placement.hosts)
        if self.placement.note:
            out["hosts_note"] = self.placement.note
        if self.placement.source:
            out["hosts_from"] = self.placement.source
        out["project"] = self.placement.project
        out["variables"] = [variable.to_json() for variable in self.variables]
        out["staging"] = self.staging.to_json() if self.staging else None
        out["stages"] = [stage.to_json() for stage in self.stages]
        out["untouched"] = list(self.untouched)
        out["notes"] = list(self.notes)
        out["warnings"] = list(self.warnings)
        out["rollback_staging"] = self.rollback_staging.to_json() if self.rollback_staging else None
        out["rollback"] = [stage.to_json() for stage in self.rollback]
        return out


@dataclass(frozen=True)
class Capacity:
    """Engines serving one model over every host of the plan's files."""

    model: str
    engines: int  # on the hosts the fleet's data names
    hosts: int
    lowest: int  # the fewest serving at any step, one host at a time
    # Engines per host of files whose hosts the data does not name (counted once each).
    unplaced: tuple[tuple[str, int], ...] = ()

    def line(self) -> str:
        total = self.engines + sum(count for _, count in self.unplaced)
        hosts = f"{self.hosts} host{'s' if self.hosts != 1 else ''}"
        where = f"{self.engines} engine(s) on {hosts}" if self.hosts else ""
        elsewhere = [f"{count} of {path} (hosts not in the fleet's data)" for path, count in self.unplaced]
        return (
            f"{self.model}: {', '.join([part for part in [where] if part] + elsewhere)}; "
            f"at most {total - self.lowest} out at a time, {self.lowest} serve"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "engines": self.engines,
            "hosts": self.hosts,
            "lowest": self.lowest,
            "unplaced": [{"file": path, "engines": count} for path, count in self.unplaced],
        }


@dataclass(frozen=True)
class Plan:
    base: Side
    head: Side
    paths: tuple[str, ...]
    tags: Tags
    files: tuple[FilePlan, ...] = field(default=())
    capacity: tuple[Capacity, ...] = ()

    @property
    def errors(self) -> list[FilePlan]:
        return [file for file in self.files if file.error]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "tierops.rollout.plan/2",
            "base": self.base.to_json(),
            "head": self.head.to_json(),
            "paths": list(self.paths),
            "tags": {
                "new": self.tags.new,
                "old": self.tags.old,
                "notes": list(self.tags.notes),
                "deployable": self.tags.deployable,
            },
            "capacity": [entry.to_json() for entry in self.capacity],
            "files": [file.to_json() for file in self.files],
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


@dataclass(frozen=True)
class _Item:
    """One affected service, as the plan sees it."""

    name: str
    status: Status  # CHANGED (also for a changed mounted config), ADDED or REMOVED
    role: Role
    reason: str
    base: Mapping[str, Any]  # its base definition ({} when added)
    head: Mapping[str, Any]  # its head definition ({} when removed)
    changes: tuple[Change, ...]
    note: str = ""


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
        _Item(
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
    context = _Context(file, tags, chosen, base_services, head_services, placement.project)
    stages = context.forward()
    rollback = context.reverse()
    removals = any(item.status is Status.REMOVED and item.role is Role.ENGINE for item in chosen)
    additions = any(item.status is Status.ADDED and item.role is Role.ENGINE for item in chosen)
    warnings = [
        warning
        for warning in (
            _capacity_warning(
                "this plan",
                stages,
                len(context.serving_before),
                context.forward_final,
                "every engine the new file drops goes down before its first up" if removals else "",
            ),
            _capacity_warning(
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


def _engine_key(item: _Item, position: int) -> tuple[int, int, int]:
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


def _ordered(items: Sequence[_Item], order: Sequence[str]) -> list[_Item]:
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
    sequence: list[_Item] = list(changed)
    front: list[_Item] = []
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


def _pairs(removed: Sequence[_Item], engines: Sequence[_Item]) -> dict[str, _Item]:
    """Which removed engine each added engine replaces: the one whose GPUs it takes,
    else the next one not yet replaced, in order."""
    left = list(removed)
    pairs: dict[str, _Item] = {}
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


class _Context:
    """Builds the forward stages and their reverse for one file, counting engines."""

    def __init__(
        self,
        file: FileChange,
        tags: Tags,
        items: Sequence[_Item],
        base_services: Mapping[str, Mapping[str, Any]],
        head_services: Mapping[str, Mapping[str, Any]],
        project: str | None,
    ) -> None:
        self.file = file
        self.tags = tags
        self.items = list(items)
        self.project = project
        self.base_file = file.old_path or file.path
        self.head_file = file.path
        self.stem = PurePosixPath(file.path).stem
        roles = file.roles
        added = {item.name for item in self.items if item.status is Status.ADDED}
        removed = {item.name for item in self.items if item.status is Status.REMOVED}
        base_engines = {name for name in base_services if roles.get(name) == Role.ENGINE}
        if not base_services:  # no base document given: engines the plan does not add
            base_engines = {name for name, role in roles.items() if role == Role.ENGINE and name not in added}
        self.serving_before = frozenset(base_engines)
        head_engines = {name for name in head_services if roles.get(name) == Role.ENGINE}
        if not head_services:
            head_engines = {name for name in base_engines if name not in removed} | {
                item.name for item in self.items if item.status is Status.ADDED and item.role is Role.ENGINE
            }
        self.serving_after = frozenset(head_engines)
        self.has_engines = bool(base_engines or head_engines)
        self.forward_final = len(self.serving_after)
        self.reverse_final = len(self.serving_before)
        self.staging: Step | None = None
        self.rollback_staging: Step | None = None

    # -- calls ---------------------------------------------------------------------------

    def old_call(self, action: Action, services: Sequence[str], mode: Mode = Mode.APPLY) -> ComposeCall:
        """A call with the base file at the deployed tag (the definition running now)."""
        return ComposeCall(action, self.tags.old, self.base_file, tuple(services), mode, self.project)

    def new_call(self, action: Action, services: Sequence[str], mode: Mode = Mode.APPLY) -> ComposeCall:
        """A call with the head file at the new tag."""
        return ComposeCall(action, self.tags.new, self.head_file, tuple(services), mode, self.project)

    # -- the forward plan ----------------------------------------------------------------

    def forward(self) -> tuple[Stage, ...]:
        serving = set(self.serving_before)
        engines = [item for item in self.items if item.role is Role.ENGINE]
        canary = _canary(engines)
        stages: list[Stage] = []
        staged = [
            item.name for item in self.items if item.status is not Status.REMOVED and _needs_stage(item)
        ]
        self.staging = _staging("0", self.new_call(Action.UP, staged, Mode.STAGE), "new") if staged else None
        for number, item in enumerate(self.items, start=1):
            steps: list[Step] = []
            label = str(number)
            now = len(serving)
            if item.role is Role.ENGINE:
                serving.discard(item.name)
            out = len(serving)
            if item.status is Status.REMOVED:
                self._add(
                    steps,
                    label,
                    "preview",
                    self.old_call(Action.UP, [item.name], Mode.DRY_RUN),
                    now,
                    expect=f"`plan` event: unchanged [{item.name}]; nothing else created, recreated or removed "
                    "(it also writes the deployed file back for the down)",
                    verdict="unchanged",
                )
                self._add(steps, label, "down", self.old_call(Action.DOWN, [item.name]), out)
            else:
                self._add(
                    steps,
                    label,
                    "preview",
                    self.new_call(Action.UP, [item.name], Mode.DRY_RUN),
                    now,
                    expect=_preview_expect(item, added=item.status is Status.ADDED),
                    verdict=_verdict(item, added=item.status is Status.ADDED),
                )
                if item.status is not Status.ADDED:
                    self._add(steps, label, "down", self.old_call(Action.DOWN, [item.name]), out)
                self._add(steps, label, "up", self.new_call(Action.UP, [item.name]), out)
                checks = checks_for(
                    self.head_file, item.name, item.role, item.head, self.stem, item.changes, self.project
                )
                self._add(steps, label, "verify", None, out, checks=checks)
                if item.role is Role.ENGINE:
                    serving.add(item.name)
            stages.append(self._stage(number, item, steps, _engine_note(item, engines, canary, out)))
        self.forward_final = len(serving)
        return tuple(stages)

    # -- the rollback of the whole plan ----------------------------------------------------

    def reverse(self) -> tuple[Stage, ...]:
        """The forward plan backwards, under the orphan rule: services the plan added go
        down first (any `up` at the old tag would kill them), then the services it removed
        come back (so a replaced engine's original serves again before another engine
        goes down, as in the forward plan), then the rest in reverse order."""
        serving = set(self.serving_after)
        numbers = {item.name: number for number, item in enumerate(self.items, start=1)}
        backwards = list(reversed(self.items))
        added = [item for item in backwards if item.status is Status.ADDED]
        removed = [item for item in backwards if item.status is Status.REMOVED]
        others = [item for item in backwards if item.status is Status.CHANGED]
        stages: list[Stage] = []
        staged = [item.name for item in removed + others if _needs_stage(item)]
        self.rollback_staging = (
            _staging("R0", self.old_call(Action.UP, staged, Mode.STAGE), "old") if staged else None
        )
        for number, item in enumerate(added + removed + others, start=1):
            label = f"R{number}"
            steps: list[Step] = []
            now = len(serving)
            if item.role is Role.ENGINE:
                serving.discard(item.name)
            out = len(serving)
            if item.status is Status.ADDED:
                self._add(
                    steps,
                    label,
                    "preview",
                    self.new_call(Action.UP, [item.name], Mode.DRY_RUN),
                    now,
                    expect=f"`plan` event: unchanged [{item.name}]; nothing else created, recreated or removed "
                    "(it also writes the new file back for the down)",
                    verdict="unchanged",
                )
                self._add(steps, label, "down", self.new_call(Action.DOWN, [item.name]), out)
                reason = (
                    f"added by this plan: {self.tags.old} does not define it, so any compose/up at "
                    f"{self.tags.old} would remove it as an orphan with a short timeout; it goes down first"
                )
            else:
                self._add(
                    steps,
                    label,
                    "preview",
                    self.old_call(Action.UP, [item.name], Mode.DRY_RUN),
                    now,
                    expect=_preview_expect(item, added=item.status is Status.REMOVED),
                    verdict=_verdict(item, added=item.status is Status.REMOVED),
                )
                if item.status is Status.CHANGED:
                    self._add(steps, label, "down", self.new_call(Action.DOWN, [item.name]), out)
                self._add(steps, label, "up", self.old_call(Action.UP, [item.name]), out)
                reverse_changes = tuple(_reverse(change) for change in item.changes)
                checks = checks_for(
                    self.base_file,
                    item.name,
                    item.role,
                    item.base,
                    PurePosixPath(self.base_file).stem,
                    reverse_changes,
                    self.project,
                )
                self._add(steps, label, "verify", None, out, checks=checks)
                if item.role is Role.ENGINE:
                    serving.add(item.name)
                reason = (
                    f"removed by this plan: brought back up from {self.tags.old}"
                    if item.status is Status.REMOVED
                    else f"back to its definition at {self.tags.old}"
                )
            stage = self._stage(label, item, steps, "", reason=reason)
            stages.append(replace(stage, undoes=numbers[item.name]))
        self.reverse_final = len(serving)
        return tuple(stages)

    def _add(
        self,
        steps: list[Step],
        label: str,
        action: str,
        call: ComposeCall | None,
        during: int,
        **kwargs: Any,
    ) -> None:
        """Append step `label.N`, with the engines serving while it runs."""
        count = during if self.has_engines else None
        steps.append(Step(f"{label}.{len(steps) + 1}", action, call, engines_serving=count, **kwargs))

    def _stage(
        self, number: int | str, item: _Item, steps: Sequence[Step], note: str, *, reason: str | None = None
    ) -> Stage:
        return Stage(
            number=number,
            service=item.name,
            role=item.role.value,
            reason=item.reason if reason is None else reason,
            interrupts_traffic=item.role in INTERRUPTS_TRAFFIC,
            steps=tuple(steps),
            note=note,
            warning=_WARNINGS.get(item.role, ""),
        )


def _staging(number: str, call: ComposeCall, which: str) -> Step:
    """The one `materialize_only` call that pulls a side's images before anything stops."""
    return Step(
        number,
        "stage",
        call,
        expect=f"a `staged` event listing the {which} images; nothing is created or started",
    )


def _needs_stage(item: _Item) -> bool:
    """A new image or model snapshot to fetch before the cutover: an added service, an
    image change, a changed model flag, or a changed one-shot job (the downloader's
    repository and revision are its command)."""
    if item.status is not Status.CHANGED:
        return item.role in (Role.ENGINE, Role.ONE_SHOT) or bool(
            item.head.get("image") or item.base.get("image")
        )
    for change in item.changes:
        if change.aspect is Aspect.IMAGE:
            return True
        if change.aspect is Aspect.ARGV and _flag(change) in MODEL_FLAGS:
            return True
        if item.role is Role.ONE_SHOT and change.aspect in (Aspect.ARGV, Aspect.ENTRYPOINT):
            return True
    return False


def _flag(change: Change) -> str:
    for side in (change.new, change.old):
        if isinstance(side, Mapping) and side.get("flag"):
            return str(side["flag"])
    return ""


def _verdict(item: _Item, *, added: bool) -> str:
    """The preview's verdict for the service. Compose recreates a service whose
    definition changed; one whose only change is a mounted config's content keeps its
    config hash and shows unchanged (the down and up after it recreate it)."""
    if added:
        return "create"
    return "recreate" if item.changes else "unchanged"


def _preview_expect(item: _Item, *, added: bool) -> str:
    return f"`plan` event: {_verdict(item, added=added)} [{item.name}]; nothing else created, recreated or removed"


def _canary(engines: Sequence[_Item]) -> str | None:
    """The engine that tries a change first: the first changed engine whose argv, env or
    image change the engines after it share. Nothing else is called a canary: a removed
    engine was once labelled "the treatment/canary replica"."""
    changed = [item for item in engines if item.status is Status.CHANGED]
    if len(changed) < 2:
        return None
    interesting = (Aspect.ARGV, Aspect.ENVIRONMENT, Aspect.IMAGE, Aspect.ENTRYPOINT)

    def what(item: _Item) -> set[tuple[str, str, str, str]]:
        return {
            (change.aspect.value, change.op.value, change.subject, repr(change.new))
            for change in item.changes
            if change.aspect in interesting
        }

    first = what(changed[0])
    if first and any(first & what(other) for other in changed[1:]):
        return changed[0].name
    return None


def _engine_note(item: _Item, engines: Sequence[_Item], canary: str | None, serving: int) -> str:
    if item.role is not Role.ENGINE:
        return ""
    parts: list[str] = []
    if len(engines) > 1:
        parts.append(f"engine {engines.index(item) + 1} of {len(engines)}, one at a time")
    if item.status is Status.REMOVED:
        parts.append("removed: taken down before any up of the new file (orphan rule)")
    if item.note:
        parts.append(item.note)
    if item.name == canary:
        parts.append("the canary of this change: the other engines get it only after this one verifies")
    if len(engines) > 1 or item.status is not Status.ADDED:
        parts.append(f"{serving} engine(s) serve meanwhile" if serving else "NO engine serves meanwhile")
    return "; ".join(parts)


def _reverse(change: Change) -> Change:
    """The change that undoes `change` (for the rollback's flag checks)."""
    op = {Op.ADDED: Op.REMOVED, Op.REMOVED: Op.ADDED}.get(change.op, change.op)
    return replace(change, op=op, old=change.new, new=change.old)


def _capacity_warning(what: str, stages: Sequence[Stage], start: int, final: int, orphans: str) -> str:
    """A warning when `stages` take more than one engine out at once, leave none serving,
    or end with fewer than they started with; with the count at every engine step."""
    counts = [
        (stage, step)
        for stage in stages
        for step in stage.steps
        if stage.role == Role.ENGINE
        and step.engines_serving is not None
        and step.call
        and step.call.mode is Mode.APPLY
    ]
    if not counts or not start:
        return ""
    lowest = min(step.engines_serving or 0 for _, step in counts)
    if lowest >= start - 1 and lowest > 0 and final >= start:
        return ""
    problems: list[str] = []
    if lowest == 0:
        problems.append("no engine serves during some steps")
    elif lowest < start - 1:
        problems.append(f"{start - lowest} engines are out at once")
    if final < start:
        problems.append(f"it ends with {final} engine(s) instead of {start}")
    why = f" (the orphan rule: {orphans})" if orphans else ""
    timeline = "; ".join(
        f"{step.number} {step.action} {stage.service}: {step.engines_serving}" for stage, step in counts
    )
    return f"capacity: {', '.join(problems)} in {what}{why}. Engines serving: {start} before; {timeline}; {final} after"


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
