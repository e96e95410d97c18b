"""The one reader of compose files: bytes to positioned YAML data, with budgets.

Every compose file the validators and the rollout tools read comes through here (the
generators keep ruamel.yaml's round-trip mode for *writing*, `tierops/yamlio.py`).
What comes out is plain data that remembers where it was written: `YMap`/`YList`
(dict/list subclasses) carry the 1-based line:col of themselves, of every key and of
every value, and the character span of every scalar, so a finding or a diff line can
point at and quote exactly what the author wrote.

How Docker Compose v2.40.3 reads a file, and therefore how this reads it (each fact is
pinned by tests/tierops/test_yamlload.py against the real binary):

- plain scalars resolve with the YAML 1.2 core schema (yaml.v3), plus a leading-zero
  integer read as octal (`mode: 0444` is 0o444);
- a duplicate key is an error (`mapping key "image" already defined at line 3`);
- merge keys `<<: *a` / `<<: [*a, *b]` copy keys not written explicitly, earlier
  sources winning over later ones, without deep merging;
- several documents in one file are *override files*: each must be a mapping (an empty
  document is "top-level object must be a mapping"), and they are merged in order by
  `tierops.canonical` as Compose merges `-f a.yaml -f b.yaml`; anchors defined in one
  document stay usable in the next ones;
- a file without any document is "empty compose file".

Budgets, each a clear finding and never a hang: regular files only (a FIFO,
a device or a directory is refused before a byte is read), MAX_BYTES, a nesting depth
checked on every start event (before anything deeper is parsed: libyaml's cost grows
with the square of the depth), and MAX_NODES after alias expansion (alias bombs).

Two parsers, one result: libyaml (PyYAML's C parser, about 4 MB/s here) reads the file;
where libyaml refuses something yaml.v3 accepts (a plain scalar ending in `:` inside a
flow collection, `[echo, a:]`), the pure-Python ruamel.yaml parser (YAML 1.2) reads it
again. Both yield the same events with the same marks, so the result is identical
(tests/tierops/test_yamlload.py checks the two on every file both accept).
"""

from __future__ import annotations

import functools
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from tierops.errors import InputError

# A prod file is about 20 KB and a large hand-written stack a few hundred; 2 MiB keeps
# a 100x margin while bounding the time a file can cost (about 0.5 s per MB here).
MAX_BYTES = 2 * 1024 * 1024
# Compose files nest about 8 levels (services.x.deploy.resources.reservations.devices
# [0].capabilities[0]); 64 leaves room for any hand-written file.
MAX_DEPTH = 64
# Nodes after alias expansion. A prod file has about 2,000; a "billion laughs" reaches
# millions from a few hundred bytes.
MAX_NODES = 200_000

_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)


class Pos(NamedTuple):
    """A 1-based line and column inside one file."""

    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


START = Pos(1, 1)
# Pos((line, col)) without the Python-level __new__ of a NamedTuple: the loader makes
# one for every key and value.
_new_pos: Any = functools.partial(tuple.__new__, Pos)
Span = tuple[int, int]  # character offsets [start, end) of a scalar in the file's text


class YMap(dict[str, Any]):
    """A mapping with the position of itself, of each key and of each value."""

    __slots__ = ("key_pos", "pos", "value_pos", "value_span")

    def __init__(self, pos: Pos) -> None:
        super().__init__()
        self.pos = pos
        self.key_pos: dict[str, Pos] = {}
        self.value_pos: dict[str, Pos] = {}
        self.value_span: dict[str, Span] = {}

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


# --------------------------------------------------------------------------- reading


def read_regular(path: Path, display: str, *, limit: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file (at most `limit` + 1), or InputError (exit 2).

    Opened non-blocking and checked with fstat on the open descriptor, so a FIFO never
    blocks the run and nothing can swap the file between the check and the read.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file not found", where=display, hint="check the path") from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", where=display) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", where=display) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"is {_kind(mode)}, not a regular file; refusing to read it", where=display)
        chunks: list[bytes] = []
        remaining = limit + 1  # one byte past the limit tells "too big" without reading more
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", where=display) from None
    finally:
        os.close(fd)


# A top-level `services:` key, as a compose file has: what `--compose-only` looks for.
_SERVICES_KEY = re.compile(rb"""^(?:services|"services"|'services')[ \t]*:""", re.MULTILINE)
COMPOSE_ONLY_HELP = (
    "of the files named, skip those that are not compose files (no top-level `services:` "
    "key: a workflow, a config), for hooks that are handed every YAML file"
)


def looks_like_compose(data: bytes) -> bool:
    """The text has a top-level `services:` key, as a compose file has."""
    return _SERVICES_KEY.search(data) is not None


def compose_files(paths: Sequence[Path]) -> list[Path]:
    """The paths whose text has a top-level `services:` key; a path that cannot be read is
    kept, so that the command reading it says why."""
    kept: list[Path] = []
    for path in paths:
        try:
            data = read_regular(path, str(path))
        except InputError:
            kept.append(path)
            continue
        if _SERVICES_KEY.search(data):
            kept.append(path)
    return kept


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def load_path(path: Path, display: str | None = None) -> Loaded:
    """Read and parse a file: InputError (exit 2) if unreadable, LoadError if not compose YAML."""
    shown = display if display is not None else str(path)
    return load_bytes(read_regular(path, shown), shown)


# --------------------------------------------------------------------------- parsing


def load_bytes(raw: bytes, path: str) -> Loaded:
    """Bytes to a Loaded file, or LoadError naming the first reason it is not one."""
    return _load_bytes(raw, path)


def load_shared(raw: bytes, path: str) -> Loaded:
    """`load_bytes`, kept per process by the bytes (a refusal too): for readers that change nothing.

    The rollout tools read each file more than once (the diff's model, the masking
    boundary, the plan); they share one parse. The documents are shared too: nothing
    that reads through this may change them (`tierops.canonical.build` does not).
    """
    loaded = _shared(raw)
    if isinstance(loaded, LoadError):
        raise LoadError(loaded.pos, loaded.message)
    return replace(loaded, path=path)


@functools.lru_cache(maxsize=512)
def _shared(raw: bytes) -> Loaded | LoadError:
    # A refusal is kept too: the masking boundary meets the same inline script in every
    # file of a fleet, and each reading of it failed twice (libyaml, then the pure parser).
    try:
        return load_bytes(raw, "<shared>")
    except LoadError as error:
        error.__traceback__ = None
        return error


def _load_bytes(raw: bytes, path: str) -> Loaded:
    if len(raw) > MAX_BYTES:
        raise LoadError(
            START,
            f"file is larger than {MAX_BYTES // (1024 * 1024)} MiB; not read (is it really a compose file?)",
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LoadError(
            _byte_pos(raw, exc.start),
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x}); save the file as UTF-8",
        ) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    parser = "libyaml"
    try:
        composer = _libyaml_compose(text)
    except _Refused:
        # libyaml (YAML 1.1) refused something; yaml.v3 and ruamel's pure parser
        # (YAML 1.2) may accept it. Their verdict is the one that counts.
        parser = "pure"
        composer = _Composer(text)
        from ruamel.yaml import events

        composer.feed(functools.partial(next, _pure_events(text), None), events)
    if not composer.documents:
        raise LoadError(START, "empty compose file; expected a mapping (services: ...)")
    return Loaded(
        path=path,
        text=text,
        size=len(raw),
        documents=tuple(composer.documents),
        anchors=tuple(composer.anchor_pos),
        aliases=tuple(composer.alias_pos),
        merges=tuple(composer.merge_pos),
        parser=parser,
        lines=tuple(text.split("\n")),
    )


class _Refused(Exception):
    """libyaml could not parse the text (the pure parser gets a turn)."""


def _libyaml_compose(text: str) -> _Composer:
    if _C_LOADER is None:  # PyYAML built without libyaml: the pure parser reads everything
        raise _Refused
    loader = _C_LOADER(text)
    composer = _Composer(text)
    try:
        # One C call an event (yaml.parse adds a check_event each), and no generator
        # between the parser and the composer (its resumes cost a fifth of the loader).
        composer.feed(loader.get_event, yaml.events)
    except yaml.YAMLError:
        raise _Refused from None
    finally:
        loader.dispose()
    return composer


def _pure_events(text: str) -> Iterator[Any]:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    try:
        yield from YAML(typ="safe", pure=True).parse(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        pos = Pos(mark.line + 1, mark.column + 1) if mark is not None else START
        what = " ".join(str(exc.problem or exc.context or "invalid YAML").split())
        raise LoadError(pos, f"invalid YAML: {what}") from None
    except YAMLError as exc:
        raise LoadError(START, f"invalid YAML: {' '.join(str(exc).split())}") from None


def _byte_pos(raw: bytes, offset: int) -> Pos:
    before = raw[:offset]
    return Pos(before.count(b"\n") + 1, offset - (before.rfind(b"\n") + 1) + 1)


def _pos(event: Any) -> Pos:
    mark = event.start_mark
    pos: Pos = _new_pos((mark.line + 1, mark.column + 1))
    return pos


_NO_KEY = object()
_MERGE = "<<"


class _Frame:
    __slots__ = ("anchor", "is_map", "key", "key_pos", "merge_sources", "merging", "start", "value")

    def __init__(self, value: YMap | YList, anchor: str | None, start: int) -> None:
        self.value = value
        self.is_map = isinstance(value, YMap)
        self.anchor = anchor
        self.key: Any = _NO_KEY
        self.key_pos = START
        self.merging = False
        self.merge_sources: list[YMap] = []
        # The node count when the collection opened: its weight (what an alias of it
        # expands to) is itself plus every node counted since.
        self.start = start


class _Composer:
    """Events to YMap/YList without recursion; anchors live across documents, as in Compose."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.anchors: dict[str, tuple[Any, int]] = {}
        self.anchor_pos: list[Pos] = []
        self.alias_pos: list[Pos] = []
        self.merge_pos: list[Pos] = []
        self.open_anchors: set[str] = set()
        self.nodes = 0
        self.documents: list[YMap] = []
        self.stack: list[_Frame] = []
        self.root: list[tuple[Any, Pos]] = []

    def feed(self, next_event: Callable[[], Any], events: Any) -> None:  # noqa: PLR0912, PLR0915 (the scalar steps inline)
        """Compose the events `next_event` returns, until it returns None.

        `events` is the parser's module of event classes (PyYAML's or ruamel.yaml's: the
        same names and fields). Most events are a scalar key, value or item of an
        ordinary collection: their steps run inline, on the current collection's state
        kept in local variables (the loader's Python steps cost more than
        libyaml's parsing). Everything else (collections, aliases, anchors, merge and
        duplicate keys, empty values, the document root, the node budget's last node)
        writes that state back and takes the general path.
        """
        scalar_event = events.ScalarEvent
        map_start, seq_start = events.MappingStartEvent, events.SequenceStartEvent
        map_end, seq_end = events.MappingEndEvent, events.SequenceEndEvent
        stack = self.stack
        new_pos = _new_pos
        no_key = _NO_KEY
        budget = MAX_NODES
        nodes = self.nodes
        frame: _Frame | None = None
        # The state of `frame` (stack[-1]) while scalars take the inline steps.
        inline = False
        is_map = False
        key: Any = no_key
        key_pos = START
        mapping: YMap = YMap(START)
        key_positions, value_positions, value_spans = mapping.key_pos, mapping.value_pos, mapping.value_span
        items = YList(START)
        append, item_pos_append, item_span_append = (
            items.append,
            items.item_pos.append,
            items.item_span.append,
        )
        while (event := next_event()) is not None:
            cls = type(event)
            if cls is scalar_event:
                style = event.style
                value = event.value if style else _resolve_scalar(event)
                if (
                    inline
                    and nodes < budget
                    and not event.anchor
                    and (style or value is not None or event.value)
                ):
                    start = event.start_mark
                    pos = new_pos((start.line + 1, start.column + 1))
                    if not is_map:
                        nodes += 1
                        append(value)
                        item_pos_append(pos)
                        item_span_append((start.index, event.end_mark.index))
                        continue
                    if key is not no_key:
                        nodes += 1
                        mapping[key] = value
                        key_positions[key] = key_pos
                        value_positions[key] = pos
                        value_spans[key] = (start.index, event.end_mark.index)
                        key = no_key
                        continue
                    name = value if type(value) is str else key_text(value)
                    if name != _MERGE and name not in key_positions:
                        nodes += 1
                        key, key_pos = name, pos
                        continue
                # The general path, on the state written back.
                self.nodes = nodes
                if frame is not None:
                    frame.key, frame.key_pos = key, key_pos
                self._scalar(event, value, style)
                nodes = self.nodes
            elif (cls is map_start or cls is seq_start) and not event.anchor and len(stack) < MAX_DEPTH:
                # A collection opens (`_other`'s steps for one without an anchor).
                if frame is not None:
                    frame.key, frame.key_pos = key, key_pos
                start = event.start_mark
                pos = new_pos((start.line + 1, start.column + 1))
                stack.append(_Frame(YMap(pos) if cls is map_start else YList(pos), None, nodes))
            elif (
                (cls is map_end or cls is seq_end)
                and frame is not None
                and not frame.anchor
                and not frame.merge_sources
                and nodes < budget
                and len(stack) > 1
                and not (parent := stack[-2]).merging
                and (not parent.is_map or parent.key is not no_key)
            ):
                # A collection closes as the value or item of an ordinary one (`_attach`'s
                # steps for it).
                stack.pop()
                nodes += 1
                closed = frame.value
                if parent.is_map:
                    outer: YMap = parent.value  # type: ignore[assignment]
                    name = parent.key
                    outer[name] = closed
                    outer.key_pos[name] = parent.key_pos
                    outer.value_pos[name] = closed.pos
                    parent.key = no_key
                else:
                    outer_items: YList = parent.value  # type: ignore[assignment]
                    outer_items.append(closed)
                    outer_items.item_pos.append(closed.pos)
                    outer_items.item_span.append(None)
            else:
                # The general path, on the state written back.
                self.nodes = nodes
                if frame is not None:
                    frame.key, frame.key_pos = key, key_pos
                self._other(event, cls.__name__)
                nodes = self.nodes
            if not stack:
                frame, inline = None, False
                continue
            frame = stack[-1]
            inline = not frame.merging
            is_map, key, key_pos = frame.is_map, frame.key, frame.key_pos
            if is_map:
                mapping = frame.value  # type: ignore[assignment]
                key_positions, value_positions = mapping.key_pos, mapping.value_pos
                value_spans = mapping.value_span
            else:
                items = frame.value  # type: ignore[assignment]
                append, item_pos_append, item_span_append = (
                    items.append,
                    items.item_pos.append,
                    items.item_span.append,
                )
        self.nodes = nodes
        if frame is not None:
            frame.key, frame.key_pos = key, key_pos

    def _scalar(self, event: Any, value: Any, style: str | None) -> None:
        if event.anchor:
            self.anchor_pos.append(_pos(event))
            self.anchors[event.anchor] = (value, 1)
        start = event.start_mark
        if value is None and not style and not event.value:
            # An empty value (`key:`): the two parsers place it differently (after the
            # colon, or at the next token); it is pointed at by its key.
            self._attach(value, self._empty_pos(start.index), 1, True, True, None)
            return
        span = (start.index, event.end_mark.index)
        self._attach(value, _pos(event), 1, not style, True, span)

    def _other(self, event: Any, kind: str) -> None:
        """Every event but a scalar, by its class's name (PyYAML's and ruamel.yaml's agree)."""
        stack = self.stack
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            if len(stack) >= MAX_DEPTH:
                # Checked before the deeper node is parsed: the rest of the file is
                # never read, so a megabyte of `[` costs as much as 64 of them.
                raise LoadError(_pos(event), f"nesting deeper than {MAX_DEPTH} levels; not a compose file")
            pos = _pos(event)
            container: YMap | YList = YMap(pos) if kind == "MappingStartEvent" else YList(pos)
            if event.anchor:
                self.anchor_pos.append(pos)
                self.open_anchors.add(event.anchor)
            stack.append(_Frame(container, event.anchor, self.nodes))
        elif kind in ("MappingEndEvent", "SequenceEndEvent"):
            frame = stack.pop()
            if frame.merge_sources:
                _apply_merges(frame)
            weight = self.nodes - frame.start + 1
            if frame.anchor:
                self.open_anchors.discard(frame.anchor)
                self.anchors[frame.anchor] = (frame.value, weight)
            self._attach(frame.value, frame.value.pos, weight, False, True, None)
        elif kind == "AliasEvent":
            pos = _pos(event)
            if event.anchor in self.open_anchors:
                raise LoadError(pos, f"recursive alias *{event.anchor} (it refers to its own anchor)")
            if event.anchor not in self.anchors:
                raise LoadError(pos, f"undefined alias *{event.anchor}")
            self.alias_pos.append(pos)
            value, weight = self.anchors[event.anchor]
            self._attach(value, pos, weight, False, False, None)
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

    def _attach(self, value: Any, pos: Pos, weight: int, plain: bool, fresh: bool, span: Span | None) -> None:
        # Aliases share one Python object; counting what they expand to is what stops a
        # few hundred bytes from making every rule walk millions of nodes.
        self.nodes += 1 if fresh else weight
        if self.nodes > MAX_NODES:
            raise LoadError(
                pos, f"alias expansion exceeds {MAX_NODES} nodes (an alias bomb?); refusing to expand it"
            )
        stack = self.stack
        if not stack:
            self.root.append((value, pos))
            return
        frame = stack[-1]
        if not frame.is_map:
            items: YList = frame.value  # type: ignore[assignment]
            items.append(value)
            items.item_pos.append(pos)
            items.item_span.append(span)
            return
        mapping: YMap = frame.value  # type: ignore[assignment]
        if frame.key is _NO_KEY:
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
            return
        if frame.merging:
            sources = value if isinstance(value, YList) else [value]
            for source in sources:
                if not isinstance(source, YMap):
                    raise LoadError(
                        frame.key_pos, "merge key '<<' must refer to a mapping or a list of mappings"
                    )
                frame.merge_sources.append(source)
        else:
            mapping[frame.key] = value
            mapping.key_pos[frame.key] = frame.key_pos
            mapping.value_pos[frame.key] = pos
            if span is not None:
                mapping.value_span[frame.key] = span
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
                if key in source.value_span:
                    mapping.value_span[key] = source.value_span[key]


def scalar_text(value: Any) -> str:
    """A YAML scalar as text (bools lower-case, None empty), for values read as strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def key_text(value: Any) -> str:
    """A mapping key as Compose sees it (keys are strings; `true:` is the key "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


# Plain scalars resolve like compose's YAML library (yaml.v3, resolve.go): the YAML 1.2
# core schema, where a scalar that starts like a number has its underscores removed and
# is read by Go's strconv.ParseInt with base prefixes (`0x1F`, `0b11`, `0o17`, and the
# YAML 1.1 octal `0444`), else as a float.
_NULL = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL_FLOAT = {
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), float("inf")),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), float("-inf")),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), float("nan")),
}
_BASES = {"0x": 16, "0X": 16, "0b": 2, "0B": 2, "0o": 8, "0O": 8}
_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}
_INT64 = (-(1 << 63), (1 << 64) - 1)  # ParseInt, then ParseUint


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64) (then ParseUint): None when it is not an integer."""
    sign = 1
    body = text
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    base = 10
    if body[:2] in _BASES:
        base, body = _BASES[body[:2]], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    if not body or any(char not in _DIGITS[base] for char in body):
        return None
    value = sign * int(body, base)
    return value if _INT64[0] <= value <= _INT64[1] else None


def _resolve_scalar(event: Any) -> Any:
    value: str = event.value
    if event.style or event.tag == "tag:yaml.org,2002:str" or not event.implicit[0]:
        return value
    return resolve_plain(value)


def resolve_plain(value: str) -> Any:  # noqa: PLR0911 (one return per YAML type)
    if value in _NULL:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if value in _SPECIAL_FLOAT:
        return _SPECIAL_FLOAT[value]
    first = value[0]
    if not (first.isdigit() or first in "+-."):
        return value
    if value.isascii() and value.isdigit() and (first != "0" or len(value) == 1) and len(value) < 19:
        return int(value)  # a plain decimal (most numbers): what _go_int reads it as, in one call
    plain = value.replace("_", "")
    if not plain:
        return value
    number = _go_int(plain)
    if number is not None:
        return number
    if _FLOAT.fullmatch(plain):
        return float(plain)
    return value
