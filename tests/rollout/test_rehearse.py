"""`python -m rollout.rehearse` on a real Docker daemon, with compose files of our own.

A sound stack passes every probe and leaves nothing behind; copies broken the way prod
files break (a front door on the wrong port, a healthcheck that cannot pass, engines
never restarted, a PID 1 deaf to SIGTERM) fail at the probe that names the fault and
show the container's log lines. Skipped without a daemon, failed instead under
TIEROPS_REQUIRE_DOCKER=1 (tests/dockerkit.py). The first run on a machine builds the
images (about a minute, from Debian packages); later runs find them by tag.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rollout.rehearse import cli as rehearse_cli
from rollout.rehearse.cli import main
from tests.dockerkit import daemon

FIXTURES = Path(__file__).parent / "fixtures" / "rehearse"
ENV = ["--env-file", str(FIXTURES / "dummy.env")]


def rehearse(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    daemon()
    code = main([*ENV, *args])
    out, err = capsys.readouterr()
    return code, out + err


def leftovers(project: str) -> list[str]:
    out = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return out.stdout.split()


def project_of(out: str) -> str:
    found = re.search(r"project (rehearse-[0-9a-f]+)", out)
    assert found, out
    return found.group(1)


PROBES = ("up", "healthy", "front-door", "server-info", "restart", "stop")


def test_a_sound_stack_passes_every_probe_with_each_change_listed_and_leaves_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    under_way: list[str] = []
    monkeypatch.setattr(rehearse_cli, "progress", under_way.append)
    code, out = rehearse(capsys, str(FIXTURES / "good.yaml"))
    assert code == 0, out
    for probe in PROBES:
        assert re.search(rf"^  ok   {probe} ", out, re.MULTILINE), (probe, out)
    # each probe is announced before it runs (a live line on a terminal)
    assert under_way == [f"good.yaml: probe {probe} ({n} of 6)" for n, probe in enumerate(PROBES, 1)]
    assert "door:8000 (http) -> 2 engine(s); door:8001 (http) answers, routes no completion" in out
    assert "engine-a: GPU reservation removed (no GPUs here)" in out
    assert re.search(r"engine-b: image registry\.invalid/engine@sha256:0+ -> tierops-rehearse/engine:", out)
    assert "balancer: volume /etc/tierops-fixture/signing -> " in out
    assert "door: ports -> 127.0.0.1::8000, 127.0.0.1::8001" in out
    # What the file runs as it is: never listed as a change.
    assert "healthcheck" not in out and "command" not in out
    assert leftovers(project_of(out)) == []


def test_a_front_door_pointed_at_the_wrong_port_fails_the_front_door_probe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = rehearse(capsys, str(FIXTURES / "wrong-port.yaml"))
    assert code == 1, out
    assert re.search(
        r"FAIL front-door: no published port of door reaches the engines: door:8000 \(http\) answered 502",
        out,
    ), out
    assert "--- last 20 log lines of door ---" in out
    assert re.search(r"connect\(\) failed .*upstream: \"http://[\d.]+:8001/", out), (
        out
    )  # nginx says where it tried
    assert leftovers(project_of(out)) == []


def test_a_healthcheck_that_cannot_pass_fails_the_healthy_probe(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = rehearse(capsys, str(FIXTURES / "sick-healthcheck.yaml"))
    assert code == 1, out
    assert re.search(r"FAIL healthy: engine-[ab] is unhealthy", out), out
    assert re.search(r"--- last 20 log lines of engine-[ab] ---\nstand-in ", out), out
    assert leftovers(project_of(out)) == []


def test_an_engine_that_is_never_restarted_fails_the_restart_probe(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = rehearse(capsys, str(FIXTURES / "no-restart.yaml"))
    assert code == 1, out
    assert 'FAIL restart: engine-a stays down after a crash: its restart policy is "no"' in out


def test_a_pid_1_that_ignores_sigterm_fails_the_stop_probe(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = rehearse(capsys, str(FIXTURES / "ignores-sigterm.yaml"))
    assert code == 1, out
    assert re.search(
        r"FAIL stop: stop took [\d.]+ s: announcer \(ignored SIGTERM, killed after its 1 s grace; without init\)",
        out,
    ), out
    assert "engine-a (" not in out.split("FAIL stop", 1)[1].split("\n", 1)[0]


def test_keep_leaves_the_stack_running_and_says_how_to_take_it_down(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out = rehearse(capsys, "--keep", str(FIXTURES / "good.yaml"))
    project = project_of(out)
    try:
        assert code == 0, out
        assert leftovers(project)
        assert f"kept: project {project} (docker compose -p {project} -f " in out
    finally:
        subprocess.run(
            ["docker", "rm", "-f", *leftovers(project)], capture_output=True, check=False, timeout=120
        )
        subprocess.run(
            ["docker", "network", "rm", f"{project}_inner"], capture_output=True, check=False, timeout=60
        )


@pytest.mark.parametrize("signals", [1, 2], ids=["once", "again during the clean-up"])
def test_sigterm_mid_rehearsal_takes_the_stack_down_and_exits_143(signals: int) -> None:
    """A second SIGTERM (an impatient operator, a CI runner's follow-up) while the stack
    goes down must not cut the clean-up short."""
    daemon()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.rehearse", *ENV, str(FIXTURES / "good.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("  ok   up "):
            proc.terminate()
            break
    if signals == 2:
        time.sleep(0.3)
        proc.terminate()
    rest, _ = proc.communicate(timeout=120)
    out = "".join(seen) + rest
    assert proc.returncode == 143, out
    assert "terminated" in out
    assert leftovers(project_of(out)) == []
