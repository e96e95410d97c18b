"""The canonical model's types: a project, its services, where each value was written.

Also how a raw value is named and quoted in a message (`type_name`, `dotted`, `flow`),
which every field family uses.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tierops import units
from tierops.yamlload import Loaded, Pos, Span, YList, YMap

Key = str | int
PathT = tuple[Key, ...]


class Origin(NamedTuple):
    """Where a canonical value was written: its position, the raw node, a scalar's span."""

    pos: Pos
    raw: Any
    span: Span | None = None


# Origin((pos, raw, span)) without a NamedTuple's Python-level __new__ (one per value).
new_origin: Any = functools.partial(tuple.__new__, Origin)


class Problem(NamedTuple):
    """A value compose would refuse (or that cannot be read in any compose spelling)."""

    pos: Pos
    message: str


@dataclass
class Service:
    name: str
    pos: Pos  # the service's key under `services:`
    raw: YMap  # the definition as written (documents merged, merge keys applied)
    fields: dict[str, Any]  # the canonical values, as compose renders them
    origins: dict[PathT, Origin] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    text: str = field(default="", repr=False)  # the file's text, for quoting

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)

    def value(self, *path: Key) -> Any:
        """The canonical value at `path` (None when absent)."""
        node: Any = self.fields
        for key in path:
            if isinstance(node, dict):
                if key not in node:
                    return None
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and 0 <= key < len(node):
                node = node[key]
            else:
                return None
        return node

    def written(self, *path: Key) -> bool:
        """Whether the author wrote `path` (not a default compose fills in)."""
        return tuple(path) in self.origins

    def origin(self, *path: Key) -> Origin:
        """Where the value at `path` was written: the deepest written prefix."""
        probe: PathT = tuple(path)
        while probe:
            found = self.origins.get(probe)
            if found is not None:
                return found
            probe = probe[:-1]
        return Origin(self.pos, self.raw)

    def at(self, *path: Key) -> Pos:
        return self.origin(*path).pos

    def quote(self, *path: Key) -> str:
        """The author's text of the value at `path`: a scalar exactly, a collection compactly."""
        found = self.origin(*path)
        if found.span is not None and self.text:
            return self.text[found.span[0] : found.span[1]]
        return flow(found.raw)


@dataclass
class Project:
    path: str
    loaded: Loaded | None
    name: str | None  # the `name:` key, canonical (None when absent)
    services: dict[str, Service]
    sections: dict[str, Any]  # canonical top-level keys other than services (networks, configs, x-*, ...)
    raw: YMap  # the merged document as written
    problems: list[Problem] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    def __iter__(self) -> Iterator[Service]:
        return iter(self.services.values())


def type_name(value: Any) -> str:  # noqa: PLR0911 (one return per YAML type)
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "a number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, (YMap, dict)):
        return "a mapping"
    if isinstance(value, (YList, list)):
        return "a list"
    if value is None:
        return "empty"
    return "a string"


def dotted(path: PathT) -> str:
    text = ""
    for key in path:
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else str(key))
    return text


def flow(value: Any) -> str:  # noqa: PLR0911 (one return per YAML type)
    """A compact one-line rendering of raw YAML data, for quoting collections."""
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return units.go_float(value)
    if isinstance(value, str):
        if value == "" or any(char in value for char in ":#{}[],&*!|>'\"%@`\n") or value != value.strip():
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
        return value
    return str(value)
