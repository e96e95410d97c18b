"""ci/tmpdirs.py: when the test suite's temporary files go to RAM."""

from __future__ import annotations

import os
from pathlib import Path

from ci.tmpdirs import ram_tmpdir


def _mounts(tmp_path: Path, shm: Path, fstype: str = "tmpfs", options: str = "rw,nosuid,nodev") -> Path:
    mounts = tmp_path / "mounts"
    mounts.write_text(f"proc /proc proc rw 0 0\n{fstype} {shm} {fstype} {options} 0 0\n", encoding="utf-8")
    return mounts


def test_a_usable_tmpfs_gives_a_private_directory(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    found = ram_tmpdir({}, shm=shm, mounts=_mounts(tmp_path, shm), min_free=1)
    assert found == shm / f"tierops-tests-{os.getuid()}"
    assert found.is_dir() and (found.stat().st_mode & 0o777) == 0o700
    assert ram_tmpdir({}, shm=shm, mounts=_mounts(tmp_path, shm), min_free=1) == found  # again: the same


def test_the_default_is_kept_when_ram_is_not_usable(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    # the caller's TMPDIR wins
    assert ram_tmpdir({"TMPDIR": "/elsewhere"}, shm=shm, mounts=_mounts(tmp_path, shm), min_free=1) is None
    # noexec (Docker's /dev/shm): the tests run scripts they write there
    noexec = _mounts(tmp_path, shm, options="rw,nosuid,nodev,noexec")
    assert ram_tmpdir({}, shm=shm, mounts=noexec, min_free=1) is None
    # not a tmpfs, or not mounted at all
    assert ram_tmpdir({}, shm=shm, mounts=_mounts(tmp_path, shm, fstype="ext4"), min_free=1) is None
    assert ram_tmpdir({}, shm=tmp_path / "other", mounts=_mounts(tmp_path, shm), min_free=1) is None
    assert ram_tmpdir({}, shm=shm, mounts=tmp_path / "no-such-mounts", min_free=1) is None
    # too little room (Docker's default is 64 MB)
    assert ram_tmpdir({}, shm=shm, mounts=_mounts(tmp_path, shm), min_free=1 << 62) is None
    assert not any(shm.iterdir())  # nothing was made where it was not used
