"""Stages started ahead of their nox session, so a warm `nox -R -s check` uses both cores.

nox runs the sessions of `check` one after another in one process. Each stage's
work is one command in its own environment that reads the repository and writes
only its own result (build/check/NAME.json), so the stages do not depend on each
other. When the first stage session of a `check` runs, the noxfile starts the
commands of the stages still queued behind it, in their own environments, each in
a process of its own; when nox reaches such a stage's session, the session waits
for its command, prints its output (one block, as nox would have shown it) and
passes or fails on its exit code, as `session.run` would.

Nothing is cached: every command runs in full, in this nox invocation, on the files
as they are now. A stage is started ahead only when its session would run that very
command in that very environment: the environment is reused (`-r`/`-R`), it exists,
and its dependency group is installed from the current lock (else the session
installs first, and runs its command itself, in order). `TIEROPS_STAGES_AHEAD=0`
turns this off; a stage run alone (`nox -R -s validate`) never starts another.

stdlib only: the noxfile imports it into nox's own interpreter.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

SWITCH = "TIEROPS_STAGES_AHEAD"


def enabled(environ: Mapping[str, str]) -> bool:
    """On unless TIEROPS_STAGES_AHEAD is 0/false/no/off."""
    return environ.get(SWITCH, "").strip().lower() not in ("0", "false", "no", "off")


def venv_environment(venv: Path, base: Mapping[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """The environment nox's `session.run` gives a command of the virtualenv at `venv`."""
    env = {key: value for key, value in base.items() if key != "PYTHONHOME"}
    env.update(extra)
    env["VIRTUAL_ENV"] = str(venv)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), base.get("PATH", os.defpath)])
    return env


def resolve(argv: Sequence[str], venv: Path) -> list[str] | None:
    """`argv` with its program found in the virtualenv's bin/ (None: not there, so not ours to run)."""
    program = shutil.which(argv[0], path=str(venv / "bin"))
    return None if program is None else [program, *argv[1:]]


@dataclass
class Run:
    """One stage command started ahead: its process and the file its output goes to."""

    name: str
    argv: tuple[str, ...]
    started_by: str
    process: subprocess.Popen[bytes]
    output: IO[bytes]
    started: float = field(default_factory=time.monotonic)

    def finish(self) -> tuple[int, bytes]:
        """Wait for the command; its exit code and everything it wrote (stdout and stderr, in order)."""
        code = self.process.wait()
        self.output.seek(0)
        data = self.output.read()
        self.output.close()
        return code, data


class Ahead:
    """The stage commands of this nox invocation that were started ahead of their session."""

    def __init__(self) -> None:
        self._runs: dict[str, Run] = {}
        self.started = False  # whether a session has already started the others
        atexit.register(self.stop_all)

    def start(
        self, name: str, argv: Sequence[str], env: Mapping[str, str], cwd: Path, started_by: str
    ) -> Run:
        # A file, not a pipe: nobody reads the output before the stage's session comes,
        # and a full pipe would stall the command.
        output = tempfile.TemporaryFile()  # noqa: SIM115  (closed by Run.finish or stop_all)
        process = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            # its own process group: stop_all ends the command's children too (pre-commit's hooks)
            start_new_session=True,
        )
        run = Run(name, tuple(argv), started_by, process, output)
        self._runs[name] = run
        _exit_on_sigterm()
        return run

    def take(self, name: str) -> Run | None:
        """The run started ahead for stage `name`, handed over once (None: none was started)."""
        return self._runs.pop(name, None)

    def names(self) -> tuple[str, ...]:
        return tuple(self._runs)

    def stop_all(self) -> None:
        """End every run no session took (nox stopped early: -x, Ctrl-C, an error)."""
        runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            if run.process.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.process.pid, signal.SIGTERM)
        for run in runs:
            try:
                run.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(run.process.pid, signal.SIGKILL)
                run.process.wait()
            run.output.close()


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _exit_on_sigterm() -> None:
    """SIGTERM (a cancelled job, `kill`) ends nox through its exit handlers, so stop_all
    ends the runs too: they are in sessions of their own, out of reach of a signal to
    nox's process group. A handler someone else installed is kept."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
