"""The inline nginx config of a front door: a small reader of its directives, with positions.

Only what the wiring needs: `server` blocks and their `listen`s, `upstream` servers and
`proxy_pass`/`grpc_pass` targets; each word keeps its place in the compose file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from validators.findings import Pos
from validators.rules.embedded import Embedded, embedded
from validators.rules.wiring.graph import URL, Graph, Listener, Ref, host_port, parse_port, url_ref


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


def parsed_nginx(graph: Graph, name: str) -> tuple[Embedded, list[Directive]] | None:
    cached: tuple[Embedded, list[Directive]] | None
    key = f"wiring:nginx:{name}"
    if key in graph.compose.cache:
        cached = graph.compose.cache[key]
        return cached
    config = embedded(graph.compose, name)
    cached = (config, parse_nginx(config.text)) if config is not None else None
    graph.compose.cache[key] = cached
    return cached


def server_listeners(config: Embedded, tree: list[Directive]) -> list[Listener]:
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
            bare = parse_port(address)
            parsed_address = (
                ("0.0.0.0", bare)
                if bare is not None
                else host_port(address, default_host="0.0.0.0", default_port=80)
            )
            if parsed_address is not None:
                tls = any(arg == "ssl" for arg, _ in listen.args[1:])
                found.append(Listener(parsed_address[0], parsed_address[1], config.outer(pos), tls))
    return found


def config_refs(holder: str, config: Embedded, tree: list[Directive]) -> Iterator[Ref]:
    """What the config of `holder` sends to: upstream servers, then proxy_pass/grpc_pass targets."""
    upstreams = {d.args[0][0]: d for d in _walk(tree) if d.name == "upstream" and d.args and d.block}
    for upstream_name, upstream in upstreams.items():
        for server in upstream.block or ():
            if server.name == "server" and server.args:
                address, pos = server.args[0]
                parsed_address = host_port(address, default_host="", default_port=80)
                if parsed_address is not None and not address.startswith("unix:"):
                    yield Ref(
                        holder,
                        f"upstream {upstream_name} server {address}",
                        None,
                        parsed_address[0],
                        parsed_address[1],
                        config.outer(pos),
                    )
    for directive in _walk(tree):
        if directive.name not in ("proxy_pass", "grpc_pass") or not directive.args:
            continue
        url, pos = directive.args[0]
        match = URL.match(url)
        if match is None or "$" in url:
            continue  # a variable: resolved at request time
        host = match.group("host")
        if host in upstreams and match.group("port") is None:
            continue  # the upstream's servers are the references
        yield url_ref(holder, f"{directive.name} {url}", match, config.outer(pos))
