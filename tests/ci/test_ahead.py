"""ci/ahead.py: stage commands started ahead of their nox session (real processes, no nox)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from ci import ahead

PY = sys.executable


def test_a_run_started_ahead_gives_its_exit_code_and_all_its_output_in_order(tmp_path: Path) -> None:
    runs = ahead.Ahead()
    script = "import sys; print('out 1', flush=True); print('err 2', file=sys.stderr, flush=True); print('out 3'); sys.exit(3)"
    runs.start(
        "validate", [PY, "-c", script], dict(os.environ), tmp_path, started_by="by the generated session"
    )
    run = runs.take("validate")
    assert run is not None and run.started_by == "by the generated session"
    code, output = run.finish()
    assert code == 3
    assert output.decode().splitlines() == ["out 1", "err 2", "out 3"]
    assert runs.take("validate") is None  # handed over once


def test_output_larger_than_a_pipe_never_stalls_the_command(tmp_path: Path) -> None:
    runs = ahead.Ahead()
    runs.start("lint", [PY, "-c", "print('x' * 1_000_000)"], dict(os.environ), tmp_path, started_by="t")
    time.sleep(0.05)
    run = runs.take("lint")
    assert run is not None
    code, output = run.finish()
    assert code == 0 and len(output) == 1_000_001


def test_runs_no_session_took_are_stopped_with_their_children(tmp_path: Path) -> None:
    runs = ahead.Ahead()
    marker = tmp_path / "child.pid"
    # a command that starts a child of its own and both sleep: stop_all ends the whole group
    script = (
        "import subprocess, sys, time; "
        f"child = subprocess.Popen([{PY!r}, '-c', 'import time; time.sleep(60)']); "
        f"open({str(marker)!r}, 'w').write(str(child.pid)); time.sleep(60)"
    )
    run = runs.start("typecheck", [PY, "-c", script], dict(os.environ), tmp_path, started_by="t")
    deadline = time.monotonic() + 10
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    child = int(marker.read_text())
    started = time.monotonic()
    runs.stop_all()
    assert time.monotonic() - started < 5
    assert run.process.returncode is not None and run.process.returncode < 0
    deadline = time.monotonic() + 5
    while _alive(child):
        assert time.monotonic() < deadline, "the command's own child outlived stop_all"
        time.sleep(0.02)
    assert runs.names() == ()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its dead parent's reaper) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def test_the_environment_is_the_one_nox_gives_a_session_command(tmp_path: Path) -> None:
    base = {"PATH": "/usr/bin:/bin", "PYTHONHOME": "/elsewhere", "KEEP": "1"}
    env = ahead.venv_environment(tmp_path / "venv", base, {"SKIP": "generated", "TIEROPS_CHECK_RUN": "r1"})
    assert env["PATH"] == f"{tmp_path / 'venv' / 'bin'}{os.pathsep}/usr/bin:/bin"
    assert env["VIRTUAL_ENV"] == str(tmp_path / "venv")
    assert "PYTHONHOME" not in env
    assert env["KEEP"] == "1" and env["SKIP"] == "generated" and env["TIEROPS_CHECK_RUN"] == "r1"


def test_a_program_is_taken_from_the_environment_or_not_at_all(tmp_path: Path) -> None:
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    program = bin_dir / "python"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    assert ahead.resolve(["python", "-m", "ci.stage"], tmp_path / "venv") == [str(program), "-m", "ci.stage"]
    # mypy is not in that environment: never fall back to one on PATH
    assert ahead.resolve(["mypy"], tmp_path / "venv") is None


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("1", True), ("0", False), ("off", False), ("No", False)]
)
def test_the_switch(value: str | None, on: bool) -> None:
    environ = {} if value is None else {ahead.SWITCH: value}
    assert ahead.enabled(environ) is on


def test_a_terminated_nox_ends_the_runs_it_started(tmp_path: Path) -> None:
    """SIGTERM to the process holding the runs (nox) ends them too, not only Ctrl-C."""
    import signal
    import subprocess
    import textwrap

    marker = tmp_path / "run.pid"
    script = textwrap.dedent(
        f"""
        import os, sys, time
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from ci import ahead
        runs = ahead.Ahead()
        run = runs.start("lint", [{PY!r}, "-c", "import time; time.sleep(60)"], dict(os.environ), Path("."), "t")
        Path({str(marker)!r}).write_text(str(run.process.pid))
        time.sleep(60)
        """
    )
    holder = subprocess.Popen([PY, "-c", script])
    deadline = time.monotonic() + 10
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    started = int(marker.read_text())
    holder.send_signal(signal.SIGTERM)
    assert holder.wait(timeout=10) == 128 + signal.SIGTERM
    deadline = time.monotonic() + 5
    while _alive(started):
        assert time.monotonic() < deadline, "the run outlived the terminated nox"
        time.sleep(0.02)
