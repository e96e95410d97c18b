"""Rule `yaml`: every file is read once, into plain data that remembers where it came from.

The loader is shared by every rule family. It turns bytes into nested `YMap`/`YList`
(dict/list subclasses carrying 1-based positions of every key and item), resolves
merge keys, and records anchors, aliases and merge keys so compose-hygiene can refuse
them in generated files. Whatever stops a file from being read as one compose mapping
becomes exactly one finding with this rule id, and the run goes on with the next file:
invalid UTF-8, a file over MAX_BYTES, malformed YAML, more than one document, a
document that is not a mapping, a duplicate key, a complex key, an undefined or
recursive alias, and an alias-expansion bomb.

Why not ruamel.yaml's round-trip loader: it parses at about 0.35 MB/s here. The
libyaml event stream (PyYAML's C `CParser`) plus this small composer runs at tens of
MB/s and keeps a line and column on every event (see docs/validators.md and
benchmarks/bench_validators.py for the numbers).

Passing example::

    services:
      nginx:
        image: nginx@sha256:...

Failing example (a duplicate key; compose would silently keep the last one)::

    services:
      nginx:
        image: nginx@sha256:...
        image: nginx:latest        # -> 4:5: duplicate key 'image' (first at line 3) (yaml)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tierops.errors import InputError
from validators.findings import START, Finding, Pos, error

ID = "yaml"
SUMMARY = "the file reads as exactly one YAML mapping: UTF-8, size limit, no duplicate keys, no alias bombs"

# A compose file of this tier is about 20 KB; 4 MiB leaves room for hand-written
# files elsewhere while refusing to spend the CI run on something that is not config.
MAX_BYTES = 4 * 1024 * 1024
# Nodes after alias expansion. A prod file has about 2,000; "billion laughs" style
# inputs reach millions from a few hundred bytes.
MAX_NODES = 200_000

# libyaml (C) when PyYAML was built with it, as the pinned manylinux wheels are; the
# pure-Python parser yields the same events with the same marks, only slower.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_MERGE = "<<"
_NO_KEY = object()


class YMap(dict[str, Any]):
    """A mapping with the 1-based position of itself, of each key and of each value."""

    __slots__ = ("key_pos", "pos", "value_pos")

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.key_pos: dict[str, Pos] = {}
        self.value_pos: dict[str, Pos] = {}

    def at(self, key: str) -> Pos:
        """Where `key` is written (the mapping itself when the key is absent)."""
        return self.key_pos.get(key, self.pos)

    def value_at(self, key: str) -> Pos:
        return self.value_pos.get(key, self.at(key))


class YList(list[Any]):
    """A sequence with the 1-based position of itself and of each item."""

    __slots__ = ("item_pos", "pos")

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.item_pos: list[Pos] = []

    def at(self, index: int) -> Pos:
        if 0 <= index < len(self.item_pos):
            return self.item_pos[index]
        return self.pos


@dataclass(frozen=True)
class Document:
    """One parsed file: the data, its text, and the YAML features it used."""

    path: str  # as displayed in findings (the path the user gave)
    text: str
    size: int
    data: YMap
    anchors: tuple[Pos, ...] = ()
    aliases: tuple[Pos, ...] = ()
    merges: tuple[Pos, ...] = ()
    lines: tuple[str, ...] = field(default=(), compare=False)

    @property
    def stem(self) -> str:
        return Path(self.path).stem


class _Problem(Exception):
    def __init__(self, pos: Pos, message: str) -> None:
        super().__init__(message)
        self.pos = pos
        self.message = message


def read_file(path: Path, display: str) -> bytes:
    """The file's bytes, or InputError when it cannot be read at all (exit 2)."""
    try:
        with path.open("rb") as handle:
            # Read one byte past the limit: enough to know it is too big, never more.
            return handle.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise InputError("file not found", where=display, hint="check the path") from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", where=display) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", where=display) from None


def load_file(path: Path, display: str | None = None) -> Document | Finding:
    shown = display if display is not None else str(path)
    return parse(read_file(path, shown), shown)


def parse(raw: bytes, path: str) -> Document | Finding:
    """Bytes to a Document, or the one `yaml` finding that explains why not."""
    if len(raw) > MAX_BYTES:
        return error(
            path,
            START,
            ID,
            f"file is larger than {MAX_BYTES // (1024 * 1024)} MiB; not checked (is it really a compose file?)",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return error(
            path,
            _byte_pos(raw, exc.start),
            ID,
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
        )
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        composer = _Composer()
        data = composer.run(text)
    except _Problem as problem:
        return error(path, problem.pos, ID, problem.message)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Pos(mark.line + 1, mark.column + 1) if mark is not None else START
        what = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        return error(path, pos, ID, f"invalid YAML: {what}")
    except yaml.YAMLError as exc:  # libyaml reader errors (e.g. control characters) carry no mark
        return error(path, START, ID, f"invalid YAML: {' '.join(str(exc).split())}")
    return Document(
        path=path,
        text=text,
        size=len(raw),
        data=data,
        anchors=tuple(composer.anchor_pos),
        aliases=tuple(composer.alias_pos),
        merges=tuple(composer.merge_pos),
        lines=tuple(text.split("\n")),
    )


def _byte_pos(raw: bytes, offset: int) -> Pos:
    before = raw[:offset]
    line = before.count(b"\n") + 1
    col = offset - (before.rfind(b"\n") + 1) + 1
    return Pos(line, col)


def _pos(event: Any) -> Pos:
    mark = event.start_mark
    return Pos(mark.line + 1, mark.column + 1)


class _Frame:
    __slots__ = ("anchor", "is_map", "key", "key_pos", "merge_sources", "merging", "value", "weight")

    def __init__(self, value: YMap | YList, anchor: str | None) -> None:
        self.value = value
        self.is_map = isinstance(value, YMap)
        self.anchor = anchor
        self.key: Any = _NO_KEY
        self.key_pos = START
        self.merging = False
        self.merge_sources: list[YMap] = []
        self.weight = 1


class _Composer:
    """libyaml events to YMap/YList, without recursion (deep nesting cannot crash it)."""

    def __init__(self) -> None:
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.anchor_pos: list[Pos] = []
        self.alias_pos: list[Pos] = []
        self.merge_pos: list[Pos] = []
        self.open_anchors: set[str] = set()
        self.nodes = 0

    def run(self, text: str) -> YMap:  # noqa: PLR0912 (one branch per event kind)
        stack: list[_Frame] = []
        root: list[Any] = []
        documents = 0
        event: Any  # libyaml's event classes: the stubs only know the base class
        for event in yaml.parse(text, Loader=_LOADER):
            kind = type(event)
            if kind is yaml.ScalarEvent:
                value = _resolve_scalar(event)
                if event.anchor:
                    self._anchor(event, value, 1)
                self._attach(stack, root, value, _pos(event), 1, plain=not event.style, fresh=True)
            elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
                container: YMap | YList = (
                    YMap(_pos(event)) if kind is yaml.MappingStartEvent else YList(_pos(event))
                )
                if event.anchor:
                    self.anchor_pos.append(_pos(event))
                    self.open_anchors.add(event.anchor)
                stack.append(_Frame(container, event.anchor))
            elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
                frame = stack.pop()
                if frame.is_map:
                    _apply_merges(frame)
                if frame.anchor:
                    self.open_anchors.discard(frame.anchor)
                    self.anchors[frame.anchor] = (frame.value, frame.weight)
                self._attach(stack, root, frame.value, frame.value.pos, frame.weight, plain=False, fresh=True)
            elif kind is yaml.AliasEvent:
                pos = _pos(event)
                if event.anchor in self.open_anchors:
                    raise _Problem(pos, f"recursive alias *{event.anchor} (it refers to its own anchor)")
                if event.anchor not in self.anchors:
                    raise _Problem(pos, f"undefined alias *{event.anchor}")
                self.alias_pos.append(pos)
                value, weight = self.anchors[event.anchor]
                self._attach(stack, root, value, pos, weight, plain=False, fresh=False)
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    raise _Problem(_pos(event), "more than one YAML document; a compose file is one mapping")
        if not root or root[0] is None:
            raise _Problem(START, "empty document; expected a compose mapping (services: ...)")
        data = root[0]
        if not isinstance(data, YMap):
            what = "a sequence" if isinstance(data, YList) else f"a scalar ({type(data).__name__})"
            raise _Problem(
                START, f"the document is {what}, not a mapping; expected a compose mapping (services: ...)"
            )
        return data

    def _anchor(self, event: Any, value: Any, weight: int) -> None:
        self.anchor_pos.append(_pos(event))
        self.anchors[event.anchor] = (value, weight)

    def _attach(
        self,
        stack: list[_Frame],
        root: list[Any],
        value: Any,
        pos: Pos,
        weight: int,
        *,
        plain: bool,
        fresh: bool,
    ) -> None:
        # Aliases share one Python object; counting what they expand to is what stops
        # a few hundred bytes from making every rule walk millions of nodes. A node
        # written out counts once; an alias counts its whole expanded subtree.
        self.nodes += 1 if fresh else weight
        if self.nodes > MAX_NODES:
            raise _Problem(
                pos, f"alias expansion exceeds {MAX_NODES} nodes (an alias bomb?); refusing to expand it"
            )
        if not stack:
            root.append(value)
            return
        frame = stack[-1]
        frame.weight += weight
        if not frame.is_map:
            items: YList = frame.value  # type: ignore[assignment]
            items.append(value)
            items.item_pos.append(pos)
            return
        mapping: YMap = frame.value  # type: ignore[assignment]
        if frame.key is _NO_KEY:
            if isinstance(value, (YMap, YList)):
                raise _Problem(
                    pos, "complex mapping key (a mapping or sequence used as a key) is not supported"
                )
            key = _key_text(value)
            frame.merging = plain and key == _MERGE
            if frame.merging:
                self.merge_pos.append(pos)
            elif key in mapping:
                first = mapping.key_pos[key]
                raise _Problem(
                    pos, f"duplicate key '{key}' (first at line {first.line}); compose would keep only one"
                )
            frame.key, frame.key_pos = key, pos
            return
        if frame.merging:
            sources = value if isinstance(value, YList) else [value]
            for source in sources:
                if not isinstance(source, YMap):
                    raise _Problem(
                        frame.key_pos, "merge key '<<' must refer to a mapping or a list of mappings"
                    )
                frame.merge_sources.append(source)
        else:
            mapping[frame.key] = value
            mapping.key_pos[frame.key] = frame.key_pos
            mapping.value_pos[frame.key] = pos
        frame.key = _NO_KEY
        frame.merging = False


def _apply_merges(frame: _Frame) -> None:
    """YAML merge keys: explicit keys win, then earlier sources over later ones."""
    mapping: YMap = frame.value  # type: ignore[assignment]
    for source in frame.merge_sources:
        for key, value in source.items():
            if key not in mapping:
                mapping[key] = value
                mapping.key_pos[key] = source.key_pos.get(key, source.pos)
                mapping.value_pos[key] = source.value_pos.get(key, source.pos)


def _key_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


# Plain scalars resolve like compose's YAML library (yaml.v3): the YAML 1.2 core
# schema, plus a leading-zero integer read as octal (so `mode: 0444` is 0o444).
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_INT = re.compile(r"[-+]?[0-9]+")
_OCTAL_OLD = re.compile(r"[-+]?0[0-7]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL_FLOAT = {".inf": float("inf"), "+.inf": float("inf"), "-.inf": float("-inf"), ".nan": float("nan")}


def _resolve_scalar(event: Any) -> Any:
    value: str = event.value
    tag = event.tag
    if tag == "tag:yaml.org,2002:str" or event.style or not event.implicit[0]:
        return value
    return resolve_plain(value)


def resolve_plain(value: str) -> Any:  # noqa: PLR0911 (one return per YAML type)
    if value in _NULL:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if _INT.fullmatch(value):
        return int(value, 8) if _OCTAL_OLD.fullmatch(value) else int(value)
    lowered = value.lower()
    if lowered.startswith(("0o", "0x")):
        try:
            return int(value, 0)
        except ValueError:
            return value
    if _FLOAT.fullmatch(value):
        return float(value)
    if lowered in _SPECIAL_FLOAT:
        return _SPECIAL_FLOAT[lowered]
    return value
