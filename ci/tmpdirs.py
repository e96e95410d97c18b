"""Where `nox -s tests` puts its temporary files: a RAM filesystem when one is usable.

The tests build hundreds of real git repositories, fleets and renders, and the
project's atomic writes fsync every file: on a disk-backed /tmp that is I/O wait the
CPU cannot use (about 8 s of a 60 s suite on the 2-core build machine, alternating
runs, benchmarks/README.md). `ram_tmpdir` names a private directory on /dev/shm when

- the caller has not chosen a TMPDIR (theirs is always kept);
- /dev/shm is a tmpfs mounted without `noexec` (the tests run scripts they write);
- at least 2 GiB are free there (Docker's default 64 MB /dev/shm is not);

and None otherwise, so the suite uses the platform's default. stdlib only: the noxfile
imports it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

SHM = Path("/dev/shm")
MOUNTS = Path("/proc/mounts")
MIN_FREE = 2 << 30


def _mount_options(mounts: Path, mount_point: Path) -> tuple[str, list[str]] | None:
    """(filesystem type, options) of the last mount at `mount_point` (the one in effect)."""
    try:
        text = mounts.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[1] == str(mount_point):
            found = (fields[2], fields[3].split(","))
    return found


def ram_tmpdir(  # noqa: PLR0911 (one return per reason to keep the default)
    environ: Mapping[str, str], *, shm: Path = SHM, mounts: Path = MOUNTS, min_free: int = MIN_FREE
) -> Path | None:
    """A private directory on a usable RAM filesystem for the tests' TMPDIR, or None."""
    if environ.get("TMPDIR"):
        return None
    mount = _mount_options(mounts, shm)
    if mount is None or mount[0] != "tmpfs" or "noexec" in mount[1]:
        return None
    try:
        stat = os.statvfs(shm)
    except OSError:
        return None
    if stat.f_bavail * stat.f_frsize < min_free or not os.access(shm, os.W_OK | os.X_OK):
        return None
    directory = shm / f"tierops-tests-{os.getuid()}"
    try:
        directory.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    if directory.is_symlink() or directory.stat().st_uid != os.getuid():
        return None  # not ours: someone else made it first
    return directory
