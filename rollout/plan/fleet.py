"""Where each prod file runs: its hosts and compose-manager project, from the fleet's data.

The generators' targets and pack files (`generators/*.targets.yaml`, `*.pack.yaml`)
name, per prod file stem,
the hosts that run it (`hosts`, in rollout order: the first is the canary host), when
the hosts run it under a compose project of their own, that project (`project`;
absent: compose-manager's default project), and the variables compose-manager's env
files set on every one of those hosts (`host_variables`). The plan reads them from the same side
of the comparison as the files it plans, so a change that moves a file to other hosts
is planned on the hosts it will run on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tierops.errors import InputError
from tierops.yamlload import LoadError, load_bytes

TARGETS_SUFFIX = ".targets.yaml"
PACK_SUFFIX = ".pack.yaml"
DATA_DIRECTORY = "generators"
_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


@dataclass(frozen=True)
class Placement:
    hosts: tuple[str, ...] = ()  # in rollout order: the canary host first
    # What the data says instead of host names ("any base host"), shown as written.
    note: str = ""
    project: str | None = None
    source: str = ""  # the data file it came from
    # Variables compose-manager's env files set on every host of the file.
    host_variables: frozenset[str] = frozenset()

    def describe(self) -> str:
        if self.hosts:
            return ", ".join(self.hosts)
        return self.note or "no host in the fleet's data"


def placements(names: Iterable[str], read: Callable[[str], bytes | None]) -> dict[str, Placement]:
    """Stem -> placement, from the targets and pack files among `names` (repository paths)."""
    found: dict[str, Placement] = {}
    for name in sorted(names):
        if not (name.startswith(f"{DATA_DIRECTORY}/") and name.endswith((TARGETS_SUFFIX, PACK_SUFFIX))):
            continue
        data = read(name)
        if data is None:
            continue
        try:
            documents = load_bytes(data, name).documents
        except (LoadError, InputError):
            continue  # the generators report an unreadable targets file; the plan names no host
        for document in documents:
            for stem, target in document.items():
                if isinstance(target, Mapping):
                    found[str(stem)] = _placement(target, name)
    return found


def _placement(target: Mapping[str, Any], source: str) -> Placement:
    raw = target.get("hosts") or ()
    words = [str(item) for item in raw] if isinstance(raw, list) else [str(raw)]
    hosts = tuple(word for word in words if _HOST.fullmatch(word))
    others = [word for word in words if not _HOST.fullmatch(word)]
    project = target.get("project")
    declared = target.get("host_variables") or ()
    names = frozenset(str(name) for name in declared) if isinstance(declared, list) else frozenset()
    return Placement(hosts, "; ".join(others), str(project) if project else None, source, names)
