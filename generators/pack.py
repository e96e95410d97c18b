"""A pack (`<pack>.pack.yaml`): several stacks in one file on one host.

Each key of a pack file is one production file. Its `members` are stacks of the same
directory (each a `<stack>.source.yaml`): every member brings its engines and its own
per-model services (downloader, proxy); the host's services (front door, registrar,
metrics exporter, collector) are the pack's own, once per file, from the parts file.
The GPUs stay where each member's source assigns them; two engines on one GPU must be
declared under `gpu_sharing`, with the reason, or the pack is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generators.parts import apply_parts
from generators.reader import Reader, fleet_relative
from generators.source import GenerationRefused, Source, Target, engine_name, read_images
from generators.targets import TIERS, file_entries, replica_features
from tierops.yamlio import Mark

PACK_SUFFIX = ".pack.yaml"
PACK_KEYS = (
    "tier", "hosts", "host_variables", "name", "members", "gpu_sharing", "images", "parts",
    "services", "scrape", "volumes", "networks",
)  # fmt: skip
MEMBER_KEYS = ("port", "replicas")
SHARING_KEYS = ("gpu", "engines", "reason")
# The roles a pack holds once for the whole host; a member's services of these roles
# are left out of the pack's file.
HOST_ROLES = ("front-door", "registrar", "metrics-exporter", "collector")
# Ports the pack's front door keeps for itself (its health check listens on 8000).
_RESERVED_PORTS = {8000}


@dataclass(frozen=True)
class Member:
    """One stack of a pack: its source, its replicas' features, and its public port."""

    stack: str
    source: Source
    target: Target
    port: int


@dataclass(frozen=True)
class Sharing:
    """Engines declared to share one GPU, and why."""

    gpu: str
    engines: tuple[str, ...]
    reason: str
    where: Mark


@dataclass(frozen=True)
class Pack:
    name: str
    display: str
    tier: str
    hosts: tuple[str, ...]
    project: str
    members: tuple[Member, ...]
    sharing: tuple[Sharing, ...]
    images: Mapping[str, str]
    services: Mapping[str, Any]
    scrape_ports: Mapping[str, int]
    volumes: Any
    networks: Any
    configs: Mapping[str, str]
    collector_config: Any
    where: Mark

    @property
    def filename(self) -> str:
        return f"{self.name}.yaml"


def load_packs(path: Path, sources: Mapping[str, Source]) -> list[Pack]:
    """Every pack of one pack file; `sources` are the directory's stacks by name."""
    r, entries = file_entries(path, "pack")
    packs: list[Pack] = []
    for name, spec, where in entries:
        pack = _pack(r, path, name, spec, where, sources)
        if pack is not None:
            packs.append(pack)
    if r.problems:
        raise GenerationRefused(r.problems)
    return packs


def _pack(
    r: Reader, path: Path, name: str, spec: Any, where: Mark, sources: Mapping[str, Source]
) -> Pack | None:
    r.known(spec, PACK_KEYS, f"pack '{name}'")
    tier = r.scalar(spec, "tier", str)
    if tier is not None and tier not in TIERS:
        r.fail(r.at(spec, "tier"), f"pack '{name}': tier must be one of {', '.join(TIERS)}, not '{tier}'")
    hosts = r.strings(spec, "hosts") or ()
    if "host_variables" in spec:
        r.strings(spec, "host_variables")
    # The file's compose project (`name:`); the parts' {project} is filled with it.
    project = r.scalar(spec, "name", str) or ""
    target_of = _target_maker(name, tier or "", hosts, where)
    members = _members(r, name, spec, sources, target_of)
    if not members and "members" in spec:
        r.fail(r.at(spec, "members"), f"pack '{name}': members must name at least one stack")
    _distinct(r, name, members, r.at(spec, "members") if "members" in spec else where)
    sharing = _sharing(r, name, spec, members)
    # The host's services: the pack's own, built from the parts like a stack's sidecars.
    host = {key: spec[key] for key in ("parts", "services") if key in spec}
    host["project"] = project
    apply_parts(r, host, path)
    services = host.get("services") or {}
    images = read_images(r, spec) if "images" in spec else {}
    for service, body in services.items():
        role = body.get("role") if hasattr(body, "get") else None
        if hasattr(body, "get") and "part" not in body and body.get("image") not in images:
            r.fail(
                r.at(body, "image"),
                f"{service}: image must name an entry of the pack's images: ({', '.join(images)})",
            )
        if role not in HOST_ROLES:
            r.fail(
                r.at(services, service),
                f"pack '{name}': {service} has role {role!r}; a pack's own services are the host's ({', '.join(HOST_ROLES)})",
            )
    scrape: dict[str, int] = {}
    for service, port in (r.mapping(spec, "scrape", required=False) or {}).items():
        if service not in services or not isinstance(port, int) or isinstance(port, bool):
            r.fail(
                r.at(spec["scrape"], service),
                f"scrape: '{service}' must be a service of the pack, with an int port",
            )
        else:
            scrape[str(service)] = port
    return Pack(
        name=name,
        display=fleet_relative(path),
        tier=tier or "",
        hosts=tuple(hosts),
        project=project,
        members=tuple(members),
        sharing=sharing,
        images=images,
        services=services,
        scrape_ports=scrape,
        volumes=spec.get("volumes"),
        networks=spec.get("networks"),
        configs={str(k): str(v) for k, v in (host.get("configs") or {}).items()},
        collector_config=host.get("collector_config"),
        where=where,
    )


def _members(r: Reader, name: str, spec: Any, sources: Mapping[str, Source], target_of: Any) -> list[Member]:
    """The pack's members: known stacks, each on a port of its own."""
    members: list[Member] = []
    ports: dict[int, str] = {}
    for stack, body in (r.mapping(spec, "members") or {}).items():
        mwhere = r.at(spec["members"], stack)
        source = sources.get(str(stack))
        if source is None:
            r.fail(mwhere, f"pack '{name}': no stack '{stack}' (stacks: {', '.join(sources)})")
            continue
        if not hasattr(body, "items"):
            r.fail(
                mwhere, f"pack '{name}', member {stack}: write `{{port: N, replicas: {{r1: [features]}}}}`"
            )
            continue
        r.known(body, MEMBER_KEYS, f"pack '{name}', member {stack}")
        port = r.scalar(body, "port", int)
        if port is not None:
            if port in _RESERVED_PORTS or not 1024 <= port <= 65535:
                r.fail(
                    r.at(body, "port"),
                    f"member {stack}: port {port} is reserved or out of range (1024-65535, not 8000)",
                )
            elif port in ports:
                r.fail(r.at(body, "port"), f"member {stack}: port {port} is already {ports[port]}'s")
            else:
                ports[port] = str(stack)
        replicas = replica_features(r, name, source, r.mapping(body, "replicas") or {})
        members.append(Member(str(stack), source, target_of(replicas), port or 0))
    return members


def _target_maker(name: str, tier: str, hosts: tuple[str, ...], where: Mark) -> Any:
    def make(replicas: Mapping[str, Any]) -> Target:
        return Target(
            name=name,
            tier=tier,
            hosts=hosts,
            profile=None,
            discovery_port=None,
            registrar_environment={},
            replicas=dict(replicas),
            where=where,
        )

    return make


def _distinct(r: Reader, name: str, members: list[Member], where: Mark) -> None:
    """Members of one file cannot both define a service (or an engine) of one name."""
    owner: dict[str, str] = {}
    for member in members:
        names = [engine_name(member.source, replica) for replica in member.target.replicas]
        names += [
            str(service)
            for service, body in member.source.services.items()
            if not hasattr(body, "get") or body.get("role") not in HOST_ROLES
        ]
        for service in names:
            if service in owner and owner[service] != member.stack:
                r.fail(
                    where,
                    f"pack '{name}': service {service} is defined by members {owner[service]} and {member.stack}; rename one",
                )
            owner.setdefault(service, member.stack)


def engine_gpus(members: tuple[Member, ...] | list[Member]) -> dict[str, tuple[str, ...]]:
    """Each engine of the pack and the GPUs its member's source assigns it."""
    return {
        engine_name(member.source, replica): member.source.replicas[replica].gpus
        for member in members
        for replica in member.target.replicas
    }


def _sharing(r: Reader, name: str, spec: Any, members: list[Member]) -> tuple[Sharing, ...]:
    """The declared GPU sharing, checked against where the members put their engines:
    every GPU two engines use is declared, and every declaration names the engines on it."""
    gpus = engine_gpus(members)
    on: dict[str, list[str]] = {}
    for engine, assigned in gpus.items():
        for gpu in assigned:
            on.setdefault(gpu, []).append(engine)
    declared: list[Sharing] = []
    raw = spec.get("gpu_sharing") or []
    if not isinstance(raw, list):
        r.fail(r.at(spec, "gpu_sharing"), f"pack '{name}': gpu_sharing is a list of {{gpu, engines, reason}}")
        raw = []
    for index, item in enumerate(raw):
        iwhere = r.at(raw, index)
        if not hasattr(item, "items"):
            r.fail(iwhere, 'a gpu_sharing entry is written `{gpu: "0", engines: [...], reason: ...}`')
            continue
        r.known(item, SHARING_KEYS, "gpu_sharing entry")
        gpu = r.scalar(item, "gpu", str)
        engines = r.strings(item, "engines") or ()
        reason = r.scalar(item, "reason", str)
        if gpu is None or reason is None:
            continue
        if not reason.strip():
            r.fail(r.at(item, "reason"), f"gpu_sharing on GPU {gpu}: say why the engines share it")
        actual = on.get(gpu, [])
        if sorted(engines) != sorted(actual):
            r.fail(
                iwhere,
                f"gpu_sharing on GPU {gpu} names {', '.join(engines) or 'no engine'}, but the engines on it are {', '.join(actual) or 'none'}",
            )
        declared.append(Sharing(gpu, tuple(engines), reason, iwhere))
    covered = {sharing.gpu for sharing in declared}
    for gpu, held in sorted(on.items(), key=lambda item: int(item[0]) if item[0].isdigit() else -1):
        if len(held) > 1 and gpu not in covered:
            r.fail(
                r.at(spec, "members"),
                f"pack '{name}': GPU {gpu} is assigned to {', '.join(held)}; declare it under gpu_sharing "
                "(with the reason) or give each engine its own GPU",
            )
    return tuple(declared)
