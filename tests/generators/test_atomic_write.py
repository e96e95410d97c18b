"""`--write` never leaves a half-written file, whatever happens during the write."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from generators.cli import main
from tests.conftest import LONG_CONTEXT
from tierops.atomic import write_bytes_atomic
from tierops.errors import UsageError


def test_a_failure_during_write_leaves_the_previous_file_intact(
    prod_copy: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    target = prod_copy / LONG_CONTEXT.name
    target.write_bytes(b"# previous content\n")

    def failing_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    assert main(["--write", "--prod-dir", str(prod_copy)]) == 3
    err = capsys.readouterr().err
    assert (
        err
        == f"cannot write {prod_copy}/{LONG_CONTEXT.name}: No space left on device; the previous file is intact\n"
    )
    assert target.read_bytes() == b"# previous content\n"
    assert not [p for p in prod_copy.iterdir() if p.name.startswith(".")], "temp file left behind"


def test_an_interrupted_rename_leaves_the_previous_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "file.yaml"
    target.write_bytes(b"old\n")

    def interrupted(self: Path, other: Path) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr(Path, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_bytes_atomic(target, b"new\n")
    assert target.read_bytes() == b"old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.yaml"]


def test_a_successful_write_replaces_the_file_with_mode_0644(tmp_path: Path) -> None:
    target = tmp_path / "file.yaml"
    target.write_bytes(b"old\n")
    target.chmod(0o600)
    write_bytes_atomic(target, b"new\n")
    assert target.read_bytes() == b"new\n"
    assert target.stat().st_mode & 0o777 == 0o644


def test_a_target_that_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    real = tmp_path / "real"
    real.write_bytes(b"theirs\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    for target, kind in (
        (fifo, "a FIFO"),
        (link, "a symbolic link"),
        (Path("/dev/null"), "a character device"),
    ):
        with pytest.raises(UsageError, match=f"exists and is {kind}") as refused:
            write_bytes_atomic(target, b"new\n")
        assert refused.value.exit_code == 2
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and link.is_symlink() and real.read_bytes() == b"theirs\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "link", "real"]


def test_a_missing_directory_is_created_only_when_the_caller_owns_the_tree(tmp_path: Path) -> None:
    named = tmp_path / "typo" / "report.md"
    with pytest.raises(UsageError, match="no directory"):
        write_bytes_atomic(named, b"x\n")
    assert not named.parent.exists()
    write_bytes_atomic(named, b"x\n", parents=True)
    assert named.read_bytes() == b"x\n"


def test_a_prod_file_that_is_a_link_stops_the_write_before_any_file_is_written(
    prod_copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = sorted(prod_copy.glob("*.yaml"))
    outside = tmp_path / "elsewhere.yaml"
    outside.write_bytes(files[0].read_bytes())
    files[0].unlink()
    files[0].symlink_to(outside)
    stale = files[-1]
    stale.write_bytes(stale.read_bytes() + b"# stale\n")  # a file --write would rewrite
    assert main(["--write", "--prod-dir", str(prod_copy)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{files[0].name}: exists and is a symbolic link; writing replaces the target, so nothing was written"
        in err
    )
    assert stale.read_bytes().endswith(b"# stale\n") and files[0].is_symlink()
