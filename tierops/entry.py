"""How every `python -m` entry point starts and ends, whatever the terminal, pipe or signal.

`launch` runs a CLI module's `main()` so that:

- output never crashes on the locale: stdout and stderr keep the terminal's encoding
  (UTF-8, ISO-8859-1) and escape what it cannot show (`\\u2615`), a lone surrogate
  from a mis-encoded input too; an ASCII locale (`C` without UTF-8 mode) gets UTF-8,
  as Python's UTF-8 mode gives it, so JSON output stays JSON;
- a closed pipe (`| head`) ends the run quietly with 141 (128 + SIGPIPE, as a shell
  reports a tool that SIGPIPE ended), never an internal error;
- Ctrl-C, SIGTERM and SIGHUP, also during the imports, unwind the stack like an
  exception, so every `finally` runs (temporary files removed), and end with 130, 143
  or 129 and one line, never a traceback.

Only this module installs signal handlers, and only in the process's main thread.
"""

from __future__ import annotations

import codecs
import contextlib
import importlib
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import NoReturn, TextIO

# These mirror tierops.exitcodes; that module is not imported here so that an interrupt
# during the first imports is already handled.
_SIGINT_EXIT = 128 + signal.SIGINT
_PIPE_EXIT = 128 + signal.SIGPIPE
_WRITE_FAILED_EXIT = 3  # the exit-code table's 3: a failed write


class Terminated(BaseException):
    """SIGTERM, raised where the program is: a BaseException like KeyboardInterrupt, so
    `except Exception` never swallows it and every cleanup on the way out runs."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def _raise_terminated(signum: int, _frame: FrameType | None) -> None:
    raise Terminated(signum)


def install_signal_handlers() -> None:
    """SIGTERM and SIGHUP (the terminal or SSH session gone) raise Terminated; SIGINT
    keeps Python's KeyboardInterrupt."""
    signal.signal(signal.SIGTERM, _raise_terminated)
    signal.signal(signal.SIGHUP, _raise_terminated)
    signal.signal(signal.SIGINT, signal.default_int_handler)


ESCAPE = "tierops.escape"


def _escape(error: UnicodeError) -> tuple[str, int]:
    """`\\uXXXX` for what the stream's encoding cannot write (a pair of them beyond the
    BMP): readable in text, and the same character again inside a JSON string."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return _units(error.object[error.start : error.end]), error.end


def _units(text: str) -> str:
    units = text.encode("utf-16-be", "surrogatepass")
    return "".join(f"\\u{units[i] << 8 | units[i + 1]:04x}" for i in range(0, len(units), 2))


# Every run of characters but line breaks, tabs and printable ASCII is looked at.
_LOOKED_AT = re.compile(r"[^\n\t -~]+")
# The C0 and C1 controls, escaped by one `str.translate` of a run (a megabyte of carriage
# returns in a hostile file is one call, not a million).
_CONTROLS = {code: _units(chr(code)) for code in (*range(0x20), *range(0x7F, 0xA0)) if code not in (9, 10)}


def _shown(found: re.Match[str]) -> str:
    run = found.group()
    if run.isprintable():
        return run
    run = run.translate(_CONTROLS)
    if run.isprintable():
        return run
    return "".join(char if char.isprintable() else _units(char) for char in run)


def visible(text: str) -> str:
    """A report about data, safe for a terminal: every character that is not printable
    (a terminal escape, a carriage return, a C1 control, a bidi override, a zero-width
    space) but line breaks and tabs is written as `\\uXXXX`, which reads the same in text
    and stands for the same character inside a JSON string."""
    return _LOOKED_AT.sub(_shown, text)


codecs.register_error(ESCAPE, _escape)


class _Visible:
    """A text stream that writes what it is given through `visible`."""

    def __init__(self, target: TextIO) -> None:
        self._target = target

    def write(self, text: str) -> int:
        return self._target.write(visible(text))

    def __getattr__(self, name: str) -> object:
        return getattr(self._target, name)


@contextlib.contextmanager
def visible_output() -> Iterator[None]:
    """stdout and stderr through `visible`, for a command whose every line may quote its
    input (a file's name, a value in the Compose binary's own error)."""
    with contextlib.redirect_stdout(_Visible(sys.stdout)), contextlib.redirect_stderr(_Visible(sys.stderr)):  # type: ignore[type-var]
        yield


def prepare_streams() -> None:
    """Escape, instead of raising on, whatever the stream's encoding cannot write; an
    ASCII stream (the C locale without UTF-8 mode) writes UTF-8, as Python's own UTF-8
    mode would there, so `--format json` stays JSON. A stream the command was started
    without (`>&-`, `2>&-`) writes nowhere, so the exit code stays the run's own."""
    if sys.stdout is None:
        sys.stdout = os.fdopen(os.open(os.devnull, os.O_WRONLY), "w", encoding="utf-8")
    if sys.stderr is None:
        sys.stderr = os.fdopen(os.open(os.devnull, os.O_WRONLY), "w", encoding="utf-8")
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None:
            continue
        try:
            ascii_only = codecs.lookup(stream.encoding).name == "ascii"
        except (LookupError, TypeError):
            ascii_only = False
        if ascii_only:
            reconfigure(encoding="utf-8", errors=ESCAPE)
        else:
            reconfigure(errors=ESCAPE)


def silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null, so the interpreter's last flush of
    what is still buffered cannot raise (and print) a second BrokenPipeError."""
    # No stdout to silence (OSError, ValueError): nothing will be flushed to it either.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
        os.close(devnull)


def _say(line: str) -> None:
    # stderr gone too (OSError, ValueError): the exit code alone must say it.
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def outcome(main: str | Callable[[], int]) -> int:
    """Run `main` (or import the module it names and run its `main()`); every way out
    becomes an exit code."""
    try:
        code = int(importlib.import_module(main).main() if isinstance(main, str) else main())
        sys.stdout.flush()
    except KeyboardInterrupt:
        _say("interrupted")
        return _SIGINT_EXIT
    except Terminated as signalled:
        _say("terminated")
        return 128 + signalled.signum
    except BrokenPipeError:
        silence_stdout()
        return _PIPE_EXIT
    except OSError as error:  # the output's last flush failed: a full disk, a failing device
        silence_stdout()
        _say(f"cannot write the output: {error.strerror or error}")
        return _WRITE_FAILED_EXIT
    return code


def launch(main: str | Callable[[], int]) -> NoReturn:
    """The whole life of a `python -m` process: `main` is a CLI module's name (imported
    here, so an interrupt during its imports is handled too) or its `main` function."""
    try:
        install_signal_handlers()
        prepare_streams()
        code = outcome(main)
        sys.stdout.flush()
        sys.stderr.flush()
    except KeyboardInterrupt:
        code = _SIGINT_EXIT
    except Terminated as signalled:
        code = 128 + signalled.signum
    except BrokenPipeError:
        silence_stdout()
        code = _PIPE_EXIT
    raise SystemExit(code)
