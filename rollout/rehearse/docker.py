"""A Docker daemon that answers, and a `docker compose` that works with it.

The daemon is used as found when `docker info` answers (never stopped by us). When
none answers and we are root, `dockerd` is started (Debian's `docker.io` installed
with apt-get first when missing), and stopped again when the rehearsal ends. Compose is
the pinned Compose v2 binary (tierops.composebin) as the CLI plugin of a private
DOCKER_CONFIG, so the operator's own Docker configuration is neither read nor changed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tierops.composebin import ComposeUnavailable, find_compose
from tierops.errors import TieropsError
from tierops.exitcodes import ExitCode

# Every docker call is bounded: a wedged daemon must not hang a rehearsal (or CI).
CALL_TIMEOUT_S = 300.0
DAEMON_START_S = 60.0


class NoDocker(TieropsError):
    """No Docker daemon can be had here (exit 3)."""

    # 3 is this tool's "Docker cannot be had" (docs/rehearsal.md), not an internal error.
    exit_code = ExitCode(3)


@dataclass(frozen=True)
class Docker:
    env: dict[str, str]  # DOCKER_CONFIG with the pinned Compose as its CLI plugin

    def call(
        self, args: Sequence[str], *, timeout: float = CALL_TIMEOUT_S, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["docker", *args],
                env=self.env,
                input=stdin.decode() if stdin is not None else None,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(["docker", *args], 124, "", f"timed out after {timeout:.0f} s")

    def out(self, args: Sequence[str], *, timeout: float = CALL_TIMEOUT_S) -> str:
        """stdout of a docker command that must succeed (else an error with its last stderr line)."""
        proc = self.call(args, timeout=timeout)
        if proc.returncode != 0:
            raise TieropsError(f"docker {' '.join(args[:3])}...: {last_line(proc.stderr)}")
        return proc.stdout


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _info() -> tuple[bool, str]:
    try:
        probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        return False, "`docker info` did not answer within 30 s"
    except OSError as error:
        return False, f"cannot run docker: {error}"
    return probe.returncode == 0, last_line(probe.stderr)


def _apt_install(packages: Sequence[str], why: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"rehearse: installing {' '.join(packages)} with apt-get ({why})", flush=True)
    for args in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", *packages]):
        proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900, check=False)
        if proc.returncode != 0:
            raise NoDocker(f"`{' '.join(args)}` failed: {last_line(proc.stderr)}")


def ensure_daemon(log_dir: Path) -> subprocess.Popen[bytes] | None:
    """Return when `docker info` answers: None when a daemon already ran, else the dockerd
    started here (root only; the caller stops it). Without one: NoDocker with the reason."""
    if shutil.which("docker") is not None:
        answers, why = _info()
        if answers:
            return None
    else:
        why = "no docker client on PATH"
    if os.geteuid() != 0:
        raise NoDocker(f"no Docker daemon answers ({why}) and only root may start one here")
    if shutil.which("dockerd") is None or shutil.which("docker") is None:
        _apt_install(["docker.io"], "no dockerd on this machine")
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / "dockerd.log"
    print(f"rehearse: starting dockerd (log: {log}); it stops when the rehearsal ends", flush=True)
    with log.open("ab") as sink:
        daemon = subprocess.Popen(["dockerd"], stdout=sink, stderr=sink, start_new_session=True)
    deadline = time.monotonic() + DAEMON_START_S
    while time.monotonic() < deadline:
        answers, why = _info()
        if answers:
            return daemon
        time.sleep(1)
    stop_daemon(daemon)
    raise NoDocker(
        f"dockerd started but `docker info` still fails after {DAEMON_START_S:.0f} s: {why} (see {log})"
    )


def stop_daemon(daemon: subprocess.Popen[bytes] | None) -> None:
    """Stop a dockerd this rehearsal started (SIGTERM, then SIGKILL after 30 s)."""
    if daemon is None or daemon.poll() is not None:
        return
    daemon.terminate()
    try:
        daemon.wait(timeout=30)
    except subprocess.TimeoutExpired:
        daemon.kill()
        daemon.wait()


_config: list[Path] = []


def compose_docker() -> Docker:
    """A Docker handle whose `docker compose` is the pinned Compose v2 (a private DOCKER_CONFIG)."""
    try:
        compose = find_compose(use_path=False)
    except ComposeUnavailable as error:
        try:
            compose = find_compose(use_path=True)
        except ComposeUnavailable:
            raise NoDocker(f"no Docker Compose v2: {error}") from None
    env = {**os.environ, "DOCKER_BUILDKIT": "0"}
    if len(compose.argv) == 1:
        if not _config:
            config = Path(tempfile.mkdtemp(prefix="tierops-rehearse-docker-config-"))
            atexit.register(shutil.rmtree, config, ignore_errors=True)  # one a process, removed at its end
            (config / "cli-plugins").mkdir()
            (config / "cli-plugins" / "docker-compose").symlink_to(compose.argv[0])
            _config.append(config)
        env["DOCKER_CONFIG"] = str(_config[0])
    return Docker(env)
