"""Write a file so that readers see the old bytes or the new bytes, never a mix.

A temp file in the same directory (same filesystem, so the rename is atomic),
flushed and fsynced, then `os.replace`d over the target. An interrupted run leaves
the previous file intact and removes its temp file: Ctrl-C, and SIGTERM too once
tierops.entry has turned it into an exception, unwind through the cleanup below.

The rename replaces whatever has the target's name, so a target that exists and is
not a regular file (a FIFO another program reads, a symbolic link, a device, a
directory) is refused before anything is written: replacing it would break the other
program's end, or drop a link the user made on purpose. A missing directory is
created only where the caller owns the tree (`parents=True`); a path a user names
must already have its directory, so a typo in it is reported, not silently created.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from tierops.errors import OutputError, UsageError

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def check_target(
    path: Path, shown: str, *, parents: bool = False, hint: str = "name a regular file or a new path"
) -> bool:
    """Whether the target exists (as a regular file); UsageError (exit 2) for every other
    kind, and for a missing directory unless `parents` creates it. A writer of several
    files calls it on each before writing any."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        if not parents and not path.parent.is_dir():
            missing = "is not a directory" if path.parent.exists() else "does not exist"
            raise UsageError(
                f"no directory to write into: {path.parent} {missing}",
                where=shown,
                hint="create the directory first, or name a file in an existing one",
            ) from None
        return False
    except OSError as error:
        raise OutputError(f"cannot write: {error.strerror or error}", where=shown) from None
    if stat.S_ISREG(mode):
        return True
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise UsageError(
        f"exists and is {kind}; writing replaces the target, so nothing was written",
        where=shown,
        hint=hint,
    )


def write_bytes_atomic(
    path: Path, data: bytes, *, mode: int = 0o644, parents: bool = False, shown: str | None = None
) -> None:
    """Write `data` to `path` atomically. Raises UsageError (exit 2) for a target that is
    not a regular file or a missing directory, OutputError (exit 3) when the machine
    fails the write; `shown` is the path as messages name it."""
    name = shown or str(path)
    existed = check_target(path, name, parents=parents)
    # The name is chosen before the file exists, so an interrupt at any point after
    # `tmp` is bound (even between the file's creation and the next line) finds it to
    # remove; mkstemp would create the file before its name reached us.
    tmp = path.parent / f".{path.name}.{secrets.token_hex(8)}.tmp"
    fd = -1
    try:
        if parents:
            path.parent.mkdir(parents=True, exist_ok=True)
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
        if isinstance(exc, OSError):
            intact = "; the previous file is intact" if existed else ""
            raise OutputError(f"cannot write {name}: {exc.strerror or exc}{intact}") from None
        raise
