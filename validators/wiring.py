"""Rule `wiring`: the service graph of a prod file resolves, so the stack can run.

Compose accepts every fault below; each one breaks or weakens the host. The rule
builds the graph from the canonical model (and the inline nginx and collector
configs) and resolves every edge, per validators/contracts/wiring.yaml:

- listen: who listens where (engine `--host/--port`, the proxy's `LISTEN_ADDR`, nginx
  `listen`, dcgm `-a` or :9400, the collector's receiver and extension endpoints);
- published-port: a published port reaches a port its service listens on, and a host
  port is published once per file; host-port: once per host across the files that
  run there together (the `hosts:` of the wiring contract);
- reference: nginx `proxy_pass`/`upstream`, URLs in env (the proxy's backend list,
  the registrar's endpoint), scrape targets, collector exporters and healthcheck URLs
  name a service that shares a network with the consumer and listens on that port (a
  `localhost` URL: the service's own port; a `${CVM_HOST}` URL: a published port);
- storage: `--model-path` lies under a named volume that the downloader writes the
  same snapshot into; the downloader's repo and revision are the path's; it keeps its
  token env; every config, secret and named volume a service mounts is defined;
- runtime: engines keep the image's entrypoint; no `network_mode: host|none`, no
  `privileged`; no `env_file` on engines; every long-running service has a
  healthcheck (or a declared reason), an engine's `start_period` at least the
  contract's.

Passing example (the proxy listens where nginx sends)::

    proxy-glm53:
      environment:
        LISTEN_ADDR: "0.0.0.0:8000"
    configs: {nginx_conf: {content: "upstream glm53_proxy { server proxy-glm53:8000; } ..."}}

Failing example (the proxy moved to 8080, nginx still sends to 8000)::

    proxy-glm53:
      environment:
        LISTEN_ADDR: "0.0.0.0:8080"
    # -> nginx upstream glm53_proxy server proxy-glm53:8000: proxy-glm53 listens on
    #    8080, not 8000; point the reference at a port it listens on, or move its
    #    listener (wiring)
"""

from __future__ import annotations

import bisect
import functools
import posixpath
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tierops import layout, units
from tierops.argv import ENGINE_DEFAULT_LISTEN
from tierops.errors import InputError
from tierops.roles import Role, roles_of
from tierops.yamlload import LoadError, YList, YMap, load_path
from validators.collector import Collector, collector, dig
from validators.context import Context, engine_services
from validators.contract import CONTRACTS
from validators.embedded import Embedded, embedded
from validators.findings import Finding, Level, Pos, error
from validators.loader import load_file
from validators.model import ComposeFile, Flag, Service

ID = "wiring"
SUMMARY = "the service graph resolves: listeners, published ports, references, model storage, runtime"

WIRING = CONTRACTS / "wiring.yaml"


class Check(NamedTuple):
    """One wiring check as data: what must resolve to what, and what to do when it doesn't."""

    name: str
    must: str
    fix: str


CHECKS: dict[str, Check] = {
    check.name: check
    for check in (
        Check(
            "listen",
            "every service others reach declares a listener on an address its peers can reach",
            "listen on 0.0.0.0 (or the service's network address) at the contract port",
        ),
        Check(
            "published-port",
            "a published port reaches a port the service listens on; a host port is published once",
            "publish a port the service listens on, once",
        ),
        Check(
            "host-port",
            "files that run on one host together publish disjoint host ports",
            "publish another host port, or give both files one compose project name",
        ),
        Check(
            "reference",
            "a reference names a service on a shared network that listens on that port",
            "point the reference at a port the service listens on, or move its listener",
        ),
        Check(
            "model-volume",
            "--model-path lies under a named volume the downloader writes the snapshot into",
            "mount the downloader's volume at the same path on every engine",
        ),
        Check(
            "snapshot",
            "the downloader fetches the repo and revision of the engines' snapshot path",
            "download the repo and --revision the engines' --model-path names",
        ),
        Check("download-token", "the downloader keeps its token env", "restore the token variable"),
        Check(
            "mount-source",
            "every config, secret and named volume a service mounts is defined at the top level",
            "define it under the top-level key, or mount one that is defined",
        ),
        Check(
            "entrypoint",
            "engines run the image's entrypoint (or the contract's)",
            "remove the entrypoint override: the argv must reach sglang as written",
        ),
        Check(
            "network-mode",
            "no service runs with network_mode host or none",
            "drop network_mode and join the project network",
        ),
        Check("privileged", "no service is privileged", "drop privileged; add only the capability it needs"),
        Check(
            "env-file",
            "engines take their env from the file only (the env contract)",
            "move the variables into environment:",
        ),
        Check(
            "healthcheck",
            "every long-running service has a healthcheck",
            "add a healthcheck, or declare why not under runtime.healthcheck_exempt in validators/contracts/wiring.yaml",
        ),
        Check(
            "start-period",
            "an engine's healthcheck start_period is at least the contract's",
            "raise start_period so loading weights does not count as failures",
        ),
    )
}


# --------------------------------------------------------------------------- the contract


@dataclass(frozen=True)
class Wiring:
    hosts: Mapping[str, tuple[str, ...]]
    host_vars: tuple[str, ...]
    # By role (tierops/roles.py), never by service name: a new stack needs no edit here.
    edges: Mapping[Role, tuple[Role, ...]]
    listeners: Mapping[Role, Mapping[str, Any]]
    storage: Mapping[str, Any]
    runtime: Mapping[str, Any]
    healthcheck_exempt: Mapping[Role, str]
    downloader: Role


@functools.cache
def load_wiring(path: Path = WIRING) -> Wiring:
    try:
        loaded = load_path(path)
    except LoadError as problem:
        raise InputError(f"{path}:{problem.pos.line}:{problem.pos.col}: {problem.message}") from None
    document = loaded.documents[0]
    raw = _plain(document)

    def role(key: Any, *where: str) -> Role:
        found = Role.from_key(str(key))
        if found is None:
            node: Any = document
            for part in where[:-1]:
                node = node[part]
            pos = node.at(where[-1]) if isinstance(node, YMap) and where[-1] in node else document.pos
            known = ", ".join(item.key for item in Role)
            raise InputError(
                f"'{key}' is no role", where=f"{path}:{pos.line}:{pos.col}", hint=f"name one of {known}"
            )
        return found

    runtime = raw["runtime"]
    return Wiring(
        hosts={stem: tuple(str(h) for h in hosts) for stem, hosts in raw["hosts"].items()},
        host_vars=tuple(raw["host_vars"]),
        edges={
            role(name, "edges", name): tuple(role(target, "edges", name) for target in targets)
            for name, targets in (raw.get("edges") or {}).items()
        },
        listeners={role(name, "listeners", name): spec for name, spec in raw["listeners"].items()},
        storage=raw["storage"],
        runtime=runtime,
        healthcheck_exempt={
            role(name, "runtime", "healthcheck_exempt", name): str(reason)
            for name, reason in (runtime.get("healthcheck_exempt") or {}).items()
        },
        downloader=role(raw["storage"]["downloader"], "storage", "downloader"),
    )


def _plain(node: Any) -> Any:
    if isinstance(node, YMap):
        return {key: _plain(value) for key, value in node.items()}
    if isinstance(node, YList):
        return [_plain(value) for value in node]
    return node


# --------------------------------------------------------------------------- the graph


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


def _loopback(host: str) -> bool:
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


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    wiring = load_wiring(layout.contracts_dir() / WIRING.name)
    engines = engine_services(compose, ctx)
    prefix = str(ctx.contract.telemetry["label_prefix"]) if ctx.contract is not None else None
    graph = Graph(compose, wiring, engines, prefix, claimed=ctx.contract is not None)
    graph.roles = service_roles(compose, engines, ctx.contract.wiring if ctx.contract is not None else {})
    for service in compose:
        graph.names[service.name] = service.name
        for alias in _dns_names(service):
            graph.names.setdefault(alias, service.name)
    _listeners(graph)
    yield from graph.findings
    yield from _published(graph)
    yield from _co_hosted(compose, wiring)
    for ref in _references(graph):
        yield from _resolve(graph, ref)
    yield from _storage(graph)
    yield from _mount_sources(compose)
    exempt = _exempt(graph, ctx.contract.wiring if ctx.contract is not None else {})
    yield from _runtime(compose, wiring, engines, exempt, claimed=graph.claimed)


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


def _of_role(graph: Graph, roles: Iterable[Role]) -> list[str]:
    """The services of any of `roles`, in file order."""
    wanted = set(roles)
    return [name for name, role in graph.roles.items() if role in wanted]


def _dns_names(service: Service) -> Iterator[str]:
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


def _finding(
    compose: ComposeFile, pos: Pos, check_name: str, message: str, fix: str | None = None
) -> Finding:
    return error(compose.path, pos, ID, f"{message}; {fix or CHECKS[check_name].fix}")


# -- positions inside values ------------------------------------------------------------


def _line_starts(compose: ComposeFile) -> list[int]:
    starts: list[int] | None = compose.cache.get("wiring:lines")
    if starts is None:
        starts = [0, *(match.end() for match in re.finditer("\n", compose.doc.text))]
        compose.cache["wiring:lines"] = starts
    return starts


def _locate(compose: ComposeFile, service: Service, path: Sequence[str | int], needle: str = "") -> Pos:
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


def _value_at(compose: ComposeFile, service: Service, *path: str | int) -> Pos:
    """Where the value at `path` starts (a collection's first character), not its key."""
    origin = service.canon.origin(*path)
    if origin.span is not None:
        return _locate(compose, service, path)
    if isinstance(origin.raw, YMap | YList) and tuple(path) in service.canon.origins:
        return origin.raw.pos
    return origin.pos


# -- who listens where ------------------------------------------------------------------


def _listeners(graph: Graph) -> None:
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


def _inline_configs(compose: ComposeFile, service: Service) -> list[str]:
    """The top-level configs with inline `content` that `service` mounts, in mount order."""
    names: list[str] = []
    for entry in service.get("configs") or ():
        source = entry.get("source") if isinstance(entry, dict) else entry
        if isinstance(source, str) and source not in names and embedded(compose, source) is not None:
            names.append(source)
    return names


def _runs_nginx(service: Service) -> bool:
    image = service.get("image")
    words = [*(service.get("entrypoint") or ()), *(service.get("command") or ())]
    return (isinstance(image, str) and "nginx" in image) or any(
        str(word).rsplit("/", 1)[-1] == "nginx" for word in words
    )


def _unreadable(graph: Graph, service: Service, pos: Pos, what: str, value: str) -> None:
    """A listen address that is neither host:port nor a variable: one `listen` finding."""
    if "$" not in value and graph.claimed:
        graph.findings.append(
            _finding(
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
        parsed = _host_port(address, default_host="0.0.0.0")
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
    port = _port(port_text)
    if port is None:
        return None  # engine-flags reports a port that is not a number
    return [Listener(host, port, host_at if _loopback(host) else where)]


def _env_listener(graph: Graph, service: Service, key: str) -> list[Listener] | None:
    value = service.env.get(key)
    if value is None and not graph.claimed:
        return None  # another program may listen by its own default
    if value is None:
        graph.findings.append(
            _finding(
                graph.compose,
                service.at("environment"),
                "listen",
                f"{service.name} declares no listen address ({key}); its peers cannot know its port",
                f"set {key}, e.g. 0.0.0.0:8000",
            )
        )
        return None
    pos = _locate(graph.compose, service, ("environment", key))
    parsed = _host_port(value, default_host="0.0.0.0")
    if parsed is None:
        _unreadable(graph, service, pos, key, value)
        return None
    return [Listener(parsed[0], parsed[1], pos)]


def _host_port(text: str, *, default_host: str, default_port: int | None = None) -> tuple[str, int] | None:
    """`host:port`, `:port`, `[::]:port` or `host` (with a default port) as a pair."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = text, str(default_port) if default_port is not None else ""
    number = _port(port)
    return None if number is None else ((host or default_host), number)


def _port(text: str) -> int | None:
    """A port written in ASCII digits (`str.isdigit` also takes `²`, which `int` refuses)."""
    return int(text) if re.fullmatch(r"[0-9]{1,5}", text) else None


# -- nginx -----------------------------------------------------------------------------


@dataclass
class Directive:
    name: str
    args: list[tuple[str, Pos]]
    pos: Pos
    block: list[Directive] | None = None


_NGINX_TOKEN = re.compile(r"""\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[{};]|[^\s{};"'#]+""")


def parse_nginx(text: str) -> list[Directive]:
    """nginx directives as a tree, each word with its 1-based position in `text`."""
    tokens: list[tuple[str, Pos]] = []
    line, line_start = 1, 0
    for match in _NGINX_TOKEN.finditer(text):
        word = match.group()
        if not word.isspace() and not word.startswith("#"):
            quoted = word[:1] in "\"'" and len(word) > 1
            tokens.append((word[1:-1] if quoted else word, Pos(line, match.start() - line_start + 1)))
        newlines = word.count("\n")
        if newlines:
            line += newlines
            line_start = match.start() + word.rfind("\n") + 1
    root: list[Directive] = []
    stack: list[list[Directive]] = [root]
    current: list[tuple[str, Pos]] = []
    for word, pos in tokens:
        if word == ";":
            if current:
                stack[-1].append(Directive(current[0][0], current[1:], current[0][1]))
            current = []
        elif word == "{":
            block: list[Directive] = []
            if current:
                stack[-1].append(Directive(current[0][0], current[1:], current[0][1], block))
            stack.append(block)
            current = []
        elif word == "}":
            if len(stack) > 1:
                stack.pop()
            current = []
        else:
            current.append((word, pos))
    return root


def _walk(directives: Iterable[Directive]) -> Iterator[Directive]:
    for directive in directives:
        yield directive
        if directive.block is not None:
            yield from _walk(directive.block)


def _nginx(graph: Graph, name: str) -> tuple[Embedded, list[Directive]] | None:
    cached: tuple[Embedded, list[Directive]] | None
    key = f"wiring:nginx:{name}"
    if key in graph.compose.cache:
        cached = graph.compose.cache[key]
        return cached
    config = embedded(graph.compose, name)
    cached = (config, parse_nginx(config.text)) if config is not None else None
    graph.compose.cache[key] = cached
    return cached


def _nginx_listeners(graph: Graph, service: Service) -> list[Listener] | None:
    """Where a front door listens: the `listen`s of the inline nginx configs it mounts
    (None when it runs no nginx or mounts none: its listener is not known)."""
    configs = _inline_configs(graph.compose, service) if _runs_nginx(service) else []
    if not configs:
        return None
    found: list[Listener] = []
    for name in configs:
        parsed = _nginx(graph, name)
        if parsed is not None:
            found += _server_listeners(*parsed)
    return found


def _server_listeners(config: Embedded, tree: list[Directive]) -> list[Listener]:
    found: list[Listener] = []
    for directive in _walk(tree):
        if directive.name != "server" or directive.block is None:
            continue
        listens = [d for d in directive.block if d.name == "listen" and d.args]
        if not listens:
            found.append(
                Listener("0.0.0.0", 80, config.outer(directive.pos), tls=False)
            )  # nginx's default listen
        for listen in listens:
            address, pos = listen.args[0]
            if address.startswith("unix:"):
                continue
            bare = _port(address)
            parsed_address = (
                ("0.0.0.0", bare)
                if bare is not None
                else _host_port(address, default_host="0.0.0.0", default_port=80)
            )
            if parsed_address is not None:
                tls = any(arg == "ssl" for arg, _ in listen.args[1:])
                found.append(Listener(parsed_address[0], parsed_address[1], config.outer(pos), tls))
    return found


def _nginx_refs(graph: Graph) -> Iterator[Ref]:
    """The upstreams and proxy_pass targets of every front door's inline nginx configs."""
    for holder in _of_role(graph, [Role.FRONT_DOOR]):
        service = graph.compose.services[holder]
        for name in _inline_configs(graph.compose, service) if _runs_nginx(service) else ():
            parsed = _nginx(graph, name)
            if parsed is not None:
                yield from _config_refs(holder, *parsed)


def _config_refs(holder: str, config: Embedded, tree: list[Directive]) -> Iterator[Ref]:
    parsed = (config, tree)
    upstreams = {d.args[0][0]: d for d in _walk(parsed[1]) if d.name == "upstream" and d.args and d.block}
    for upstream_name, upstream in upstreams.items():
        for server in upstream.block or ():
            if server.name == "server" and server.args:
                address, pos = server.args[0]
                parsed_address = _host_port(address, default_host="", default_port=80)
                if parsed_address is not None and not address.startswith("unix:"):
                    yield Ref(
                        holder,
                        f"upstream {upstream_name} server {address}",
                        None,
                        parsed_address[0],
                        parsed_address[1],
                        parsed[0].outer(pos),
                    )
    for directive in _walk(parsed[1]):
        if directive.name not in ("proxy_pass", "grpc_pass") or not directive.args:
            continue
        url, pos = directive.args[0]
        match = _URL.match(url)
        if match is None or "$" in url:
            continue  # a variable: resolved at request time
        host = match.group("host")
        if host in upstreams and match.group("port") is None:
            continue  # the upstream's servers are the references
        yield _url_ref(holder, f"{directive.name} {url}", match, parsed[0].outer(pos))


# -- the collector ---------------------------------------------------------------------


def _collector_config(graph: Graph, service: Service) -> Collector | None:
    """The first inline config the collector mounts that reads as a collector config."""
    for name in _inline_configs(graph.compose, service):
        parsed = collector(graph.compose, name, "")
        if parsed is not None and parsed.data is not None and isinstance(parsed.data.get("receivers"), YMap):
            return parsed
    return None


def _collector_listeners(graph: Graph, service: Service) -> list[Listener] | None:
    """The `endpoint` of every receiver and extension, and the address of the collector's
    own metrics when its config writes one (`service.telemetry.metrics.address`)."""
    parsed = _collector_config(graph, service)
    if parsed is None or parsed.data is None:
        return [] if graph.claimed else None
    found: list[Listener] = []
    for section in ("receivers", "extensions"):
        for node, pos in _endpoints(parsed.data.get(section)):
            address = _host_port(node, default_host="0.0.0.0")
            if address is not None:
                found.append(Listener(address[0], address[1], parsed.outer(pos)))
    metrics = dig(parsed.data, "service", "telemetry", "metrics")
    written = metrics.get("address") if isinstance(metrics, YMap) else None
    telemetry = _host_port(written, default_host="0.0.0.0") if isinstance(written, str) else None
    if isinstance(metrics, YMap) and telemetry is not None:
        found.append(Listener(telemetry[0], telemetry[1], parsed.outer(metrics.value_at("address"))))
    return found


def _endpoints(node: Any) -> Iterator[tuple[str, Pos]]:
    if isinstance(node, YMap):
        for key, value in node.items():
            if key == "endpoint" and isinstance(value, str):
                yield value, node.value_at(key)
            else:
                yield from _endpoints(value)
    elif isinstance(node, YList):
        for item in node:
            yield from _endpoints(item)


def _collector_refs(graph: Graph) -> Iterator[Ref]:
    """Every collector's scrape targets (of each prometheus receiver) and exporter endpoints."""
    for holder in _of_role(graph, [Role.COLLECTOR]):
        parsed = _collector_config(graph, graph.compose.services[holder])
        if parsed is None or parsed.data is None:
            continue
        receivers = parsed.data.get("receivers")
        for receiver in receivers if isinstance(receivers, YMap) else ():
            if str(receiver).split("/", 1)[0] != "prometheus":
                continue
            scraped = collector(graph.compose, parsed.config.name, str(receiver))
            for job in scraped.jobs if scraped is not None else ():
                for target, pos in job.targets:
                    address = _host_port(target, default_host="")
                    if address is not None:
                        what = f"scrape job {job.name} target {target}"
                        yield Ref(holder, what, None, address[0], address[1], pos)
        for value, pos in _endpoints(parsed.data.get("exporters")):
            match = _URL.match(value)
            if match is not None:
                yield _url_ref(holder, f"exporter endpoint {value}", match, parsed.outer(pos))


# -- references ------------------------------------------------------------------------

_URL = re.compile(
    r"(?P<scheme>[a-z][a-z0-9+.-]*)://(?P<host>\[[^\]]*\]|\$\{[^}]*\}|[^/:\s,;'\"\[\]]+)(?::(?P<port>[0-9]+))?"
)
_DEFAULT_PORTS = {"http": 80, "https": 443, "grpc": 80, "grpcs": 443}


def _url_ref(consumer: str, what: str, match: re.Match[str], pos: Pos) -> Ref:
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


def _references(graph: Graph) -> Iterator[Ref]:
    compose = graph.compose
    yield from _nginx_refs(graph)
    yield from _collector_refs(graph)
    port_label = f"{graph.label_prefix}port" if graph.label_prefix is not None else None
    for service in compose:
        # The telemetry label claims where the service serves /metrics: its own port.
        claimed = service.labels.get(port_label) if port_label is not None else None
        claimed_port = _port(claimed) if claimed is not None else None
        if claimed_port is not None and port_label is not None:
            pos = _locate(compose, service, ("labels", port_label))
            yield Ref(service.name, f"label {port_label}={claimed}", None, "localhost", claimed_port, pos)
        for key, value in service.env.items():
            for match in _URL.finditer(value or ""):
                pos = _locate(compose, service, ("environment", key), match.group())
                yield _url_ref(service.name, f"env {key} URL {match.group()}", match, pos)
        test = service.value("healthcheck", "test")
        for index, word in enumerate(test if isinstance(test, list) else ()):
            for match in _URL.finditer(str(word)):
                pos = _locate(compose, service, ("healthcheck", "test", index), match.group())
                yield _url_ref(service.name, f"healthcheck URL {match.group()}", match, pos)


_HOSTNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VAR = re.compile(r"^\$\{?(?P<name>[A-Za-z_][A-Za-z0-9_]*)")


def _resolve(graph: Graph, ref: Ref) -> Iterator[Finding]:  # noqa: PLR0911, PLR0912 (one branch per kind of edge)
    compose = graph.compose
    consumer = compose.services[ref.consumer]
    if ref.port is None or _off_network(graph, consumer):
        return  # network-mode reports a service off the project network
    if _loopback(ref.host) or ref.host == "0.0.0.0":
        own = graph.listeners.get(consumer.name)
        if own is None or consumer.name in graph.unknown:
            return  # no listener spec: nothing to compare with
        if not any(listener.port == ref.port for listener in own):
            yield _finding(
                compose,
                ref.pos,
                "reference",
                f"{consumer.name} {ref.what} points at its own port {ref.port}, but {consumer.name} listens on {_ports(own)}",
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
        if ref.host in _extra_hosts(consumer):
            return  # a host name the service maps itself (extra_hosts), outside the project
        if _HOSTNAME.fullmatch(ref.host) and "." not in ref.host:
            yield _finding(
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
        yield _finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what} names {target_name}; {consumer.name} may only reach {reach}",
            f"point it at {names[0]}" if len(names) == 1 else "point it at one of them",
        )
        return
    if target_name != consumer.name and not graph.nets(consumer) & graph.nets(target):
        yield _finding(
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
        yield _finding(
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
        yield _finding(
            compose,
            ref.pos,
            "reference",
            f"{consumer.name} {ref.what}: {target_name} listens on {_ports(listeners)}, not {ref.port}",
        )
        return
    if target_name != consumer.name and all(_loopback(listener.host) for listener in on_port):
        yield _finding(
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
    return _of_role(graph, roles), roles


def _tls(compose: ComposeFile, ref: Ref, target: str, on_port: Sequence[Listener]) -> Iterator[Finding]:
    wants = {"https": True, "http": False}.get(ref.scheme or "")
    if wants is None or any(listener.tls is None or listener.tls == wants for listener in on_port):
        return
    yield _finding(
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
        yield _finding(
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


def _ports(listeners: Sequence[Listener]) -> str:
    return ", ".join(str(port) for port in sorted({listener.port for listener in listeners})) or "no port"


# -- published ports -------------------------------------------------------------------


class Published(NamedTuple):
    service: str
    ip: str
    port: str
    protocol: str
    target: Any
    pos: Pos


def published_ports(services: Iterable[Service]) -> list[Published]:
    found: list[Published] = []
    for service in services:
        for index, entry in enumerate(service.get("ports") or ()):
            if not isinstance(entry, dict):
                continue
            found.append(
                Published(
                    service.name,
                    str(entry.get("host_ip") or ""),
                    str(entry.get("published") or ""),
                    str(entry.get("protocol") or "tcp"),
                    entry.get("target"),
                    service.at("ports", index),
                )
            )
    return found


def _clash(a: Published, b: Published) -> bool:
    wildcard = {"", "0.0.0.0", "::"}
    return (
        bool(a.port)
        and a.port == b.port
        and a.protocol == b.protocol
        and (a.ip == b.ip or a.ip in wildcard or b.ip in wildcard)
    )


def _published(graph: Graph) -> Iterator[Finding]:
    compose = graph.compose
    ports = published_ports(compose)
    for index, entry in enumerate(ports):
        earlier = next((other for other in ports[:index] if _clash(other, entry)), None)
        if earlier is not None:
            yield _finding(
                compose,
                entry.pos,
                "published-port",
                f"{entry.service} publishes host port {entry.port}/{entry.protocol}, which {earlier.service} already publishes (line {earlier.pos.line})",
                "publish another host port: the second container cannot bind it",
            )
        listeners = graph.listeners.get(entry.service)
        if (
            listeners is not None
            and entry.service not in graph.unknown  # a listener it could not read (a variable)
            and isinstance(entry.target, int)  # `${PORT}` stays symbolic in the model
            and not any(listener.port == entry.target for listener in listeners)
        ):
            yield _finding(
                compose,
                entry.pos,
                "published-port",
                f"{entry.service} publishes {entry.port or 'a port'} to container port {entry.target}, but {entry.service} listens on {_ports(listeners)}",
            )


def _co_hosted(compose: ComposeFile, wiring: Wiring) -> Iterator[Finding]:
    """Published host ports against the other files that serve one of this file's hosts."""
    hosts = set(wiring.hosts.get(compose.stem, ()))
    if not hosts:
        return
    here = Path(compose.path).parent
    project = _project_name(compose.project.name, here)
    mine = published_ports(compose)
    for stem, other_hosts in wiring.hosts.items():
        shared = hosts & set(other_hosts)
        if stem == compose.stem or not shared:
            continue
        other = _other_file(here / f"{stem}.yaml")
        if other is None or other[0] == project:
            continue  # absent here, or one project: the files replace each other
        for entry in mine:
            clash = next((theirs for theirs in other[1] if _clash(theirs, entry)), None)
            if clash is not None:
                yield _finding(
                    compose,
                    entry.pos,
                    "host-port",
                    f"{entry.service} publishes host port {entry.port}/{entry.protocol}, which {clash.service} of {stem} also publishes on {', '.join(sorted(shared))}",
                )


def _project_name(name: str | None, directory: Path) -> str:
    return name if name else directory.resolve().name


def _other_file(path: Path) -> tuple[str, list[Published]] | None:
    if not path.is_file():
        return None
    stat = path.stat()
    return _other_file_cached(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _other_file_cached(path: str, _mtime: int, _size: int) -> tuple[str, list[Published]] | None:
    try:
        document = load_file(Path(path))
    except InputError:
        return None
    if isinstance(document, Finding):
        return None
    from validators.model import build

    other = build(document)
    return _project_name(other.project.name, Path(path).parent), published_ports(other)


# -- storage ---------------------------------------------------------------------------


class Mount(NamedTuple):
    source: str
    target: str
    item: int  # its index in the service's volumes


def _volume_mount(service: Service, named: Mapping[str, Any], path: str) -> Mount | None:
    """The named-volume mount of `service` that holds `path` (the deepest one)."""
    best: Mount | None = None
    for index, entry in enumerate(service.get("volumes") or ()):
        if not isinstance(entry, dict) or entry.get("type") != "volume":
            continue
        source, target = entry.get("source"), str(entry.get("target") or "")
        if source not in named or not target:
            continue
        if (path == target or path.startswith(target.rstrip("/") + "/")) and (
            best is None or len(target) > len(best.target)
        ):
            best = Mount(str(source), target, index)
    return best


@dataclass(frozen=True)
class Download:
    repo: str | None
    repo_at: Pos
    revision: str | None
    revision_at: Pos
    directory: str  # the absolute path the snapshot lands in
    directory_at: Pos | None  # where that path is decided (None: the default cache)


_SNAPSHOT = re.compile(r"/models--(?P<repo>[^/]+)/snapshots/(?P<revision>[^/]+)/?$")


# Options of `hf download` that take no value.
_HF_SWITCHES = frozenset({"--force-download", "--quiet", "--dry-run", "--resume-download"})


def _download(compose: ComposeFile, service: Service, storage: Mapping[str, Any]) -> Download | None:
    """Where `hf download` puts the snapshot; None when the service runs no `download`."""
    entry = [str(word) for word in service.get("entrypoint") or ()]
    words = [*entry, *(str(word) for word in service.get("command") or ())]

    def at(index: int) -> Pos:
        if index < len(entry):
            return service.at("entrypoint", index)
        return service.at("command", index - len(entry))

    repo: tuple[str, Pos] | None = None
    options: dict[str, tuple[str, Pos]] = {}
    if "download" not in words:
        return None  # prod-config holds the downloader's argv to the contract
    index = words.index("download") + 1
    while index < len(words):
        word = words[index]
        if word.startswith("--"):
            name, eq, value = word.partition("=")
            if word in _HF_SWITCHES:
                options[word] = ("", at(index))
            elif eq:
                options[name] = (value, at(index))
            elif index + 1 < len(words):
                options[name] = (words[index + 1], at(index + 1))
                index += 1
        elif repo is None:
            repo = (word, at(index))
        index += 1
    if "--local-dir" in options:
        directory, local_at = options["--local-dir"]
        directory_at: Pos | None = local_at
    else:
        cache, directory_at = _hf_cache(compose, service, options, storage)
        name = (repo[0] if repo else "").replace("/", "--")
        revision = options.get("--revision", ("main", service.at("command")))[0]
        directory = f"{cache.rstrip('/')}/models--{name}/snapshots/{revision}"
    revision_opt = options.get("--revision")
    return Download(
        repo[0] if repo else None,
        repo[1] if repo else service.at("command"),
        revision_opt[0] if revision_opt else None,
        revision_opt[1] if revision_opt else service.at("command"),
        posixpath.normpath(directory),
        directory_at,
    )


def _hf_cache(
    compose: ComposeFile, service: Service, options: Mapping[str, tuple[str, Pos]], storage: Mapping[str, Any]
) -> tuple[str, Pos | None]:
    """The hub cache `hf download` writes into, and where that is decided (None: the default)."""
    if "--cache-dir" in options:
        return options["--cache-dir"]
    if service.env.get("HF_HUB_CACHE"):
        return str(service.env["HF_HUB_CACHE"]), _locate(compose, service, ("environment", "HF_HUB_CACHE"))
    home = service.env.get("HF_HOME")
    if home:
        return posixpath.join(home, "hub"), _locate(compose, service, ("environment", "HF_HOME"))
    return posixpath.join(str(storage["default_hf_home"]), "hub"), None


def _downloader(graph: Graph) -> Service | None:
    """The one-shot job the engines wait for (`condition: service_completed_successfully`);
    of several, the first that runs `download`."""
    awaited: list[str] = []
    for name in graph.engines:
        depends = graph.compose.services[name].get("depends_on")
        for other, spec in depends.items() if isinstance(depends, dict) else ():
            if isinstance(spec, dict) and spec.get("condition") == "service_completed_successfully":
                awaited.append(str(other))
    jobs = [
        graph.compose.services[name]
        for name in _of_role(graph, [graph.wiring.downloader])
        if name in awaited
    ]
    downloading = [job for job in jobs if "download" in (job.get("command") or ())]
    return (downloading or jobs or [None])[0]


def _storage(graph: Graph) -> Iterator[Finding]:
    compose, storage, engines = graph.compose, graph.wiring.storage, graph.engines
    downloader = _downloader(graph)
    named = compose.project.sections.get("volumes") or {}
    if downloader is not None and graph.claimed:  # the token env is the stack's policy
        yield from _token(compose, downloader, storage)
    download = _download(compose, downloader, storage) if downloader is not None else None
    written = _volume_mount(downloader, named, download.directory) if download and downloader else None
    if downloader is not None and download is not None and written is None:
        yield _finding(
            compose,
            download.directory_at or _first_volume(compose, downloader),
            "model-volume",
            f"{downloader.name} writes the snapshot to {download.directory}, which lies under no named volume: it is lost with the container",
            "mount the shared cache volume where the downloader writes",
        )
    reads: list[tuple[Service, Flag, str, Mount]] = []
    for name in engines:
        engine = compose.services[name]
        flag = next((f for f in engine.flags() if f.flag == storage["model_flag"]), None)
        if flag is None or flag.value is None:
            continue  # prod-config reports the missing flag
        if not flag.value.startswith("/"):
            continue  # a hub repo id (`org/name`), resolved through the hub cache, not a path
        model_path = posixpath.normpath(flag.value)
        read = _volume_mount(engine, named, model_path)
        if read is None:
            yield _finding(
                compose,
                flag.value_pos,
                "model-volume",
                f"{name} {storage['model_flag']} {flag.value} lies under no mount of a named volume",
                f"mount {written.source} at {written.target}" if written else None,
            )
        else:
            reads.append((engine, flag, model_path, read))
    if download is None or downloader is None or written is None or not reads:
        return
    yield from _same_snapshot(compose, storage, downloader, download, written, reads)


def _same_snapshot(
    compose: ComposeFile,
    storage: Mapping[str, Any],
    downloader: Service,
    download: Download,
    written: Mount,
    reads: Sequence[tuple[Service, Flag, str, Mount]],
) -> Iterator[Finding]:
    """The engines read the volume and the path inside it that the downloader writes."""
    sources = {read.source for _, _, _, read in reads}
    if len(sources) == 1 and written.source not in sources:
        # Every engine agrees: the downloader is the odd one out.
        yield _finding(
            compose,
            downloader.at("volumes", written.item),
            "model-volume",
            f"{downloader.name} writes into volume {written.source}; the engines read the model from {next(iter(sources))}",
            f"mount {next(iter(sources))} at {written.target}",
        )
        return
    for engine, _flag, _path, read in reads:
        if read.source != written.source:
            yield _finding(
                compose,
                engine.at("volumes", read.item),
                "model-volume",
                f"{engine.name} reads the model from volume {read.source}; {downloader.name} writes into {written.source}",
                f"mount {written.source} at {read.target}",
            )
    inside_written = posixpath.relpath(download.directory, written.target)
    readers = [
        (engine, flag, path, posixpath.relpath(path, read.target))
        for engine, flag, path, read in reads
        if read.source == written.source
    ]
    wrong = [reader for reader in readers if reader[3] != inside_written]
    if not wrong:
        return
    got = _SNAPSHOT.search(download.directory)
    if len({reader[3] for reader in readers}) == 1:
        # Every engine reads one path: the downloader is the odd one out.
        engine, flag, path, inside_read = wrong[0]
        want = _SNAPSHOT.search(path)
        if want and got and want.groupdict() == got.groupdict():
            yield _finding(
                compose,
                download.directory_at or downloader.at("volumes", written.item),
                "model-volume",
                f"{downloader.name} writes the snapshot to {written.source}:/{inside_written}; the engines read {written.source}:/{inside_read}",
                "mount the volume at the same path in both, and let both use one cache path",
            )
        else:
            yield from _snapshot(compose, engine.name, flag.value_pos, path, downloader, download, storage)
        return
    for engine, flag, _path, inside_read in wrong:
        yield _finding(
            compose,
            flag.value_pos,
            "model-volume",
            f"{engine.name} reads {written.source}:/{inside_read}; {downloader.name} writes the snapshot to {written.source}:/{inside_written}",
            "read the snapshot the downloader writes",
        )


def _first_volume(compose: ComposeFile, service: Service) -> Pos:
    for index, entry in enumerate(service.get("volumes") or ()):
        if isinstance(entry, dict) and entry.get("type") == "volume":
            return service.at("volumes", index)
    return _value_at(compose, service, "volumes")


def _snapshot(
    compose: ComposeFile,
    engine: str,
    engine_at: Pos,
    model_path: str,
    downloader: Service,
    download: Download,
    storage: Mapping[str, Any],
) -> Iterator[Finding]:
    want = _SNAPSHOT.search(model_path)
    if want is None:
        yield _finding(
            compose,
            engine_at,
            "snapshot",
            f"{engine} {storage['model_flag']} {model_path} is not a snapshot directory (.../models--<org>--<name>/snapshots/<revision>)",
            "point it at the snapshot the downloader fetches",
        )
        return
    repo = want.group("repo").replace("--", "/", 1)
    if download.repo != repo:
        yield _finding(
            compose,
            download.repo_at,
            "snapshot",
            f"{downloader.name} downloads {download.repo}; the engines' {storage['model_flag']} is a snapshot of {repo}",
        )
    elif download.revision != want.group("revision"):
        yield _finding(
            compose,
            download.revision_at,
            "snapshot",
            f"{downloader.name} downloads revision {download.revision or 'main (unpinned)'}; the engines' {storage['model_flag']} names revision {want.group('revision')}",
        )


def _token(compose: ComposeFile, downloader: Service, storage: Mapping[str, Any]) -> Iterator[Finding]:
    for key, value in (storage.get("token_env") or {}).items():
        got = downloader.env.get(key)
        if key not in downloader.env:
            yield _finding(
                compose,
                downloader.at("environment"),
                "download-token",
                f"{downloader.name} lost its token env {key}: gated or private repos fail to download",
                f"set {key}: {value}",
            )
        elif got != value:
            yield _finding(
                compose,
                _locate(compose, downloader, ("environment", key)),
                "download-token",
                f"{downloader.name} env {key} is not {value}",
                f"set {key}: {value}",
            )


def _mount_sources(compose: ComposeFile) -> Iterator[Finding]:
    sections = compose.project.sections
    for service in compose:
        for key in ("configs", "secrets"):
            # A top-level section of the wrong type (`configs: 7`) defines nothing.
            listed = sections.get(key)
            defined = listed if isinstance(listed, dict) else {}
            for index, entry in enumerate(service.get(key) or ()):
                source = entry.get("source") if isinstance(entry, dict) else None
                if isinstance(source, str) and source not in defined:
                    yield _finding(
                        compose,
                        service.at(key, index),
                        "mount-source",
                        f"{service.name} mounts {key[:-1]} {source}, which is not defined under top-level {key}: (defined: {', '.join(sorted(defined)) or 'none'})",
                    )
        volumes = sections.get("volumes") or {}
        for index, entry in enumerate(service.get("volumes") or ()):
            if (
                isinstance(entry, dict)
                and entry.get("type") == "volume"
                and entry.get("source")
                and entry["source"] not in volumes
            ):
                yield _finding(
                    compose,
                    service.at("volumes", index),
                    "mount-source",
                    f"{service.name} mounts volume {entry['source']}, which is not defined under top-level volumes: (defined: {', '.join(sorted(volumes)) or 'none'})",
                )


# -- runtime ---------------------------------------------------------------------------


def _extra_hosts(service: Service) -> set[str]:
    """Host names the service maps itself (`extra_hosts`, list or mapping form)."""
    mapped = service.get("extra_hosts")
    if isinstance(mapped, dict):
        return {str(name) for name in mapped}
    if isinstance(mapped, list):
        return {str(entry).split(":", 1)[0].split("=", 1)[0] for entry in mapped}
    return set()


def _exempt_image(service: Service, exempt_images: Mapping[str, Any]) -> bool:
    image = service.get("image")
    return isinstance(image, str) and any(fragment in image for fragment in exempt_images)


def _exempt(graph: Graph, exceptions: Mapping[str, Any]) -> set[str]:
    """Services that need no healthcheck in a claimed file: those of a role the wiring
    contract exempts, and those the stack contract's `wiring.healthcheck_exempt` names."""
    if not graph.claimed:
        return set()
    names = set(_of_role(graph, graph.wiring.healthcheck_exempt))
    return names | {str(name) for name in exceptions.get("healthcheck_exempt") or {}}


def _runtime(
    compose: ComposeFile, wiring: Wiring, engines: Sequence[str], exempt: set[str], *, claimed: bool = True
) -> Iterator[Finding]:
    runtime = wiring.runtime
    exempt_images = runtime.get("healthcheck_exempt_images") or {}
    forbidden = set(runtime.get("forbidden_network_modes") or ())
    for service in compose:
        engine = service.name in engines
        mode = service.get("network_mode")
        if isinstance(mode, str) and mode in forbidden:
            yield _finding(
                compose,
                _value_at(compose, service, "network_mode"),
                "network-mode",
                f"{service.name} has network_mode: {mode}"
                + (
                    ": it binds the host's ports and leaves the project network"
                    if mode == "host"
                    else ": no peer can reach it"
                ),
            )
        if service.get("privileged") is True:
            yield _finding(
                compose,
                _value_at(compose, service, "privileged"),
                "privileged",
                f"{service.name} is privileged: it sees every device of the host",
            )
        if engine and claimed:  # the engine's entrypoint, env file and start period are stack policy
            yield from _engine_runtime(compose, service, runtime)
        if service.get("restart") in (None, "no") and not engine:
            continue  # a one-shot service (the downloader) needs no healthcheck
        healthcheck = service.get("healthcheck")
        test = healthcheck.get("test") if isinstance(healthcheck, dict) else None
        disabled = isinstance(healthcheck, dict) and (healthcheck.get("disable") is True or test == ["NONE"])
        if (
            (healthcheck is None or disabled or not test)
            and service.name not in exempt
            and not _exempt_image(service, exempt_images)
        ):
            found = _finding(
                compose,
                service.at("healthcheck") if service.has("healthcheck") else service.pos,
                "healthcheck",
                f"{service.name} runs without a healthcheck: nothing notices it hang",
            )
            # A stack requires one; in a file no stack claims it is advice, since the
            # stack still runs.
            yield found if claimed else found._replace(level=Level.WARNING)


def _engine_runtime(compose: ComposeFile, service: Service, runtime: Mapping[str, Any]) -> Iterator[Finding]:
    want = runtime.get("engine_entrypoint")
    got = service.get("entrypoint")
    if got != (list(want) if isinstance(want, list) else want):
        yield _finding(
            compose,
            _value_at(compose, service, "entrypoint"),
            "entrypoint",
            f"{service.name} overrides the image's entrypoint with {service.canon.quote('entrypoint')}",
            None if want is None else f"set entrypoint: {want}",
        )
    if service.get("env_file") and not runtime.get("engine_env_file"):
        yield _finding(
            compose,
            _value_at(compose, service, "env_file"),
            "env-file",
            f"{service.name} has env_file: it bypasses the engine env contract",
        )
    minimum = str(runtime.get("engine_start_period") or "0s")
    period = service.value("healthcheck", "start_period")
    if not isinstance(service.get("healthcheck"), dict):
        return  # the healthcheck check reports it
    try:
        too_short = period is None or units.parse_duration(str(period)) < units.parse_duration(minimum)
    except units.UnitError:
        return  # compose-hygiene reports an unreadable duration
    if too_short:
        yield _finding(
            compose,
            _value_at(compose, service, "healthcheck", "start_period"),
            "start-period",
            f"{service.name} healthcheck start_period is {service.canon.quote('healthcheck', 'start_period') if period else 'unset'}; the contract says at least {minimum}",
            f"set start_period: {minimum} or more",
        )


__all__ = ["CHECKS", "ID", "SUMMARY", "Check", "check", "load_wiring", "parse_nginx", "published_ports"]
