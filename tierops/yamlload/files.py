"""Reading a file's bytes safely (regular files only, at most the size budget), and
telling a compose file from other YAML by its top-level `services:` key.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from tierops.errors import InputError
from tierops.yamlload.budgets import MAX_BYTES


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
