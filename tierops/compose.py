"""What a compose service *means*, independent of how it is spelled.

Hand-written compose files elsewhere write `command` as a string or a list,
`--flag=value` or `--flag value`, `environment` and `labels` as a list of `K=V` or a
mapping. The validators, the semantic diff and the release hashes must all agree on
what is the same and what differs, so the spelling rules live here, once.

Pure functions over plain data (dicts, lists, scalars); loaders convert YAML into that.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Spellings of one SGLang flag (SPEC 4). `--tp` is only an argparse prefix
# abbreviation of `--tp-size`, but hand-written files use it, so it is normalised too.
FLAG_ALIASES: dict[str, str] = {
    "--tp": "--tp-size",
    "--tensor-parallel-size": "--tp-size",
    "--ep": "--ep-size",
    "--expert-parallel-size": "--ep-size",
}

_FLAG = re.compile(r"^--?[A-Za-z]")


class SpellingError(ValueError):
    """A value that cannot be read in any of compose's spellings (e.g. an unbalanced quote)."""


def command_tokens(value: Any) -> list[str] | None:
    """`command`/`entrypoint` as exec-form tokens: a string is split with shell rules."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return shlex.split(value)
        except ValueError as exc:  # "No closing quotation"
            raise SpellingError(f"cannot split command with shell rules: {exc}") from None
    if isinstance(value, Sequence):
        return [scalar_text(item) for item in value]
    raise SpellingError(f"command must be a string or a list, not {type(value).__name__}")


def canonical_flag(flag: str) -> str:
    return FLAG_ALIASES.get(flag, flag)


@dataclass(frozen=True)
class Option:
    """One flag and its value (None for a bare flag such as `--enable-metrics`)."""

    flag: str
    value: str | None
    index: int  # position of the flag token in the original token list


@dataclass(frozen=True)
class Argv:
    program: tuple[str, ...]  # leading tokens before the first flag (`sglang serve`)
    options: tuple[Option, ...]
    positionals: tuple[tuple[int, str], ...]  # (token index, token) after the first flag

    def flags(self) -> list[str]:
        return [option.flag for option in self.options]


def split_argv(tokens: Sequence[str]) -> Argv:
    """Split tokens into program, options and stray positionals.

    `--flag=value` and `--flag value` are the same option. A token that follows a flag
    and does not itself look like a flag is that flag's value; without the engine's
    flag manifest this is the only rule available, and it is right for SGLang, whose
    store_true flags are never followed by a value. Aliases are canonicalised.
    """
    program: list[str] = []
    options: list[Option] = []
    positionals: list[tuple[int, str]] = []
    index = 0
    while index < len(tokens) and not _FLAG.match(tokens[index]):
        program.append(tokens[index])
        index += 1
    while index < len(tokens):
        token = tokens[index]
        if not _FLAG.match(token):
            positionals.append((index, token))
            index += 1
            continue
        if token.startswith("--") and "=" in token:
            flag, value = token.split("=", 1)
            options.append(Option(canonical_flag(flag), value, index))
            index += 1
            continue
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if following is not None and not _FLAG.match(following):
            options.append(Option(canonical_flag(token), following, index))
            index += 2
        else:
            options.append(Option(canonical_flag(token), None, index))
            index += 1
    return Argv(tuple(program), tuple(options), tuple(positionals))


def scalar_text(value: Any) -> str:
    """A YAML scalar as compose turns it into text (bools lower-case, None empty)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def key_values(value: Any, *, what: str = "environment") -> dict[str, str | None]:
    """`environment`/`labels` as a mapping, from either a mapping or a list of `K=V`.

    In a list, `K` alone (no `=`) means "take K from the host" for environment: its
    value is None. In a mapping, `K:` with no value means the same.
    """
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(key): (None if item is None else scalar_text(item)) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        result: dict[str, str | None] = {}
        for item in value:
            text = scalar_text(item)
            key, sep, rest = text.partition("=")
            result[key] = rest if sep else None
        return result
    raise SpellingError(f"{what} must be a mapping or a list of KEY=VALUE, not {type(value).__name__}")


def gpu_device_ids(service: Mapping[str, Any]) -> list[str] | None:
    """The GPU ids reserved by `deploy.resources.reservations.devices`, in file order."""
    try:
        devices = service["deploy"]["resources"]["reservations"]["devices"]
    except (KeyError, TypeError):
        return None
    ids: list[str] = []
    for device in devices or ():
        if isinstance(device, Mapping):
            ids.extend(scalar_text(gpu) for gpu in device.get("device_ids") or ())
    return ids


def normalise_service(service: Mapping[str, Any]) -> dict[str, Any]:
    """A canonical, JSON-able form of one service: equal meaning gives equal output.

    command/entrypoint become token lists with `--flag=value` split and aliases
    canonicalised; environment and labels become sorted mappings; depends_on in its
    short list form becomes the long form. Every other key is kept as plain data.
    """
    result: dict[str, Any] = {}
    for key, value in service.items():
        if key in ("command", "entrypoint"):
            tokens = command_tokens(value)
            result[key] = None if tokens is None else _canonical_tokens(tokens)
        elif key in ("environment", "labels"):
            result[key] = dict(sorted(key_values(value, what=key).items()))
        elif key == "depends_on" and isinstance(value, Sequence) and not isinstance(value, str):
            result[key] = {str(name): {"condition": "service_started"} for name in value}
        else:
            result[key] = _plain(value)
    return dict(sorted(result.items()))


def service_digest(service: Mapping[str, Any], length: int = 12) -> str:
    """A short content hash of a service's normalised definition."""
    text = json.dumps(normalise_service(service), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def _canonical_tokens(tokens: Sequence[str]) -> list[str]:
    argv = split_argv(tokens)
    out = list(argv.program)
    positionals = dict(argv.positionals)
    by_index = {option.index: option for option in argv.options}
    index = len(argv.program)
    while index < len(tokens):
        if index in by_index:
            option = by_index[index]
            out.append(option.flag)
            if option.value is not None:
                out.append(option.value)
                # `--flag value` used two tokens, `--flag=value` one.
                index += 1 if "=" in tokens[index] else 2
            else:
                index += 1
        else:
            out.append(positionals[index])
            index += 1
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [_plain(item) for item in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)  # ruamel's ScalarInt/OctalInt compare and hash as plain ints
    if isinstance(value, float):
        return float(value)
    return str(value)
