"""The rehearsal's images, built here from Debian packages only (no image registry is reached).

A root filesystem made by `debootstrap --variant=minbase` with python3, nginx, curl
and wget is imported as `tierops-rehearse/rootfs:<hash>`; small images on top of it
carry the stand-ins (standin.py) and each role's default command. Every tag is a hash
of what went into it, so an image is built once and found by its tag afterwards: a
second rehearsal builds nothing.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rollout.rehearse.docker import Docker, NoDocker, last_line
from tierops.errors import TieropsError

# What the stand-ins and the file's own programs need: python3 for the stand-ins,
# nginx for a front door, curl/wget for healthchecks and registrars, tini as `init`.
PACKAGES = ("python3", "nginx-light", "curl", "wget", "ca-certificates", "procps")
MIRROR = os.environ.get("TIEROPS_REHEARSE_MIRROR", "http://deb.debian.org/debian")
STANDIN = Path(__file__).with_name("standin.py")
HOME = "/opt/tierops-rehearse"
# Bumped when the way an image is built changes without its inputs changing.
RECIPE = "2"


@dataclass(frozen=True)
class Role:
    name: str
    dockerfile_tail: str  # the role's own lines after FROM the stand-in image


ROLES = (
    # Engines run the file's own command (`sglang serve ...`): the image's programs answer it.
    Role("engine", ""),
    Role("nginx", 'STOPSIGNAL SIGQUIT\nCMD ["nginx", "-g", "daemon off;"]\n'),
    Role("curl", 'ENTRYPOINT ["curl"]\n'),
    Role("proxy", f'CMD ["python3", "{HOME}/standin.py", "proxy"]\n'),
    Role("gateway", f'CMD ["python3", "{HOME}/standin.py", "gateway", "8000"]\n'),
    Role("idle", f'ENTRYPOINT ["python3", "{HOME}/standin.py", "idle"]\n'),
)

WRAPPERS = {
    "bin/sglang": f'#!/bin/sh\nexec python3 {HOME}/standin.py engine sglang "$@"\n',
    "bin/vllm": f'#!/bin/sh\nexec python3 {HOME}/standin.py engine vllm "$@"\n',
    "bin/hf": f'#!/bin/sh\nexec python3 {HOME}/standin.py noop hf "$@"\n',
    "bin/huggingface-cli": f'#!/bin/sh\nexec python3 {HOME}/standin.py noop huggingface-cli "$@"\n',
    # `python3 -m sglang.launch_server ...` and vLLM's api_server module form.
    "py/sglang/__init__.py": "",
    "py/sglang/launch_server.py": (
        f"import sys\nsys.path.insert(0, '{HOME}')\nimport standin\n"
        "sys.exit(standin.main(['engine', 'sglang', *sys.argv[1:]]))\n"
    ),
    "py/vllm/__init__.py": "",
    "py/vllm/entrypoints/__init__.py": "",
    "py/vllm/entrypoints/openai/__init__.py": "",
    "py/vllm/entrypoints/openai/api_server.py": (
        f"import sys\nsys.path.insert(0, '{HOME}')\nimport standin\n"
        "sys.exit(standin.main(['engine', 'vllm', *sys.argv[1:]]))\n"
    ),
}

STANDIN_DOCKERFILE = f"""FROM {{rootfs}}
COPY standin.py {HOME}/standin.py
COPY bin/ /usr/local/bin/
COPY py/ /usr/local/lib/python3/dist-packages/
RUN chmod 0755 /usr/local/bin/* \\
 && rm -f /etc/nginx/sites-enabled/default \\
 && ln -sf /dev/stdout /var/log/nginx/access.log && ln -sf /dev/stderr /var/log/nginx/error.log
"""


def _digest(*parts: str | bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()[:12]


def suite() -> str:
    """The Debian release the image is made of. Not the host's: the front doors' nginx
    configs use directives of nginx 1.25+ (`http2 on;`), which bookworm's 1.22 refuses."""
    return os.environ.get("TIEROPS_REHEARSE_SUITE", "trixie")


@dataclass
class Built:
    tags: dict[str, str]  # role -> image tag
    built: list[str]  # tags built by this run (empty when every image was cached)
    seconds: float


def _exists(docker: Docker, tag: str) -> bool:
    return bool(docker.call(["images", "-q", tag]).stdout.strip())


def _rootfs(docker: Docker, say: Callable[[str], None]) -> tuple[str, bool]:
    release = suite()
    tag = f"tierops-rehearse/rootfs:{_digest(RECIPE, release, MIRROR, *PACKAGES)}"
    if _exists(docker, tag):
        return tag, False
    if shutil.which("debootstrap") is None:
        if os.geteuid() != 0:
            raise NoDocker("building the rehearsal image needs debootstrap, and only root may install it")
        proc = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "debootstrap"],
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise NoDocker(f"apt-get install debootstrap failed: {last_line(proc.stderr)}")
    if os.geteuid() != 0:
        raise NoDocker("building the rehearsal image's root filesystem (debootstrap) needs root")
    say(
        f"building {tag}: debootstrap {release} from {MIRROR} with {', '.join(PACKAGES)} (once; cached by tag)"
    )
    with tempfile.TemporaryDirectory(prefix="tierops-rehearse-rootfs-", dir="/var/tmp") as tmp:
        root = Path(tmp) / "rootfs"
        proc = subprocess.run(
            ["debootstrap", "--variant=minbase", f"--include={','.join(PACKAGES)}", release, str(root), MIRROR],
            capture_output=True, text=True, timeout=1800, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise TieropsError(
                f"debootstrap {release} {MIRROR} failed: {last_line(proc.stdout + proc.stderr)}"
            )
        for waste in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
            shutil.rmtree(root / waste, ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(
            ["docker", "import", "-", tag], stdin=tar.stdout, env=docker.env,
            capture_output=True, text=True, timeout=900, check=False,
        )  # fmt: skip
        if tar.stdout is not None:
            tar.stdout.close()
        tar.wait()
        if imported.returncode != 0 or tar.returncode != 0:
            raise TieropsError(f"docker import {tag} failed: {last_line(imported.stderr)}")
    return tag, True


def _build(docker: Docker, tag: str, dockerfile: str, files: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory(prefix="tierops-rehearse-build-") as tmp:
        for name, text in files.items():
            path = Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        (Path(tmp) / "Dockerfile").write_text(dockerfile, encoding="utf-8")
        # No --pull: FROM names a local image, and the classic builder pulls only what is missing.
        proc = docker.call(["build", "-q", "-t", tag, tmp], timeout=600)
        if proc.returncode != 0:
            raise TieropsError(f"docker build {tag} failed: {last_line(proc.stderr)}")


LOCK = Path(tempfile.gettempdir()) / "tierops-rehearse-images.lock"


def ensure_images(docker: Docker, say: Callable[[str], None]) -> Built:
    """Every role's image, built when its tag is missing. Rehearsals started side by side
    (the tests' workers) take turns, so the first builds and the others find its tags."""
    started = time.monotonic()
    with LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return _ensure(docker, say, started)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _ensure(docker: Docker, say: Callable[[str], None], started: float) -> Built:
    rootfs, made = _rootfs(docker, say)
    built = [rootfs] if made else []
    files = {"standin.py": STANDIN.read_text(encoding="utf-8"), **WRAPPERS}
    standin_file = STANDIN_DOCKERFILE.format(rootfs=rootfs)
    standin = f"tierops-rehearse/standin:{_digest(rootfs, standin_file, repr(sorted(files.items())))}"
    if not _exists(docker, standin):
        say(f"building {standin} (the stand-ins on {rootfs})")
        _build(docker, standin, standin_file, files)
        built.append(standin)
    tags = {}
    for role in ROLES:
        dockerfile = f"FROM {standin}\n{role.dockerfile_tail}"
        tag = f"tierops-rehearse/{role.name}:{_digest(dockerfile)}"
        if not _exists(docker, tag):
            _build(docker, tag, dockerfile, {})
            built.append(tag)
        tags[role.name] = tag
    return Built(tags, built, time.monotonic() - started)
