"""One compose-manager call, printable as its API payload and as a plain command.

The rollout plan and the release rollback both print ordered steps; both build them
from `ComposeCall`, so an operator sees the same payload shape and the same command
spelling whichever tool printed it.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Action(Enum):
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class ComposeCall:
    """`POST /compose/<action>` for exactly `services` of `file` at git tag `tag`."""

    action: Action
    tag: str
    file: str  # repository-relative, e.g. prod/GLM-5.3-Flash-SGL-TP4-W4AFP8.yaml
    services: tuple[str, ...]
    dry_run: bool
    # The compose profiles the services sit behind (the canary file's `w4afp8-canary`).
    # compose-manager's API has no field for them: naming a service activates its
    # profiles in Compose; the plain command passes them explicitly (see `note`).
    profiles: tuple[str, ...] = ()

    @property
    def endpoint(self) -> str:
        return f"POST /compose/{self.action.value}"

    def payload(self) -> dict[str, Any]:
        """The compose-manager request body. `force_recreate` is always false: only a
        changed definition recreates a container. The host's environment map is added
        by compose-manager itself and is never printed."""
        return {
            "tag": self.tag,
            "file": self.file,
            "services": list(self.services),
            "force_recreate": False,
            "dry_run": self.dry_run,
        }

    def note(self) -> str:
        """What the payload cannot say: the profile its services sit behind."""
        if not self.profiles:
            return ""
        names = ", ".join(self.profiles)
        which = "profile" if len(self.profiles) == 1 else "profiles"
        flags = " ".join(f"--profile {profile}" for profile in self.profiles)
        return (
            f"{', '.join(self.services)} sit(s) behind the compose {which} {names}: the payload has no "
            f"profile field, Compose activates it for a service named in `services`; the command passes {flags}"
        )

    def to_json(self) -> dict[str, Any]:
        """The call as the plan and the release rollback print it in JSON."""
        out: dict[str, Any] = {
            "endpoint": self.endpoint,
            "payload": self.payload(),
            "command": self.command(),
        }
        if self.profiles:
            out["profiles"] = list(self.profiles)
            out["note"] = self.note()
        return out

    def command(self) -> str:
        """The equivalent plain command, run from a checkout of `tag` on the host."""
        base = ["docker", "compose"]
        if self.dry_run:
            base.append("--dry-run")
        for profile in self.profiles:
            base += ["--profile", profile]
        base += ["-f", self.file]
        if self.action is Action.UP:
            # `up` removes orphans like compose-manager does (the orphan rule).
            args = [*base, "up", "-d", "--no-deps", "--remove-orphans", *self.services]
        else:
            args = [*base, "down", *self.services]
        checkout = f"git checkout --quiet {shlex.quote(self.tag)}"
        return f"{checkout} && {shlex.join(args)}"
