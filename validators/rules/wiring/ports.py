"""Published ports: each reaches a port its service listens on, and a host port is
published once per file, and once per host across the files that run there together."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from tierops.errors import InputError
from validators.findings import Finding, Pos
from validators.loader import load_file
from validators.model import ComposeFile, Service
from validators.rules.wiring import checks
from validators.rules.wiring.contract import Wiring
from validators.rules.wiring.graph import Graph, port_list


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


def check_published(graph: Graph) -> Iterator[Finding]:
    compose = graph.compose
    ports = published_ports(compose)
    for index, entry in enumerate(ports):
        earlier = next((other for other in ports[:index] if _clash(other, entry)), None)
        if earlier is not None:
            yield checks.finding(
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
            yield checks.finding(
                compose,
                entry.pos,
                "published-port",
                f"{entry.service} publishes {entry.port or 'a port'} to container port {entry.target}, but {entry.service} listens on {port_list(listeners)}",
            )


def co_hosted(compose: ComposeFile, wiring: Wiring) -> Iterator[Finding]:
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
                yield checks.finding(
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
