"""What refers to what, and whether each reference resolves.

References: the front door's upstreams and proxy_pass targets, the collector's scrape
targets and exporter endpoints, every URL in env and healthchecks, the telemetry port
label. Each must name a service on a shared network that listens on that port (and that
the consumer's role may reach, per the contract's `edges:`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from tierops.roles import Role
from tierops.yamlload import YMap
from validators.findings import Finding
from validators.model import ComposeFile, Service
from validators.rules.collector import collector
from validators.rules.wiring import checks
from validators.rules.wiring.graph import (
    URL,
    Graph,
    Listener,
    Ref,
    endpoints,
    extra_hosts,
    host_port,
    locate,
    loopback,
    of_role,
    parse_port,
    port_list,
    url_ref,
)
from validators.rules.wiring.listeners import collector_config, inline_configs, runs_nginx
from validators.rules.wiring.nginx import config_refs, parsed_nginx


def references(graph: Graph) -> Iterator[Ref]:
    compose = graph.compose
    yield from _nginx_refs(graph)
    yield from _collector_refs(graph)
    port_label = f"{graph.label_prefix}port" if graph.label_prefix is not None else None
    for service in compose:
        # The telemetry label claims where the service serves /metrics: its own port.
        claimed = service.labels.get(port_label) if port_label is not None else None
        claimed_port = parse_port(claimed) if claimed is not None else None
        if claimed_port is not None and port_label is not None:
            pos = locate(compose, service, ("labels", port_label))
            yield Ref(service.name, f"label {port_label}={claimed}", None, "localhost", claimed_port, pos)
        for key, value in service.env.items():
            for match in URL.finditer(value or ""):
                pos = locate(compose, service, ("environment", key), match.group())
                yield url_ref(service.name, f"env {key} URL {match.group()}", match, pos)
        test = service.value("healthcheck", "test")
        for index, word in enumerate(test if isinstance(test, list) else ()):
            for match in URL.finditer(str(word)):
                pos = locate(compose, service, ("healthcheck", "test", index), match.group())
                yield url_ref(service.name, f"healthcheck URL {match.group()}", match, pos)


def _nginx_refs(graph: Graph) -> Iterator[Ref]:
    """The upstreams and proxy_pass targets of every front door's inline nginx configs."""
    for holder in of_role(graph, [Role.FRONT_DOOR]):
        service = graph.compose.services[holder]
        for name in inline_configs(graph.compose, service) if runs_nginx(service) else ():
            parsed = parsed_nginx(graph, name)
            if parsed is not None:
                yield from config_refs(holder, *parsed)


def _collector_refs(graph: Graph) -> Iterator[Ref]:
    """Every collector's scrape targets (of each prometheus receiver) and exporter endpoints."""
    for holder in of_role(graph, [Role.COLLECTOR]):
        parsed = collector_config(graph, graph.compose.services[holder])
        if parsed is None or parsed.data is None:
            continue
        receivers = parsed.data.get("receivers")
        for receiver in receivers if isinstance(receivers, YMap) else ():
            if str(receiver).split("/", 1)[0] != "prometheus":
                continue
            scraped = collector(graph.compose, parsed.config.name, str(receiver))
            for job in scraped.jobs if scraped is not None else ():
                for target, pos in job.targets:
                    address = host_port(target, default_host="")
                    if address is not None:
                        what = f"scrape job {job.name} target {target}"
                        yield Ref(holder, what, None, address[0], address[1], pos)
        for value, pos in endpoints(parsed.data.get("exporters")):
            match = URL.match(value)
            if match is not None:
                yield url_ref(holder, f"exporter endpoint {value}", match, parsed.outer(pos))


_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


_VAR = re.compile(r"^\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


def resolve(graph: Graph, ref: Ref) -> Iterator[Finding]:  # noqa: PLR0911, PLR0912 (one branch per kind of edge)
    compose = graph.compose
    consumer = compose.services[ref.consumer]
    if ref.port is None or _off_network(graph, consumer):
        return  # network-mode reports a service off the project network
    if loopback(ref.host) or ref.host == "0.0.0.0":
        own = graph.listeners.get(consumer.name)
        if own is None or consumer.name in graph.unknown:
            return  # no listener spec: nothing to compare with
        if not any(listener.port == ref.port for listener in own):
            yield checks.finding(
                compose,
                ref.pos,
                "reference",
                f"{consumer.name} {ref.what} points at its own port {ref.port}, but {consumer.name} listens on {port_list(own)}",
                f"use its own port {own[0].port}" if own else None,
            )
        return
    variable = _VAR.match(ref.host)
    if variable is not None:
        if variable.group("name") in graph.wiring.host_vars:
            yield from _via_host(graph, ref)
        return
    target_name = graph.names.get(ref.host)
    if target_name is None:
        if ref.host in extra_hosts(consumer):
            return  # a host name the service maps itself (extra_hosts), outside the project
        if _HOSTNAME.fullmatch(ref.host) and "." not in ref.host:
            yield checks.finding(
                compose,
                ref.pos,
                "reference",
                f"{consumer.name} {ref.what} names {ref.host}, which is no service of this file",
                f"name one of {', '.join(sorted(compose.services))}",
            )
        return  # a dotted or interpolated name is outside the project
    target = compose.services[target_name]
    if target_name in graph.unknown or _off_network(graph, target):
        return  # listen or network-mode already names the cause
    allowed = _allowed(graph, consumer.name)
    if allowed is not None and target_name not in allowed[0] and target_name != consumer.name:
        names, roles = allowed
        reach = ", ".join(names) or " or ".join(f"a {role.key} service" for role in roles)
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what} names {target_name}; {consumer.name} may only reach {reach}",
            f"point it at {names[0]}" if len(names) == 1 else "point it at one of them",
        )
        return
    if target_name != consumer.name and not graph.nets(consumer) & graph.nets(target):
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what}: {target_name} shares no network with {consumer.name} "
            f"({sorted(graph.nets(target)) or 'none'} vs {sorted(graph.nets(consumer)) or 'none'})",
            f"put {target_name} and {consumer.name} on one network",
        )
        return
    listeners = graph.listeners.get(target_name)
    if listeners is None and not graph.claimed:
        return  # no stack says how it listens: nothing to compare with
    if listeners is None:
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what}: {target_name} serves nothing the wiring contract knows",
            "reference a service that listens (or declare the listener of its role, "
            f"{graph.roles.get(target_name, Role.OTHER).key}, in validators/contracts/wiring.yaml)",
        )
        return
    on_port = [listener for listener in listeners if listener.port == ref.port]
    if not on_port:
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what}: {target_name} listens on {port_list(listeners)}, not {ref.port}",
        )
        return
    if target_name != consumer.name and all(loopback(listener.host) for listener in on_port):
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what}: {target_name} listens on {on_port[0].host}:{ref.port}, which only {target_name} itself can reach",
            f"make {target_name} listen on 0.0.0.0:{ref.port}",
        )
        return
    yield from _tls(compose, ref, target_name, on_port)


def _off_network(graph: Graph, service: Service) -> bool:
    mode = service.get("network_mode")
    return isinstance(mode, str) and mode in set(graph.wiring.runtime.get("forbidden_network_modes") or ())


def _allowed(graph: Graph, consumer: str) -> tuple[list[str], tuple[Role, ...]] | None:
    """The services `consumer` may reference (those of the roles its role's edge names,
    in file order) and those roles; None: any (no edge for its role, or no stack claims the file)."""
    roles = graph.wiring.edges.get(graph.roles.get(consumer, Role.OTHER)) if graph.claimed else None
    if roles is None:
        return None
    return of_role(graph, roles), roles


def _tls(compose: ComposeFile, ref: Ref, target: str, on_port: Sequence[Listener]) -> Iterator[Finding]:
    wants = {"https": True, "http": False}.get(ref.scheme or "")
    if wants is None or any(listener.tls is None or listener.tls == wants for listener in on_port):
        return
    yield checks.finding(
        compose,
        ref.pos,
        "reference",
        f"{ref.consumer} {ref.what}: {target} port {ref.port} {'does not speak' if wants else 'speaks'} TLS, the URL says {ref.scheme}",
        f"use {'http' if wants else 'https'}, or reach a port that speaks {ref.scheme}",
    )


def _via_host(graph: Graph, ref: Ref) -> Iterator[Finding]:
    """A URL on this host's name reaches whatever publishes that host port."""
    compose = graph.compose
    published = {
        str(entry.get("published")): (service, entry)
        for service in compose
        for entry in service.get("ports") or ()
        if isinstance(entry, dict) and entry.get("published")
    }
    found = published.get(str(ref.port))
    if found is None:
        yield checks.finding(
            compose,
            ref.pos,
            "reference",
            f"{ref.consumer} {ref.what}: no service of this file publishes host port {ref.port} (published: {', '.join(sorted(published)) or 'none'})",
            "point it at a published port",
        )
        return
    service, entry = found
    listeners = graph.listeners.get(service.name)
    target = entry.get("target")
    if listeners is None or not isinstance(target, int):
        return
    on_port = [listener for listener in listeners if listener.port == target]
    if on_port:
        yield from _tls(compose, ref, service.name, on_port)
