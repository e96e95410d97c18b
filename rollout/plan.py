"""The rollout plan: which services to recreate, in which order, and how to undo it.

Derived from the change model and each service's role (`roles.py`), never from names:

0. services that disappear: `down` with the file that defined them, before anything
   else, because compose-manager's `up` removes orphans with a short timeout (the
   orphan rule) and the first `up` of the new file would kill them mid-stream;
1. one-shot jobs that changed (the model downloader), so engines find their output;
2. engines, one at a time: first the engines the change adds (those replacing a removed
   engine first, so capacity comes back before another engine goes down), unless one
   needs GPUs a changed engine still holds, then the changed engines, the highest
   replica number first (r2 before r1), unless engines carry `tierops.rollout.order`
   labels (lower goes first);
3. telemetry, each alone: DCGM, then the collector (last, so it scrapes the new labels);
4. the proxy, the registrar, the front door and unknown roles, only if they changed,
   flagged: recreating them interrupts traffic (or, for unknown roles, needs a human).

A service whose definition and mounted configs did not change is never touched.

Each changed service is: `down` dry run with the base file at the deployed tag, `up`
dry run with the head file at the new tag, and only then the real `down` and `up`
(issue 11: an `up` that fails its dry run must be found while the replica still
serves), then a verification. Down/up rather than a bare `up` for every service,
because Compose v2.40.3 does not recreate a service when only an inline config it
mounts changed (its config hash ignores the content; `docker compose config --hash`
is identical), and compose-manager's `force_recreate` is always false.

The rollback of the whole plan is its exact reverse, under the orphan rule: every
service the plan added is first taken down with the new file, because the first `up`
at the deployed tag would otherwise remove it as an orphan with a short timeout. The
rollback printed under each step obeys the same rule.

Capacity: the number of engines serving is counted through every step. The orphan rule
forces every removed engine down before the first `up` of the new file; a replacement
comes up right after. When that still leaves more than one engine out at once, no
engine at all, or fewer engines at the end, the file's plan warns, step by step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import Any

from rollout.changes import Aspect, Change, ChangeSet, FileChange, Op, Side, Status, file_identity, file_label
from rollout.checks import Check, checks_for, profiles_of, replica_number, rollout_order
from rollout.roles import INTERRUPTS_TRAFFIC, Role, gpu_device_ids
from rollout.steps import Action, ComposeCall

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
DRY_RUN_NOTE = "nothing to undo: a dry run changes nothing"


@dataclass(frozen=True)
class Tags:
    new: str
    old: str
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    number: str
    action: str  # "down (dry run)", "up (dry run)", "down", "up", "verify"
    call: ComposeCall | None
    expect: str = ""
    checks: tuple[Check, ...] = ()
    rollback: tuple[ComposeCall, ...] = ()
    rollback_note: str = ""
    # Engines serving while this step runs (None when the file has no engine).
    engines_serving: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "action": self.action}
        if self.call is not None:
            out.update(self.call.to_json())
        if self.expect:
            out["expect"] = self.expect
        if self.checks:
            out["checks"] = [check.to_json() for check in self.checks]
        out["rollback"] = [call.to_json() for call in self.rollback]
        if self.rollback_note:
            out["rollback_note"] = self.rollback_note
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

    def to_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "service": self.service,
            "role": self.role,
            "reason": self.reason,
            "interrupts_traffic": self.interrupts_traffic,
            "note": self.note,
            "warning": self.warning,
            "steps": [step.to_json() for step in self.steps],
        }


@dataclass(frozen=True)
class FilePlan:
    path: str
    old_path: str | None = None
    document: int | None = None
    stages: tuple[Stage, ...] = ()
    untouched: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None
    # The rollback of the whole file's plan: its exact reverse, orphan-safe.
    rollback: tuple[Stage, ...] = ()
    # Capacity warnings (engines serving through the steps), forward and rollback.
    warnings: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return file_label(self.path, self.old_path, self.document)

    def to_json(self) -> dict[str, Any]:
        out = file_identity(self.path, self.old_path, self.document, self.error)
        out["stages"] = [stage.to_json() for stage in self.stages]
        out["untouched"] = list(self.untouched)
        out["notes"] = list(self.notes)
        out["warnings"] = list(self.warnings)
        out["rollback"] = [stage.to_json() for stage in self.rollback]
        return out


@dataclass(frozen=True)
class Plan:
    base: Side
    head: Side
    paths: tuple[str, ...]
    tags: Tags
    files: tuple[FilePlan, ...] = field(default=())

    @property
    def errors(self) -> list[FilePlan]:
        return [file for file in self.files if file.error]

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "tierops.rollout.plan/1",
            "base": self.base.to_json(),
            "head": self.head.to_json(),
            "paths": list(self.paths),
            "tags": {"new": self.tags.new, "old": self.tags.old, "notes": list(self.tags.notes)},
            "files": [file.to_json() for file in self.files],
        }


Document = Callable[[FileChange], Mapping[str, Any] | None]


def build_plan(
    changeset: ChangeSet, head_document: Document, tags: Tags, base_document: Document | None = None
) -> Plan:
    """The plan for every changed document of `changeset` (unchanged ones need none).

    `base_document` gives the base side's parsed document (profiles of the down steps,
    the engines serving before the plan, the rollback's verification)."""
    files: list[FilePlan] = []
    for file in changeset.files:
        if file.status is Status.ERROR:
            files.append(FilePlan(file.path, file.old_path, file.document, error=file.error))
        elif file.status is not Status.UNCHANGED:
            base = (base_document(file) if base_document else None) or {}
            files.append(plan_file(file, head_document(file) or {}, tags, base))
    return Plan(changeset.base, changeset.head, changeset.paths, tags, tuple(files))


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
    file: FileChange, head: Mapping[str, Any], tags: Tags, base: Mapping[str, Any] | None = None
) -> FilePlan:
    base = base or {}
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
    context = _Context(file, tags, chosen, base_services, head_services)
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
    )


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
    ) -> None:
        self.file = file
        self.tags = tags
        self.items = list(items)
        self.base_file = file.old_path or file.path
        self.head_file = file.path
        self.stem = PurePosixPath(file.path).stem
        roles = file.roles
        base_engines = {name for name in base_services if roles.get(name) == Role.ENGINE}
        if not base_services:  # no base document given: engines the plan does not add
            base_engines = {
                name for name, role in roles.items() if role == Role.ENGINE and name not in self._added
            }
        self.serving_before = frozenset(base_engines)
        head_engines = {name for name in head_services if roles.get(name) == Role.ENGINE}
        if not head_services:
            head_engines = {name for name in base_engines if name not in self._removed} | {
                item.name for item in self.items if item.status is Status.ADDED and item.role is Role.ENGINE
            }
        self.serving_after = frozenset(head_engines)
        self.has_engines = bool(base_engines or head_engines)
        self.forward_final = len(self.serving_after)
        self.reverse_final = len(self.serving_before)

    @property
    def _added(self) -> set[str]:
        return {item.name for item in self.items if item.status is Status.ADDED}

    @property
    def _removed(self) -> set[str]:
        return {item.name for item in self.items if item.status is Status.REMOVED}

    # -- calls ---------------------------------------------------------------------------

    def old_call(self, action: Action, item: _Item, dry_run: bool) -> ComposeCall:
        """A call with the base file at the deployed tag (the definition running now)."""
        profiles = profiles_of(item.base or item.head)
        return ComposeCall(action, self.tags.old, self.base_file, (item.name,), dry_run, profiles)

    def new_call(self, action: Action, item: _Item, dry_run: bool) -> ComposeCall:
        """A call with the head file at the new tag."""
        profiles = profiles_of(item.head or item.base)
        return ComposeCall(action, self.tags.new, self.head_file, (item.name,), dry_run, profiles)

    # -- the forward plan ----------------------------------------------------------------

    def forward(self) -> tuple[Stage, ...]:
        serving = set(self.serving_before)
        engines = [item for item in self.items if item.role is Role.ENGINE]
        canary = _canary(engines)
        brought_up: list[_Item] = []  # services the plan added, up so far (orphans of an OLD up)
        stages: list[Stage] = []
        for number, item in enumerate(self.items, start=1):
            steps: list[Step] = []
            label = str(number)
            is_engine = item.role is Role.ENGINE

            orphan_downs = tuple(self.new_call(Action.DOWN, added, False) for added in reversed(brought_up))
            orphan_note = _orphan_note(brought_up, self.tags.old)
            restore = (*orphan_downs, self.old_call(Action.UP, item, False))
            own_down = self.new_call(Action.DOWN, item, False)
            undo = (own_down,) if item.status is Status.ADDED else (*orphan_downs, own_down, restore[-1])
            now = len(serving)
            if is_engine:
                serving.discard(item.name)
            out = len(serving)
            if item.status is not Status.ADDED:
                self._add(
                    steps,
                    label,
                    "down (dry run)",
                    self.old_call(Action.DOWN, item, True),
                    now,
                    expect=f"must list exactly {item.name} to stop and remove, nothing else",
                    rollback_note=DRY_RUN_NOTE,
                )
            if item.status is not Status.REMOVED:
                self._add(
                    steps,
                    label,
                    "up (dry run)",
                    self.new_call(Action.UP, item, True),
                    now,
                    expect=_up_dry_expect(item),
                    rollback_note=DRY_RUN_NOTE,
                )
            if item.status is not Status.ADDED:
                self._add(
                    steps,
                    label,
                    "down",
                    self.old_call(Action.DOWN, item, False),
                    out,
                    rollback=restore,
                    rollback_note=orphan_note,
                )
            if item.status is not Status.REMOVED:
                note = orphan_note if item.status is not Status.ADDED else ""
                self._add(
                    steps,
                    label,
                    "up",
                    self.new_call(Action.UP, item, False),
                    out,
                    rollback=undo,
                    rollback_note=note,
                )
                self._add(
                    steps,
                    label,
                    "verify",
                    None,
                    out,
                    checks=checks_for(
                        self.head_file, item.name, item.role, item.head, self.stem, item.changes
                    ),
                    rollback=undo,
                    rollback_note=_join("if any check fails", note),
                )
                if is_engine:
                    serving.add(item.name)
                if item.status is Status.ADDED:
                    brought_up.append(item)
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
        backwards = list(reversed(self.items))
        added = [item for item in backwards if item.status is Status.ADDED]
        removed = [item for item in backwards if item.status is Status.REMOVED]
        others = [item for item in backwards if item.status is Status.CHANGED]
        stages: list[Stage] = []
        for number, item in enumerate(added + removed + others, start=1):
            label = f"R{number}"
            steps: list[Step] = []

            now = len(serving)
            if item.role is Role.ENGINE:
                serving.discard(item.name)
            out = len(serving)
            if item.status is not Status.REMOVED:
                self._add(
                    steps,
                    label,
                    "down (dry run)",
                    self.new_call(Action.DOWN, item, True),
                    now,
                    expect=f"must list exactly {item.name} to stop and remove, nothing else",
                )
            if item.status is not Status.ADDED:
                self._add(
                    steps,
                    label,
                    "up (dry run)",
                    self.old_call(Action.UP, item, True),
                    now,
                    expect=f"must name no service but {item.name}; nothing removed",
                )
            if item.status is not Status.REMOVED:
                self._add(steps, label, "down", self.new_call(Action.DOWN, item, False), out)
            if item.status is not Status.ADDED:
                self._add(steps, label, "up", self.old_call(Action.UP, item, False), out)
                reverse_changes = tuple(_reverse(change) for change in item.changes)
                self._add(
                    steps,
                    label,
                    "verify",
                    None,
                    out,
                    checks=checks_for(
                        self.base_file,
                        item.name,
                        item.role,
                        item.base,
                        PurePosixPath(self.base_file).stem,
                        reverse_changes,
                    ),
                )
                if item.role is Role.ENGINE:
                    serving.add(item.name)
            if item.status is Status.ADDED:
                reason = (
                    f"added by this plan: {self.tags.old} does not define it, so the first compose/up at "
                    f"{self.tags.old} would remove it as an orphan with a short timeout instead of its "
                    "stop_grace_period; it goes down first, with the file that defines it"
                )
            elif item.status is Status.REMOVED:
                reason = f"removed by this plan: brought back up from {self.tags.old}"
            else:
                reason = f"back to its definition at {self.tags.old}"
            stages.append(self._stage(label, item, steps, "", reason=reason))
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


def _join(*parts: str) -> str:
    return "; ".join(part for part in parts if part)


def _orphan_note(brought_up: Sequence[_Item], old_tag: str) -> str:
    if not brought_up:
        return ""
    names = ", ".join(item.name for item in reversed(brought_up))
    if len(brought_up) == 1:
        return f"{names} first: this plan added it, and compose/up at {old_tag} would remove it as an orphan with a short timeout"
    return f"{names} first: this plan added them, and compose/up at {old_tag} would remove them as orphans with a short timeout"


def _up_dry_expect(item: _Item) -> str:
    if item.status is Status.ADDED:
        return f"must list exactly {item.name} to create; nothing else created, recreated or removed"
    return (
        f"must name no service but {item.name} (still running the old definition: shown recreated, or "
        "running when only a mounted config changed; the down and up below recreate it); nothing removed"
    )


def _canary(engines: Sequence[_Item]) -> str | None:
    """The engine that tries a change first: the first changed engine whose argv, env or
    image change the engines after it share. Nothing else is called a canary (issue 11:
    a removed engine was labelled "the treatment/canary replica")."""
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
        and not step.call.dry_run
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
