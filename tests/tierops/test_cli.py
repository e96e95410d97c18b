"""`tierops.cli.guarded`: every way a command's work can fail is one line and an exit code."""

from __future__ import annotations

import errno
import io

import pytest

from tierops.cli import guarded
from tierops.entry import outcome
from tierops.exitcodes import ExitCode


def _failing(error: BaseException) -> int:
    raise error


@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EDQUOT, errno.EIO])
def test_a_write_the_machine_fails_is_said_in_its_own_words_not_as_a_bug(number: int) -> None:
    err = io.StringIO()
    code = guarded(lambda: _failing(OSError(number, "No space left on device")), tool="t", stderr=err)
    assert code == ExitCode.INTERNAL
    assert err.getvalue() == (
        "cannot write: No space left on device; free the space or fix the device, then rerun\n"
    )


def test_any_other_error_is_a_bug_of_the_tool_in_one_line() -> None:
    err = io.StringIO()
    code = guarded(lambda: _failing(OSError(errno.EBADF, "Bad file descriptor")), tool="t", stderr=err)
    assert code == ExitCode.INTERNAL
    assert err.getvalue().startswith("internal error: OSError: ") and err.getvalue().count("\n") == 1
    assert "(a bug in t;" in err.getvalue()


class _FullDisk(io.StringIO):
    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_output_the_disk_cannot_take_ends_with_one_line_and_3(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last flush of buffered output is outside any command's own guard."""
    monkeypatch.setattr("sys.stdout", _FullDisk())
    monkeypatch.setattr("tierops.entry.silence_stdout", lambda: None)  # no dup2 onto the test's fd 1
    assert outcome(lambda: 0) == ExitCode.INTERNAL
    assert capsys.readouterr().err == "cannot write the output: No space left on device\n"
