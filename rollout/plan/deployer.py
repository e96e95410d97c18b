"""compose-manager's API as data (`rollout/compose-manager.yaml`), and the check of a call.

The plan, `release rollback` and the runbooks print calls an operator sends as they
are. compose-manager drops a body field it does not declare without a word, so a call
that looks right can do something else: a down "dry run" is a real down. `problems`
reads a call against the contract the way the server's deserializer would, and the
tests run it over everything the tools print.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from tierops.errors import InputError
from tierops.yamlload import LoadError, load_path

# The contract stays at the package top (rollout/compose-manager.yaml), where the docs name it.
CONTRACT = Path(__file__).parent.with_name("compose-manager.yaml")
UP = "POST /compose/up"
DOWN = "POST /compose/down"


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # string, list, map, bool, int
    required: bool


@dataclass(frozen=True)
class Contract:
    bodies: dict[str, dict[str, Field]]  # endpoint -> its body's fields
    runs: dict[str, dict[str, tuple[tuple[str, ...], ...]]]  # endpoint -> mode -> compose args
    default_project: str
    reserved_projects: frozenset[str]
    project_pattern: str
    env_name_pattern: str
    read_on: str


@functools.cache
def load(path: Path = CONTRACT) -> Contract:
    """The contract file; a malformed one is one InputError line."""
    try:
        loaded = load_path(path)
    except LoadError as exc:
        raise InputError(f"compose-manager contract: {exc.message}", where=f"{path}:{exc.pos}") from None
    try:
        raw: Mapping[str, Any] = loaded.documents[0]
        bodies: dict[str, dict[str, Field]] = {}
        runs: dict[str, dict[str, tuple[tuple[str, ...], ...]]] = {}
        for endpoint, spec in raw["endpoints"].items():
            body = spec.get("body")
            if body is not None:
                bodies[str(endpoint)] = {
                    str(name): Field(str(name), str(field["type"]), bool(field.get("required", False)))
                    for name, field in body.items()
                }
            if spec.get("runs"):
                runs[str(endpoint)] = {
                    str(mode): tuple(tuple(str(word) for word in phase) for phase in phases)
                    for mode, phases in spec["runs"].items()
                }
        return Contract(
            bodies=bodies,
            runs=runs,
            default_project=str(raw["default_project"]),
            reserved_projects=frozenset(str(name) for name in raw["reserved_projects"]),
            project_pattern=str(raw["project_pattern"]),
            env_name_pattern=str(raw["env_name_pattern"]),
            read_on=str(raw["upstream"]["read_on"]),
        )
    except (KeyError, TypeError, AttributeError, IndexError) as exc:
        raise InputError(f"compose-manager contract is malformed near {exc}", where=str(path)) from None


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "list": (list, tuple),
    "map": (dict,),
    "bool": (bool,),
    "int": (int,),
}


def problems(endpoint: str, body: Mapping[str, Any], contract: Contract | None = None) -> list[str]:
    """What compose-manager would drop, refuse or misread in `body`; [] for a sound call."""
    contract = contract or load()
    fields = contract.bodies.get(endpoint)
    if fields is None:
        return [f"{endpoint}: compose-manager has no such endpoint with a body"]
    found: list[str] = []
    for name in body:
        if name not in fields:
            what = "a down cannot be previewed" if (endpoint, name) == (DOWN, "dry_run") else "it is dropped"
            found.append(f"{endpoint}: unknown field {name!r} ({what})")
    found += type_problems(endpoint, body, contract)
    if body.get("dry_run") is True and body.get("materialize_only") is True:
        found.append(f"{endpoint}: dry_run and materialize_only together (a preview stages nothing)")
    found += _scoped(endpoint, body, contract)
    return found


def type_problems(endpoint: str, body: Mapping[str, Any], contract: Contract | None = None) -> list[str]:
    """What the server's deserializer refuses (HTTP 422): a required field missing, a
    field of the wrong type. Unknown fields are not among them: serde drops those."""
    fields = (contract or load()).bodies.get(endpoint, {})
    found: list[str] = []
    for field in fields.values():
        if field.required and field.name not in body:
            found.append(f"{endpoint}: required field {field.name!r} missing")
        value = body.get(field.name)
        if field.name in body and not _is_a(value, field.type):
            found.append(f"{endpoint}: {field.name!r} must be a {field.type}, not {type(value).__name__}")
    return found


def _scoped(endpoint: str, body: Mapping[str, Any], contract: Contract) -> list[str]:
    """The values compose-manager validates: the project name and the env map."""
    found: list[str] = []
    project = body.get("project")
    if isinstance(project, str):
        if not re.fullmatch(contract.project_pattern, project):
            found.append(f"{endpoint}: project {project!r} is not canonical ({contract.project_pattern})")
        elif project in contract.reserved_projects:
            found.append(f"{endpoint}: project {project!r} is reserved (omit it to use the default)")
    env = body.get("env")
    if isinstance(env, Mapping):
        for name, value in env.items():
            if not re.fullmatch(contract.env_name_pattern, str(name)):
                found.append(f"{endpoint}: env name {name!r} is refused")
            if "\n" in str(value) or "\r" in str(value):
                found.append(f"{endpoint}: env {name} holds a newline (refused)")
    return found


def _is_a(value: Any, kind: str) -> bool:
    types = _TYPES.get(kind, (object,))
    if kind == "int" and isinstance(value, bool):
        return False
    if kind in ("list", "map"):
        # serde reads a list of strings and a map of strings: anything else is a 422.
        return isinstance(value, types) and all(
            isinstance(item, str) for item in cast("Iterable[Any]", value)
        )
    return isinstance(value, types)
