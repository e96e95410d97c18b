"""Typed access to the stack data's YAML, naming file:line:col on every mistake."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from ruamel.yaml.comments import CommentedMap

from tierops import layout
from tierops.yamlio import Mark, mark


class Merged(CommentedMap):
    """A service built from a part and the stack's keys beside `part:`."""

    origin: dict[Any, tuple[str, Any]]


class Reader:
    """Typed access to a loaded YAML tree that names file:line:col on every mistake."""

    def __init__(self, display: str) -> None:
        self.display = display
        self.problems: list[str] = []

    def at(self, container: Any, key: Any = None) -> Mark:
        if isinstance(container, Merged):  # the file and mapping that wrote the key
            display, holder = container.origin.get(key) or container.origin[None]
            return mark(display, holder, key if key in holder else None)
        return mark(self.display, container, key)

    def fail(self, where: Mark, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    def known(self, container: Any, keys: Sequence[str], what: str) -> None:
        """Every key of `container` is one of `keys`: a misspelt key would be ignored, and
        the default it leaves is not what its author meant."""
        if not hasattr(container, "items"):
            return
        for key in container:
            if key in keys:
                continue
            near = difflib.get_close_matches(str(key), keys, n=1, cutoff=0.75)
            hint = f"did you mean '{near[0]}'?" if near else f"known: {', '.join(sorted(keys))}"
            self.fail(self.at(container, key), f"{what}: unknown key '{key}'; {hint}")

    def mapping(self, container: Any, key: str, *, required: bool = True) -> Any:
        value = container.get(key) if hasattr(container, "get") else None
        if value is None:
            if required:
                self.fail(self.at(container), f"missing key '{key}' (a mapping)")
            return None
        if not hasattr(value, "items"):
            self.fail(self.at(container, key), f"'{key}' must be a mapping")
            return None
        return value

    def scalar(self, container: Any, key: str, kind: type, *, required: bool = True) -> Any:
        value = container.get(key) if hasattr(container, "get") else None
        if value is None:
            if required:
                self.fail(self.at(container), f"missing key '{key}'")
            return None
        # bool is an int in Python; an int field given `true` is still a mistake.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            self.fail(self.at(container, key), f"'{key}' must be {kind.__name__}, not {value!r}")
            return None
        return value

    def strings(self, container: Any, key: str) -> tuple[str, ...] | None:
        value = container.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(self.at(container, key), f"'{key}' must be a list of strings")
            return None
        return tuple(value)


# A placeholder is `{name}`; other braces (a JSON value in an argv word) are text.
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(text: str) -> Iterator[str]:
    for match in PLACEHOLDER.finditer(text):
        yield match.group(1)


def fill(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `{name}` of `values` replaced; any other brace stays as written."""
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def fleet_relative(path: Path) -> str:
    """Paths relative to the fleet's root in messages, as a user would type them."""
    try:
        return str(path.resolve().relative_to(layout.fleet_root()))
    except ValueError:
        return str(path)
