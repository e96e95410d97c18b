"""Write a file so that readers see the old bytes or the new bytes, never a mix.

A temp file in the same directory (same filesystem, so the rename is atomic),
flushed and fsynced, then `os.replace`d over the target. An interrupted run leaves
the previous file intact and removes its temp file: Ctrl-C, and SIGTERM too once
tierops.entry has turned it into an exception, unwind through the cleanup below.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def write_bytes_atomic(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # The name is chosen before the file exists, so an interrupt at any point after
    # `tmp` is bound (even between the file's creation and the next line) finds it to
    # remove; mkstemp would create the file before its name reached us.
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = -1
    try:
        fd = os.open(tmp, _CREATE, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.chmod(mode)
        tmp.replace(path)
    except BaseException as exc:
        # A name taken by another writer (O_EXCL refused it) is theirs, never removed.
        if not (isinstance(exc, FileExistsError) and fd < 0):
            with contextlib.suppress(OSError):
                tmp.unlink()
        raise
