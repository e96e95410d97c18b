"""Who listens where, per role, as the wiring contract's `listeners:` says.

Engines by their argv (or their program's defaults), the proxy by an env address, the
front door by its inline nginx config, the DCGM exporter by its address flag, the
collector by the endpoints of its config. In a file no stack claims only what the
program itself decides is read (`unclaimed: true`), and nothing is reported about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tierops.argv import ENGINE_DEFAULT_LISTEN
from tierops.roles import Role
from tierops.yamlload import YMap
from validators.findings import Pos
from validators.model import ComposeFile, Service
from validators.rules.collector import Collector, collector, dig
from validators.rules.embedded import embedded
from validators.rules.wiring import checks
from validators.rules.wiring.graph import Graph, Listener, endpoints, host_port, locate, loopback, parse_port
from validators.rules.wiring.nginx import parsed_nginx, server_listeners


def read_listeners(graph: Graph) -> None:
    """Who listens where, per role. A role without a listener spec listens nowhere the
    contract knows (its references are not judged in a file no stack claims)."""
    for service in graph.compose:
        role = graph.roles.get(service.name, Role.OTHER)
        spec = graph.wiring.listeners.get(role)
        if spec is None or not (graph.claimed or spec.get("unclaimed")):
            continue
        kind = spec.get("from")
        found: list[Listener] | None
        if kind == "argv":
            found = _argv_listener(graph, service, spec)
        elif kind == "env":
            found = _env_listener(graph, service, str(spec["key"]))
        elif kind == "nginx":
            found = _nginx_listeners(graph, service)
        else:
            found = _collector_listeners(graph, service)
        if found is None:
            graph.unknown.add(service.name)  # unreadable (reported) or a variable: not followed
        graph.listeners[service.name] = found or []


def inline_configs(compose: ComposeFile, service: Service) -> list[str]:
    """The top-level configs with inline `content` that `service` mounts, in mount order."""
    names: list[str] = []
    for entry in service.get("configs") or ():
        source = entry.get("source") if isinstance(entry, dict) else entry
        if isinstance(source, str) and source not in names and embedded(compose, source) is not None:
            names.append(source)
    return names


def runs_nginx(service: Service) -> bool:
    image = service.get("image")
    words = [*(service.get("entrypoint") or ()), *(service.get("command") or ())]
    return (isinstance(image, str) and "nginx" in image) or any(
        str(word).rsplit("/", 1)[-1] == "nginx" for word in words
    )


def _unreadable(graph: Graph, service: Service, pos: Pos, what: str, value: str) -> None:
    """A listen address that is neither host:port nor a variable: one `listen` finding."""
    if "$" not in value and graph.claimed:
        graph.findings.append(
            checks.finding(
                graph.compose,
                pos,
                "listen",
                f"{service.name} {what} '{value}' is not [host]:port; its peers cannot know its port",
                "write the address as host:port, e.g. 0.0.0.0:8000",
            )
        )


def _argv_listener(graph: Graph, service: Service, spec: Mapping[str, Any]) -> list[Listener] | None:
    if not graph.claimed and "host_flag" in spec and service.program_name() is None:
        return None  # an engine whose program is unknown: its defaults are unknown too
    words = [str(word) for word in service.get("command") or ()]
    if "address_flags" in spec:
        address, at = str(spec["default_address"]), service.at("command")
        for index, word in enumerate(words):
            for flag in spec["address_flags"]:
                if word == flag and index + 1 < len(words):
                    address, at = words[index + 1], service.at("command", index + 1)
                elif word.startswith(flag + "="):
                    address, at = word.split("=", 1)[1], service.at("command", index)
        parsed = host_port(address, default_host="0.0.0.0")
        if parsed is None:
            _unreadable(graph, service, at, "listen address", address)
            return None
        return [Listener(parsed[0], parsed[1], at)]
    flags = {flag.flag: flag for flag in service.flags()}
    host_flag, port_flag = flags.get(str(spec["host_flag"])), flags.get(str(spec["port_flag"]))
    # The contract's defaults are its engine program's; another program has its own.
    default_host, default_port = ENGINE_DEFAULT_LISTEN.get(
        service.program_name() or "", (str(spec["default_host"]), int(spec["default_port"]))
    )
    host = host_flag.value if host_flag and host_flag.value else default_host
    port_text = port_flag.value if port_flag and port_flag.value else str(default_port)
    where = port_flag.value_pos if port_flag else service.at("command")
    host_at = host_flag.value_pos if host_flag else service.at("command")
    port = parse_port(port_text)
    if port is None:
        return None  # engine-flags reports a port that is not a number
    return [Listener(host, port, host_at if loopback(host) else where)]


def _env_listener(graph: Graph, service: Service, key: str) -> list[Listener] | None:
    value = service.env.get(key)
    if value is None and not graph.claimed:
        return None  # another program may listen by its own default
    if value is None:
        graph.findings.append(
            checks.finding(
                graph.compose,
                service.at("environment"),
                "listen",
                f"{service.name} declares no listen address ({key}); its peers cannot know its port",
                f"set {key}, e.g. 0.0.0.0:8000",
            )
        )
        return None
    pos = locate(graph.compose, service, ("environment", key))
    parsed = host_port(value, default_host="0.0.0.0")
    if parsed is None:
        _unreadable(graph, service, pos, key, value)
        return None
    return [Listener(parsed[0], parsed[1], pos)]


def _nginx_listeners(graph: Graph, service: Service) -> list[Listener] | None:
    """Where a front door listens: the `listen`s of the inline nginx configs it mounts
    (None when it runs no nginx or mounts none: its listener is not known)."""
    configs = inline_configs(graph.compose, service) if runs_nginx(service) else []
    if not configs:
        return None
    found: list[Listener] = []
    for name in configs:
        parsed = parsed_nginx(graph, name)
        if parsed is not None:
            found += server_listeners(*parsed)
    return found


def collector_config(graph: Graph, service: Service) -> Collector | None:
    """The first inline config the collector mounts that reads as a collector config."""
    for name in inline_configs(graph.compose, service):
        parsed = collector(graph.compose, name, "")
        if parsed is not None and parsed.data is not None and isinstance(parsed.data.get("receivers"), YMap):
            return parsed
    return None


def _collector_listeners(graph: Graph, service: Service) -> list[Listener] | None:
    """The `endpoint` of every receiver and extension, and the address of the collector's
    own metrics when its config writes one (`service.telemetry.metrics.address`)."""
    parsed = collector_config(graph, service)
    if parsed is None or parsed.data is None:
        return [] if graph.claimed else None
    found: list[Listener] = []
    for section in ("receivers", "extensions"):
        for node, pos in endpoints(parsed.data.get(section)):
            address = host_port(node, default_host="0.0.0.0")
            if address is not None:
                found.append(Listener(address[0], address[1], parsed.outer(pos)))
    metrics = dig(parsed.data, "service", "telemetry", "metrics")
    written = metrics.get("address") if isinstance(metrics, YMap) else None
    telemetry = host_port(written, default_host="0.0.0.0") if isinstance(written, str) else None
    if isinstance(metrics, YMap) and telemetry is not None:
        found.append(Listener(telemetry[0], telemetry[1], parsed.outer(metrics.value_at("address"))))
    return found
