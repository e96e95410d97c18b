"""An engine's argv as flags: `--flag value` and `--flag=value`, aliases per program.

Compose sees a command as a list of words (tierops.canonical); what the engine's
argument parser makes of them is one level up, and depends on the program: SGLang
reads `--tensor-parallel-size` as `--tp-size`, vLLM reads `-tp` as
`--tensor-parallel-size`, and an unknown program gets no aliases at all. The
validators, the semantic diff and the rollout plan read flags through here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tierops.shellwords import ShellError
from tierops.shellwords import split as split_words

# Spellings of one flag, per engine program. SGLang's `--tp` is only an argparse prefix
# abbreviation of `--tp-size`, but hand-written files use it, so it is an alias too.
ALIASES: dict[str, dict[str, str]] = {
    "sglang": {
        "--tp": "--tp-size",
        "--tensor-parallel-size": "--tp-size",
        "--ep": "--ep-size",
        "--expert-parallel-size": "--ep-size",
    },
    "vllm": {
        "-tp": "--tensor-parallel-size",
        "-pp": "--pipeline-parallel-size",
        "-dp": "--data-parallel-size",
        "-q": "--quantization",
    },
}

# How each engine is started: the words before its first flag.
_PROGRAMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sglang", ("sglang", "serve")),
    ("sglang", ("python", "-m", "sglang.launch_server")),
    ("sglang", ("python3", "-m", "sglang.launch_server")),
    ("vllm", ("vllm", "serve")),
    ("vllm", ("python", "-m", "vllm.entrypoints.openai.api_server")),
    ("vllm", ("python3", "-m", "vllm.entrypoints.openai.api_server")),
)
# Where each engine program listens when its argv names no --host/--port: SGLang on
# loopback only (no peer can reach it), vLLM on every interface.
ENGINE_DEFAULT_LISTEN: dict[str, tuple[str, int]] = {
    "sglang": ("127.0.0.1", 30000),
    "vllm": ("0.0.0.0", 8000),
}

# The flag that sets an engine's share of its GPUs' memory (a fraction; each program's
# default takes most of the GPU).
MEMORY_FRACTION: dict[str, str] = {
    "sglang": "--mem-fraction-static",
    "vllm": "--gpu-memory-utilization",
}

# Images whose default entrypoint is the engine (a `command:` of flags only).
_IMAGE_PROGRAMS = (("vllm/vllm-openai", "vllm"), ("lmsysorg/sglang", "sglang"))

_FLAG = re.compile(r"^--?[A-Za-z]")


def engine_program(words: Sequence[str], image: str | None = None) -> str | None:
    """ "sglang", "vllm", or None: what the words (entrypoint + command) start."""
    for name, start in _PROGRAMS:
        if (
            tuple(
                word.rsplit("/", 1)[-1] if index == 0 else word
                for index, word in enumerate(words[: len(start)])
            )
            == start
        ):
            return name
    if image and (not words or _FLAG.match(words[0])):
        for fragment, name in _IMAGE_PROGRAMS:
            if fragment in image:
                return name
    return None


def aliases_for(program: str | None) -> Mapping[str, str]:
    return ALIASES.get(program or "", {})


@dataclass(frozen=True)
class Option:
    """One flag and its value (None for a bare flag such as `--enable-metrics`)."""

    flag: str  # canonical spelling for the program
    written: str  # as written, before `=value` splitting and aliasing
    value: str | None
    index: int  # position of the flag word in the word list
    attached: bool  # `--flag=value` (one word) rather than `--flag value`


@dataclass(frozen=True)
class Argv:
    program: tuple[str, ...]  # leading words before the first flag (`sglang serve`)
    options: tuple[Option, ...]
    positionals: tuple[tuple[int, str], ...]  # (word index, word) after the first flag

    def flags(self) -> list[str]:
        return [option.flag for option in self.options]

    def values(self) -> dict[str, str | None]:
        """flag -> value of its last occurrence."""
        return {option.flag: option.value for option in self.options}


# A word that is one `${VAR:+text}` (or `${VAR+text}`): `text` when VAR is set, else
# nothing in a string command and an empty word in a list.
_SWITCH = re.compile(r"^\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*):?\+(?P<text>.*)\}$", re.DOTALL)


def switch_of(word: str) -> tuple[str, str] | None:
    """(VAR, text) when the whole word is one `${VAR:+text}`, nested braces balanced."""
    match = _SWITCH.match(word)
    if match is None:
        return None
    depth = 0
    for char in match.group("text"):
        depth += {"{": 1, "}": -1}.get(char, 0)
        if depth < 0:
            return None  # the reference closed before the word's end: not one switch
    return (match.group("name"), match.group("text")) if depth == 0 else None


def switched_words(word: str) -> tuple[str, list[str]] | None:
    """(VAR, the words Compose splits `text` into) for a `${VAR:+text}` word; None for
    any other word, or a text Compose could not split."""
    switch = switch_of(word)
    if switch is None:
        return None
    try:
        words = split_words(switch[1]).words
    except ShellError:
        return None
    return (switch[0], words) if words else None


def split_argv(words: Sequence[str], aliases: Mapping[str, str] | None = None) -> Argv:
    """Split words into program, options and stray positionals.

    `--flag=value` and `--flag value` are the same option. A word that follows a flag
    and does not itself look like a flag is that flag's value; without the engine's
    flag manifest this is the only rule available, and it is right for SGLang, whose
    store_true flags are never followed by a value.
    """
    table = aliases or {}
    program: list[str] = []
    options: list[Option] = []
    positionals: list[tuple[int, str]] = []
    index = 0
    while index < len(words) and not _FLAG.match(words[index]):
        program.append(words[index])
        index += 1
    while index < len(words):
        word = words[index]
        if not _FLAG.match(word):
            positionals.append((index, word))
            index += 1
            continue
        if word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
            options.append(Option(table.get(flag, flag), flag, value, index, True))
            index += 1
            continue
        following = words[index + 1] if index + 1 < len(words) else None
        if following is not None and not _FLAG.match(following):
            options.append(Option(table.get(word, word), word, following, index, False))
            index += 2
        else:
            options.append(Option(table.get(word, word), word, None, index, False))
            index += 1
    return Argv(tuple(program), tuple(options), tuple(positionals))
