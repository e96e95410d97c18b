"""The engine builds' CLI flags: committed manifests, read without importing the engines.

Each `<package>-<version>.json` here is written by the offline extractor
(`python -m tools.flag_manifest extract <wheel>`); engine-flags reads it through
`load_manifest`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tierops.errors import InputError

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class FlagSpec:
    flag: str
    aliases: tuple[str, ...]
    action: str
    nargs: int | str | None
    takes_value: bool
    type: str | None
    choices: tuple[Any, ...] | None
    deprecated: str | bool | None
    patch_reason: str | None = None  # set for the build's declared patch flags
    # Set when the extractor could not resolve the choices (their source expression):
    # the flag has choices, but which ones is unknown, so a value cannot be checked.
    choices_expr: str | None = None
    # Choices the build accepts only under a condition: (value, condition source).
    choices_conditional: tuple[tuple[str, str], ...] = ()

    def condition(self, value: str) -> str | None:
        return dict(self.choices_conditional).get(value)


@dataclass(frozen=True)
class Manifest:
    path: Path
    package: str
    version: str
    sha256: str
    flags: Mapping[str, FlagSpec]  # every spelling (flag and aliases) -> its spec

    def lookup(self, flag: str) -> FlagSpec | None:
        return self.flags.get(flag)

    @property
    def label(self) -> str:
        return f"{self.package} {self.version}"


@functools.lru_cache(maxsize=4)
def load_manifest(path: Path) -> Manifest:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        source = raw["source"]
        flags: dict[str, FlagSpec] = {}
        for entry in raw["flags"]:
            spec = _spec(entry)
            for spelling in (spec.flag, *spec.aliases):
                flags[spelling] = spec
        return Manifest(path, str(source["package"]), str(source["version"]), str(source["sha256"]), flags)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"cannot read the engine flag manifest: {exc}",
            where=str(path),
            hint="regenerate it with `python -m tools.flag_manifest extract <engine wheel>`",
        ) from None


def _spec(entry: Mapping[str, Any]) -> FlagSpec:
    choices = entry.get("choices")
    return FlagSpec(
        flag=str(entry["flag"]),
        aliases=tuple(str(alias) for alias in entry.get("aliases") or ()),
        action=str(entry["action"]),
        nargs=entry.get("nargs"),
        takes_value=bool(entry["takes_value"]),
        type=entry.get("type"),
        choices=None if choices is None else tuple(choices),
        deprecated=entry.get("deprecated"),
        choices_expr=entry.get("choices_expr"),
        choices_conditional=tuple(sorted((entry.get("choices_conditional") or {}).items())),
    )
