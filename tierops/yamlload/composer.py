"""YAML events to positioned data: the composer both parsers feed.

It keeps a position for every key, value and item, the span of every scalar, applies
merge keys, refuses duplicate keys, and enforces the depth and node budgets it is given
(alias expansion counted, so an alias bomb stops early).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tierops.yamlload.nodes import START, LoadError, Pos, Span, YList, YMap, new_pos
from tierops.yamlload.scalars import key_text, resolve_scalar


def _pos(event: Any) -> Pos:
    mark = event.start_mark
    pos: Pos = new_pos((mark.line + 1, mark.column + 1))
    return pos


_NO_KEY = object()
_MERGE = "<<"
# Compose's merge tags. `!reset` removes the value it tags (a key, or a sequence item),
# in a single document too; `!override` makes a later document's value replace an
# earlier one's instead of merging with it. Any other tag is ignored, as Compose does.
_RESET = "!reset"
_MERGE_TAGS = frozenset({_RESET, "!override"})


class _Frame:
    __slots__ = ("anchor", "is_map", "key", "key_pos", "merge_sources", "merging", "start", "tag", "value")

    def __init__(self, value: YMap | YList, anchor: str | None, start: int, tag: str | None) -> None:
        self.value = value
        self.is_map = isinstance(value, YMap)
        self.anchor = anchor
        self.tag = tag
        self.key: Any = _NO_KEY
        self.key_pos = START
        self.merging = False
        self.merge_sources: list[YMap] = []
        # The node count when the collection opened: its weight (what an alias of it
        # expands to) is itself plus every node counted since.
        self.start = start


class Composer:
    """Events to YMap/YList without recursion; anchors live across documents, as in Compose."""

    def __init__(self, text: str, *, max_depth: int, max_nodes: int) -> None:
        self.text = text
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.anchor_pos: list[Pos] = []
        self.alias_pos: list[Pos] = []
        self.merge_pos: list[Pos] = []
        self.open_anchors: set[str] = set()
        self.nodes = 0
        self.documents: list[YMap] = []
        self.stack: list[_Frame] = []
        self.root: list[tuple[Any, Pos]] = []

    def feed(self, next_event: Callable[[], Any]) -> None:
        """Compose the events `next_event` returns, until it returns None.

        The events are PyYAML's or ruamel.yaml's: the same class names and fields.
        """
        while (event := next_event()) is not None:
            kind = type(event).__name__
            if kind == "ScalarEvent":
                style = event.style
                self._scalar(event, event.value if style else resolve_scalar(event), style)
            else:
                self._other(event, kind)

    def _scalar(self, event: Any, value: Any, style: str | None) -> None:
        if event.anchor:
            self.anchor_pos.append(_pos(event))
            self.anchors[event.anchor] = (value, 1)
        start = event.start_mark
        if value is None and not style and not event.value:
            # An empty value (`key:`): the two parsers place it differently (after the
            # colon, or at the next token); it is pointed at by its key.
            self._attach(value, self._empty_pos(start.index), 1, True, True, None, _merge_tag(event))
            return
        span = (start.index, event.end_mark.index)
        self._attach(value, _pos(event), 1, not style, True, span, _merge_tag(event))

    def _other(self, event: Any, kind: str) -> None:
        """Every event but a scalar, by its class's name (PyYAML's and ruamel.yaml's agree)."""
        stack = self.stack
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            if len(stack) >= self.max_depth:
                # Checked before the deeper node is parsed: the rest of the file is
                # never read, so a megabyte of `[` costs as much as 64 of them.
                raise LoadError(
                    _pos(event), f"nesting deeper than {self.max_depth} levels; not a compose file"
                )
            pos = _pos(event)
            container: YMap | YList = YMap(pos) if kind == "MappingStartEvent" else YList(pos)
            if event.anchor:
                self.anchor_pos.append(pos)
                self.open_anchors.add(event.anchor)
            stack.append(_Frame(container, event.anchor, self.nodes, _merge_tag(event)))
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            frame = stack.pop()
            if frame.merge_sources:
                _apply_merges(frame)
            weight = self.nodes - frame.start + 1
            if frame.anchor:
                self.open_anchors.discard(frame.anchor)
                self.anchors[frame.anchor] = (frame.value, weight)
            self._attach(frame.value, frame.value.pos, weight, False, True, None, frame.tag)
        elif kind == "AliasEvent":
            pos = _pos(event)
            if event.anchor in self.open_anchors:
                raise LoadError(pos, f"recursive alias *{event.anchor} (it refers to its own anchor)")
            if event.anchor not in self.anchors:
                raise LoadError(pos, f"undefined alias *{event.anchor}")
            self.alias_pos.append(pos)
            value, weight = self.anchors[event.anchor]
            self._attach(value, pos, weight, False, False, None, None)
        elif kind == "DocumentStartEvent":
            self.root = []
        elif kind == "DocumentEndEvent":
            self._end_document(_pos(event))

    def _empty_pos(self, index: int) -> Pos:
        frame = self.stack[-1] if self.stack else None
        if frame is not None and frame.is_map and frame.key is not _NO_KEY:
            return frame.key_pos
        text = self.text
        while index > 0 and text[index - 1] in " \t\r\n":
            index -= 1
        line_start = text.rfind("\n", 0, index) + 1
        return Pos(text.count("\n", 0, index) + 1, index - line_start + 1)

    def _end_document(self, pos: Pos) -> None:
        value, where = self.root[0] if self.root else (None, pos)
        if not isinstance(value, YMap):
            what = (
                "empty"
                if value is None
                else "a sequence"
                if isinstance(value, YList)
                else f"a scalar ({type(value).__name__})"
            )
            number = len(self.documents) + 1
            raise LoadError(
                where,
                f"document {number} is {what}; every document of a compose file must be a mapping "
                "(Compose: top-level object must be a mapping)",
            )
        self.documents.append(value)

    def _attach(
        self, value: Any, pos: Pos, weight: int, plain: bool, fresh: bool, span: Span | None, tag: str | None
    ) -> None:
        # Aliases share one Python object; counting what they expand to is what stops a
        # few hundred bytes from making every rule walk millions of nodes.
        self.nodes += 1 if fresh else weight
        if self.nodes > self.max_nodes:
            raise LoadError(
                pos, f"alias expansion exceeds {self.max_nodes} nodes (an alias bomb?); refusing to expand it"
            )
        stack = self.stack
        if not stack:
            self.root.append((value, pos))
            return
        frame = stack[-1]
        if not frame.is_map:
            if tag == _RESET:
                return
            items: YList = frame.value  # type: ignore[assignment]
            items.append(value)
            items.item_pos.append(pos)
            items.item_span.append(span)
        elif frame.key is _NO_KEY:
            self._key(frame, value, pos, plain)
        elif frame.merging:
            sources = value if isinstance(value, YList) else [value]
            for source in sources:
                if not isinstance(source, YMap):
                    raise LoadError(
                        frame.key_pos, "merge key '<<' must refer to a mapping or a list of mappings"
                    )
                frame.merge_sources.append(source)
            frame.key = _NO_KEY
            frame.merging = False
        else:
            _set_value(frame, value, pos, span, tag)

    def _key(self, frame: _Frame, value: Any, pos: Pos, plain: bool) -> None:
        mapping: YMap = frame.value  # type: ignore[assignment]
        if isinstance(value, (YMap, YList)):
            raise LoadError(pos, "a mapping or sequence used as a key; Compose keys are strings")
        key = key_text(value)
        frame.merging = plain and key == _MERGE and _MERGE not in mapping
        if frame.merging:
            self.merge_pos.append(pos)
        elif key in mapping.key_pos:
            first = mapping.key_pos[key]
            raise LoadError(
                pos,
                f"duplicate key '{key}' (first at line {first.line}); "
                f'Compose refuses it: mapping key "{key}" already defined at line {first.line}',
            )
        frame.key, frame.key_pos = key, pos


def _set_value(frame: _Frame, value: Any, pos: Pos, span: Span | None, tag: str | None) -> None:
    mapping: YMap = frame.value  # type: ignore[assignment]
    key = frame.key
    frame.key = _NO_KEY
    mapping.key_pos[key] = frame.key_pos  # a reset key too: written again, it is a duplicate
    if tag is not None:
        if mapping.merge_tags is None:
            mapping.merge_tags = {}
        mapping.merge_tags[key] = tag
        if tag == _RESET:
            return
    mapping[key] = value
    mapping.value_pos[key] = pos
    if span is not None:
        mapping.value_span[key] = span


def _apply_merges(frame: _Frame) -> None:
    """YAML merge keys: explicit keys win, then earlier sources over later ones."""
    mapping: YMap = frame.value  # type: ignore[assignment]
    for source in frame.merge_sources:
        for key, value in source.items():
            if key not in mapping:
                mapping[key] = value
                mapping.key_pos[key] = source.key_pos.get(key, source.pos)
                mapping.value_pos[key] = source.value_pos.get(key, source.pos)
                if key in source.value_span:
                    mapping.value_span[key] = source.value_span[key]


def _merge_tag(event: Any) -> str | None:
    tag: str | None = event.tag
    return tag if tag in _MERGE_TAGS else None
