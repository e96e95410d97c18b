"""A real Docker daemon for the tests that start containers.

Tests that need one call `daemon()`: it answers with a `Docker` handle when `docker
info` does, builds the one image they run (busybox from the Debian package
`busybox-static`, copied into an image from scratch: no registry is reached), and
puts the pinned Compose binary where `docker compose` finds it (a private
DOCKER_CONFIG). Without a daemon the test is skipped with the reason, unless
TIEROPS_REQUIRE_DOCKER=1 (set by `.ci/run`, which starts one): then it fails, so CI
never passes by skipping.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tierops.composebin import find_compose

IMAGE = "tierops-test/busybox:1"
BUSYBOX = (Path("/bin/busybox"), Path("/usr/bin/busybox"))
REQUIRE = "TIEROPS_REQUIRE_DOCKER"
HOW = "as root: apt-get install docker.io busybox-static, then start dockerd"


@dataclass(frozen=True)
class Docker:
    env: dict[str, str]  # DOCKER_CONFIG with the pinned Compose as its CLI plugin

    def run(self, args: list[str], *, cwd: Path | None = None, check: bool = True) -> str:
        proc = subprocess.run(
            ["docker", *args], cwd=cwd, env=self.env, capture_output=True, text=True, timeout=180, check=False
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout + proc.stderr

    def shell(self, line: str, cwd: Path) -> tuple[int, str]:
        """A command line as an operator runs it on the host, in `cwd`."""
        proc = subprocess.run(
            ["bash", "-c", line],
            cwd=cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        return proc.returncode, proc.stdout + proc.stderr


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{REQUIRE}=1 but {reason}")
    pytest.skip(f"{reason} ({HOW})")


_config_dir: list[Path] = []


def daemon() -> Docker:
    if shutil.which("docker") is None:
        _unavailable("no docker client")
    probe = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=60, check=False)
    if probe.returncode != 0:
        _unavailable("no Docker daemon answers")
    busybox = next((path for path in BUSYBOX if path.is_file()), None)
    if busybox is None:
        _unavailable("no static busybox to build the test image from")
    assert busybox is not None
    if not _config_dir:
        config = Path(tempfile.mkdtemp(prefix="tierops-docker-config-"))
        plugins = config / "cli-plugins"
        plugins.mkdir()
        compose = find_compose(use_path=False)
        (plugins / "docker-compose").symlink_to(compose.argv[0])
        _config_dir.append(config)
    env = {**os.environ, "DOCKER_CONFIG": str(_config_dir[0]), "DOCKER_BUILDKIT": "0"}
    docker = Docker(env)
    if not docker.run(["images", "-q", IMAGE]).strip():
        with tempfile.TemporaryDirectory(prefix="tierops-image-") as tmp:
            shutil.copy(busybox, Path(tmp) / "busybox")
            (Path(tmp) / "Dockerfile").write_text(
                'FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n',
                encoding="utf-8",
            )
            docker.run(["build", "-q", "-t", IMAGE, tmp])
    return docker
