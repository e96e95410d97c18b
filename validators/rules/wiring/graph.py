"""The service graph of one file: roles, listeners, references, and where values are written.

Shared by the parts of the rule: who listens where (listeners.py), what refers to what
(references.py), the published ports (ports.py), the model's storage (storage.py) and
the runtime settings (runtime.py).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from tierops.roles import Role, roles_of
from tierops.yamlload import YList, YMap
from validators.findings import Finding, Pos
from validators.model import ComposeFile, Service
from validators.rules.wiring.contract import Wiring


class Listener(NamedTuple):
    host: str
    port: int
    pos: Pos
    tls: bool | None = None  # known only for nginx (`listen 443 ssl`)


class Ref(NamedTuple):
    """A reference from `consumer` to host:port, written at `pos`."""

    consumer: str
    what: str  # how the message names the reference
    scheme: str | None
    host: str
    port: int | None
    pos: Pos


LOOPBACK = frozenset({"localhost", "::1", "[::1]"})


def loopback(host: str) -> bool:
    return host in LOOPBACK or host.startswith("127.")


@dataclass
class Graph:
    compose: ComposeFile
    wiring: Wiring
    engines: list[str]
    label_prefix: str | None  # the claiming stack's telemetry labels; None: no stack claims the file
    # A stack claims the file: the stack's policy in wiring.yaml (edges, exemptions, the
    # listeners a stack declares) applies. In a file no stack claims only what the
    # program itself decides does (listeners marked `unclaimed: true`).
    claimed: bool = True
    roles: dict[str, Role] = field(default_factory=dict)  # service -> its role, in file order
    names: dict[str, str] = field(default_factory=dict)  # DNS name -> service
    listeners: dict[str, list[Listener]] = field(default_factory=dict)  # only services with a spec
    unknown: set[str] = field(default_factory=set)  # a spec, but no readable listener (reported once)
    findings: list[Finding] = field(default_factory=list)

    def nets(self, service: Service, depth: int = 0) -> set[str]:
        mode = service.get("network_mode")
        if isinstance(mode, str) and mode.startswith("service:") and depth < 5:
            other = self.compose.services.get(mode.split(":", 1)[1])
            return self.nets(other, depth + 1) if other is not None else set()
        if isinstance(mode, str):
            return {f"<{mode}>"}
        networks = service.get("networks")
        return set(networks) if isinstance(networks, dict) else set()


def service_roles(
    compose: ComposeFile, engines: Sequence[str], exceptions: Mapping[str, Any]
) -> dict[str, Role]:
    """Each service's role, read from its definition (tierops/roles.py); the claiming
    contract's replicas are engines, and the stack contract's `wiring.roles` (by name)
    overrides what inference got wrong for that stack."""
    cached: dict[str, Role] | None = compose.cache.get("wiring:roles")
    if cached is None:
        sections = compose.project.sections
        view: dict[str, Any] = {"services": {service.name: service.canon.fields for service in compose}}
        for section in ("configs", "secrets"):
            entries = sections.get(section)
            if isinstance(entries, dict):  # another type is compose-hygiene's finding
                view[section] = {name: entry for name, entry in entries.items() if isinstance(entry, dict)}
        cached = roles_of(view)
        compose.cache["wiring:roles"] = cached
    roles = dict(cached)
    for name in engines:
        roles[name] = Role.ENGINE
    for name, key in (exceptions.get("roles") or {}).items():
        role = Role.from_key(str(key))
        if str(name) in roles and role is not None:
            roles[str(name)] = role
    return roles


def of_role(graph: Graph, roles: Iterable[Role]) -> list[str]:
    """The services of any of `roles`, in file order."""
    wanted = set(roles)
    return [name for name, role in graph.roles.items() if role in wanted]


def dns_names(service: Service) -> Iterator[str]:
    for key in ("container_name", "hostname"):
        value = service.get(key)
        if isinstance(value, str):
            yield value
    networks = service.get("networks")
    for body in networks.values() if isinstance(networks, dict) else ():
        if isinstance(body, dict):
            aliases = body.get("aliases")
            if isinstance(aliases, list):  # any other type is compose-hygiene's finding
                yield from (alias for alias in aliases if isinstance(alias, str))


def _line_starts(compose: ComposeFile) -> list[int]:
    starts: list[int] | None = compose.cache.get("wiring:lines")
    if starts is None:
        starts = [0, *(match.end() for match in re.finditer("\n", compose.doc.text))]
        compose.cache["wiring:lines"] = starts
    return starts


def locate(compose: ComposeFile, service: Service, path: Sequence[str | int], needle: str = "") -> Pos:
    """The position of `needle` inside the value at `path` (the value's start without it)."""
    origin = service.canon.origin(*path)
    if origin.span is None:
        return origin.pos
    start, end = origin.span
    offset = start
    if needle:
        found = compose.doc.text.find(needle, start, end)
        if found >= 0:
            offset = found
    starts = _line_starts(compose)
    line = bisect.bisect_right(starts, offset)
    return Pos(line, offset - starts[line - 1] + 1)


def value_at(compose: ComposeFile, service: Service, *path: str | int) -> Pos:
    """Where the value at `path` starts (a collection's first character), not its key."""
    origin = service.canon.origin(*path)
    if origin.span is not None:
        return locate(compose, service, path)
    if isinstance(origin.raw, YMap | YList) and tuple(path) in service.canon.origins:
        return origin.raw.pos
    return origin.pos


def host_port(text: str, *, default_host: str, default_port: int | None = None) -> tuple[str, int] | None:
    """`host:port`, `:port`, `[::]:port` or `host` (with a default port) as a pair."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = text, str(default_port) if default_port is not None else ""
    number = parse_port(port)
    return None if number is None else ((host or default_host), number)


def parse_port(text: str) -> int | None:
    """A port written in ASCII digits (`str.isdigit` also takes `²`, which `int` refuses)."""
    return int(text) if re.fullmatch(r"[0-9]{1,5}", text) else None


URL = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<host>\[[^\]]*\]|\$\{[^}]*\}|[^/:\s,;'\"\[\]]+)(?::(?P<port>[0-9]+))?"
)


_DEFAULT_PORTS = {"http": 80, "https": 443, "grpc": 80, "grpcs": 443}


def url_ref(consumer: str, what: str, match: re.Match[str], pos: Pos) -> Ref:
    scheme = match.group("scheme")
    port = match.group("port")
    return Ref(
        consumer,
        what,
        scheme,
        match.group("host"),
        int(port) if port else _DEFAULT_PORTS.get(scheme),
        pos,
    )


def endpoints(node: Any) -> Iterator[tuple[str, Pos]]:
    if isinstance(node, YMap):
        for key, value in node.items():
            if key == "endpoint" and isinstance(value, str):
                yield value, node.value_at(key)
            else:
                yield from endpoints(value)
    elif isinstance(node, YList):
        for item in node:
            yield from endpoints(item)


def extra_hosts(service: Service) -> set[str]:
    """Host names the service maps itself (`extra_hosts`, list or mapping form)."""
    mapped = service.get("extra_hosts")
    if isinstance(mapped, dict):
        return {str(name) for name in mapped}
    if isinstance(mapped, list):
        return {str(entry).split(":", 1)[0].split("=", 1)[0] for entry in mapped}
    return set()


def port_list(listeners: Sequence[Listener]) -> str:
    return ", ".join(str(port) for port in sorted({listener.port for listener in listeners})) or "no port"
