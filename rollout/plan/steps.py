"""One compose-manager call, printable as its API payload and as the plain command it runs.

The rollout plan and the release rollback both print ordered calls; both build them
from `ComposeCall`, so an operator sees the same payload shape and the same command
whichever tool printed it. The body holds only fields compose-manager declares
(`rollout/compose-manager.yaml`), and the command is the one compose-manager itself
runs for that body: the same project (`-p`), the same phases and flags, no `--profile`
and no `--no-deps`, so running it by hand is the same operation.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import Enum
from typing import Any

from rollout.plan import deployer


class Action(Enum):
    UP = "up"
    DOWN = "down"


class Mode(Enum):
    APPLY = "apply"
    DRY_RUN = "dry_run"  # `up` only: Compose's --dry-run, changes nothing
    STAGE = "materialize_only"  # `up` only: pull and build, start nothing


@dataclass(frozen=True)
class ComposeCall:
    """`POST /compose/<action>` for exactly `services` of `file` at git tag `tag`."""

    action: Action
    tag: str
    file: str  # repository-relative, e.g. prod/<stem>.yaml
    services: tuple[str, ...]
    mode: Mode = Mode.APPLY
    # compose-manager's `project`; None: its default (the work directory's name).
    project: str | None = None

    def __post_init__(self) -> None:
        if self.action is Action.DOWN and self.mode is not Mode.APPLY:
            # compose-manager's down has no dry run: a call built so would stop the service.
            raise ValueError("a compose/down is always real: it has no dry run and no staging")

    @property
    def endpoint(self) -> str:
        return f"POST /compose/{self.action.value}"

    @property
    def dry_run(self) -> bool:
        return self.mode is Mode.DRY_RUN

    def payload(self) -> dict[str, Any]:
        """The request body, with only the fields compose-manager reads for this call.
        `env` is left out: the host's variables come from compose-manager's own
        ENV_FILES (a plan never holds their values)."""
        body: dict[str, Any] = {"tag": self.tag, "file": self.file, "services": list(self.services)}
        if self.project is not None:
            body["project"] = self.project
        if self.mode is not Mode.APPLY:
            body[self.mode.value] = True
        return body

    def project_name(self) -> str:
        return self.project if self.project is not None else deployer.load().default_project

    def command(self) -> str:
        """What compose-manager runs for this body, as one shell line: for an up, from a
        checkout of the tag (it writes the file at the tag into its work directory
        first); for a down, on the file as last written (a down fetches nothing)."""
        endpoint = deployer.UP if self.action is Action.UP else deployer.DOWN
        phases = deployer.load().runs[endpoint][self.mode.value]
        base = ["docker", "compose"]
        if self.mode is Mode.DRY_RUN:
            base.append("--dry-run")
        base += ["-p", self.project_name(), "-f", self.file]
        line = " && ".join(shlex.join([*base, *phase, *self.services]) for phase in phases)
        if self.action is Action.UP:
            return f"git checkout --quiet {shlex.quote(self.tag)} && {line}"
        return line

    def to_json(self) -> dict[str, Any]:
        return {"endpoint": self.endpoint, "payload": self.payload(), "command": self.command()}

    def short(self) -> str:
        """One line for a summary: `up NEW [svc] (dry run)`."""
        mode = {Mode.APPLY: "", Mode.DRY_RUN: " dry_run", Mode.STAGE: " materialize_only"}[self.mode]
        return f"{self.action.value}{mode} {self.tag} {' '.join(self.services)}"
