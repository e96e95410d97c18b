"""A compose file as the rules see it: the canonical model, with positions to point at.

Built once per file from tierops.canonical's Project. Every value here is what Compose
means (`$VAR` is `${VAR}`, `300s` is `5m0s`, a string command is its words, ports and
volumes in the long syntax), so a rule compares meanings, never spellings; and every
value keeps where the author wrote it, so a finding points at that text.

The flag-level reading of an engine's words (`--flag=value`, aliases per program) is
tierops.argv's.

Nothing here raises on odd input: a value compose would refuse is recorded in
`Service.problems` and reported by compose-hygiene.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from tierops import canonical
from tierops.argv import Argv, aliases_for, engine_program, split_argv, switched_words
from tierops.yamlload import Pos, YMap
from validators.loader import Document

# GPUs of one 8-GPU host: `count: all` reserves exactly these.
HOST_GPUS = 8


@dataclass(frozen=True)
class Token:
    text: str
    pos: Pos
    # The variable of the `${VAR:+...}` word this word is inside, if any.
    switch: str | None = None


@dataclass(frozen=True)
class Flag:
    """One option of an argv: canonical flag, value, and where each is written."""

    flag: str  # canonical spelling (`--tensor-parallel-size` is `--tp-size` for SGLang)
    written: str  # as written, before `=value` splitting and aliasing
    value: str | None
    pos: Pos  # the flag word
    value_pos: Pos  # the value word (the flag word for `--flag=value` or a bare flag)
    index: int  # index of the flag word in the word list
    switch: str | None = None  # present only when this variable is set (`${VAR:+--flag}`)


@dataclass
class Service:
    name: str
    canon: canonical.Service

    @property
    def data(self) -> YMap:
        """The definition as written (for the few rules about spelling itself)."""
        return self.canon.raw

    @property
    def pos(self) -> Pos:
        return self.canon.pos

    @property
    def problems(self) -> list[canonical.Problem]:
        return self.canon.problems

    def get(self, key: str, default: Any = None) -> Any:
        """The canonical value of a key (what compose renders)."""
        return self.canon.fields.get(key, default)

    def value(self, *path: str | int) -> Any:
        return self.canon.value(*path)

    def has(self, key: str) -> bool:
        """Whether the author wrote `key` (not a default compose fills in)."""
        return key in self.canon.raw

    def at(self, *path: str | int) -> Pos:
        """Where the value at `path` is written (the service key when it is absent)."""
        return self.canon.at(*path)

    def runtime(self) -> dict[str, Any]:
        """The fields with differences that do not change what runs removed."""
        return canonical.runtime_form(self.canon.fields, host_gpus=HOST_GPUS)

    # -- argv

    # Read by several rules per file; computed once (a 20k-word argv took seconds).
    @cached_property
    def tokens(self) -> list[Token] | None:
        """`command` as words, each with where it is written."""
        words = self.get("command")
        if not isinstance(words, list):
            return None
        return [Token(word, self.at("command", index)) for index, word in enumerate(words)]

    @cached_property
    def argv_tokens(self) -> list[Token]:
        """`tokens` with each `${VAR:+--flag value}` word as the words it stands for when
        VAR is set, each at the switch's place: the engine's parser sees those flags."""
        expanded: list[Token] = []
        for token in self.tokens or []:
            switched = switched_words(token.text)
            if switched is not None:
                expanded.extend(Token(word, token.pos, switched[0]) for word in switched[1])
            else:
                expanded.append(token)
        return expanded

    def program_name(self) -> str | None:
        words = [*(self.get("entrypoint") or ()), *(self.get("command") or ())]
        image = self.get("image")
        return engine_program(words, image if isinstance(image, str) else None)

    def argv(self) -> Argv:
        return self._argv

    @cached_property
    def _argv(self) -> Argv:
        words = [token.text for token in self.argv_tokens] if self.tokens is not None else []
        return split_argv(words, aliases_for(self.program_name()))

    def program(self) -> list[str]:
        return list(self.argv().program)

    def flags(self) -> list[Flag]:
        """Options of the command with `--flag=value` split and aliases canonical."""
        return list(self._flags)

    @cached_property
    def _flags(self) -> list[Flag]:
        tokens = self.argv_tokens
        result: list[Flag] = []
        for option in self.argv().options:
            pos = tokens[option.index].pos
            value_pos = (
                tokens[option.index + 1].pos if option.value is not None and not option.attached else pos
            )
            result.append(
                Flag(
                    option.flag,
                    option.written,
                    option.value,
                    pos,
                    value_pos,
                    option.index,
                    tokens[option.index].switch,
                )
            )
        return result

    def positionals(self) -> list[Token]:
        tokens = self.argv_tokens
        return [tokens[index] for index, _ in self.argv().positionals]

    # -- environment and labels

    @property
    def env(self) -> dict[str, str | None]:
        value = self.get("environment")
        return value if isinstance(value, dict) else {}

    @property
    def env_pos(self) -> dict[str, Pos]:
        return {key: self.at("environment", key) for key in self.env}

    @property
    def labels(self) -> dict[str, str | None]:
        value = self.get("labels")
        return value if isinstance(value, dict) else {}

    @property
    def label_pos(self) -> dict[str, Pos]:
        return {key: self.at("labels", key) for key in self.labels}

    @property
    def labels_form(self) -> str | None:
        """ "mapping", "list" or None when absent: how the author wrote them (style rules)."""
        if "labels" not in self.data:
            return None
        return "mapping" if isinstance(self.data["labels"], YMap) else "list"

    # -- GPUs

    def devices_path(self) -> tuple[str, ...]:
        return ("deploy", "resources", "reservations", "devices")

    def gpu_ids(self) -> list[Token] | None:
        """GPU ids of `deploy.resources.reservations.devices[*].device_ids`, positioned."""
        devices = self.value(*self.devices_path())
        if not isinstance(devices, list):
            return None
        ids: list[Token] = []
        for index, device in enumerate(devices):
            if isinstance(device, dict) and isinstance(device.get("device_ids"), list):
                ids.extend(
                    Token(str(gpu), self.at(*self.devices_path(), index, "device_ids", number))
                    for number, gpu in enumerate(device["device_ids"])
                )
        return ids

    def gpu_ids_pos(self) -> Pos:
        return self.at(*self.devices_path(), 0, "device_ids")


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

    @property
    def project(self) -> canonical.Project:
        return self.doc.project

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
    return ComposeFile(doc, {name: Service(name, service) for name, service in doc.project.services.items()})


_DIGEST = re.compile(r"@sha256:(?P<hex>[0-9a-f]{64})$")


def engine_image_prefix(image: str) -> str | None:
    """The `engine_image` label of an image: the first 12 hex of its digest."""
    match = _DIGEST.search(image)
    return match.group("hex")[:12] if match else None
