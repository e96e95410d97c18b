"""Where masking applies. `boundary()` wraps stdout and stderr for a whole `python -m
rollout` run, and every document read is handed to it first (`protect_source`); files
are written through it (`write_masked`). The model pass (`mask_changeset`) masks the
change model before a report renders it, keeping the JSON model's `masked` flag.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

from rollout.diff.changes import ABSENT, Change, ChangeSet, FileChange, Key, ServiceChange
from rollout.diff.masking import Masker
from rollout.diff.secret_values import fingerprint, mask_text, secret_fragments, secret_key
from tierops.entry import visible
from tierops.errors import UsageError
from tierops.yamlload import MAX_BYTES

_ACTIVE: ContextVar[Masker | None] = ContextVar("rollout_masker", default=None)


def protect_source(data: bytes | str | None) -> None:
    """Hand the boundary of this run a document's bytes, before anything is printed."""
    masker = _ACTIVE.get()
    # A file over the loader's size budget is refused whole (one error line, none of
    # its text printed): there is nothing of it to mask, and reading it would be slow.
    if masker is not None and data is not None and len(data) <= MAX_BYTES:
        masker.add_source(data)


class MaskingStream(io.TextIOBase):
    """A text stream that masks each complete line before it reaches `target`.

    Whole lines, because `print(x)` is two writes and a secret must not escape by being
    cut in two; the rest is written when the boundary closes."""

    def __init__(self, masker: Masker, target: TextIO) -> None:
        super().__init__()
        self._masker = masker
        self._target = target
        self._pending = ""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        # What the output is (a terminal, a pipe) is the target's: colour depends on it.
        return self._target.isatty()

    def write(self, text: str) -> int:
        self._pending += text
        cut = self._pending.rfind("\n")
        if cut >= 0:
            complete, self._pending = self._pending[: cut + 1], self._pending[cut + 1 :]
            self._target.write(self._masker.mask(complete))
        return len(text)

    def flush(self) -> None:
        self._target.flush()

    def close_boundary(self) -> None:
        if self._pending:
            self._target.write(self._masker.mask(self._pending))
            self._pending = ""
        self._target.flush()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", "utf-8") or "utf-8"


def write_masked(path: Path, text: str) -> None:
    """Write a report to a file through this run's boundary (atomically): a file the
    command writes is output too, and never holds what the boundary masks on stdout."""
    masker = _ACTIVE.get()
    if masker is None:
        raise RuntimeError("write_masked outside the masking boundary")
    if str(path) == "-":  # read as stdout by most tools, a file named `-` here
        raise UsageError("--markdown-to - names no file", hint="print the report with --format markdown")
    from tierops.atomic import write_bytes_atomic  # here: its tempfile is only for a run that writes

    write_bytes_atomic(path, visible(masker.mask(text)).encode("utf-8"))


@contextlib.contextmanager
def boundary() -> Iterator[Masker]:
    """Mask everything this run prints to stdout and stderr."""
    masker = Masker()
    token = _ACTIVE.set(masker)
    out, err = sys.stdout, sys.stderr
    streams = (MaskingStream(masker, out), MaskingStream(masker, err))
    sys.stdout, sys.stderr = streams
    try:
        yield masker
    finally:
        sys.stdout, sys.stderr = out, err
        for stream in streams:
            stream.close_boundary()
        _ACTIVE.reset(token)


def mask_value(value: Any, key: Key | None = None) -> Any:  # noqa: PLR0911 (one return per kind of value)
    """A value with secrets masked; `key` is the name it is stored under (if any)."""
    if isinstance(value, dict):
        if set(value) <= {"flag", "value"} and "flag" in value:  # an argv item: the flag is its key
            return {"flag": value["flag"], "value": mask_value(value.get("value"), value["flag"])}
        return {name: mask_value(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [mask_value(item, key) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value  # YAML numbers and booleans: counts and switches, not secrets
    if isinstance(value, str) and secret_key(key):
        fragments = secret_fragments(value)
        if fragments == [value]:
            return fingerprint(value)
        for fragment in sorted(fragments, key=len, reverse=True):
            value = value.replace(fragment, fingerprint(fragment))
        return value
    # Shapes are the boundary's: it masks known values first, so a secret that
    # contains a token shape is never cut in two (and half of it shown) here.
    return value


def _key_of(path: tuple[Key, ...]) -> Key | None:
    for key in reversed(path):
        if isinstance(key, str) and key not in ("args",):
            return key
    return None


def mask_change(change: Change) -> Change:
    key = _key_of(change.path)
    old = change.old if change.old is ABSENT else mask_value(change.old, key)
    new = change.new if change.new is ABSENT else mask_value(change.new, key)
    if old != change.old or new != change.new:
        # A masked value is not quoted as written either (its text is the secret).
        change = replace(change, written=(None, None))
    if change.unified and (old != change.old or new != change.new):
        # The text diff of a masked inline text, spelled like rollout.diff.document.unified (kept
        # here so masking depends on no diff internals).
        lines = difflib.unified_diff(str(old).splitlines(), str(new).splitlines(), lineterm="", n=3)
        hunks = tuple(line for number, line in enumerate(lines) if number >= 2)
        return replace(change, old=old, new=new, unified=hunks)
    return replace(change, old=old, new=new)


def mask_file(file: FileChange) -> FileChange:
    services = tuple(
        ServiceChange(
            service.name, service.status, service.role, tuple(mask_change(c) for c in service.changes)
        )
        for service in file.services
    )
    others = tuple(mask_change(change) for change in file.others)
    error = mask_text(file.error) if file.error else file.error
    return replace(file, services=services, others=others, error=error)


def mask_changeset(changeset: ChangeSet) -> ChangeSet:
    """A first pass in the model (keys in place); the boundary masks the rest by value."""
    if changeset.masked:
        return changeset
    return replace(changeset, files=tuple(mask_file(file) for file in changeset.files), masked=True)


def mask_form(form: Any) -> Any:
    """A compared form with the same masking (for the completeness check of masked JSON)."""
    return mask_value(form) if isinstance(form, Mapping) else form
