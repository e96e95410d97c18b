"""The rollout plan: which services to recreate, in which order, and how to undo each step.

Derived from the change model and each service's role (`roles.py`), never from names:

0. services that disappear: `down` with the file that defined them, before anything
   else, because compose-manager's `up` removes orphans with a short timeout (the
   orphan rule) and the first `up` of the new file would kill them mid-stream;
1. one-shot jobs that changed (the model downloader), so engines find their output;
2. engines, one at a time, the treatment/canary replica first: the highest replica
   number first (r2 before r1), unless engines carry `tierops.rollout.order` labels
   (lower goes first);
3. telemetry, each alone: DCGM, then the collector (last, so it scrapes the new labels);
4. the proxy, the registrar, the front door and unknown roles, only if they changed,
   flagged: recreating them interrupts traffic (or, for unknown roles, needs a human).

A service whose definition and mounted configs did not change is never touched.

Each changed service is: `down` (dry run, then for real) with the base file at the
deployed tag, `up` (dry run, then for real) with the head file at the new tag, then a
verification. Down/up rather than a bare `up` for every service, because Compose
v2.40.3 does not recreate a service when only an inline config it mounts changed (its
config hash ignores the content; `docker compose config --hash` is identical), and
compose-manager's `force_recreate` is always false.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rollout.changes import Aspect, ChangeSet, FileChange, Side, Status, file_identity, file_label
from rollout.checks import Check, checks_for, replica_number, rollout_order
from rollout.forms import services_of
from rollout.roles import INTERRUPTS_TRAFFIC, Role
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
    action: str  # "down (dry run)", "down", "up (dry run)", "up", "verify"
    call: ComposeCall | None
    expect: str = ""
    checks: tuple[Check, ...] = ()
    rollback: tuple[ComposeCall, ...] = ()
    rollback_note: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"number": self.number, "action": self.action}
        if self.call is not None:
            out.update(endpoint=self.call.endpoint, payload=self.call.payload(), command=self.call.command())
        if self.expect:
            out["expect"] = self.expect
        if self.checks:
            out["checks"] = [check.to_json() for check in self.checks]
        out["rollback"] = [
            {"endpoint": call.endpoint, "payload": call.payload(), "command": call.command()}
            for call in self.rollback
        ]
        if self.rollback_note:
            out["rollback_note"] = self.rollback_note
        return out


@dataclass(frozen=True)
class Stage:
    number: int
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

    @property
    def label(self) -> str:
        return file_label(self.path, self.old_path, self.document)

    def to_json(self) -> dict[str, Any]:
        out = file_identity(self.path, self.old_path, self.document, self.error)
        out["stages"] = [stage.to_json() for stage in self.stages]
        out["untouched"] = list(self.untouched)
        out["notes"] = list(self.notes)
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


HeadDocument = Callable[[FileChange], Mapping[str, Any] | None]


def build_plan(changeset: ChangeSet, head_document: HeadDocument, tags: Tags) -> Plan:
    """The plan for every changed document of `changeset` (unchanged ones need none)."""
    files: list[FilePlan] = []
    for file in changeset.files:
        if file.status is Status.ERROR:
            files.append(FilePlan(file.path, file.old_path, file.document, error=file.error))
        elif file.status is not Status.UNCHANGED:
            files.append(plan_file(file, head_document(file) or {}, tags))
    return Plan(changeset.base, changeset.head, changeset.paths, tags, tuple(files))


def plan_file(file: FileChange, head: Mapping[str, Any], tags: Tags) -> FilePlan:
    reasons = _reasons(file)
    services = services_of(head)
    order = list(services) + [name for name in reasons if name not in services]
    position = {name: index for index, name in enumerate(order)}
    statuses = {service.name: service.status for service in file.services}

    def key(name: str) -> tuple[int, int, int, int]:
        if statuses.get(name) is Status.REMOVED:
            return (0, 0, 0, position[name])
        role = _role(file, name)
        if role is Role.ENGINE:
            definition = services.get(name) or {}
            explicit = rollout_order(definition)
            if explicit is not None:
                return (_ROLE_ORDER[role], 0, explicit, position[name])
            replica = replica_number(name, definition)
            return (_ROLE_ORDER[role], 1, -(replica if replica is not None else -1), -position[name])
        return (_ROLE_ORDER[role], 0, 0, position[name])

    chosen = sorted(reasons, key=key)
    engines = [name for name in chosen if _role(file, name) is Role.ENGINE]
    stages: list[Stage] = []
    for number, name in enumerate(chosen, start=1):
        stages.append(
            _stage(
                number, file, name, reasons[name], statuses.get(name), services.get(name) or {}, tags, engines
            )
        )
    untouched = tuple(name for name in order if name not in reasons)
    return FilePlan(
        path=file.path,
        old_path=file.old_path,
        document=file.document,
        stages=tuple(stages),
        untouched=untouched,
        notes=tuple(_notes(file, reasons)),
    )


def _role(file: FileChange, name: str) -> Role:
    try:
        return Role(file.roles.get(name, Role.OTHER))
    except ValueError:
        return Role.OTHER


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


def _stage(
    number: int,
    file: FileChange,
    name: str,
    reason: str,
    status: Status | None,
    definition: Mapping[str, Any],
    tags: Tags,
    engines: Sequence[str],
) -> Stage:
    role = _role(file, name)
    base_file = file.old_path or file.path
    head_file = file.path
    only = (name,)
    restore = ComposeCall(Action.UP, tags.old, base_file, only, dry_run=False)
    undo_up = ComposeCall(Action.DOWN, tags.new, head_file, only, dry_run=False)
    steps: list[Step] = []

    def add(action: str, call: ComposeCall | None, **kwargs: Any) -> None:
        steps.append(Step(f"{number}.{len(steps) + 1}", action, call, **kwargs))

    if status is not Status.ADDED:
        add(
            "down (dry run)",
            ComposeCall(Action.DOWN, tags.old, base_file, only, dry_run=True),
            expect=f"must list exactly {name} to stop and remove, nothing else",
            rollback_note=DRY_RUN_NOTE,
        )
        add("down", ComposeCall(Action.DOWN, tags.old, base_file, only, dry_run=False), rollback=(restore,))
    if status is not Status.REMOVED:
        undo = (undo_up,) if status is Status.ADDED else (undo_up, restore)
        add(
            "up (dry run)",
            ComposeCall(Action.UP, tags.new, head_file, only, dry_run=True),
            expect=f"must list exactly {name} to create; nothing else created, recreated or removed",
            rollback_note=DRY_RUN_NOTE,
        )
        add("up", ComposeCall(Action.UP, tags.new, head_file, only, dry_run=False), rollback=undo)
        stem = PurePosixPath(head_file).stem
        add(
            "verify",
            None,
            checks=checks_for(head_file, name, role, definition, stem),
            rollback=undo,
            rollback_note="if any check fails",
        )
    note = ""
    if role is Role.ENGINE and len(engines) > 1:
        position = engines.index(name) + 1
        others = "the other replicas keep serving" if status is not Status.REMOVED else ""
        first = "first: the treatment/canary replica; " if position == 1 else ""
        note = f"engine {position} of {len(engines)}, one at a time; {first}{others}".rstrip("; ")
    return Stage(
        number=number,
        service=name,
        role=role.value,
        reason=reason,
        interrupts_traffic=role in INTERRUPTS_TRAFFIC,
        steps=tuple(steps),
        note=note,
        warning=_WARNINGS.get(role, ""),
    )


def _notes(file: FileChange, reasons: Mapping[str, str]) -> list[str]:
    notes: list[str] = []
    if file.old_path:
        notes.append(
            f"renamed from {file.old_path}: down steps use the old path at {OLD_TAG}, up steps the new one"
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
