"""Does each host run what git says it should? Drift between compose-manager and the tags.

For every host of the endpoints file and every prod file the fleet's data places on it,
compose-manager's `GET /version` says which tag and file (and its sha256) the file's
project last deployed, and `GET /docker/ps` which containers run. Each is compared with
git: the deployed tag against the newest release tag that has the file, the deployed
file's sha256 against the file at that tag, the running services against the services
the file defines at that tag (missing ones, and extra ones: orphans), and each
container's image against its definition's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rollout import git
from rollout.diff.forms import load_documents
from rollout.diff.snapshot import DEFAULT_PATHS
from rollout.plan import deployer
from rollout.plan.deploy import Host, labels_of, ps_rows
from rollout.plan.fleet import Placement
from rollout.release import tagset
from tierops.errors import InputError
from tierops.roles import Role, roles_of


@dataclass(frozen=True)
class Drift:
    host: str
    project: str
    file: str
    service: str  # "" for the file as a whole
    what: str

    def line(self) -> str:
        where = f"{self.file} {self.service}".strip()
        return f"{self.host} [{self.project}] {where}: {self.what}"

    def to_json(self) -> dict[str, str]:
        return {
            "host": self.host,
            "project": self.project,
            "file": self.file,
            "service": self.service,
            "what": self.what,
        }


@dataclass(frozen=True)
class Seen:
    host: str
    project: str
    file: str
    tag: str | None
    newest: str | None
    drift: tuple[Drift, ...]


def status(
    repo: Path, hosts: Mapping[str, Host], placements: Mapping[str, Placement], tags: tagset.TagSet
) -> list[Seen]:
    """What every host runs, file by file; raises Unreachable for a host that does not answer."""
    seen: list[Seen] = []
    for name, host in hosts.items():
        files = [stem for stem, placement in sorted(placements.items()) if name in placement.hosts]
        if not files:
            continue
        version = host.get("/version")
        ps = str(host.get("/docker/ps").get("output") or "")
        for stem in files:
            placement = placements[stem]
            project = placement.project or deployer.load().default_project
            seen.append(_one(repo, name, project, f"{DEFAULT_PATHS[0]}/{stem}.yaml", version, ps, tags))
    return seen


def _one(
    repo: Path, host: str, project: str, file: str, version: Mapping[str, Any], ps: str, tags: tagset.TagSet
) -> Seen:
    drift: list[Drift] = []

    def say(what: str, service: str = "") -> None:
        drift.append(Drift(host, project, file, service, what))

    # A host's reply of another shape reads as nothing deployed, never as a crash.
    projects = version.get("projects")
    entry = projects.get(project) if isinstance(projects, dict) else None
    current = entry.get("current") if isinstance(entry, dict) else None
    deployed = current if isinstance(current, dict) else {}
    if not deployed and project == deployer.load().default_project and version.get("tag"):
        deployed = {key: version.get(key) for key in ("tag", "file", "file_sha256")}
    with_file = [tag for tag in tags.releases if file in tag.record.digests]
    newest = with_file[-1] if with_file else None
    tag = deployed.get("tag")
    if not tag:
        say("nothing deployed under this project")
        return Seen(host, project, file, None, newest.name if newest else None, tuple(drift))
    if deployed.get("file") and deployed["file"] != file:
        say(f"the project last deployed {deployed['file']}, not this file")
    known = next((release_tag for release_tag in tags.releases if release_tag.name == tag), None)
    if known is None:
        say(f"deployed {tag}, which is not a release tag of this clone (git fetch --tags?)")
    elif newest is not None and known.number < newest.number:
        say(f"deployed {tag}; the newest release with this file is {newest.name}")
    data = git.show(repo, known.commit, file) if known else None
    if known is not None and data is None:
        say(f"{file} does not exist at {tag}")
    if data is not None:
        if deployed.get("file_sha256") and hashlib.sha256(data).hexdigest() != deployed["file_sha256"]:
            say(f"the deployed file's sha256 is not that of {file} at {tag}")
        _services(data, file, tag or "", project, ps, say)
    return Seen(host, project, file, tag, newest.name if newest else None, tuple(drift))


def _services(data: bytes, file: str, tag: str, project: str, ps: str, say: Callable[..., None]) -> None:
    try:
        (document,) = load_documents(data, where=f"{file} at {tag}")
    except InputError as exc:
        say(f"{file} at {tag} cannot be read: {exc}")
        return
    defined: dict[str, Mapping[str, Any]] = {
        str(name): service for name, service in (document.get("services") or {}).items()
    }
    running: dict[str, Mapping[str, Any]] = {}
    for row in ps_rows(ps):
        labels = labels_of(row)
        if labels.get("com.docker.compose.project") == project:
            running[labels.get("com.docker.compose.service", "")] = row
    roles = roles_of(document)
    for name, service in defined.items():
        # A service behind a profile runs only when an up names it, and a one-shot job
        # (the model downloader) has exited once done: neither is drift when absent.
        if name not in running and not service.get("profiles") and roles.get(name) is not Role.ONE_SHOT:
            say("not running", name)
        elif name in running and isinstance(service.get("image"), str):
            image = running[name].get("Image")
            if image != service["image"]:
                say(f"runs {image}, its definition at {tag} says {service['image']}", name)
    for name in sorted(set(running) - set(defined)):
        say(f"runs, but {file} at {tag} does not define it (an orphan)", name)


def render_text(seen: Sequence[Seen]) -> str:
    lines: list[str] = []
    for entry in seen:
        where = f"{entry.host} [{entry.project}] {entry.file}"
        if not entry.drift:
            lines.append(f"{where}: in sync at {entry.tag}")
        else:
            lines += [f"DRIFT {drift.line()}" for drift in entry.drift]
    return "\n".join(lines) + ("\n" if lines else "")


def render_json(seen: Sequence[Seen]) -> dict[str, Any]:
    return {
        "format": "tierops.rollout.status/1",
        "files": [
            {
                "host": entry.host,
                "project": entry.project,
                "file": entry.file,
                "deployed": entry.tag,
                "newest": entry.newest,
                "in_sync": not entry.drift,
                "drift": [drift.to_json() for drift in entry.drift],
            }
            for entry in seen
        ],
    }
