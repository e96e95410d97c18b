"""Rule `engine-flags`: every engine flag exists in the build its own image runs, with a value it accepts.

validators/contracts/engine-build.yaml lists the engine builds: each names its engine
(sglang or vllm), its manifest (validators/manifest/<package>-<version>.json, extracted
from the released wheel by `python -m tools.flag_manifest extract`), the patch flags
its patches add (each with its reason), its startup conflicts, and the images that run
it. An engine (a service whose argv starts `sglang serve`, `vllm serve`, or whose
image's entrypoint is the engine) is judged against the build whose `images:` lists
its image; an engine on any other image is named in one warning per image, never
judged by another build's flags (a flag of a newer build would read as a typo).

For every judged engine: each flag is in the manifest or declared; switches take no
value and the others exactly one (or one or more for nargs "+"/"*", as the manifest
records nargs); int, float, human-readable int and JSON values parse; choices are
respected (a flag whose choices the manifest could not resolve warns on every use
instead of accepting anything, and a choice the build accepts only under a condition,
such as an environment variable, warns); deprecated spellings and argparse prefix
abbreviations are warned about (an ambiguous abbreviation is an error); and the
startup conflicts of the build are reported (`--enable-dynamic-batch-tokenizer` with
`--enable-tokenizer-batch-encode`: error; with `--skip-tokenizer-init`: warning).

vLLM's parser reads more spellings, and so does this rule: `--flag=value`, the
`--no-flag` form of a boolean, short aliases (`-tp`), underscores (`--max_model_len`),
`-O3` for `--optimization-level 3`, and a JSON flag's keys one by one
(`--compilation-config.mode 3`).

Passing example::

    command: [sglang, serve, --tp-size, "4", --hicache-write-policy, write_through,
              --enable-dynamic-batch-tokenizer]

Failing example::

    command: [sglang, serve, --tp-size, four,                  # int value does not parse
              --hicache-write-policy, write_sometimes,           # not a choice
              --enable-metrics, "true",                          # store_true takes no value
              --enable-dynamic-batch-tokenizer, --enable-tokenizer-batch-encode]  # startup ValueError
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from tierops import interp
from tierops.argv import aliases_for
from validators.context import Context, EngineBuild
from validators.findings import START, Finding, Pos, error, flag_cause, warning
from validators.manifest import FlagSpec
from validators.model import ComposeFile, Service, Token

ID = "engine-flags"
SUMMARY = "engine flags exist in the build their image runs (manifest or patch flags); values, choices, startup conflicts and requirements"

ENGINE_PROGRAM = ("sglang", "serve")
_FLAG = re.compile(r"^--?[A-Za-z]")
_HUMAN_INT = re.compile(r"\d+|\d+(?:\.\d+)?[kMGT]|\d+(?:Ki|Mi|Gi|Ti)")
# vllm/utils/argparse_utils.py human_readable_int: decimal k/m/g/t, binary K/M/G/T, or int().
_VLLM_HUMAN_INT = re.compile(r"\d+(?:\.\d+)?[kmgt]|\d+[KMGT]|[+-]?\d+")
# Value types this rule checks; a flag whose type is anything else (a lambda, a
# custom parser) converts its value first, so its choices cannot be compared as written.
_CHECKED_TYPES = {"str", "int", "float", "human_readable_int", "human_readable_int_or_auto", "json.loads"}
# vLLM's FlexibleArgumentParser turns `-O3` / `-O 3` into this flag.
_VLLM_OPTIMIZATION = "--optimization-level"


@dataclass(frozen=True)
class Use:
    """One flag as the engine's argparse would consume it."""

    written: str
    flag: str  # canonical
    values: tuple[Token, ...]
    pos: Pos
    attached: bool  # written --flag=value


def is_engine(service: Service) -> bool:
    return service.tokens is not None and tuple(t.text for t in service.tokens[:2]) == ENGINE_PROGRAM


def check(compose: ComposeFile, ctx: Context) -> Iterator[Finding]:
    # An engine's flags are judged against the build its own image runs; an engine whose
    # build has no manifest here is named once per image, never checked against another
    # build's flags (a flag of a newer build would read as a typo).
    unchecked: dict[tuple[str, str], list[Service]] = {}
    for service in compose:
        program = service.program_name()
        if program is None:
            continue
        image = service.get("image")
        image = image if isinstance(image, str) else "(no image)"
        build = ctx.build_of(image)
        if build is not None and build.contract.engine == program:
            if service.tokens is not None:
                yield from _check_engine(compose.path, service, build)
            continue
        unchecked.setdefault((program, image), []).append(service)
    known = ", ".join(f"{build.contract.name} ({build.contract.engine})" for build in ctx.builds)
    for (program, image), services in unchecked.items():
        names = ", ".join(service.name for service in services)
        yield warning(
            compose.path,
            services[0].at("image") if services[0].has("image") else services[0].pos,
            ID,
            f"flags of {names} not checked: no flag manifest for the {program} build of {image}; "
            f"the known builds are {known} (validators/contracts/engine-build.yaml, `images:`)",
        )


_SGLANG_ALIASES = aliases_for("sglang")


def canonical(flag: str, engine: str = "sglang") -> str:
    """The manifest's spelling of a flag (SGLang's `--tensor-parallel-size` is `--tp-size`;
    vLLM's manifest lists its aliases itself)."""
    return _SGLANG_ALIASES.get(flag, flag) if engine == "sglang" else flag


def _spec(flag: str, build: EngineBuild) -> FlagSpec | None:
    engine = build.contract.engine
    spec = build.manifest.lookup(flag) or build.manifest.lookup(canonical(flag, engine))
    if spec is not None:
        return spec
    patch = build.contract.patch_flags.get(flag) or build.contract.patch_flags.get(canonical(flag, engine))
    if patch is None:
        return None
    takes_value = patch.action not in {"store_true", "store_false", "store_const", "count"}
    return FlagSpec(
        flag=patch.flag,
        aliases=(),
        action=patch.action,
        nargs=None,
        takes_value=takes_value,
        type=patch.type if takes_value else None,
        choices=None,
        deprecated=None,
        patch_reason=patch.reason,
    )


_SPELLINGS: dict[int, tuple[EngineBuild, list[str]]] = {}


def _spellings(build: EngineBuild) -> list[str]:
    """Every flag spelling of the manifest and the patches, sorted (once per build)."""
    cached = _SPELLINGS.get(id(build))
    if cached is None or cached[0] is not build:
        cached = (build, sorted({*build.manifest.flags, *build.contract.patch_flags}))
        if len(_SPELLINGS) > 8:
            _SPELLINGS.clear()
        _SPELLINGS[id(build)] = cached
    return cached[1]


SUGGESTED = 100  # unknown flags per engine that get a "did you mean"


def _did_you_mean(written: str, build: EngineBuild) -> str:
    """`; did you mean --x?` for a near miss of a known flag (a typo), else ""."""
    if not written.startswith("--") or len(written) > 100:  # a hostile word is not a typo
        return ""
    close = difflib.get_close_matches(written, _spellings(build), n=1, cutoff=0.85)
    return f"; did you mean {close[0]}?" if close else ""


def _abbreviation(written: str, build: EngineBuild) -> tuple[FlagSpec | None, Finding | None]:
    """argparse accepts a unique prefix of a long flag; say so, since a new flag can break it."""
    if not written.startswith("--"):
        return None, None
    spellings = _spellings(build)
    # The flags starting with `written` are one run of the sorted list: two bisections,
    # not a scan of 460 flags per word (20k unknown flags took seconds).
    start = bisect.bisect_left(spellings, written)
    end = start
    while end < len(spellings) and spellings[end].startswith(written):
        end += 1
    specs = [_spec(spelling, build) for spelling in spellings[start:end]]
    matches = sorted({spec.flag for spec in specs if spec is not None})
    if len(matches) == 1:
        message = f"flag {written} works only as an argparse abbreviation of {matches[0]}; write {matches[0]}"
        return _spec(matches[0], build), warning("", START, ID, message)
    if len(matches) > 1:
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        message = f"flag {written} is an ambiguous abbreviation ({shown}); argparse refuses it at startup"
        return None, error("", START, ID, message)
    return None, None


@dataclass(frozen=True)
class _Word:
    """A flag word as the engine's parser reads it, before the manifest lookup."""

    written: str  # the flag as written, without `=value`
    lookup: str  # the spelling to look up
    attached: str | None  # the value written in the same word
    dotted: bool = False  # vLLM `--json-flag.key value`: one value, whatever it looks like


def _word(text: str, engine: str, following: str | None) -> _Word:
    written, sep, attached = text.partition("=")
    value = attached if sep else None
    if engine != "vllm":
        return _Word(written, written, value)
    if text.startswith("-O") and not text.startswith("--"):
        # FlexibleArgumentParser: `-O3` and `-O=3` are `--optimization-level 3`, and so is
        # `-O 3`; a bare `-O` before anything else is a flag it does not know.
        if text != "-O":
            return _Word(text, _VLLM_OPTIMIZATION, text[3:] if text[2:3] == "=" else text[2:])
        if following in {"0", "1", "2", "3"}:
            return _Word(text, _VLLM_OPTIMIZATION, None)
        return _Word(text, text, None)
    if not written.startswith("--"):
        return _Word(written, written, value)
    # It reads `--max_model_len` as `--max-model-len` (up to the first dot), and
    # `--x.key value` as a key of the JSON flag `--x`.
    name, dot, rest = written[2:].partition(".")
    lookup = "--" + name.replace("_", "-")
    return _Word(written, lookup, value, dotted=bool(dot) and bool(rest))


def _check_engine(path: str, service: Service, build: EngineBuild) -> Iterator[Finding]:  # noqa: PLR0912, PLR0915 (one branch per argparse case)
    tokens = service.argv_tokens
    name = service.name
    engine = build.contract.engine
    label = f"{build.manifest.label} (build {build.contract.name})"
    uses: list[Use] = []
    unknown = 0
    index = len(service.program())
    while index < len(tokens):
        token = tokens[index]
        if not _FLAG.match(token.text):
            yield error(path, token.pos, ID, f"{name} argv has '{token.text}' where a flag was expected")
            index += 1
            continue
        following = tokens[index + 1].text if index + 1 < len(tokens) else None
        word = _word(token.text, engine, following)
        written, sep = word.written, word.attached is not None
        spec = _spec(word.lookup, build)
        problem: Finding | None = None
        if spec is None:
            spec, problem = _abbreviation(word.lookup, build)
            if problem is not None:
                yield problem._replace(
                    path=path, line=token.pos.line, col=token.pos.col, message=f"{name} {problem.message}"
                )
        if spec is None:
            if problem is None:
                unknown += 1
                # A near miss costs a fuzzy match against every flag of the build; past
                # SUGGESTED unknown flags in one engine the argv is not a typo, and 20,000
                # such flags would take a minute.
                hint = _did_you_mean(word.lookup, build) if unknown <= SUGGESTED else ""
                yield error(
                    path,
                    token.pos,
                    ID,
                    f"{name} flag {written} does not exist in {label} and is not a declared patch flag (validators/contracts/engine-build.yaml)"
                    + hint,
                )._replace(cause=flag_cause(name, written))
            # Skip what looks like its value so one unknown flag is one finding.
            index += 1
            while not sep and index < len(tokens) and not _FLAG.match(tokens[index].text):
                index += 1
            continue
        values: list[Token] = [Token(word.attached or "", token.pos)] if sep else []
        index += 1
        if word.dotted:
            if not sep and index < len(tokens):
                values.append(tokens[index])
                index += 1
            yield from _dotted(path, name, spec, word, token)
            uses.append(Use(written, spec.flag, tuple(values), token.pos, sep))
            continue
        if not sep and spec.takes_value:
            limit = 1 if spec.nargs in (None, "?") or isinstance(spec.nargs, int) else len(tokens)
            if isinstance(spec.nargs, int) and spec.nargs > 1:
                limit = spec.nargs
            while len(values) < limit and index < len(tokens) and not _FLAG.match(tokens[index].text):
                values.append(tokens[index])
                index += 1
        elif not sep and not spec.takes_value:
            while index < len(tokens) and not _FLAG.match(tokens[index].text):
                values.append(tokens[index])
                index += 1
        uses.append(Use(written, spec.flag, tuple(values), token.pos, sep))
        yield from _values(path, name, spec, uses[-1], engine)
    yield from _conflicts(path, name, uses, build)
    yield from _requires(path, name, uses, build)


def _dotted(path: str, name: str, spec: FlagSpec, word: _Word, token: Token) -> list[Finding]:
    """`--x.key value` is a key of the JSON flag `--x`: only a JSON flag has keys."""
    kind = spec.type or ""
    if spec.takes_value and any(part in kind for part in ("json", "dataclass", "dict")):
        return []
    message = (
        f"{name} flag {word.written} sets a key of {spec.flag}, which takes {kind or 'no value'}, not JSON"
    )
    return [error(path, token.pos, ID, message)]


def _values(path: str, name: str, spec: FlagSpec, use: Use, engine: str = "sglang") -> Iterator[Finding]:
    if spec.deprecated:
        replacement = f"; use {spec.deprecated}" if isinstance(spec.deprecated, str) else ""
        yield warning(
            path, use.pos, ID, f"{name} flag {use.written} is deprecated in the pinned build{replacement}"
        )
    if not spec.takes_value:
        if use.values:
            yield error(
                path,
                use.values[0].pos,
                ID,
                f"{name} flag {use.written} is a switch ({spec.action}) and takes no value, got '{use.values[0].text}'",
            )
        return
    if not use.values and spec.nargs not in ("?", "*"):
        yield error(path, use.pos, ID, f"{name} flag {use.written} needs a value")
        return
    for value in use.values:
        if interp.has_references(value.text):
            continue  # the host's environment decides it: nothing to judge here
        problem = _type_problem(spec.type, value.text, engine)
        if problem:
            yield error(path, value.pos, ID, f"{name} flag {use.written} value '{value.text}' {problem}")
        else:
            yield from _choice_findings(path, name, spec, use, value)


def _choice_findings(path: str, name: str, spec: FlagSpec, use: Use, value: Token) -> Iterator[Finding]:
    """A value against the manifest's choices: known, unknown (never "any
    value"), or accepted only under a condition the compose file cannot show."""
    said = f"{name} flag {use.written} value '{value.text}'"
    if spec.choices_expr is not None:
        yield warning(
            path,
            value.pos,
            ID,
            f"{said} cannot be checked: the manifest could not resolve this flag's choices "
            f"({spec.choices_expr}); check the value against the build, or teach the extractor",
        )
    elif spec.choices is not None and value.text not in {str(choice) for choice in spec.choices}:
        choices = ", ".join(str(choice) for choice in spec.choices)
        if _base_type(spec.type) not in _CHECKED_TYPES:
            yield warning(
                path,
                value.pos,
                ID,
                f"{said} is not written as one of: {choices}; the engine converts it first ({spec.type}), "
                "check the converted value",
            )
        else:
            yield error(path, value.pos, ID, f"{said} is not one of: {choices}")
    elif spec.condition(value.text) is not None:
        yield warning(
            path,
            value.pos,
            ID,
            f"{said} is a choice only when {spec.condition(value.text)} holds at startup; otherwise argparse refuses it",
        )


def _base_type(kind: str | None) -> str | None:
    """The converter under vLLM's wrappers: `optional_type(parse_type(int))` is int."""
    while kind is not None:
        for wrapper in ("optional_type(", "parse_type("):
            if kind.startswith(wrapper) and kind.endswith(")"):
                kind = kind[len(wrapper) : -1]
                break
        else:
            return kind
    return kind


def _type_problem(kind: str | None, text: str, engine: str = "sglang") -> str | None:  # noqa: PLR0911 (one per type)
    if kind is not None and kind.startswith("optional_type(") and text in {"", "None"}:
        return None  # vLLM's optional_type reads these as None
    base = _base_type(kind)
    if base == "int":
        try:
            int(text)
        except ValueError:
            return "is not an integer"
    elif base == "float":
        try:
            float(text)
        except ValueError:
            return "is not a number"
    elif base == "human_readable_int" and engine == "vllm":
        if not _VLLM_HUMAN_INT.fullmatch(text.strip()):
            return "is not an integer (suffixes k, m, g, t and K, M, G, T allowed)"
    elif base == "human_readable_int" and not _HUMAN_INT.fullmatch(text.strip()):
        return "is not an integer (suffixes k, M, G, T, Ki, Mi, Gi, Ti allowed)"
    elif base == "human_readable_int_or_auto" and not (
        text.strip().lower() == "auto" or _VLLM_HUMAN_INT.fullmatch(text.strip())
    ):
        return "is not an integer or auto (suffixes k, m, g, t and K, M, G, T allowed)"
    elif base == "json.loads" and engine == "vllm":
        try:
            json.loads(text)
        except ValueError:
            return "is not JSON"
    return None


def _requires(path: str, name: str, uses: list[Use], build: EngineBuild) -> Iterator[Finding]:
    contract = build.contract
    present = {canonical(use.flag, contract.engine): use for use in uses}
    for rule in contract.requires:
        use = present.get(canonical(rule.flag, contract.engine))
        if use is None or any(canonical(flag, contract.engine) in present for flag in rule.needs):
            continue
        text = f"{name} sets {rule.flag} without {' or '.join(rule.needs)}: {rule.message}"
        yield (warning if rule.level == "warning" else error)(path, use.pos, ID, text)


def _conflicts(path: str, name: str, uses: list[Use], build: EngineBuild) -> Iterator[Finding]:
    contract = build.contract
    engine = contract.engine
    present = {use.flag: use for use in uses}
    for conflict in contract.conflicts:
        if all(canonical(flag, engine) in present or flag in present for flag in conflict.flags):
            last = present.get(conflict.flags[-1]) or present[canonical(conflict.flags[-1], engine)]
            text = f"{name} sets {' and '.join(conflict.flags)}: {conflict.message}"
            if conflict.level == "warning":
                yield warning(path, last.pos, ID, text)
            else:
                yield error(path, last.pos, ID, text)
