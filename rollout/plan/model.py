"""What a plan is: its steps, stages, per-file plans and capacity, as the reports and
`rollout apply` read them (rollout/plan/planner.py builds them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rollout.diff.changes import Side, file_identity, file_label
from rollout.plan.checks import Check
from rollout.plan.fleet import Placement
from rollout.plan.steps import ComposeCall
from rollout.plan.variables import Variable

NEW_TAG = "<NEW_TAG>"
OLD_TAG = "<OLD_TAG>"


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
