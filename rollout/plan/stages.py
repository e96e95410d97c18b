"""The stages of one file's plan and their reverse: each affected service staged,
previewed, taken down, brought up and verified, with the engines serving counted at
every step (rollout/plan/planner.py says in which order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import Any

from rollout.diff.changes import Aspect, Change, FileChange, Op, Status
from rollout.plan.checks import checks_for, served_model
from rollout.plan.model import Stage, Step, Tags
from rollout.plan.steps import Action, ComposeCall, Mode
from tierops.roles import INTERRUPTS_TRAFFIC, Role

_WARNINGS = {
    Role.PROXY: "interrupts traffic: every request of this host goes through the proxy",
    Role.REGISTRAR: "interrupts traffic: the gateway may drop this host until it registers again",
    Role.FRONT_DOOR: "interrupts traffic: the TLS front door of this host",
    Role.OTHER: "unknown role: read its definition before running these steps",
}
# Flags whose value names the model's weights: a new value means a new snapshot to fetch.
MODEL_FLAGS = frozenset({"--model-path", "--model"})


@dataclass(frozen=True)
class Item:
    """One affected service, as the plan sees it."""

    name: str
    status: Status  # CHANGED (also for a changed mounted config), ADDED or REMOVED
    role: Role
    reason: str
    base: Mapping[str, Any]  # its base definition ({} when added)
    head: Mapping[str, Any]  # its head definition ({} when removed)
    changes: tuple[Change, ...]
    note: str = ""


class Context:
    """Builds the forward stages and their reverse for one file, counting engines."""

    def __init__(
        self,
        file: FileChange,
        tags: Tags,
        items: Sequence[Item],
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
        # The model each engine serves: a file of several models (a pack) counts the
        # engines of the model a step takes out, not the file's.
        specs = {**base_services, **head_services}
        self.model_of = {
            name: served_model(name, specs.get(name) or {}) for name in base_engines | head_engines
        }
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
            out_of = set(serving)
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
            stages.append(self._stage(number, item, steps, self._engine_note(item, engines, canary, out_of)))
        self.forward_final = len(serving)
        return tuple(stages)

    def _engine_note(self, item: Item, engines: Sequence[Item], canary: str | None, serving: set[str]) -> str:
        """The engine step's note, with the engines serving while it is out: of its own
        model when the file serves several (the others' engines serve other clients)."""
        models = set(self.model_of.values())
        if len(models) < 2:
            return _engine_note(item, engines, canary, len(serving))
        model = self.model_of.get(item.name, "")
        same = sum(1 for name in serving if self.model_of.get(name) == model)
        return _engine_note(item, engines, canary, same, model)

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
        self, number: int | str, item: Item, steps: Sequence[Step], note: str, *, reason: str | None = None
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


def _needs_stage(item: Item) -> bool:
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


def _verdict(item: Item, *, added: bool) -> str:
    """The preview's verdict for the service. Compose recreates a service whose
    definition changed; one whose only change is a mounted config's content keeps its
    config hash and shows unchanged (the down and up after it recreate it)."""
    if added:
        return "create"
    return "recreate" if item.changes else "unchanged"


def _preview_expect(item: Item, *, added: bool) -> str:
    return f"`plan` event: {_verdict(item, added=added)} [{item.name}]; nothing else created, recreated or removed"


def _canary(engines: Sequence[Item]) -> str | None:
    """The engine that tries a change first: the first changed engine whose argv, env or
    image change the engines after it share. Nothing else is called a canary: a removed
    engine was once labelled "the treatment/canary replica"."""
    changed = [item for item in engines if item.status is Status.CHANGED]
    if len(changed) < 2:
        return None
    interesting = (Aspect.ARGV, Aspect.ENVIRONMENT, Aspect.IMAGE, Aspect.ENTRYPOINT)

    def what(item: Item) -> set[tuple[str, str, str, str]]:
        return {
            (change.aspect.value, change.op.value, change.subject, repr(change.new))
            for change in item.changes
            if change.aspect in interesting
        }

    first = what(changed[0])
    if first and any(first & what(other) for other in changed[1:]):
        return changed[0].name
    return None


def _engine_note(
    item: Item, engines: Sequence[Item], canary: str | None, serving: int, model: str = ""
) -> str:
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
        of = f" of {model}" if model else ""
        parts.append(
            f"{serving} engine(s){of} serve meanwhile" if serving else f"NO engine{of} serves meanwhile"
        )
    return "; ".join(parts)


def _reverse(change: Change) -> Change:
    """The change that undoes `change` (for the rollback's flag checks)."""
    op = {Op.ADDED: Op.REMOVED, Op.REMOVED: Op.ADDED}.get(change.op, change.op)
    return replace(change, op=op, old=change.new, new=change.old)


def capacity_warning(what: str, stages: Sequence[Stage], start: int, final: int, orphans: str) -> str:
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
