"""A compose file as the rules see it: services with tokens, env and labels, each positioned.

Built once per file from the loader's Document. The spelling rules (string or list
command, `--flag=value`, flag aliases, env/labels as a list or a mapping) are
tierops.compose's, so the validators, the semantic diff and the release hashes agree
on what is the same; this module only adds the positions.

Nothing here raises on odd input: a value that cannot be read in any compose spelling
is recorded in `Service.problems` and reported by compose-hygiene.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tierops.compose import FLAG_ALIASES, SpellingError, key_values, scalar_text, split_argv
from validators.findings import Pos
from validators.loader import Document, YList, YMap


@dataclass(frozen=True)
class Token:
    text: str
    pos: Pos


@dataclass(frozen=True)
class Flag:
    """One option of an argv: canonical flag, value, and where each is written."""

    flag: str  # canonical spelling (`--tp` and `--tensor-parallel-size` become `--tp-size`)
    written: str  # as written, before `=value` splitting and alias normalisation
    value: str | None
    pos: Pos  # the flag token
    value_pos: Pos  # the value token (the flag token for `--flag=value` or a bare flag)
    index: int  # index of the flag token in the token list


@dataclass
class Service:
    name: str
    data: YMap
    pos: Pos  # the service key under `services:`
    tokens: list[Token] | None = None  # `command`, exec form
    env: dict[str, str | None] = field(default_factory=dict)
    env_pos: dict[str, Pos] = field(default_factory=dict)
    labels: dict[str, str | None] = field(default_factory=dict)
    label_pos: dict[str, Pos] = field(default_factory=dict)
    labels_form: str | None = None  # "mapping", "list" or None when absent
    problems: list[tuple[Pos, str]] = field(default_factory=list)

    def at(self, key: str) -> Pos:
        """Where `key` is written in this service (the service key when it is absent)."""
        return self.data.key_pos.get(key, self.pos)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def program(self) -> list[str]:
        if self.tokens is None:
            return []
        argv = split_argv([token.text for token in self.tokens])
        return list(argv.program)

    def flags(self) -> list[Flag]:
        """Options of the command with `--flag=value` split and aliases canonical."""
        if self.tokens is None:
            return []
        texts = [token.text for token in self.tokens]
        argv = split_argv(texts)
        result: list[Flag] = []
        for option in argv.options:
            token = self.tokens[option.index]
            written = token.text.split("=", 1)[0] if token.text.startswith("--") else token.text
            attached = "=" in token.text and token.text.startswith("--")
            if option.value is not None and not attached:
                value_pos = self.tokens[option.index + 1].pos
            else:
                value_pos = token.pos
            result.append(Flag(option.flag, written, option.value, token.pos, value_pos, option.index))
        return result

    def positionals(self) -> list[Token]:
        if self.tokens is None:
            return []
        argv = split_argv([token.text for token in self.tokens])
        return [self.tokens[index] for index, _ in argv.positionals]

    def gpu_ids(self) -> list[Token] | None:
        """GPU ids of `deploy.resources.reservations.devices[*].device_ids`, positioned."""
        node: Any = self.data
        for key in ("deploy", "resources", "reservations", "devices"):
            if not isinstance(node, YMap) or key not in node:
                return None
            node = node[key]
        if not isinstance(node, YList):
            return None
        ids: list[Token] = []
        for device in node:
            if isinstance(device, YMap) and isinstance(device.get("device_ids"), YList):
                device_ids: YList = device["device_ids"]
                ids.extend(Token(scalar_text(gpu), device_ids.at(i)) for i, gpu in enumerate(device_ids))
        return ids

    def gpu_ids_pos(self) -> Pos:
        node: Any = self.data
        pos = self.pos
        for key in ("deploy", "resources", "reservations", "devices"):
            if not isinstance(node, YMap) or key not in node:
                return pos
            pos = node.at(key)
            node = node[key]
        if isinstance(node, YList) and node and isinstance(node[0], YMap) and "device_ids" in node[0]:
            return node[0].at("device_ids")
        return pos


@dataclass
class ComposeFile:
    doc: Document
    services: dict[str, Service]
    # Derived views several rule families share (the parsed collector config), built once.
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> str:
        return self.doc.path

    @property
    def stem(self) -> str:
        return self.doc.stem

    @property
    def data(self) -> YMap:
        return self.doc.data

    def services_pos(self) -> Pos:
        return self.data.at("services")

    def config_content(self, name: str) -> tuple[str, Pos] | None:
        """Top-level `configs.<name>.content` and the position of its `content` key."""
        configs = self.data.get("configs")
        if not isinstance(configs, YMap) or not isinstance(configs.get(name), YMap):
            return None
        entry: YMap = configs[name]
        content = entry.get("content")
        if not isinstance(content, str):
            return None
        return content, entry.at("content")

    def config_value_pos(self, name: str) -> Pos:
        configs = self.data.get("configs")
        if isinstance(configs, YMap) and isinstance(configs.get(name), YMap):
            entry: YMap = configs[name]
            return entry.value_at("content")
        return self.data.at("configs")

    def __iter__(self) -> Iterator[Service]:
        return iter(self.services.values())


def build(doc: Document) -> ComposeFile:
    services: dict[str, Service] = {}
    raw = doc.data.get("services")
    if isinstance(raw, YMap):
        for name, body in raw.items():
            if isinstance(body, YMap):
                services[name] = _service(name, body, raw.at(name))
            else:
                service = Service(name, YMap(raw.at(name)), raw.at(name))
                service.problems.append((raw.at(name), f"service {name} is not a mapping"))
                services[name] = service
    return ComposeFile(doc, services)


def _service(name: str, body: YMap, pos: Pos) -> Service:
    service = Service(name, body, pos)
    if "command" in body:
        service.tokens = _tokens(service, body, "command")
    service.env, service.env_pos = _key_values(service, body, "environment")
    service.labels, service.label_pos = _key_values(service, body, "labels")
    if "labels" in body:
        service.labels_form = "mapping" if isinstance(body["labels"], YMap) else "list"
    return service


def _tokens(service: Service, body: YMap, key: str) -> list[Token] | None:
    value = body[key]
    if isinstance(value, YList):
        return [Token(scalar_text(item), value.at(i)) for i, item in enumerate(value)]
    if isinstance(value, str):
        # Shell rules, as compose applies them to a string command. Every token of a
        # string points at the string itself: there is no item to point at.
        try:
            return [Token(text, body.value_at(key)) for text in shlex.split(value)]
        except ValueError as exc:
            service.problems.append(
                (body.at(key), f"{service.name} {key} cannot be split with shell rules: {exc}")
            )
            return None
    service.problems.append((body.at(key), f"{service.name} {key} must be a string or a list"))
    return None


def _key_values(service: Service, body: YMap, key: str) -> tuple[dict[str, str | None], dict[str, Pos]]:
    if key not in body:
        return {}, {}
    value = body[key]
    try:
        mapping = key_values(value, what=key)
    except SpellingError as exc:
        service.problems.append((body.at(key), f"{service.name}: {exc}"))
        return {}, {}
    positions: dict[str, Pos] = {}
    if isinstance(value, YMap):
        positions = {name: value.at(name) for name in value}
    elif isinstance(value, YList):
        for index, item in enumerate(value):
            positions[scalar_text(item).partition("=")[0]] = value.at(index)
    return mapping, positions


def canonical(flag: str) -> str:
    return FLAG_ALIASES.get(flag, flag)


_DIGEST = re.compile(r"@sha256:(?P<hex>[0-9a-f]{64})$")


def engine_image_prefix(image: str) -> str | None:
    """The `engine_image` label of an image: the first 12 hex of its digest."""
    match = _DIGEST.search(image)
    return match.group("hex")[:12] if match else None
