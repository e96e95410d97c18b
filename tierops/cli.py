"""What every entry point does around its real work: errors become one line and an exit code.

A `TieropsError` prints as `where: what; hint` with its own exit code; Ctrl-C and
SIGTERM (tierops.entry turns it into `Terminated`) exit 130 and 143 with one line; a
reader that closed the pipe ends the run quietly with 141; an unexpected exception
exits 3 with one line. The traceback of a bug is printed
only with TIEROPS_DEBUG=1, so users never see one for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from tierops.entry import Terminated, silence_stdout, visible
from tierops.errors import TieropsError
from tierops.exitcodes import ExitCode, interrupted


def prog(module_form: str) -> str:
    """The command's name in usage lines: the console command it was started as
    (`tierops`, `tierops-validate`, ...), else its `python -m` form."""
    started_as = Path(sys.argv[0]).name if sys.argv else ""
    return started_as if started_as.startswith("tierops") else module_form


def parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace | int:
    """Parse arguments; argparse's own exit (usage error or --help) becomes an exit code."""
    # argparse swallows a write error, so `--help | head` would exit 0: the help is
    # caught here and written by us, where a closed pipe raises and becomes 141.
    text = io.StringIO()
    try:
        with contextlib.redirect_stdout(text):
            return parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed --help (to `text`) or a one-line usage error
        sys.stdout.write(text.getvalue())
        sys.stdout.flush()
        return ExitCode.OK if exc.code in (0, None) else ExitCode.USAGE


def guarded(work: Callable[[], int], *, tool: str, stderr: TextIO | None = None) -> int:
    """Run `work`; turn every way it can fail into one line on stderr and an exit code."""
    err = stderr or sys.stderr
    try:
        return work()
    except TieropsError as error:
        print(visible(str(error)), file=err)  # it may quote a path or value as typed
        return int(error.exit_code)
    except KeyboardInterrupt:
        print("interrupted", file=err)
        return ExitCode.SIGINT
    except Terminated as signalled:
        print("terminated", file=err)
        return interrupted(signalled.signum)  # 143 for SIGTERM, 129 for SIGHUP
    except BrokenPipeError:
        # `... | head`: the reader has what it wanted; nothing to report, and the
        # interpreter's last flush must not raise again.
        silence_stdout()
        return ExitCode.PIPE
    except Exception as exc:  # a bug (or the machine's failure): one line
        return _unexpected(exc, tool, err)


_MACHINE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})


def _unexpected(exc: Exception, tool: str, err: TextIO) -> int:
    """Exit 3 either way. A full disk or a failing device while writing (the output, a
    file) is the machine's fault, said in its own words; anything else is a bug, in one
    line, its traceback only on request."""
    if isinstance(exc, OSError) and exc.errno in _MACHINE_FAILURES:
        print(f"cannot write: {exc.strerror}; free the space or fix the device, then rerun", file=err)
        return ExitCode.INTERNAL
    print(
        f"internal error: {type(exc).__name__}: {exc} "
        f"(a bug in {tool}; rerun with TIEROPS_DEBUG=1 and report it)",
        file=err,
    )
    if os.environ.get("TIEROPS_DEBUG"):
        import traceback  # here: only this rare request pays for its import

        traceback.print_exc(file=err)
    return ExitCode.INTERNAL
