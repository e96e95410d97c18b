"""The wiring contract, validators/contracts/wiring.yaml, read into typed values.

Listeners, edges, healthcheck exemptions and the downloader are keyed by role
(tierops/roles.py), never by service name; a key that names no role is refused at its line.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierops.errors import InputError
from tierops.roles import Role
from tierops.yamlload import LoadError, YList, YMap, load_path
from validators.contract import CONTRACTS

WIRING = CONTRACTS / "wiring.yaml"


@dataclass(frozen=True)
class Wiring:
    hosts: Mapping[str, tuple[str, ...]]
    host_vars: tuple[str, ...]
    # By role (tierops/roles.py), never by service name: a new stack needs no edit here.
    edges: Mapping[Role, tuple[Role, ...]]
    listeners: Mapping[Role, Mapping[str, Any]]
    storage: Mapping[str, Any]
    runtime: Mapping[str, Any]
    healthcheck_exempt: Mapping[Role, str]
    downloader: Role


@functools.cache
def load_wiring(path: Path = WIRING) -> Wiring:
    try:
        loaded = load_path(path)
    except LoadError as problem:
        raise InputError(f"{path}:{problem.pos.line}:{problem.pos.col}: {problem.message}") from None
    document = loaded.documents[0]
    raw = _plain(document)

    def role(key: Any, *where: str) -> Role:
        found = Role.from_key(str(key))
        if found is None:
            node: Any = document
            for part in where[:-1]:
                node = node[part]
            pos = node.at(where[-1]) if isinstance(node, YMap) and where[-1] in node else document.pos
            known = ", ".join(item.key for item in Role)
            raise InputError(
                f"'{key}' is no role", where=f"{path}:{pos.line}:{pos.col}", hint=f"name one of {known}"
            )
        return found

    runtime = raw["runtime"]
    return Wiring(
        hosts={stem: tuple(str(h) for h in hosts) for stem, hosts in raw["hosts"].items()},
        host_vars=tuple(raw["host_vars"]),
        edges={
            role(name, "edges", name): tuple(role(target, "edges", name) for target in targets)
            for name, targets in (raw.get("edges") or {}).items()
        },
        listeners={role(name, "listeners", name): spec for name, spec in raw["listeners"].items()},
        storage=raw["storage"],
        runtime=runtime,
        healthcheck_exempt={
            role(name, "runtime", "healthcheck_exempt", name): str(reason)
            for name, reason in (runtime.get("healthcheck_exempt") or {}).items()
        },
        downloader=role(raw["storage"]["downloader"], "storage", "downloader"),
    )


def _plain(node: Any) -> Any:
    if isinstance(node, YMap):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, YList):
        return [_plain(value) for value in node]
    return node
