"""What the loader yields: positioned mappings and sequences, the file as read, its errors."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple


class Pos(NamedTuple):
    """A 1-based line and column inside one file."""

    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


START = Pos(1, 1)
# Pos((line, col)) without the Python-level __new__ of a NamedTuple: the loader makes
# one for every key and value.
new_pos: Any = functools.partial(tuple.__new__, Pos)
Span = tuple[int, int]  # character offsets [start, end) of a scalar in the file's text


class YMap(dict[str, Any]):
    """A mapping with the position of itself, of each key and of each value."""

    __slots__ = ("key_pos", "merge_tags", "pos", "value_pos", "value_span")

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.key_pos: dict[str, Pos] = {}
        self.value_pos: dict[str, Pos] = {}
        self.value_span: dict[str, Span] = {}
        # Keys whose value carried Compose's merge tag: "!override" (the value replaces
        # the earlier document's instead of merging), or "!reset" (the key is removed,
        # and its value is not in the mapping at all). None when no key has one.
        self.merge_tags: dict[str, str] | None = None

    def at(self, key: str) -> Pos:
        """Where `key` is written (the mapping itself when the key is absent)."""
        return self.key_pos.get(key, self.pos)

    def value_at(self, key: str) -> Pos:
        return self.value_pos.get(key, self.at(key))


class YList(list[Any]):
    """A sequence with the position of itself and of each item."""

    __slots__ = ("item_pos", "item_span", "pos")

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.item_pos: list[Pos] = []
        self.item_span: list[Span | None] = []

    def at(self, index: int) -> Pos:
        if 0 <= index < len(self.item_pos):
            return self.item_pos[index]
        return self.pos


class LoadError(ValueError):
    """Why bytes are not a compose file: a position and one line (the `yaml` finding)."""

    def __init__(self, pos: Pos, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


@dataclass(frozen=True)
class Loaded:
    """One file as read: its text, its documents, and the YAML features it used."""

    path: str  # as displayed (the path the user gave, or `file at <commit>`)
    text: str
    size: int
    documents: tuple[YMap, ...]
    anchors: tuple[Pos, ...] = ()
    aliases: tuple[Pos, ...] = ()
    merges: tuple[Pos, ...] = ()
    parser: str = "libyaml"  # or "pure" when libyaml refused the file
    lines: tuple[str, ...] = field(default=(), compare=False, repr=False)

    @property
    def stem(self) -> str:
        return Path(self.path).stem

    def quote(self, span: Span | None) -> str | None:
        """The text of a scalar exactly as written (quotes included)."""
        if span is None:
            return None
        return self.text[span[0] : span[1]]
