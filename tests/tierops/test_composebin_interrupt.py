"""A render that hangs does not hold an interrupted run: SIGTERM ends the compose
processes at once and the run exits 143, instead of waiting out their timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from tests.conftest import ROOT


def test_sigterm_kills_the_renders_in_flight_and_exits_143(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    sleeper = tmp_path / "compose"
    sleeper.write_text(f"#!/bin/sh\necho $$ >> {pids}\nexec sleep 300\n", encoding="utf-8")
    sleeper.chmod(0o755)
    compose_file = tmp_path / "compose.yaml"
    compose_file.write_text("services: {}\n", encoding="utf-8")
    script = textwrap.dedent(
        f"""
        from pathlib import Path
        from tierops.composebin import ComposeBinary, run_config_many
        from tierops.entry import launch

        def main() -> int:
            run_config_many(ComposeBinary(({str(sleeper)!r},), "a hanging compose", "0"),
                            [Path({str(compose_file)!r})] * 2, env_file=Path({str(compose_file)!r}))
            return 0

        launch(main)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (pids.exists() and len(pids.read_text().split()) == 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143
    assert time.monotonic() - started < 10
    assert "Traceback" not in err
    for pid in pids.read_text().split():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            continue
        # a zombie is reaped by init; a live sleeper is a leak
        state = (
            Path(f"/proc/{pid}/stat").read_text().split()[2] if Path(f"/proc/{pid}/stat").exists() else "X"
        )
        assert state in ("Z", "X"), f"compose process {pid} still runs"
