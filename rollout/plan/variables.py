"""The host variables a change starts to read: what every host must set before the `up`.

compose-manager renders a file with the variables of its own env files (the calls send
no `env`), so a `${VAR}` the new definition reads and the old did not is a step of the
rollout: every host needs it first. How the file reads it decides what happens on a
host without it: `${VAR:-x}` takes the default, `${VAR:?msg}` fails the `up` before
anything is stopped, and a bare `${VAR}` (or `$VAR`) renders empty with only a warning,
so the service starts with an empty value. The plan lists every new variable and
refuses a new bare one unless the fleet's data says every host of the file sets it
(`host_variables` of its target).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tierops.interp import scan

DEFAULT = "default"
REQUIRED = "required"
SWITCH = "switch"
BARE = "bare"
_KINDS = {":-": DEFAULT, "-": DEFAULT, ":?": REQUIRED, "?": REQUIRED, ":+": SWITCH, "+": SWITCH, "": BARE}


@dataclass(frozen=True)
class Variable:
    name: str
    kinds: tuple[str, ...]  # how the head reads it, in the order above
    default: str | None  # the first default written, when there is one
    services: tuple[str, ...]  # the services that read it ("" for top-level sections)
    declared: bool  # the fleet's data says every host of the file sets it

    @property
    def unguarded(self) -> bool:
        return BARE in self.kinds and not self.declared

    def describe(self) -> str:
        if BARE in self.kinds:
            what = (
                "set on every host (fleet data)"
                if self.declared
                else "NO default: empty on a host without it"
            )
        elif REQUIRED in self.kinds:
            what = "required: the up fails on a host without it"
        elif DEFAULT in self.kinds:
            what = f"default {self.default!r}"
        else:
            what = "a switch: off on a host without it"
        return f"{self.name} ({what})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kinds": list(self.kinds),
            "default": self.default,
            "services": list(self.services),
            "declared": self.declared,
        }


def _strings(value: Any, service: str = "") -> Iterator[tuple[str, str]]:
    """(service, text) for every string of a compared form, keys included."""
    if isinstance(value, str):
        yield service, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(str(key), service)
            yield from _strings(item, service)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item, service)


def references(document: Mapping[str, Any]) -> dict[str, list[tuple[str, str, str | None]]]:
    """Name -> (service, kind, default) for every interpolation of a compared form."""
    found: dict[str, list[tuple[str, str, str | None]]] = {}
    services = document.get("services")
    parts: list[tuple[str, Any]] = [("", value) for key, value in document.items() if key != "services"]
    if isinstance(services, Mapping):
        parts += [(str(name), service) for name, service in services.items()]
    for service, value in parts:
        for _, text in _strings(value, service):
            for ref in scan(text)[0]:
                kind = _KINDS.get(ref.operator, BARE)
                default = None
                if kind == DEFAULT:
                    written = text[ref.start : ref.end]
                    head = f"${{{ref.name}{ref.operator}"
                    if written.startswith(head) and written.endswith("}"):
                        default = written[len(head) : -1]
                found.setdefault(ref.name, []).append((service, kind, default))
    return found


def new_variables(
    base: Mapping[str, Any], head: Mapping[str, Any], declared: frozenset[str] = frozenset()
) -> tuple[Variable, ...]:
    """The variables `head` reads and `base` does not, in name order."""
    before = references(base)
    after = references(head)
    result = []
    for name in sorted(set(after) - set(before)):
        uses = after[name]
        kinds = tuple(
            kind for kind in (BARE, REQUIRED, DEFAULT, SWITCH) if any(use[1] == kind for use in uses)
        )
        default = next((use[2] for use in uses if use[2] is not None), None)
        services = tuple(dict.fromkeys(use[0] for use in uses))
        result.append(Variable(name, kinds, default, services, name in declared))
    return tuple(result)
