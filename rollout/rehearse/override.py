"""The override compose file: the least change that lets a prod file run on this machine.

Input is the file as Compose renders it (`docker compose config --format json`). Every
change is a `Change` with its reason, printed before the stack starts; whatever is not
listed (nginx config, proxies, healthchecks, networks, restart policies, commands,
stop grace periods) runs exactly as the file says. Services are recognised by what
they are, never by name: an engine runs an SGLang or vLLM program, a proxy lists
engines' URLs in its environment, a front door publishes ports.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tierops.argv import engine_program

# The only upstream resolver a rehearsed container gets: its own loopback, where nothing answers.
NO_RESOLVER = "127.0.0.1"
# Read by the stand-in engine: seconds it answers 503 after starting (standin.py).
COLD_START_ENV = "REHEARSE_COLD_START_S"
ENGINE_PROGRAMS = ("sglang", "vllm")
GATEWAY = "tierops-rehearse-gateway"
GATEWAY_PORT = 8000
# Lines of the file's configs that name a TLS certificate or key the front door reads.
TLS_FILE = re.compile(r"^\s*ssl_certificate(?:_key)?\s+([^\s;]+)\s*;", re.MULTILINE)


@dataclass(frozen=True)
class Change:
    service: str
    what: str
    why: str

    def line(self) -> str:
        return f"  {self.service}: {self.what} ({self.why})"


class Tagged:
    """A YAML value with a Compose merge tag (`!reset`, `!override`)."""

    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value


def flow(value: Any) -> str:
    """YAML flow text: JSON for scalars and collections (JSON is YAML), tags where asked."""
    if isinstance(value, Tagged):
        return f"{value.tag} {flow(value.value)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(flow(item) for item in value) + "]"
    return json.dumps(value)


def command_of(service: dict[str, Any]) -> list[str]:
    return [str(part) for part in (service.get("entrypoint") or []) + (service.get("command") or [])]


def engine_kind(service: dict[str, Any]) -> str | None:
    """'sglang' or 'vllm' when the service runs one of those engines: by its command, or by
    its image when the image's own entrypoint is the server (a command of flags only)."""
    for token in command_of(service):
        base = token.rsplit("/", 1)[-1]
        for kind in ENGINE_PROGRAMS:
            if base == kind or base.startswith(kind + "."):
                return kind
    image = service.get("image")
    return engine_program(command_of(service), image if isinstance(image, str) else None)


def by_image_entrypoint(service: dict[str, Any]) -> bool:
    """The engine starts through its image's entrypoint: its words name no engine program."""
    return not any(
        token.rsplit("/", 1)[-1].split(".", 1)[0] in ENGINE_PROGRAMS for token in command_of(service)
    )


def image_program(image: str) -> str:
    """The program an image is named after: `docker.io/library/nginx:1.27@sha256:...` -> nginx."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def url_hosts(value: str) -> set[str]:
    hosts = set()
    for part in re.split(r"[,\s]+", value):
        if "://" in part:
            host = urlsplit(part).hostname
            if host:
                hosts.add(host)
    return hosts


@dataclass
class Stack:
    """What the rehearsal knows of one rendered file."""

    model: dict[str, Any]
    engines: dict[str, str] = field(default_factory=dict)  # service -> sglang | vllm
    proxies: list[str] = field(default_factory=list)
    front_doors: list[str] = field(default_factory=list)
    # Each proxy's pool: the engines its environment names (a file of several models
    # has one proxy, and one pool, per model).
    pools: dict[str, list[str]] = field(default_factory=dict)

    def pool_of(self, engine: str) -> list[str]:
        """The engines balanced together with `engine` (all of them when no proxy names it)."""
        return next((pool for pool in self.pools.values() if engine in pool), list(self.engines))

    @property
    def services(self) -> dict[str, dict[str, Any]]:
        services: dict[str, dict[str, Any]] = self.model.get("services") or {}
        return services

    def names(self, service: str) -> set[str]:
        """The names other containers reach a service by."""
        spec = self.services[service]
        return {service, *([spec["container_name"]] if spec.get("container_name") else [])}


def read_stack(model: dict[str, Any]) -> Stack:
    stack = Stack(model)
    for name, spec in stack.services.items():
        kind = engine_kind(spec)
        if kind:
            stack.engines[name] = kind
    engine_names = {alias for engine in stack.engines for alias in stack.names(engine)}
    for name, spec in stack.services.items():
        if name in stack.engines:
            continue
        env = spec.get("environment") or {}
        named = {host for value in env.values() for host in url_hosts(str(value or ""))} & engine_names
        if named:
            stack.proxies.append(name)
            stack.pools[name] = [engine for engine in stack.engines if stack.names(engine) & named]
        if spec.get("ports"):
            stack.front_doors.append(name)
    return stack


@dataclass
class Override:
    text: str
    changes: list[Change]
    gateway: bool


def _image_role(stack: Stack, name: str, spec: dict[str, Any], engine_images: set[str]) -> tuple[str, str]:
    image = str(spec.get("image") or "")
    if name in stack.engines:
        return "engine", f"{stack.engines[name]} needs GPUs and model weights; a stand-in speaks its HTTP API"
    if image in engine_images:
        return "engine", "the engine image's own tool; the stand-in image's version succeeds at once"
    program = image_program(image)
    if program == "nginx":
        return "nginx", "no registry here: nginx from Debian's package, the file's own config"
    if program == "curl":
        return "curl", "no registry here: curl from Debian's package"
    if name in stack.proxies:
        return "proxy", "no registry here: a stand-in balancing over the same engine URLs"
    return "idle", "its program needs hardware or networks absent here: a stand-in that only waits"


def _tls_files(model: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    """Certificate and key paths the service's configs name (an nginx front door's TLS)."""
    wanted = {str(item.get("source")) for item in spec.get("configs") or []}
    files = []
    for config_name, config in (model.get("configs") or {}).items():
        if config_name in wanted:
            files += TLS_FILE.findall(str(config.get("content") or ""))
    return files


def _self_signed(directory: Path, cert: str, key: str) -> bool:
    directory.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost",
         "-keyout", str(directory / key), "-out", str(directory / cert)],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    return proc.returncode == 0


def _host_paths(
    stack: Stack, name: str, spec: dict[str, Any], work: Path, changes: list[Change]
) -> list[dict[str, Any]]:
    volumes = []
    tls = _tls_files(stack.model, spec)
    for volume in spec.get("volumes") or []:
        if volume.get("type") != "bind":
            continue
        source, target = str(volume["source"]), str(volume["target"])
        local = work / "host" / name / source.strip("/").replace("/", "_")
        local.mkdir(parents=True, exist_ok=True)
        inside = [path[len(target) + 1 :] for path in tls if path.startswith(target.rstrip("/") + "/")]
        why = "a host path of the prod machine; an empty directory here"
        if len(inside) >= 2 and _self_signed(local, inside[0], inside[1]):
            why = f"a host path of the prod machine; here a self-signed {inside[0]} and {inside[1]}"
        entry: dict[str, Any] = {"type": "bind", "source": str(local), "target": target}
        if volume.get("read_only"):
            entry["read_only"] = True
        volumes.append(entry)
        changes.append(Change(name, f"volume {source} -> {local}", why))
    return volumes


# What would give a rehearsed container the host itself: its processes, network, IPC,
# devices or more privileges than a default container. Removed (`!reset`); a stand-in
# needs none of them.
_HOST_ACCESS = ("privileged", "cap_add", "devices", "security_opt", "volumes_from", "group_add")
_HOST_NAMESPACES = ("pid", "ipc", "uts", "userns_mode", "cgroup")


def _host_access(name: str, spec: dict[str, Any], fields: dict[str, Any], changes: list[Change]) -> None:
    why = "a rehearsal never gives a container the host's processes, network, devices or privileges"
    for key in _HOST_ACCESS:
        if spec.get(key):
            fields[key] = Tagged("!reset", None)
            changes.append(Change(name, f"{key} removed", why))
    for key in (*_HOST_NAMESPACES, "network_mode"):
        value = str(spec.get(key) or "")
        if value == "host" or value.startswith(
            "container:"
        ):  # the host's, or a container outside the project
            fields[key] = Tagged("!reset", None)
            changes.append(Change(name, f"{key} {value} removed", why))


def _top_level(model: dict[str, Any], work: Path, changes: list[Change]) -> list[str]:
    """Top-level volumes, secrets and configs that would reach the host: a volume bound to
    a host path or naming an existing one becomes a plain volume of the project, a
    secret or config read from a host file an empty file here."""
    lines: list[str] = []
    volumes = {
        name: spec
        for name, spec in (model.get("volumes") or {}).items()
        if isinstance(spec, dict) and (spec.get("driver_opts") or spec.get("external") or spec.get("driver"))
    }
    if volumes:
        lines.append("volumes:")
        for name in volumes:
            reset = {key: Tagged("!reset", None) for key in ("driver", "driver_opts", "external", "name")}
            lines.append(f"  {json.dumps(name)}: {flow(reset)}")
            changes.append(
                Change(
                    f"volume {name}",
                    "a plain volume of the project",
                    "its host path or existing volume stays untouched",
                )
            )
    for section in ("secrets", "configs"):
        files = {
            name: spec
            for name, spec in (model.get(section) or {}).items()
            if isinstance(spec, dict) and spec.get("file")
        }
        if files:
            lines.append(f"{section}:")
            for name, spec in files.items():
                empty = work / section / name
                empty.parent.mkdir(parents=True, exist_ok=True)
                empty.write_bytes(b"")
                lines.append(f"  {json.dumps(name)}: {flow({'file': str(empty)})}")
                changes.append(
                    Change(
                        f"{section[:-1]} {name}",
                        f"{spec['file']} -> an empty file",
                        "a host file of the prod machine is never read",
                    )
                )
    return lines


def _clamp_ulimits(name: str, spec: dict[str, Any], fields: dict[str, Any], changes: list[Change]) -> None:
    ulimits = _ulimits(spec.get("ulimits") or {})
    if ulimits:
        fields["ulimits"] = ulimits
        for key, value in ulimits.items():
            changes.append(
                Change(
                    name, f"ulimit {key} {spec['ulimits'][key]} -> {value}", "above this machine's hard limit"
                )
            )


def _ulimits(wanted: dict[str, Any]) -> dict[str, int]:
    """The file's ulimits that exceed this machine's hard limits, clamped to them: the
    daemon refuses to start a container asking for more (a prod host raises its own)."""
    clamped = {}
    for key, value in wanted.items():
        resource_id = getattr(resource, f"RLIMIT_{key.upper()}", None)
        if resource_id is None:
            continue
        hard = resource.getrlimit(resource_id)[1]
        asked = [value] if not isinstance(value, dict) else [value.get("soft", -1), value.get("hard", -1)]
        if hard == resource.RLIM_INFINITY:
            continue
        if any(int(limit) < 0 or int(limit) > hard for limit in asked):
            clamped[key] = hard
    return clamped


def _entrypoint(
    stack: Stack, name: str, spec: dict[str, Any], fields: dict[str, Any], changes: list[Change]
) -> None:
    """An engine whose image starts the server itself (a command of flags only): the
    stand-in image has no such entrypoint, so it is given one."""
    if name in stack.engines and by_image_entrypoint(spec):
        kind = stack.engines[name]
        fields["entrypoint"] = [kind, "serve"]
        changes.append(
            Change(
                name,
                f"entrypoint -> {kind} serve",
                "the file's image starts the server itself; the stand-in's does not",
            )
        )


def _outside_services(
    name: str, spec: dict[str, Any], changes: list[Change], gateway_networks: set[str]
) -> dict[str, str]:
    """Environment values naming an outside service (a dummy `.invalid` URL): pointed at
    the stand-in gateway, whose networks are collected."""
    environment = {}
    for key, value in (spec.get("environment") or {}).items():
        if any(host.endswith(".invalid") for host in url_hosts(str(value or ""))):
            environment[key] = f"http://{GATEWAY}:{GATEWAY_PORT}"
            gateway_networks.update(spec.get("networks") or {})
            changes.append(
                Change(
                    name,
                    f"{key} -> {environment[key]}",
                    "an outside service: a stand-in that accepts any call",
                )
            )
    return environment


def render(
    stack: Stack, project: str, tags: dict[str, str], work: Path, *, cold_start: float = 0.0
) -> Override:
    """The override's text and its changes; host-path stand-ins are created under `work`."""
    changes: list[Change] = []
    engine_images = {str(stack.services[engine].get("image")) for engine in stack.engines}
    lines = ["# Written by python -m rollout.rehearse: only what cannot exist on this machine.", "services:"]
    gateway_networks: set[str] = set()
    for name, spec in stack.services.items():
        fields: dict[str, Any] = {}
        role, why = _image_role(stack, name, spec, engine_images)
        fields["image"] = tags[role]
        fields["pull_policy"] = "never"
        changes.append(Change(name, f"image {spec.get('image')} -> {tags[role]}", why))
        _entrypoint(stack, name, spec, fields, changes)
        devices = (((spec.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get(
            "devices"
        )
        if devices:
            fields["deploy"] = {"resources": {"reservations": {"devices": Tagged("!reset", [])}}}
            changes.append(Change(name, "GPU reservation removed", "no GPUs here"))
        _clamp_ulimits(name, spec, fields, changes)
        _host_access(name, spec, fields, changes)
        volumes = _host_paths(stack, name, spec, work, changes)
        if volumes:
            fields["volumes"] = volumes
        if spec.get("ports"):
            ports = [f"127.0.0.1::{port['target']}" for port in spec["ports"]]
            fields["ports"] = Tagged("!override", ports)
            changes.append(
                Change(
                    name,
                    f"ports -> {', '.join(ports)}",
                    "the host's own ports may be taken: random ones on 127.0.0.1",
                )
            )
        if spec.get("container_name"):
            fields["container_name"] = f"{project}-{name}"
            original = spec["container_name"]
            changes.append(
                Change(
                    name,
                    f"container_name {original} -> {project}-{name}",
                    "fixed names collide on a shared daemon",
                )
            )
            if original != name:
                fields["networks"] = {net: {"aliases": [original]} for net in (spec.get("networks") or {})}
        environment = _outside_services(name, spec, changes, gateway_networks)
        if cold_start and name in stack.engines:
            environment[COLD_START_ENV] = f"{cold_start:g}"
            changes.append(
                Change(
                    name, f"{COLD_START_ENV}={cold_start:g}", "a loading engine's cold start (--cold-start)"
                )
            )
        if environment:
            fields["environment"] = environment
        # Docker's own DNS still answers the project's service names; a name outside
        # them is forwarded to a resolver that is not there, so no outside name resolves.
        fields["dns"] = [NO_RESOLVER]
        lines.append(f"  {json.dumps(name)}:")
        lines += [f"    {key}: {flow(value)}" for key, value in fields.items()]
    changes.append(
        Change(
            "every service",
            f"dns -> {NO_RESOLVER}",
            "no outside name resolves: a rehearsal reaches nothing beyond its own networks",
        )
    )
    if gateway_networks:
        lines.append(f"  {GATEWAY}:")
        lines.append(f"    image: {json.dumps(tags['gateway'])}")
        lines.append("    pull_policy: never")
        lines.append(f"    dns: {flow([NO_RESOLVER])}")
        lines.append("    init: true")
        lines.append(f"    networks: {flow(sorted(gateway_networks))}")
        changes.append(
            Change(GATEWAY, "service added", "stands in for the outside gateway the file announces to")
        )
    lines += _top_level(stack.model, work, changes)
    return Override("\n".join(lines) + "\n", changes, bool(gateway_networks))
