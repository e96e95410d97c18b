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
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

# The composer is handed the depth and node budgets at each load, from this module's
# names: the one place a caller (a test) sets them.
from tierops.yamlload.budgets import MAX_BYTES, MAX_DEPTH, MAX_NODES
from tierops.yamlload.composer import Composer
from tierops.yamlload.files import COMPOSE_ONLY_HELP, compose_files, looks_like_compose, read_regular
from tierops.yamlload.nodes import START, Loaded, LoadError, Pos, Span, YList, YMap
from tierops.yamlload.scalars import key_text, resolve_plain, scalar_text

__all__ = [
    "COMPOSE_ONLY_HELP",
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "START",
    "LoadError",
    "Loaded",
    "Pos",
    "Span",
    "YList",
    "YMap",
    "compose_files",
    "key_text",
    "load_bytes",
    "load_path",
    "load_shared",
    "looks_like_compose",
    "read_regular",
    "resolve_plain",
    "scalar_text",
]


_C_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def load_path(path: Path, display: str | None = None) -> Loaded:
    """Read and parse a file: InputError (exit 2) if unreadable, LoadError if not compose YAML."""
    shown = display if display is not None else str(path)
    return load_bytes(read_regular(path, shown), shown)


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
    breaker = _UNICODE_BREAK.search(text)
    if breaker is not None:
        # YAML 1.2 readers (ruamel) take NEL, LS and PS as ordinary characters; Compose's
        # reader breaks the line there and refuses the file. Refused here the same way.
        index = breaker.start()
        line = text.count("\n", 0, index) + 1
        col = index - (text.rfind("\n", 0, index) + 1) + 1
        raise LoadError(
            Pos(line, col),
            f"a raw U+{ord(breaker.group()):04X} line break character, which Compose reads as the end of "
            f"the line; write it as \\u{ord(breaker.group()):04x} in a double-quoted string",
        )
    parser = "libyaml"
    try:
        composer = _libyaml_compose(text)
    except _Refused:
        # libyaml (YAML 1.1) refused something; yaml.v3 and ruamel's pure parser
        # (YAML 1.2) may accept it. Their verdict is the one that counts.
        parser = "pure"
        composer = Composer(text, max_depth=MAX_DEPTH, max_nodes=MAX_NODES)
        composer.feed(functools.partial(next, _pure_events(text), None))
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


_UNICODE_BREAK = re.compile("[\x85\u2028\u2029]")


class _Refused(Exception):
    """libyaml could not parse the text (the pure parser gets a turn)."""


def _libyaml_compose(text: str) -> Composer:
    if _C_LOADER is None:  # PyYAML built without libyaml: the pure parser reads everything
        raise _Refused
    loader = _C_LOADER(text)
    composer = Composer(text, max_depth=MAX_DEPTH, max_nodes=MAX_NODES)
    try:
        # One C call an event (yaml.parse adds a check_event each), and no generator
        # between the parser and the composer (its resumes cost a fifth of the loader).
        composer.feed(loader.get_event)
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
